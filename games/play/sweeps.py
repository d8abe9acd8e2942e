"""What has fallen due: expired deadlines, due reminders, bot turns whose task was lost, mails
whose next try has come. The beat runs `sweep()` every SWEEP_INTERVAL_SECONDS.

Any number of sweeps may run at once. Each claims games in small batches with
`FOR UPDATE OF game SKIP LOCKED`, the lock a move takes, so two sweeps never wait for each other
and a move waits at most for one batch; the service each one calls checks again under that
lock. The queries walk partial indexes on the due time, so a sweep's cost grows with what is
due, not with the number of games."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import QuerySet

from games import clock, queueing
from games.mail import notices, outbox
from games.models import Clock, Game, Reminder, Seat
from games.play import challenges, core, pacing
from games.web import health

logger = logging.getLogger(__name__)

BATCH_SIZE = 50
MAX_BATCHES = 200  # at most 10,000 rows a sweep; the next sweep goes on
# A bot answers within seconds; one whose turn started this long ago lost its task.
BOT_GRACE = timedelta(seconds=60)


@dataclass
class SweepReport:
    timeouts: int = 0
    reminders: int = 0
    bot_turns: int = 0
    mails: int = 0
    paces: int = 0
    challenges: int = 0  # challenges that expired unanswered


def sweep() -> SweepReport:
    """Everything that is due. A part that fails is logged and does not stop the others."""
    report = SweepReport()
    parts: dict[str, Callable[[], int]] = {
        "timeouts": deadlines_sweep,
        "reminders": reminders_sweep,
        "bot_turns": bot_turns_sweep,
        "mails": mails_sweep,
        "paces": paces_sweep,
        "challenges": challenges.challenges_expire,
    }
    for field in fields(report):
        try:
            setattr(report, field.name, parts[field.name]())
        except Exception:
            logger.exception("the %s sweep failed; the next sweep tries again", field.name)
    health.sweep_done()
    return report


def expired_seats(now: datetime) -> QuerySet[Seat]:
    """Seats of running games whose deadline has passed, earliest first (an index range scan
    on `seat_deadline`)."""
    return (
        Seat.objects.filter(deadline__lte=now, game__status=Game.Status.ACTIVE)
        .select_related("game")
        .order_by("deadline")
    )


def deadlines_sweep(*, batch_size: int = BATCH_SIZE, max_batches: int = MAX_BATCHES) -> int:
    """Time out every seat whose deadline has passed, each exactly once, a batch at a time
    (`play.core.seats_time_out`). Returns how many seats timed out."""
    now = clock.now()
    return _in_batches(
        lambda: expired_seats(now),
        ("game",),
        lambda seats: core.seats_time_out([(s.game, s.index) for s in seats]),
        "timing out seat",
        batch_size=batch_size,
        max_batches=max_batches,
    )


def due_reminders(now: datetime) -> QuerySet[Reminder]:
    return (
        Reminder.objects.filter(due__lte=now)
        .select_related("seat__game")
        .only("seat__id", "seat__game__id")
        .order_by("due")
    )


def reminders_sweep(*, batch_size: int = BATCH_SIZE, max_batches: int = MAX_BATCHES) -> int:
    """Turn every due reminder into a mail. Returns how many mails were due."""
    now = clock.now()
    return _in_batches(
        lambda: due_reminders(now),
        ("seat__game",),
        lambda due: sum(notices.reminder_due(reminder_id=r.pk, now=now) for r in due),
        "the reminder",
        batch_size=batch_size,
        max_batches=max_batches,
    )


def _in_batches(
    rows: Callable[[], QuerySet[Any]],
    lock_of: tuple[str, ...],
    handle: Callable[[list[Any]], int],
    what: str,
    *,
    batch_size: int,
    max_batches: int,
) -> int:
    """Claim due rows a batch at a time, locking their games and skipping the ones another
    sweep or a move holds, and handle the batch. If that fails, each row of it is handled on
    its own, and one that fails again is logged and left for the next sweep. Returns the sum of
    what `handle` returned."""
    done = 0
    failed: set[int] = set()
    for _ in range(max_batches):
        with transaction.atomic():
            batch = list(
                rows()
                .exclude(pk__in=failed)
                .select_for_update(skip_locked=True, of=lock_of)[:batch_size]
            )
            try:
                with transaction.atomic():
                    done += handle(batch)
            except Exception:
                logger.exception("%s: a batch failed; trying its rows one by one", what)
                for pk in [row.pk for row in batch]:
                    try:
                        with transaction.atomic():
                            # Read again: the failed batch may have changed its rows in memory.
                            done += handle(list(rows().filter(pk=pk)))
                    except Exception:
                        logger.exception("%s %s failed", what, pk)
                        failed.add(pk)
        if len(batch) < batch_size:
            break
    return done


def bot_turns_sweep() -> int:
    """Queue again every bot turn that has waited longer than BOT_GRACE (its task was lost:
    a worker killed, a broker restarted). The task checks the ply, so a double is harmless."""
    now = clock.now()
    waiting = (
        Seat.objects.filter(deadline__isnull=False)
        .exclude(bot="")
        .select_related("game")
        .only("deadline", "game__id", "game__clock", "game__ply", "game__status")
    )
    queued: set[tuple[int, int]] = set()
    for seat in waiting:
        duration = Clock.duration(seat.game.clock)
        if duration is None or seat.deadline is None or seat.game.status != Game.Status.ACTIVE:
            continue
        if seat.deadline - duration > now - BOT_GRACE:
            continue  # its turn started less than BOT_GRACE ago
        key = (seat.game_id, seat.game.ply)
        if key not in queued:
            queued.add(key)
            queueing.send(queueing.BOT_TURN, key)
    return len(queued)


def paces_sweep(*, limit: int = BATCH_SIZE * MAX_BATCHES) -> int:
    """What each pace ends with no move when it falls due (a live race closed at its deadline,
    or aborted when its runners did not all press Ready in time; a lost tick chain started
    again): each game under its own lock, taken by the pace."""
    now = clock.now()
    return sum(pace.sweep(now=now, limit=limit) for pace in pacing.paces())


def mails_sweep() -> int:
    """Queue every pending mail whose next try has come: its task was lost, its backoff after
    a failed send is over, or the player it was held for has left the game."""
    return outbox.outbox_queue_due(now=clock.now())
