"""Pure Python bots. A bot is a function (view, seat, rng) -> move, where view is what the
engine's `view(state, seat)` returns for the bot's own seat: a bot never sees the full state.
`rng` is a `random.Random` the site seeds per game and ply, so a bot game can be replayed."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

JSON = dict[str, Any]
BotFn = Callable[[JSON, int, random.Random], JSON]

BOTS: dict[str, dict[str, BotFn]] = {}


def register(game: str, level: str) -> Callable[[BotFn], BotFn]:
    def decorate(fn: BotFn) -> BotFn:
        BOTS.setdefault(game, {})[level] = fn
        return fn

    return decorate


def get_bot(game: str, level: str) -> BotFn:
    _load()
    return BOTS[game][level]


def levels(game: str) -> list[str]:
    _load()
    return list(BOTS.get(game, {}))


def all_levels() -> list[str]:
    """Every bot level of any game, each once, in alphabetical order."""
    _load()
    return sorted({level for by_level in BOTS.values() for level in by_level})


def _load() -> None:
    # Each game's bots register themselves when their module is imported.
    from games.bots import cornmaze, mazerace, robotmaze  # noqa: F401
