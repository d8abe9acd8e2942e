"""Celery tasks: thin, take ids, safe to run twice (each enters through a service that checks
the game is still where the task expected it). Time limits are in settings; the database holds
every deadline, so a task that is lost is found again by the next sweep.

They are queued by name (games/queueing.py), once the transaction that made them due commits,
so that nothing the tasks call imports this module."""

from __future__ import annotations

from celery import shared_task

from games.mail import digests, outbox
from games.play import core, sweeps
from games.play.paces import race


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
    outbox.outbox_send(outbox_id=outbox_id)


@shared_task(acks_late=True, reject_on_worker_lost=True)
def digest_send() -> None:
    digests.digest_queue_all()
