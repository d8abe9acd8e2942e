"""Your deadlines in your calendar (issue 14.6): a private iCalendar feed (RFC 5545) of the games
where you are to move, each a VEVENT at the deadline with a reminder alarm.

The link is `/accounts/calendar/<user id>.<secret>.ics`. The secret is an HMAC of the user and
the profile's `calendar_key` under SECRET_KEY: the database holds no usable link, the account
page can always show the current one, and a new key ("Make a new link") makes every older link
a 404. Guests have one too: they play the same slow games, and the link shows deadlines only;
it signs nobody in, unlike their private link.

The feed costs three queries whatever the number of games: the profile, the seats with their
games, and those games' seats with their players.

A calendar program keeps an event by its UID (one a turn, `_uid`) and takes a new copy of it
when the copy's SEQUENCE is higher. The SEQUENCE is the game's version, which every change a
viewer can see bumps (a move, a gift of time, a vacation, the admin moving a deadline), so it
never goes down and goes up whenever the deadline can have moved; LAST-MODIFIED is the latest
stored time of what touched the seat's turn (`_changed_at`). Both come from the database alone:
polled again with nothing changed, the feed is the same bytes.

The calendar always holds a VTIMEZONE for UTC, in which every time of the feed is written:
RFC 5545 wants at least one component, and a player with no game to move has no event."""

from __future__ import annotations

import re
import secrets
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Count, OuterRef, Prefetch, Subquery
from django.db.models.functions import Coalesce
from django.urls import reverse
from django.utils.crypto import constant_time_compare, salted_hmac
from icalendar import Alarm, Calendar, Event, Timezone, TimezoneStandard, vDuration

from games import clock
from games.mail.notices import reminder_time
from games.models import ClockEvent, Game, Move, Profile, Seat
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
    cal.add_component(_utc())
    host = urlsplit(site_url).hostname or "mazesite"
    for seat in _seats_to_move(user):
        cal.add_component(_event(seat, site_url=site_url, host=host))
    return bytes(cal.to_ical())


def _seats_to_move(user: User) -> list[Seat]:
    """The user's seats with a deadline running (the index seat_user_finished), each with its
    game (read without its state), the game's last move's time, the seat's last vacation
    event's time, how many moves the seat has made, and its seats' players."""
    last_move = Move.objects.filter(game=OuterRef("game_id")).order_by("-ply").values("at")[:1]
    last_vacation = (
        ClockEvent.objects.filter(game=OuterRef("game_id"), seat=OuterRef("index"))
        .order_by("-at")
        .values("at")[:1]
    )
    own_moves = (
        Move.objects.filter(game=OuterRef("game_id"), seat=OuterRef("index"))
        .order_by()
        .values("seat")
        .annotate(count=Count("pk"))
        .values("count")
    )
    return list(
        Seat.objects.filter(
            user=user,
            finished_at__isnull=True,
            deadline__isnull=False,
            game__status=Game.Status.ACTIVE,
        )
        .select_related("game", "user__profile")
        .defer("game__state", "game__seed")
        .annotate(
            last_move_at=Subquery(last_move),
            last_vacation_at=Subquery(last_vacation),
            own_moves=Coalesce(Subquery(own_moves), 0),
        )
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


def _uid(seat: Seat, host: str) -> str:
    """One event per turn, whose UID stays while its deadline moves and while the others play:
    the seat's next move (`own_moves` + 1: the others' moves in a Robot Maze Race's set-up,
    both to move, leave it as it is). A slow race is one deadline to get out, whatever the
    steps of anyone."""
    game = seat.game
    if wording.steps_apart(game.kind):
        return f"game-{game.pk}-seat-{seat.index}@{host}"
    turn = getattr(seat, "own_moves", 0) + 1
    return f"game-{game.pk}-seat-{seat.index}-move-{turn}@{host}"


def _event(seat: Seat, *, site_url: str, host: str) -> Event:
    game = seat.game
    deadline = seat.deadline
    assert deadline is not None, "only seats with a deadline are read"
    url = site_url.rstrip("/") + game.get_absolute_url()
    summary = event_summary(seat)
    seats = len(game.seats.all())
    rule = wording.out_of_time_rule(game.kind, seats)
    stamp = _changed_at(seat)
    event = Event()
    event.add("uid", _uid(seat, host))
    # The object served is the one made at its last change (the feed is made again the same
    # from the database at every fetch): that is when it was created, not the fetch.
    event.add("dtstamp", stamp)
    event.add("last-modified", stamp)
    event.add("sequence", game.version)
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


def _changed_at(seat: Seat) -> datetime:
    """When the seat's event last changed: its turn's start (the game's last move, or its
    start), a gift of time to the seat, or its player's vacation starting or ending, the
    latest of these."""
    game = seat.game
    times = [getattr(seat, "last_move_at", None) or game.started_at or clock.now()]
    vacation: datetime | None = getattr(seat, "last_vacation_at", None)
    if vacation is not None:
        times.append(vacation)
    times += [
        datetime.fromisoformat(e["at"]) for e in game.clock_events if e.get("seat") == seat.index
    ]
    return max(times)


def _utc() -> Timezone:
    """UTC as a VTIMEZONE: the calendar's one component when it has no event."""
    zone = Timezone()
    zone.add("tzid", "UTC")
    standard = TimezoneStandard()
    # A time zone's onset is a local time, never in UTC (RFC 5545, 3.6.5).
    standard.add("dtstart", datetime(1970, 1, 1))  # noqa: DTZ001
    standard.add("tzoffsetfrom", timedelta(0))
    standard.add("tzoffsetto", timedelta(0))
    standard.add("tzname", "UTC")
    zone.add_component(standard)
    return zone


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
