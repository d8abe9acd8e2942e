"""Robot Maze Race on the page: the secret warehouse editor, the open and secret grids, and the
program form. Everything drawn comes from the engine's view for this viewer, and from the
viewer's own draft (kept in its session), never from the state."""

from __future__ import annotations

import html
import random
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from django import forms
from django.http import QueryDict
from django.utils.safestring import SafeString, mark_safe

from games.bots import levels
from games.engines import robotmaze as rules
from games.engines.base import JSON
from games.models import Clock
from games.ui import CreateForm, GameUI, MoveInputError, colour, mark_html
from games.web.inputs import ascii_int

PERSON = "person"
COMMAND_WORDS = {"U": "Up", "D": "Down", "L": "Left", "R": "Right"}
TOWARDS = {"U": "the north", "D": "the south", "L": "the west", "R": "the east"}
EMPTY_WAREHOUSE = [rules.EMPTY * rules.SIZE] * rules.SIZE


class RobotmazeCreateForm(CreateForm):
    clock = forms.ChoiceField(
        choices=[(Clock.DAYS_3, "3 days per move"), (Clock.DAYS_30, "30 days per move")],
        initial=Clock.DAYS_3,
    )
    seat_1 = forms.ChoiceField(label="Opponent", initial=PERSON, choices=[])

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["seat_1"].choices = [(PERSON, "a person (open seat)")] + [  # type: ignore[attr-defined]
            (level, f"bot: {level}") for level in levels("robotmaze")
        ]

    def create_args(self) -> tuple[JSON, str, list[str]]:
        bot = self.cleaned_data["seat_1"]
        return {}, self.cleaned_data["clock"], ["", "" if bot == PERSON else bot]


# A cell with no mark: no classes, no words.
_UNMARKED = ("", "")

# Each grid cell's name, row by row: the same on every grid.
CELL_NAMES = [[rules.cell_name(r, c) for c in range(rules.SIZE)] for r in range(rules.SIZE)]


def _grid(
    *,
    crates: set[str] = frozenset(),  # type: ignore[assignment]
    found: set[str] = frozenset(),  # type: ignore[assignment]
    path: list[str] | None = None,
    robot: str | None = None,
    robot_seat: int | None = None,
    blockers: set[str] = frozenset(),  # type: ignore[assignment]
    walls: list[JSON] | None = None,
    clickable: bool = False,
    plan: list[JSON] | None = None,
) -> list[list[dict[str, Any]]]:
    """The cells of a grid, each with its classes for the eye and its words for a screen
    reader, in the same order. Most cells have neither: the marks are worked out for the cells
    they mark, kind by kind (a move's answer makes two grids of 100 cells)."""
    order = set(path or [])
    hit = {(w["at"], w["dir"]) for w in walls or []}
    # A cell's walls in the order U, D, L, R, whatever the order they were hit in.
    walls_at = {at: "".join(d for d in "UDLR" if (at, d) in hit) for at, _ in hit}
    planned: dict[str, list[int]] = {}
    unknown: set[str] = set()
    bumped: set[str] = set()
    for number, step in enumerate(plan or [], start=1):
        if step["result"] in {"clear", "unknown"}:
            planned.setdefault(step["to"], []).append(number)
        if step["result"] == "unknown":
            unknown.add(step["to"])
        if step["result"] in {"crate", "wall"}:
            bumped.add(step["to"] or step["from"])
    classes: dict[str, list[str]] = defaultdict(list)
    words: dict[str, list[str]] = defaultdict(list)

    def mark(name: str, kind: str, text: str) -> None:
        if kind:
            classes[name].append(kind)
        words[name].append(text)

    mark(rules.ENTRANCE, "entrance", "entrance")
    mark(rules.EXIT, "exit", "exit")
    for name in crates:
        mark(name, "crate", "crate")
    for name in found:
        mark(name, "found", "crate found by the robot" if name not in crates else "found")
    for name in order:
        mark(name, "path", "robot's path")
    for name in blockers:
        mark(name, "blocker", "blocks the way")
    for name, cell_walls in walls_at.items():
        mark(name, "", "wall hit " + " and ".join(TOWARDS[d] for d in cell_walls))
    for name, numbers in planned.items():
        steps = ", ".join(str(n) for n in numbers)
        not_known = name in unknown
        mark(name, "plan", f"program step {steps}" + (", not known yet" if not_known else ""))
        if not_known:
            classes[name].append("unknown")
    for name in bumped:
        mark(name, "bump", "the program bumps here")
    shown = {name: (" ".join(classes[name]), "; ".join(said)) for name, said in words.items()}
    robot_colour = colour(robot_seat) if robot_seat is not None else ""
    return [
        [
            {
                "name": name,
                "classes": (marks := shown.get(name, _UNMARKED))[0],
                "words": marks[1],
                "robot": name == robot,
                "robot_colour": robot_colour,
                "walls": walls_at.get(name, ""),
                "clickable": clickable,
                "crate": name in crates,
                "step": planned[name][0] if name in planned else None,
            }
            for name in names
        ]
        for names in CELL_NAMES
    ]


def program_plan(robot: JSON, program: str, runs: int) -> list[JSON]:
    """The program's commands from where the robot stands, as far as its open grid knows the
    warehouse: the cells it has been on are clear, the crates it hit are crates, the edges are
    walls; any other cell is "unknown", and the plan goes on as if it were clear. Nothing here
    comes from the warehouse itself."""
    clear = set(robot["visited"])
    crates = set(robot["crates"])
    at = robot["at"]
    damage = robot["damage"]
    steps: list[JSON] = []
    for _ in range(runs):
        for direction in program:
            to, result = rules.step(EMPTY_WAREHOUSE, at, direction)
            if to is not None:
                result = "crate" if to in crates else "clear" if to in clear else "unknown"
            steps.append({"from": at, "dir": direction, "to": to, "result": result})
            if result in {"clear", "unknown"}:
                assert to is not None
                at = to
            else:
                damage += 1
            if at == rules.EXIT or damage >= rules.MAX_DAMAGE:
                return steps
    return steps


def plan_lines(steps: list[JSON], damage_before: int, planned: int) -> list[str]:
    """The plan in words, as `outcome_lines` says what happened; `planned`: the program's
    moves, of which the steps may be fewer (the robot out, or broken down, before the end)."""
    lines = []
    damage = damage_before
    for step in steps:
        word = COMMAND_WORDS[step["dir"]]
        if step["result"] == "wall":
            damage += 1
            line = f"{word}: {step['from']} to {TOWARDS[step['dir']]}: wall (damage {damage})"
        elif step["result"] == "crate":
            damage += 1
            line = f"{word}: {step['from']} to {step['to']}: crate (damage {damage})"
        elif step["result"] == "unknown":
            line = f"{word}: {step['from']} to {step['to']}: not known yet"
        else:
            line = f"{word}: {step['from']} to {step['to']}: clear"
        if step["to"] == rules.EXIT and step["result"] != "crate":
            line += ", the exit"
        lines.append(line)
    left = planned - len(steps)
    rest = "the last move is not run" if left == 1 else f"the last {left} moves are not run"
    if damage >= rules.MAX_DAMAGE:
        lines.append(f"The robot would break down ({rules.MAX_DAMAGE} damage).")
    elif left > 0:
        lines.append(f"The robot would be out at {rules.EXIT}: {rest}.")
    return lines


def _crates(rows: list[str] | None) -> set[str]:
    if rows is None:
        return set()
    return {
        rules.cell_name(r, c)
        for r, row in enumerate(rows)
        for c, ch in enumerate(row)
        if ch == rules.CRATE
    }


def outcome_lines(steps: list[JSON], damage_before: int) -> list[str]:
    """The outcome of each command as the paper game says it: "A2 to A3: crate (damage 3)"."""
    lines = []
    damage = damage_before
    for step in steps:
        if step["result"] == "wall":
            damage += 1
            lines.append(f"{step['from']} to {TOWARDS[step['dir']]}: wall (damage {damage})")
        elif step["result"] == "crate":
            damage += 1
            lines.append(f"{step['from']} to {step['to']}: crate (damage {damage})")
        else:
            lines.append(f"{step['from']} to {step['to']}: clear")
    return lines


def program_text(program: str, runs: int) -> str:
    moves = len(program) * runs
    times = "once" if runs == 1 else f"{runs} times"
    return f"{' '.join(program)}, {times}: {moves} move{'s' if moves != 1 else ''}"


def _commands(data: QueryDict) -> list[str]:
    return [
        (data.get(f"command_{i}") or "").strip().upper() for i in range(1, rules.MAX_COMMANDS + 1)
    ]


def chosen_commands(data: QueryDict) -> str:
    """The form's commands as chosen, a space for each one left empty: "U R" has a gap. What
    no select offers draws as empty."""
    return "".join(c if c in rules.DIRECTIONS and len(c) == 1 else " " for c in _commands(data))


def read_program(data: QueryDict) -> tuple[str, int]:
    commands = _commands(data)
    gap = commands.index("") if "" in commands else len(commands)
    if any(commands[gap:]):
        # A gap would be closed up and the program played otherwise than it reads.
        raise MoveInputError(
            f"Command {gap + 1} is empty but a later one is chosen: choose the commands in "
            "order, from command 1, with no gap."
        )
    program = "".join(commands)
    if not program:
        program = (data.get("program") or "").strip().upper().replace(" ", "")
    if not program:
        raise MoveInputError("Choose at least one command.")
    if len(program) > rules.MAX_COMMANDS or set(program) - set(rules.DIRECTIONS):
        raise MoveInputError("A program is 1 to 4 commands, each Up, Down, Left or Right.")
    runs = ascii_int(data.get("runs"))
    if runs is None or not 1 <= runs <= rules.MAX_RUNS:
        raise MoveInputError("Run the program 1 to 4 times.")
    return program, runs


def _not_set_up_yet(view: JSON, data: QueryDict) -> None:
    """A program sent during set-up by a seat whose warehouse is set up: it waits for the other
    warehouse. (Its warehouse sent again is the engine's to refuse.)"""
    if "warehouse" not in data and view["set_up"][view["viewer"]]:
        raise MoveInputError(
            "Your warehouse is set up: the robots start once the other one is too."
        )


def read_warehouse(text: str) -> list[str]:
    cells = "".join(ch for ch in text.upper() if ch in ".X")
    if len(cells) != rules.SIZE * rules.SIZE:
        raise MoveInputError("The warehouse form is incomplete: start again from a clear grid.")
    return [cells[i : i + rules.SIZE] for i in range(0, len(cells), rules.SIZE)]


# A grid's column letters, and each row's heading: the same on every grid.
GRID_HEAD = (
    "  <thead><tr><td></td>"
    + "".join(f'<th scope="col">{c}</th>' for c in range(1, rules.SIZE + 1))
    + "</tr></thead>\n  <tbody>\n"
)
ROW_HEADS = [f'    <tr><th scope="row">{letter}</th>\n' for letter in rules.ROW_NAMES]


def grid_html(
    rows: list[list[dict[str, Any]]],
    *,
    kind: str,
    caption: str,
    robot_name: str,
    draft_url: str = "",
) -> SafeString:
    """A warehouse grid as a table, drawn here rather than by a template loop over its 100
    cells (a page shows up to three grids): the letters across, each row's cells with their
    classes, the robot or the program's step, and words for a screen reader; during set-up
    each cell is a button that toggles a crate (posted to `draft_url`). A cell's name, classes,
    walls and step are the site's own (`_grid`: cell names, fixed words and numbers) with
    nothing to escape; its words (with an apostrophe) go through the standard library's
    escape, not Django's, whose lazy-text wrapper cost more than the drawing: a move's answer
    draws two grids, and Django's escape of each cell's four values was a fifth of a Robot Maze
    Race move POST."""
    out = [
        f'<table class="warehouse{" " + html.escape(kind) if kind else ""}"'
        f"{f' aria-labelledby={chr(34)}{html.escape(caption)}{chr(34)}' if caption else ''}>\n",
        GRID_HEAD,
    ]
    robot_words = f"{html.escape(robot_name)}'s robot"
    url = html.escape(draft_url)
    for head, row in zip(ROW_HEADS, rows, strict=True):
        out.append(head)
        for cell in row:
            name, classes, words = cell["name"], cell["classes"], cell["words"]
            walls = f" walls-{cell['walls']}" if cell["walls"] else ""
            out.append(f'      <td class="{classes}{walls}" data-cell="{name}">')
            if cell["clickable"]:
                blocks = ", blocks the way" if "blocker" in classes else ""
                out.append(
                    f'<button type="submit" name="toggle" value="{name}" id="toggle-{name}"'
                    f' formaction="{url}" hx-post="{url}" hx-target="#game"'
                    f' hx-swap="outerHTML" aria-label="{name}{blocks}"'
                    f' aria-pressed="{"true" if cell["crate"] else "false"}"'
                    f' title="{name}"></button>'
                )
            else:
                if cell["robot"]:
                    out.append(f'<span class="robot">{mark_html(cell["robot_colour"])}</span>')
                elif cell["step"]:
                    out.append(f'<span class="step" aria-hidden="true">{cell["step"]}</span>')
                robot = (robot_words + ("; " if words else "")) if cell["robot"] else ""
                escaped = html.escape(words) if words else ""
                out.append(f'<span class="visually-hidden">{robot}{escaped}</span>')
            out.append("</td>\n")
        out.append("    </tr>\n")
    out.append("  </tbody>\n</table>")
    return mark_safe("".join(out))  # noqa: S308 - the site's own values; the rest escaped above


def board_html(
    board: dict[str, Any], name: Callable[[int], str], link: Callable[[int], str]
) -> SafeString:
    """The board (`UI.board`'s dict): the phase and who moves first, each grid with its heading,
    damage and the outcome of its last program, and the legend. Drawn here rather than by a
    template: a move's answer draws it for every move. `name` gives a seat's player's name
    (escaped here), `link` the name as HTML, linked to the player's page (escaped there)."""
    out = ['<div class="robotmaze" id="board">\n  <p class="phase">\n    ']
    if board["phase"] == "setup":
        # An abort in the set-up leaves the state there: the page says the game is over.
        waiting = "did not set up" if board["game_over"] else "is setting up"
        ready = "; ".join(
            f"{link(seat)} {'is ready' if done else waiting}"
            for seat, done in enumerate(board["set_up"])
        )
        out.append(
            f"Set-up: each player hides 20 crates in a secret warehouse.\n    {ready}.\n    "
        )
    out.append(f"\n    {link(board['first_seat'])} moves first (drawn from the seed).\n  </p>\n  ")
    for grid in board["grids"]:
        seat, grid_id = grid["seat"], grid["id"]
        if grid["title"]:
            title = html.escape(grid["title"])
        elif grid["kind"] == "secret":
            title = f"{mark_html(seat)} {html.escape(name(seat))}'s secret warehouse"
            if board["phase"] != "setup":
                title += f", with {html.escape(name(grid['robot_seat']))}'s robot's run"
        else:
            title = (
                f"{mark_html(seat)} {html.escape(name(seat))}'s robot in"
                f" {html.escape(name(grid['owner']))}'s warehouse"
            )
        robot_seat = grid["robot_seat"]
        drawn = grid_html(
            grid["rows"],
            kind=grid["kind"],
            caption=grid_id,
            robot_name=name(robot_seat) if robot_seat is not None else "",
        )
        damage = (
            f'    <p class="damage">Damage: <strong>{grid["damage"]}</strong> of'
            f" {board['max_damage']}</p>\n"
            if board["play_started"]
            else ""
        )
        out.append(
            f'\n  <section class="grid-box" data-grid="{grid["kind"]}-{seat}"'
            f' aria-labelledby="{grid_id}">\n    <h2 id="{grid_id}">{title}</h2>\n'
            f"{damage}    {drawn}\n    "
        )
        if grid["last"]:
            lines = "".join(f"<li>{html.escape(line)}</li>" for line in grid["last"])
            out.append(
                '\n      <h3 class="outcomes-title">Its last program</h3>\n'
                f'      <ol class="outcomes">{lines}</ol>\n    '
            )
        out.append("\n  </section>\n  ")
    out.append("\n  ")
    if board["grids"]:
        planned = (board["program"] or {}).get("plan")
        out.append(
            '\n  <p class="legend" aria-hidden="true"><span class="item"><span class="key crate">'
            '</span> crate</span> <span class="item"><span class="key found"></span> crate found'
            '</span> <span class="item"><span class="key path"></span> robot\'s path</span>'
            ' <span class="item"><span class="key wall"></span> wall hit</span>'
            + (
                ' <span class="item"><span class="key plan"></span> your program</span>'
                ' <span class="item"><span class="key plan unknown"></span> not known yet</span>'
                if planned
                else ""
            )
            + ' <span class="item">entrance A1, exit J10</span></p>\n  '
        )
    out.append("\n</div>")
    return mark_safe("".join(out))  # noqa: S308 - names and text escaped above


def command_choices_html(program: JSON) -> SafeString:
    """The program form's command choices (`UI._program`'s dict): a select for each of the
    program's places, the drafted command chosen."""
    chosen = program["program"]
    out = []
    for slot in range(1, rules.MAX_COMMANDS + 1):
        value = chosen[slot - 1].strip() if slot <= len(chosen) else ""
        options = "".join(
            f'<option value="{key}"{" selected" if value == key else ""}>{word}</option>'
            for key, word in COMMAND_WORDS.items()
        )
        out.append(
            f'\n      <label class="command">{slot}.\n      <select name="command_{slot}"'
            f' id="command-{slot}" aria-label="Command {slot}">\n'
            f'        <option value="">—</option>\n        {options}\n      </select></label>\n    '
        )
    return mark_safe("".join(out))  # noqa: S308 - the site's own words and letters only


def run_choices_html(program: JSON) -> SafeString:
    """The program form's choices of how many times to run it, the drafted one chosen."""
    runs = program["runs"]
    return mark_safe(  # noqa: S308 - numbers only
        "".join(
            f'<option value="{n}"{" selected" if runs == n else ""}>{n} time{"s" if n != 1 else ""}'
            "</option>"
            for n in range(1, rules.MAX_RUNS + 1)
        )
    )


class UI(GameUI):
    slug = "robotmaze"
    create_form: type[CreateForm] = RobotmazeCreateForm
    board_template = "games/boards/robotmaze.html"
    move_template = "games/forms/robotmaze_move.html"

    def board(
        self,
        view: JSON,
        viewer: int | None,
        draft: JSON | None = None,
        *,
        yours: bool = True,
        game_over: bool = False,
    ) -> dict[str, Any]:
        phase = view["phase"]
        robots = view["robots"]
        over = phase == "over"
        grids = []
        # The open grid of each robot: what its runs found in the other seat's warehouse.
        seats = [viewer] if viewer is not None and not over else [0, 1]
        if phase == "setup":
            seats = []
        program = self._program(view, viewer, draft)
        for seat in seats:
            robot = robots[seat]
            owner = 1 - seat
            # The engine's view carries the other warehouse only once it may be seen.
            revealed = view["warehouses"][owner]
            plan = program.get("plan") if program is not None and seat == viewer else None
            grids.append(
                {
                    "kind": "open",
                    "id": f"grid-open-{seat}",
                    "seat": seat,
                    "robot_seat": seat,
                    # Without a title the template names the robot's and the warehouse's
                    # seats from the game's seat list.
                    "title": "Your robot in the other warehouse"
                    if seat == viewer and not over and yours
                    else None,
                    "owner": owner,
                    "damage": robot["damage"],
                    "rows": _grid(
                        crates=_crates(revealed),
                        found=set(robot["crates"]),
                        path=robot["visited"],
                        robot=robot["at"],
                        robot_seat=seat,
                        walls=robot["walls"],
                        plan=plan,
                    ),
                    "last": self._last_outcome(robot),
                }
            )
        # The viewer's own secret grid, with the other robot's run drawn on it. With no viewer,
        # in the set-up, the warehouses the view carries: a replay's, set up so far (the
        # engine gives a spectator of a game none).
        owners = [viewer] if viewer is not None and not over else []
        if viewer is None and phase == "setup":
            owners = [seat for seat in (0, 1) if view["warehouses"][seat] is not None]
        for owner in owners:
            if view["warehouses"][owner] is None:
                continue
            other = robots[1 - owner]
            grids.append(
                {
                    "kind": "secret",
                    "id": f"grid-secret-{owner}",
                    "seat": owner,
                    "robot_seat": 1 - owner,
                    # In the set-up, no robot has run yet. Not yours: named by board_html.
                    "title": None
                    if not yours or owner != viewer
                    else "Your secret warehouse"
                    if phase == "setup"
                    else "Your secret warehouse, with the other robot's run",
                    "damage": other["damage"],
                    "rows": _grid(
                        crates=_crates(view["warehouses"][owner]),
                        found=set(other["crates"]),
                        path=other["visited"],
                        robot=other["at"] if phase != "setup" else None,
                        robot_seat=1 - owner,
                        walls=other["walls"],
                    ),
                    "last": self._last_outcome(other),
                }
            )
        editor = None
        if phase == "setup" and viewer is not None and viewer in view["to_move"]:
            warehouse = (draft or {}).get("warehouse") or EMPTY_WAREHOUSE
            problems = rules.warehouse_problems(warehouse)
            blockers = set(rules.blocking_cells(warehouse))
            editor = {
                "rows": _grid(crates=_crates(warehouse), blockers=blockers, clickable=True),
                "text": "".join(warehouse),
                "count": len(_crates(warehouse)),
                "problems": problems,
            }
        return {
            "phase": phase,
            "game_over": game_over,
            # The editor takes the page's width: the board has nothing beside it yet.
            "wide": editor is not None,
            "grids": grids,
            "editor": editor,
            "program": program,
            "first_seat": view["first_seat"],
            "set_up": view["set_up"],
            # No robot has run in the set-up: no damage is shown before play begins.
            "play_started": rules.play_started(view),
            "max_damage": rules.MAX_DAMAGE,
        }

    @staticmethod
    def _program(view: JSON, viewer: int | None, draft: JSON | None) -> JSON | None:
        """The program form's state: the commands and runs drafted ("" and None before any),
        with the drafted program's plan on the viewer's grid."""
        if view["phase"] != "play" or viewer is None or viewer not in view["to_move"]:
            return None
        program: JSON = {"program": "", "runs": None}
        program.update((draft or {}).get("program") or {})
        chosen = program["program"]
        # A refused form drawn as chosen (UI.draft_update) has no plan: its gap is refused.
        if chosen and " " not in chosen and program["runs"] in range(1, rules.MAX_RUNS + 1):
            robot = view["robots"][viewer]
            program["text"] = program_text(chosen, program["runs"])
            program["plan"] = program_plan(robot, chosen, program["runs"])
            program["plan_lines"] = plan_lines(
                program["plan"], robot["damage"], len(chosen) * program["runs"]
            )
            program["guessing"] = any(s["result"] == "unknown" for s in program["plan"])
        return program

    @staticmethod
    def _last_outcome(robot: JSON) -> list[str]:
        if not robot["moves"]:
            return []
        last = robot["moves"][-1]
        before = robot["damage"] - sum(1 for s in last["steps"] if s["result"] != "clear")
        return outcome_lines(last["steps"], before)

    def parse_move(self, data: QueryDict, view: JSON) -> JSON:
        if view["phase"] == "setup":
            _not_set_up_yet(view, data)
            return {"warehouse": read_warehouse(data.get("warehouse") or "")}
        program, runs = read_program(data)
        return {"program": program, "runs": runs}

    def draft_update(self, data: QueryDict, view: JSON, draft: JSON | None) -> JSON:
        """A change to the form that is not a move yet: a crate placed or lifted, a random or a
        clear warehouse, a program to preview."""
        draft = dict(draft or {})
        if view["phase"] == "setup":
            _not_set_up_yet(view, data)
            action = data.get("action", "")
            if action == "random":
                # The player's own choice of a start, not a draw of the game: no game stream.
                draft["warehouse"] = rules.random_warehouse(random.SystemRandom())
            elif action == "clear":
                draft["warehouse"] = list(EMPTY_WAREHOUSE)
            else:
                warehouse = read_warehouse(data.get("warehouse") or "".join(EMPTY_WAREHOUSE))
                # Several cells when the page kept the taps made while one was on its way
                # (static/js/site.js): each toggles, in order.
                for cell in data.getlist("toggle"):
                    try:
                        r, c = rules.parse_cell(cell)
                    except ValueError:
                        raise MoveInputError(f"{cell} is not a cell of the warehouse.") from None
                    row = list(warehouse[r])
                    row[c] = rules.EMPTY if row[c] == rules.CRATE else rules.CRATE
                    warehouse[r] = "".join(row)
                draft["warehouse"] = warehouse
        else:
            try:
                program, runs = read_program(data)
            except MoveInputError as exc:
                # Drawn as chosen, gaps and all: the last program that could be read, shown
                # instead, would be run by the next click on "Run the program".
                chosen = {"program": chosen_commands(data), "runs": ascii_int(data.get("runs"))}
                raise MoveInputError(str(exc), shown={**draft, "program": chosen}) from None
            draft["program"] = {"program": program, "runs": runs}
        return draft
