from __future__ import annotations

import os
from typing import Any

from celery import Celery, bootsteps

from mazesite import broker

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mazesite.settings")
broker.use_for_redis_urls()

app = Celery("mazesite")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


class Heartbeat(bootsteps.StartStopStep):
    """While the worker consumes tasks, its heartbeat for /healthz every
    WORKER_HEARTBEAT_SECONDS (games.health). A consumer step: it stops while the worker has lost
    the broker, and starts again with the consumer."""

    requires = ("celery.worker.consumer.tasks:Tasks",)

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self.timer_entry: Any = None

    def start(self, parent: Any) -> None:
        from django.conf import settings

        from games.web import health

        health.worker_heartbeat()
        self.timer_entry = parent.timer.call_repeatedly(
            settings.WORKER_HEARTBEAT_SECONDS, health.worker_heartbeat
        )

    def stop(self, parent: Any) -> None:
        if self.timer_entry is not None:
            self.timer_entry.cancel()
            self.timer_entry = None

    shutdown = stop


app.steps["consumer"].add(Heartbeat)
