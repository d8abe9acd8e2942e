"""A redis-server of a test's own, on a free port, to stop and start again: the shared Redis of
the suite is never restarted."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import redis

from tests.worker_fixtures import wait_until


class OwnRedis:
    def __init__(self, binary: str, directory: str, *, appendonly: bool) -> None:
        self.binary, self.directory, self.appendonly = binary, directory, appendonly
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        # With the append-only file written at every command, what it held survives a stop.
        persistence = ["--appendonly", "yes", "--appendfsync", "always"] if self.appendonly else []
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
            + (persistence or ["--appendonly", "no"])
            + ["--dir", self.directory],
            stdout=subprocess.DEVNULL,
        )
        client = redis.Redis(port=self.port)
        wait_until(lambda: _answers(client), timeout=10, what="the test's redis-server")
        client.close()

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(10)
            self.process = None


@contextmanager
def own_redis_server(*, appendonly: bool = False) -> Iterator[OwnRedis]:
    """A started redis-server of the test's own, stopped and its files removed at the end."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed")
    own = OwnRedis(binary, tempfile.mkdtemp(prefix="own-redis-"), appendonly=appendonly)
    own.start()
    try:
        yield own
    finally:
        own.stop()
        shutil.rmtree(own.directory, ignore_errors=True)


def _answers(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False
