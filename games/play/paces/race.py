"""Live races (Maze Race run "live"): Ready, the countdown, the race clock, the bots' steps and
the close at the deadline. The engine keeps the race's time in milliseconds after the start;
this module is where that time comes from.

- Every person presses Ready (bots are ready at once). When the last runner still in has, the
  race starts COUNTDOWN later, the same instant for everybody: `Game.race_starts_at`.
- A person's step is given `now_ms`, the milliseconds from the start to `clock.now()`, when it
  reaches the service; the engine decides when it lands (at most one step every 250 ms, at most
  one waiting). A step before the start is refused.
- Bots run on the race clock, decided here: `race_advance` gives each bot runner every step
  whose landing time (its last landing + 250 ms, or the start) has come, from the bot's own
  view, with `now_ms` = that landing time. So a bot runs at the fixed speed however late the
  worker gets to it. `race_advance` also closes the race at the engine's `deadline_ms`.
- `race_advance` runs from a chain of short Celery tasks (`tasks.race_tick`), each queueing the
  next a fraction of a second later, and from the beat's sweep for any race whose deadline has
  passed or whose chain was lost. It works under the game's lock and only on what has fallen
  due, so any number of runs at any time give the same race.

`Game.race_deadline` is when the site must act on a live race: the engine's deadline once the
race is on (10 minutes, or 30 s after the first runner is out), or, before the start, the time
by which every runner must have pressed Ready (else the race is aborted).
"""

from __future__ import annotations

import hashlib
import logging
import random
import secrets
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import User
from django.core.cache import cache
from django.db import transaction

from games import clock, live, queueing
from games.bots import get_bot
from games.bots import mazerace as race_bots
from games.engines import mazerace as rules
from games.engines.base import JSON, Result
from games.models import ABORTED_ON_TIME, Clock, Game, Seat, json_safe
from games.play import core, pacing

logger = logging.getLogger(__name__)

KIND = rules.SLUG
COUNTDOWN = timedelta(seconds=3)
READY_WITHIN = timedelta(minutes=10)  # Ready by then, or the race is aborted
MS = timedelta(milliseconds=1)
# The tick chain: the next tick when the next step or the deadline is due, within these bounds.
TICK_MIN_SECONDS = 0.05
TICK_MAX_SECONDS = 0.5
# A chain whose tick has not run for this long counts as lost; the sweep starts a new one.
TICK_ALIVE_SECONDS = 5


def is_live(game: Game) -> bool:
    return game.kind == KIND and game.clock == Clock.LIVE


def race_ms(game: Game, now: datetime) -> int:
    """Milliseconds from the start of the race to `now` (negative during the countdown)."""
    assert game.race_starts_at is not None
    return (now - game.race_starts_at) // MS


def has_bot(seats: list[Seat]) -> bool:
    return any(s.bot for s in seats)


# --- Ready and the start ---------------------------------------------------------------------


def ready_phase_begin(game: Game) -> None:
    """The seats are all taken (core, as the game starts): bots are ready at once; the persons have
    READY_WITHIN to press Ready. Inside the service's transaction."""
    now = clock.now()
    game.seats.exclude(bot="").update(ready_at=now)
    game.race_deadline = now + READY_WITHIN
    _start_when_ready(game, now)
    game.save(update_fields=["race_starts_at", "race_deadline", "version"])
    live.publish_on_commit(game)


def race_ready(*, game_id: int, user: User) -> Seat:
    """A runner is ready; when the last runner still in is, the countdown begins. Pressing
    Ready twice is fine."""
    with transaction.atomic():
        game = core.game_locked(game_id)
        seat = game.seats.filter(user=user).first()
        if seat is None:
            raise core.GameError("You have no seat in this race.")
        if not is_live(game):
            raise core.GameError("Only a live race waits for its runners to be ready.")
        if game.status == Game.Status.OPEN:
            raise core.GameError("The race is still waiting for runners to join.")
        if game.status != Game.Status.ACTIVE:
            raise core.GameError("The race is over.")
        if seat.ready_at is None and game.race_starts_at is None:
            now = clock.now()
            seat.ready_at = now
            seat.save(update_fields=["ready_at"])
            game.version += 1
            _start_when_ready(game, now)
            game.save(update_fields=["race_starts_at", "race_deadline", "version"])
            live.publish_on_commit(game)
    return seat


def _start_when_ready(game: Game, now: datetime) -> None:
    """If every runner still in is ready, the race starts COUNTDOWN from now and the tick
    chain is queued for that instant. Changes `game` without saving it."""
    assert game.state is not None
    if game.race_starts_at is not None or game.status != Game.Status.ACTIVE:
        return
    runners = game.state["runners"]
    waiting = [
        s for s in game.seats.all() if s.ready_at is None and runners[s.index]["out"] is None
    ]
    if waiting:
        return
    game.race_starts_at = now + COUNTDOWN
    game.race_deadline = _deadline_at(game)
    game.version += 1
    game_id = game.pk
    transaction.on_commit(lambda: tick_chain_start(game_id, delay=COUNTDOWN.total_seconds()))


def _deadline_at(game: Game) -> datetime | None:
    """When the running race must be closed, from the engine's deadline."""
    assert game.state is not None and game.race_starts_at is not None
    deadline = rules.deadline_ms(game.state)
    return None if deadline is None else game.race_starts_at + deadline * MS


# --- steps (called by core.move_play, under the lock) -----------------------------------------


def live_move(game: Game, move: JSON, *, now: datetime, at_ms: int | None) -> JSON:
    """The step with the race clock added: `now_ms` is `at_ms` (a bot's landing time) or the
    time since the start. Any `now_ms` a caller put in is replaced. Leaving moves pass."""
    if "resign" in move or "timeout" in move:
        return move
    if game.race_starts_at is None:
        raise core.MoveRefused(
            "The race has not started: it starts when every runner has pressed Ready."
        )
    now_ms = race_ms(game, now) if at_ms is None else at_ms
    if now_ms < 0:
        seconds = -now_ms / 1000
        raise core.MoveRefused(f"Wait for the start: the race starts in {seconds:.1f} s.")
    return {**move, "now_ms": now_ms}


def race_after_move(game: Game) -> None:
    """After a move in a live race (without saving): the race's deadline follows the engine's
    (it comes forward when the first runner gets out), and a resignation in the ready phase
    may leave everybody still in ready."""
    if game.race_starts_at is None:
        if game.status == Game.Status.ACTIVE:
            _start_when_ready(game, clock.now())
        else:
            game.race_deadline = None
        return
    game.race_deadline = _deadline_at(game) if game.status == Game.Status.ACTIVE else None


class LiveClock(pacing.Pace):
    """The pace of a live race (games/play/pacing.py): its runners press Ready, then step on
    the race's clock, its bots too (race_advance), not by turns; the beat's sweep closes it at
    its deadline."""

    name = "live race"
    bots_by_turn = False
    ends_in_batch = False  # its last move changes its deadline (`moved`)

    def claims(self, game: Game) -> bool:
        return is_live(game)

    def started(self, game: Game) -> None:
        ready_phase_begin(game)

    def stamped(self, game: Game, move: JSON, *, now: datetime, at_ms: int | None) -> JSON:
        return live_move(game, move, now=now, at_ms=at_ms)

    def moved(self, game: Game) -> None:
        race_after_move(game)
        # Every step, bot's or person's, and every end: the events server hears of it.
        live.publish_on_commit(game)

    def sweep(self, *, now: datetime, limit: int) -> int:
        return races_sweep(now=now, limit=limit)


LIVE_CLOCK = pacing.register(LiveClock())


# --- the race clock: bots' steps and the close -------------------------------------------------


def race_advance(*, game_id: int) -> float | None:
    """Everything that has fallen due in a live race, under its lock: every bot step whose
    landing time has come (in landing order), then the close if the deadline has passed; or,
    before the start, the abort of a race whose runners did not all press Ready in time.
    Returns the seconds until something is due again, None when the race needs no more ticks."""
    with transaction.atomic():
        game = Game.objects.select_for_update().filter(pk=game_id).first()
        if game is None or not is_live(game) or game.status != Game.Status.ACTIVE:
            return None
        now = clock.now()
        if game.race_starts_at is None:
            if game.race_deadline is not None and game.race_deadline <= now:
                core.game_end(game, at=now, reason=ABORTED_ON_TIME, places=None)
                game.save()
                live.publish_on_commit(game)
            return None
        now_ms = race_ms(game, now)
        if now_ms < 0:
            return _tick_delay(-now_ms)
        _bots_step(game, now_ms)
        if game.status == Game.Status.ACTIVE:
            assert game.state is not None
            deadline = rules.deadline_ms(game.state)
            if deadline is not None and now_ms >= deadline:
                _close(game, deadline)
                live.publish_on_commit(game)
        if game.status != Game.Status.ACTIVE:
            return None
        return _tick_delay(_next_due_ms(game) - now_ms)


def _tick_delay(ms: int) -> float:
    return min(TICK_MAX_SECONDS, max(TICK_MIN_SECONDS, ms / 1000))


def _next_landing(runner: JSON) -> int:
    last = runner["landed_ms"]
    return 0 if last is None else int(last) + rules.STEP_MS


def _next_due_ms(game: Game) -> int:
    assert game.state is not None
    runners = game.state["runners"]
    due = [
        _next_landing(runners[s.index])
        for s in game.seats.all()
        if s.bot and runners[s.index]["out"] is None
    ]
    deadline = rules.deadline_ms(game.state)
    if deadline is not None:
        due.append(deadline)
    return min(due)


def _bots_step(game: Game, now_ms: int) -> None:
    """Every bot step that has landed by `now_ms` and not after the deadline, earliest first,
    each from its bot's own view."""
    seats = {s.index: s for s in game.seats.all()}
    bots = {i for i, s in seats.items() if s.bot}
    while bots and game.status == Game.Status.ACTIVE:
        assert game.state is not None
        state = game.state
        deadline = rules.deadline_ms(state)
        due = [
            (landing, i)
            for i in bots
            if state["runners"][i]["out"] is None
            and (landing := _next_landing(state["runners"][i])) <= now_ms
            and (deadline is None or landing <= deadline)
        ]
        if not due:
            return
        landing, index = min(due)
        seat = seats[index]
        view = rules.view(state, index)
        rng = random.Random(
            hashlib.sha256(f"{game.seed_sha256}:{game.ply}:{index}".encode()).digest()
        )
        try:
            with transaction.atomic():
                move = get_bot(KIND, seat.bot)(view, index, rng)
                number = core.move_number(game, index)
                core.move_play(game, seat, number, move, at_ms=landing)
        except Exception:
            # A bot that cannot step must not stop the race: it resigns where it stands.
            logger.exception("the %s bot of game %s seat %s failed", seat.bot, game.pk, index)
            game.refresh_from_db()
            if game.status == Game.Status.ACTIVE:
                number = core.move_number(game, index)
                core.move_play(game, seat, number, {"resign": True}, by_site=True)
            bots.discard(index)


def _close(game: Game, deadline_ms: int) -> None:
    """The deadline has passed: the runners still in are placed by cells covered. The race
    closed at its deadline, whenever the site got to it."""
    assert game.state is not None and game.race_starts_at is not None
    game.state = json_safe(rules.close(game.state, deadline_ms))
    result = rules.result(game.state)
    assert result is not None
    _finish(game, result, at=game.race_starts_at + deadline_ms * MS)


def _finish(game: Game, result: Result, *, at: datetime) -> None:
    core.game_end(game, at=at, reason=result.reason, places=result.places)
    game.save()


# --- the tick chain --------------------------------------------------------------------------


def _tick_key(game_id: int) -> str:
    return f"race-tick:{game_id}"


def tick_chain_start(game_id: int, *, delay: float) -> None:
    """A new chain of ticks for this race. A chain that was running stops at its next tick
    (it finds another chain's token in the cache)."""
    token = secrets.token_hex(8)
    _tick_alive_mark(game_id, token)
    _tick_queue(game_id, token, delay)


def race_tick(*, game_id: int, token: str) -> None:
    """One tick of a chain (the task `tasks.race_tick`): advance the race, queue the next."""
    if not _tick_owns(game_id, token):
        return
    delay = race_advance(game_id=game_id)
    if delay is not None:
        _tick_alive_mark(game_id, token)
        _tick_queue(game_id, token, delay)


def _tick_owns(game_id: int, token: str) -> bool:
    try:
        current = cache.get(_tick_key(game_id))
    except Exception:  # noqa: BLE001 - without the cache, a double chain is harmless
        logger.warning("could not read the tick of race %s", game_id, exc_info=True)
        return True
    return current is None or current == token


def _tick_alive_mark(game_id: int, token: str) -> None:
    try:
        cache.set(_tick_key(game_id), token, TICK_ALIVE_SECONDS)
    except Exception:  # noqa: BLE001
        logger.warning("could not mark the tick of race %s", game_id, exc_info=True)


def tick_alive(game_id: int) -> bool:
    try:
        return cache.get(_tick_key(game_id)) is not None
    except Exception:  # noqa: BLE001 - unknown: start one; a double chain is harmless
        return False


def _tick_queue(game_id: int, token: str, delay: float) -> None:
    try:
        # Expires: a tick that waited long in a queue is superseded by the sweep's new chain.
        queueing.send(queueing.RACE_TICK, (game_id, token), countdown=delay, expires=delay + 10)
    except Exception:
        logger.exception("could not queue the tick of race %s; the sweep starts a new one", game_id)


def race_sweep(*, game_id: int, now: datetime) -> bool:
    """For the beat's sweep: close a race whose deadline has passed (or abort one that never
    started), and give a running race whose tick chain was lost a new one. Returns whether
    there was anything to do."""
    game = Game.objects.filter(pk=game_id).only("race_starts_at", "race_deadline").first()
    if game is None or game.race_deadline is None:
        return False
    due = game.race_deadline <= now
    lost = game.race_starts_at is not None and not tick_alive(game_id)
    if not (due or lost):
        return False
    delay = race_advance(game_id=game_id)
    if delay is not None and lost:
        tick_chain_start(game_id, delay=delay)
    return True


def races_sweep(*, now: datetime, limit: int) -> int:
    """Live races: close each one whose deadline has passed (abort one whose runners did not
    all press Ready in time), and start the tick again for a running race whose chain of ticks
    was lost. Each race is handled under its own lock (`race_advance`), which checks again what
    is due, so a race is closed exactly once. Walks the partial index on `race_deadline`: only
    live races that are waiting or running."""
    done = 0
    running = (
        Game.objects.filter(race_deadline__isnull=False, status=Game.Status.ACTIVE)
        .order_by("race_deadline")
        .values_list("pk", flat=True)[:limit]
    )
    for game_id in running:
        try:
            done += race_sweep(game_id=game_id, now=now)
        except Exception:
            logger.exception("sweeping the race %s failed", game_id)
    return done


# --- the hint --------------------------------------------------------------------------------


def race_hint(*, game: Game, seat_index: int | None) -> JSON:
    """The strong bot's next step and planned route from the runner's own view. Only in a
    race with a bot seat, for a runner still in, once the race is on."""
    if game.kind != KIND:
        raise core.GameError("Hints are only for Maze Race.")
    if seat_index is None:
        raise core.GameError("Only a runner in this race can ask for a hint.")
    if not has_bot(list(game.seats.all())):
        raise core.GameError("The hint is only for races with a bot.")
    if game.status != Game.Status.ACTIVE or game.state is None:
        raise core.GameError("The race is not running.")
    view = rules.view(game.state, seat_index)
    if view["out"] is not None:
        raise core.GameError("Your runner is out of the maze.")
    found: dict[str, Any] = race_bots.hint(view)
    return {"dir": found["dir"], "route": found["route"], "steps": view["steps"]}
