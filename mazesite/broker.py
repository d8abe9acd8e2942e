"""The Celery broker's transport: kombu's Redis transport, with one mend.

When Redis goes away while a worker holds a task it has not acknowledged yet (tasks are
acknowledged late) and its event loop waits on a BRPOP, the consumer closes its connection
twice (celery's `on_connection_error_after_connected`: `collect()`, then `close()`). In the
first, the task channel's close fails on the dead BRPOP before the channel counts as closed,
the transport's closing of its channels stops at the remote control's channel, whose close
fails too, and the connection lets go of its client. In the second, the task channel's close
puts the unacknowledged tasks back, and kombu 5.7 reads Redis's address from that client, which
is None by then: the worker dies of an `AttributeError` ("Unrecoverable error"; kombu issues
#582 and #970). A task that finishes after that is acknowledged through the same path.

Here a channel whose connection has let go of its client answers as a lost connection, which
kombu ignores while it closes and celery logs as a failed acknowledgement. The tasks stay in
Redis's unacknowledged set, which any worker puts back on the queue after the visibility
timeout, as after a worker killed with SIGKILL (acknowledged late, each task of the site is
written to be run again).
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
