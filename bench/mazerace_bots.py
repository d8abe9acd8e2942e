"""Maze Race bots against the same mazes: steps to the exit, and how long a decision takes.

    python -m bench.mazerace_bots                 # 10,000 mazes, about 7 minutes on 2 cores
    python -m bench.mazerace_bots --seeds 1000    # the first 1,000 of them

Every bot runs alone through the engine (a slow race, so only steps count), on the mazes of
seeds SHA-256("mazerace-bench-<i>"), i = 0, 1, ...; the shortest path is the limit no runner in
the fog can beat on average. Also prints the generator's statistics over the same mazes.

The last line is how many fewer steps "strong" takes than "flood", with its standard error,
paired by maze. Mazes differ so much that on 1,000 of them that error is about 0.9 points: on
the ten blocks of 1,000 consecutive bench seeds the gain ranges from 2.0% to 5.3%. A target of a
few percent is judged on the 10,000 mazes run by default (an error of about 0.3 points).
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import os
import random
import statistics
import time
from collections.abc import Callable, Sequence
from multiprocessing.pool import Pool

from games.bots import mazerace as bots
from games.engines import mazegen, mazerace

JSON = dict[str, object]
BotFn = Callable[[dict, int, random.Random], dict]
BOTS: dict[str, BotFn] = {"flood": bots.flood_bot, "wall": bots.wall_bot, "strong": bots.strong_bot}
STEP_LIMIT = 5000


def bench_seed(index: int, prefix: str = "mazerace-bench") -> bytes:
    return hashlib.sha256(f"{prefix}-{index}".encode()).digest()


def run(bot: BotFn, seed: bytes) -> tuple[int, float, float]:
    """Steps the bot takes to get out, its slowest decision and all its decisions' time, in
    seconds."""
    state = mazerace.start(seed, {"mode": "slow"}, 2)
    rng = random.Random(seed)
    slowest = thinking = 0.0
    while state["runners"][0]["out"] is None:
        view = mazerace.view(state, 0)
        began = time.perf_counter()
        move = bot(view, 0, rng)
        took = time.perf_counter() - began
        slowest = max(slowest, took)
        thinking += took
        state, _ = mazerace.apply(state, 0, move)
        if state["runners"][0]["steps"] > STEP_LIMIT:
            raise RuntimeError(f"the bot did not get out of seed {seed.hex()}")
    return state["runners"][0]["steps"], slowest, thinking


def _run_named(job: tuple[str, bytes]) -> tuple[int, float, float]:
    name, seed = job
    return run(BOTS[name], seed)


def _maze_statistics(seed: bytes) -> dict[str, int]:
    return mazegen.statistics(mazegen.maze_from_seed(seed)[0])


def summary(steps: Sequence[int], shortest: Sequence[int]) -> str:
    ordered = sorted(steps)
    mean = statistics.fmean(ordered)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    ratio = statistics.fmean(s / t for s, t in zip(steps, shortest, strict=True))
    return (
        f"{mean:8.1f} {statistics.median(ordered):8.1f} {p95:6d} "
        f"{mean / statistics.fmean(shortest):11.3f} {ratio:11.3f}"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10_000)
    parser.add_argument("--first", type=int, default=0, help="index of the first seed")
    parser.add_argument("--prefix", default="mazerace-bench")
    parser.add_argument("--bots", default="flood,wall,strong")
    parser.add_argument(
        "--jobs", type=int, default=os.cpu_count() or 1, help="processes running mazes at once"
    )
    args = parser.parse_args(argv)
    seeds = [bench_seed(i, args.prefix) for i in range(args.first, args.first + args.seeds)]
    with multiprocessing.Pool(args.jobs) as pool:
        report(args, seeds, pool)


def report(args: argparse.Namespace, seeds: Sequence[bytes], pool: Pool) -> None:
    chunk = max(1, len(seeds) // (8 * args.jobs))
    stats = pool.map(_maze_statistics, seeds, chunksize=chunk)
    shortest = [row["shortest"] for row in stats]

    print(
        f"{len(seeds)} mazes: "
        + ", ".join(
            f"{key.replace('_', ' ')} {statistics.fmean(row[key] for row in stats):.1f}"
            for key in ("dead_ends", "junctions", "loops", "shortest")
        )
    )
    print()
    print(
        f"{'runner':8} {'mean':>8} {'median':>8} {'p95':>6} {'mean/short':>11} "
        f"{'mean ratio':>11} {'max ms':>7} {'mean ms':>7} {'seconds':>8}"
    )
    print(f"{'shortest':8} {summary(shortest, shortest)}")
    steps_of: dict[str, list[int]] = {}
    for name in args.bots.split(","):
        began = time.perf_counter()
        results = pool.map(_run_named, [(name, seed) for seed in seeds], chunksize=chunk)
        steps = [count for count, _, _ in results]
        slowest = max(seconds for _, seconds, _ in results) * 1000
        average = sum(seconds for _, _, seconds in results) / sum(steps) * 1000
        steps_of[name] = steps
        print(
            f"{name:8} {summary(steps, shortest)} {slowest:7.1f} {average:7.2f} "
            f"{time.perf_counter() - began:8.1f}",
            flush=True,
        )
    if "flood" in steps_of and "strong" in steps_of:
        flood = statistics.fmean(steps_of["flood"])
        saved = [f - s for f, s in zip(steps_of["flood"], steps_of["strong"], strict=True)]
        gain = 100 * statistics.fmean(saved) / flood
        spread = 100 * statistics.stdev(saved) / len(saved) ** 0.5 / flood if len(saved) > 1 else 0
        print(
            f"\nstrong takes {gain:.2f}% fewer steps than flood on average, standard error "
            f"{spread:.2f} points (same mazes): between {gain - 1.96 * spread:.1f}% and "
            f"{gain + 1.96 * spread:.1f}% with 95% confidence"
        )


if __name__ == "__main__":
    main()
