"""Vacation (issue 14, parts 1 and 2): the allowance and how it grows, a vacation moving the
player's deadlines forward and an early return (or a move) pulling them back, a turn that
starts during a vacation, automatic vacation in the sweep's timeout path with its one mail,
return dates in time zones on both sides of UTC over daylight-saving changes, what the other
players see, the record's clock events, and bad input. Time is frozen (time-machine)."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
import time_machine
from django.core import mail
from django.test import Client
from django.urls import reverse
from hypothesis import given
from hypothesis import strategies as st

from games.accounts.guests import guest_create
from games.archive.records import record_build, record_verify
from games.mail import outbox
from games.models import ClockEvent, Game, Move, Outbox, Reminder, Seat, Vacation
from games.play import core, sweeps, vacations
from tests.test_robotmaze_site import robot_game, set_up
from tests.test_time_bank import banked_game
from tests.worker_fixtures import legal_move, make_game, make_player, play_one, to_move
from tests.worker_fixtures import player_at as seat_user

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("queued")]

CLOCK = timedelta(days=3)
DAY = timedelta(days=1)
# A Friday afternoon, two days before the USA's clocks go forward (Sunday 14 March 2027).
START = datetime(2027, 3, 12, 20, 0, tzinfo=UTC)


def deadline_of(game: Game, index: int) -> datetime | None:
    return Seat.objects.get(game=game, index=index).deadline


def signed_in(user) -> Client:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(user)
    return client


# --- the allowance --------------------------------------------------------------------------


def test_the_allowance_starts_at_14_days_and_grows_a_day_a_week_played_up_to_30() -> None:
    monday = datetime(2027, 1, 4, 9, 0, tzinfo=UTC)
    with time_machine.travel(monday, tick=False):
        ann, bob = make_player(), make_player()
        game = make_game(ann, bob, clock="P30D")
        assert vacations.vacation_for(ann).days_left == 14
        play_one(game)
    with time_machine.travel(monday + timedelta(hours=5), tick=False):
        play_one(game)  # the same week again: no second day
    with time_machine.travel(monday + timedelta(days=15), tick=False):  # the third week
        play_one(game)
        play_one(game)
        # The first week is over and counted; the third, under way, is not yet.
        assert vacations.vacation_for(ann).days_left == 15
        assert vacations.vacation_for(bob).days_left == 15
    with time_machine.travel(monday + timedelta(days=21), tick=False):  # the third is over
        assert vacations.vacation_for(ann).days_left == 16
        assert vacations.vacation_for(bob).days_left == 16
        Vacation.objects.filter(user=ann).update(days_left=29, weeks_counted_to=None)
        # Counted again from the start, the two weeks take 29 to the cap, not past it.
        assert vacations.vacation_for(ann).days_left == 30


def test_a_new_account_that_played_this_week_has_the_14_days_the_pages_promise() -> None:
    """The week under way is not a week played yet: a player who signed up and moved this week
    has the 14 days that the guest's account page and the rules say, and the day comes when
    the week is over."""
    wednesday = datetime(2027, 1, 6, 9, 0, tzinfo=UTC)
    with time_machine.travel(wednesday, tick=False):
        ann, bob = make_player(), make_player()
        game = make_game(ann, bob, clock="P30D")
        play_one(game)
        play_one(game)
        assert Move.objects.filter(game=game).count() == 2  # each has moved this week
        guest_page = signed_in(guest_create()).get(reverse("account")).content.decode()
        assert "claim your account to get 14 of them" in guest_page
        rules = Client().get(reverse("rules", args=["cornmaze"])).content.decode()
        assert "14 to begin with" in rules and "a move, once it is over" in rules
        page = signed_in(ann).get(reverse("account")).content.decode()
        assert "You have <strong>14</strong> vacation days" in page
    with time_machine.travel(wednesday + 5 * DAY, tick=False):  # Monday: that week is over
        page = signed_in(ann).get(reverse("account")).content.decode()
        assert "You have <strong>15</strong> vacation days" in page


def test_a_timeout_is_not_a_week_played() -> None:
    with time_machine.travel(START, tick=False):
        ann, bob = make_player(), make_player()
        game = make_game(ann, bob)
        first = play_one(game)
    with time_machine.travel(START + timedelta(days=8), tick=False):
        assert sweeps.deadlines_sweep() == 1  # the other seat, bob or ann, ran out
        loser = seat_user(game, 1 - first)
        assert Move.objects.filter(game=game, move={"timeout": True}).exists()
        assert vacations.vacation_for(loser).days_left == 14
        assert vacations.vacation_for(seat_user(game, first)).days_left == 15


# --- a vacation moves deadlines --------------------------------------------------------------


def test_a_vacation_stops_the_clocks_and_an_early_return_gives_back_the_days_not_begun() -> None:
    with time_machine.travel(START, tick=False):
        ann, bob = make_player(), make_player()
        game = make_game(ann, bob)
    mover = to_move(game)
    player = seat_user(game, mover)
    deadline = deadline_of(game, mover)
    assert deadline == START + CLOCK
    away = START + timedelta(hours=1)
    with time_machine.travel(away, tick=False):
        vacation = vacations.vacation_start(user=player, until=away + 5 * DAY)
    assert vacation.days_left == 9 and vacation.days_planned == 5
    assert deadline_of(game, mover) == deadline + 5 * DAY
    # The reminder follows the deadline (deadlines_set).
    (reminder,) = Reminder.objects.filter(seat__game=game)
    assert reminder.due == deadline + 5 * DAY - CLOCK / 5
    with time_machine.travel(deadline + DAY, tick=False):
        assert sweeps.deadlines_sweep() == 0  # the old deadline is gone
    back = away + DAY + timedelta(hours=2)  # a day and a part of one: two days used
    with time_machine.travel(back, tick=False):
        vacation = vacations.vacation_end(user=player)
    assert vacation is not None and vacation.days_left == 12
    # The clock ran 1 hour before the vacation; it has CLOCK - 1 hour left from the return.
    assert deadline_of(game, mover) == back + CLOCK - timedelta(hours=1)
    events = list(game.vacation_events.values_list("kind", "seat", "at"))
    assert events == [("vacation_start", mover, away), ("vacation_end", mover, back)]
    with time_machine.travel(back + timedelta(minutes=1), tick=False):
        assert vacations.vacation_end(user=player) is None  # not on vacation any more


def test_a_turn_that_starts_during_a_vacation_gets_its_deadline_past_it() -> None:
    with time_machine.travel(START, tick=False):
        ann, bob = make_player(), make_player()
        game = make_game(ann, bob)
        mover = to_move(game)
        waiting = seat_user(game, 1 - mover)
        until = START + 4 * DAY
        vacations.vacation_start(user=waiting, until=until)
        assert deadline_of(game, 1 - mover) is None  # not their turn: nothing to move
    with time_machine.travel(START + DAY, tick=False):
        play_one(game)
    assert deadline_of(game, 1 - mover) == until + CLOCK
    back = START + 2 * DAY
    with time_machine.travel(back, tick=False):
        vacations.vacation_end(user=waiting)
    assert deadline_of(game, 1 - mover) == back + CLOCK
    # The game started before the vacation: its start and end are in its record.
    kinds = list(game.vacation_events.values_list("kind", flat=True))
    assert kinds == ["vacation_start", "vacation_end"]


def test_a_move_ends_the_vacation_and_pulls_back_the_other_deadlines() -> None:
    with time_machine.travel(START, tick=False):
        ann, bob, cat = make_player(), make_player(), make_player()
        one, two = make_game(ann, bob), make_game(ann, cat)
    # Make ann the one to move in both games.
    for game in (one, two):
        if seat_user(game, to_move(game)) != ann:
            with time_machine.travel(START, tick=False):
                play_one(game)
    index_two = next(s.index for s in two.seats.all() if s.user_id == ann.pk)
    before = deadline_of(two, index_two)
    assert before is not None
    with time_machine.travel(START + timedelta(hours=1), tick=False):
        vacations.vacation_start(user=ann, until=START + 10 * DAY)
    assert deadline_of(two, index_two) == before + 10 * DAY - timedelta(hours=1)
    moved_at = START + 3 * DAY
    with time_machine.travel(moved_at, tick=False):
        one.refresh_from_db()
        core.move_submit(game_id=one.pk, user=ann, number=one.ply, move=legal_move(one))
        assert vacations.on_vacation_until(Vacation.objects.get(user=ann).user, moved_at) is None
    # The clock of game two ran an hour before the vacation and none during it.
    assert deadline_of(two, index_two) == moved_at + (before - START) - timedelta(hours=1)
    vacation = Vacation.objects.get(user=ann)
    assert vacation.days_planned == 3  # three days used, seven back
    assert vacation.days_left == 14 - 3  # the move's week is under way: not counted yet
    later = moved_at + 7 * DAY
    assert vacations.vacation_for(ann, now=later).days_left == 14 - 3 + 1  # and once it is over


def test_the_answer_to_a_move_that_ends_a_vacation_shows_the_player_back() -> None:
    with time_machine.travel(START, tick=False):
        ann, bob = make_player("ann-back"), make_player("bob-back")
        game = make_game(ann, bob)
        if seat_user(game, to_move(game)) != ann:
            play_one(game)
        vacations.vacation_start(user=ann, until=START + 5 * DAY)
    with time_machine.travel(START + DAY, tick=False):
        client = signed_in(ann)
        game.refresh_from_db()
        first, second = (chr(ord("a") + c) for c in legal_move(game)["shifts"])
        form = {"ply": str(game.ply), "first": first, "second": second}
        for headers in ({"HTTP_HX_REQUEST": "true"}, {}):
            if headers:
                answer = client.post(reverse("game_move", args=[game.pk]), form, **headers)
            else:  # the page a look brings after it, as the answer left it for the mover
                answer = client.get(reverse("game", args=[game.pk]))
            page = answer.content.decode()
            assert answer.status_code == 200
            assert "on vacation until" not in page
            game.refresh_from_db()
            assert f'data-version="{game.version}"' in page


@pytest.mark.parametrize(
    ("zone", "local_now", "return_on", "days", "length"),
    [
        # West of UTC, over the spring change (2 a.m. on 14 March 2027): a day of 23 hours.
        ("America/New_York", datetime(2027, 3, 12, 15, 0), date(2027, 3, 16), 4, "3 days, 8:00:00"),
        # East of UTC, over the autumn change (3 a.m. on 4 April 2027): a day of 25 hours.
        ("Australia/Sydney", datetime(2027, 4, 2, 0, 30), date(2027, 4, 5), 3, "3 days, 0:30:00"),
        # East of UTC, no change: Tokyo keeps one offset all year.
        ("Asia/Tokyo", datetime(2027, 3, 12, 23, 0), date(2027, 3, 13), 1, "1:00:00"),
        # UTC's own zone, over London's autumn change (2 a.m. on 31 October 2027).
        ("Europe/London", datetime(2027, 10, 30, 12, 0), date(2027, 11, 1), 2, "1 day, 13:00:00"),
    ],
)
def test_a_return_date_in_the_players_time_zone(
    zone: str, local_now: datetime, return_on: date, days: int, length: str
) -> None:
    tz = ZoneInfo(zone)
    now = local_now.replace(tzinfo=tz).astimezone(UTC)
    with time_machine.travel(now, tick=False):
        ann, bob = make_player(), make_player()
        game = make_game(ann, bob)
        mover = to_move(game)
        player = seat_user(game, mover)
        until = vacations.until_for(return_on, tz)
        assert until.astimezone(tz).replace(tzinfo=None) == datetime.combine(
            return_on, datetime.min.time()
        )
        vacation = vacations.vacation_start(user=player, until=until)
    assert vacation.days_planned == days
    assert str(until - now) == length  # real hours, the DST hour included or left out
    assert deadline_of(game, mover) == now + CLOCK + (until - now)
    with time_machine.travel(until, tick=False):
        assert vacations.on_vacation_until(Vacation.objects.get(user=player).user, until) is None
        assert Vacation.objects.get(user=player).days_left == 14 - days


# --- automatic vacation ------------------------------------------------------------------------


def test_automatic_vacation_instead_of_a_timeout_one_mail_then_the_seat_times_out() -> None:
    with time_machine.travel(START, tick=False):
        ann = make_player(automatic_vacation=True)
        bob = make_player(automatic_vacation=True)
        game = make_game(ann, bob)
        first = play_one(game)
    late = seat_user(game, 1 - first)
    ran_out = START + CLOCK + timedelta(seconds=5)
    with time_machine.travel(ran_out, tick=False):
        assert sweeps.deadlines_sweep() == 0  # no timeout: a vacation instead
        assert sweeps.deadlines_sweep() == 0
    game.refresh_from_db()
    assert game.status == Game.Status.ACTIVE
    vacation = Vacation.objects.get(user=late)
    assert vacation.was_automatic and vacation.days_left == 0 and vacation.days_planned == 14
    assert vacation.until == ran_out + 14 * DAY
    assert deadline_of(game, 1 - first) == vacation.until
    (row,) = Outbox.objects.filter(kind=Outbox.Kind.VACATION)
    assert row.user_id == late.pk
    with time_machine.travel(ran_out, tick=False):
        assert outbox.outbox_send(outbox_id=row.pk) == "sent"
    message = mail.outbox[-1]
    assert message.to == [late.email]
    assert "automatic vacation started instead of a timeout" in message.body
    assert "It took 14 days of your allowance; 0 days left after it." in message.body
    # The days are gone at the vacation's end: the clock runs out again, and the seat loses.
    with time_machine.travel(vacation.until - timedelta(seconds=1), tick=False):
        assert sweeps.deadlines_sweep() == 0
    with time_machine.travel(vacation.until, tick=False):
        assert sweeps.deadlines_sweep() == 1
    game.refresh_from_db()
    assert game.status == Game.Status.FINISHED and game.result_reason == "timeout"
    assert Outbox.objects.filter(kind=Outbox.Kind.VACATION).count() == 1
    # The record lists the vacation, and replays with it.
    with time_machine.travel(vacation.until, tick=False):
        record = record_build(game, viewer_seat=None)
    assert [e["kind"] for e in record["clock_events"]] == ["vacation_start"]
    assert record["clock_events"][0]["automatic"] is True
    assert record_verify(json.loads(json.dumps(record))) == []


def test_a_game_nobody_has_moved_in_is_aborted_rather_than_held_by_a_vacation() -> None:
    """The rules abort a game in which nobody has moved when the first clock runs out: an
    automatic vacation, which would hold it open for two weeks, does not come first."""
    with time_machine.travel(START, tick=False):
        game = make_game(make_player(automatic_vacation=True), make_player(automatic_vacation=True))
    with time_machine.travel(START + CLOCK + timedelta(seconds=5), tick=False):
        assert sweeps.deadlines_sweep() == 1
    game.refresh_from_db()
    assert (game.status, game.ply) == (Game.Status.ABORTED, 0)
    assert not Vacation.objects.filter(was_automatic=True).exists()
    assert not Outbox.objects.filter(kind=Outbox.Kind.VACATION).exists()
    assert game.clock_events == []


def test_a_robot_maze_race_whose_set_up_is_unfinished_is_aborted_rather_than_held() -> None:
    """Its creator has set up, the other has not: play has not begun, so the other's clock
    running out aborts the game, vacation days or not."""
    with time_machine.travel(START, tick=False):
        ann, bob = make_player(automatic_vacation=True), make_player(automatic_vacation=True)
        game = robot_game(ann, bob)
        set_up(game, seats=(0,))
    with time_machine.travel(START + CLOCK + timedelta(seconds=5), tick=False):
        assert sweeps.deadlines_sweep() == 1
    game.refresh_from_db()
    assert game.status == Game.Status.ABORTED
    assert not Vacation.objects.filter(was_automatic=True).exists()


def test_one_automatic_vacation_covers_every_clock_that_ran_out_in_the_same_sweep() -> None:
    with time_machine.travel(START, tick=False):
        eve = make_player(automatic_vacation=True)
        games = [make_game(eve, make_player()) for _ in range(2)]
        for game in games:  # a move each, then eve is to move in both
            if seat_user(game, to_move(game)) == eve:
                play_one(game)
            play_one(game)
    for game in games:
        assert seat_user(game, to_move(game)) == eve
    ran_out = START + CLOCK + timedelta(seconds=5)
    with time_machine.travel(ran_out, tick=False):
        assert sweeps.deadlines_sweep() == 0  # one vacation, no timeout
    vacation = Vacation.objects.get(user=eve)
    for game in games:
        game.refresh_from_db()
        assert game.status == Game.Status.ACTIVE
        assert deadline_of(game, to_move(game)) == vacation.until


def automatic_vacation_of_the_seat_to_move(bank: int = 0) -> tuple[Game, int, datetime]:
    """A game whose seat to move ran out of time at the returned instant, and went on an
    automatic vacation of its player's 14 days instead of timing out. (Its first move is
    made: a game nobody has moved in is aborted instead.)"""
    with time_machine.travel(START, tick=False):
        ann = make_player(automatic_vacation=True)
        bob = make_player(automatic_vacation=True)
        game = banked_game(ann, bob, bank=bank)
        play_one(game)
        late = to_move(game)
        deadline = deadline_of(game, late)
    assert deadline is not None
    ran_out = deadline + timedelta(seconds=5)
    with time_machine.travel(ran_out, tick=False):
        assert sweeps.deadlines_sweep() == 0
    assert Vacation.objects.get(user=seat_user(game, late)).until == ran_out + 14 * DAY
    return game, late, ran_out


def test_back_early_from_an_automatic_vacation_the_clock_that_ran_out_has_a_day() -> None:
    game, late, ran_out = automatic_vacation_of_the_seat_to_move()
    player = seat_user(game, late)
    back = ran_out + 2 * DAY
    with time_machine.travel(back, tick=False):
        vacation = vacations.vacation_end(user=player)
    assert vacation is not None and vacation.days_left == 12
    # Not a clock at nought, which the next sweep would end: a day to move in.
    assert deadline_of(game, late) == back + DAY
    with time_machine.travel(back + DAY - timedelta(seconds=1), tick=False):
        assert sweeps.deadlines_sweep() == 0
    assert Vacation.objects.get(user=player).until == back  # no second vacation meanwhile
    with time_machine.travel(back + timedelta(hours=3), tick=False):
        assert play_one(game) == late
    game.refresh_from_db()
    assert game.status == Game.Status.ACTIVE


def test_a_clock_run_out_twice_in_one_turn_starts_a_second_automatic_vacation_with_its_mail() -> (
    None
):
    game, late, ran_out = automatic_vacation_of_the_seat_to_move()
    player = seat_user(game, late)
    back = ran_out + 2 * DAY
    with time_machine.travel(back, tick=False):
        vacations.vacation_end(user=player)
    again = back + DAY
    with time_machine.travel(again, tick=False):
        assert sweeps.deadlines_sweep() == 0
    vacation = Vacation.objects.get(user=player)
    assert vacation.started_at == again and vacation.until == again + 12 * DAY
    assert deadline_of(game, late) == vacation.until
    rows = Outbox.objects.filter(kind=Outbox.Kind.VACATION, user=player)
    assert rows.count() == 2  # one mail for each vacation


def test_back_early_never_gives_more_time_than_the_vacation_would_have() -> None:
    with time_machine.travel(START, tick=False):
        ann, bob = make_player(automatic_vacation=True), make_player(automatic_vacation=True)
        game = make_game(ann, bob)
        play_one(game)
        late = to_move(game)
        player = seat_user(game, late)
        Vacation.objects.update_or_create(user=player, defaults={"days_left": 1})
    ran_out = START + CLOCK + timedelta(seconds=5)
    with time_machine.travel(ran_out, tick=False):
        assert sweeps.deadlines_sweep() == 0
    back = ran_out + timedelta(hours=20)  # four hours before the planned return
    with time_machine.travel(back, tick=False):
        vacations.vacation_end(user=player)
    assert deadline_of(game, late) == ran_out + DAY


def test_a_move_after_an_automatic_vacation_keeps_the_bank_the_clock_had_left() -> None:
    game, late, ran_out = automatic_vacation_of_the_seat_to_move(bank=7)
    # The whole turn ran out, bank and all: nothing of the bank is left to keep.
    with time_machine.travel(ran_out + 2 * DAY, tick=False):
        assert play_one(game) == late
    bank = Seat.objects.get(game=game, index=late).bank
    assert bank == DAY  # the move's day, and nothing of the 7 days the vacation hid


def test_the_page_shows_the_clock_stopped_where_the_vacation_found_it() -> None:
    game, late, ran_out = automatic_vacation_of_the_seat_to_move(bank=7)
    watcher = signed_in(seat_user(game, 1 - late))
    with time_machine.travel(ran_out + DAY, tick=False):
        page = watcher.get(reverse("game", args=[game.pk])).content.decode()
    assert "on vacation until" in page
    # Run out, bank and all: nothing left when the vacation ends.
    assert 'This move: <span class="move-left">0:00:00</span>' in page
    assert 'bank: <span class="bank-left">0:00:00</span>' in page


def test_a_move_during_a_vacation_spends_the_bank_as_the_clock_stood_when_it_began() -> None:
    with time_machine.travel(START, tick=False):
        game = banked_game(make_player(), make_player(), bank=7)
        mover = to_move(game)
        player = seat_user(game, mover)
    # Five days into the turn (two of the bank spent), ten days of vacation.
    with time_machine.travel(START + 5 * DAY, tick=False):
        vacations.vacation_start(user=player, until=START + 15 * DAY)
    with time_machine.travel(START + 6 * DAY, tick=False):
        page = signed_in(player).get(reverse("game", args=[game.pk])).content.decode()
        assert 'This move: <span class="move-left">0:00:00</span>' in page
        assert 'bank: <span class="bank-left">5 days, 0:00:00</span>' in page
        assert play_one(game) == mover
    # Five days of bank were left when the vacation began; a day back for the move (at most 7).
    assert Seat.objects.get(game=game, index=mover).bank == 6 * DAY


@pytest.mark.parametrize("who", ["automatic off", "guest", "no days left"])
def test_without_automatic_vacation_the_seat_times_out(who: str, make_user) -> None:
    with time_machine.travel(START, tick=False):
        if who == "guest":
            ann, bob = guest_create(), guest_create()
        else:
            ann = make_player(automatic_vacation=who != "automatic off")
            bob = make_player(automatic_vacation=who != "automatic off")
            if who == "no days left":
                Vacation.objects.update_or_create(user=ann, defaults={"days_left": 0})
                Vacation.objects.update_or_create(user=bob, defaults={"days_left": 0})
        game = make_game(ann, bob)
        play_one(game)
    with time_machine.travel(START + CLOCK + timedelta(seconds=5), tick=False):
        assert sweeps.deadlines_sweep() == 1
    game.refresh_from_db()
    assert game.result_reason == "timeout"
    assert not Outbox.objects.filter(kind=Outbox.Kind.VACATION).exists()
    assert not ClockEvent.objects.exists()


# --- what the other players see ----------------------------------------------------------------


def test_the_other_player_sees_on_vacation_until_beside_the_name_in_the_game_and_the_lobby() -> (
    None
):
    with time_machine.travel(START, tick=False):
        ann, bob = make_player("ann-v"), make_player("bob-v")
        game = make_game(ann, bob)
        client = signed_in(bob)
        response = client.get(reverse("game", args=[game.pk]))
        assert b"on vacation until" not in response.content
        vacations.vacation_start(user=ann, until=START + 3 * DAY)
        page = client.get(reverse("game", args=[game.pk])).content.decode()
        lobby = client.get(reverse("lobby")).content.decode()
        until = (START + 3 * DAY).isoformat()
        for html in (page, lobby):
            assert "on vacation until" in html and until in html
        anonymous = Client().get(reverse("game", args=[game.pk])).content.decode()
        assert "on vacation until" in anonymous  # anyone who watches sees it
    with time_machine.travel(START + DAY, tick=False):
        vacations.vacation_end(user=ann)
        page = client.get(reverse("game", args=[game.pk])).content.decode()
        assert "on vacation until" not in page


# --- the account page and bad input ------------------------------------------------------------


def _snapshot() -> tuple[object, ...]:
    return (
        list(Vacation.objects.order_by("pk").values()),
        list(Seat.objects.order_by("pk").values_list("deadline", flat=True)),
        ClockEvent.objects.count(),
    )


def test_the_account_page_starts_and_ends_a_vacation_and_keeps_the_setting() -> None:
    with time_machine.travel(START, tick=False):
        ann, bob = make_player(automatic_vacation=True), make_player()
        game = make_game(ann, bob)
        client = signed_in(ann)
        page = client.get(reverse("account")).content.decode()
        assert "You have <strong>14</strong> vacation days" in page
        response = client.post(reverse("vacation_start"), {"return_on": "2027-03-15"})
        assert response.status_code == 302
        page = client.get(reverse("account")).content.decode()
        assert "You are on vacation until" in page and "Enjoy your vacation" in page
        vacation = Vacation.objects.get(user=ann)
        assert vacation.until == datetime(2027, 3, 15, tzinfo=UTC) and vacation.days_planned == 3
    with time_machine.travel(START + timedelta(hours=3), tick=False):
        assert client.post(reverse("vacation_end")).status_code == 302
        page = client.get(reverse("account")).content.decode()
        assert "Welcome back" in page and "13</strong> vacation days" in page
        assert client.post(reverse("vacation_automatic"), {}).status_code == 302
        assert not Vacation.objects.get(user=ann).automatic
        client.post(reverse("vacation_automatic"), {"automatic": "on"})
        assert Vacation.objects.get(user=ann).automatic
        # With no date, the vacation lasts as long as the days left.
        assert client.post(reverse("vacation_start"), {"return_on": ""}).status_code == 302
        vacation = Vacation.objects.get(user=ann)
        assert vacation.until == START + timedelta(hours=3) + 13 * DAY
    assert game.vacation_events.count() == 3


def test_the_return_date_is_a_day_in_the_players_own_time_zone() -> None:
    # 20:00 UTC on 12 March is 09:00 on 13 March in Auckland (NZDT, UTC+13).
    with time_machine.travel(START, tick=False):
        ann, bob = make_player(), make_player()
        ann.profile.time_zone = "Pacific/Auckland"
        ann.profile.save(update_fields=["time_zone"])
        make_game(ann, bob)
        client = signed_in(ann)
        page = client.get(reverse("account")).content.decode()
        assert "midnight that day, Pacific/Auckland time" in page
        before = _snapshot()
        refused = client.post(reverse("vacation_start"), {"return_on": "2027-03-13"})
        assert refused.status_code == 400
        assert "Choose a return date after today." in refused.content.decode()
        assert _snapshot() == before
        response = client.post(reverse("vacation_start"), {"return_on": "2027-03-14"}, follow=True)
        vacation = Vacation.objects.get(user=ann)
        assert vacation.until == datetime(2027, 3, 14, tzinfo=ZoneInfo("Pacific/Auckland"))
        assert vacation.until == datetime(2027, 3, 13, 11, tzinfo=UTC)
        # Said as the page says it, a <time> that the browser shows in its own zone.
        said = 'stop until <time datetime="2027-03-13T11:00:00+00:00"'
        assert said in response.content.decode()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"return_on": "2027-03-12"}, "Choose a return date after today."),  # today
        ({"return_on": "2027-03-01"}, "Choose a return date after today."),
        ({"return_on": "2027-04-30"}, "That is 49 days of vacation, and you have 14 left."),
        ({"return_on": "12/03/2027x"}, "Enter a valid date."),
        ({"return_on": "9999-99-99"}, "Enter a valid date."),
    ],
)
def test_a_bad_return_date_is_refused_with_a_message_and_changes_nothing(
    data: dict[str, str], message: str
) -> None:
    with time_machine.travel(START, tick=False):
        ann, bob = make_player(), make_player()
        make_game(ann, bob)
        client = signed_in(ann)
        before = _snapshot()
        response = client.post(reverse("vacation_start"), data)
        assert response.status_code == 400
        # Said at the date's field, in the form, not at the top of the page.
        form = response.content.decode().split('id="vacation-form"', 1)[1].split("</form>")[0]
        assert message in form
        assert _snapshot() == before


def test_a_guest_has_no_vacation_and_a_refusal_changes_nothing() -> None:
    with time_machine.travel(START, tick=False):
        guest, bob = guest_create(), make_player()
        make_game(guest, bob)
        client = signed_in(guest)
        assert (
            "Vacation days are for registered players"
            in client.get(reverse("account")).content.decode()
        )
        before = _snapshot()
        for name, data in [
            ("vacation_start", {"return_on": "2027-03-14"}),
            ("vacation_end", {}),
            ("vacation_automatic", {"automatic": "on"}),
        ]:
            response = client.post(reverse(name), data)
            assert response.status_code == 400
            assert "Guests have no vacation days" in response.content.decode()
        assert _snapshot() == before
        with pytest.raises(vacations.VacationError):
            vacations.vacation_start(user=guest)


def test_returning_when_not_away_or_leaving_twice_is_refused() -> None:
    with time_machine.travel(START, tick=False):
        ann = make_player()
        client = signed_in(ann)
        response = client.post(reverse("vacation_end"))
        assert (
            response.status_code == 400 and "You are not on vacation." in response.content.decode()
        )
        assert client.post(reverse("vacation_start"), {}).status_code == 302
        before = _snapshot()
        response = client.post(reverse("vacation_start"), {})
        assert response.status_code == 400
        assert "You are on vacation already." in response.content.decode()
        assert _snapshot() == before


# --- the record --------------------------------------------------------------------------------


def test_verify_checks_the_clock_events() -> None:
    with time_machine.travel(START, tick=False):
        ann, bob = make_player(), make_player()
        game = make_game(ann, bob)
        first = play_one(game)
        vacations.vacation_start(user=seat_user(game, first), until=START + 2 * DAY)
    with time_machine.travel(START + DAY, tick=False):
        vacations.vacation_end(user=seat_user(game, first))
    with time_machine.travel(START + 10 * DAY, tick=False):
        assert sweeps.deadlines_sweep() == 1
        game.refresh_from_db()
        record = json.loads(json.dumps(record_build(game, viewer_seat=None)))
    assert [e["kind"] for e in record["clock_events"]] == ["vacation_start", "vacation_end"]
    assert record_verify(record) == []
    # The loser's timeout moved into a vacation of theirs: the replay says so.
    doctored = json.loads(json.dumps(record))
    timeout = doctored["moves"][-1]
    assert timeout["move"] == {"timeout": True}
    doctored["clock_events"].append(
        {
            "at": (datetime.fromisoformat(timeout["at"]) - DAY).isoformat(),
            "seat": timeout["seat"],
            "kind": "vacation_start",
            "until": (datetime.fromisoformat(timeout["at"]) + DAY).isoformat(),
        }
    )
    assert record_verify(doctored) == [
        f"Move {timeout['ply']}: a timeout while the player was on vacation."
    ]
    for events, problem in [
        ("no", "The field 'clock_events' must be an array, not a string."),
        (["x"], "Clock event 1 must be an object, not a string."),
        ([{"seat": 0}], "Clock event 1 needs an 'at' time and a 'kind'."),
        (
            [{"at": START.isoformat(), "seat": 7, "kind": "vacation_end"}],
            "Clock event 1 names no seat of this game.",
        ),
        (
            [{"at": START.isoformat(), "seat": 0, "kind": "vacation_end"}],
            "Clock event 1: a vacation ends that did not start, or after it was over.",
        ),
    ]:
        bad = {**record, "clock_events": events}
        assert record_verify(bad) == [problem]
    # A gift of time beside the vacations checks out.
    gift = {"at": START.isoformat(), "seat": 0, "kind": "gift", "by": 1, "ply": 0}
    assert record_verify({**record, "clock_events": [gift, *record["clock_events"]]}) == []


# --- the arithmetic, for any times --------------------------------------------------------------


@given(
    hours=st.integers(min_value=1, max_value=30 * 24 * 60),
    back=st.floats(min_value=0, max_value=1),
)
def test_the_days_taken_cover_the_vacation_and_a_return_gives_back_only_days_not_begun(
    hours: int, back: float
) -> None:
    now = START
    until = now + timedelta(minutes=hours)
    planned = vacations.days_for(until=until, now=now)
    # Every day or part of one is counted, short of the daylight-saving hour's slack.
    assert planned >= 1
    assert planned * DAY + vacations.DST_SLACK >= until - now
    assert (planned - 1) * DAY < until - now
    returned = now + (until - now) * back
    vacation = Vacation(started_at=now, until=until, days_planned=planned)
    used = vacations.days_used(vacation, returned)
    assert 1 <= used <= planned
    assert used == planned or used * DAY >= returned - now


def test_many_moves_in_one_week_add_one_day() -> None:
    monday = datetime(2027, 1, 4, 9, 0, tzinfo=UTC)
    with time_machine.travel(monday, tick=False):
        ann, bob = make_player(), make_player()
        game = make_game(ann, bob, clock="P30D")
        for _ in range(6):
            play_one(game)
    with time_machine.travel(monday + 7 * DAY, tick=False):
        assert vacations.vacation_for(ann).days_left == 15
        assert vacations.vacation_for(bob).days_left == 15
