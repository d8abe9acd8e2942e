"""What every page's header and title show (settings TEMPLATES context_processors)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest

from games.archive import selectors


def your_move(request: HttpRequest) -> dict[str, Callable[[], int]]:
    """`your_move_count`: the games where it is the signed-in player's move. Read at most once a
    request, and only if a template shows it (a callable: the template calls it)."""

    def count() -> int:
        cached: Any = getattr(request, "_your_move_count", None)
        if cached is None:
            cached = selectors.your_move_count(request.user)  # type: ignore[arg-type]
            request._your_move_count = cached  # type: ignore[attr-defined]
        return int(cached)

    return {"your_move_count": count}
