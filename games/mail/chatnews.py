"""Chat messages a player has not read: what their next mail tells them (a "your turn" mail,
the daily digest, or the chat mail, at most once a day). A message is "read" once the player's
game page has shown it (a mark in the cache, like watching.py's: a lost mark costs a mail too
many, never one too few), and "told" once a mail listed it (ChatMailed, in the database): it
is in one mail at most. Only the players' channel is ever mailed, and only to players."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.core.cache import cache

from games.models import ChatMailed, ChatMessage, ChatMute

logger = logging.getLogger(__name__)

# The longest clock is 30 days: a mark outlives a turn of it.
SEEN_SECONDS = 40 * 86400

# A mail lists this many messages of a game at most, the latest ones.
MAIL_MESSAGES = 20


@dataclass(frozen=True)
class Unread:
    id: int
    author: str
    text: str
    at: datetime


def _seen_key(game_id: int, user_id: int) -> str:
    prefix: str = getattr(settings, "CHAT_SEEN_CACHE_PREFIX", "chatseen:")
    return f"{prefix}{game_id}:{user_id}"


def seen_mark(*, game_id: int, user_id: int, message_id: int) -> None:
    """The player's page has shown the game's chat up to this message."""
    try:
        key = _seen_key(game_id, user_id)
        if (cache.get(key) or 0) < message_id:
            cache.set(key, message_id, SEEN_SECONDS)
    except Exception:  # noqa: BLE001 - a cache outage must not break the page
        logger.warning("could not mark the chat of game %s as read", game_id, exc_info=True)


def _seen(game_ids: Iterable[int], user_id: int) -> dict[int, int]:
    ids = list(game_ids)
    try:
        marks = cache.get_many([_seen_key(g, user_id) for g in ids])
    except Exception:  # noqa: BLE001 - without the cache, better a mail too many than none
        logger.warning("could not read which chats user %s has read", user_id, exc_info=True)
        return {}
    return {g: int(marks.get(_seen_key(g, user_id)) or 0) for g in ids}


def unread(*, user_id: int, game_ids: Iterable[int]) -> dict[int, list[Unread]]:
    """Per game, the players' messages from others (not muted) that this player has neither
    seen on the page nor been mailed, oldest first, MAIL_MESSAGES at most."""
    ids = list(game_ids)
    if not ids:
        return {}
    seen = _seen(ids, user_id)
    mailed = dict(
        ChatMailed.objects.filter(user_id=user_id, game_id__in=ids).values_list(
            "game_id", "message_id"
        )
    )
    muted = ChatMute.objects.filter(user_id=user_id).values("muted_id")
    found: dict[int, list[Unread]] = {}
    for game_id in ids:
        after = max(seen.get(game_id, 0), mailed.get(game_id, 0))
        rows = (
            ChatMessage.objects.filter(
                game_id=game_id, channel=ChatMessage.Channel.PLAYERS, id__gt=after
            )
            .exclude(author_id=user_id)
            .exclude(author_id__in=muted)
            .select_related("author")
            .order_by("-id")[:MAIL_MESSAGES]
        )
        messages = [
            Unread(id=m.pk, author=m.author.get_username(), text=m.text, at=m.created_at)
            for m in reversed(rows)
        ]
        if messages:
            found[game_id] = messages
    return found


def mailed_mark(*, user_id: int, told: dict[int, list[Unread]]) -> None:
    """A mail that listed these messages went out: no other mail lists them again."""
    for game_id, messages in told.items():
        last = max(m.id for m in messages)
        row, created = ChatMailed.objects.get_or_create(
            user_id=user_id, game_id=game_id, defaults={"message_id": last}
        )
        if not created and row.message_id < last:
            ChatMailed.objects.filter(pk=row.pk).update(message_id=last)


def games_with_news(*, user_id: int, since: datetime, limit: int = 20) -> list[int]:
    """The games of this player where others wrote in the players' channel since `since`,
    the latest first: where a chat mail looks for unread messages."""
    return list(
        ChatMessage.objects.filter(
            channel=ChatMessage.Channel.PLAYERS,
            created_at__gte=since,
            game__seats__user_id=user_id,
        )
        .exclude(author_id=user_id)
        .values_list("game_id", flat=True)
        .order_by("-game_id")
        .distinct()[:limit]
    )
