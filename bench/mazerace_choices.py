"""What the strong Maze Race bot's choices cost, measured: is there a better choice to make?

    python -m bench.mazerace_choices --seeds 600 [--fit]

On the mazes of seeds SHA-256("train-<i>") (kept apart from the bench's and held-out seeds),
the strong bot runs to the exit. At each of its real choices (openings into the exit's fog
reached by different first steps), every opening is tried in the true maze: walk to it, then
play on by the strong bot. That measured cost is the truth a rule for choosing could learn
from. Prints the mean cost of the opening chosen by the strong bot, by flood fill's rule (the
fewest steps with unseen walls open), and by an oracle that knows the maze; then how often an
opening joins the exit through the fog against the chance the bot's tree model gives it (the
mazes' loops). With --fit (needs numpy), a log-linear ranking of the openings is fitted to the
measured costs on 70% of the seeds and scored on the rest against the strong bot's choices.
About 15 minutes for 600 seeds on two cores.
"""

from __future__ import annotations

import argparse
import importlib
import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing import Pool
from typing import Any

from bench.mazerace_bots import bench_seed
from games.bots import mazerace as bots
from games.engines import mazegen
from games.engines.mazegen import BIT, CELL_OF, EXIT, NAMES, STEP
from games.engines.mazerace import sight

STEP_LIMIT = 3000
CHANCE_BINS = (0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.01)


@dataclass
class Option:
    steps: int  # to the opening, through seen cells
    chance: float  # the bot's: the exit's way passes through this opening
    size: float  # the bot's: fog cells expected behind it
    fog_steps: int  # from the opening to the exit through the fog, unseen walls open
    fog: int  # cells in the exit's fog
    joins: bool  # in the true maze, the opening reaches the exit through the fog
    cost: int  # measured: steps to the exit when the runner walks to it, then plays on
    chosen: bool  # the strong bot's choice (its least cost for the chance)


class Runner:
    """A runner in a true maze, seeing what the engine shows it."""

    def __init__(self, maze: list[int]) -> None:
        self.maze = maze
        self.at = mazegen.START
        self.path = [NAMES[self.at]]
        self.seen = set(sight(maze, self.at))

    def copy(self) -> Runner:
        other = Runner.__new__(Runner)
        other.maze, other.at, other.path, other.seen = (
            self.maze,
            self.at,
            list(self.path),
            set(self.seen),
        )
        return other

    def view(self) -> dict:
        return {
            "at": NAMES[self.at],
            "path": self.path,
            "cells": {NAMES[cell]: self.maze[cell] for cell in self.seen},
            "open": mazegen.open_directions(self.maze[self.at]),
        }

    def step_to(self, cell: int) -> None:
        self.at = cell
        self.path.append(NAMES[cell])
        self.seen |= sight(self.maze, cell)

    def strong_step(self) -> None:
        move = bots.strong_bot(self.view(), 0, random.Random(0))  # it draws nothing
        self.step_to(self.at + STEP[move["dir"]])

    def play_out(self) -> int:
        steps = 0
        while self.at != EXIT:
            self.strong_step()
            steps += 1
            if steps > STEP_LIMIT:
                raise RuntimeError("the strong bot did not get out")
        return steps


def _joins(maze: Sequence[int], known: Sequence[int], opening: int) -> bool:
    _, reached = mazegen.search(
        opening,
        lambda cell, direction, other: (
            bool(maze[cell] & BIT[direction]) and known[other] == bots.UNSEEN
        ),
    )
    return opening == EXIT or reached[EXIT] >= 0


def _fog_steps(region: set[int]) -> list[int]:
    """Steps from each cell of the exit's fog to the exit through it, unseen walls open."""
    return mazegen.search(EXIT, lambda _cell, _direction, other: other in region)[0]


def choices(index: int) -> list[list[Option]]:
    """Every real choice of the strong bot on one maze, with each opening measured."""
    maze, _ = mazegen.maze_from_seed(bench_seed(index, "train"))
    runner = Runner(maze)
    found_choices: list[list[Option]] = []
    while runner.at != EXIT:
        view = runner.view()
        known = bots.knowledge(view)
        here = CELL_OF[view["at"]]
        found, before = bots._seen_routes(known, here)
        if known[EXIT] == bots.UNSEEN:
            region = bots.exit_fog(known)
            entries = bots.openings(known, found, region)
            firsts = {bots._first_step(before, here, last, o) for o, (_, last) in entries.items()}
            if len(firsts) > 1 and EXIT not in entries:
                odds = bots._branch_odds(frozenset(region), frozenset(entries))
                target = min(entries, key=lambda o: bots._search_cost(entries[o][0], *odds[o]))
                fog_steps = _fog_steps(region)
                options = []
                for opening, (steps, last) in entries.items():
                    trial = runner.copy()
                    for cell in [*bots._route_back(before, here, last)[1:], opening]:
                        trial.step_to(cell)
                    chance, size = odds[opening]
                    options.append(
                        Option(
                            steps=steps,
                            chance=chance,
                            size=size,
                            fog_steps=fog_steps[opening],
                            fog=len(region),
                            joins=_joins(maze, known, opening),
                            cost=steps + trial.play_out(),
                            chosen=opening == target,
                        )
                    )
                found_choices.append(options)
        runner.strong_step()
    return found_choices


def _chosen_cost(options: Sequence[Option]) -> int:
    (chosen,) = (o for o in options if o.chosen)
    return chosen.cost


def _flood_cost(options: Sequence[Option]) -> int:
    return min(options, key=lambda o: (o.steps + o.fog_steps, o.steps)).cost


def features(option: Option) -> list[float]:
    chance = max(option.chance, 1e-9)
    walk = 2 * option.steps + option.size
    return [
        math.log(walk) - math.log(chance),  # the strong bot's ratio, as a logarithm
        math.log(walk),
        math.log(chance),
        math.log(option.steps),
        math.log(option.size),
        math.log(option.fog_steps + 1),
        option.steps / 10,
        option.fog_steps / 10,
        option.chance,
        option.size / 50,
        math.log(option.fog),
    ]


def fit(train: list[list[Option]], test: list[list[Option]]) -> None:
    """A log-linear ranking fitted to the measured costs by gradient descent on the expected
    cost of a soft choice (Adam), started from the strong bot's own ratio."""
    np: Any = importlib.import_module("numpy")  # optional: not one of the site's dependencies

    def pack(data: list[list[Option]]) -> tuple[Any, Any, Any]:
        width = max(len(options) for options in data)
        values = np.zeros((len(data), width, len(features(data[0][0]))))
        costs = np.zeros((len(data), width))
        real = np.zeros((len(data), width), dtype=bool)
        for i, options in enumerate(data):
            for j, option in enumerate(options):
                values[i, j], costs[i, j], real[i, j] = features(option), option.cost, True
        return values, costs, real

    def hard(weights: Any, packed: tuple[Any, Any, Any]) -> float:
        values, costs, real = packed
        scores = np.where(real, values @ weights, np.inf)
        return float(costs[np.arange(len(costs)), scores.argmin(1)].mean())

    train_set, test_set = pack(train), pack(test)
    values, costs, real = train_set
    weights = np.zeros(values.shape[2])
    weights[0] = 1.0
    first, second = np.zeros_like(weights), np.zeros_like(weights)
    t = 0
    for scale in (3.0, 6.0, 12.0):
        for _ in range(1500):
            t += 1
            logits = np.where(real, -scale * (values @ weights), -np.inf)
            logits -= logits.max(1, keepdims=True)
            odds = np.exp(logits)
            odds /= odds.sum(1, keepdims=True)
            expected = (odds * costs).sum(1, keepdims=True)
            pull = odds * (costs - expected)
            grad = -scale * (pull[..., None] * values).sum((0, 1)) / len(costs)
            first = 0.9 * first + 0.1 * grad
            second = 0.999 * second + 0.001 * grad * grad
            step = (first / (1 - 0.9**t)) / (np.sqrt(second / (1 - 0.999**t)) + 1e-8)
            weights -= 0.01 * step
    start = np.zeros_like(weights)
    start[0] = 1.0
    print(
        f"fitted ranking: {hard(weights, train_set):.3f} on its own 70% "
        f"(strong's ratio {hard(start, train_set):.3f}), "
        f"{hard(weights, test_set):.3f} on the other 30% "
        f"(strong's ratio {hard(start, test_set):.3f})"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=600)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--fit", action="store_true", help="fit a ranking (needs numpy)")
    args = parser.parse_args(argv)
    with Pool(args.processes) as pool:
        per_seed = pool.map(choices, range(args.seeds), chunksize=4)
    every = [options for seed_choices in per_seed for options in seed_choices]
    print(
        f"{len(every):,} choices on {args.seeds} mazes, "
        f"{statistics.fmean(map(len, every)):.1f} openings each"
    )
    print("mean steps to the exit from a choice, by the opening chosen:")
    print(f"  strong {statistics.fmean(map(_chosen_cost, every)):8.2f}")
    print(f"  flood  {statistics.fmean(map(_flood_cost, every)):8.2f}")
    print(
        f"  oracle {statistics.fmean(min(o.cost for o in c) for c in every):8.2f}  (knows the maze)"
    )
    print("openings by the bot's chance, against how often they join the exit through the fog:")
    flat = [option for options in every for option in options]
    for low, high in zip(CHANCE_BINS, CHANCE_BINS[1:], strict=False):
        bin_ = [o for o in flat if low <= o.chance < high]
        if bin_:
            print(
                f"  {low:.2f}-{high:.2f} {len(bin_):7,} openings: chance "
                f"{statistics.fmean(o.chance for o in bin_):.3f}, joins "
                f"{statistics.fmean(o.joins for o in bin_):.3f}"
            )
    if args.fit:
        cut = int(args.seeds * 0.7)
        fit(
            [options for seed_choices in per_seed[:cut] for options in seed_choices],
            [options for seed_choices in per_seed[cut:] for options in seed_choices],
        )


if __name__ == "__main__":
    main()
