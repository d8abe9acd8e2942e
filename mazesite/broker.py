"""The Celery broker's transport: kombu's Redis transport, with one mend.

When Redis goes away while a worker holds a task it has not acknowledged yet (tasks are
acknowledged late) and its event loop waits on a BRPOP, the consumer closes its connection
twice (celery's `on_connection_error_after_connected`: `collect()`, then `close()`). The first
close of the task channel fails on the dead BRPOP before the channel counts as closed, and the
connection lets go of its client; the second close then puts the unacknowledged tasks back,
and kombu 5.7 reads Redis's address from that client, which is None by then. The worker dies of
an `AttributeError` ("Unrecoverable error"; kombu issues #582 and #970). An acknowledgement from
a task that finishes after that takes the same path.

Here a channel whose connection has let go of its client answers as a lost connection, which
kombu ignores while it closes and celery logs as a failed acknowledgement. The tasks stay in
Redis's unacknowledged set, which any worker puts back on the queue after the visibility
timeout, as after a worker killed with SIGKILL; every task of the site may run twice.
"""

from __future__ import annotations

from typing import Any

from kombu.transport import TRANSPORT_ALIASES, redis
from redis.exceptions import ConnectionError as RedisConnectionError


class Channel(redis.Channel):
    def _connparams(self, asynchronous: bool = False) -> dict[str, Any]:
        if self.connection.client is None:
            raise RedisConnectionError("the broker connection is closed")
        return super()._connparams(asynchronous)  # type: ignore[misc]  # not in the stubs


class Transport(redis.Transport):
    Channel = Channel


def use_for_redis_urls() -> None:
    """Make `redis://` and `redis+socket://` broker URLs use this transport, in this process."""
    TRANSPORT_ALIASES["redis"] = f"{__name__}:Transport"
