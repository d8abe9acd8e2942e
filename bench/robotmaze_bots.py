"""Robot Maze Race bots against each other, through the engine only.

    python -m bench.robotmaze_bots --games 200

Each game is seeded from a fixed list, and the strong bot takes seat 0 in even games and seat 1
in odd ones; the first mover is drawn from the seed, as on the site. Prints the strong bot's win
rate against the other bot, the mean number of turns, and the strong bot's decision times (on
the clock, and in processor time, which does not count other work sharing the machine).
"""

from __future__ import annotations

import argparse
import hashlib
import random
import statistics
import time
from collections import Counter
from dataclasses import dataclass, field

from games.bots import BotFn
from games.bots import robotmaze as bots
from games.engines import robotmaze as engine

LEVELS: dict[str, BotFn] = {"simple": bots.simple, "strong": bots.strong}


def seed_for(game: int) -> bytes:
    return hashlib.sha256(f"robotmaze-bench-{game}".encode()).digest()


@dataclass
class Tally:
    wins: int = 0
    turns: list[int] = field(default_factory=list)
    decisions: list[float] = field(default_factory=list)  # seconds on the clock
    cpu: list[float] = field(default_factory=list)  # seconds of processor time
    reasons: Counter[str] = field(default_factory=Counter)
    first_mover_wins: int = 0
    strong_damage: list[int] = field(default_factory=list)


def play(game: int, strong: BotFn, other: BotFn, tally: Tally) -> None:
    seed = seed_for(game)
    strong_seat = game % 2
    players = {strong_seat: strong, 1 - strong_seat: other}
    state = engine.start(seed, {}, 2)
    turns = 0
    while engine.result(state) is None:
        for seat in engine.to_move(state):
            rng = random.Random(f"{seed.hex()}-{seat}-{turns}")
            view = engine.view(state, seat)
            began, began_cpu = time.perf_counter(), time.process_time()
            move = players[seat](view, seat, rng)
            if seat == strong_seat and "program" in move:
                tally.decisions.append(time.perf_counter() - began)
                tally.cpu.append(time.process_time() - began_cpu)
            state, _ = engine.apply(state, seat, move)
            if "program" in move:
                turns += 1
            if engine.result(state) is not None:
                break
    result = engine.result(state)
    assert result is not None
    tally.turns.append(turns)
    tally.reasons[result.reason] += 1
    tally.strong_damage.append(state["robots"][strong_seat]["damage"])
    if result.places[strong_seat] == 1:
        tally.wins += 1
    if result.places[engine.first_seat(state)] == 1:
        tally.first_mover_wins += 1


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--opponent", choices=sorted(LEVELS), default="simple")
    args = parser.parse_args(argv)
    tally = Tally()
    began = time.perf_counter()
    for game in range(args.games):
        play(game, bots.strong, LEVELS[args.opponent], tally)
    elapsed = time.perf_counter() - began
    n = args.games
    print(f"strong vs {args.opponent}: {n} games in {elapsed:.0f} s")
    print(f"strong win rate: {tally.wins / n:.1%} ({tally.wins}/{n})")
    print(f"first mover won: {tally.first_mover_wins / n:.1%}")
    print(f"mean turns (both seats' programs): {statistics.mean(tally.turns):.1f}")
    print(f"strong's final damage: mean {statistics.mean(tally.strong_damage):.1f}")
    print(f"endings: {dict(tally.reasons)}")
    for name, times in (("clock", tally.decisions), ("processor", tally.cpu)):
        print(
            f"strong decision ({name}): mean {statistics.mean(times) * 1000:.0f} ms, "
            f"max {max(times) * 1000:.0f} ms"
        )


if __name__ == "__main__":
    main()
