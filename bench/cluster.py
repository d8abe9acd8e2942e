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
- two Celery workers and two beats (mazesite/beat.py: one schedules, the other waits);
- an SMTP server of this bench's own (8319) that counts the mails.

Players through the balancer: pairs of guests playing Corn maze and Robot Maze Race, and pairs
of people with verified addresses and "your turn" mails on; and games whose clock runs out
during the run (their deadline set a few seconds ahead by SQL). While they play, the faults,
each with its window (from the fault until 10 s after it is repaired):

1. one web node killed with SIGKILL, started again 10 s later;
2. one worker killed with SIGKILL, started again 5 s later;
3. Redis restarted (SIGTERM, started again 3 s later);
4. the replica restarted (pg_ctl restart);
5. the beat that schedules killed with SIGKILL (the other takes the lock), started again 5 s
   later (as the standby).

Then the load stops, the mails settle, and it prints: acknowledged moves lost, moves applied
twice, mails sent twice or never, timeouts missed, beats that scheduled at once, and errors
(5xx, no answer) outside the faults' windows. The target is 0 for each; the exit status is 0
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
QUEUE = "mazesite-cluster"
WINDOW_AFTER = 10.0  # a fault's window lasts until this long after it is repaired


def say(text: str) -> None:
    print(f"cluster | {text}", flush=True)


# --- processes -----------------------------------------------------------------------------


@dataclass
class Proc:
    name: str
    command: list[str]
    env: dict[str, str] | None = None
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        log = (VAR / f"{self.name}.log").open("ab")
        self.process = subprocess.Popen(
            self.command, cwd=BASE_DIR, env=self.env, stdout=log, stderr=subprocess.STDOUT
        )

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(20)
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()

    def stop(self) -> None:
        self.kill(signal.SIGTERM)


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
    retries 3
    option redispatch
    # Only a request that never reached a node is sent to another: never a POST twice.
    retry-on conn-failure empty-response
    option http-server-close
frontend site
    bind 127.0.0.1:{balancer}
    option forwardfor
    default_backend web
backend web
    balance roundrobin
    option httpchk GET /healthz
    http-check send hdr Host 127.0.0.1
    default-server inter 1s fall 2 rise 2
{servers}
"""


class Cluster:
    def __init__(self) -> None:
        self.env: dict[str, str] = {}
        self.web: list[Proc] = []
        self.workers: list[Proc] = []
        self.beats: list[Proc] = []
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
        (VAR / "haproxy.cfg").write_text(
            HAPROXY_CFG.format(balancer=BALANCER_PORT, servers=servers)
        )
        self.others.append(Proc("haproxy", [haproxy_present(), "-f", str(VAR / "haproxy.cfg")]))
        for p in [*self.web, *self.workers, *self.beats, *self.others]:
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
        for p in [*self.others, *self.web, *self.beats, *self.workers]:
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
    """Corn mazes between bulk players whose clock runs out during the run."""
    from datetime import timedelta

    from django.contrib.auth import get_user_model

    from games.clock import now
    from games.models import Seat
    from games.play import core as services

    made = []
    users = [get_user_model().objects.create_user(f"sleeper{i}") for i in range(count * 2)]
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


# --- the run ---------------------------------------------------------------------------------


def wait_healthy(port: int, timeout: float) -> bool:
    return load.wait_http(port, "/healthz", timeout)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=150.0)
    parser.add_argument("--guests", type=int, default=16)
    parser.add_argument("--mailers", type=int, default=6)
    parser.add_argument("--expiring", type=int, default=10)
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
    try:
        cluster.start()
        os.environ.update(cluster.env)
        import django

        django.setup()
        if not wait_healthy(BALANCER_PORT, 120):
            say(f"the balancer did not answer 200 on /healthz within 120 s; logs in {VAR}")
            return 2
        say(
            "the cluster is up: "
            + ", ".join(
                p.name for p in [*cluster.web, *cluster.workers, *cluster.beats, *cluster.others]
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
        stop = threading.Event()
        load.rec.on = False
        threads = (
            play(clients, ["cornmaze", "robotmaze"], stop)
            + play(mail_clients, ["cornmaze"], stop)
            + archive_readers(2, stop)
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
        say("fault 1: web1 killed with SIGKILL")
        cluster.web[0].kill()
        time.sleep(10)
        cluster.web[0].start()
        wait_healthy(WEB_PORTS[0], 60)
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
        say("load stopped; waiting for the mails and clocks to settle")
        return report(inbox, windows, expiring, started)
    finally:
        cluster.stop()
        smtp.stop()
        if not args.keep and VAR.exists():
            shutil.rmtree(VAR, ignore_errors=True)


def report(
    inbox: Any, windows: list[tuple[str, float, float]], expiring: list[int], started: float
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
        "errors outside the faults' windows": len(outside),
    }
    for name, value in figures.items():
        print(f"{name:<38} {value}")
    for what in outside[:10]:
        print(f"  outside a window: {what}")
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
