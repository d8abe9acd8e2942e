"""Who wants which mail, at which verified address, and unsubscribing from a mail's link
without signing in."""

from __future__ import annotations

import logging
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.urls import reverse

from games import clock
from games.models import EmailPreferences, Outbox, Profile

logger = logging.getLogger(__name__)
User = get_user_model()
Kind = Outbox.Kind
TurnMails = EmailPreferences.TurnMails


UNSUBSCRIBE_SALT = "mazesite.notifications.unsubscribe"


UNSUBSCRIBE_WHAT = {
    Kind.YOUR_TURN: "“your turn” mails",
    Kind.REMINDER: "reminders before a deadline",
    Kind.GAME_OVER: "“game over” mails",
    Kind.DIGEST: "the daily digest",
    Kind.VACATION: "reminders before a deadline and automatic vacation notices",
    Kind.CHALLENGE: "mails about challenges and rematch offers",
    Kind.DECLINED: "mails about challenges and rematch offers",
    Kind.WITHDRAWN: "mails about challenges and rematch offers",
    Kind.EXPIRED: "mails about challenges and rematch offers",
    Kind.CHAT: "mails with chat messages",
    Kind.DROPPED: "“game over” mails, and mails that your clock put you out of a game",
}


class NotificationError(Exception):
    """A request the site refuses. `str(exc)` is a sentence for the person."""


# --- preferences and addresses ---------------------------------------------------------------


def preferences_for(user: Any) -> EmailPreferences:
    """The user's preferences; an unsaved row with the defaults if they never changed them.
    No query if they were fetched with `select_related("email_preferences")`."""
    try:
        prefs: EmailPreferences = user.email_preferences
    except EmailPreferences.DoesNotExist:
        return EmailPreferences(user_id=user.pk)
    return prefs


def preferences_update(
    *,
    user: Any,
    turn_mails: str,
    reminder: bool,
    game_over: bool,
    challenge: bool = True,
    chat: bool | None = None,
) -> EmailPreferences:
    if turn_mails not in TurnMails.values:
        raise NotificationError("Choose how to hear that it is your turn.")
    defaults: dict[str, object] = {
        "turn_mails": turn_mails,
        "reminder": reminder,
        "game_over": game_over,
        "challenge": challenge,
    }
    if chat is not None:  # chat mails (games/mail/chatnews.py); None leaves them as they are
        defaults["chat"] = chat
    prefs, _ = EmailPreferences.objects.update_or_create(user_id=user.pk, defaults=defaults)
    return prefs


# Each kind of mail is wanted while one preference holds one value; unsubscribing sets another.
PREFERENCE: dict[str, tuple[str, object, object]] = {
    Kind.YOUR_TURN: ("turn_mails", TurnMails.IMMEDIATE, TurnMails.OFF),
    Kind.DIGEST: ("turn_mails", TurnMails.DIGEST, TurnMails.OFF),
    Kind.REMINDER: ("reminder", True, False),
    # An automatic vacation is about the same clock as a reminder, and goes with it.
    Kind.VACATION: ("reminder", True, False),
    Kind.GAME_OVER: ("game_over", True, False),
    # Out of a game that goes on (a clock that ran out): the end of the game for this player.
    Kind.DROPPED: ("game_over", True, False),
    Kind.CHALLENGE: ("challenge", True, False),
    # A challenge or open game called off before it starts: the same preference as the
    # challenge itself.
    Kind.DECLINED: ("challenge", True, False),
    Kind.WITHDRAWN: ("challenge", True, False),
    Kind.EXPIRED: ("challenge", True, False),
    Kind.CHAT: ("chat", True, False),
}


def wants(prefs: EmailPreferences, kind: str) -> bool:
    field, wanted, _ = PREFERENCE[kind]
    return bool(getattr(prefs, field) == wanted)


def verified_address(user: Any) -> str:
    """The address mails may go to, or "" for a user without a verified one."""
    profile = getattr(user, "profile", None)
    if not user.is_active or not user.email or profile is None or not profile.email_verified:
        return ""
    return str(user.email)


# --- unsubscribing, without signing in ------------------------------------------------------


def unsubscribe_token(*, user_id: int, kind: str) -> str:
    # Never expires: a link in an old mail must still work.
    return signing.dumps([user_id, kind], salt=UNSUBSCRIBE_SALT)


def unsubscribe_url(*, user_id: int, kind: str) -> str:
    token = unsubscribe_token(user_id=user_id, kind=kind)
    return settings.SITE_URL + reverse("unsubscribe", args=[token])


def unsubscribe_read(*, token: str) -> tuple[Any, str]:
    """The user and the kind of mail an unsubscribe link is for."""
    try:
        data = signing.loads(token, salt=UNSUBSCRIBE_SALT)
    except signing.BadSignature:
        raise NotificationError(
            "This unsubscribe link is not valid: copy the whole link from the mail."
        ) from None
    if (
        not isinstance(data, list)
        or len(data) != 2
        or not isinstance(data[0], int)
        or data[1] not in Kind.values
    ):
        raise NotificationError("This unsubscribe link is not valid.")
    user = User.objects.filter(pk=data[0]).first()
    if user is None:
        raise NotificationError("This unsubscribe link is for an account that no longer exists.")
    return user, str(data[1])


def unsubscribed(*, user: Any, kind: str) -> bool:
    """Whether the user has switched off the kind of mail an unsubscribe link is for."""
    field, _, off = PREFERENCE[kind]
    return bool(getattr(preferences_for(user), field) == off)


def unsubscribe(*, token: str) -> tuple[Any, str]:
    """Switch off the kind of mail the link is for. Doing it twice is fine."""
    user, kind = unsubscribe_read(token=token)
    field, _, off = PREFERENCE[kind]
    EmailPreferences.objects.update_or_create(user_id=user.pk, defaults={field: off})
    return user, kind


def user_zone(user_id: int) -> ZoneInfo:
    """A person's own time zone, from their profile (one query; clock.person_zone): the zone of
    their mails' times, of their vacation's return date, of their clock with weekends off."""
    name = Profile.objects.filter(user_id=user_id).values_list("time_zone", flat=True).first()
    return clock.person_zone(name)
