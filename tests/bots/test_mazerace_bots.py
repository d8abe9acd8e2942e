from __future__ import annotations

import hashlib
import json
import random
from typing import Any

import pytest

from games.bots import BOTS
from games.bots import mazerace as bots
from games.engines import mazegen, mazerace
from games.engines.mazegen import BIT, CELL_OF, EXIT

SEEDS = [hashlib.sha256(f"bot-test-{i}".encode()).digest() for i in range(12)]
LEVELS = {"wall": bots.wall_bot, "flood": bots.flood_bot, "strong": bots.strong_bot}


def test_the_levels_are_registered() -> None:
    assert {level: BOTS["mazerace"][level] for level in LEVELS} == LEVELS


def run_alone(bot: Any, seed: bytes, limit: int) -> int:
    """Steps to the exit in a slow race (decision times are the bench's business)."""
    state = mazerace.start(seed, {"mode": "slow"}, 2)
    rng = random.Random(seed)
    while state["runners"][0]["out"] is None:
        # Through JSON, as the site stores it: a bot sees plain data and nothing else.
        view = json.loads(json.dumps(mazerace.view(state, 0)))
        move = bot(view, 0, rng)
        assert set(move) == {"dir"} and move["dir"] in view["open"]
        state, _ = mazerace.apply(state, 0, move)
        assert state["runners"][0]["steps"] <= limit, "the bot is lost"
    return int(state["runners"][0]["steps"])


@pytest.mark.parametrize("level", ["wall", "flood", "strong"])
def test_every_bot_gets_out(level: str) -> None:
    for seed in SEEDS:
        maze = mazegen.maze_from_seed(seed)[0]
        passages = sum(mazegen.open_count(bits) for bits in maze) // 2
        shortest = mazegen.statistics(maze)["shortest"]
        # A wall follower walks each passage at most twice; the others do far better.
        limit = 2 * passages if level == "wall" else 6 * shortest
        steps = run_alone(LEVELS[level], seed, limit)
        assert steps >= shortest


def test_the_wall_follower_keeps_its_right_hand_on_the_wall() -> None:
    state = mazerace.start(SEEDS[0], {"mode": "slow"}, 2)
    rng = random.Random(0)
    right = {"N": "E", "E": "S", "S": "W", "W": "N"}
    for _ in range(40):
        view = mazerace.view(state, 0)
        move = bots.wall_bot(view, 0, rng)
        path = view["path"]
        heading = (
            mazegen.direction_between(CELL_OF[path[-2]], CELL_OF[path[-1]])
            if len(path) > 1
            else "S"
        )
        # It turns right when it can, else goes straight, else left, else back.
        preference = [right[heading], heading, right[right[right[heading]]], right[right[heading]]]
        assert move["dir"] == next(d for d in preference if d in view["open"])
        state, _ = mazerace.apply(state, 0, move)


def test_the_hint_is_the_strong_move_with_its_route() -> None:
    state = mazerace.start(SEEDS[1], {"mode": "slow"}, 2)
    rng = random.Random(0)
    for _ in range(30):
        view = mazerace.view(state, 0)
        hint = bots.hint(view)
        assert hint["dir"] == bots.strong_bot(view, 0, rng)["dir"]
        route = [CELL_OF[name] for name in hint["route"]]
        assert route[0] == CELL_OF[view["at"]] and route[-1] == EXIT
        for a, b in zip(route, route[1:], strict=False):
            direction = mazegen.direction_between(a, b)
            # Every wall on the route is open, or unseen on both sides.
            for cell, side in ((a, direction), (b, mazegen.OPPOSITE[direction])):
                bits = view["cells"].get(mazegen.NAMES[cell])
                assert bits is None or bits & BIT[side]
        state, _ = mazerace.apply(state, 0, {"dir": hint["dir"]})


def test_bots_decide_from_the_view_alone() -> None:
    # Two different mazes, the same view: the same move. The view at the start of a race shows
    # only a few cells, so find two seeds whose first views agree.
    first_views: dict[str, tuple[bytes, dict[str, Any]]] = {}
    for i in range(400):
        seed = hashlib.sha256(f"same-view-{i}".encode()).digest()
        view = mazerace.view(mazerace.start(seed, {"mode": "slow"}, 2), 0)
        key = json.dumps(view["cells"], sort_keys=True)
        if key in first_views:
            other_seed, other_view = first_views[key]
            assert mazegen.maze_from_seed(seed)[0] != mazegen.maze_from_seed(other_seed)[0]
            for bot in LEVELS.values():
                assert bot(view, 0, random.Random(1)) == bot(other_view, 0, random.Random(1))
            return
        first_views[key] = (seed, view)
    pytest.fail("no two seeds with the same first view")
