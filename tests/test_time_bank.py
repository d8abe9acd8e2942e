"""Issue 14, parts 3-5: a time bank, weekends off in each player's own time zone, and gifts of
time. The clock arithmetic is property-tested (games/clock.py); the services with frozen time
over daylight-saving changes, in zones on both sides of UTC."""

from __future__ import annotations

import html
import json
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
import time_machine
from django.test import Client
from django.urls import reverse
from hypothesis import given, settings
from hypothesis import strategies as st
from icalendar import Calendar

from games import clock
from games.accounts import calendar
from games.archive import selectors
from games.archive.records import record_build, record_verify
from games.mail import outbox
from games.models import Game, Outbox, Profile, Reminder, Seat
from games.play import core, deadlines, sweeps, vacations
from tests.worker_fixtures import legal_move, make_game, make_player, play_one, player_at, to_move

DAY = timedelta(days=1)
HOUR = timedelta(hours=1)
# Both sides of UTC, with and without daylight saving, and zones whose change is at midnight
# (Havana, Santiago), which is where a weekend starts or ends.
ZONES = [
    "UTC",
    "Europe/London",
    "Europe/Paris",
    "America/New_York",
    "America/Los_Angeles",
    "America/Havana",
    "America/Santiago",
    "America/St_Johns",
    "Asia/Tokyo",
    "Asia/Kolkata",
    "Australia/Sydney",
    "Australia/Lord_Howe",
    "Pacific/Auckland",
    "Pacific/Kiritimati",
    "Pacific/Pago_Pago",
]

instants = st.datetimes(
    min_value=datetime(2024, 1, 1), max_value=datetime(2028, 12, 31), timezones=st.just(UTC)
)
amounts = st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=60))
zones = st.sampled_from(ZONES).map(ZoneInfo)


def in_weekend(t: datetime, zone: ZoneInfo) -> bool:
    """Whether the clock is stopped at `t`: from Saturday 00:00 to Monday 00:00, local."""
    weekend, _ = clock._weekend_from(t, zone)
    return weekend <= t


# --- the arithmetic --------------------------------------------------------------------------


@given(instants, amounts, zones)
@settings(max_examples=400, deadline=None)
def test_a_clock_with_weekends_off_runs_exactly_the_time_asked(
    start: datetime, amount: timedelta, zone: ZoneInfo
) -> None:
    end = clock.clock_add(start, amount, zone)
    assert clock.clock_between(start, end, zone) == amount
    assert clock.clock_between(end, start, zone) == -amount
    assert end >= start + amount
    # At most the weekends in between: one per started week, and an hour of daylight saving.
    weeks = amount // timedelta(days=5) + 2
    assert end - start <= amount + weeks * (2 * DAY + timedelta(hours=1))
    if amount:
        # It never ends inside a weekend: at most at its first instant (Saturday 00:00).
        weekend, _ = clock._weekend_from(end, zone)
        assert not in_weekend(end, zone) or end == weekend
        assert end.astimezone(zone).weekday() < 5 or end == weekend


@given(instants, amounts, amounts, zones)
@settings(max_examples=200, deadline=None)
def test_clock_time_adds_up(start: datetime, a: timedelta, b: timedelta, zone: ZoneInfo) -> None:
    middle = clock.clock_add(start, a, zone)
    end = clock.clock_add(middle, b, zone)
    assert clock.clock_between(start, end, zone) == a + b
    assert clock.clock_between(start, middle, zone) + clock.clock_between(
        middle, end, zone
    ) == clock.clock_between(start, end, zone)


@given(instants, st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=40)), zones)
@settings(max_examples=200, deadline=None)
def test_the_clock_never_runs_in_a_weekend(
    start: datetime, span: timedelta, zone: ZoneInfo
) -> None:
    end = start + span
    counted = clock.clock_between(start, end, zone)
    assert timedelta(0) <= counted <= end - start
    # Counted hour by hour (an hour never holds a local midnight twice in these zones), the
    # same within the hours that hold a weekend's edge.
    hours = int((end - start) / timedelta(hours=1))
    running = sum(
        not in_weekend(start + timedelta(hours=h, minutes=30), zone) for h in range(hours)
    )
    assert abs(counted - timedelta(hours=running)) <= timedelta(hours=2 * (hours // 100 + 2))


@given(instants, amounts, zones)
@settings(max_examples=400, deadline=None)
def test_a_clock_counted_back_from_its_end_has_exactly_that_time_left(
    end: datetime, amount: timedelta, zone: ZoneInfo
) -> None:
    back = clock.clock_back(end, amount, zone)
    assert clock.clock_between(back, end, zone) == amount
    assert back <= end - amount
    weeks = amount // timedelta(days=5) + 2
    assert end - back <= amount + weeks * (2 * DAY + timedelta(hours=1))
    if amount:
        # Never inside a weekend: at most at its last instant (Monday 00:00).
        weekend, monday = clock._weekend_from(back, zone)
        assert not weekend < back < monday
        # The latest such instant: a minute later, less is left (or the end is reached).
        later = min(back + timedelta(minutes=1), end)
        assert clock.clock_between(later, end, zone) < amount
    # Counting back from the end of a clock run forward lands on a clock instant of the start.
    start = clock.clock_back(clock.clock_add(end, amount, zone), amount, zone)
    assert clock.clock_between(start, end, zone) == timedelta(0)


@given(instants, st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=40)), zones)
@settings(max_examples=200, deadline=None)
def test_the_weekends_between_two_instants_are_where_the_clock_stands_still(
    start: datetime, span: timedelta, zone: ZoneInfo
) -> None:
    end = start + span
    stops = clock.weekends_between(start, end, zone)
    edges = [start, *(t for stop in stops for t in stop), end]
    assert edges == sorted(edges)
    for a, b in stops:
        assert a < b and in_weekend(a, zone) and in_weekend(a + (b - a) / 2, zone)
    for a, b in zip(edges[::2], edges[1::2], strict=True):  # the gaps: weekdays
        assert a == b or not in_weekend(a + (b - a) / 2, zone)


@given(instants, amounts)
def test_a_clock_without_weekends_off_is_plain_time(start: datetime, amount: timedelta) -> None:
    assert clock.clock_add(start, amount, None) == start + amount
    assert clock.clock_between(start, start + amount, None) == amount
    assert clock.clock_back(start, amount, None) == start - amount


bank_days = st.sampled_from([7, 14])


@given(
    bank_days,
    st.lists(st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=20)), max_size=20),
)
def test_a_bank_is_spent_only_past_the_move_time_and_refills_a_day_a_move(
    days: int, used: list[timedelta]
) -> None:
    """Moves taking `used` each, on a 3-day clock: the bank is never negative nor above its
    start, a move within its time spends nothing, and the deadline is never passed."""
    full, per_move = timedelta(days=days), timedelta(days=3)
    bank = full
    for took in used:
        allowed = per_move + bank
        if took > allowed:
            break  # the seat ran out: it times out
        after = clock.bank_after(bank=bank, left=allowed - took, full=full, increment=DAY)
        assert timedelta(0) <= after <= full
        if took <= per_move:
            assert after == min(full, bank + DAY)
        else:
            assert after == min(full, bank - (took - per_move) + DAY)
        bank = after


# --- the services ------------------------------------------------------------------------------

# A Friday noon in New York, the week US daylight saving ends (Sunday 1 November 2026).
FRIDAY_NY = datetime(2026, 10, 30, 16, 0, tzinfo=UTC)  # 12:00 EDT; 01:00 Saturday in Tokyo


def banked_game(*players, bank: int = 7, weekends: bool = False, clock_choice: str = "P3D"):
    options = {"bank_days": bank} if bank else {}
    if weekends:
        options["weekends_off"] = True
    game = core.game_create(
        kind="cornmaze",
        creator=players[0],
        options={"size": 8},
        clock_choice=clock_choice,
        seats=[core.SeatPlan() for _ in players],
        clock_options=options,
    )
    for player in players[1:]:
        core.game_join(game_id=game.pk, user=player)
    game.refresh_from_db()
    return game


def zone_of(user, name: str) -> None:
    Profile.objects.filter(user=user).update(time_zone=name)


def seat(game: Game, index: int) -> Seat:
    return Seat.objects.get(game=game, index=index)


def move(game: Game) -> int:
    game.refresh_from_db()
    index = to_move(game)
    core.move_submit(
        game_id=game.pk, user=player_at(game, index), number=game.ply, move=legal_move(game)
    )
    return index


@pytest.mark.django_db
def test_a_bank_adds_to_the_deadline_is_spent_past_the_move_time_and_refills(queued) -> None:
    start = datetime(2026, 3, 2, 9, tzinfo=UTC)
    with time_machine.travel(start, tick=False):
        game = banked_game(make_player(), make_player())
    first = to_move(game)
    # The deadline is the one truth: the turn's start, the move's 3 days and the 7-day bank.
    assert seat(game, first).deadline == start + timedelta(days=10)
    assert seat(game, first).bank == timedelta(days=7)
    (reminder,) = Reminder.objects.all()
    assert reminder.due == start + timedelta(days=10) - timedelta(days=10) / 5
    # Five days: two from the bank, and a day back for the move.
    with time_machine.travel(start + timedelta(days=5), tick=False):
        assert move(game) == first
    assert seat(game, first).bank == timedelta(days=6) and seat(game, first).deadline is None
    second = 1 - first
    assert seat(game, second).deadline == start + timedelta(days=5 + 10)
    # A quick move spends nothing: the bank stays full (capped at 7 days).
    with time_machine.travel(start + timedelta(days=6), tick=False):
        assert move(game) == second
        assert seat(game, second).bank == timedelta(days=7)
        assert seat(game, first).deadline == start + timedelta(days=6 + 3 + 6)
        page = Client()
        page.force_login(player_at(game, first))
        html = page.get(reverse("game", args=[game.pk])).content.decode()
    assert 'This move: <span class="move-left">3 days, 0:00:00</span>' in html
    assert 'bank: <span class="bank-left">6 days, 0:00:00</span>' in html
    assert "time bank of 7 days" in html
    # The sweep reads the deadline only: one second before it, nothing; at it, a timeout.
    with time_machine.travel(start + timedelta(days=15) - timedelta(seconds=1), tick=False):
        assert sweeps.deadlines_sweep() == 0
    with time_machine.travel(start + timedelta(days=15), tick=False):
        assert sweeps.deadlines_sweep() == 1
    game.refresh_from_db()
    assert game.is_over and game.result_reason


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("zone", "deadline"),
    [
        # Friday 12:00 EDT, 12 hours to Saturday; the weekend is 49 hours (the clocks go back);
        # from Monday 00:00 EST 60 hours more: Wednesday 12:00 EST.
        ("America/New_York", datetime(2026, 11, 4, 17, 0, tzinfo=UTC)),
        # Saturday 01:00 in Tokyo already: the clock starts on Monday 00:00 JST (Sunday 15:00
        # UTC), and runs 72 hours.
        ("Asia/Tokyo", datetime(2026, 11, 4, 15, 0, tzinfo=UTC)),
        # Friday 16:00 GMT, 8 hours to Saturday; from Monday 00:00 GMT 64 hours.
        ("Europe/London", datetime(2026, 11, 4, 16, 0, tzinfo=UTC)),
    ],
)
def test_weekends_off_stop_the_clock_on_the_players_own_weekend(
    zone: str, deadline: datetime, queued
) -> None:
    players = [make_player(), make_player()]
    with time_machine.travel(FRIDAY_NY - timedelta(hours=1), tick=False):
        game = banked_game(*players, bank=0, weekends=True)
        for player in players:
            zone_of(player, zone)
        first = to_move(game)  # its turn was set in UTC; the second one is in the zone
    with time_machine.travel(FRIDAY_NY, tick=False):
        move(game)
    mover = seat(game, 1 - first)
    assert mover.deadline == deadline
    assert mover.bank is None
    # A move just before the deadline is taken; the timeout falls exactly at it.
    with time_machine.travel(deadline - timedelta(seconds=1), tick=False):
        move(game)
    assert seat(game, 1 - first).deadline is None


@pytest.mark.django_db
def test_the_game_page_counts_a_clock_with_weekends_off_in_clock_time(queued) -> None:
    players = [make_player(), make_player()]
    with time_machine.travel(FRIDAY_NY - timedelta(hours=1), tick=False):
        game = banked_game(*players, bank=0, weekends=True)
        for player in players:
            zone_of(player, "Europe/London")
    with time_machine.travel(FRIDAY_NY, tick=False):
        mover = 1 - move(game)
    deadline = seat(game, mover).deadline
    assert deadline == datetime(2026, 11, 4, 16, 0, tzinfo=UTC)  # 3 clock days on
    saturday = datetime(2026, 10, 31, 0, 0, tzinfo=UTC)  # 00:00 GMT
    monday = datetime(2026, 11, 2, 0, 0, tzinfo=UTC)
    viewer = Client()
    viewer.force_login(players[0])

    def clock_shown(at: datetime) -> str:
        with time_machine.travel(at, tick=False):
            page = viewer.get(reverse("game", args=[game.pk])).content.decode()
        start = page.index(f'data-deadline="{deadline.isoformat()}"')
        return page[start : page.index("(until", start)]

    friday = clock_shown(FRIDAY_NY + timedelta(hours=4))  # 20:00 GMT: 4 hours to the weekend
    assert '<span class="left">2 days, 20:00:00</span>' in friday  # not 4 days, 20 hours
    stops = json.loads(html.unescape(friday.split('data-stops="')[1].split('"')[0]))
    assert stops == [[saturday.isoformat(), monday.isoformat()]]
    assert '<span class="stopped" hidden>(stopped for the weekend)</span>' in friday

    # In the weekend the clock stands still, and says so (the page is drawn for each look).
    for at in (saturday + timedelta(hours=12), monday - timedelta(seconds=1)):
        weekend = clock_shown(at)
        assert '<span class="left">2 days, 16:00:00</span>' in weekend
        assert '<span class="stopped">(stopped for the weekend)</span>' in weekend
    assert '<span class="left">2 days, 15:00:00</span>' in clock_shown(monday + HOUR)
    # "Your games" says the same time left as the page.
    mover_user = player_at(game, mover)
    with time_machine.travel(FRIDAY_NY + timedelta(hours=4), tick=False):
        (row,) = selectors.your_games(mover_user, 1).rows
    assert row.left_text == "2 days, 20:00:00"
    # A clock that always runs has no stops.
    plain = make_game(make_player(), make_player())
    assert "data-stops" not in viewer.get(reverse("game", args=[plain.pk])).content.decode()


@pytest.mark.django_db
def test_a_bank_with_weekends_off_is_counted_in_clock_time_over_a_dst_change(queued) -> None:
    """Sydney (UTC+11, daylight saving from 4 October 2026) and Los Angeles (UTC-7/-8): the
    bank spent is clock time, the weekend not counted."""
    players = [make_player(), make_player()]
    start = datetime(2026, 10, 2, 0, tzinfo=UTC)  # Friday 10:00 AEST, Thursday 17:00 PDT
    with time_machine.travel(start - timedelta(hours=1), tick=False):
        game = banked_game(*players, bank=7, weekends=True)
        zone_of(players[0], "Australia/Sydney")
        zone_of(players[1], "America/Los_Angeles")
    with time_machine.travel(start, tick=False):
        first = move(game)
    second = 1 - first
    zone = ZoneInfo(Profile.objects.get(user=player_at(game, second)).time_zone)
    turn = seat(game, second).deadline
    assert turn == clock.clock_add(start, timedelta(days=10), zone)
    # Four clock days later (a weekend in between), the seat moves: one bank day spent, one back.
    at = clock.clock_add(start, timedelta(days=4), zone)
    with time_machine.travel(at, tick=False):
        assert move(game) == second
    assert seat(game, second).bank == timedelta(days=7)
    at2 = clock.clock_add(at, timedelta(days=1), zone)
    with time_machine.travel(at2, tick=False):
        move(game)
    zone_first = ZoneInfo(Profile.objects.get(user=player_at(game, first)).time_zone)
    # The first seat's bank was full (it moved at once); its new deadline is 10 clock days.
    assert seat(game, second).deadline == clock.clock_add(at2, timedelta(days=10), zone)
    assert zone_first != zone


@pytest.mark.django_db
def test_the_lobby_orders_by_the_time_actually_left(queued) -> None:
    me, other = make_player(), make_player()
    start = datetime(2026, 3, 2, 9, tzinfo=UTC)
    with time_machine.travel(start, tick=False):
        plain = banked_game(other, me, bank=0)
        banked = banked_game(other, me, bank=14)
    with time_machine.travel(start + timedelta(hours=1), tick=False):
        later_plain = banked_game(other, me, bank=0)
    for game in (plain, banked, later_plain):
        if to_move(game) != 1:
            with time_machine.travel(start + timedelta(hours=2), tick=False):
                move(game)
    ids = [row.game.id for row in selectors.your_games(me, 1).rows]
    deadlines_left = [seat(Game.objects.get(pk=i), 1).deadline for i in ids]
    assert deadlines_left == sorted(deadlines_left)
    assert ids.index(banked.pk) == len(ids) - 1


@pytest.mark.django_db
def test_a_bot_is_offered_no_time_and_cannot_be_given_any(queued) -> None:
    player = make_player()
    game = make_game(player, bots=("strong",))
    if to_move(game) == 0:
        play_one(game)  # the bot's turn is queued, not played: its clock runs
    assert to_move(game) == 1 and seat(game, 1).deadline is not None
    client = Client()
    client.force_login(player)
    page = client.get(reverse("game", args=[game.pk])).content.decode()
    assert "one more day" not in page and reverse("game_give_time", args=[game.pk]) not in page
    before = seat(game, 1).deadline
    response = client.post(reverse("game_give_time", args=[game.pk]), {"seat": "1"})
    assert "A bot needs no more time" in response.content.decode()
    assert seat(game, 1).deadline == before
    game.refresh_from_db()
    assert game.clock_events == []


@pytest.mark.django_db
def test_give_time_moves_the_opponents_deadline_once_a_turn_and_shows_in_log_and_record(
    queued,
) -> None:
    players = [make_player(), make_player()]
    start = datetime(2026, 3, 2, 9, tzinfo=UTC)
    with time_machine.travel(start, tick=False):
        game = banked_game(*players, bank=0)
    mover = to_move(game)
    giver = player_at(game, 1 - mover)
    with time_machine.travel(start + DAY, tick=False):
        core.time_give(game_id=game.pk, user=giver, seat_index=mover)
        assert seat(game, mover).deadline == start + timedelta(days=4)
        (reminder,) = Reminder.objects.all()
        assert reminder.due == start + timedelta(days=4) - timedelta(days=3) / 5
        for index, message in [
            (mover, "already given time in this turn"),
            (1 - mover, "cannot give time to yourself"),
            (7, "no such seat"),
        ]:
            with pytest.raises(core.GameError, match=message):
                core.time_give(game_id=game.pk, user=giver, seat_index=index)
        with pytest.raises(core.GameError, match="clock is not running"):
            core.time_give(game_id=game.pk, user=player_at(game, mover), seat_index=1 - mover)
        with pytest.raises(core.GameError, match="Only a player"):
            core.time_give(game_id=game.pk, user=make_player(), seat_index=mover)
    assert seat(game, mover).deadline == start + timedelta(days=4)
    game.refresh_from_db()
    (event,) = game.clock_events
    assert event == {
        "at": (start + DAY).isoformat(),
        "seat": mover,
        "kind": "gift",
        "by": 1 - mover,
        "ply": 0,
        "days": 1,
    }
    # In the log, for everyone, and in the record.
    name = giver.get_username()
    html = Client().get(reverse("game", args=[game.pk])).content.decode()
    assert f"{name} gave {player_at(game, mover).get_username()} one more day." in html
    assert record_build(game, viewer_seat=None)["clock_events"] == [event]
    # A turn later the other player may give again.
    with time_machine.travel(start + 2 * DAY, tick=False):
        move(game)
        core.time_give(game_id=game.pk, user=player_at(game, mover), seat_index=1 - mover)
        assert seat(game, 1 - mover).deadline == start + 2 * DAY + timedelta(days=4)
        core.game_resign(game_id=game.pk, user=giver)
    game.refresh_from_db()
    record = json.loads(json.dumps(record_build(game, viewer_seat=None)))
    assert len(record["clock_events"]) == 2
    assert record_verify(record) == []
    # A record with gifts the rules do not allow does not check out.
    bad = json.loads(json.dumps(record))
    bad["clock_events"][1] = {**bad["clock_events"][0]}
    assert any("second gift" in p for p in record_verify(bad))
    bad["clock_events"] = [{**record["clock_events"][0], "by": record["clock_events"][0]["seat"]}]
    assert any("from another seat" in p for p in record_verify(bad))
    bad["clock_events"] = "gifts"
    assert record_verify(bad) == ["The field 'clock_events' must be an array, not a string."]


def london_turn_from(at: datetime) -> tuple[Game, int]:
    """A 3-day game with weekends off, both players in London, whose second turn starts at
    `at`; returns the game and the seat now to move."""
    players = [make_player(), make_player()]
    with time_machine.travel(at - timedelta(hours=1), tick=False):
        game = banked_game(*players, bank=0, weekends=True)
        for player in players:
            zone_of(player, "Europe/London")
    with time_machine.travel(at, tick=False):
        return game, 1 - move(game)


@pytest.mark.django_db
def test_with_weekends_off_the_reminder_comes_at_a_fifth_of_the_clock_never_in_a_weekend(
    queued, django_capture_on_commit_callbacks, mailoutbox
) -> None:
    """A 3-day turn from Wednesday 12:00 in London (GMT) ends on Monday 12:00. A fifth of it
    (14:24) is left on Friday at 21:36: 12 hours on Monday, 2:24 before the weekend. Wall time
    would have put the reminder on Sunday 21:36, while the clock was stopped. The reminder
    follows a gift and a deadline moved by the admin, and the calendar's alarm rings with it."""
    wednesday = datetime(2026, 11, 18, 12, 0, tzinfo=UTC)
    game, mover = london_turn_from(wednesday)
    deadline = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)  # Monday
    due = datetime(2026, 11, 20, 21, 36, tzinfo=UTC)  # Friday
    assert seat(game, mover).deadline == deadline
    (reminder,) = Reminder.objects.filter(seat=seat(game, mover))
    assert reminder.due == due

    # The calendar's alarm rings when the mail goes.
    profile = calendar.calendar_link_new(user=player_at(game, mover))
    path = calendar.calendar_path(player_at(game, mover), profile)
    assert path is not None
    with time_machine.travel(wednesday, tick=False):
        feed = Calendar.from_ical(Client().get(path).content)
    (event,) = feed.walk("VEVENT")
    (alarm,) = event.walk("VALARM")
    assert event.decoded("DTSTART") + alarm.decoded("TRIGGER") == due

    # A gift: a day more on the clock, Tuesday 12:00; the reminder 14:24 before, on Monday.
    with time_machine.travel(wednesday + timedelta(hours=1), tick=False):
        core.time_give(game_id=game.pk, user=player_at(game, 1 - mover), seat_index=mover)
    assert seat(game, mover).deadline == deadline + DAY
    assert Reminder.objects.get(seat=seat(game, mover)).due == datetime(
        2026, 11, 23, 21, 36, tzinfo=UTC
    )
    # The admin sets Monday 06:00: 6 hours on Monday, 8:24 on Friday.
    with time_machine.travel(wednesday + timedelta(hours=2), tick=False):
        core.seat_deadline_move(
            game_id=game.pk, seat_index=mover, deadline=deadline - timedelta(hours=6)
        )
    moved_due = datetime(2026, 11, 20, 15, 36, tzinfo=UTC)
    assert Reminder.objects.get(seat=seat(game, mover)).due == moved_due
    # The sweep mails it then, not a second before.
    with time_machine.travel(moved_due - timedelta(seconds=1), tick=False):
        assert sweeps.reminders_sweep() == 0
    with time_machine.travel(moved_due, tick=False), django_capture_on_commit_callbacks():
        assert sweeps.reminders_sweep() == 1
    (row,) = Outbox.objects.filter(kind="reminder", seat=mover)
    # It says the time left on the clock: 8:24 on Friday and 6 hours on Monday, not the
    # weekend's wall time too.
    with time_machine.travel(moved_due, tick=False):
        assert outbox.outbox_send(outbox_id=row.pk) == "sent"
    (reminder_mail,) = mailoutbox
    assert "\n14:24:00 left: until Monday 23 November 2026, 06:00" in reminder_mail.body


@pytest.mark.django_db
def test_a_vacation_with_weekends_off_keeps_the_clock_time_left(queued) -> None:
    """London (GMT). A 3-day turn from Tuesday noon ends on Friday noon. Away from Wednesday
    noon to Saturday noon, with two clock days left: they run from Monday 00:00, to Wednesday
    00:00 (shifted by the 3 days away, the deadline would have been Monday noon: half a day on
    the player's return). Back early on Friday noon: the two days run from then, 12 hours to
    the weekend and 36 from Monday, to Tuesday noon (pulled back by the day not used, Sunday
    noon, in the weekend)."""
    tuesday = datetime(2026, 11, 17, 12, 0, tzinfo=UTC)
    game, mover = london_turn_from(tuesday)
    assert seat(game, mover).deadline == datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
    away = player_at(game, mover)
    with time_machine.travel(tuesday + DAY, tick=False):
        vacations.vacation_start(user=away, until=datetime(2026, 11, 21, 12, 0, tzinfo=UTC))
    assert seat(game, mover).deadline == datetime(2026, 11, 25, 0, 0, tzinfo=UTC)
    # The reminder follows, a fifth of the 3 days (14:24) before on the clock.
    assert Reminder.objects.get(seat=seat(game, mover)).due == datetime(
        2026, 11, 24, 9, 36, tzinfo=UTC
    )
    with time_machine.travel(datetime(2026, 11, 20, 12, 0, tzinfo=UTC), tick=False):
        vacations.vacation_end(user=away)
    assert seat(game, mover).deadline == datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
    assert Reminder.objects.get(seat=seat(game, mover)).due == datetime(
        2026, 11, 23, 21, 36, tzinfo=UTC
    )


@pytest.mark.django_db
def test_a_gift_with_weekends_off_is_a_day_of_the_receivers_clock(queued) -> None:
    players = [make_player(), make_player()]
    with time_machine.travel(FRIDAY_NY - timedelta(days=2), tick=False):
        game = banked_game(*players, bank=0, weekends=True)
        mover = to_move(game)
        zone_of(player_at(game, mover), "America/New_York")
        before = seat(game, mover).deadline
        assert before is not None
        core.time_give(game_id=game.pk, user=player_at(game, 1 - mover), seat_index=mover)
    zone = ZoneInfo("America/New_York")
    assert seat(game, mover).deadline == clock.clock_add(before, DAY, zone)


@pytest.mark.django_db
def test_a_live_race_refuses_clock_options_and_gifts(queued) -> None:
    player, other = make_player(), make_player()
    for options in ({"bank_days": 7}, {"weekends_off": True}):
        with pytest.raises(core.GameError, match="live Maze Race keeps its own clock"):
            core.game_create(
                kind="mazerace",
                creator=player,
                options={"mode": "live"},
                clock_choice="live",
                seats=[core.SeatPlan(), core.SeatPlan()],
                clock_options=options,
            )
    for options, message in [
        ({"bank_days": 3}, "time bank of 7 or 14 days"),
        ({"bank_days": True}, "time bank of 7 or 14 days"),
        ({"weekends_off": "yes"}, "either on or off"),
        ({"vacation": 1}, "not known"),
    ]:
        with pytest.raises(core.GameError, match=message):
            core.game_create(
                kind="cornmaze",
                creator=player,
                options={"size": 8},
                clock_choice="P3D",
                seats=[core.SeatPlan(), core.SeatPlan()],
                clock_options=options,
            )
    assert not Game.objects.exists()
    race = core.game_create(
        kind="mazerace",
        creator=player,
        options={"mode": "live"},
        clock_choice="live",
        seats=[core.SeatPlan(), core.SeatPlan()],
    )
    core.game_join(game_id=race.pk, user=other)
    with pytest.raises(core.GameError, match="no time can be given"):
        core.time_give(game_id=race.pk, user=player, seat_index=1)


@pytest.mark.django_db
def test_a_slow_race_adds_its_bank_once_to_its_one_clock(queued) -> None:
    player, other = make_player(), make_player()
    start = datetime(2026, 3, 2, 9, tzinfo=UTC)
    with time_machine.travel(start, tick=False):
        race = core.game_create(
            kind="mazerace",
            creator=player,
            options={"mode": "slow"},
            clock_choice="P3D",
            seats=[core.SeatPlan(), core.SeatPlan()],
            clock_options={"bank_days": 7},
        )
        core.game_join(game_id=race.pk, user=other)
        assert {s.deadline for s in race.seats.all()} == {start + timedelta(days=10)}
        # Its page says so in a race's words, not a move's.
        client = Client()
        client.force_login(player)
        page = html.unescape(client.get(reverse("game", args=[race.pk])).content.decode())
    assert "Each runner has a time bank of 7 days, added once to the race's clock." in page
    assert 'This race: <span class="move-left">3 days, 0:00:00</span>' in page
    assert "This move" not in page and "each move adds a day" not in page


# --- the pages ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_creation_form_makes_a_game_with_a_bank_and_weekends_off(client, queued) -> None:
    user = make_player()
    client.force_login(user)
    response = client.post(
        reverse("game_new", args=["cornmaze"]),
        {"size": "8", "seats": "2", "clock": "P3D", "bank": "14", "weekends_off": "on"},
    )
    assert response.status_code == 302
    game = Game.objects.get()
    assert game.clock_options == {"bank_days": 14, "weekends_off": True}
    assert seat(game, 0).bank == timedelta(days=14)
    record = record_build(game, viewer_seat=0)
    assert record["options"] == {
        "size": 8,
        "clock": "P3D",
        "bank_days": 14,
        "weekends_off": True,
    }
    # A live race with a bank: a clear message, and nothing made.
    response = client.post(
        reverse("game_new", args=["mazerace"]),
        {"race": "live", "seats": "2", "bank": "7"},
    )
    assert response.status_code == 400
    assert "keeps its own clock" in response.content.decode()
    response = client.post(
        reverse("game_new", args=["cornmaze"]),
        {"size": "8", "seats": "2", "clock": "P3D", "bank": "30"},
    )
    assert response.status_code == 400
    assert Game.objects.count() == 1


@pytest.mark.django_db
def test_the_account_page_sets_the_time_zone_and_refuses_an_unknown_one(client) -> None:
    user = make_player()
    client.force_login(user)
    page = client.get(reverse("account")).content.decode()
    assert 'data-time-zone="choose"' in page and "js/timezone" in page
    assert '<option value="Asia/Tokyo">' in page
    response = client.post(reverse("time_zone_change"), {"time_zone": "Asia/Tokyo"})
    assert response.status_code == 302
    assert Profile.objects.get(user=user).time_zone == "Asia/Tokyo"
    # `localtime` would be the server's zone, `Factory` no place's: neither is offered.
    assert '"localtime"' not in page and '"Factory"' not in page
    for bad in ("Mars/Olympus", "", "../../etc/passwd", "UTC\x00", "localtime", "Factory"):
        response = client.post(reverse("time_zone_change"), {"time_zone": bad})
        assert response.status_code == 400, bad
        if bad and "\x00" not in bad:
            assert "not a time zone we know" in response.content.decode()
    assert Profile.objects.get(user=user).time_zone == "Asia/Tokyo"


@pytest.mark.django_db
def test_sign_up_keeps_the_browsers_zone_and_falls_back_to_utc(client) -> None:
    form = {"username": "zoned", "password1": "a long passphrase", "password2": "a long passphrase"}
    assert 'data-time-zone="guess"' in client.get(reverse("signup")).content.decode()
    response = client.post(reverse("signup"), {**form, "time_zone": "America/Santiago"})
    assert response.status_code == 302
    assert Profile.objects.get(user__username="zoned").time_zone == "America/Santiago"
    fresh = Client()
    fresh.post(reverse("signup"), {**form, "username": "unzoned", "time_zone": "Nowhere/Else"})
    assert Profile.objects.get(user__username="unzoned").time_zone == "UTC"


@pytest.mark.django_db
def test_claiming_a_guest_account_keeps_the_browsers_zone_unless_the_guest_chose_one() -> None:
    from games.accounts.guests import guest_create

    form = {"password1": "a long passphrase", "password2": "a long passphrase", "email": ""}
    for username, chosen, guessed, kept in (
        ("berliner", "", "Europe/Berlin", "Europe/Berlin"),
        ("nowhere", "", "Nowhere/Else", "UTC"),
        ("chooser", "Asia/Tokyo", "Europe/Berlin", "Asia/Tokyo"),
    ):
        guest = guest_create()
        if chosen:
            zone_of(guest, chosen)
        client = Client()
        client.force_login(guest)
        response = client.post(
            reverse("guest_claim"), {**form, "username": username, "time_zone": guessed}
        )
        assert response.status_code == 302
        assert Profile.objects.get(user__username=username).time_zone == kept


@pytest.mark.django_db
def test_the_gift_form_gives_once_and_a_player_never_sees_anothers_time_zone(queued) -> None:
    players = [make_player(), make_player()]
    game = banked_game(*players, bank=7, weekends=True)
    mover = to_move(game)
    zone_of(player_at(game, mover), "Pacific/Auckland")
    giver = Client()
    giver.force_login(player_at(game, 1 - mover))
    page = giver.get(reverse("game", args=[game.pk])).content.decode()
    assert 'class="give-time"' in page and "Pacific/Auckland" not in page
    assert "Weekends off" in page
    response = giver.post(
        reverse("game_give_time", args=[game.pk]), {"seat": str(mover)}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200
    html = response.content.decode()
    # Given once in the turn: the form goes, and its room stays, unseen (ui.seat_list).
    assert 'class="give-time"' not in html and "gave" in html
    assert '<span class="give-room" aria-hidden="true">' in html
    deadline = seat(game, mover).deadline
    for data in ({"seat": str(mover)}, {"seat": "x"}, {}, {"seat": str(1 - mover)}):
        response = giver.post(reverse("game_give_time", args=[game.pk]), data)
        assert response.status_code == 409
    assert seat(game, mover).deadline == deadline
    game.refresh_from_db()
    assert len(game.clock_events) == 1
    anonymous = Client().post(reverse("game_give_time", args=[game.pk]), {"seat": str(mover)})
    assert anonymous.status_code == 409
    assert "Pacific/Auckland" not in json.dumps(record_build(game, viewer_seat=None))
    assert deadlines.GIFT == DAY
