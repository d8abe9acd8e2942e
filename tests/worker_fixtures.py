"""Fixtures and helpers for the clock, sweep, mail and worker tests. The fixtures are a plugin
of tests/conftest.py; test modules import the helpers by name."""

from __future__ import annotations

import base64
import email
import email.policy
import itertools
import json
import os
import re
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection

from games import services
from games.models import Game, Profile
from tests.conftest import a_legal_move, to_move, unavailable
from tests.conftest import seat_user as player_at

BASE_DIR = Path(__file__).resolve().parent.parent
_names = itertools.count(1)


# --- people and games ------------------------------------------------------------------------


def make_player(name: str | None = None, *, address: bool = True, verified: bool = True) -> User:
    """A registered player; with a verified address unless told otherwise."""
    name = name or f"clocks{next(_names)}-{uuid.uuid4().hex[:6]}"
    user = User.objects.create_user(
        username=name, password="a-long-passphrase", email=f"{name}@example.com" if address else ""
    )
    Profile.objects.update_or_create(user=user, defaults={"email_verified": address and verified})
    return user


def make_game(*players: User, clock: str = "P3D", bots: tuple[str, ...] = ()) -> Game:
    """A started Corn maze (8x8): players[0] creates it, the others join, bots sit after them."""
    plans = [services.SeatPlan() for _ in players] + [services.SeatPlan(bot=b) for b in bots]
    game = services.game_create(
        kind="cornmaze",
        creator=players[0],
        options={"size": 8},
        clock_choice=clock,
        seats=plans,
    )
    for player in players[1:]:
        services.game_join(game_id=game.pk, user=player)
    game.refresh_from_db()
    assert game.status == Game.Status.ACTIVE
    return game


def legal_move(game: Game) -> dict[str, Any]:
    """A legal move for the seat to move that does not end the game, if there is one."""
    return {"shifts": a_legal_move(game)}


def play_one(game: Game) -> int:
    """The seat to move plays a legal move; returns that seat."""
    seat = to_move(game)
    services.move_submit(
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

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
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
        controller.stop()


def text_and_html(message: EmailMessage) -> tuple[str, str]:
    text = message.get_body(preferencelist=("plain",))
    html = message.get_body(preferencelist=("html",))
    assert text is not None and html is not None
    return str(text.get_content()), str(html.get_content())


# --- a real Celery worker and beat ------------------------------------------------------------


@dataclass
class WorkerProcess:
    process: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def sweeps_done(self) -> int:
        """How many of the beat's sweeps the worker has finished, as its log says."""
        return len(re.findall(r"games\.tasks\.sweep_deadlines\[[^]]+\] succeeded", self.output()))

    def wait_for_sweeps(self, count: int, *, timeout: float = 30) -> None:
        """Until `count` more sweeps have finished: the sign that the worker has looked again,
        for a test that shows that nothing more happens (never a sleep)."""
        target = self.sweeps_done() + count
        wait_until(lambda: self.sweeps_done() >= target, timeout=timeout, what="more sweeps")


def purge_queue(queue: str) -> None:
    from mazesite.celery import app

    with app.connection_for_write() as conn:
        conn.default_channel.queue_purge(queue)


@pytest.fixture
def celery_worker_process(
    transactional_db: None, smtp_server: Inbox, tmp_path: Path
) -> Iterator[WorkerProcess]:
    """`celery worker --beat` in a subprocess, on this test's database, this test's queue in
    Redis and the SMTP server above, sweeping every second."""
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
        SITE_URL=settings.SITE_URL,
        DJANGO_SETTINGS_MODULE="mazesite.settings",
        LOG_LEVEL="INFO",
    )
    log = tmp_path / "worker.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [
                str(Path(sys.executable).with_name("celery")),
                "-A",
                "mazesite",
                "worker",
                "--beat",
                f"--schedule={tmp_path / 'beat-schedule'}",
                "--pool=threads",
                "--concurrency=4",
                f"--queues={queue}",
                f"--hostname=clocks-{uuid.uuid4().hex[:8]}@%h",
                "--without-gossip",
                "--without-mingle",
                "--loglevel=INFO",
            ],
            env=env,
            cwd=BASE_DIR,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    worker = WorkerProcess(process=process, log=log)
    try:
        wait_until(lambda: " ready." in worker.output(), timeout=60, what="the worker to start")
        yield worker
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        connection.close()


def wait_until(check: Callable[[], bool], *, timeout: float, what: str) -> None:
    """Poll (every 0.1 s) until `check()` holds; the clock under test is never slept through."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)
