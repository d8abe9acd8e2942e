"""Pure Python game engines. Nothing here imports Django."""

from __future__ import annotations

from types import ModuleType
from typing import cast

from games.engines import cornmaze as cornmaze
from .base import Engine, IllegalMove, Result

ENGINES: dict[str, Engine] = {
    module.SLUG: cast(Engine, module) for module in [cast(ModuleType, cornmaze)]
}


def get_engine(slug: str) -> Engine:
    return ENGINES[slug]


__all__ = ["ENGINES", "Engine", "IllegalMove", "Result", "get_engine"]
