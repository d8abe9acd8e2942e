"""The site in this process, on a database of its own, for the benches that go through Django's
test client (profile.py, profile_pages.py): DEBUG off, persistent connections, and the queue
named by the bench, which nobody consumes."""

from __future__ import annotations

import os
import time
from typing import Any

from bench.databases import recreate_database

SERVER = os.environ.get("BENCH_SERVER_URL", "postgres://postgres@127.0.0.1:5432").rstrip("/")


def django_on_new_database(database: str, queue: str, **environ: str) -> None:
    """(Re)create `database` on the shared PostgreSQL (BENCH_SERVER_URL), set Django up on it
    and migrate; `environ` adds to (or overrides) the bench's environment."""
    for name in ("DATABASE_URL", "CELERY_QUEUE", "PYTEST_XDIST_WORKER"):
        os.environ.pop(name, None)
    os.environ.update(
        DATABASE_URL=f"{SERVER}/{database}",
        DEBUG="0",
        CONN_MAX_AGE="600",
        SECURE_SSL_REDIRECT="0",
        ALLOWED_HOSTS="testserver",
        SECRET_KEY="bench-only-not-secret",
        CELERY_QUEUE=queue,
        LOG_LEVEL="WARNING",  # the request log would drown what the bench prints
        MAZESITE_VAR_DIR=f"/tmp/{database}-var",
        **environ,
    )
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/0")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mazesite.settings")
    recreate_database(SERVER, database)
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    # No collectstatic for a bench: plain static URLs instead of the manifest's hashed ones.
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }
    call_command("migrate", verbosity=0)


def quiet_shifts(state: Any, seat: int) -> list[list[int]]:
    """The Corn maze moves of `seat` that do not end the game (all its moves if every one does),
    so that a bench can go on playing the same game."""
    from games.engines import cornmaze

    moves = [list(m) for m in cornmaze.legal_moves(state)]
    quiet = [
        m for m in moves if cornmaze.result(cornmaze.apply(state, seat, {"shifts": m})[0]) is None
    ]
    return quiet or moves


def users_settled() -> None:
    """Wait until the users the bench just made are read from the cache: a user just changed is
    read from the database for USER_CACHE_MARK_SECONDS (games/accounts/backends.py), a query
    more than a player's request costs."""
    from django.conf import settings

    time.sleep(settings.USER_CACHE_MARK_SECONDS)
