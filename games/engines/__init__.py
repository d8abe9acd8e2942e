"""Pure Python game engines. Nothing here imports Django."""

from __future__ import annotations

from typing import cast

from games.engines import cornmaze as cornmaze
from games.engines import mazerace as mazerace
from games.engines import robotmaze as robotmaze

from .base import Engine, IllegalMove, Result

ENGINES: dict[str, Engine] = {
    module.SLUG: cast(Engine, module) for module in (cornmaze, robotmaze, mazerace)
}


def get_engine(slug: str) -> Engine:
    return ENGINES[slug]


def is_race(slug: str) -> bool:
    """Whether the game is a race: no turns, each seat moves on its own (`SEATS_MOVE_APART`)."""
    return bool(getattr(ENGINES[slug], "SEATS_MOVE_APART", False))


__all__ = ["ENGINES", "Engine", "IllegalMove", "Result", "get_engine", "is_race"]
