"""Who has a game open: a player watching the game page gets no "your turn" mail
meanwhile (outbox.py holds it until they leave)."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache

from games import clock
from games.models import EmailPreferences, Outbox

logger = logging.getLogger(__name__)
User = get_user_model()
Kind = Outbox.Kind
TurnMails = EmailPreferences.TurnMails


# The game page polls every 3 seconds; a player counts as watching for a little longer.
WATCHING_SECONDS = 10


# --- who has a game open ---------------------------------------------------------------------


def _watching_key(game_id: int, user_id: int) -> str:
    prefix: str = getattr(settings, "WATCHING_CACHE_PREFIX", "watching:")
    return f"{prefix}{game_id}:{user_id}"


def watching_entry(*, game_id: int, user_id: int) -> tuple[str, float, int]:
    """The cache entry (key, value, seconds) that says the player has the game open (its page
    polled just now): their "your turn" mail waits until they leave. The mark keeps the time of
    the poll, and the clock decides when it is over; the cache only forgets it a while later.
    Written by `watching_mark`, or with another cache call (pages.game_cache.kept)."""
    return _watching_key(game_id, user_id), clock.now().timestamp(), 6 * WATCHING_SECONDS


def watching_mark(*, game_id: int, user_id: int) -> None:
    key, value, seconds = watching_entry(game_id=game_id, user_id=user_id)
    try:
        cache.set(key, value, seconds)
    except Exception:  # noqa: BLE001 - a cache outage must not break the page
        logger.warning("could not mark game %s as watched", game_id, exc_info=True)


def watching_until(*, game_id: int, user_id: int) -> datetime | None:
    """Until when the player counts as having the game open (WATCHING_SECONDS after its page
    last polled), or None if they do not."""
    try:
        polled = cache.get(_watching_key(game_id, user_id))
    except Exception:  # noqa: BLE001 - without the cache, better a mail too many than none
        logger.warning("could not read whether game %s is watched", game_id, exc_info=True)
        return None
    if not isinstance(polled, int | float):
        return None
    until = datetime.fromtimestamp(polled, UTC) + timedelta(seconds=WATCHING_SECONDS)
    return until if until > clock.now() else None
