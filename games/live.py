"""Live race versions on Redis pub/sub, for the Server-Sent Events server (mazesite/events.py).

After a change to a live race commits, the write path says "game G is at version V" on one
channel (`channel()`: its name carries the site's queue name, so two sites or two test runs on
one Redis never hear each other). The message holds nothing a viewer may not see: the game's
id, its version, whether it is over, and when it was sent. What each viewer is shown is
decided by the events server (a spectator's board, the same for everyone) or by the viewer's
own request for its page (a runner's board, with its own fog).

A message that cannot be sent is logged, never raised: the pages still poll.
"""

from __future__ import annotations

import json
import logging
import threading
import time

import redis
from django.conf import settings
from django.db import transaction

from games.models import Game

logger = logging.getLogger(__name__)

_local = threading.local()


def channel() -> str:
    return f"{settings.CELERY_TASK_DEFAULT_QUEUE}:race-versions"


def message(game_id: int, version: int, *, over: bool) -> bytes:
    return json.dumps({"g": game_id, "v": version, "over": over, "t": time.time()}).encode()


def _client() -> redis.Redis:
    client: redis.Redis | None = getattr(_local, "client", None)
    if client is None:
        client = redis.Redis.from_url(
            settings.REDIS_URL, socket_timeout=1, socket_connect_timeout=1
        )
        _local.client = client
    return client


def publish(game_id: int, version: int, *, over: bool) -> None:
    try:
        _client().publish(channel(), message(game_id, version, over=over))
    except Exception:  # noqa: BLE001 - the viewers poll without it
        logger.warning("could not publish version %s of race %s", version, game_id, exc_info=True)


def publish_on_commit(game: Game) -> None:
    """Once the current transaction commits: the version the game has then (so several changes
    in one transaction are said once, at their last version)."""

    def said() -> None:
        if getattr(game, "_live_said", None) == game.version:
            return
        game._live_said = game.version  # type: ignore[attr-defined]
        publish(game.pk, game.version, over=game.is_over)

    transaction.on_commit(said)
