"""Robot Maze Race: each seat hides 20 crates in a 10x10 warehouse, then programs its robot
through the other seat's warehouse, from the entrance A1 to the exit J10.

Rows are letters from A (top) to J, columns numbers from 1 (left) to 10. A warehouse is 10
strings of 10 characters, row A first: `.` an empty cell, `X` a crate.

The only chance in the game is who moves first, drawn from the game's random stream.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Iterable
from typing import Any

from games.engines.base import JSON, Engine, IllegalMove, Result
from games.engines.randomstream import RandomStream

SLUG = "robotmaze"
TITLE = "Robot Maze Race"
MIN_SEATS = 2
MAX_SEATS = 2

SIZE = 10
CRATES = 20
MAX_DAMAGE = 20
MAX_COMMANDS = 4
MAX_RUNS = 4
ROW_NAMES = "ABCDEFGHIJ"
ENTRANCE = "A1"
EXIT = "J10"
EMPTY = "."
CRATE = "X"
# (row change, column change) per command; U is towards row A, R towards column 10.
DIRECTIONS: dict[str, tuple[int, int]] = {"U": (-1, 0), "D": (1, 0), "L": (0, -1), "R": (0, 1)}

Cell = tuple[int, int]


# Cells and warehouses ---------------------------------------------------------------------


def cell_name(row: int, col: int) -> str:
    """(0, 0) -> "A1", (9, 9) -> "J10"."""
    return f"{ROW_NAMES[row]}{col + 1}"


def parse_cell(name: str) -> Cell:
    """ "A1" -> (0, 0); ValueError for anything that is not a cell of the grid."""
    digits = name[1:]
    if len(name) < 2 or name[0] not in ROW_NAMES or not (digits.isascii() and digits.isdigit()):
        raise ValueError(f"{name!r} is not a cell")
    col = int(digits) - 1
    if not 0 <= col < SIZE:
        raise ValueError(f"{name!r} is not a cell")
    return ROW_NAMES.index(name[0]), col


def _reading_order(cells: Iterable[Cell]) -> list[str]:
    return [cell_name(r, c) for r, c in sorted(set(cells))]


def _neighbours(cell: Cell) -> list[Cell]:
    r, c = cell
    return [
        (r + dr, c + dc)
        for dr, dc in DIRECTIONS.values()
        if 0 <= r + dr < SIZE and 0 <= c + dc < SIZE
    ]


def _shape_problem(rows: object) -> str | None:
    if not isinstance(rows, list) or len(rows) != SIZE:
        return "A warehouse is 10 rows (A to J) of 10 cells."
    for index, row in enumerate(rows):
        if not isinstance(row, str) or len(row) != SIZE:
            return f"Row {ROW_NAMES[index]} must have exactly 10 cells."
        if set(row) - {EMPTY, CRATE}:
            return f"Row {ROW_NAMES[index]} may hold only '.' (empty) and 'X' (crate)."
    return None


def _crates(rows: list[str]) -> set[Cell]:
    return {(r, c) for r, row in enumerate(rows) for c, ch in enumerate(row) if ch == CRATE}


def _reachable(crates: set[Cell], start: Cell) -> set[Cell]:
    """Empty cells 4-connected to `start` (the start counts as empty)."""
    seen = {start}
    queue = deque([start])
    while queue:
        for nxt in _neighbours(queue.popleft()):
            if nxt not in seen and nxt not in crates:
                seen.add(nxt)
                queue.append(nxt)
    return seen


def _blockers(crates: set[Cell]) -> tuple[list[Cell], bool, str]:
    """Crates to show for a warehouse with no path; whether moving any one of them opens a path
    (it does when the crate touches both the entrance's and the exit's region); and which of
    the two they wall off, the one with the smaller region ("entrance" or "exit")."""
    entrance, exit_ = parse_cell(ENTRANCE), parse_cell(EXIT)
    near_entrance = _reachable(crates, entrance)
    near_exit = _reachable(crates, exit_)
    if exit_ in near_entrance:
        return [], False, ""

    def border(region: set[Cell]) -> set[Cell]:
        return {n for cell in region for n in _neighbours(cell) if n in crates}

    walled, region = (
        ("exit", near_exit) if len(near_exit) < len(near_entrance) else ("entrance", near_entrance)
    )
    both = border(near_entrance) & border(near_exit)
    if both:
        return sorted(both), True, walled
    return sorted(border(region)), False, walled


def warehouse_problems(rows: object) -> list[str]:
    """Why a warehouse is not legal, as sentences for the player; empty when it is legal."""
    shape = _shape_problem(rows)
    if shape is not None:
        return [shape]
    assert isinstance(rows, list)
    crates = _crates(rows)
    problems = []
    if len(crates) < CRATES:
        more = CRATES - len(crates)
        noun = "crate" if more == 1 else "crates"
        problems.append(f"Place {more} more {noun} ({len(crates)} of {CRATES}).")
    elif len(crates) > CRATES:
        fewer = len(crates) - CRATES
        noun = "crate" if fewer == 1 else "crates"
        problems.append(f"Remove {fewer} {noun} ({len(crates)} of {CRATES}).")
    if parse_cell(ENTRANCE) in crates:
        problems.append(f"{ENTRANCE} is the entrance: no crate there.")
    if parse_cell(EXIT) in crates:
        problems.append(f"{EXIT} is the exit: no crate there.")
    # The entrance and exit count as empty here, so that each problem is told once.
    blockers, any_one, walled = _blockers(crates - {parse_cell(ENTRANCE), parse_cell(EXIT)})
    if blockers:
        names = ", ".join(_reading_order(blockers))
        other = EXIT if walled == "entrance" else ENTRANCE
        advice = (
            "moving any one of them opens a path"
            if any_one
            else f"the wall is thicker than one crate: clear a way through to {other}"
        )
        problems.append(
            f"No path from {ENTRANCE} to {EXIT}: the crates at {names} wall off the {walled}; "
            f"{advice}."
        )
    return problems


def blocking_cells(rows: list[str]) -> list[str]:
    """For a warehouse with no path from A1 to J10, the crates to show as the blockers: those
    that touch both the entrance's and the exit's region if there are any (moving one of them
    is enough), else those around the smaller of the two regions. Empty when there is a path."""
    crates = _crates(rows) - {parse_cell(ENTRANCE), parse_cell(EXIT)}
    return _reading_order(_blockers(crates)[0])


def is_legal_warehouse(rows: object) -> bool:
    return not warehouse_problems(rows)


def distances_to_exit(rows: list[str]) -> dict[str, int]:
    """Steps from each empty cell to J10 along empty cells (cells with no way out are absent)."""
    crates = _crates(rows)
    exit_ = parse_cell(EXIT)
    dist = {exit_: 0}
    queue = deque([exit_])
    while queue:
        cell = queue.popleft()
        for nxt in _neighbours(cell):
            if nxt not in dist and nxt not in crates:
                dist[nxt] = dist[cell] + 1
                queue.append(nxt)
    return {cell_name(*cell): d for cell, d in dist.items()}


def random_warehouse(rng: random.Random) -> list[str]:
    """A random legal warehouse: 20 crates on distinct cells, drawn again until there is a path."""
    cells = [(r, c) for r in range(SIZE) for c in range(SIZE)]
    cells.remove(parse_cell(ENTRANCE))
    cells.remove(parse_cell(EXIT))
    while True:
        crates = set(rng.sample(cells, CRATES))
        if parse_cell(EXIT) in _reachable(crates, parse_cell(ENTRANCE)):
            return _rows(crates)


def _rows(crates: set[Cell]) -> list[str]:
    return ["".join(CRATE if (r, c) in crates else EMPTY for c in range(SIZE)) for r in range(SIZE)]


def step(rows: list[str], at: str, direction: str) -> tuple[str | None, str]:
    """One command from `at`: (the cell it tries, None past the edge; its result)."""
    r, c = parse_cell(at)
    dr, dc = DIRECTIONS[direction]
    r, c = r + dr, c + dc
    if not (0 <= r < SIZE and 0 <= c < SIZE):
        return None, "wall"
    return cell_name(r, c), "crate" if rows[r][c] == CRATE else "clear"


# The engine --------------------------------------------------------------------------------


def default_options() -> JSON:
    return {}


def validate_options(options: JSON, seats: int) -> JSON:
    if seats != 2:
        raise ValueError("Robot Maze Race is a game for two players.")
    return {}


def start(seed: bytes, options: JSON, seats: int = 2) -> JSON:
    validate_options(options, seats)
    stream = RandomStream(seed)
    first = stream.below(2)
    return {
        "seed": seed.hex(),
        "position": stream.position,
        "phase": "setup",
        "first_seat": first,
        "turn": None,
        "warehouses": [None, None],
        # robots[s] is seat s's robot, running through the other seat's warehouse.
        "robots": [{"at": ENTRANCE, "damage": 0, "moves": []} for _ in range(2)],
        "result": None,
    }


def initial(state: JSON) -> JSON:
    return {"warehouses": _warehouses_copy(state["warehouses"])}


def first_seat(state: JSON) -> int:
    return int(state["first_seat"])


def to_move(state: JSON) -> list[int]:
    if state["phase"] == "setup":
        return [s for s in range(2) if state["warehouses"][s] is None]
    if state["phase"] == "play":
        return [state["turn"]]
    return []


def result(state: JSON) -> Result | None:
    if state["result"] is None:
        return None
    return Result(reason=state["result"]["reason"], places=list(state["result"]["places"]))


def _finish(state: JSON, winner: int, reason: str) -> None:
    state["phase"] = "over"
    state["turn"] = None
    state["result"] = {"reason": reason, "places": [1 if s == winner else 2 for s in range(2)]}


def _program_problem(move: JSON) -> str | None:
    program, runs = move["program"], move["runs"]
    if not isinstance(program, str) or not 1 <= len(program) <= MAX_COMMANDS:
        return "A program has 1 to 4 commands."
    if set(program) - set(DIRECTIONS):
        return "A program uses only the commands U, D, L and R."
    if isinstance(runs, bool) or not isinstance(runs, int) or not 1 <= runs <= MAX_RUNS:
        return "The robot runs the program 1 to 4 times."
    return None


def _run(state: JSON, seat: int, program: str, runs: int) -> JSON:
    """Run a program; ends the game when the robot reaches the exit or its damage limit."""
    rows = state["warehouses"][1 - seat]
    robot = state["robots"][seat]
    steps: list[JSON] = []
    for _ in range(runs):
        for direction in program:
            at = robot["at"]
            to, outcome = step(rows, at, direction)
            steps.append({"from": at, "dir": direction, "to": to, "result": outcome})
            if outcome == "clear":
                assert to is not None
                robot["at"] = to
            else:
                robot["damage"] += 1
            if robot["at"] == EXIT:
                _finish(state, seat, "exit")
            elif robot["damage"] >= MAX_DAMAGE:
                _finish(state, 1 - seat, "damage")
            if state["phase"] == "over":
                break
        if state["phase"] == "over":
            break
    outcome_json: JSON = {"steps": steps, "damage": robot["damage"], "at": robot["at"]}
    robot["moves"].append(
        {"program": program, "runs": runs, **outcome_json, "steps": _steps_copy(steps)}
    )
    if state["phase"] != "over":
        state["turn"] = 1 - seat
    return outcome_json


# Copies made by the state's known shapes: copy.deepcopy of a long game's moves took about a
# millisecond of each move and of each view.


def _state_copy(state: JSON) -> JSON:
    """What `apply` may change, copied: the warehouses and the robots. A robot's earlier moves
    are shared with `state`, since nothing changes a move once it is made."""
    return {
        **state,
        "warehouses": _warehouses_copy(state["warehouses"]),
        "robots": [{**robot, "moves": list(robot["moves"])} for robot in state["robots"]],
    }


def _warehouses_copy(warehouses: list[Any]) -> list[Any]:
    return [None if rows is None else list(rows) for rows in warehouses]


def _steps_copy(steps: list[JSON]) -> list[JSON]:
    return [dict(s) for s in steps]


def _result_copy(result: JSON | None) -> JSON | None:
    return None if result is None else {**result, "places": list(result["places"])}


def apply(state: JSON, seat: int, move: JSON) -> tuple[JSON, JSON]:
    if seat not in (0, 1):
        raise IllegalMove(f"There is no seat {seat}.")
    if not isinstance(move, dict):
        raise IllegalMove("A move is a warehouse, a program with its runs, or a resignation.")
    if state["phase"] == "over":
        raise IllegalMove("The game is over.")
    new = _state_copy(state)
    keys = set(move)
    if keys == {"resign"} and move["resign"] is True:
        _finish(new, 1 - seat, "resign")
        return new, {}
    if keys == {"timeout"} and move["timeout"] is True:
        if seat not in to_move(state):
            raise IllegalMove("It is not your turn.")
        _finish(new, 1 - seat, "timeout")
        return new, {}
    if keys == {"warehouse"}:
        if state["phase"] != "setup" or state["warehouses"][seat] is not None:
            raise IllegalMove("Your warehouse is already set up.")
        problems = warehouse_problems(move["warehouse"])
        if problems:
            raise IllegalMove(problems[0])
        new["warehouses"][seat] = list(move["warehouse"])
        if all(rows is not None for rows in new["warehouses"]):
            new["phase"] = "play"
            new["turn"] = new["first_seat"]
        return new, {}
    if keys == {"program", "runs"}:
        if state["phase"] == "setup":
            raise IllegalMove("Both warehouses must be set up first.")
        if seat != state["turn"]:
            raise IllegalMove("It is not your turn.")
        problem = _program_problem(move)
        if problem is not None:
            raise IllegalMove(problem)
        return new, _run(new, seat, move["program"], move["runs"])
    raise IllegalMove(
        'A move is {"warehouse": [10 rows]} during set-up, then {"program": "URRD", "runs": 3}.'
    )


def _robot_view(robot: JSON) -> JSON:
    """What anyone may know of a robot's run: it was told to its owner and tracked on the
    warehouse owner's grid, and spectators see both."""
    steps = [s for move in robot["moves"] for s in move["steps"]]
    visited = [ENTRANCE]
    for s in steps:
        if s["result"] == "clear" and s["to"] not in visited:
            visited.append(s["to"])
    walls: list[JSON] = []
    for s in steps:
        wall = {"at": s["from"], "dir": s["dir"]}
        if s["result"] == "wall" and wall not in walls:
            walls.append(wall)
    crates = _reading_order(parse_cell(s["to"]) for s in steps if s["result"] == "crate")
    return {
        "at": robot["at"],
        "damage": robot["damage"],
        "moves": [{**move, "steps": _steps_copy(move["steps"])} for move in robot["moves"]],
        "steps": _steps_copy(steps),
        "visited": visited,
        "crates": crates,
        "walls": walls,
    }


def view(state: JSON, seat: int | None) -> JSON:
    over = state["phase"] == "over"
    warehouses: list[Any] = [
        list(rows) if rows is not None and (over or s == seat) else None
        for s, rows in enumerate(state["warehouses"])
    ]
    return {
        "viewer": seat,
        "phase": state["phase"],
        "to_move": to_move(state),
        "first_seat": state["first_seat"],
        "set_up": [rows is not None for rows in state["warehouses"]],
        "warehouses": warehouses,
        "robots": [_robot_view(robot) for robot in state["robots"]],
        "result": _result_copy(state["result"]),
    }


def notation(move: JSON, outcome: JSON) -> str:
    if move.get("resign"):
        return "resigned"
    if move.get("timeout"):
        return "ran out of time"
    if "warehouse" in move:
        return "set up"
    return f"{move['program']} x{move['runs']}"


def record_move(
    move: JSON, outcome: JSON, seat: int, viewer: int | None, over: bool
) -> tuple[JSON, JSON] | None:
    """What a viewer of the record may see of a move: a warehouse only its owner, until the
    end (the others learn only that it was set up); programs and their outcomes everyone."""
    if "warehouse" in move and not over and viewer != seat:
        return {"warehouse": None}, {}
    return move, outcome


def move_number(state: JSON, seat: int, ply: int) -> int:
    """Set-up is one move of each seat's at once: a seat's warehouse is its move 0, whether the
    other's came first or not (a page loaded before the other's set-up still counts). After it,
    the game's ply. A warehouse posted twice counts once: the second finds the number moved on."""
    if state["phase"] == "setup" and state["warehouses"][seat] is None:
        return 0
    return ply


def play_started(state: JSON) -> bool:
    """Set-up is not play: a game whose set-up did not finish is aborted, not lost."""
    return bool(state["phase"] != "setup")


class Rules(Engine):
    """The robotmaze rules as the site calls them (engines/base.py)."""

    SLUG = SLUG
    TITLE = TITLE
    MIN_SEATS = MIN_SEATS
    MAX_SEATS = MAX_SEATS
    APPLY_GIVES_JSON = True
    default_options = staticmethod(default_options)
    validate_options = staticmethod(validate_options)
    start = staticmethod(start)
    initial = staticmethod(initial)
    first_seat = staticmethod(first_seat)
    to_move = staticmethod(to_move)
    apply = staticmethod(apply)
    view = staticmethod(view)
    result = staticmethod(result)
    notation = staticmethod(notation)
    record_move = staticmethod(record_move)

    def play_started(self, state: JSON, ply: int) -> bool:
        return play_started(state)

    def move_number(self, state: JSON, seat: int, ply: int) -> int:
        return move_number(state, seat, ply)


ENGINE = Rules()
