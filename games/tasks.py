"""Celery tasks: thin, take ids, safe to run twice (each enters through a service that checks
the game is still where the task expected it)."""

from __future__ import annotations

from celery import shared_task

from . import services


@shared_task(acks_late=True, reject_on_worker_lost=True)
def bot_turn(game_id: int, ply: int) -> None:
    services.bot_turn_play(game_id=game_id, ply=ply)
