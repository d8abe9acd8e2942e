"""What every page's header and title show (settings TEMPLATES context_processors)."""

from __future__ import annotations

import functools
from collections.abc import Callable

from django.http import HttpRequest
from django.urls import reverse

from games.archive import selectors


def your_move(request: HttpRequest) -> dict[str, Callable[[], int]]:
    """`your_move_count`: the games where it is the signed-in player's move. Read at most once a
    request, and only if a template shows it (a callable: the template calls it)."""

    @functools.cache
    def count() -> int:
        return selectors.your_move_count(request.user)  # type: ignore[arg-type]

    return {"your_move_count": count}


def sign_in_next(request: HttpRequest) -> dict[str, str]:
    """`sign_in_next`: where the header's "Sign in" brings the visitor back to, the page they
    are on ("" for the lobby, where signing in lands anyway, and for the account pages). An
    invite link's page is named by the game's own address: a started game's page is kept for
    every viewer, and its header must not carry the link's token. The page of a private game
    waiting for players, never kept, gives its invite link itself (`pages.views`)."""
    match = request.resolver_match
    if match is None or request.path == "/" or request.path.startswith("/accounts/"):
        return {"sign_in_next": ""}
    if match.url_name == "game_invite":
        return {"sign_in_next": reverse("game", args=[match.kwargs["game_id"]])}
    return {"sign_in_next": request.path}
