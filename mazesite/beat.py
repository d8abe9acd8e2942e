"""One Celery beat schedules, however many run: settings.CELERY_BEAT_SCHEDULER.

Each beat tries a lock before each tick; the one that holds it schedules, the others wait and
try again every LOCK_RETRY_SECONDS, so a standby beat takes over within seconds of the first
one dying. On PostgreSQL the lock is a session advisory lock on a connection of the beat's own
(PostgreSQL drops it when that connection dies, so a beat killed with -9, or cut off from the
database, lets go); the holder checks its connection before each tick and stops scheduling
the moment it is gone. On SQLite (`make run`, one machine) it is an flock on a file in the
var dir. The lock is per queue (CELERY_TASK_DEFAULT_QUEUE): two sites on one database, or two
test workers, each have their own beat.

A sweep queued twice does no harm (sweeps claim rows with SKIP LOCKED), but a doubled digest
schedule would queue the digest twice; the lock keeps the schedule single.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
from pathlib import Path
from typing import Any

from celery.beat import PersistentScheduler

logger = logging.getLogger(__name__)

LOCK_RETRY_SECONDS = 5.0


def lock_key(name: str) -> int:
    """A signed 64-bit advisory lock key for this name."""
    digest = hashlib.sha256(f"mazesite-beat:{name}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


class BeatLock:
    """The lock, held or not; `holding()` takes it if it is free and says whether we hold it."""

    def __init__(self, name: str) -> None:
        from django.conf import settings

        self.name = name
        self.database: dict[str, Any] = settings.DATABASES["default"]
        self.var_dir = Path(settings.VAR_DIR)
        self._conn: Any = None
        self._file: Any = None

    @property
    def postgres(self) -> bool:
        return bool(self.database["ENGINE"] == "django.db.backends.postgresql")

    def holding(self) -> bool:
        try:
            return self._postgres_holding() if self.postgres else self._file_holding()
        except Exception as exc:  # noqa: BLE001 - no lock is "not holding": try again later
            logger.warning("beat lock: %s", exc)
            self.release()
            return False

    def _postgres_holding(self) -> bool:
        import psycopg

        if self._conn is not None:
            self._conn.execute("SELECT 1")  # raises if the session, and so the lock, is gone
            return True
        db = self.database
        conn = psycopg.connect(
            dbname=db["NAME"],
            user=db.get("USER") or None,
            password=db.get("PASSWORD") or None,
            host=db.get("HOST") or None,
            port=db.get("PORT") or None,
            autocommit=True,
            connect_timeout=5,
            application_name="mazesite-beat",
            # A primary that vanishes is noticed within seconds, not after TCP's two hours.
            keepalives=1,
            keepalives_idle=5,
            keepalives_interval=2,
            keepalives_count=3,
        )
        row = conn.execute("SELECT pg_try_advisory_lock(%s)", [lock_key(self.name)]).fetchone()
        if row is None or not row[0]:
            conn.close()
            return False
        self._conn = conn
        logger.info("beat lock taken: this beat schedules (queue %s)", self.name)
        return True

    def _file_holding(self) -> bool:
        if self._file is not None:
            return True
        self.var_dir.mkdir(parents=True, exist_ok=True)
        handle = (self.var_dir / f"beat-{self.name}.lock").open("a")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            return False
        self._file = handle
        logger.info("beat lock taken: this beat schedules (queue %s)", self.name)
        return True

    def release(self) -> None:
        """Let the lock go now. PostgreSQL frees a session's advisory lock when its backend
        ends, a moment after the connection closes: unlocked first, the lock is free as soon
        as this returns (a beat that dies instead frees it when its session goes)."""
        for attribute in ("_conn", "_file"):
            held = getattr(self, attribute)
            setattr(self, attribute, None)
            if held is not None:
                with contextlib.suppress(Exception):  # a broken connection holds nothing
                    if attribute == "_conn":
                        held.execute("SELECT pg_advisory_unlock(%s)", [lock_key(self.name)])
                with contextlib.suppress(Exception):  # closing a broken connection
                    held.close()


class LockedScheduler(PersistentScheduler):
    """celery beat's PersistentScheduler, ticking only while it holds the BeatLock."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        from django.conf import settings

        self.beat_lock = BeatLock(settings.CELERY_TASK_DEFAULT_QUEUE)
        self._was_holding = False
        super().__init__(*args, **kwargs)

    def tick(self, *args: Any, **kwargs: Any) -> float:
        holding = self.beat_lock.holding()
        if holding != self._was_holding and not holding:
            logger.warning("beat lock lost: this beat stops scheduling until it takes it again")
        if not holding and not self._was_holding:
            logger.debug("another beat holds the lock: waiting")
        self._was_holding = holding
        if not holding:
            return LOCK_RETRY_SECONDS
        return float(super().tick(*args, **kwargs))

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.beat_lock.release()
