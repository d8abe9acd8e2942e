"""A real uvicorn serving the live races' event stream (mazesite/events.py) in a thread of the
test process, on the test database and Redis; and a small reader of event streams."""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import uvicorn


@dataclass
class EventsServer:
    origin: str
    port: int


@pytest.fixture
def events_server(transactional_db: None) -> Iterator[EventsServer]:
    with serving_events() as server:
        yield server


@contextlib.contextmanager
def serving_events() -> Iterator[EventsServer]:
    """uvicorn with mazesite.events in a thread, on a free port, until it is told to stop as
    SIGTERM tells it; its Redis is settings.REDIS_URL when it starts."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        "mazesite.events:app",
        lifespan="on",
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=1,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    subscribed_wait()
    try:
        yield EventsServer(origin=f"http://127.0.0.1:{port}", port=port)
    finally:
        # As SIGTERM does: the streams end at once, then the server stops.
        server.handle_exit(signal.SIGTERM, None)
        thread.join(timeout=15)
        sock.close()


def subscribed_wait() -> None:
    """Until the events process listens on the channel (a message before that is not heard)."""
    import redis
    from django.conf import settings

    from games import live

    client = redis.Redis.from_url(settings.REDIS_URL)
    deadline = time.monotonic() + 10
    try:
        while client.pubsub_numsub(live.channel())[0][1] < 1:
            assert time.monotonic() < deadline, "the events server did not subscribe"
            time.sleep(0.02)
    finally:
        client.close()


class Stream:
    """One event stream, read event by event (a blocking socket with a timeout)."""

    def __init__(self, port: int, path: str, headers: dict[str, str] | None = None) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        head = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
        self.sock.sendall(f"{head}{extra}\r\n".encode())
        self.buffer = b""
        head = self._until(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        self.status = int(lines[0].split()[1])
        self.headers = {
            k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:] if line)
        }
        self.chunked = self.headers.get("transfer-encoding") == "chunked"
        self.body = b""

    def _until(self, mark: bytes) -> bytes:
        while mark not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("the stream closed")
            self.buffer += chunk
        found, self.buffer = self.buffer.split(mark, 1)
        return found

    def _more(self) -> None:
        if not self.chunked:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("the stream closed")
            self.body += chunk
            return
        size = int(self._until(b"\r\n"), 16)
        if size == 0:
            raise EOFError("the stream ended")
        while len(self.buffer) < size + 2:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("the stream closed")
            self.buffer += chunk
        self.body += self.buffer[:size]
        self.buffer = self.buffer[size + 2 :]

    def event(self) -> dict[str, Any]:
        """The next event (comments skipped): its id, name and data (JSON read)."""
        while True:
            while b"\n\n" not in self.body:
                self._more()
            raw, self.body = self.body.split(b"\n\n", 1)
            fields: dict[str, str] = {}
            for line in raw.decode().split("\n"):
                if not line or line.startswith(":"):
                    continue
                name, _, value = line.partition(": ")
                fields[name] = value
            if "event" in fields or "data" in fields:
                data = fields.get("data", "")
                return {
                    "id": fields.get("id"),
                    "event": fields.get("event", "message"),
                    "data": json.loads(data) if data else None,
                }

    def closed(self) -> bool:
        try:
            self._more()
        except EOFError:
            return True
        return False

    def close(self) -> None:
        self.sock.close()
