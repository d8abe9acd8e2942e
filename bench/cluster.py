"""The site as it would run on several machines, on this one, with faults (make cluster).

    .venv/bin/python bench/cluster.py                  # 150 s of load, five faults
    .venv/bin/python bench/cluster.py --seconds 90 --keep

From a clean clone with Debian's packages: PostgreSQL's server binaries (/usr/lib/postgresql/*)
and Redis' (`redis-server`) must be there; HAProxy is installed with apt-get if it is missing.
Everything lives under var/cluster/ (removed first) on its own ports, never the shared
services on 5432/6379:

- PostgreSQL primary (initdb, port 5491) and a streaming replica made with pg_basebackup
  (5492), both run as the `postgres` user (initdb refuses root);
- Redis on 6391, with an append-only file fsynced at every write (a restart loses no task);
- two gunicorn nodes (8311, 8312) behind HAProxy on 8310, which health-checks /healthz;
- one events process per web node (uvicorn mazesite.events:app, 8313, 8314), the live races'
  streams `/games/<id>/events` routed to them by the same HAProxy (health-checked on their
  /healthz, also `/events/healthz` on the balancer); the pages' RACE_EVENTS_ORIGIN is the
  balancer's;
- two Celery workers and two beats (mazesite/beat.py: one schedules, the other waits);
- an SMTP server of this bench's own (8319) that counts the mails;
- a supervisor, as systemd's Restart=always: a web, events, worker or beat process that exits
  by itself is started again a second later, and listed in the report.

Players through the balancer: pairs of guests playing Corn maze and Robot Maze Race, and pairs
of people with verified addresses and "your turn" mails on; and games whose clock runs out
during the run (their deadline set a few seconds ahead by SQL). Guests keep live races against
two bots going (a new one when one ends), spectators hold their event streams through the
balancer, and so does one runner: each stream as a browser's EventSource, again 2 s after it is
lost, with Last-Event-ID. While they play, the faults, each with its window (from the fault
until 10 s after it is repaired):

1. one web node and its events process killed with SIGKILL, both started again 10 s later;
2. one worker killed with SIGKILL, started again 5 s later;
3. Redis restarted (SIGTERM, started again 3 s later);
4. the replica restarted (pg_ctl restart);
5. the beat that schedules killed with SIGKILL (the other takes the lock), started again 5 s
   later (as the standby).

Then the load stops, the mails settle, and it prints: acknowledged moves lost, moves applied
twice, mails sent twice or never, timeouts missed, beats that scheduled at once, event streams
that did not resume after a loss, versions a stream never got (each version published on the
race channel while it followed the race, or a later one, within 5 s, or 5 s after the window
it fell in; and the race's version in the database when the load stopped), and errors (5xx, no
answer, a stream lost) outside the faults' windows. The target is 0 for each; the exit status is 0
only then.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))

from bench import load  # noqa: E402

VAR = BASE_DIR / "var" / "cluster"
BIN = Path(sys.executable).parent
PRIMARY_PORT, REPLICA_PORT, REDIS_PORT = 5491, 5492, 6391
BALANCER_PORT, WEB_PORTS, SMTP_PORT = 8310, (8311, 8312), 8319
EVENTS_PORTS = (8313, 8314)  # one events process per web node
QUEUE = "mazesite-cluster"
WINDOW_AFTER = 10.0  # a fault's window lasts until this long after it is repaired
DELIVER_WITHIN = 5.0  # a published version reaches every stream this soon (after a window)


def say(text: str) -> None:
    print(f"cluster | {text}", flush=True)


# --- processes -----------------------------------------------------------------------------


@dataclass
class Proc:
    name: str
    command: list[str]
    env: dict[str, str] | None = None
    process: subprocess.Popen[bytes] | None = None
    down: bool = True  # stopped on purpose (a fault, the end): the supervisor leaves it
    lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> None:
        with self.lock:
            self.spawn()

    def spawn(self) -> None:
        """Start it (the caller holds the lock)."""
        log = (VAR / f"{self.name}.log").open("ab")
        self.process = subprocess.Popen(
            self.command, cwd=BASE_DIR, env=self.env, stdout=log, stderr=subprocess.STDOUT
        )
        self.down = False

    def kill(self, sig: int = signal.SIGKILL) -> None:
        with self.lock:
            self.down = True
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(20)
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()

    def stop(self) -> None:
        self.kill(signal.SIGTERM)


def supervise(procs: list[Proc], stop: threading.Event, exits: list[tuple[float, str]]) -> None:
    """As a process manager does (systemd's Restart=always): a process that exits by itself
    is started again a second later, and its exit is kept for the report."""
    while not stop.wait(0.5):
        for p in procs:
            with p.lock:
                code = None if p.down or p.process is None else p.process.poll()
            if code is None:
                continue
            found = LAST_WORDS.findall((VAR / f"{p.name}.log").read_text(errors="replace"))
            what = f"{p.name} exited by itself (status {code}" + (
                f": {found[-1][:160]})" if found else ")"
            )
            exits.append((time.monotonic(), what))
            say(f"{what}; started again")
            stop.wait(1)
            with p.lock:
                if not p.down:
                    p.spawn()


LAST_WORDS = re.compile(r"CRITICAL/MainProcess\] (.*)")


def pg_bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if not found:
        raise SystemExit(f"PostgreSQL's {name} is missing: apt-get install -y postgresql")
    return found[-1]


def as_postgres(*command: str) -> None:
    subprocess.run(["runuser", "-u", "postgres", "--", *command], check=True, cwd="/tmp")


def pg_ctl(data: Path, action: str, port: int) -> None:
    as_postgres(
        pg_bin("pg_ctl"),
        "-D",
        str(data),
        "-l",
        str(VAR / f"{data.name}.log"),
        "-o",
        f"-p {port} -k {VAR}",
        "-w",
        "-t",
        "60",
        "-m",
        "fast",
        action,
    )


def haproxy_present() -> str:
    found = shutil.which("haproxy") or (
        "/usr/sbin/haproxy" if Path("/usr/sbin/haproxy").exists() else None
    )
    if found:
        return found
    say("HAProxy is missing: apt-get update && apt-get install -y haproxy (Debian's package)")
    subprocess.run(["apt-get", "update", "-qq"], check=True)
    subprocess.run(
        ["apt-get", "install", "-y", "-qq", "haproxy"],
        check=True,
        env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
    )
    return shutil.which("haproxy") or "/usr/sbin/haproxy"


HAPROXY_CFG = """
global
    maxconn 4000
defaults
    mode http
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    # A health check answered after 1 s on a busy machine is slow, not a dead node (that one
    # refuses the connection at once): the checks still run every second.
    timeout check 3s
    retries 3
    option redispatch
    # Only a request that never reached a node is sent to another: never a POST twice.
    retry-on conn-failure empty-response
    option http-server-close
frontend site
    bind 127.0.0.1:{balancer}
    option forwardfor
    # The live races' event streams, and the events processes' own health (/events/healthz).
    acl race_events path_reg ^/games/[0-9]+/events$
    acl events_health path /events/healthz
    use_backend events if race_events || events_health
    default_backend web
backend web
    balance roundrobin
    option httpchk GET /healthz
    http-check send hdr Host 127.0.0.1
    default-server inter 1s fall 2 rise 2
{servers}
backend events
    balance leastconn
    # A stream is open for as long as a race lasts (a comment every SSE_HEARTBEAT_SECONDS).
    timeout server 1h
    option httpchk GET /healthz
    http-check send hdr Host 127.0.0.1
    http-request set-path /healthz if {{ path /events/healthz }}
    default-server inter 1s fall 2 rise 2
{events}
"""


class Cluster:
    def __init__(self) -> None:
        self.env: dict[str, str] = {}
        self.web: list[Proc] = []
        self.workers: list[Proc] = []
        self.beats: list[Proc] = []
        self.events: list[Proc] = []
        self.others: list[Proc] = []
        self.redis: Proc | None = None

    def start(self) -> None:
        if VAR.exists():
            self.pg_stop_quietly()
            shutil.rmtree(VAR)
        VAR.mkdir(parents=True)
        shutil.chown(VAR, "postgres")
        say("PostgreSQL primary: initdb, port 5491")
        primary, replica = VAR / "pg-primary", VAR / "pg-replica"
        as_postgres(
            pg_bin("initdb"), "-D", str(primary), "--auth=trust", "-U", "postgres", "-E", "UTF8"
        )
        with (primary / "postgresql.conf").open("a") as conf:
            conf.write(
                "listen_addresses = '127.0.0.1'\nwal_level = replica\nmax_wal_senders = 5\n"
                "hot_standby = on\nfsync = on\nmax_connections = 200\n"
            )
        pg_ctl(primary, "start", PRIMARY_PORT)
        as_postgres(pg_bin("createdb"), "-h", "127.0.0.1", "-p", str(PRIMARY_PORT), "mazesite")
        say("PostgreSQL replica: pg_basebackup -R, port 5492")
        as_postgres(
            pg_bin("pg_basebackup"),
            "-h",
            "127.0.0.1",
            "-p",
            str(PRIMARY_PORT),
            "-D",
            str(replica),
            "-R",
            "-X",
            "stream",
            "--checkpoint=fast",  # not a spread checkpoint: up to checkpoint_timeout (5 min)
        )
        pg_ctl(replica, "start", REPLICA_PORT)
        say("Redis on 6391 (append-only, fsync always)")
        self.redis = Proc(
            "redis",
            [
                shutil.which("redis-server") or "redis-server",
                "--port",
                str(REDIS_PORT),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(VAR),
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
            ],
        )
        self.redis.start()
        self.env = self.site_env()
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--noinput"],
            cwd=BASE_DIR,
            env=self.env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        subprocess.run(
            [sys.executable, "manage.py", "collectstatic", "--noinput"],
            cwd=BASE_DIR,
            env=self.env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        for i, port in enumerate(WEB_PORTS):
            env = {**self.env, "BIND": f"127.0.0.1:{port}", "GUNICORN_PROC_NAME": f"web{i + 1}"}
            self.web.append(
                Proc(
                    f"web{i + 1}",
                    [str(BIN / "gunicorn"), "-c", "gunicorn.conf.py", "mazesite.wsgi"],
                    env,
                )
            )
        for i, port in enumerate(EVENTS_PORTS):
            self.events.append(
                Proc(
                    f"events{i + 1}",
                    [str(BIN / "uvicorn"), "mazesite.events:app", "--host", "127.0.0.1"]
                    + ["--port", str(port), "--timeout-graceful-shutdown", "2"]
                    + ["--no-access-log"],
                    self.env,
                )
            )
        for i in range(2):
            self.workers.append(
                Proc(
                    f"worker{i + 1}",
                    [
                        str(BIN / "celery"),
                        "-A",
                        "mazesite",
                        "worker",
                        "--concurrency=2",
                        "--loglevel=INFO",
                        "-Q",
                        QUEUE,
                        "-n",
                        f"worker{i + 1}@%h",
                    ],
                    self.env,
                )
            )
            self.beats.append(
                Proc(
                    f"beat{i + 1}",
                    [
                        str(BIN / "celery"),
                        "-A",
                        "mazesite",
                        "beat",
                        "--loglevel=INFO",
                        f"--schedule={VAR / f'beat{i + 1}-schedule'}",
                    ],
                    self.env,
                )
            )
        servers = "\n".join(
            f"    server web{i + 1} 127.0.0.1:{port} check" for i, port in enumerate(WEB_PORTS)
        )
        events = "\n".join(
            f"    server events{i + 1} 127.0.0.1:{port} check"
            for i, port in enumerate(EVENTS_PORTS)
        )
        (VAR / "haproxy.cfg").write_text(
            HAPROXY_CFG.format(balancer=BALANCER_PORT, servers=servers, events=events)
        )
        self.others.append(Proc("haproxy", [haproxy_present(), "-f", str(VAR / "haproxy.cfg")]))
        for p in [*self.web, *self.events, *self.workers, *self.beats, *self.others]:
            p.start()

    def site_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in load.NOT_INHERITED}
        env.update(
            DJANGO_SETTINGS_MODULE="mazesite.settings",
            DEBUG="0",
            SECRET_KEY="cluster-bench-only",
            SECURE_SSL_REDIRECT="0",
            ALLOWED_HOSTS="127.0.0.1,localhost",
            SITE_URL=f"http://127.0.0.1:{BALANCER_PORT}",
            # The pages' event streams, as production has them: the balancer's origin.
            RACE_EVENTS_ORIGIN=f"http://127.0.0.1:{BALANCER_PORT}",
            DATABASE_URL=f"postgres://postgres@127.0.0.1:{PRIMARY_PORT}/mazesite",
            REPLICA_DATABASE_URL=f"postgres://postgres@127.0.0.1:{REPLICA_PORT}/mazesite",
            REDIS_URL=f"redis://127.0.0.1:{REDIS_PORT}/0",
            CELERY_QUEUE=QUEUE,
            CONN_MAX_AGE="60",
            TRUSTED_PROXIES="1",
            MAZESITE_VAR_DIR=str(VAR),
            EMAIL_HOST="127.0.0.1",
            EMAIL_PORT=str(SMTP_PORT),
            SWEEP_INTERVAL_SECONDS="5",
            HEALTH_FRESH_SECONDS="30",
            WORKER_HEARTBEAT_SECONDS="3",
            LOG_LEVEL="INFO",
            RATE_LIMITS=(
                "guest_client=1000000/10m,create_player=100000/h,join_player=100000/h,"
                "login_failed_client=100000/15m"
            ),
        )
        return env

    def pg_stop_quietly(self) -> None:
        for data, port in ((VAR / "pg-replica", REPLICA_PORT), (VAR / "pg-primary", PRIMARY_PORT)):
            if (data / "postmaster.pid").exists():
                with contextlib.suppress(subprocess.CalledProcessError):
                    pg_ctl(data, "stop", port)

    def stop(self) -> None:
        for p in [*self.others, *self.web, *self.events, *self.beats, *self.workers]:
            p.stop()
        if self.redis is not None:
            self.redis.stop()
        self.pg_stop_quietly()


# --- the players ------------------------------------------------------------------------------


@dataclass
class Seen:
    lock: threading.Lock = field(default_factory=threading.Lock)
    errors: list[tuple[float, str]] = field(default_factory=list)  # (time, what)
    acknowledged: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    unanswered: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    requests: int = 0


seen = Seen()


class ClusterClient(load.Client):
    """load.Client, each error kept with its time; a move's answer counted per game."""

    def request(
        self, name: str, method: str, path: str, data: Any = None, *, htmx: bool = False
    ) -> Any:
        status, headers, text = super().request(name, method, path, data, htmx=htmx)
        with seen.lock:
            seen.requests += 1
            if status == 0 or status >= 500:
                seen.errors.append((time.monotonic(), f"{status} {method} {path}"))
            if name.startswith("move ") and (found := re.search(r"/games/(\d+)/move", path)):
                game_id = int(found.group(1))
                if status == 200:
                    seen.acknowledged[game_id] += 1
                elif status == 0 or status >= 500:
                    seen.unanswered[game_id] += 1
        return status, headers, text


def login(client: ClusterClient, name: str, password: str) -> bool:
    client.request("login form", "GET", "/accounts/login/")
    status, _, _ = client.request(
        "login", "POST", "/accounts/login/", {"username": name, "password": password}
    )
    return status == 302


def people(count: int) -> list[tuple[str, str]]:
    """Verified people with "your turn" mails on (the default), made in the database."""
    from django.contrib.auth import get_user_model

    from games.models import Profile

    made = []
    for i in range(count):
        name, password = f"mailer{i}", f"cluster-{i}-long-passphrase"
        user = get_user_model().objects.create_user(name, f"{name}@cluster.example", password)
        Profile.objects.update_or_create(user=user, defaults={"email_verified": True})
        made.append((name, password))
    return made


def expiring_games(count: int) -> list[int]:
    """Corn mazes between bulk players whose clock runs out during the run (by 110 s)."""
    from datetime import timedelta

    from django.contrib.auth import get_user_model

    from games.clock import now
    from games.models import Seat
    from games.play import core as services
    from games.play import vacations

    made = []
    users = [get_user_model().objects.create_user(f"sleeper{i}") for i in range(count * 2)]
    for user in users:
        # A registered player's passed deadline starts an automatic vacation (issue 14), not
        # a timeout: these players have it off, so that their clocks run out.
        vacations.automatic_set(user=user, automatic=False)
    for i in range(count):
        game = services.game_create(
            kind="cornmaze",
            creator=users[2 * i],
            options={"size": 8},
            clock_choice="P3D",
            seats=[services.SeatPlan(), services.SeatPlan()],
        )
        services.game_join(game_id=game.pk, user=users[2 * i + 1])
        Seat.objects.filter(game=game, deadline__isnull=False).update(
            deadline=now() + timedelta(seconds=10 + i * 100 / max(1, count))
        )
        made.append(game.pk)
    return made


def play(
    clients: list[ClusterClient], kinds: list[str], stop: threading.Event
) -> list[threading.Thread]:
    threads = []
    for i in range(0, len(clients) - 1, 2):
        pair = load.Pair(kinds[(i // 2) % len(kinds)])
        for j, creator in ((i, True), (i + 1, False)):
            rng = random.Random(j)

            def run(
                c: ClusterClient = clients[j],
                cr: bool = creator,
                r: random.Random = rng,
                p: load.Pair = pair,
            ) -> None:
                while not stop.is_set():
                    try:
                        load.player_loop(c, p, cr, stop, r)
                    except Exception as exc:  # noqa: BLE001 - a player goes on after a fault
                        with seen.lock:
                            seen.errors.append((time.monotonic(), f"client: {exc!r}"))
                        stop.wait(0.5)

            threads.append(threading.Thread(target=run, daemon=True))
    for t in threads:
        t.start()
    return threads


# --- live races and their event streams ---------------------------------------------------------

EVENTS_URL = re.compile(r'data-events="([^"]+)"')
PAGE_VERSION = re.compile(r'<section id="game"[^>]*data-version="(\d+)"')
RETRY_SECONDS = 2.0  # as SSE_RETRY_MS tells a browser
STREAM_READ_TIMEOUT = 40.0  # more than two heartbeats (SSE_HEARTBEAT_SECONDS)


@dataclass
class Follow:
    """One stream's following of one race: when it joined, the versions it got (in order)."""

    game_id: int
    joined: float
    left: float | None = None  # when it was told `end`
    got: list[tuple[float, int]] = field(default_factory=list)


@dataclass
class Race:
    """A slot where a guest keeps a live race against two bots going: a new one when it ends."""

    guest: ClusterClient
    game_id: int = 0
    runner_url: str = ""  # the guest's own page's data-events (as=runner)
    changed: threading.Condition = field(default_factory=threading.Condition)
    opened: list[int] = field(default_factory=list)


@dataclass
class Streams:
    """Every stream's record, for the report."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    follows: list[tuple[str, Follow]] = field(default_factory=list)
    drops: list[tuple[str, float]] = field(default_factory=list)  # a stream lost, not ended
    resumed: list[tuple[str, float]] = field(default_factory=list)  # open again (200) after one
    published: list[tuple[int, int, float]] = field(default_factory=list)  # heard on the channel
    events: int = 0
    longest: float = 0.0  # the longest a connection stayed open (through the balancer)


streams = Streams()


def race_open(race: Race) -> int | None:
    """The guest opens a live race against the bots `wall` and `flood` and presses Ready."""
    guest = race.guest
    guest.request("race form", "GET", "/new/mazerace/")
    status, headers, _ = guest.request(
        "race new",
        "POST",
        "/new/mazerace/",
        {"race": "live", "seats": "3", "seat_1": "wall", "seat_2": "flood"},
    )
    found = re.search(r"/games/(\d+)/$", headers.get("location", ""))
    if status != 302 or found is None:
        return None
    game_id = int(found.group(1))
    for _ in range(10):
        status, _, text = guest.request("race page", "GET", f"/games/{game_id}/")
        url = EVENTS_URL.search(text)
        if status == 200 and url is not None:
            race.runner_url = url.group(1).replace("&amp;", "&")
            break
        time.sleep(1)
    for _ in range(10):
        status, _, _ = guest.request("race ready", "POST", f"/games/{game_id}/ready", htmx=True)
        if status == 200:
            return game_id
        time.sleep(1)
    return None


def race_keeper(race: Race, stop: threading.Event) -> None:
    from games.models import Game

    while not stop.is_set():
        game_id = race_open(race)
        if game_id is None:
            stop.wait(1)
            continue
        with race.changed:
            race.game_id = game_id
            race.opened.append(game_id)
            race.changed.notify_all()
        while not stop.wait(1):
            try:
                status = Game.objects.filter(pk=game_id).values_list("status", flat=True).get()
            except Exception:  # noqa: BLE001 - the primary answers again, or the run ends
                continue
            if status in {Game.Status.FINISHED, Game.Status.ABORTED}:
                break


class EventStream:
    """One viewer's stream through the balancer, as a browser's EventSource holds it: the URL
    from the page (data-events, on the balancer's origin), `&v=` the page's version; when the
    connection is lost, again RETRY_SECONDS later with Last-Event-ID; `end` closes it, and
    this viewer goes on to the race the guest opens next."""

    def __init__(self, name: str, race: Race, runner: bool, stop: threading.Event) -> None:
        self.name, self.race, self.runner, self.stop = name, race, runner, stop
        self.sock: socket.socket | None = None
        self.connected = False

    def run(self) -> None:
        game_id = 0
        while not self.stop.is_set():
            with self.race.changed:
                while self.race.game_id == game_id and not self.stop.is_set():
                    self.race.changed.wait(1)
                game_id = self.race.game_id
            if self.stop.is_set():
                return
            path, version = self.page(game_id)
            if path is None:
                continue
            self.follow(game_id, path, version)

    def page(self, game_id: int) -> tuple[str | None, int]:
        """The page's event stream, as site.js finds it (for the runner, the guest's page)."""
        origin = f"http://127.0.0.1:{BALANCER_PORT}/"
        client = ClusterClient(BALANCER_PORT)
        while not self.stop.is_set():
            status, _, text = client.request("race watch", "GET", f"/games/{game_id}/")
            url, version = EVENTS_URL.search(text), PAGE_VERSION.search(text)
            if status == 200 and version is not None:
                if url is None:
                    return None, -1  # the race is over already
                found = self.race.runner_url if self.runner else url.group(1)
                found = found.replace("&amp;", "&")
                if not found.startswith(origin):
                    with seen.lock:
                        seen.errors.append((time.monotonic(), f"events URL {found!r}"))
                    return None, -1
                return found[len(origin) - 1 :] + f"&v={version.group(1)}", int(version.group(1))
            self.stop.wait(1)
        return None, -1

    def follow(self, game_id: int, path: str, version: int) -> None:
        follow: Follow | None = None
        last: int | None = None
        lost_at: float | None = None
        while not self.stop.is_set():
            try:
                for event_id, name in self.events(path, last):
                    now = time.monotonic()
                    if follow is None:
                        follow = Follow(game_id, now)
                        with streams.lock:
                            streams.follows.append((self.name, follow))
                    if lost_at is not None:
                        with streams.lock:
                            streams.resumed.append((self.name, now))
                        lost_at = None
                    if name == "end":
                        follow.left = now
                        return
                    if event_id is not None:
                        last = event_id
                        follow.got.append((now, event_id))
                        with streams.lock:
                            streams.events += 1
                what = "the stream closed without end"
            except (OSError, ValueError) as exc:
                what = f"the stream failed: {exc!r}"
            if self.stop.is_set():
                return
            now = time.monotonic()
            with seen.lock:
                seen.errors.append((now, f"stream {what}"))
            if lost_at is None:
                lost_at = now
                with streams.lock:
                    streams.drops.append((self.name, now))
            self.stop.wait(RETRY_SECONDS)

    def events(self, path: str, last: int | None) -> Any:
        """(id, event name) of each event, from the opening of the connection (None, "open")."""
        sock = socket.create_connection(("127.0.0.1", BALANCER_PORT), timeout=STREAM_READ_TIMEOUT)
        self.sock = sock
        opened: float | None = None
        try:
            again = "" if last is None else f"Last-Event-ID: {last}\r\n"
            sock.sendall(
                f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
                f"Cache-Control: no-cache\r\n{again}\r\n".encode()
            )
            reader = sock.makefile("rb")
            status_line = reader.readline().decode("latin-1")
            headers = {}
            while (line := reader.readline()) not in (b"\r\n", b""):
                key, _, value = line.decode("latin-1").partition(":")
                headers[key.strip().lower()] = value.strip()
            status = int(status_line.split()[1]) if status_line.startswith("HTTP/") else 0
            if status != 200:
                raise ValueError(f"status {status} for {path}")
            opened = time.monotonic()
            yield None, "open"
            chunked = headers.get("transfer-encoding") == "chunked"
            body = b""
            while True:
                if chunked:
                    size = int(reader.readline().split(b";")[0] or b"0", 16)
                    if size == 0:
                        return
                    chunk = reader.read(size + 2)[:size]
                else:
                    chunk = reader.read1(65536)
                    if not chunk:
                        return
                body += chunk
                *done, body = body.split(b"\n\n")
                for raw in done:
                    fields = dict(
                        line.split(": ", 1)
                        for line in raw.decode().split("\n")
                        if line and not line.startswith(":") and ": " in line
                    )
                    if "event" in fields:
                        event_id = fields.get("id")
                        yield (int(event_id) if event_id else None), fields["event"]
        finally:
            if opened is not None:
                with streams.lock:
                    streams.longest = max(streams.longest, time.monotonic() - opened)
            self.sock = None
            sock.close()

    def close(self) -> None:
        with contextlib.suppress(OSError):
            if self.sock is not None:
                self.sock.shutdown(socket.SHUT_RDWR)


def channel_listener(stop: threading.Event) -> None:
    """The race versions published on the cluster's Redis, as they are heard: what each stream
    must get (that version or a later one). Subscribed again at once after Redis restarts."""
    import json

    import redis

    from games import live

    while not stop.is_set():
        try:
            client = redis.Redis.from_url(
                f"redis://127.0.0.1:{REDIS_PORT}/0", socket_connect_timeout=1
            )
            pubsub = client.pubsub()
            pubsub.subscribe(live.channel())
            while not stop.is_set():
                message = pubsub.get_message(timeout=1)
                if message is not None and message["type"] == "message":
                    said = json.loads(message["data"])
                    with streams.lock:
                        streams.published.append((said["g"], said["v"], time.monotonic()))
        except Exception:  # noqa: BLE001 - Redis restarting
            stop.wait(0.1)


def live_races(
    races: int, spectators: int, stop: threading.Event, streams_stop: threading.Event
) -> tuple[list[threading.Thread], list[threading.Thread], list[EventStream]]:
    """`races` guests keeping live races going, `spectators` streams on each, and one runner's
    stream (the first guest's); the races stop with `stop`, the streams with `streams_stop`."""
    slots = [Race(ClusterClient(BALANCER_PORT)) for _ in range(races)]
    keepers = [threading.Thread(target=race_keeper, args=(r, stop), daemon=True) for r in slots]
    viewers = [
        EventStream(f"race{i + 1}-spectator{j + 1}", race, False, streams_stop)
        for i, race in enumerate(slots)
        for j in range(spectators)
    ]
    if slots:
        viewers.append(EventStream("race1-runner", slots[0], True, streams_stop))
    readers = [threading.Thread(target=v.run, daemon=True) for v in viewers]
    readers.append(threading.Thread(target=channel_listener, args=(streams_stop,), daemon=True))
    for t in [*keepers, *readers]:
        t.start()
    return keepers, readers, viewers


def stream_figures(
    windows: list[tuple[str, float, float]],
    checked_until: float,
    deliver_within: float,
    final: dict[int, tuple[float, int]],
) -> dict[str, int]:
    """Streams that did not resume after a loss (open again within `deliver_within` s of the
    loss, or of the end of the fault's window it fell in), and versions a stream never got:
    each version published while it followed the race, or a later one, by `deliver_within`
    s after it was published (after the end of the window it was published in); and the
    version each race had in the database when the load stopped (`final`: game -> (when,
    version)), by `deliver_within` s after that, for every stream still on it."""

    def due(at: float) -> float:
        ends = [end for _, begin, end in windows if begin <= at <= end]
        return max([at, *ends]) + deliver_within

    not_resumed = 0
    for name, at in streams.drops:
        if due(at) > checked_until:
            continue
        if not any(n == name and at <= t <= due(at) for n, t in streams.resumed):
            not_resumed += 1
    by_game: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for game_id, version, at in streams.published:
        by_game[game_id].append((version, at))
    never = 0
    for _, follow in streams.follows:
        for version, at in by_game.get(follow.game_id, []):
            if at < follow.joined or (follow.left is not None and at > follow.left):
                continue
            by = due(at)
            if by > checked_until:
                continue
            if not any(v >= version and t <= by for t, v in follow.got):
                never += 1
        if follow.left is None and follow.game_id in final:
            at, version = final[follow.game_id]
            if at >= follow.joined and not any(
                v >= version and t <= at + deliver_within for t, v in follow.got
            ):
                never += 1
    return {"streams that did not resume": not_resumed, "versions a spectator never got": never}


# --- the run ---------------------------------------------------------------------------------


def wait_healthy(port: int, timeout: float) -> bool:
    return load.wait_http(port, "/healthz", timeout)


def events_healthy(port: int, timeout: float) -> bool:
    """An events process (or, on the balancer, one of them) listening on the race channel."""
    return load.wait_http(port, "/healthz" if port != BALANCER_PORT else "/events/healthz", timeout)


def races_now() -> dict[int, tuple[float, int]]:
    """The version of every followed race that is still running, from the database, now."""
    from games.models import Game

    at = time.monotonic()
    with streams.lock:
        followed = {f.game_id for _, f in streams.follows if f.left is None}
    over = [Game.Status.FINISHED, Game.Status.ABORTED]
    rows = (
        Game.objects.filter(pk__in=followed).exclude(status__in=over).values_list("pk", "version")
    )
    return {pk: (at, version) for pk, version in rows}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=150.0)
    parser.add_argument("--guests", type=int, default=16)
    parser.add_argument("--mailers", type=int, default=6)
    parser.add_argument("--expiring", type=int, default=10)
    parser.add_argument("--races", type=int, default=2, help="live races kept going at once")
    parser.add_argument("--spectators", type=int, default=3, help="event streams per race")
    parser.add_argument("--keep", action="store_true", help="leave the cluster's var dir")
    args = parser.parse_args()
    if os.geteuid() != 0 and not shutil.which("runuser"):
        raise SystemExit("run as root (PostgreSQL's servers run as the postgres user)")
    cluster = Cluster()
    import logging

    from aiosmtpd.controller import Controller

    from bench.soak import Inbox

    logging.getLogger("mail.log").setLevel(logging.WARNING)
    inbox = Inbox()
    smtp = Controller(inbox, hostname="127.0.0.1", port=SMTP_PORT)
    smtp.start()
    windows: list[tuple[str, float, float]] = []
    exits: list[tuple[float, str]] = []
    supervising = threading.Event()
    try:
        cluster.start()
        os.environ.update(cluster.env)
        import django

        django.setup()
        if not wait_healthy(BALANCER_PORT, 120) or not events_healthy(BALANCER_PORT, 60):
            say(f"the balancer did not answer 200 on /healthz within 120 s; logs in {VAR}")
            return 2
        threading.Thread(
            target=supervise,
            args=(
                [*cluster.web, *cluster.events, *cluster.workers, *cluster.beats],
                supervising,
                exits,
            ),
            daemon=True,
        ).start()
        say(
            "the cluster is up: "
            + ", ".join(
                p.name
                for p in [
                    *cluster.web,
                    *cluster.events,
                    *cluster.workers,
                    *cluster.beats,
                    *cluster.others,
                ]
            )
        )
        expiring = expiring_games(args.expiring)
        mailers = people(args.mailers)
        clients = [ClusterClient(BALANCER_PORT) for _ in range(args.guests)]
        mail_clients = []
        for name, password in mailers:
            c = ClusterClient(BALANCER_PORT)
            if login(c, name, password):
                mail_clients.append(c)
        say(
            f"{len(clients)} guests, {len(mail_clients)} people with mail, "
            f"{len(expiring)} clocks running out"
        )
        stop, streams_stop = threading.Event(), threading.Event()
        load.rec.on = False
        keepers, readers, viewers = live_races(args.races, args.spectators, stop, streams_stop)
        say(
            f"{args.races} live races kept going, {len(viewers)} event streams through the balancer"
        )
        threads = (
            play(clients, ["cornmaze", "robotmaze"], stop)
            + play(mail_clients, ["cornmaze"], stop)
            + archive_readers(2, stop)
            + keepers
        )
        started = time.monotonic()
        step = args.seconds / 7

        def at(seconds: float) -> None:
            time.sleep(max(0.0, started + seconds - time.monotonic()))

        def window(name: str, begin: float) -> None:
            windows.append((name, begin, time.monotonic() + WINDOW_AFTER))
            say(f"{name}: repaired")

        at(step)
        begin = time.monotonic()
        say("fault 1: web1 and its events process killed with SIGKILL")
        cluster.web[0].kill()
        cluster.events[0].kill()
        time.sleep(10)
        cluster.web[0].start()
        cluster.events[0].start()
        wait_healthy(WEB_PORTS[0], 60)
        events_healthy(EVENTS_PORTS[0], 60)
        window("web node killed", begin)
        at(2 * step)
        begin = time.monotonic()
        say("fault 2: worker1 killed with SIGKILL")
        cluster.workers[0].kill()
        time.sleep(5)
        cluster.workers[0].start()
        window("worker killed", begin)
        at(3 * step)
        begin = time.monotonic()
        say("fault 3: Redis restarted")
        assert cluster.redis is not None
        cluster.redis.stop()
        time.sleep(3)
        cluster.redis.start()
        wait_healthy(BALANCER_PORT, 90)
        for port in EVENTS_PORTS:
            events_healthy(port, 60)  # subscribed again
        window("Redis restarted", begin)
        at(4 * step)
        begin = time.monotonic()
        say("fault 4: the replica restarted")
        pg_ctl(VAR / "pg-replica", "restart", REPLICA_PORT)
        window("replica restarted", begin)
        at(5 * step)
        begin = time.monotonic()
        holder = next(
            (b for b in cluster.beats if "beat lock taken" in (VAR / f"{b.name}.log").read_text()),
            cluster.beats[0],
        )
        say(f"fault 5: {holder.name}, the beat that schedules, killed with SIGKILL")
        holder.kill()
        time.sleep(5)
        holder.start()  # it comes back as the standby
        window("scheduling beat killed", begin)
        at(args.seconds)
        stop.set()
        for t in threads:
            t.join(40)
        final = races_now()
        say(f"load stopped; the streams listen {DELIVER_WITHIN + 1:.0f} s more")
        time.sleep(DELIVER_WITHIN + 1)
        checked_until = time.monotonic()
        streams_stop.set()
        for v in viewers:
            v.close()
        for t in readers:
            t.join(10)
        live = stream_figures(windows, checked_until, DELIVER_WITHIN, final)
        say("waiting for the mails and clocks to settle")
        return report(inbox, windows, expiring, started, live, exits)
    finally:
        supervising.set()
        cluster.stop()
        smtp.stop()
        if not args.keep and VAR.exists():
            shutil.rmtree(VAR, ignore_errors=True)


def report(
    inbox: Any,
    windows: list[tuple[str, float, float]],
    expiring: list[int],
    started: float,
    live: dict[str, int],
    exits: list[tuple[float, str]],
) -> int:
    from datetime import timedelta

    from django.db.models import Count

    from bench.soak import mail_figures
    from games.clock import now
    from games.models import Game, Move, Outbox, Seat

    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        pending = Outbox.objects.filter(status=Outbox.Status.PENDING).count()
        overdue = Seat.objects.filter(
            game__status=Game.Status.ACTIVE, deadline__lt=now() - timedelta(seconds=20)
        ).count()
        if pending == 0 and overdue == 0:
            break
        time.sleep(2)
    counts = dict(
        Move.objects.filter(game_id__in=list(seen.acknowledged))
        .values_list("game_id")
        .annotate(n=Count("id"))
        .values_list("game_id", "n")
    )
    lost = sum(max(0, n - counts.get(g, 0)) for g, n in seen.acknowledged.items())
    twice = sum(
        max(0, counts.get(g, 0) - n - seen.unanswered.get(g, 0))
        for g, n in seen.acknowledged.items()
    )
    missed = Seat.objects.filter(
        game__status=Game.Status.ACTIVE, deadline__lt=now() - timedelta(seconds=20)
    ).count()
    expired_ended = Game.objects.filter(pk__in=expiring).exclude(status=Game.Status.ACTIVE).count()
    mails = mail_figures(inbox)

    def in_window(at: float) -> bool:
        return any(begin <= at <= end for _, begin, end in windows)

    outside = [what for at, what in seen.errors if not in_window(at)]
    inside = len(seen.errors) - len(outside)
    beats = beat_overlap()
    moves = sum(seen.acknowledged.values())
    print()
    print(
        f"requests: {seen.requests}, acknowledged moves: {moves} in {len(seen.acknowledged)} games"
    )
    print(f"clocks run out: {expired_ended} of {len(expiring)} games ended by the sweep")
    print(
        f"live races: {len({f.game_id for _, f in streams.follows})} followed by "
        f"{len({n for n, _ in streams.follows})} event streams; "
        f"{len(streams.published)} versions published, {streams.events} events received; "
        f"{len(streams.drops)} streams lost, {len(streams.resumed)} resumed with Last-Event-ID; "
        f"the longest connection {streams.longest:.0f} s"
    )
    print(
        f"mails: {mails['received']} received, {mails['should_have_gone']} should have gone; "
        f"rows {mails['rows']}"
    )
    print(f"errors inside the faults' windows: {inside}")
    for name, begin, end in windows:
        kinds: dict[str, int] = defaultdict(int)
        for at, what in seen.errors:
            if begin <= at <= end:
                kinds[what.split(" ")[0]] += 1
        print(
            f"  {name}: {begin - started:.0f} s to {end - started:.0f} s: "
            + (", ".join(f"{n} x {k}" for k, n in sorted(kinds.items())) or "none")
        )
    figures = {
        "acknowledged moves lost": lost,
        "moves applied twice": twice,
        "mails sent twice": mails["doubled"],
        "mails never sent": mails["lost"],
        "timeouts missed": missed + (len(expiring) - expired_ended),
        "beats scheduling at once": beats,
        **live,
        "errors outside the faults' windows": len(outside),
    }
    for name, value in figures.items():
        print(f"{name:<38} {value}")
    for what in outside[:10]:
        print(f"  outside a window: {what}")
    # Not a fault of this bench's: a process manager starts such a process again (as the
    # supervisor here did); the figures above say whether anything was lost meanwhile.
    print(f"processes that exited by themselves (started again): {len(exits)}")
    for at, what in exits:
        print(f"  {at - started:.0f} s: {what}")
    return 0 if not any(figures.values()) else 1


BEAT_SENT = re.compile(
    r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),\d+: INFO/MainProcess\] Scheduler: Sending due task"
)


def beat_overlap() -> int:
    """Sweeps the two beats both queued within 2 s of each other (0 when one schedules)."""
    from datetime import datetime

    sent = []
    for name in ("beat1", "beat2"):
        text = (VAR / f"{name}.log").read_text(errors="replace")
        sent.append([datetime.fromisoformat(t) for t in BEAT_SENT.findall(text)])
    return sum(1 for a in sent[0] if any(abs((a - b).total_seconds()) <= 2 for b in sent[1]))


def archive_readers(count: int, stop: threading.Event) -> list[threading.Thread]:
    """Readers of the archive and the player pages: the replica's load."""

    def run() -> None:
        client = ClusterClient(BALANCER_PORT)
        while not stop.is_set():
            client.request("archive", "GET", "/archive/")
            client.request("player", "GET", "/players/mailer0/")
            stop.wait(0.2)

    threads = [threading.Thread(target=run, daemon=True) for _ in range(count)]
    for t in threads:
        t.start()
    return threads


if __name__ == "__main__":
    sys.exit(main())
