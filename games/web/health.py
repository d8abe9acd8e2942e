"""What /healthz checks, and the marks it reads: the database and the broker answer, a worker's
heartbeat is fresh (each worker writes it on a timer while it consumes tasks, see
mazesite/celery.py) and so is the last sweep (the beat queues it, a worker runs it: it proves
the whole chain). The marks are two keys in the cache (Redis), read with one MGET."""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.core.cache import cache
from django.db import connection

logger = logging.getLogger(__name__)

# A mark older than this is gone rather than stale: nothing has run for a day.
MARK_TTL_SECONDS = 24 * 3600


def worker_key() -> str:
    return f"{settings.HEALTH_CACHE_PREFIX}worker-heartbeat"


def sweep_key() -> str:
    return f"{settings.HEALTH_CACHE_PREFIX}last-sweep"


def worker_heartbeat() -> None:
    """A worker is consuming tasks (its timer calls this every WORKER_HEARTBEAT_SECONDS)."""
    _mark(worker_key())


def worker_gone() -> None:
    """The worker is known to be dead (`make run` saw it die): say so now, not a minute later."""
    try:
        cache.delete(worker_key())
    except Exception:  # noqa: BLE001 - the health check reports a cache it cannot read
        logger.warning("could not clear the worker's heartbeat", exc_info=True)


def sweep_done() -> None:
    """A sweep has run to its end."""
    _mark(sweep_key())


def _mark(key: str) -> None:
    try:
        cache.set(key, time.time(), MARK_TTL_SECONDS)
    except Exception:  # noqa: BLE001 - a missing mark is what the health check reports
        logger.warning("could not write the health mark %s", key, exc_info=True)


def problems() -> dict[str, str]:
    """Each failing part ("database", "broker", "worker", "sweep") with a sentence; empty when
    the site is healthy."""
    from mazesite.celery import app

    found: dict[str, str] = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:  # noqa: BLE001 - any failure means unhealthy
        found["database"] = f"the database does not answer: {exc}"
    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
    except Exception as exc:  # noqa: BLE001
        found["broker"] = f"the broker does not answer: {exc}"
    try:
        marks = cache.get_many([worker_key(), sweep_key()])
    except Exception as exc:  # noqa: BLE001
        found["worker"] = found["sweep"] = f"the cache holding the marks does not answer: {exc}"
        return found
    now = time.time()
    fresh = settings.HEALTH_FRESH_SECONDS
    for part, key, what, missing in (
        (
            "worker",
            worker_key(),
            "a worker's last heartbeat",
            "no worker has written a heartbeat (is a Celery worker running?)",
        ),
        ("sweep", sweep_key(), "the last sweep", "no sweep has run (is the Celery beat running?)"),
    ):
        at = marks.get(key)
        if at is None:
            found[part] = missing
        elif now - at > fresh:
            found[part] = f"{what} was {now - at:.0f} s ago (more than {fresh} s)"
    return found
