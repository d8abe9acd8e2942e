"""A bounded wait for a game's lock (games/play/core.py, game_locked): a move that finds the
game locked by another transaction for longer than GAME_LOCK_TIMEOUT_MS is told the game is
busy (409, the page or the htmx partial with the sentence), changes nothing, and goes through
once the lock is free. The lock is really held, by a second connection to the database."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.db import connection
from django.urls import reverse

from games.models import Game, Move
from games.play import core
from tests.conftest import a_legal_move, seat_user, to_move

BUSY = "The game is busy: another move is being played. Try again in a moment."
HTMX = {"HTTP_HX_REQUEST": "true"}

pytestmark = pytest.mark.django_db(transaction=True)


@contextmanager
def lock_held_elsewhere(game_id: int) -> Iterator[None]:
    """The game's row locked FOR UPDATE by another connection, in an open transaction."""
    other = connection.get_new_connection(connection.get_connection_params())
    try:
        other.autocommit = False
        with other.cursor() as cursor:
            cursor.execute("SELECT id FROM games_game WHERE id = %s FOR UPDATE", [game_id])
            assert cursor.fetchone() == (game_id,)
        yield
    finally:
        other.rollback()
        other.close()


def letters(shifts: list[int]) -> list[str]:
    return [chr(ord("a") + c) for c in shifts]


@pytest.fixture
def vendor_postgresql() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("lock_timeout is PostgreSQL's")


@pytest.mark.parametrize("headers", [{}, HTMX], ids=["page", "htmx"])
def test_a_move_on_a_game_locked_too_long_is_told_busy_and_changes_nothing(
    client, make_cornmaze, settings, vendor_postgresql, headers
) -> None:
    settings.GAME_LOCK_TIMEOUT_MS = 50
    game = make_cornmaze()
    seat = to_move(game)
    client.force_login(seat_user(game, seat))
    first, second = letters(a_legal_move(game))
    form = {"ply": "0", "first": first, "second": second}
    with lock_held_elsewhere(game.pk):
        response = client.post(reverse("game_move", args=[game.pk]), form, **headers)
    assert response.status_code == 409
    assert BUSY in response.content.decode()
    if headers:
        assert "<html" not in response.content.decode()  # the partial, which htmx swaps in
    game.refresh_from_db()
    assert game.ply == 0 and not Move.objects.filter(game=game).exists()
    # Free again: the same post is played.
    response = client.post(reverse("game_move", args=[game.pk]), form, **headers)
    assert response.status_code in {200, 302}
    assert Move.objects.filter(game=game).count() == 1


def test_every_write_through_game_locked_is_bounded(make_cornmaze, settings, vendor_postgresql):
    settings.GAME_LOCK_TIMEOUT_MS = 50
    game = make_cornmaze()
    seat = to_move(game)
    with lock_held_elsewhere(game.pk), pytest.raises(core.GameBusy):
        core.game_resign(game_id=game.pk, user=seat_user(game, seat))
    game.refresh_from_db()
    assert game.status == Game.Status.ACTIVE
