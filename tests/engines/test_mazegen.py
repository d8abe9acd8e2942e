from __future__ import annotations

import hashlib
import statistics

import pytest

from games.engines import mazegen
from games.engines.mazegen import BIT, CELLS, DIRECTIONS, EXIT, OPPOSITE, START
from games.engines.randomstream import RandomStream

SEEDS = [hashlib.sha256(f"mazegen-test-{i}".encode()).digest() for i in range(200)]


@pytest.fixture(scope="module")
def mazes() -> list[list[int]]:
    return [mazegen.maze_from_seed(seed)[0] for seed in SEEDS]


def test_a_seed_always_draws_the_same_maze() -> None:
    first, position = mazegen.maze_from_seed(SEEDS[0])
    again, position_again = mazegen.maze_from_seed(SEEDS[0])
    assert first == again
    assert position == position_again > 0
    assert mazegen.maze_from_seed(SEEDS[1])[0] != first


def test_the_stream_position_is_where_the_maze_left_the_stream() -> None:
    stream = RandomStream(SEEDS[3])
    maze = mazegen.generate(stream)
    assert (maze, stream.position) == mazegen.maze_from_seed(SEEDS[3])


def test_the_maze_of_a_known_seed_is_pinned() -> None:
    # A change to the generator would change the maze of every game already played.
    maze, position = mazegen.maze_from_seed(bytes(32))
    rows = mazegen.encode(maze)
    assert rows[0] == "6aaee82ec2eeaac"
    assert rows[14] == "112b82ba9383911"
    assert position == 5984
    assert mazegen.statistics(maze) == {
        "dead_ends": 60,
        "junctions": 68,
        "loops": 9,
        "shortest": 30,
    }


def test_walls_are_walls_from_both_sides(mazes: list[list[int]]) -> None:
    for maze in mazes:
        for cell in range(CELLS):
            for direction in DIRECTIONS:
                other = mazegen.neighbour(cell, direction)
                is_open = bool(maze[cell] & BIT[direction])
                if other is None:
                    assert not is_open, "the outer wall is closed"
                else:
                    assert is_open == bool(maze[other] & BIT[OPPOSITE[direction]])


def test_every_cell_can_be_reached(mazes: list[list[int]]) -> None:
    for maze in mazes:
        assert min(mazegen.distances(maze, START)) >= 0


def test_a_maze_is_a_tree_with_a_few_loops(mazes: list[list[int]]) -> None:
    # Connected (above) with 224 + L open walls: a spanning tree plus L extra walls, one per
    # dead end opened (the rebuild test below checks which).
    for maze in mazes:
        edges = sum(mazegen.open_count(bits) for bits in maze) // 2
        assert 0 <= edges - (CELLS - 1) <= 25
        assert mazegen.statistics(maze)["loops"] == edges - (CELLS - 1)


def test_the_statistics_match_the_design(mazes: list[list[int]]) -> None:
    # DESIGN.md, measured on 2,000 mazes: about 54 dead ends, 58 junctions, 6.5 loops and a
    # shortest path of 37.5 steps. The bench prints the figures over 1,000 mazes.
    stats = [mazegen.statistics(maze) for maze in mazes]

    def mean(key: str) -> float:
        return statistics.fmean(row[key] for row in stats)

    assert 52 <= mean("dead_ends") <= 60
    assert 55 <= mean("junctions") <= 63
    assert 5.5 <= mean("loops") <= 7.5
    assert 34 <= mean("shortest") <= 41
    assert min(row["shortest"] for row in stats) >= 28  # never shorter than the corner to corner


def test_encode_and_decode_round_trip(mazes: list[list[int]]) -> None:
    for maze in mazes[:20]:
        rows = mazegen.encode(maze)
        assert len(rows) == 15
        assert all(len(row) == 15 and set(row) <= set("0123456789abcdef") for row in rows)
        assert mazegen.decode(rows) == maze


def test_decode_refuses_a_wall_open_one_way() -> None:
    rows = ["0" * 15 for _ in range(15)]
    rows[0] = "2" + "0" * 14  # a1 open east, b1 closed west
    with pytest.raises(ValueError, match="open one way"):
        mazegen.decode(rows)
    with pytest.raises(ValueError):
        mazegen.decode(rows[:14])
    with pytest.raises(ValueError, match="open one way"):
        mazegen.decode(["1" + "0" * 14] + rows[1:])  # a1 open north, off the grid


def test_cell_names() -> None:
    assert mazegen.cell_name(START) == "a1"
    assert mazegen.cell_name(EXIT) == "o15"
    assert mazegen.cell_name(16) == "b2"
    for cell in range(CELLS):
        assert mazegen.parse_cell(mazegen.cell_name(cell)) == cell
    # Other scripts' digits too: int() reads "\uff11" (a full-width 1) and "\u0663" as 1 and 3.
    for bad in ("", "a", "a0", "a16", "p1", "a01", "A1", "a1x", "a\uff11", "b\u0663", "a\u00b2"):
        with pytest.raises(ValueError):
            mazegen.parse_cell(bad)


def test_the_docstring_is_enough_to_rebuild_a_maze() -> None:
    # Rebuild the maze from the module docstring's words alone, with edges as pairs of cells.
    for seed in SEEDS[:5]:
        stream = RandomStream(seed)

        def neighbours(cell: int) -> list[int]:
            found = [mazegen.neighbour(cell, d) for d in "NESW"]
            return [n for n in found if n is not None]

        in_tree = {EXIT}
        opened: set[frozenset[int]] = set()
        for begin in range(CELLS):
            if begin in in_tree:
                continue
            written: dict[int, int] = {}
            cell = begin
            while cell not in in_tree:
                options = neighbours(cell)
                written[cell] = options[stream.below(len(options))]
                cell = written[cell]
            cell = begin
            while cell not in in_tree:
                opened.add(frozenset((cell, written[cell])))
                in_tree.add(cell)
                cell = written[cell]
        assert len(opened) == CELLS - 1
        for cell in range(CELLS):
            open_to = [n for n in neighbours(cell) if frozenset((cell, n)) in opened]
            if len(open_to) != 1 or stream.below(10) != 0:
                continue
            closed = [n for n in neighbours(cell) if n not in open_to]
            opened.add(frozenset((cell, closed[stream.below(len(closed))])))

        maze, position = mazegen.maze_from_seed(seed)
        maze_edges = {
            frozenset((cell, other))
            for cell in range(CELLS)
            for d, other in mazegen.NEIGHBOURS[cell]
            if maze[cell] & BIT[d]
        }
        assert maze_edges == opened
        assert position == stream.position
