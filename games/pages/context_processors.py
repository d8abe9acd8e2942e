"""What every page's header and title show (settings TEMPLATES context_processors)."""

from __future__ import annotations

import functools
from collections.abc import Callable

from django.http import HttpRequest

from games.archive import selectors


def your_move(request: HttpRequest) -> dict[str, Callable[[], int]]:
    """`your_move_count`: the games where it is the signed-in player's move. Read at most once a
    request, and only if a template shows it (a callable: the template calls it)."""

    @functools.cache
    def count() -> int:
        return selectors.your_move_count(request.user)  # type: ignore[arg-type]

    return {"your_move_count": count}
