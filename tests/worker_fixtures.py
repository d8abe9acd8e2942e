"""Fixtures and helpers for the clock, sweep, mail and worker tests. The fixtures are a plugin
of tests/conftest.py; test modules import the helpers by name."""

from __future__ import annotations

import asyncio
import base64
import email
import email.policy
import itertools
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection

from games.models import Game, Profile, Vacation
from games.play import core
from tests.conftest import a_legal_move, to_move, unavailable
from tests.conftest import seat_user as player_at

BASE_DIR = Path(__file__).resolve().parent.parent
_names = itertools.count(1)


# --- people and games ------------------------------------------------------------------------


def make_player(
    name: str | None = None,
    *,
    address: bool = True,
    verified: bool = True,
    automatic_vacation: bool = False,
) -> User:
    """A registered player; with a verified address unless told otherwise. Automatic vacation
    (on by default on the site, issue 14) is off unless asked for, so that a clock that runs
    out times its seat out."""
    name = name or f"clocks{next(_names)}-{uuid.uuid4().hex[:6]}"
    user = User.objects.create_user(
        username=name, password="a-long-passphrase", email=f"{name}@example.com" if address else ""
    )
    Profile.objects.update_or_create(user=user, defaults={"email_verified": address and verified})
    if not automatic_vacation:
        Vacation.objects.create(user=user, automatic=False)
    return user


def make_game(*players: User, clock: str = "P3D", bots: tuple[str, ...] = ()) -> Game:
    """A started Corn maze (8x8): players[0] creates it, the others join, bots sit after them."""
    plans = [core.SeatPlan() for _ in players] + [core.SeatPlan(bot=b) for b in bots]
    game = core.game_create(
        kind="cornmaze",
        creator=players[0],
        options={"size": 8},
        clock_choice=clock,
        seats=plans,
    )
    for player in players[1:]:
        core.game_join(game_id=game.pk, user=player)
    game.refresh_from_db()
    assert game.status == Game.Status.ACTIVE
    return game


def legal_move(game: Game) -> dict[str, Any]:
    """A legal move for the seat to move that does not end the game, if there is one."""
    return {"shifts": a_legal_move(game)}


def play_one(game: Game) -> int:
    """The seat to move plays a legal move; returns that seat."""
    seat = to_move(game)
    core.move_submit(
        game_id=game.pk, user=player_at(game, seat), number=game.ply, move=legal_move(game)
    )
    game.refresh_from_db()
    return seat


# --- tasks, read back from the real broker ----------------------------------------------------


@dataclass
class Queued:
    """The tasks waiting in this test's queue in Redis: what the code under test sent to the
    broker, read back without a worker taking them."""

    queue: str

    @property
    def messages(self) -> list[tuple[str, tuple[Any, ...], dict[str, Any]]]:
        """(task name, args, headers) of each message, oldest first; the headers hold `eta`
        and `expires` as ISO times."""
        import redis

        client = redis.Redis.from_url(settings.REDIS_URL)
        # Kombu pushes on the left and a worker pops on the right: oldest last.
        raw = client.lrange(self.queue, 0, -1)[::-1]
        found = []
        for item in raw:
            message = json.loads(item)
            args = json.loads(base64.b64decode(message["body"]))[0]
            found.append((message["headers"]["task"], tuple(args), message["headers"]))
        return found

    @property
    def calls(self) -> list[tuple[str, tuple[Any, ...]]]:
        return [(task, args) for task, args, _ in self.messages]

    def clear(self) -> None:
        purge_queue(self.queue)

    def of(self, name: str) -> list[tuple[Any, ...]]:
        return [args for task, args in self.calls if task == name]

    @property
    def mails(self) -> list[int]:
        return [args[0] for args in self.of("games.tasks.mail_send")]


@pytest.fixture
def queued() -> Iterator[Queued]:
    """This test's queue in Redis, empty at the start and emptied at the end."""
    if not settings.REDIS_URL:
        unavailable("the tests that read the broker need REDIS_URL")
    record = Queued(queue=settings.CELERY_TASK_DEFAULT_QUEUE)
    record.clear()
    yield record
    record.clear()


@contextmanager
def broker_unreachable() -> Iterator[None]:
    """A broker that is down, for this process: its Celery app talks to a port where nothing
    listens, on fresh connections; to the real broker again afterwards."""
    from mazesite.celery import app

    real = app.conf.broker_url
    app.conf.broker_url = f"redis://127.0.0.1:{free_port()}/0"
    _connections_drop(app)
    try:
        yield
    finally:
        app.conf.broker_url = real
        _connections_drop(app)


def _connections_drop(app: Any) -> None:
    # What Celery itself resets after a fork: its pools of connections and producers, which
    # are then taken again from kombu's pools for the broker URL of the moment.
    app._pool = None
    app.amqp._producer_pool = None


# --- a real SMTP server -----------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Inbox:
    """An aiosmtpd handler that keeps every message it is given."""

    def __init__(self) -> None:
        self.messages: list[EmailMessage] = []
        self.port = 0
        self.held: list[str] = []
        self._hold_for: set[str] = set()
        self._released = threading.Event()

    def hold(self, *addresses: str) -> None:
        """The first message to each of these addresses gets no answer until `release()`, and
        is then refused: a send cut off before the server accepted the mail."""
        self._hold_for = set(addresses)

    def release(self) -> None:
        self._released.set()

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        held = self._hold_for.intersection(envelope.rcpt_tos)
        if held:
            self._hold_for -= held
            self.held.extend(held)
            await asyncio.get_running_loop().run_in_executor(None, self._released.wait)
            return "451 4.3.0 Not accepted, try again later"
        raw = envelope.original_content or envelope.content
        message = email.message_from_bytes(raw, policy=email.policy.default)
        assert isinstance(message, EmailMessage)
        self.messages.append(message)
        return "250 Message accepted for delivery"

    def wait_for(self, count: int, timeout: float = 60) -> list[EmailMessage]:
        deadline = time.monotonic() + timeout
        while len(self.messages) < count and time.monotonic() < deadline:
            time.sleep(0.1)
        return list(self.messages)


@pytest.fixture
def smtp_server() -> Iterator[Inbox]:
    inbox = Inbox()
    inbox.port = free_port()
    controller = Controller(inbox, hostname="127.0.0.1", port=inbox.port)
    controller.start()
    try:
        yield inbox
    finally:
        inbox.release()
        controller.stop()


def text_and_html(message: EmailMessage) -> tuple[str, str]:
    text = message.get_body(preferencelist=("plain",))
    html = message.get_body(preferencelist=("html",))
    assert text is not None and html is not None
    return str(text.get_content()), str(html.get_content())


# --- a real Celery worker and beat ------------------------------------------------------------


@dataclass
class WorkerProcess:
    """`celery worker --beat` in a subprocess; it can be killed (-9) and started again."""

    env: dict[str, str]
    queue: str
    folder: Path
    log: Path
    process: subprocess.Popen[bytes] | None = None
    starts: int = field(default=0)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def sweeps_done(self) -> int:
        """How many sweeps the worker has finished, by its log."""
        return sum(
            "games.tasks.sweep_deadlines[" in line and " succeeded " in line
            for line in self.output().splitlines()
        )

    def wait_for_sweeps(self, count: int) -> None:
        """Wait until `count` more sweeps have finished: what they found due was queued."""
        target = self.sweeps_done() + count
        wait_until(lambda: self.sweeps_done() >= target, timeout=60, what=f"{count} sweeps")

    def start(self) -> None:
        """Start the worker and wait until it is ready."""
        self.starts += 1
        ready_before = self.output().count(" ready.") if self.log.exists() else 0
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [
                    str(Path(sys.executable).with_name("celery")),
                    "-A",
                    "mazesite",
                    "worker",
                    "--beat",
                    f"--schedule={self.folder / f'beat-schedule-{self.starts}'}",
                    "--pool=threads",
                    "--concurrency=4",
                    f"--queues={self.queue}",
                    f"--hostname=clocks-{uuid.uuid4().hex[:8]}@%h",
                    "--without-gossip",
                    "--without-mingle",
                    "--loglevel=INFO",
                ],
                env=self.env,
                cwd=BASE_DIR,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        wait_until(
            lambda: self.output().count(" ready.") > ready_before,
            timeout=60,
            what="the worker to start",
        )

    def kill(self) -> None:
        """kill -9 the worker and the beat it runs, as a crash would: no task is finished, no
        message acknowledged, no lock released but by the database noticing the lost
        connection."""
        assert self.process is not None
        pids = [self.process.pid, *_children(self.process.pid)]
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        self.process.wait(timeout=10)
        self.process = None

    def stop(self) -> None:
        if self.process is None:
            return
        pids = _children(self.process.pid)
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        schedule = f"--schedule={self.folder / f'beat-schedule-{self.starts}'}"
        for pid in pids:  # the embedded beat, if it outlived the worker (and is still ours)
            with suppress(OSError):
                if schedule in Path(f"/proc/{pid}/cmdline").read_text().split("\0"):
                    os.kill(pid, signal.SIGKILL)
        self.process = None


def _children(pid: int) -> list[int]:
    """The processes `pid` started (Linux)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        with suppress(OSError):
            found += [int(child) for child in task.read_text().split()]
    return found


def purge_queue(queue: str) -> None:
    from mazesite.celery import app

    with app.connection_for_write() as conn:
        conn.default_channel.queue_purge(queue)


@pytest.fixture
def celery_worker_process(
    transactional_db: None, smtp_server: Inbox, tmp_path: Path
) -> Iterator[WorkerProcess]:
    """`celery worker --beat` in a subprocess, on this test's database, this test's queue in
    Redis and the SMTP server above, sweeping and writing its heartbeat every second."""
    if not settings.REDIS_URL:
        unavailable("the worker tests need REDIS_URL")
    db = connection.settings_dict
    database_url = (
        f"postgres://{db['USER'] or 'postgres'}@{db['HOST'] or '127.0.0.1'}:"
        f"{db['PORT'] or 5432}/{db['NAME']}"
    )
    queue = settings.CELERY_TASK_DEFAULT_QUEUE
    purge_queue(queue)
    env = dict(os.environ)
    env.pop("PYTEST_XDIST_WORKER", None)  # the queue name below is complete already
    env.update(
        DATABASE_URL=database_url,
        REDIS_URL=settings.REDIS_URL,
        CELERY_QUEUE=queue,
        EMAIL_HOST="127.0.0.1",
        EMAIL_PORT=str(smtp_server.port),
        EMAIL_BACKEND="django.core.mail.backends.smtp.EmailBackend",
        SWEEP_INTERVAL_SECONDS="1",
        WORKER_HEARTBEAT_SECONDS="1",
        SITE_URL=settings.SITE_URL,
        DJANGO_SETTINGS_MODULE="mazesite.settings",
        LOG_LEVEL="INFO",
    )
    worker = WorkerProcess(env=env, queue=queue, folder=tmp_path, log=tmp_path / "worker.log")
    try:
        worker.start()
        yield worker
    finally:
        worker.stop()
        connection.close()


def wait_until(check: Callable[[], bool], *, timeout: float, what: str) -> None:
    """Poll (every 0.1 s) until `check()` holds; the clock under test is never slept through."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)
