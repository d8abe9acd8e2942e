"""Celery tasks: thin, take ids, safe to run twice (each enters through a service that checks
the game is still where the task expected it). Time limits are in settings; the database holds
every deadline, so a task that is lost is found again by the next sweep.

Tasks are queued once the transaction that made them due commits (`queue_on_commit`)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from celery import Task, shared_task
from django.db import transaction

from games.mail import notices
from games.play import core, sweeps
from games.play.paces import race

logger = logging.getLogger(__name__)


def queue_on_commit(task: Task[Any, Any], calls: Iterable[tuple[Any, ...]]) -> None:
    """Queue `task` with each of these argument tuples once the current transaction commits,
    in one on-commit hook. By then what the tasks are for is stored, and the sweep finds what
    was not queued: so a broker that is down is logged and never raised. (Raised from a hook,
    it would answer a committed move with a 500 and drop the transaction's later hooks.) After
    the first failure the rest of the batch is left to the sweep too, since each try against a
    dead broker takes a while."""
    batch = list(calls)
    if not batch:
        return

    def queue() -> None:
        for done, args in enumerate(batch):
            try:
                task.delay(*args)
            except Exception:
                logger.exception(
                    "could not queue %s for %d call(s) from %r on; the sweep will pick them up",
                    task.name,
                    len(batch) - done,
                    args,
                )
                return

    transaction.on_commit(queue)


@shared_task(acks_late=True, reject_on_worker_lost=True)
def bot_turn(game_id: int, ply: int) -> None:
    core.bot_turn_play(game_id=game_id, ply=ply)


# A live race's clock: one short tick, which queues the next a fraction of a second later.
# Acknowledged at once: a chain lost with its worker is started again by the sweep.
@shared_task(acks_late=False)
def race_tick(game_id: int, token: str = "") -> None:
    race.race_tick(game_id=game_id, token=token)


# Acknowledged at once: a sweep lost with its worker is redone by the next beat, not redelivered.
@shared_task(acks_late=False)
def sweep_deadlines() -> None:
    sweeps.sweep()


# Acknowledged at once, and never retried by Celery: the outbox row is the queue. It says when
# the mail is next due (after a lost task, a failed send's backoff, or while the player has the
# game open), and the sweep queues it then; a task lost with its worker is simply queued again.
@shared_task(acks_late=False)
def mail_send(outbox_id: int) -> None:
    notices.outbox_send(outbox_id=outbox_id)


@shared_task(acks_late=True, reject_on_worker_lost=True)
def digest_send() -> None:
    notices.digest_queue_all()
