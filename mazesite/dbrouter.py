"""Reads that may go to a streaming replica, and the middleware that decides it per request.

The replica (settings.REPLICA_DATABASE_URL, the "replica" alias) serves what is read far more
than written and can be a second or two behind: the archive, player pages, feeds and replays.
Everything else, every write, and every read in a transaction stays on the primary ("default").
A request reads from the primary instead when:

- there is no replica alias (a single database: everything is the default);
- the client wrote something in the last REPLICA_STICKY_SECONDS (a cookie set on every
  non-safe request: read-your-writes);
- it is the replay of the player's own game that finished in the last REPLICA_STICKY_SECONDS
  (the sweep or the other player may have ended it: no cookie of this client says so);
- the replica failed in the last REPLICA_RETRY_SECONDS, or fails its check now; a replica that
  fails during the view is marked down and the view runs again on the primary (only safe
  requests are ever sent to the replica, so running one again changes nothing).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import re
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.http import HttpRequest, HttpResponseBase

logger = logging.getLogger(__name__)

REPLICA = "replica"
PRIMARY = "default"
STICKY_COOKIE = "primary_until"
# The pages that may read from the replica (the URLconf's archive, players, feeds, replays).
REPLICA_PATHS = re.compile(r"^/(?:archive/|players/|games/\d+/replay/)")
# Sessions are read on the primary: a session a second old may not have reached the replica.
PRIMARY_APPS = frozenset({"sessions"})
REPLAY_PATH = re.compile(r"^/games/(\d+)/replay/")

_read_from: contextvars.ContextVar[str] = contextvars.ContextVar("read_from", default=PRIMARY)
_replica_down_until = 0.0


def has_replica() -> bool:
    return bool(settings.READ_REPLICA) and REPLICA in connections


def replica_down(error: BaseException | None = None) -> None:
    """Leave the replica alone for REPLICA_RETRY_SECONDS."""
    global _replica_down_until
    _replica_down_until = time.monotonic() + settings.REPLICA_RETRY_SECONDS
    logger.warning("the replica failed (%s): reading from the primary", error)
    with contextlib.suppress(Exception):  # a broken connection may not even close
        connections[REPLICA].close()


def replica_up() -> bool:
    """The replica is not marked down and answers a SELECT 1 (an open connection: about 0.1 ms)."""
    if time.monotonic() < _replica_down_until:
        return False
    try:
        with connections[REPLICA].cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as exc:
        replica_down(exc)
        return False
    return True


class ReplicaRouter:
    """Reads go where the request's middleware said (the primary outside a request, in a
    transaction, or with no replica); writes and migrations go to the primary."""

    def db_for_read(self, model: type, **hints: Any) -> str:
        if model._meta.app_label in PRIMARY_APPS:  # type: ignore[attr-defined]
            return PRIMARY
        return read_alias()

    def db_for_write(self, model: type, **hints: Any) -> str:
        return PRIMARY

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool:
        return True  # the replica is a copy of the primary

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool:
        return db == PRIMARY


def read_alias() -> str:
    """Where a read of this request goes: a read inside a transaction belongs with its writes."""
    alias = _read_from.get()
    if alias == REPLICA and _in_transaction():
        return PRIMARY
    return alias


def _in_transaction() -> bool:
    """The primary is in a transaction the site opened (not a test case's own)."""
    primary = connections[PRIMARY]
    if not primary.in_atomic_block:
        return False
    blocks = getattr(primary, "atomic_blocks", None)
    if blocks is None:
        return True
    return any(not getattr(block, "_from_testcase", False) for block in blocks)


def read_connection() -> BaseDatabaseWrapper:
    """The connection for a raw SQL read that may go to the replica (games/archive/reads.py)."""
    return connections[read_alias()]


def _sticky(request: HttpRequest) -> bool:
    try:
        return float(request.COOKIES.get(STICKY_COOKIE, "0")) > time.time()
    except ValueError:
        return False


def _own_game_just_finished(request: HttpRequest) -> bool:
    found = REPLAY_PATH.match(request.path_info)
    user = getattr(request, "user", None)
    if found is None or user is None or not user.is_authenticated:
        return False
    from datetime import timedelta

    from games.clock import now
    from games.models import Seat

    since = now() - timedelta(seconds=settings.REPLICA_STICKY_SECONDS)
    return (
        Seat.objects.using(PRIMARY)
        .filter(game_id=int(found.group(1)), user_id=user.pk, game__finished_at__gte=since)
        .exists()
    )


def choose(request: HttpRequest) -> str:
    """Where this request reads from."""
    if not has_replica() or request.method not in ("GET", "HEAD"):
        return PRIMARY
    if not REPLICA_PATHS.match(request.path_info) or _sticky(request):
        return PRIMARY
    if _own_game_just_finished(request) or not replica_up():
        return PRIMARY
    return REPLICA


class ReplicaMiddleware:
    """Chooses the database a request reads from (after AuthenticationMiddleware: it asks who
    the user is), marks writers sticky to the primary, and runs a view again on the primary
    when the replica fails under it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        token = _read_from.set(choose(request))
        try:
            response = self.get_response(request)
        finally:
            _read_from.reset(token)
        if request.method not in ("GET", "HEAD", "OPTIONS") and has_replica():
            seconds = settings.REPLICA_STICKY_SECONDS
            response.set_cookie(
                STICKY_COOKIE,
                f"{time.time() + seconds:.0f}",
                max_age=seconds,
                httponly=True,
                samesite="Lax",
                secure=request.is_secure(),
            )
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> Any:
        if _read_from.get() != REPLICA or not isinstance(exception, DatabaseError):
            return None
        replica_down(exception)
        _read_from.set(PRIMARY)
        match = request.resolver_match
        if match is None:
            return None
        response = match.func(request, *match.args, **match.kwargs)
        render = getattr(response, "render", None)
        if callable(render):
            response = render()
        return response


def reading_from() -> str:
    """The alias this request's reads go to (for the logs and the tests)."""
    return _read_from.get()
