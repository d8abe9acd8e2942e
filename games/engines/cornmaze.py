"""Corn maze: shift two columns of arrows, then follow the arrows towards the right edge.

The board is a square of N x N arrows (N from 6 to 12, 8 by default), each one of `<`, `>`,
`^`, `v`. Coordinates are 0-based `[row, col]`; the site shows columns as letters from `a`
(col 0, left) and rows as numbers from `1` (row 0, top). Every seat has one marker; markers
start on distinct rows of column `a` and may later share a cell.

A turn is two shifts and a walk. Shifting column c moves every arrow in it down one row: the
bottom arrow falls off and a new arrow, drawn from the random stream, goes on top; every marker
in column c moves down one row too. A column with a marker in its bottom row cannot be shifted,
except the rightmost column, which can always be shifted. The second shift (which may be of the
same column) is judged on the board after the first. Then the marker steps one cell right and
follows arrows: it looks at the arrow under it and stops if that arrow points off the left or
right edge, or at a cell already visited this turn; otherwise it moves there (up and down wrap
around from the top row to the bottom row and back) and looks again. The cell where the marker
stands after the two shifts counts as visited. A marker that ends its turn in the last column
wins. Turns pass to the next seat in increasing order, skipping dropped seats. A seat that
times out or resigns is dropped and its marker leaves the board; the last seat left wins.

Random draws, all from `RandomStream(seed)` (see `randomstream`), in this order:
1. the N * N starting arrows, row by row from the top row, each row from left to right: one
   `below(4)` each, indexing the string `<>^v` (0 is `<`, 1 `>`, 2 `^`, 3 `v`);
2. the starting rows, for seat 0, 1, ... in turn: `below(number of rows not yet taken)` indexes
   the ascending list of rows not yet taken; the marker goes in column `a` of that row;
3. the seat that moves first: `below(number of seats)`;
4. then, during play, one `below(4)` for the new top arrow of each shift, in the order the
   shifts are made (first shift of the first turn, second shift of the first turn, ...).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from functools import cache

from games.engines.base import JSON, Engine, IllegalMove, Result
from games.engines.randomstream import RandomStream

SLUG = "cornmaze"
INITIAL_IS_PUBLIC = True  # nothing in a Corn maze is hidden but the seed
TITLE = "Corn maze"
MIN_SEATS = 2
MAX_SEATS = 6
MIN_SIZE = 6
MAX_SIZE = 12
DEFAULT_SIZE = 8

ARROWS = "<>^v"
LEFT, RIGHT, UP, DOWN = 0, 1, 2, 3

MALFORMED = "A move is two columns, such as c e."


# --- options and start -------------------------------------------------------------------


def default_options() -> JSON:
    return {"size": DEFAULT_SIZE}


def validate_options(options: JSON, seats: int) -> JSON:
    if isinstance(seats, bool) or not isinstance(seats, int):
        raise ValueError(f"Corn maze is for {MIN_SEATS} to {MAX_SEATS} players.")
    if not MIN_SEATS <= seats <= MAX_SEATS:
        raise ValueError(f"Corn maze is for {MIN_SEATS} to {MAX_SEATS} players.")
    if not isinstance(options, dict):
        raise ValueError("The options are not readable.")
    raw = options.get("size", DEFAULT_SIZE)
    size: int | None = None
    if isinstance(raw, str):
        text = raw.strip()
        if text.isascii() and text.isdigit():
            size = int(text)
    elif isinstance(raw, int) and not isinstance(raw, bool):
        size = raw
    if size is None or not MIN_SIZE <= size <= MAX_SIZE:
        raise ValueError(f"The board size must be from {MIN_SIZE} to {MAX_SIZE}.")
    return {"size": size}


def start(seed: bytes, options: JSON, seats: int) -> JSON:
    size = validate_options(options, seats)["size"]
    stream = RandomStream(seed)
    arrows = ["".join(ARROWS[stream.below(4)] for _ in range(size)) for _ in range(size)]
    free_rows = list(range(size))
    markers: list[list[int] | None] = []
    for _ in range(seats):
        markers.append([free_rows.pop(stream.below(len(free_rows))), 0])
    first = stream.below(seats)
    return {
        "seed": seed.hex(),
        "rng": stream.position,
        "size": size,
        "seats": seats,
        "arrows": arrows,
        "markers": markers,
        "first_seat": first,
        "to_move": first,
        "dropped": [],
        "winner": None,
        "reason": None,
        "last": None,
        "turn": 0,
        "initial": {"arrows": list(arrows), "markers": copy.deepcopy(markers)},
    }


def initial(state: JSON) -> JSON:
    return copy.deepcopy(state["initial"])


def first_seat(state: JSON) -> int:
    return int(state["first_seat"])


def to_move(state: JSON) -> list[int]:
    seat = state["to_move"]
    return [] if seat is None else [seat]


def result(state: JSON) -> Result | None:
    winner = state["winner"]
    if winner is None:
        return None
    places = [1 if seat == winner else 2 for seat in range(state["seats"])]
    return Result(reason=state["reason"], places=places)


# --- columns and notation ----------------------------------------------------------------


def column_letter(col: int) -> str:
    return chr(ord("a") + col)


def _column_name(col: int) -> str:
    return column_letter(col) if 0 <= col < 26 else str(col)


def parse_column(text: str, size: int | None = None) -> int:
    """`"c"` -> 2. Raises IllegalMove for anything but one letter (on the board, given a size)."""
    letter = text.strip().lower()
    if len(letter) != 1 or not "a" <= letter <= "z":
        raise IllegalMove(f"{text.strip() or 'Nothing'} is not a column: columns are letters.")
    col = ord(letter) - ord("a")
    if size is not None and col >= size:
        raise IllegalMove(_off_board(col, size))
    return col


def parse_move_text(text: str, size: int | None = None) -> JSON:
    """`"c e"` (or `"c,e"`, `"ce"`, `"C E"`) -> `{"shifts": [2, 4]}`; raises IllegalMove."""
    parts = [part for part in re.split(r"[\s,;/-]+", text.strip()) if part]
    if len(parts) == 1 and len(parts[0]) == 2:
        parts = list(parts[0])
    if len(parts) != 2:
        raise IllegalMove(MALFORMED)
    return {"shifts": [parse_column(part, size) for part in parts]}


def notation(move: JSON, outcome: JSON) -> str:
    if move.get("timeout"):
        return "ran out of time"
    if move.get("resign"):
        return "resigned"
    return " ".join(column_letter(col) for col in move["shifts"])


def _off_board(col: int, size: int) -> str:
    last = column_letter(size - 1)
    return f"The board has no column {_column_name(col)}: its columns are a to {last}."


# --- the board ---------------------------------------------------------------------------


def blocked_columns(markers: Sequence[Sequence[int] | None], size: int) -> list[int]:
    """Columns that cannot be shifted now: a marker stands in their bottom row."""
    return sorted(
        {m[1] for m in markers if m is not None and m[0] == size - 1 and m[1] != size - 1}
    )


def blocked_after(markers: Sequence[Sequence[int] | None], size: int) -> dict[str, list[int]]:
    """For each column that may be shifted first: the columns that may not be shifted second."""
    blocked = blocked_columns(markers, size)
    answer: dict[str, list[int]] = {}
    for first in range(size):
        if first in blocked:
            continue
        cols = set(blocked)
        if first != size - 1 and any(
            m is not None and m[1] == first and m[0] == size - 2 for m in markers
        ):
            cols.add(first)
        answer[str(first)] = sorted(cols)
    return answer


def legal_moves(view_or_state: JSON) -> list[list[int]]:
    """Every legal `shifts` pair for the seat to move (none once the game is over)."""
    if view_or_state["to_move"] is None:
        return []
    size = view_or_state["size"]
    after = blocked_after(view_or_state["markers"], size)
    return [
        [first, second]
        for first in range(size)
        if str(first) in after
        for second in range(size)
        if second not in after[str(first)]
    ]


def walk(arrows: Sequence[Sequence[str]], start: Sequence[int]) -> list[list[int]]:
    """The marker's path from `start` (its cell after the shifts): one step right, then arrows.
    It stops on any other character: an arrow not known yet, in a preview of a move."""
    size = len(arrows)
    row, col = start[0], start[1] + 1
    path = [[start[0], start[1]], [row, col]]
    visited = {(start[0], start[1]), (row, col)}
    while True:
        arrow = arrows[row][col]
        if arrow not in ARROWS:
            break
        if arrow == "<":
            if col == 0:
                break
            target = (row, col - 1)
        elif arrow == ">":
            if col == size - 1:
                break
            target = (row, col + 1)
        elif arrow == "^":
            target = ((row - 1) % size, col)
        else:
            target = ((row + 1) % size, col)
        if target in visited:
            break
        visited.add(target)
        row, col = target
        path.append([row, col])
    return path


# --- moves -------------------------------------------------------------------------------


def apply(state: JSON, seat: int, move: JSON) -> tuple[JSON, JSON]:
    if state["winner"] is not None:
        raise IllegalMove("The game is over.")
    if isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat < state["seats"]:
        raise IllegalMove("There is no such seat in this game.")
    if seat in state["dropped"]:
        raise IllegalMove("You are no longer in this game.")
    if not isinstance(move, dict):
        raise IllegalMove(MALFORMED)
    if set(move) == {"resign"} and move["resign"] is True:
        return _drop(state, seat, "resign")
    if set(move) == {"timeout"} and move["timeout"] is True:
        if seat != state["to_move"]:
            raise IllegalMove("It is not your turn.")
        return _drop(state, seat, "timeout")
    if seat != state["to_move"]:
        raise IllegalMove("It is not your turn.")
    shifts = _checked_shifts(move, state["size"])
    return _turn(state, seat, shifts)


def _checked_shifts(move: JSON, size: int) -> list[int]:
    shifts = move.get("shifts")
    if set(move) != {"shifts"} or not isinstance(shifts, list) or len(shifts) != 2:
        raise IllegalMove(MALFORMED)
    for col in shifts:
        if isinstance(col, bool) or not isinstance(col, int):
            raise IllegalMove(MALFORMED)
        if not 0 <= col < size:
            raise IllegalMove(_off_board(col, size))
    return list(shifts)


def _turn(state: JSON, seat: int, shifts: list[int]) -> tuple[JSON, JSON]:
    new = _state_copy(state)
    size = new["size"]
    markers: list[list[int] | None] = new["markers"]
    grid = [list(row) for row in new["arrows"]]
    stream = RandomStream(bytes.fromhex(new["seed"]), new["rng"])
    drawn: list[str] = []
    for index, col in enumerate(shifts):
        if col in blocked_columns(markers, size):
            name = column_letter(col)
            if index == 0:
                raise IllegalMove(
                    f"Column {name} cannot be shifted: a marker stands in its bottom row."
                )
            raise IllegalMove(
                f"Column {name} cannot be shifted second: after the first shift, "
                "a marker stands in its bottom row."
            )
        for row in range(size - 1, 0, -1):
            grid[row][col] = grid[row - 1][col]
        arrow = ARROWS[stream.below(4)]
        grid[0][col] = arrow
        drawn.append(arrow)
        for marker in markers:
            if marker is not None and marker[1] == col:
                # Only the last column can hold a marker in its bottom row here, and a marker
                # there has already won; wrapping keeps the board consistent all the same.
                marker[0] = (marker[0] + 1) % size
    mine = markers[seat]
    assert mine is not None
    path = walk(grid, mine)
    end = path[-1]
    markers[seat] = list(end)
    new["arrows"] = ["".join(row) for row in grid]
    new["rng"] = stream.position
    new["turn"] += 1
    new["last"] = {"seat": seat, "shifts": list(shifts), "path": [list(cell) for cell in path]}
    if end[1] == size - 1:
        new["winner"] = seat
        new["reason"] = "exit"
        new["to_move"] = None
    else:
        new["to_move"] = _next_seat(new, seat)
    return new, {"drawn": drawn, "path": path, "end": list(end)}


def _state_copy(state: JSON) -> JSON:
    """What a move may change in place, copied (the markers); the rest is shared with `state`
    or replaced whole (copy.deepcopy of it all was most of a move's time in the engine)."""
    return {**state, "markers": [None if m is None else list(m) for m in state["markers"]]}


def _drop(state: JSON, seat: int, reason: str) -> tuple[JSON, JSON]:
    new = _state_copy(state)
    new["dropped"] = sorted([*new["dropped"], seat])
    new["markers"][seat] = None
    left = [s for s in range(new["seats"]) if s not in new["dropped"]]
    if len(left) == 1:
        new["winner"] = left[0]
        new["reason"] = reason
        new["to_move"] = None
    elif new["to_move"] == seat:
        new["to_move"] = _next_seat(new, seat)
    return new, {"dropped": seat}


def _next_seat(state: JSON, seat: int) -> int:
    seats = state["seats"]
    for step in range(1, seats + 1):
        candidate = (seat + step) % seats
        if candidate not in state["dropped"]:
            return candidate
    raise AssertionError("no seat left in play")


# --- what a seat sees --------------------------------------------------------------------


def view(state: JSON, seat: int | None) -> JSON:
    """Everything but the seed and the stream position: Corn maze hides nothing else."""
    size = state["size"]
    markers = state["markers"]
    return {
        "size": size,
        "seats": state["seats"],
        "arrows": list(state["arrows"]),
        "markers": [None if m is None else list(m) for m in markers],
        "first_seat": state["first_seat"],
        "to_move": state["to_move"],
        "dropped": list(state["dropped"]),
        "winner": state["winner"],
        "reason": state["reason"],
        "blocked": blocked_columns(markers, size),
        "blocked_after": blocked_after(markers, size),
        "last": copy.deepcopy(state["last"]),
        "turn": state["turn"],
    }


# --- fast simulation for bots ------------------------------------------------------------
#
# Bots work on a flat board: a list of N * N ints, index row * N + col, each 0..3 (an index
# into ARROWS) or an unknown arrow, any value >= UNKNOWN, each unknown with its own value.
# A bot cannot know the arrows that shifts will draw, so a shift puts an unknown on top.

UNKNOWN = 4

# (probability, end cell, ((unknown value, arrow it was taken to be), ...))
Branch = tuple[float, int, tuple[tuple[int, int], ...]]


@cache
def step_table(size: int) -> tuple[int, ...]:
    """`table[cell * 4 + arrow]`: the cell the arrow points at, or -1 off the left/right edge."""
    table: list[int] = []
    for cell in range(size * size):
        row, col = divmod(cell, size)
        table.append(cell - 1 if col > 0 else -1)
        table.append(cell + 1 if col < size - 1 else -1)
        table.append(((row - 1) % size) * size + col)
        table.append(((row + 1) % size) * size + col)
    return tuple(table)


def flat_board(arrows: Sequence[str]) -> list[int]:
    return [ARROWS.index(arrow) for row in arrows for arrow in row]


def shift_flat(board: list[int], size: int, col: int, new: int) -> None:
    """Shift `col` of a flat board down in place, with `new` on top."""
    board[col + size :: size] = board[col:-size:size]
    board[col] = new


@cache
def column_masks(size: int) -> tuple[int, ...]:
    """`masks[col]`: the bits of the cells of column `col`, as in a walk's bitmask of cells."""
    return tuple(sum(1 << (row * size + col) for row in range(size)) for col in range(size))


def end_branches(board: Sequence[int], size: int, start: int) -> tuple[list[Branch], int]:
    """Where a marker standing at cell `start` (after the shifts) ends its walk, for every way
    the unknown arrows it reads may point, and the bitmask of every cell some branch visits
    (the walk reads nothing else, so changes elsewhere leave it as it is). An unknown is read
    at most once in a walk, since no cell is landed on twice, so the branches are exclusive
    and their probabilities add up to 1."""
    table = step_table(size)
    out: list[Branch] = []
    reach = 0

    def go(cell: int, seen: int, prob: float, taken: tuple[tuple[int, int], ...]) -> None:
        nonlocal reach
        while True:
            arrow = board[cell]
            if arrow >= UNKNOWN:
                quarter = prob / 4
                for guess in range(4):
                    target = table[cell * 4 + guess]
                    branch_taken = (*taken, (arrow, guess))
                    if target < 0 or seen >> target & 1:
                        out.append((quarter, cell, branch_taken))
                        reach |= seen
                    else:
                        go(target, seen | 1 << target, quarter, branch_taken)
                return
            target = table[cell * 4 + arrow]
            if target < 0 or seen >> target & 1:
                out.append((prob, cell, taken))
                reach |= seen
                return
            seen |= 1 << target
            cell = target

    first = start + 1
    go(first, 1 << start | 1 << first, 1.0, ())
    return out, reach


def exit_chance(board: Sequence[int], size: int, start: int) -> tuple[float, int]:
    """The probability that a marker standing at cell `start` (after the shifts) ends its walk
    in the last column, each unknown arrow equally likely to be any of the four; and the
    bitmask of every cell some branch visits, as `end_branches` gives it."""
    table = step_table(size)
    last = size - 1
    first = start + 1
    # (cell, cells visited, probability of the branch), one per unknown arrow met
    stack = [(first, 1 << start | 1 << first, 1.0)]
    chance = 0.0
    reach = 0
    while stack:
        cell, seen, prob = stack.pop()
        while True:
            arrow = board[cell]
            if arrow >= UNKNOWN:
                prob /= 4
                for guess in range(4):
                    target = table[cell * 4 + guess]
                    if target < 0 or seen >> target & 1:
                        if cell % size == last:
                            chance += prob
                        reach |= seen
                    else:
                        stack.append((target, seen | 1 << target, prob))
                break
            target = table[cell * 4 + arrow]
            if target < 0 or seen >> target & 1:
                if cell % size == last:
                    chance += prob
                reach |= seen
                break
            seen |= 1 << target
            cell = target
    return chance, reach


def simulate(view: JSON, seat: int, shifts: Sequence[int]) -> list[tuple[float, list[int]]]:
    """From a view: where `seat`'s marker may end its turn after `shifts`, with probabilities
    (equal ends merged), treating the arrows the shifts draw as unknown. Legality unchecked."""
    size = view["size"]
    board = flat_board(view["arrows"])
    marker = view["markers"][seat]
    row, col = marker
    for index, shifted in enumerate(shifts):
        shift_flat(board, size, shifted, UNKNOWN + index)
        if shifted == col:
            row = (row + 1) % size
    ends: dict[int, float] = {}
    for prob, cell, _ in end_branches(board, size, row * size + col)[0]:
        ends[cell] = ends.get(cell, 0.0) + prob
    return [(prob, list(divmod(cell, size))) for cell, prob in sorted(ends.items())]


class Rules(Engine):
    """The cornmaze rules as the site calls them (engines/base.py)."""

    SLUG = SLUG
    TITLE = TITLE
    MIN_SEATS = MIN_SEATS
    MAX_SEATS = MAX_SEATS
    INITIAL_IS_PUBLIC = INITIAL_IS_PUBLIC
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

    def seats_left(self, state: JSON) -> list[int]:
        return list(state["dropped"])


ENGINE = Rules()
