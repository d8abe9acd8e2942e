from __future__ import annotations

import copy
import hashlib
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from games.bots import cornmaze as bots
from games.bots import get_bot, levels
from games.engines import cornmaze

LEVELS = ["simple", "strong"]


def test_both_levels_are_registered() -> None:
    assert set(LEVELS) <= set(levels("cornmaze"))


@st.composite
def positions(draw: Any) -> tuple[dict[str, Any], int]:
    """A game in progress: random arrows, markers anywhere left of the last column (some in
    the bottom rows, to block shifts), now and then a dropped seat."""
    size = draw(st.integers(6, 12), label="size")
    seats = draw(st.integers(2, 6), label="seats")
    state = cornmaze.start(draw(st.binary(min_size=8, max_size=8)), {"size": size}, seats)
    arrows = draw(
        st.lists(st.text("<>^v", min_size=size, max_size=size), min_size=size, max_size=size)
    )
    rows = st.one_of(st.integers(0, size - 1), st.integers(size - 2, size - 1))
    markers: list[list[int] | None] = [
        [draw(rows), draw(st.integers(0, size - 2))] for _ in range(seats)
    ]
    dropped = sorted(draw(st.sets(st.integers(0, seats - 1), max_size=seats - 2)))
    for seat in dropped:
        markers[seat] = None
    seat = draw(st.sampled_from([s for s in range(seats) if s not in dropped]), label="seat")
    state.update(arrows=arrows, markers=markers, dropped=dropped, to_move=seat)
    return state, seat


@pytest.mark.parametrize("level", LEVELS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(position=positions(), bot_seed=st.integers(0, 1000))
def test_bots_make_legal_moves(level: str, position: Any, bot_seed: int) -> None:
    state, seat = position
    view = cornmaze.view(state, seat)
    before = copy.deepcopy(view)
    move = get_bot("cornmaze", level)(view, seat, random.Random(bot_seed))
    assert view == before
    assert move["shifts"] in cornmaze.legal_moves(view)
    cornmaze.apply(state, seat, move)


def test_bots_answer_the_same_to_the_same_seed() -> None:
    state = cornmaze.start(b"same", {"size": 8}, 3)
    seat = state["to_move"]
    view = cornmaze.view(state, seat)
    for level in LEVELS:
        bot = get_bot("cornmaze", level)
        assert bot(view, seat, random.Random(7)) == bot(view, seat, random.Random(7))


def one_way_out() -> tuple[dict[str, Any], int]:
    """Seat 0 at a4 on a board of ">" but for column d, all "<" but for d3 ">": shifting d
    once (and any column but a or d) brings d3 down into row 4 and the marker runs out."""
    size = 8
    arrows = [">>><>>>>" for _ in range(size)]
    arrows[2] = ">>>>>>>>"
    state = cornmaze.start(b"way-out", {"size": size}, 2)
    state.update(arrows=arrows, markers=[[3, 0], [6, 0]], to_move=0)
    return state, 0


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("bot_seed", range(5))
def test_bots_take_a_sure_exit(level: str, bot_seed: int) -> None:
    state, seat = one_way_out()
    view = cornmaze.view(state, seat)
    winning = [
        shifts
        for shifts in cornmaze.legal_moves(view)
        if cornmaze.simulate(view, seat, shifts) == [(1.0, [3, 7])]
    ]
    assert winning and len(winning) < len(cornmaze.legal_moves(view)) / 2
    move = get_bot("cornmaze", level)(view, seat, random.Random(bot_seed))
    assert move["shifts"] in winning
    new, _ = cornmaze.apply(state, seat, move)
    assert new["winner"] == seat


def test_strong_takes_the_best_chance_when_nothing_is_sure() -> None:
    # Seat 0 at b1 on 6x6: the step right lands on c1, the top row. Shifting c puts the drawn
    # arrow there: a ">" (one in four) runs along the ">" row to the exit. Seat 1 stands at e6
    # ready to exit next turn, so the strong bot must take its chance now.
    arrows = ["<<<>>>", "<<<<<<", "<<<<<<", "<<<<<<", "<<<<<<", "<<<<>>"]
    state = cornmaze.start(b"chance", {"size": 6}, 2)
    state.update(arrows=arrows, markers=[[0, 1], [5, 4]], to_move=0)
    view = cornmaze.view(state, 0)
    chances = {
        tuple(shifts): sum(p for p, end in cornmaze.simulate(view, 0, shifts) if end[1] == 5)
        for shifts in cornmaze.legal_moves(view)
    }
    assert max(chances.values()) < 1.0
    move = get_bot("cornmaze", "strong")(view, 0, random.Random(1))
    assert chances[tuple(move["shifts"])] == max(chances.values())


@settings(max_examples=60, deadline=None)
@given(position=positions(), new=st.integers(4, 9))
def test_best_chance_skips_only_pairs_that_cannot_change_the_walk(position: Any, new: int) -> None:
    state, seat = position
    size = state["size"]
    board = cornmaze.flat_board(state["arrows"])
    # A few unknown arrows already on the board, as after earlier shifts.
    board[0] = 10
    board[size * size - 1] = 11
    markers = state["markers"]
    fast = bots._best_chance(board, markers, size, seat, new)
    slow = 0.0
    for shifts in cornmaze.legal_moves({"size": size, "markers": markers, "to_move": seat}):
        after = list(board)
        row, col = markers[seat]
        for index, shifted in enumerate(shifts):
            cornmaze.shift_flat(after, size, shifted, new + index)
            row += shifted == col
        slow = max(slow, cornmaze.exit_chance(after, size, row * size + col)[0])
    assert fast == pytest.approx(slow)


def play(seed: bytes, levels_by_seat: list[str], size: int = 8) -> int:
    state = cornmaze.start(seed, {"size": size}, len(levels_by_seat))
    rng = random.Random(seed)
    while state["to_move"] is not None:
        seat = state["to_move"]
        move = get_bot("cornmaze", levels_by_seat[seat])(cornmaze.view(state, seat), seat, rng)
        state, _ = cornmaze.apply(state, seat, move)
    winner: int = state["winner"]
    return winner


def test_strong_beats_simple() -> None:
    games = 60
    wins = 0
    for index in range(games):
        seed = hashlib.sha256(f"bots-test-{index}".encode()).digest()
        strong_seat = index % 2
        seats = ["simple", "simple"]
        seats[strong_seat] = "strong"
        wins += play(seed, seats) == strong_seat
    # The bench measures about 77% over hundreds of games (simple against itself wins half);
    # 60 games vary by about 5%, and these fixed seeds give 42.
    assert wins >= 36
