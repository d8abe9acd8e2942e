"""Pure Python game engines. Nothing here imports Django."""

from __future__ import annotations

from games.engines import cornmaze as cornmaze
from games.engines import mazerace as mazerace
from games.engines import robotmaze as robotmaze
from games.engines.base import JSON, Engine, IllegalMove, Result

ENGINES: dict[str, Engine] = {
    module.ENGINE.SLUG: module.ENGINE for module in (cornmaze, robotmaze, mazerace)
}


def get_engine(slug: str) -> Engine:
    return ENGINES[slug]


def move_number(slug: str, state: JSON, seat: int, ply: int) -> int:
    """What makes a seat's next move unique, and so what its move form carries: the game's ply
    in a game by turns, the seat's own count of moves in a race (the engine's `move_number`).
    A move that names another number is refused: posted twice, it counts once."""
    return ENGINES[slug].move_number(state, seat, ply)


__all__ = [
    "ENGINES",
    "Engine",
    "IllegalMove",
    "Result",
    "get_engine",
    "move_number",
]
