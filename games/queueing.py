"""Queueing Celery tasks by name. The code that makes a task due (a move, a mail written, a
race started) queues it through here and never imports games/tasks.py, which imports the play
core and the mail to run them: so the write path and the tasks do not import each other. The
names are the tasks' names in games/tasks.py (a test checks each is registered)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from celery import current_app
from django.db import transaction

logger = logging.getLogger(__name__)

BOT_TURN = "games.tasks.bot_turn"  # (game_id, ply)
RACE_TICK = "games.tasks.race_tick"  # (game_id, token)
MAIL_SEND = "games.tasks.mail_send"  # (outbox_id,)
SWEEP_DEADLINES = "games.tasks.sweep_deadlines"  # ()
DIGEST_SEND = "games.tasks.digest_send"  # ()
NAMES = (BOT_TURN, RACE_TICK, MAIL_SEND, SWEEP_DEADLINES, DIGEST_SEND)


def send(name: str, args: tuple[Any, ...] = (), **options: Any) -> None:
    """Queue the task `name` now, with Celery's options (`countdown`, `expires`). Raises what
    the broker raises."""
    current_app.send_task(name, args=args, **options)


def queue_on_commit(name: str, calls: Iterable[tuple[Any, ...]]) -> None:
    """Queue the task `name` with each of these argument tuples once the current transaction
    commits, in one on-commit hook. By then what the tasks are for is stored, and the sweep
    finds what was not queued: so a broker that is down is logged and never raised. (Raised
    from a hook, it would answer a committed move with a 500 and drop the transaction's later
    hooks.) After the first failure the rest of the batch is left to the sweep too, since each
    try against a dead broker takes a while."""
    batch = list(calls)
    if not batch:
        return

    def queue() -> None:
        done = 0
        try:
            # One producer (one broker connection taken from the pool) for the whole batch.
            with current_app.producer_or_acquire() as producer:
                for args in batch:
                    send(name, args, producer=producer)
                    done += 1
        except Exception:
            logger.exception(
                "could not queue %s for %d call(s) from %r on; the sweep will pick them up",
                name,
                len(batch) - done,
                batch[min(done, len(batch) - 1)],
            )

    transaction.on_commit(queue)
