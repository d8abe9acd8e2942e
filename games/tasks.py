"""Celery tasks: thin, take ids, safe to run twice (each enters through a service that checks
the game is still where the task expected it). Time limits are in settings; the database holds
every deadline, so a task that is lost is found again by the next sweep."""

from __future__ import annotations

from typing import Any

from celery import Task, shared_task

from . import notifications, races, services, sweeps


@shared_task(acks_late=True, reject_on_worker_lost=True)
def bot_turn(game_id: int, ply: int) -> None:
    services.bot_turn_play(game_id=game_id, ply=ply)


# A live race's clock: one short tick, which queues the next a fraction of a second later.
# Acknowledged at once: a chain lost with its worker is started again by the sweep.
@shared_task(acks_late=False)
def race_tick(game_id: int, token: str = "") -> None:
    races.race_tick(game_id=game_id, token=token)


# Acknowledged at once: a sweep lost with its worker is redone by the next beat, not redelivered.
@shared_task(acks_late=False)
def sweep_deadlines() -> None:
    sweeps.sweep()


@shared_task(
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=notifications.SEND_ERRORS,
    retry_backoff=5,  # 5 s, 10 s, 20 s ... at most 10 minutes (under the sweep's quiet time)
    retry_backoff_max=600,
    retry_jitter=True,
    max_retries=6,
)
def mail_send(self: Task[Any, Any], outbox_id: int) -> None:
    notifications.outbox_send(
        outbox_id=outbox_id, last_attempt=self.request.retries >= (self.max_retries or 0)
    )


@shared_task(acks_late=True, reject_on_worker_lost=True)
def digest_send() -> None:
    notifications.digest_queue_all()
