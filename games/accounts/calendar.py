"""Your deadlines in your calendar (issue 14.6): a private iCalendar feed (RFC 5545) of the games
where you are to move, each a VEVENT at the deadline with a reminder alarm.

The link is `/accounts/calendar/<user id>.<secret>.ics`. The secret is an HMAC of the user and
the profile's `calendar_key` under SECRET_KEY: the database holds no usable link, the account
page can always show the current one, and a new key ("Make a new link") makes every older link
a 404. Guests have one too: they play the same slow games, and the link shows deadlines only;
it signs nobody in, unlike their private link.

The feed costs three queries whatever the number of games: the profile, the seats with their
games, and those games' seats with their players."""

from __future__ import annotations

import re
import secrets
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import OuterRef, Prefetch, Subquery
from django.urls import reverse
from django.utils.crypto import constant_time_compare, salted_hmac
from icalendar import Alarm, Calendar, Event, vDuration

from games import clock
from games.mail.notices import reminder_time
from games.models import Game, Move, Profile, Seat
from games.ui import wording

SALT = "mazesite.accounts.calendar"
# How often calendar programs should fetch the feed again (REFRESH-INTERVAL, X-PUBLISHED-TTL):
# the shortest clock is 3 days, so an hour is early enough and cheap.
REFRESH = timedelta(hours=1)
PRODID = "-//mazesite//Your moves//EN"
CALENDAR_NAME = "mazesite: your moves"
_TOKEN = re.compile(r"(?P<user>[1-9][0-9]{0,11})\.(?P<mac>[0-9a-f]{40})")


# Reads


def calendar_token(user: User, profile: Profile) -> str | None:
    """The secret part of the user's calendar link, or None if they have none (or stopped it)."""
    if not profile.calendar_key:
        return None
    return f"{user.pk}.{_mac(user.pk, profile.calendar_key)}"


def calendar_path(user: User, profile: Profile) -> str | None:
    token = calendar_token(user, profile)
    return reverse("calendar_feed", args=[token]) if token else None


def calendar_user(token: str) -> User | None:
    """The user whose current calendar link holds `token`, or None (a mistyped, old or stopped
    link): one query."""
    match = _TOKEN.fullmatch(token) if token.isascii() else None
    if match is None:
        return None
    profile = (
        Profile.objects.select_related("user")
        .filter(user_id=int(match["user"]), user__is_active=True)
        .exclude(calendar_key="")
        .first()
    )
    if profile is None:
        return None
    if not constant_time_compare(_mac(profile.user_id, profile.calendar_key), match["mac"]):
        return None
    return profile.user


def calendar_feed(*, user: User, site_url: str) -> bytes:
    """The feed: every game where `user` has a clock running, the nearest deadline first."""
    cal = Calendar()
    cal.add("prodid", PRODID)
    cal.add("version", "2.0")
    cal.add("calscale", "GREGORIAN")
    cal.add("method", "PUBLISH")
    cal.add("name", CALENDAR_NAME)
    cal.add("x-wr-calname", CALENDAR_NAME)
    cal.add("description", "The games where it is your move on mazesite, at their deadlines.")
    cal.add("refresh-interval", vDuration(REFRESH), parameters={"VALUE": "DURATION"})
    cal.add("x-published-ttl", vDuration(REFRESH))
    host = urlsplit(site_url).hostname or "mazesite"
    for seat in _seats_to_move(user):
        cal.add_component(_event(seat, site_url=site_url, host=host))
    return bytes(cal.to_ical())


def _seats_to_move(user: User) -> list[Seat]:
    """The user's seats with a deadline running (the index seat_user_finished), each with its
    game (read without its state), the game's last move's time, and its seats' players."""
    last_move = Move.objects.filter(game=OuterRef("game_id")).order_by("-ply").values("at")[:1]
    return list(
        Seat.objects.filter(
            user=user,
            finished_at__isnull=True,
            deadline__isnull=False,
            game__status=Game.Status.ACTIVE,
        )
        .select_related("game", "user__profile")
        .defer("game__state", "game__seed")
        .annotate(last_move_at=Subquery(last_move))
        .prefetch_related(
            Prefetch("game__seats", queryset=Seat.objects.select_related("user").order_by("index"))
        )
        .order_by("deadline", "game_id")
    )


def event_summary(seat: Seat) -> str:
    """`Your move: Corn maze #12 vs alice`; a slow race is one deadline to get out."""
    game = seat.game
    others = [s.name for s in game.seats.all() if s.index != seat.index]
    what = "Get out" if wording.steps_apart(game.kind) else "Your move"
    against = f" vs {', '.join(others)}" if others else ""
    return f"{what}: {game.get_kind_display()} #{game.pk}{against}"


def _event(seat: Seat, *, site_url: str, host: str) -> Event:
    game = seat.game
    deadline = seat.deadline
    assert deadline is not None, "only seats with a deadline are read"
    url = site_url.rstrip("/") + game.get_absolute_url()
    summary = event_summary(seat)
    seats = len(game.seats.all())
    rule = wording.out_of_time(game.kind, seats)
    stamp: datetime = getattr(seat, "last_move_at", None) or game.started_at or clock.now()
    event = Event()
    # One event per turn: the same game, seat and ply keep their UID while the deadline moves.
    event.add("uid", f"game-{game.pk}-seat-{seat.index}-ply-{game.ply}@{host}")
    event.add("dtstamp", stamp)
    event.add("last-modified", stamp)
    event.add("dtstart", deadline)  # no DTEND: an instant (RFC 5545, 3.6.1)
    event.add("summary", summary)
    event.add("description", f"{summary}. Play it before this time: {url}\n{rule}")
    event.add("url", url)
    event.add("transp", "TRANSPARENT")  # a deadline does not make you busy
    duration = game.clock_duration
    if duration is not None:
        # The alarm rings when the reminder mail goes: a fifth of the turn's time before the
        # deadline.
        zone = None
        if game.clock_options.get("weekends_off"):
            assert seat.user is not None, "a seat of the feed's owner"
            zone = clock.person_zone(seat.user.profile.time_zone)
        before = deadline - reminder_time(
            deadline=deadline, time_left=game.turn_time(seat), zone=zone
        )
        alarm = Alarm()
        alarm.add("action", "DISPLAY")
        alarm.add("description", f"{summary}: {clock.format_left(before)} left")
        alarm.add("trigger", -before)
        event.add_component(alarm)
    return event


# Writes


def calendar_link_new(*, user: User) -> Profile:
    """A new calendar link for the user; the one before stops working."""
    return _key_set(user, secrets.token_hex(16))


def calendar_link_stop(*, user: User) -> Profile:
    """No calendar link any more: the current one stops working."""
    return _key_set(user, "")


def _key_set(user: User, key: str) -> Profile:
    with transaction.atomic():
        profile, _ = Profile.objects.select_for_update().get_or_create(user=user)
        profile.calendar_key = key
        profile.save(update_fields=["calendar_key"])
    return profile


def _mac(user_id: int, key: str) -> str:
    return salted_hmac(SALT, f"{user_id}:{key}", algorithm="sha256").hexdigest()[:40]
