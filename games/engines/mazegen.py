"""How a Maze Race maze is drawn from the game's seed, so that anyone can rebuild it.

The grid has 15 columns, `a` to `o` from the left, and 15 rows, `1` to `15` from the top. The
start is a1 (top left) and the exit o15 (bottom right). Cells are numbered row by row from the
top, left to right: a1 is 0, b1 is 1, ..., o1 is 14, a2 is 15, ..., o15 is 224. The neighbours
of a cell are listed in the order north (number - 15), east (+ 1), south (+ 15), west (- 1),
leaving out any that would be off the grid. Every draw is `below(n)` of the game's random stream
(see the random stream's description): a whole number from 0 to n - 1.

1. A spanning tree, by Wilson's algorithm. At first every wall is closed and the tree holds
   only o15. Then, again and again: take the lowest-numbered cell not yet in the tree (stop when
   there is none) and walk from it. At each cell of the walk, draw below(k), where k is the
   number of the cell's neighbours, take the neighbour at that place in the list, write on the
   cell "left towards that neighbour" (replacing anything written on it before) and step there.
   The walk stops at the first cell that is in the tree. Then go once more from the cell where
   the walk began, following what is written on each cell: open the wall between the cell and
   the one it was left towards, add the cell to the tree and step on, until you reach the tree.
   (Following the last words written erases the walk's loops, so the tree is uniformly drawn
   among all the spanning trees of the grid.)
2. A few loops. Go through the cells in order, 0 to 224. If a cell is a dead end at that moment
   (it has exactly one open wall), draw below(10). If the draw is 0, list the neighbours it has
   a closed wall to (in the order north, east, south, west), draw below(k) where k is how many
   there are (a draw is made even when k is 1) and open the wall to the neighbour at that place.
   About one dead end in ten is opened, and each opened wall makes one loop.

A maze is a list of 225 numbers, one per cell, saying which walls are open: 1 north, 2 east,
4 south, 8 west, added up. A wall is open from both sides or from neither. Written out, a maze
is 15 strings, one per row from the top, of one hexadecimal digit per cell, `0`-`9` and `a`-`f`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

from games.engines.randomstream import RandomStream

SIZE = 15
CELLS = SIZE * SIZE
COLUMNS = "abcdefghijklmno"
START = 0
EXIT = CELLS - 1
DIRECTIONS = "NESW"
BIT = {"N": 1, "E": 2, "S": 4, "W": 8}
OPPOSITE = {"N": "S", "E": "W", "S": "N", "W": "E"}
STEP = {"N": -SIZE, "E": 1, "S": SIZE, "W": -1}
LOOP_ODDS = 10


def cell_name(cell: int) -> str:
    row, column = divmod(cell, SIZE)
    return f"{COLUMNS[column]}{row + 1}"


def parse_cell(name: str) -> int:
    """The cell number of a name such as `b1`; ValueError for anything else."""
    digits = name[1:]
    if len(name) < 2 or name[0] not in COLUMNS or not (digits.isascii() and digits.isdigit()):
        raise ValueError(f"{name!r} is not a cell")
    row = int(digits)
    if not 1 <= row <= SIZE or name[1] == "0":
        raise ValueError(f"{name!r} is not a cell")
    return (row - 1) * SIZE + COLUMNS.index(name[0])


def neighbour(cell: int, direction: str) -> int | None:
    """The cell next to `cell` in `direction`, or None off the grid."""
    row, column = divmod(cell, SIZE)
    if direction == "N":
        return cell - SIZE if row > 0 else None
    if direction == "S":
        return cell + SIZE if row < SIZE - 1 else None
    if direction == "E":
        return cell + 1 if column < SIZE - 1 else None
    if direction == "W":
        return cell - 1 if column > 0 else None
    raise ValueError(f"{direction!r} is not a direction")


def _neighbour_lists() -> list[list[tuple[str, int]]]:
    lists: list[list[tuple[str, int]]] = []
    for cell in range(CELLS):
        found = [(d, neighbour(cell, d)) for d in DIRECTIONS]
        lists.append([(d, n) for d, n in found if n is not None])
    return lists


# NEIGHBOURS[cell]: (direction, cell) pairs in the order N, E, S, W, on the grid only.
NEIGHBOURS = _neighbour_lists()
NAMES = [cell_name(cell) for cell in range(CELLS)]
CELL_OF = {name: cell for cell, name in enumerate(NAMES)}


def direction_between(cell: int, other: int) -> str:
    for direction, next_cell in NEIGHBOURS[cell]:
        if next_cell == other:
            return direction
    raise ValueError(f"{cell_name(cell)} and {cell_name(other)} are not neighbours")


def _open(maze: list[int], cell: int, direction: str) -> None:
    other = cell + STEP[direction]
    maze[cell] |= BIT[direction]
    maze[other] |= BIT[OPPOSITE[direction]]


def generate(stream: RandomStream) -> list[int]:
    """Draw a maze from the stream (which moves on by the draws it takes)."""
    maze = [0] * CELLS
    in_tree = [False] * CELLS
    in_tree[EXIT] = True
    left_towards: list[str] = [""] * CELLS
    for begin in range(CELLS):
        if in_tree[begin]:
            continue
        cell = begin
        while not in_tree[cell]:
            options = NEIGHBOURS[cell]
            direction, cell_next = options[stream.below(len(options))]
            left_towards[cell] = direction
            cell = cell_next
        cell = begin
        while not in_tree[cell]:
            direction = left_towards[cell]
            _open(maze, cell, direction)
            in_tree[cell] = True
            cell += STEP[direction]
    for cell in range(CELLS):
        if open_count(maze[cell]) != 1:
            continue
        if stream.below(LOOP_ODDS) != 0:
            continue
        closed = [d for d, _ in NEIGHBOURS[cell] if not maze[cell] & BIT[d]]
        _open(maze, cell, closed[stream.below(len(closed))])
    return maze


def maze_from_seed(seed: bytes) -> tuple[list[int], int]:
    """The maze a seed draws, and the stream position after it."""
    stream = RandomStream(seed)
    maze = generate(stream)
    return maze, stream.position


def open_count(bits: int) -> int:
    return bin(bits).count("1")


def open_directions(bits: int) -> list[str]:
    return [d for d in DIRECTIONS if bits & BIT[d]]


def encode(maze: Sequence[int]) -> list[str]:
    """The record's `open` rows: 15 strings of one hex digit per cell, top row first."""
    if len(maze) != CELLS:
        raise ValueError(f"a maze has {CELLS} cells, not {len(maze)}")
    return ["".join(f"{bits:x}" for bits in maze[r * SIZE : (r + 1) * SIZE]) for r in range(SIZE)]


def decode(rows: Sequence[str]) -> list[int]:
    """The maze written by `encode`; ValueError if the rows are not one."""
    if len(rows) != SIZE or any(len(row) != SIZE for row in rows):
        raise ValueError(f"a maze is {SIZE} rows of {SIZE} hex digits")
    maze = [int(digit, 16) for row in rows for digit in row]
    for cell in range(CELLS):
        for direction in DIRECTIONS:
            if not maze[cell] & BIT[direction]:
                continue
            other = neighbour(cell, direction)
            if other is None or not maze[other] & BIT[OPPOSITE[direction]]:
                raise ValueError(f"the wall {direction} of {cell_name(cell)} is open one way")
    return maze


def search(source: int, passes: Callable[[int, str, int], bool]) -> tuple[list[int], list[int]]:
    """Breadth first from `source`, through the steps `passes(cell, direction, other)` allows:
    steps to every cell (-1 where it cannot go), and the cell each was first reached from.
    Neighbours are tried in NEIGHBOURS order, so ties always break the same way."""
    found = [-1] * CELLS
    before = [-1] * CELLS
    found[source] = 0
    queue = deque([source])
    while queue:
        cell = queue.popleft()
        for direction, other in NEIGHBOURS[cell]:
            if found[other] < 0 and passes(cell, direction, other):
                found[other] = found[cell] + 1
                before[other] = cell
                queue.append(other)
    return found, before


def distances(maze: Sequence[int], source: int) -> list[int]:
    """Steps from `source` to every cell along open walls (-1 where it cannot go)."""
    return search(source, lambda cell, direction, _: bool(maze[cell] & BIT[direction]))[0]


def statistics(maze: Sequence[int]) -> dict[str, int]:
    """Dead ends, junctions (three or more open walls), loops and the shortest way out."""
    counts = [open_count(bits) for bits in maze]
    edges = sum(counts) // 2
    return {
        "dead_ends": sum(1 for c in counts if c == 1),
        "junctions": sum(1 for c in counts if c >= 3),
        "loops": edges - (CELLS - 1),
        "shortest": distances(maze, START)[EXIT],
    }
