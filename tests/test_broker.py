"""The Celery broker's transport (mazesite/broker.py) when Redis goes away under a worker that
holds a task it has not acknowledged: its connection closes as a lost one, never with kombu's
AttributeError that killed the worker, and the task is not lost. Against a redis-server of the
test's own, stopped and started again as in the cluster's Redis restart."""

from __future__ import annotations

import logging
from contextlib import suppress

import redis
from kombu import Exchange, Queue
from kombu.common import ignore_errors
from kombu.message import Message

from mazesite import broker
from mazesite.celery import app as celery_app
from tests.redis_fixtures import own_redis_server

TASKS = Queue("broker-test", Exchange("broker-test"), "broker-test")
# The worker's remote control (celery's pidbox): a channel of its own on a fanout, auto-delete
# queue. Its close fails too while Redis is away, which is what leaves the task channel open.
CONTROL = Queue(
    "broker-test.pidbox", Exchange("broker-test.control", type="fanout"), auto_delete=True
)


def test_the_site_s_broker_urls_use_the_mended_transport() -> None:
    for url in ("redis://127.0.0.1:6379/0", "redis+socket:///tmp/no-such.sock"):
        connection = celery_app.connection_for_write(url)
        assert isinstance(connection.transport, broker.Transport), url
        connection.release()


def test_a_worker_s_connection_closes_when_redis_goes_away_and_its_task_comes_back() -> None:
    with own_redis_server(appendonly=True) as own:
        connection = celery_app.connection_for_read(own.url)
        with connection.Producer() as producer:
            producer.publish(
                {"task": 1}, exchange=TASKS.exchange, routing_key="broker-test", declare=[TASKS]
            )
        delivered: list[Message] = []
        channel = connection.default_channel
        connection.Consumer(
            TASKS, channel=channel, callbacks=[lambda _, m: delivered.append(m)]
        ).consume()
        connection.drain_events(timeout=5)
        [task] = delivered
        connection.Consumer(CONTROL, channel=connection.channel(), no_ack=True).consume()
        channel._brpop_start()  # the worker's event loop waits for its next task

        own.stop()
        # What celery's consumer does then (Consumer.on_connection_error_after_connected).
        with suppress(Exception):
            connection.collect(socket_timeout=1)
        ignore_errors(connection, connection.close)
        # The task finishes and is acknowledged late, on the connection that is gone.
        task.ack_log_error(logging.getLogger(__name__), connection.connection_errors)

        own.start()
        stored = redis.Redis.from_url(own.url)
        assert stored.llen("broker-test") == 0
        assert stored.hlen("unacked") == 1  # kept for a worker to put back after the timeout

        again = celery_app.connection_for_read(own.url, transport_options={"visibility_timeout": 0})
        redelivered: list[Message] = []
        again.default_channel.qos.restore_visible()
        again.Consumer(TASKS, callbacks=[lambda _, m: redelivered.append(m)]).consume()
        again.drain_events(timeout=5)
        [task_again] = redelivered
        assert task_again.decode() == {"task": 1}
        task_again.ack()
        assert stored.hlen("unacked") == 0
        again.release()
        stored.close()
