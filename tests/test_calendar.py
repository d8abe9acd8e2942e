"""The calendar feed of your deadlines (issue 14.6): parsed with icalendar, as calendar programs
read it; the link revoked; nobody else's games; nothing hidden; a fixed number of queries."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext
from icalendar import Calendar

from games.accounts import calendar
from games.accounts.guests import guest_create
from games.accounts.profiles import profile_for
from games.models import Game, Profile, Seat
from games.play import core, vacations
from tests.conftest import a_legal_move, seat_user, to_move

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 10, 9, 0, tzinfo=UTC)


def link_for(user) -> str:
    profile = calendar.calendar_link_new(user=user)
    path = calendar.calendar_path(user, profile)
    assert path is not None
    return path


def feed(client, path: str, status: int = 200) -> Calendar:
    response = client.get(path)
    assert response.status_code == status, response.content[:300]
    assert response["Content-Type"] == "text/calendar; charset=utf-8"
    cal = Calendar.from_ical(response.content)
    strict(cal)
    return cal


def strict(cal: Calendar) -> None:
    """What a strict validator asks: PRODID, VERSION and at least one component in the
    calendar (RFC 5545, 3.4 and 3.6), each component with its required properties, and nothing
    the parser had to skip."""
    cal.validate()
    for component in cal.walk():
        assert not component.errors, component.errors
        for name in component.required:
            assert name in component, f"{component.name} without {name}"


def events(cal: Calendar) -> list:
    return list(cal.walk("VEVENT"))


def test_the_feed_lists_the_game_where_it_is_your_move_at_its_deadline(
    client, make_cornmaze, settings
):
    settings.SITE_URL = "http://maze.test"
    with time_machine.travel(T0, tick=False):
        game = make_cornmaze(seats=2)
    mover = seat_user(game, to_move(game))
    other = seat_user(game, 1 - to_move(game))
    cal = feed(client, link_for(mover))

    assert str(cal["VERSION"]) == "2.0"
    assert cal["REFRESH-INTERVAL"].dt == timedelta(hours=1)
    assert cal["REFRESH-INTERVAL"].params["VALUE"] == "DURATION"
    assert cal["X-PUBLISHED-TTL"].to_ical() == b"PT1H"
    (event,) = events(cal)
    seat = Seat.objects.get(game=game, user=mover)
    assert event.decoded("DTSTART") == seat.deadline == T0 + timedelta(days=3)
    assert "DTEND" not in event
    assert str(event["SUMMARY"]) == f"Your move: Corn maze #{game.pk} vs {other.get_username()}"
    assert str(event["URL"]) == f"http://maze.test/games/{game.pk}/"
    assert str(event["UID"]) == f"game-{game.pk}-seat-{seat.index}-move-1@maze.test"
    assert event.decoded("DTSTAMP") == T0
    (alarm,) = event.walk("VALARM")
    assert str(alarm["ACTION"]) == "DISPLAY"
    # A fifth of the 3 days, as the reminder mail.
    assert alarm.decoded("TRIGGER") == -timedelta(days=3) / 5

    # The player who waits has no event: it is not their move.
    assert events(feed(client, link_for(other))) == []


def test_the_uid_stays_for_the_turn_and_changes_with_the_next(client, make_cornmaze, settings):
    settings.SITE_URL = "https://maze.example"
    with time_machine.travel(T0, tick=False):
        game = make_cornmaze(seats=2)
    first = seat_user(game, to_move(game))
    second = seat_user(game, 1 - to_move(game))
    path_first, path_second = link_for(first), link_for(second)
    (before,) = events(feed(client, path_first))
    (again,) = events(feed(client, path_first))
    assert before["UID"] == again["UID"] and before["UID"].endswith("@maze.example")
    assert str(before["URL"]) == f"https://maze.example/games/{game.pk}/"

    moved_at = T0 + timedelta(hours=5)
    with time_machine.travel(moved_at, tick=False):
        core.move_submit(game_id=game.pk, user=first, number=0, move={"shifts": a_legal_move(game)})
    assert events(feed(client, path_first)) == []
    (turn,) = events(feed(client, path_second))
    assert str(turn["UID"]) != str(before["UID"]) and "-move-1@" in str(turn["UID"])
    assert turn.decoded("DTSTART") == moved_at + timedelta(days=3)
    assert turn.decoded("DTSTAMP") == moved_at


def test_a_moved_deadline_is_a_newer_copy_of_the_event_and_nothing_else_is(client, make_cornmaze):
    """A calendar program takes an event again when its SEQUENCE goes up: a gift of time, a
    vacation, its early end and the admin each move the deadline, and each raise it, with
    LAST-MODIFIED and DTSTAMP at the change where one is kept; asked again with nothing
    changed, the feed is the same bytes."""
    with time_machine.travel(T0, tick=False):
        game = make_cornmaze(seats=2)
    mover = seat_user(game, to_move(game))
    other = seat_user(game, 1 - to_move(game))
    path = link_for(mover)
    index = to_move(game)

    def event_now(at: datetime) -> tuple:
        with time_machine.travel(at, tick=False):
            (event,) = events(feed(client, path))
            assert client.get(path).content == client.get(path).content
        return (
            str(event["UID"]),
            event.decoded("DTSTART"),
            int(event["SEQUENCE"]),
            event.decoded("LAST-MODIFIED"),
            event.decoded("DTSTAMP"),
        )

    uid, deadline, sequence, modified, stamp = event_now(T0 + timedelta(minutes=1))
    assert (modified, stamp) == (T0, T0)
    assert event_now(T0 + timedelta(minutes=2)) == (uid, deadline, sequence, modified, stamp)

    steps = []
    given = T0 + timedelta(hours=1)
    with time_machine.travel(given, tick=False):
        core.time_give(game_id=game.pk, user=other, seat_index=index)
    steps.append((given, event_now(given + timedelta(minutes=1))))
    away = T0 + timedelta(hours=2)
    with time_machine.travel(away, tick=False):
        vacations.vacation_start(user=mover, until=T0 + timedelta(days=2))
    steps.append((away, event_now(away + timedelta(minutes=1))))
    back = T0 + timedelta(hours=3)
    with time_machine.travel(back, tick=False):
        vacations.vacation_end(user=mover)
    steps.append((back, event_now(back + timedelta(minutes=1))))
    for at, (same_uid, moved, higher, modified, stamp) in steps:
        assert same_uid == uid
        assert moved != deadline
        assert higher > sequence
        assert modified == stamp == at
        deadline, sequence = moved, higher

    # The admin keeps no time of the change: the SEQUENCE alone says it.
    later = deadline + timedelta(days=1)
    core.seat_deadline_move(game_id=game.pk, seat_index=index, deadline=later)
    _, moved, higher, _, _ = event_now(back + timedelta(hours=1))
    assert moved == later and higher > sequence


def test_a_feed_with_no_game_is_a_valid_calendar(client, make_user):
    """RFC 5545 wants a component in every calendar: with no event, the UTC time zone."""
    response = client.get(link_for(make_user()))
    cal = Calendar.from_ical(response.content)
    strict(cal)
    assert events(cal) == []
    (zone,) = cal.walk("VTIMEZONE")
    assert str(zone["TZID"]) == "UTC"
    (standard,) = zone.walk("STANDARD")
    assert standard.decoded("TZOFFSETTO") == standard.decoded("TZOFFSETFROM") == timedelta(0)


def test_a_new_link_makes_the_old_one_404_and_stop_ends_it(client, make_cornmaze):
    game = make_cornmaze(seats=2)
    mover = seat_user(game, to_move(game))
    old = link_for(mover)
    assert len(events(feed(client, old))) == 1
    new = link_for(mover)
    assert new != old
    assert client.get(old).status_code == 404
    assert len(events(feed(client, new))) == 1
    calendar.calendar_link_stop(user=mover)
    assert client.get(new).status_code == 404
    assert calendar.calendar_path(mover, profile_for(mover)) is None


@pytest.mark.parametrize(
    "token",
    ["", "abc", "1.", "0." + "0" * 40, "1." + "g" * 40, "１." + "0" * 40, "1." + "0" * 41],
)
def test_a_made_up_link_is_a_404(client, make_user, token):
    user = make_user()
    calendar.calendar_link_new(user=user)
    response = client.get(f"/accounts/calendar/{token}.ics")
    assert response.status_code == 404


def test_another_users_link_never_shows_your_games(client, make_cornmaze, make_user):
    game = make_cornmaze(seats=2)
    mover = seat_user(game, to_move(game))
    stranger = make_user("stranger")
    mine, theirs = link_for(mover), link_for(stranger)
    assert events(feed(client, theirs)) == []
    # A stranger's id with the mover's secret, or the mover's id with the stranger's: 404.
    mover_id, mover_mac = re.findall(r"/(\d+)\.([0-9a-f]+)\.ics", mine)[0]
    stranger_id, stranger_mac = re.findall(r"/(\d+)\.([0-9a-f]+)\.ics", theirs)[0]
    assert client.get(f"/accounts/calendar/{stranger_id}.{mover_mac}.ics").status_code == 404
    assert client.get(f"/accounts/calendar/{mover_id}.{stranger_mac}.ics").status_code == 404
    # Signed in as someone else changes nothing: the link decides, not the session.
    client.force_login(stranger)
    assert len(events(feed(client, mine))) == 1


def test_the_key_in_the_database_is_not_the_link(client, make_user):
    user = make_user()
    path = link_for(user)
    key = Profile.objects.get(user=user).calendar_key
    assert key and key not in path


def test_a_robot_maze_race_shows_nothing_hidden(client, make_user):
    ann, bob = make_user("ann"), make_user("bob")
    with core.bot_tasks_paused():
        game = core.game_create(
            kind="robotmaze",
            creator=ann,
            options={},
            clock_choice="P3D",
            seats=[core.SeatPlan(), core.SeatPlan()],
        )
        core.game_join(game_id=game.pk, user=bob)
    game.refresh_from_db()
    body = client.get(link_for(ann)).content.decode()
    assert "Robot Maze Race" in body
    state = game.state
    assert state is not None
    # Nothing of the engine's state: no seed, no warehouse, no crate.
    assert game.seed_hex not in body and game.seed_sha256 not in body
    for word in ("crate", "warehouse", "seed", "state"):
        assert word not in body.lower()


def test_a_guest_has_a_calendar_link_too(client, make_cornmaze):
    game = make_cornmaze(seats=2, bots=["simple"])
    guest = guest_create()
    assert profile_for(guest).is_guest
    assert events(feed(client, link_for(guest))) == []
    # The human of the bot game is the one to move (the bot's tasks are paused), or the bot.
    human = seat_user(game, 0)
    if to_move(game) == 0:
        (event,) = events(feed(client, link_for(human)))
        assert str(event["SUMMARY"]).endswith("vs Bot (simple)")


def test_the_feed_is_private_and_not_cached_by_others(client, make_user):
    response = client.get(link_for(make_user()))
    assert "private" in response["Cache-Control"]
    assert "public" not in response["Cache-Control"]
    assert "Set-Cookie" not in response.headers


def test_the_feed_costs_the_same_queries_for_one_game_or_many(client, make_cornmaze, make_user):
    ann = make_user("ann")
    path = link_for(ann)

    def game_for_ann() -> None:
        game = make_cornmaze(seats=3)
        mover = Seat.objects.get(game=game, index=to_move(game))
        Seat.objects.filter(pk=mover.pk).update(user=ann)

    def count() -> tuple[int, int]:
        with CaptureQueriesContext(connection) as queries:
            cal = feed(client, path)
        return len(queries), len(events(cal))

    game_for_ann()
    one, n = count()
    assert n == 1
    for _ in range(4):
        game_for_ann()
    many, n = count()
    assert n == 5
    assert many == one <= 3


def test_the_feed_is_rate_limited(client, make_user, settings):
    settings.RATE_LIMITS = {**settings.RATE_LIMITS, "calendar_feed": "2/h"}
    path = link_for(make_user())
    assert client.get(path).status_code == 200
    assert client.get(path).status_code == 200
    response = client.get(path)
    assert response.status_code == 429 and "Retry-After" in response


def test_finished_games_leave_the_feed(client, make_cornmaze):
    game = make_cornmaze(seats=2)
    mover = seat_user(game, to_move(game))
    path = link_for(mover)
    core.game_resign(game_id=game.pk, user=mover)
    assert Game.objects.get(pk=game.pk).status == Game.Status.FINISHED
    assert events(feed(client, path)) == []


# --- the account page ---------------------------------------------------------------------------


def test_the_account_page_makes_shows_and_stops_the_link(client, make_user):
    user = make_user()
    client.force_login(user)
    page = client.get("/accounts/").content.decode()
    assert 'id="calendar"' in page and "Make a calendar link" in page
    assert 'id="calendar-link"' not in page

    response = client.post("/accounts/calendar/", {"action": "new"})
    assert response.status_code == 302 and response["Location"] == "/accounts/#calendar"
    page = client.get("/accounts/").content.decode()
    first = re.findall(r'value="(http://testserver/accounts/calendar/[^"]+\.ics)"', page)[0]
    assert f'href="webcal://{first.split("://")[1]}"' in page
    assert client.get(first).status_code == 200

    client.post("/accounts/calendar/", {"action": "new"})
    page = client.get("/accounts/").content.decode()
    second = re.findall(r'value="(http://testserver/accounts/calendar/[^"]+\.ics)"', page)[0]
    assert second != first
    assert client.get(first).status_code == 404

    client.post("/accounts/calendar/", {"action": "stop"})
    assert client.get(second).status_code == 404
    assert "Make a calendar link" in client.get("/accounts/").content.decode()


@pytest.mark.parametrize("data", [{}, {"action": "delete"}, {"action": "NEW"}, {"action": "nеw"}])
def test_a_bad_calendar_post_changes_nothing(client, make_user, data):
    user = make_user()
    client.force_login(user)
    path = link_for(user)
    response = client.post("/accounts/calendar/", data)
    assert response.status_code == 400
    assert "Make a new link" in response.content.decode()
    assert client.get(path).status_code == 200


def test_the_calendar_post_needs_a_sign_in(client):
    response = client.post("/accounts/calendar/", {"action": "new"})
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_a_slow_race_is_one_deadline_to_get_out(client):
    from tests.test_mazerace_site import make_race, user_of

    with time_machine.travel(T0, tick=False):
        game = make_race(2, clock="P3D")
    ann = user_of(game, 0)
    (event,) = events(feed(client, link_for(ann)))
    other = user_of(game, 1).get_username()
    assert str(event["SUMMARY"]) == f"Get out: Maze Race #{game.pk} vs {other}"
    assert event.decoded("DTSTART") == Seat.objects.get(game=game, index=0).deadline


def test_an_event_keeps_its_uid_while_the_others_play(client, make_user, settings):
    """Both players set up a Robot Maze Race's warehouse at once: the first one's set-up
    leaves the other's event as it was. A slow race's runner has one event, whoever steps."""
    from tests.test_mazerace_site import an_open_way, make_race, step, user_of
    from tests.test_robotmaze_site import robot_game, set_up

    settings.SITE_URL = "http://maze.test"
    game = robot_game(make_user("ann"), make_user("bob"))
    (before,) = events(feed(client, link_for(user_of(game, 1))))
    set_up(game, seats=(0,))
    (after,) = events(feed(client, link_for(user_of(game, 1))))
    uid = f"game-{game.pk}-seat-1-move-1@maze.test"
    assert str(after["UID"]) == str(before["UID"]) == uid
    assert after["SEQUENCE"] > before["SEQUENCE"]

    race = make_race(2, clock="P3D")
    (first,) = events(feed(client, link_for(user_of(race, 0))))
    step(race, 1, an_open_way(race, 1))
    step(race, 0, an_open_way(race, 0))
    (later,) = events(feed(client, link_for(user_of(race, 0))))
    assert str(later["UID"]) == str(first["UID"]) == f"game-{race.pk}-seat-0@maze.test"


def test_a_live_race_has_no_deadline_in_the_calendar(client):
    from tests.test_mazerace_site import make_race, user_of

    game = make_race(2, clock="live")
    assert events(feed(client, link_for(user_of(game, 0)))) == []
