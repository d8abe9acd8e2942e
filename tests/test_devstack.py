"""`make run`'s launcher (mazesite/devstack.py) for real: in a fresh var dir, on its own port,
with its own embedded Redis and SQLite. A worker killed with SIGKILL is started again; a beat
that keeps dying stops the whole stack; SIGTERM stops everything, Redis included."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.worker_fixtures import BASE_DIR, free_port, wait_until

pytestmark = pytest.mark.worker

# What the launcher's processes must not inherit from `make test`: they run on their own
# SQLite, Redis and queue.
NOT_INHERITED = {"DATABASE_URL", "REDIS_URL", "CELERY_QUEUE", "PYTEST_XDIST_WORKER", "PORT"}


@dataclass
class Launched:
    process: subprocess.Popen[bytes]
    port: int
    var_dir: Path
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def pids(self, name: str) -> list[int]:
        return [int(p) for p in re.findall(rf"{name} started \(pid (\d+)\)", self.output())]

    def healthz(self, method: str = "GET") -> tuple[int, bytes]:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}/healthz", method=method)
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()
        except OSError:
            return 0, b""  # not listening yet


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def launched() -> Iterator[Launched]:
    # A short path: Redis's unix socket lives in it.
    var_dir = Path(tempfile.mkdtemp(prefix="devstack-", dir="/tmp"))
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED}
    env["SWEEP_INTERVAL_SECONDS"] = "1"
    log = var_dir / "devstack.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "mazesite.devstack", "--port", str(port)],
            env={**env, "MAZESITE_VAR_DIR": str(var_dir)},
            cwd=BASE_DIR,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    stack = Launched(process=process, port=port, var_dir=var_dir, log=log)
    try:
        yield stack
    finally:
        if process.poll() is None:
            process.terminate()
            process.wait(timeout=60)
        shutil.rmtree(var_dir, ignore_errors=True)


def test_make_run_restarts_a_killed_worker_and_stops_everything_on_sigterm(
    launched: Launched,
) -> None:
    wait_until(
        lambda: launched.healthz()[0] == 200,
        timeout=120,
        what=f"/healthz to say 200\n{launched.output()[-3000:]}",
    )
    status, body = launched.healthz("HEAD")
    assert (status, body) == (200, b"")
    (worker,) = launched.pids("worker")

    os.kill(worker, signal.SIGKILL)
    wait_until(lambda: len(launched.pids("worker")) == 2, timeout=30, what="a new worker")
    assert "the worker was killed by SIGKILL; restarting it (restart 1 of at most 3" in (
        launched.output()
    )
    new_worker = launched.pids("worker")[1]
    # The launcher cleared the dead worker's heartbeat before it started this one, so a 200 now
    # is the new worker's heartbeat.
    assert alive(new_worker)
    wait_until(
        lambda: launched.healthz()[0] == 200,
        timeout=60,
        what=f"/healthz to say 200 again\n{launched.output()[-3000:]}",
    )
    assert json.loads(launched.healthz()[1])["ok"] is True

    launched.process.send_signal(signal.SIGTERM)
    assert launched.process.wait(timeout=60) == 0
    output = launched.output()
    assert "stopping everything: SIGTERM received" in output
    started = [pid for name in ("redis", "web", "worker", "beat") for pid in launched.pids(name)]
    assert len(started) == 5
    assert not [pid for pid in started if alive(pid)]
    assert not (launched.var_dir / "redis.sock").exists()
    assert launched.healthz()[0] == 0  # nothing listens any more


def test_make_run_stops_everything_when_the_beat_keeps_dying(launched: Launched) -> None:
    for restarts in range(4):
        wait_until(
            lambda n=restarts: len(launched.pids("beat")) == n + 1,
            timeout=120,
            what=f"beat number {restarts + 1}\n{launched.output()[-3000:]}",
        )
        os.kill(launched.pids("beat")[-1], signal.SIGKILL)
    assert launched.process.wait(timeout=60) == 1
    output = launched.output()
    assert "restarting it (restart 3 of at most 3 a minute)" in output
    assert "the beat was killed by SIGKILL, its 4th exit within a minute: not starting it" in output
    started = [pid for name in ("redis", "web", "worker", "beat") for pid in launched.pids(name)]
    assert not [pid for pid in started if alive(pid)]
