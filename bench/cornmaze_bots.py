"""Corn maze bots against each other, played through the engine.

    python -m bench.cornmaze_bots --games 200

Prints the strong bot's win rate against the simple one in 2-seat 8x8 games (the strong bot
takes seat 0 in even games and seat 1 in odd ones), the mean number of turns, and the mean and
largest time of one strong move in 4-seat 8x8 games (one strong seat, three simple ones).
Seeds come from a fixed list (SHA-256 of "cornmaze-bench-<n>") unless --random is given.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import secrets
import statistics
import time

from games.bots import get_bot
from games.engines import cornmaze

TURN_LIMIT = 1000


def seed_for(index: int, fresh: bool) -> bytes:
    if fresh:
        return secrets.token_bytes(32)
    return hashlib.sha256(f"cornmaze-bench-{index}".encode()).digest()


def play(
    seed: bytes, levels: list[str], size: int, timings: dict[str, list[float]]
) -> tuple[int | None, int]:
    """Play one game; returns (winning seat or None at the turn limit, turns played)."""
    state = cornmaze.start(seed, {"size": size}, len(levels))
    rng = random.Random(seed)
    bots = [get_bot("cornmaze", level) for level in levels]
    while state["to_move"] is not None and state["turn"] < TURN_LIMIT:
        seat = state["to_move"]
        view = cornmaze.view(state, seat)
        began = time.perf_counter()
        move = bots[seat](view, seat, rng)
        timings.setdefault(levels[seat], []).append(time.perf_counter() - began)
        state, _ = cornmaze.apply(state, seat, move)
    return state["winner"], state["turn"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=200, help="2-seat games strong vs simple")
    parser.add_argument("--timing-games", type=int, default=50, help="4-seat games for timing")
    parser.add_argument("--size", type=int, default=8)
    parser.add_argument("--random", action="store_true", help="fresh seeds from secrets")
    args = parser.parse_args()

    wins = unfinished = 0
    turns: list[int] = []
    timings: dict[str, list[float]] = {}
    began = time.perf_counter()
    for index in range(args.games):
        strong_seat = index % 2
        levels = ["simple", "simple"]
        levels[strong_seat] = "strong"
        winner, played = play(seed_for(index, args.random), levels, args.size, timings)
        wins += winner == strong_seat
        unfinished += winner is None
        turns.append(played)
    elapsed = time.perf_counter() - began
    print(f"2 seats, {args.size}x{args.size}, {args.games} games ({elapsed:.0f} s):")
    print(f"  strong wins {wins}/{args.games} = {wins / max(args.games, 1):.1%}")
    print(f"  mean turns {statistics.fmean(turns):.1f}, unfinished {unfinished}")

    timings = {}
    four_wins = 0
    for index in range(args.timing_games):
        strong_seat = index % 4
        levels = ["simple"] * 4
        levels[strong_seat] = "strong"
        seed = seed_for(100_000 + index, args.random)
        winner, _ = play(seed, levels, args.size, timings)
        four_wins += winner == strong_seat
    times = timings.get("strong", [0.0])
    print(f"4 seats, {args.size}x{args.size}, {args.timing_games} games, one strong seat:")
    print(f"  strong wins {four_wins}/{args.timing_games}")
    print(
        f"  strong move: mean {statistics.fmean(times) * 1000:.0f} ms, "
        f"max {max(times) * 1000:.0f} ms over {len(times)} moves"
    )


if __name__ == "__main__":
    main()
