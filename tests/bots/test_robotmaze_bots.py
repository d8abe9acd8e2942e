"""Robot Maze Race bots: legal warehouses, legal programs, and the strong bot beating the simple."""

from __future__ import annotations

import hashlib
import json
import random
import time
from typing import Any

import pytest

from games.bots import robotmaze as bots
from games.engines import robotmaze as rm
from games.engines.base import Result

LEVELS = {"simple": bots.simple, "strong": bots.strong}


def play(game: int, players: dict[int, Any]) -> dict[str, Any]:
    """A whole game through the engine; every move a bot makes must be legal."""
    seed = hashlib.sha256(f"robotmaze-test-{game}".encode()).digest()
    state = rm.start(seed, {}, 2)
    ply = 0
    while rm.result(state) is None:
        for seat in rm.to_move(state):
            view = rm.view(state, seat)
            move = players[seat](view, seat, random.Random(f"{game}-{seat}-{ply}"))
            state, _ = rm.apply(state, seat, move)  # IllegalMove would fail the test
            ply += 1
            if rm.result(state) is not None:
                break
        assert ply < 200, "a game between bots should end"
    return state


@pytest.mark.parametrize("level", sorted(LEVELS))
def test_bots_set_up_legal_warehouses(level: str) -> None:
    state = rm.start(b"\x01" * 32, {}, 2)
    for n in range(8):
        move = LEVELS[level](rm.view(state, n % 2), n % 2, random.Random(n))
        assert set(move) == {"warehouse"}
        assert rm.warehouse_problems(move["warehouse"]) == []


def test_hard_warehouses_are_legal_and_winding() -> None:
    lengths = []
    for n in range(20):
        rows = bots.hard_warehouse(random.Random(n))
        assert rm.warehouse_problems(rows) == []
        lengths.append(rm.distances_to_exit(rows)["A1"])
    randoms = [rm.distances_to_exit(rm.random_warehouse(random.Random(n)))["A1"] for n in range(20)]
    # The shortest way through is 18 steps at best; a hard warehouse winds about twice that.
    assert min(lengths) >= 26
    assert sum(lengths) / 20 > sum(randoms) / 20 + 10


@pytest.mark.parametrize("pair", [("simple", "simple"), ("simple", "strong")])
def test_bots_only_make_legal_moves(pair: tuple[str, str]) -> None:
    for game in range(2):
        players = {game % 2: LEVELS[pair[0]], 1 - game % 2: LEVELS[pair[1]]}
        state = play(game, players)
        assert rm.result(state) is not None


def test_simple_heads_for_the_exit_around_the_crates_it_knows() -> None:
    knowledge = bots.Knowledge(
        at=bots._index("A1"), damage=0, clear={0}, crates={bots._index("B1")}, turns=1
    )
    for n in range(10):
        program = bots.optimistic_program(knowledge, 4, random.Random(n))
        assert program[0] == "R" and set(program) <= {"R", "D"} and len(program) == 4


def test_strong_wins_clearly_against_simple() -> None:
    wins = 0
    games = 6
    for game in range(games):
        strong_seat = game % 2
        state = play(100 + game, {strong_seat: bots.strong, 1 - strong_seat: bots.simple})
        result = rm.result(state)
        assert result is not None
        wins += result.places[strong_seat] == 1
    assert wins >= 5


OPEN = ["." * 10] * 5 + ["XXXX......"] * 5  # all crates at the bottom left
BUMPY = ["." * 10, "X........."] + ["." * 10] * 3 + ["XXXX......"] * 4 + ["XXX......."]


def seed_with_first(first: int) -> bytes:
    return next(
        seed
        for seed in (bytes([n]) * 32 for n in range(50))
        if rm.start(seed, {}, 2)["first_seat"] == first
    )


def after(moves: list[tuple[str, int]], warehouses: tuple[list[str], list[str]]) -> Any:
    """Seat 0 moves first; the programs are played in turn from there."""
    state = rm.start(seed_with_first(0), {}, 2)
    for seat in (0, 1):
        state, _ = rm.apply(state, seat, {"warehouse": warehouses[seat]})
    for program, runs in moves:
        state, _ = rm.apply(state, rm.to_move(state)[0], {"program": program, "runs": runs})
    return state


def test_strong_decides_from_its_view_quickly_and_reproducibly() -> None:
    rng = random.Random(7)
    state = after([("RD", 2), ("DR", 2)], (rm.random_warehouse(rng), rm.random_warehouse(rng)))
    view = json.loads(json.dumps(rm.view(state, 0)))
    began = time.process_time()
    move = bots.strong(view, 0, random.Random(1))
    assert time.process_time() - began < 3.0  # about a quarter of a second, usually
    assert move == bots.strong(view, 0, random.Random(1))
    rm.apply(state, 0, move)


def test_strong_takes_the_exit_when_it_can() -> None:
    walk = [("RRRR", 2), ("U", 1), ("RDDD", 2), ("U", 1), ("DD", 1), ("U", 1)]
    state = after(walk, (OPEN, OPEN))
    assert rm.view(state, 0)["robots"][0]["at"] == "I10"
    move = bots.strong(rm.view(state, 0), 0, random.Random(3))
    state, _ = rm.apply(state, 0, move)
    assert rm.result(state) == Result(reason="exit", places=[1, 2])


def test_strong_never_bumps_a_known_crate_for_nothing() -> None:
    # Seat 0's robot stands on A1 and has found the crate on B1: down, up and left are
    # nothing but damage from there.
    state = after([("D", 1), ("U", 1)], (OPEN, BUMPY))
    assert rm.view(state, 0)["robots"][0]["crates"] == ["B1"]
    for n in range(3):
        move = bots.strong(rm.view(state, 0), 0, random.Random(n))
        assert move["program"][0] == "R"
