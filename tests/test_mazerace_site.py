"""Maze Race through the site: Ready and the countdown, the race clock with a controlled clock,
the bots' ticks, the close at the deadline (by the task and by the sweep), the slow race, the
hint, the record, and a test that no response tells a viewer anything of the maze it has not
seen."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import random
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import time_machine
from django.core import mail
from django.core.management import call_command
from django.test import Client

from games.archive.records import record_build, record_verify
from games.engines import mazegen
from games.engines import mazerace as rules
from games.mail import outbox
from games.models import Game, Move, Outbox, Reminder
from games.play import core, sweeps
from games.play.paces import race
from games.ui.mazerace import seconds
from tests.worker_fixtures import Queued, make_player

HTMX = {"HTTP_HX_REQUEST": "true"}
# Ahead of the real clock, so that nothing is overdue by accident outside time travel.
T0 = datetime.now(UTC).replace(microsecond=0) + timedelta(days=1)
MS = timedelta(milliseconds=1)


# Every task these tests queue (race ticks, bot turns, mails) waits in this test's queue in
# Redis, with no worker to take it: each test drives the race clock itself.
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("queued")]


def ticks(queued: Queued) -> list[tuple[tuple[Any, ...], float]]:
    """The race ticks queued, oldest first: their arguments, and seconds from now (as the
    test's clock has it) to their `eta`."""
    now = datetime.now(UTC)
    return [
        (args, (datetime.fromisoformat(headers["eta"]) - now).total_seconds())
        for task, args, headers in queued.messages
        if task == "games.tasks.race_tick"
    ]


# --- helpers ---------------------------------------------------------------------------------


def make_race(
    people: int = 2, bots: tuple[str, ...] = (), clock: str = "live", seed: bytes | None = None
) -> Game:
    """A race with `people` persons (the first creates it) and then the bots, all seated."""
    users = [make_player() for _ in range(people)]
    plans = [core.SeatPlan() for _ in users] + [core.SeatPlan(bot=b) for b in bots]
    with core.bot_tasks_paused():
        game = core.game_create(
            kind="mazerace",
            creator=users[0],
            options={"mode": "live" if clock == "live" else "slow"},
            clock_choice=clock,
            seats=plans,
        )
        if seed is not None:
            Game.objects.filter(pk=game.pk).update(
                seed=seed, seed_sha256=hashlib.sha256(seed).hexdigest()
            )
        for user in users[1:]:
            core.game_join(game_id=game.pk, user=user)
    game.refresh_from_db()
    return game


def user_of(game: Game, seat: int) -> Any:
    user = game.seats.get(index=seat).user
    assert user is not None
    return user


def ready_all(game: Game) -> None:
    for seat in game.seats.filter(bot=""):
        race.race_ready(game_id=game.pk, user=seat.user)
    game.refresh_from_db()


def step(game: Game, seat: int, direction: str) -> Move:
    """The runner's next step, carrying its step number as the page's form does."""
    number = state_of(game)["runners"][seat]["steps"]
    return core.move_submit(
        game_id=game.pk, user=user_of(game, seat), number=number, move={"dir": direction}
    )


def state_of(game: Game) -> dict[str, Any]:
    game.refresh_from_db()
    assert game.state is not None
    return game.state


def way_out(game: Game, seat: int) -> list[str]:
    """The shortest way from the runner's cell to the exit, from the maze in the database."""
    state = state_of(game)
    maze = rules.maze_of(state)
    here = mazegen.CELL_OF[state["runners"][seat]["at"]]
    far = mazegen.distances(maze, mazegen.EXIT)
    route = []
    while here != mazegen.EXIT:
        direction, here = next(
            (d, other)
            for d, other in mazegen.NEIGHBOURS[here]
            if maze[here] & mazegen.BIT[d] and far[other] == far[here] - 1
        )
        route.append(direction)
    return route


def forward_way(game: Game, seat: int) -> str:
    """An open way on that is not back where the runner came from, unless it must be."""
    view = rules.view(state_of(game), seat)
    came = view["path"][-2] if len(view["path"]) > 1 else None
    here = mazegen.CELL_OF[view["at"]]
    ways = [
        d
        for d in view["open"]
        if mazegen.NAMES[here + mazegen.STEP[d]] != came and here + mazegen.STEP[d] != mazegen.EXIT
    ]
    return ways[0] if ways else an_open_way(game, seat)


def an_open_way(game: Game, seat: int, avoid_exit: bool = True) -> str:
    state = state_of(game)
    view = rules.view(state, seat)
    here = mazegen.CELL_OF[view["at"]]
    for d in view["open"]:
        if not avoid_exit or here + mazegen.STEP[d] != mazegen.EXIT:
            return d
    raise AssertionError("no way on")


def a_wall(game: Game, seat: int) -> str:
    """A direction with a wall across, or (on a crossroads) a move that cannot be read."""
    view = rules.view(state_of(game), seat)
    return next((d for d in "NESW" if d not in view["open"]), "X")


def landed(move: Move) -> int:
    return int(move.outcome["landed_ms"])


def client_for(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


# --- create, join, ready, countdown ----------------------------------------------------------


def test_the_create_form_makes_live_and_slow_races_with_bots() -> None:
    client = client_for(make_player())
    response = client.post(
        "/new/mazerace/", {"race": "live", "seats": "3", "seat_1": "flood", "seat_2": "person"}
    )
    assert response.status_code == 302
    game = Game.objects.latest("pk")
    assert (game.kind, game.clock, game.options) == ("mazerace", "live", {"mode": "live"})
    assert [s.bot for s in game.seats.all()] == ["", "flood", ""]
    response = client.post("/new/mazerace/", {"race": "P30D", "seats": "2", "seat_1": "strong"})
    game = Game.objects.latest("pk")
    assert (game.clock, game.options, game.status) == ("P30D", {"mode": "slow"}, "active")
    client.post("/new/mazerace/", {"race": "P3D", "seats": "2", "seat_1": "person"})
    waiting = Game.objects.latest("pk")
    assert waiting.status == "open"
    # Waiting for a runner, the page already tells the race's clock, not a per-move one.
    page = client.get(f"/games/{waiting.pk}/").content.decode()
    assert "3 days from the start to get out" in page
    assert "for each move" not in page
    page = client.get("/new/mazerace/").content.decode()
    for level in ("wall", "flood", "strong"):
        assert f'value="{level}"' in page


def test_ready_then_a_three_second_countdown_then_the_start() -> None:
    with time_machine.travel(T0, tick=False) as clock:
        game = make_race(2)
        assert game.status == "active" and game.race_starts_at is None
        assert game.race_deadline == T0 + race.READY_WITHIN
        alice, bob = user_of(game, 0), user_of(game, 1)
        with pytest.raises(core.MoveRefused, match="every runner has pressed Ready"):
            step(game, 0, "E")
        page = client_for(alice).get(f"/games/{game.pk}/").content.decode()
        assert 'id="ready"' in page and "Waiting for every runner" in page

        clock.shift(timedelta(seconds=5))
        response = client_for(alice).post(f"/games/{game.pk}/ready", **HTMX)
        assert response.status_code == 200
        game.refresh_from_db()
        assert game.race_starts_at is None
        assert 'id="ready"' not in response.content.decode()

        clock.shift(timedelta(seconds=2))
        race.race_ready(game_id=game.pk, user=bob)
        game.refresh_from_db()
        start = T0 + timedelta(seconds=10)
        assert game.race_starts_at == start
        assert game.race_deadline == start + rules.RACE_LIMIT_MS * MS

        # Everybody sees the countdown, counted by the server.
        for client in (client_for(alice), client_for(make_player()), Client()):
            page = client.get(f"/games/{game.pk}/").content.decode()
            assert 'data-countdown-ms="3000"' in page and "race starts in <span" in page
            assert "every 500ms" in page
        clock.move_to(start - 1 * MS)
        with pytest.raises(core.MoveRefused, match=r"Wait for the start: .* 0\.0 s"):
            step(game, 0, an_open_way(game, 0))
        clock.move_to(start)
        first = step(game, 0, an_open_way(game, 0))
        assert first.outcome["landed_ms"] == 0
        assert first.move["now_ms"] == 0  # the stored move is what the engine replays


def test_bots_are_ready_at_once_and_the_tick_is_queued_for_the_start(
    queued: Queued, django_capture_on_commit_callbacks
) -> None:
    with time_machine.travel(T0, tick=False):
        game = make_race(1, bots=("flood",))
        assert game.seats.get(index=1).ready_at == T0
        assert game.race_starts_at is None
        with django_capture_on_commit_callbacks(execute=True):
            race.race_ready(game_id=game.pk, user=user_of(game, 0))
        ((args, countdown),) = ticks(queued)
    assert args[0] == game.pk and countdown == 3.0


# --- the race clock --------------------------------------------------------------------------


@pytest.fixture
def started() -> Game:
    with time_machine.travel(T0, tick=False):
        game = make_race(2)
        ready_all(game)
    return game


def at(game: Game, ms: int) -> time_machine.travel:
    assert game.race_starts_at is not None
    return time_machine.travel(game.race_starts_at + ms * MS, tick=False)


def test_a_step_asked_for_early_waits_and_a_third_is_refused(started: Game) -> None:
    game = started
    there = an_open_way(game, 0)
    with at(game, 1000):
        assert landed(step(game, 0, there)) == 1000
    back = {"N": "S", "S": "N", "E": "W", "W": "E"}[there]
    with at(game, 1100):
        assert landed(step(game, 0, back)) == 1250  # waits for the last one to land
    with at(game, 1200), pytest.raises(core.MoveRefused, match="already waiting"):
        step(game, 0, there)
    with at(game, 1250):
        assert landed(step(game, 0, there)) == 1500
    with at(game, 4000):
        assert landed(step(game, 0, back)) == 4000
    # The other runner's clock is its own.
    with at(game, 1300):
        assert landed(step(game, 1, an_open_way(game, 1))) == 1300


def test_a_wall_is_refused_with_a_message_and_its_button_is_disabled(started: Game) -> None:
    game = started
    wall = a_wall(game, 0)
    word = rules.WORDS[wall]
    with at(game, 500):
        client = client_for(user_of(game, 0))
        response = client.post(f"/games/{game.pk}/move", {"step": "0", "dir": wall}, **HTMX)
    assert response.status_code == 409
    page = response.content.decode()
    # Under the maze, where the runner looks, for the page with JavaScript or without; not in
    # the error line above the runners, off a phone's screen while steering.
    note = f'<p class="error" id="steer-note" role="alert">There is a wall to the {word}.</p>'
    assert page.count(f"There is a wall to the {word}.") == 1 and note in page
    assert '<div id="error-line"></div>' in page
    with at(game, 500):
        whole = client.post(f"/games/{game.pk}/move", {"step": "0", "dir": wall})
    assert whole.status_code == 409 and note in whole.content.decode()
    button = (
        rf'value="{wall}" id="step-{wall}" class="dir dir-{wall}" aria-label="Step {word}" disabled'
    )
    assert re.search(button, page)
    assert not Move.objects.filter(game=game).exists()


def test_a_step_with_a_stale_ply_is_fine_in_a_race(started: Game) -> None:
    game = started
    with at(game, 0):
        step(game, 1, an_open_way(game, 1))
        client = client_for(user_of(game, 0))
        response = client.post(
            f"/games/{game.pk}/move", {"step": "0", "dir": an_open_way(game, 0)}, **HTMX
        )
    assert response.status_code == 200
    assert Move.objects.filter(game=game, seat=0).count() == 1


def run_out(game: Game, seat: int, start_ms: int) -> int:
    """The runner walks the shortest way out, one step every 250 ms from `start_ms`; returns
    the landing time on the exit."""
    ms = start_ms
    for direction in way_out(game, seat):
        with at(game, ms):
            last = step(game, seat, direction)
        ms += rules.STEP_MS
    assert last.outcome["at"] == "o15"
    return landed(last)


@pytest.mark.parametrize("closer", ["task", "sweep"])
def test_the_30_second_deadline_after_the_first_exit_closes_the_race_exactly(
    started: Game, closer: str
) -> None:
    game = started
    with at(game, 0):
        step(game, 1, an_open_way(game, 1))  # bob covers two cells
    out = run_out(game, 0, 100)
    deadline = out + rules.CLOSE_AFTER_MS
    game.refresh_from_db()
    assert game.race_deadline == game.race_starts_at + deadline * MS
    with at(game, out + 1000):
        page = client_for(user_of(game, 1)).get(f"/games/{game.pk}/").content.decode()
    assert 'id="deadline"' in page and '<span class="left">29</span> s left' in page

    def close() -> None:
        if closer == "task":
            race.race_tick(game_id=game.pk, token="")
        else:
            sweeps.paces_sweep()

    # A step that would land after the deadline is refused.
    with at(game, deadline - 100):
        there = an_open_way(game, 1, avoid_exit=False)
        assert landed(step(game, 1, there)) == deadline - 100
    with at(game, deadline - 50), pytest.raises(core.MoveRefused, match="after the deadline"):
        step(game, 1, an_open_way(game, 1, avoid_exit=False))
    with at(game, deadline - 1):
        close()
        assert state_of(game)["result"] is None
    with at(game, deadline):
        close()
    game.refresh_from_db()
    assert game.status == "finished" and game.result_reason == "exit"
    assert game.finished_at == game.race_starts_at + deadline * MS
    assert game.race_deadline is None
    assert dict(game.seats.values_list("index", "place")) == {0: 1, 1: 2}
    with at(game, deadline + 5000):
        close()  # once
    assert Game.objects.get(pk=game.pk).version == game.version
    # The replay closes the race after its last move only: before that, bob is in his fog.
    replay = Client().get(f"/games/{game.pk}/replay/?view=seat1&ply=1").content.decode()
    assert 0 < replay.count('class="cell seen') < 225 and "The whole maze" in replay
    assert "<caption>The maze as far as this runner had seen it" in replay
    last = f"/games/{game.pk}/replay/?view=seat1&ply={game.ply}"
    end = Client().get(last).content.decode()
    assert end.count('class="cell seen') == 225


def test_a_race_with_nobody_out_ends_after_ten_minutes_by_cells_covered(started: Game) -> None:
    game = started
    with at(game, 0):
        step(game, 0, an_open_way(game, 0))
    with at(game, 300):
        step(game, 0, an_open_way(game, 0))
    limit = rules.RACE_LIMIT_MS
    with at(game, limit - 1):
        sweeps.paces_sweep()
        assert Game.objects.get(pk=game.pk).status == "active"
    with at(game, limit):
        sweeps.paces_sweep()
    game.refresh_from_db()
    assert (game.status, game.result_reason) == ("finished", "deadline")
    assert game.finished_at == game.race_starts_at + limit * MS
    covered = [r["covered"] for r in game.state["runners"]]
    assert covered[0] > covered[1] == 1
    assert dict(game.seats.values_list("index", "place")) == {0: 1, 1: 2}


def test_equal_landings_share_first_place(started: Game) -> None:
    game = started
    route = way_out(game, 0)
    for n, direction in enumerate(route):
        for seat in (0, 1):
            with at(game, 40 + n * rules.STEP_MS):
                step(game, seat, direction)
    game.refresh_from_db()
    assert game.status == "finished"
    assert dict(game.seats.values_list("index", "place")) == {0: 1, 1: 1}
    page = Client().get(f"/games/{game.pk}/").content.decode()
    assert page.count('<td class="place">1</td>') == 2


def test_resign_puts_a_runner_out_where_it_stands(started: Game) -> None:
    game = started
    with at(game, 0):
        step(game, 1, an_open_way(game, 1))
        response = client_for(user_of(game, 1)).post(f"/games/{game.pk}/resign", **HTMX)
    assert response.status_code == 200
    strip = state_of(game)
    assert strip["runners"][1]["out"] == "resign" and strip["result"] is None
    assert "resign" not in response.content.decode().split('id="strip"')[1].split("</ol>")[0]
    run_out(game, 0, 500)
    game.refresh_from_db()
    assert game.status == "finished"
    assert dict(game.seats.values_list("index", "place")) == {0: 1, 1: 2}


# --- bots on the race clock ------------------------------------------------------------------


def test_a_bot_steps_every_250_ms_from_the_start_and_the_tick_closes_the_race() -> None:
    with time_machine.travel(T0, tick=False):
        game = make_race(1, bots=("flood",))
        ready_all(game)
    with at(game, -1):
        assert race.race_advance(game_id=game.pk) == race.TICK_MIN_SECONDS
    with at(game, 2010):
        delay = race.race_advance(game_id=game.pk)
    steps = list(Move.objects.filter(game=game, seat=1).order_by("ply"))
    assert [landed(m) for m in steps] == [i * 250 for i in range(9)]
    assert [m.move["now_ms"] for m in steps] == [i * 250 for i in range(9)]
    assert delay == pytest.approx(0.24)
    # A late tick catches up: the bot's steps land at its own pace, not the worker's.
    with at(game, 120_000):
        assert race.race_advance(game_id=game.pk) is None
    game.refresh_from_db()
    bot = game.state["runners"][1]
    assert bot["out"] == "exit"
    times = [landed(m) for m in Move.objects.filter(game=game, seat=1).order_by("ply")]
    assert times == [i * 250 for i in range(bot["steps"])]
    assert game.status == "finished" and game.result_reason == "exit"
    assert game.finished_at == game.race_starts_at + (times[-1] + rules.CLOSE_AFTER_MS) * MS
    assert dict(game.seats.values_list("index", "place")) == {0: 2, 1: 1}


def test_the_tick_chain_requeues_itself_and_a_second_chain_stops(queued: Queued) -> None:
    with time_machine.travel(T0, tick=False):
        game = make_race(1, bots=("wall",))
        ready_all(game)
        race.tick_chain_start(game.pk, delay=3.0)
        (args, countdown) = ticks(queued)[-1]
    assert countdown == 3.0
    with at(game, 100):
        race.race_tick(game_id=game.pk, token=args[1])
        (args2, countdown2) = ticks(queued)[-1]
        assert args2 == args and 0.05 <= countdown2 <= 0.5
        sent = len(ticks(queued))
        race.race_tick(game_id=game.pk, token="another chain")
        assert len(ticks(queued)) == sent  # the other chain stops
    # A lost chain: the sweep starts a new one.
    from django.core.cache import cache

    cache.delete(race._tick_key(game.pk))
    with at(game, 20_000):
        assert sweeps.paces_sweep() == 1
        assert ticks(queued)[-1][0][1] != args[1]


def test_a_race_whose_runners_do_not_all_press_ready_is_aborted() -> None:
    with time_machine.travel(T0, tick=False):
        game = make_race(2)
        race.race_ready(game_id=game.pk, user=user_of(game, 0))
    with time_machine.travel(T0 + race.READY_WITHIN - MS, tick=False):
        assert sweeps.paces_sweep() == 0
    with time_machine.travel(T0 + race.READY_WITHIN, tick=False):
        assert sweeps.paces_sweep() == 1
    game.refresh_from_db()
    assert game.status == "aborted" and game.race_deadline is None
    for url in (f"/games/{game.pk}/", f"/games/{game.pk}/replay/"):
        assert "not every runner pressed Ready" in Client().get(url).content.decode(), url


def test_polling_is_fast_while_racing_and_stops_at_the_end(started: Game) -> None:
    game = started
    client = Client()
    page = client.get(f"/games/{game.pk}/").content.decode()
    assert 'hx-trigger="every 500ms"' in page
    poll = client.get(f"/games/{game.pk}/?since={game.version}", **HTMX)
    assert poll.status_code == 204
    run_out(game, 0, 0)
    run_out(game, 1, 0)
    game.refresh_from_db()
    poll = client.get(f"/games/{game.pk}/?since={game.version - 1}", **HTMX)
    assert poll.status_code == 200 and "every 500ms" not in poll.content.decode()
    assert client.get(f"/games/{game.pk}/?since={game.version}", **HTMX).status_code == 286


# --- the slow race ---------------------------------------------------------------------------


def test_a_slow_race_fewest_steps_wins_and_every_seat_has_its_own_deadline() -> None:
    with time_machine.travel(T0, tick=False):
        game = make_race(3, clock="P3D")
        deadline = T0 + timedelta(days=3)
        assert [s.deadline for s in game.seats.all()] == [deadline] * 3
        # Every runner was told it may step, and will be reminded, each once.
        assert Reminder.objects.filter(seat__game=game).count() == 3
        assert Outbox.objects.filter(game=game, kind="your_turn").count() == 3
        route = way_out(game, 0)
        detour = an_open_way(game, 1)
        back = {"N": "S", "S": "N", "E": "W", "W": "E"}[detour]
        for direction in [detour, back, *route]:
            step(game, 1, direction)  # two steps more
        for direction in route:
            step(game, 0, direction)
        game.refresh_from_db()
        assert game.status == "active"
        assert game.seats.get(index=0).deadline is None
        assert game.seats.get(index=2).deadline == deadline
        assert Reminder.objects.filter(seat__game=game).count() == 1
        assert Move.objects.filter(game=game).first().outcome["landed_ms"] is None
    with time_machine.travel(deadline, tick=False):
        with pytest.raises(core.MoveRefused, match="Your time to get out has run out"):
            step(game, 2, an_open_way(game, 2))
        sweeps.deadlines_sweep()
    game.refresh_from_db()
    assert game.status == "finished"
    assert dict(game.seats.values_list("index", "place")) == {0: 1, 1: 2, 2: 3}
    assert record_verify(record_build(game, viewer_seat=None)) == []


def test_a_slow_race_mails_say_the_race_has_started_and_remind_of_the_way_out() -> None:
    with time_machine.travel(T0, tick=False):
        game = make_race(3, clock="P3D")
        for row in Outbox.objects.filter(game=game):
            assert outbox.outbox_send(outbox_id=row.pk) == "sent"
        lobby = client_for(user_of(game, 0)).get("/").content.decode()
    assert "in the maze · 3 days, 0:00:00 left" in lobby and "your move" not in lobby
    assert len(mail.outbox) == 3
    for message in mail.outbox:
        assert message.subject == f"Your race has started: Maze Race #{game.pk}"
        assert "step through the maze at your own pace" in message.body
        assert "You have 3 days, 0:00:00 to get out" in message.body
        assert "A runner still in the maze then is out where it stands." in message.body
        assert "for this move" not in message.body and "loses" not in message.body
    mail.outbox.clear()
    with time_machine.travel(T0 + timedelta(days=3) * 4 / 5, tick=False):
        assert sweeps.reminders_sweep() == 3
        for row in Outbox.objects.filter(game=game, kind="reminder"):
            assert outbox.outbox_send(outbox_id=row.pk) == "sent"
    assert len(mail.outbox) == 3
    for message in mail.outbox:
        assert message.subject == (
            f"Reminder: 14:24:00 left to get out of the maze in Maze Race #{game.pk}"
        )
        assert "you are still in the maze" in message.body
        assert "out where it stands" in message.body and "dropped" not in message.body


def test_a_slow_race_with_bots_plays_them_one_step_at_a_time() -> None:
    with time_machine.travel(T0, tick=False):
        game = make_race(1, bots=("flood",), clock="P30D")
    assert game.seats.get(index=1).deadline == T0 + timedelta(days=30)
    for _ in range(400):
        game.refresh_from_db()
        if game.state["runners"][1]["out"]:
            break
        core.bot_turn_play(game_id=game.pk, ply=game.ply)
    assert game.state["runners"][1]["out"] == "exit"
    assert game.status == "active"  # the person still has its 30 days
    # The bot's steps are the number to beat; it has no place until the person is out too.
    steps = game.state["runners"][1]["steps"]
    page = client_for(user_of(game, 0)).get(f"/games/{game.pk}/").content.decode()
    assert f"{steps} steps</span>, <strong>out</strong></li>" in page
    assert "(place" not in page


# --- the hint --------------------------------------------------------------------------------


def test_the_hint_only_in_a_race_with_a_bot(started: Game) -> None:
    with at(started, 10):
        response = client_for(user_of(started, 0)).post(f"/games/{started.pk}/hint", **HTMX)
    assert response.status_code == 409
    assert "only for races with a bot" in response.content.decode()
    assert 'id="hint"' not in response.content.decode()

    with time_machine.travel(T0, tick=False):
        game = make_race(1, bots=("wall",))
        ready_all(game)
    client = client_for(user_of(game, 0))
    with at(game, 10):
        response = client.post(f"/games/{game.pk}/hint", **HTMX)
    page = response.content.decode()
    assert response.status_code == 200
    expected = race.race_hint(game=game, seat_index=0)
    assert f"would go <strong>{rules.WORDS[expected['dir']]}</strong>" in page
    assert 'id="hint-route"' in page
    # The hint goes with the runner's next step.
    with at(game, 20):
        client.post(f"/games/{game.pk}/move", {"step": "0", "dir": expected["dir"]}, **HTMX)
        assert 'id="hint-route"' not in client.get(f"/games/{game.pk}/").content.decode()
    # Spectators get no hint.
    with at(game, 30):
        response = client_for(make_player()).post(f"/games/{game.pk}/hint", **HTMX)
    assert response.status_code == 409


# --- the record ------------------------------------------------------------------------------


def test_a_finished_live_race_records_and_verifies_from_its_seed() -> None:
    with time_machine.travel(T0, tick=False):
        game = make_race(1, bots=("strong",))
        ready_all(game)
    with at(game, 700):
        step(game, 0, an_open_way(game, 0))
        during = record_build(game, viewer_seat=0)
        assert during["seed"] is None and during["initial"] == {}
        assert {m["seat"] for m in during["moves"]} == {0}
        assert during["moves"][0]["move"] == {"dir": during["moves"][0]["move"]["dir"]}
    with at(game, 200_000):
        race.race_advance(game_id=game.pk)
    game.refresh_from_db()
    assert game.status == "finished"
    record = json.loads(Client().get(f"/games/{game.pk}/record.json").content)
    assert record["seed"] == game.seed_hex
    maze, _ = mazegen.maze_from_seed(bytes.fromhex(record["seed"]))
    assert record["initial"] == {"size": 15, "open": mazegen.encode(maze)}
    assert all(set(m["move"]) <= {"dir", "resign", "timeout"} for m in record["moves"])
    assert all(set(m["outcome"]) == {"at", "landed_ms"} for m in record["moves"])
    assert record["result"]["places"] == [2, 1]
    assert record_verify(record) == []

    # A step that claims to land sooner than 250 ms after the runner's last one does not.
    quick = json.loads(json.dumps(record))
    bot_steps = [m for m in quick["moves"] if m["seat"] == 1]
    bot_steps[1]["outcome"]["landed_ms"] = bot_steps[0]["outcome"]["landed_ms"] + 100
    assert "Move 3: the outcome is not" in " ".join(record_verify(quick))
    other = json.loads(json.dumps(record))
    other["initial"]["open"][3] = "0" * 15
    assert "starting position" in " ".join(record_verify(other))


def test_manage_verify_rebuilds_a_race_from_its_seed(tmp_path) -> None:
    with time_machine.travel(T0, tick=False):
        game = make_race(1, bots=("flood",))
        ready_all(game)
    with at(game, 100_000):
        race.race_advance(game_id=game.pk)
    game.refresh_from_db()
    path = tmp_path / "race.json"
    path.write_text(json.dumps(record_build(game, viewer_seat=None)))
    out = io.StringIO()
    call_command("verify", str(path), stdout=out)
    assert out.getvalue().startswith("OK: mazerace game") and "checks out" in out.getvalue()


def test_selfplay_races_bots_on_the_same_maze_and_reports_steps(tmp_path) -> None:
    out = io.StringIO()
    call_command(
        "selfplay",
        "mazerace",
        "--games",
        "2",
        "--seats",
        "3",
        "--bots",
        "wall,flood,strong",
        "--out",
        str(tmp_path),
        stdout=out,
    )
    text = out.getvalue()
    assert "2 games of Maze Race, 3 seats" in text
    for level in ("wall", "flood", "strong"):
        assert re.search(rf"{level}: won \d+ of 2 seats played .*, [\d.]+ steps a seat", text)
    for f in tmp_path.glob("mazerace-*.json"):
        assert record_verify(json.loads(f.read_text())) == []


# --- privacy ---------------------------------------------------------------------------------

SEGMENT = re.compile(r"M(\d+) (\d+)([hv])(\d+)")


def wall_cells(d: str) -> list[set[str]]:
    """For each wall segment of the board's wall path: the cells on either side of it."""
    from games.ui.mazerace import CELL, MARGIN

    found = []
    for x, y, axis, _ in SEGMENT.findall(d):
        col, row = (int(x) - MARGIN) // CELL, (int(y) - MARGIN) // CELL
        sides = [(row, col), (row - 1, col)] if axis == "h" else [(row, col), (row, col - 1)]
        found.append(
            {
                mazegen.cell_name(r * mazegen.SIZE + c)
                for r, c in sides
                if 0 <= r < mazegen.SIZE and 0 <= c < mazegen.SIZE
            }
        )
    return found


def check_sent(
    body: str, state: dict[str, Any], viewer: int | None, what: str, board: bool = True
) -> None:
    """What one response sent to one viewer holds nothing of the maze it has not seen; a
    runner's board (if the page has one) shows exactly the cells it has seen."""
    assert state["seed"] not in body, what
    for row in state["maze"]:
        assert row not in body, what
    maze = rules.maze_of(state)
    cells = dict(re.findall(r'data-cell="([a-o]\d+)" data-open="(\d+)"', body))
    assert body.count("data-open=") == len(cells), what
    runners = set(re.findall(r'data-runner="(\d+)"', body))
    paths = re.findall(r'data-seat="(\d+)" data-path="([^"]*)"', body)
    walls = re.findall(r'class="walls" d="([^"]*)"', body)
    if viewer is None:
        assert not cells and not runners and not paths and not walls, what
        return
    runner = state["runners"][viewer]
    seen = set(runner["seen"])
    assert set(cells) == seen if board else set(cells) <= seen, what
    for name, bits in cells.items():
        assert int(bits) == maze[mazegen.CELL_OF[name]], what
    assert runners <= {str(viewer)}, what
    assert paths in ([], [(str(viewer), " ".join(runner["path"]))]), what
    for d in walls:
        for sides in wall_cells(d):
            assert sides & seen, what


def check_record(body: str, state: dict[str, Any], viewer: int | None, what: str) -> None:
    record = json.loads(body)
    assert record["seed"] is None and record["initial"] == {}, what
    assert all(m["seat"] == viewer for m in record["moves"]), what
    assert all("now_ms" not in m["move"] for m in record["moves"]), what
    assert state["seed"] not in body


def random_race(n: int) -> tuple[Game, list[Client], Client, Client, dict[str, Any]]:
    """Three people and a bot, part of the way through a race."""
    rng = random.Random(n)
    with time_machine.travel(T0, tick=False):
        game = make_race(3, bots=("flood",))
        ready_all(game)
    clients = [client_for(user_of(game, seat)) for seat in range(3)]
    ms = 0
    for _ in range(rng.randrange(0, 30)):
        seat = rng.randrange(3)
        state = state_of(game)
        view = rules.view(state, seat)
        here = mazegen.CELL_OF[view["at"]]
        ways = [d for d in view["open"] if here + mazegen.STEP[d] != mazegen.EXIT]
        ms += rng.choice([0, 50, 250, 400])
        # A step refused because one is already waiting is part of the game too.
        with at(game, ms), contextlib.suppress(core.MoveRefused):
            step(game, seat, rng.choice(ways))
    with at(game, ms):
        race.race_advance(game_id=game.pk)
    state = state_of(game)
    assert state["result"] is None
    return game, clients, client_for(make_player()), Client(), state


@pytest.mark.parametrize("n", range(16))
def test_no_response_tells_a_viewer_anything_it_has_not_seen(n: int) -> None:
    game, runners, spectator, anonymous, state = random_race(n)
    old = game.version - 1
    wall = {seat: a_wall(game, seat) for seat in range(3)}
    roles: list[tuple[Client, int | None, str]] = [
        *[(client, seat, f"runner {seat}") for seat, client in enumerate(runners)],
        (spectator, None, "spectator"),
        (anonymous, None, "anonymous"),
    ]
    url = f"/games/{game.pk}"
    with at(game, 20_000):
        for client, seat, role in roles:
            sent = {
                "page": client.get(f"{url}/"),
                "partial": client.get(f"{url}/", **HTMX),
                "poll": client.get(f"{url}/?since={old}", **HTMX),
                "draft": client.post(f"{url}/draft", {"action": "hint"}, **HTMX),
                "hint": client.post(f"{url}/hint", **HTMX),
                "ready": client.post(f"{url}/ready", **HTMX),
                "wall": client.post(
                    f"{url}/move", {"step": "0", "dir": wall.get(seat or 0, "N")}, **HTMX
                ),
                "rules": client.get("/rules/mazerace/"),
                "lobby": client.get("/"),
                "replay": client.get(f"{url}/replay/"),
                "player": client.get(f"/players/{user_of(game, 0).username}/"),
            }
            for name, response in sent.items():
                assert response.status_code in {200, 302, 409}, (role, name, response.status_code)
                board = name not in {"rules", "lobby", "replay", "player"}
                check_sent(response.content.decode(), state, seat, f"{role}: {name}", board)
            record = client.get(f"{url}/record.json").content.decode()
            check_record(record, state, seat, f"{role}: record")
        # The hint is there for the runners, and nothing else changed: no step was taken.
        assert 'id="hint-route"' in runners[0].get(f"{url}/").content.decode()
        assert state_of(game) == state


NORMALISE = [
    (re.compile(r'name="csrfmiddlewaretoken" value="[^"]*"'), "CSRF"),
    (re.compile(r'"X-CSRFToken": "[^"]*"'), "CSRF"),
]


def normalised(body: str, game: Game) -> str:
    for pattern, replacement in NORMALISE:
        body = pattern.sub(replacement, body)
    body = body.replace(f"/games/{game.pk}/", "/games/ID/").replace(f"#{game.pk}", "#ID")
    return body.replace(f'"id": "{game.pk}"', '"id": "ID"')


@pytest.mark.parametrize("n", range(3))
def test_what_a_viewer_is_sent_does_not_depend_on_where_the_others_are(n: int) -> None:
    """Two races on the same maze, by the same people, at the same times: bob walks a
    different way in each. Alice, a spectator and an anonymous visitor get the same pages."""
    seed = random.Random(n).randbytes(32)
    alice, bob = make_player(), make_player()
    games = []
    for walk in ("on", "to and fro"):
        with time_machine.travel(T0, tick=False):
            game = core.game_create(
                kind="mazerace",
                creator=alice,
                options={"mode": "live"},
                clock_choice="live",
                seats=[core.SeatPlan(), core.SeatPlan()],
            )
            Game.objects.filter(pk=game.pk).update(
                seed=seed, seed_sha256=hashlib.sha256(seed).hexdigest()
            )
            core.game_join(game_id=game.pk, user=bob)
            game.refresh_from_db()
            ready_all(game)
        first = an_open_way(game, 1)
        back = {"N": "S", "S": "N", "E": "W", "W": "E"}[first]
        for i in range(8):
            with at(game, 300 * i):
                if walk == "on":
                    step(game, 1, forward_way(game, 1))
                else:
                    step(game, 1, first if i % 2 == 0 else back)
            with at(game, 300 * i + 10):
                step(game, 0, first if i % 2 == 0 else back)
        game.refresh_from_db()
        games.append(game)
    assert games[0].state["runners"][1]["path"] != games[1].state["runners"][1]["path"]
    assert games[0].state["runners"][0] == games[1].state["runners"][0]
    spectator, anonymous = client_for(make_player()), Client()
    for client in (client_for(alice), spectator, anonymous):
        pages = []
        for game in games:
            with at(game, 5000):
                pages.append(
                    [
                        normalised(client.get(f"/games/{game.pk}/").content.decode(), game),
                        normalised(
                            client.get(f"/games/{game.pk}/record.json").content.decode(), game
                        ),
                    ]
                )
        assert pages[0] == pages[1]


def test_the_steering_buttons_work_without_javascript(started: Game) -> None:
    game = started
    client = client_for(user_of(game, 0))
    there = an_open_way(game, 0)
    with at(game, 10):
        response = client.post(f"/games/{game.pk}/move", {"step": "0", "dir": there})
    assert response.status_code == 302 and response["Location"] == f"/games/{game.pk}/"
    assert state_of(game)["runners"][0]["steps"] == 1
    back = {"N": "S", "S": "N", "E": "W", "W": "E"}[there]
    with at(game, 20):
        page = client.get(response["Location"]).content.decode()
        assert f'<form method="post" action="/games/{game.pk}/move"' in page
        assert 'data-landed-in="0"' in page  # landed at 10 ms: the next may go
        client.post(f"/games/{game.pk}/move", {"step": "1", "dir": back})
        page = client.get(response["Location"]).content.decode()
    assert 'data-landed-in="240"' in page  # it lands at 260 ms: the next goes then


def test_a_race_time_is_never_broken_before_its_unit() -> None:
    assert seconds(12250) == "12.25\u00a0s"


def test_a_step_after_the_race_closed_says_so(started: Game) -> None:
    """A runner's key pressed as the race closes is refused in the race's words, not as a
    mistake: "The game is over." read as an alarm over the results."""
    Game.objects.filter(pk=started.pk).update(status=Game.Status.FINISHED)
    started.refresh_from_db()
    with pytest.raises(core.MoveRefused, match=r"^The race closed before this step\.$"):
        step(started, 0, an_open_way(started, 0))
