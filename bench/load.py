"""The load bench: guests playing Corn maze and Robot Maze Race through gunicorn on PostgreSQL
with a Celery worker, against a bare one-query view in the same run (README "Performance").

    .venv/bin/python bench/load.py                          # 10, 50, 200 players, 20 s a phase
    .venv/bin/python bench/load.py --players 50 --seconds 30 --db pool
    .venv/bin/python bench/load.py --players 50 --bulk 100000   # and the 100,000-games check

It (re)creates the database `mazesite_perfbench` (`mazesite_perfbench_PORT` on another port)
on the shared PostgreSQL (BENCH_SERVER_URL, default postgres://postgres@127.0.0.1:5432),
migrates it, collects the static files, and starts gunicorn (gunicorn.conf.py, DEBUG off, port
8300 by default: 8300-8399 are this bench's) and a Celery worker on queue `mazesite-perfbench`
(`mazesite-perfbench-PORT`) of the shared Redis. Connections: `--db persistent`
(CONN_MAX_AGE=600 with health checks) or `--db pool` (psycopg's pool).

For each number of players N, phases of `--seconds` each, every client closed-loop (a request
as soon as the last one answered, one at a time, keep-alive), in this order:

1. yardstick: N clients GET /bench/yardstick (BENCH_YARDSTICK=1): one indexed query, no template;
2. play: N guests in pairs, half playing Corn mazes, half Robot Maze Races, each loop: the
   game's partial (htmx GET, "page"), then its move (POST) when it is its turn, else one poll
   (GET ?since=version, 204 when nothing changed); a finished game is followed by a new one;
3. game page: the N guests GET their game's full page;
4. lobby: the N guests GET the lobby signed in; then N clients with no cookie;
5. record.json: the N guests GET their game's record.

It prints each endpoint's throughput, p50/p95/p99 and errors (5xx or no answer; refusals, 4xx,
apart), each throughput as a ratio to the yardstick of the same N; then checks that every move
the site acknowledged (200) is in the database. With `--bulk`, it then times the lobby and a
game page with 50 clients, adds that many games by SQL (finished, a tenth running, one in a
hundred open, seats for 1,000 players) and times them again.

The client runs on the same 2 cores as the site; its own CPU time is printed.
"""

from __future__ import annotations

import argparse
import html
import http.client
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from pathlib import Path
from typing import Any

BASE_DIR = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
SERVER = os.environ.get("BENCH_SERVER_URL", "postgres://postgres@127.0.0.1:5432").rstrip("/")
DATABASE = "mazesite_perfbench"
REDIS = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
QUEUE = "mazesite-perfbench"


def names_for(port: int) -> None:
    """Two benches at once on one machine, on two ports, get their own database and queue."""
    global DATABASE, QUEUE
    if port != 8300:
        DATABASE, QUEUE = f"mazesite_perfbench_{port}", f"mazesite-perfbench-{port}"


TIMEOUT = 30.0
NOT_INHERITED = {"DATABASE_URL", "REDIS_URL", "CELERY_QUEUE", "PYTEST_XDIST_WORKER", "PORT"}

CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
MOVE_FORM = re.compile(r'<form[^>]*id="move-form"[^>]*>(.*?)</form>', re.S)
PLY = re.compile(r'name="ply" value="(\d+)"')
WAREHOUSE = re.compile(r'name="warehouse" value="([^"]*)"')
RADIO = re.compile(r'<input type="radio" name="(first|second)" id="[^"]*" value="(\w)"([^>]*)>')
VERSION = re.compile(r'<section id="game"[^>]*data-version="(\d+)"')
POLLING = re.compile(r'<section id="game"[^>]*hx-get="([^"]+)"')
REFUSAL = re.compile(r'<p class="error" role="alert" id="error">(.*?)</p>', re.S)
BLOCKED_AFTER = re.compile(r"data-blocked-after='([^']*)'")
PLAY_DISABLED = re.compile(r'<button type="submit" id="play"[^>]*disabled')


# --- what was measured -------------------------------------------------------------------------


@dataclass
class Endpoint:
    times: list[float] = field(default_factory=list)
    errors: int = 0
    refused: int = 0
    statuses: dict[int, int] = field(default_factory=lambda: defaultdict(int))


class Recorder:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.endpoints: dict[str, Endpoint] = defaultdict(Endpoint)
        self.on = False
        self.samples: list[str] = []
        self.refusals: dict[str, int] = defaultdict(int)  # "endpoint: the page's reason"

    def saw(self, name: str, status: int, seconds: float, body: str = "") -> None:
        if not self.on:
            return
        with self.lock:
            e = self.endpoints[name]
            e.statuses[status] += 1
            if status == 0 or status >= 500:
                e.errors += 1
                if len(self.samples) < 5:
                    self.samples.append(f"{name} {status}: {' '.join(body.split())[:200]}")
            elif status >= 400:
                e.refused += 1
                reason = REFUSAL.search(body)
                self.refusals[f"{name} {status}: {reason.group(1) if reason else '?'}"] += 1
            else:
                e.times.append(seconds)

    def reset(self) -> None:
        with self.lock:
            self.endpoints = defaultdict(Endpoint)


rec = Recorder()
acknowledged: dict[int, int] = defaultdict(int)  # game id -> moves answered 200
ack_lock = threading.Lock()


# --- a client ----------------------------------------------------------------------------------


class Client:
    """One browser: a keep-alive connection, cookies, one request at a time."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.conn: http.client.HTTPConnection | None = None
        self.cookies: dict[str, str] = {}
        self.token = ""

    def request(
        self,
        name: str,
        method: str,
        path: str,
        data: dict[str, str] | None = None,
        *,
        htmx: bool = False,
    ) -> tuple[int, dict[str, str], str]:
        headers = {"Host": "127.0.0.1"}
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        body = None
        if method == "POST":
            data = data or {}
            body = urllib.parse.urlencode({"csrfmiddlewaretoken": self.token, **data})
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        if htmx:
            headers["HX-Request"] = "true"
            headers["HX-Target"] = "game"
        started = time.perf_counter()
        for attempt in (1, 2):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=TIMEOUT)
                self.conn.request(method, path, body=body, headers=headers)
                response = self.conn.getresponse()
                text = response.read().decode(errors="replace")
                break
            except (OSError, http.client.HTTPException) as exc:
                if self.conn is not None:
                    self.conn.close()
                self.conn = None
                # A keep-alive connection the server closed while idle: once more, new.
                if attempt == 2 or isinstance(exc, TimeoutError):
                    rec.saw(name, 0, time.perf_counter() - started, repr(exc))
                    return 0, {}, ""
        seconds = time.perf_counter() - started
        answer = {k.lower(): v for k, v in response.getheaders()}
        for header, value in response.getheaders():
            if header.lower() == "set-cookie":
                for morsel in SimpleCookie(value).values():
                    self.cookies[morsel.key] = morsel.value
        if response.getheader("Connection", "").lower() == "close" and self.conn is not None:
            self.conn.close()
            self.conn = None
        found = CSRF.search(text)
        if found:
            self.token = found.group(1)
        rec.saw(name, response.status, seconds, text)
        return response.status, answer, text


# --- playing ---------------------------------------------------------------------------------


@dataclass
class Pair:
    kind: str
    game_id: int = 0
    ready: threading.Condition = field(default_factory=threading.Condition)


CREATE_FIELDS = {
    "cornmaze": {"size": "8", "seats": "2", "clock": "P3D", "seat_1": "person"},
    "robotmaze": {"clock": "P3D", "seat_1": "person"},
}


def game_new(client: Client, kind: str) -> int:
    client.request("new form", "GET", f"/new/{kind}/")
    status, headers, _ = client.request("new", "POST", f"/new/{kind}/", CREATE_FIELDS[kind])
    found = re.search(r"/games/(\d+)/$", headers.get("location", ""))
    return int(found.group(1)) if status == 302 and found else 0


def game_join(client: Client, game_id: int) -> bool:
    client.request("page", "GET", f"/games/{game_id}/")
    status, _, _ = client.request("join", "POST", f"/games/{game_id}/join")
    return status in (200, 302)


def move(
    client: Client, kind: str, game_id: int, form: str, rng: random.Random, form_tag: str = ""
) -> None:
    ply = PLY.search(form)
    if ply is None:
        return
    fields = {"ply": ply.group(1)}
    if kind == "cornmaze":
        radios: dict[str, list[str]] = defaultdict(list)
        for name, value, rest in RADIO.findall(form):
            if "disabled" not in rest:
                radios[name].append(value)
        if not radios["first"] or not radios["second"]:
            return
        first = rng.choice(radios["first"])
        # As the page's script does: the second shift's choices after this first one.
        found = BLOCKED_AFTER.search(form_tag)
        blocked = json.loads(html.unescape(found.group(1))).get(first, []) if found else []
        seconds = [c for c in radios["second"] if c not in blocked] or radios["second"]
        fields.update(first=first, second=rng.choice(seconds))
        name = "move cornmaze"
    elif 'name="warehouse"' in form:
        status, _, text = client.request(
            "draft robotmaze",
            "POST",
            f"/games/{game_id}/draft",
            {**fields, "warehouse": "", "action": "random"},
            htmx=True,
        )
        fresh = MOVE_FORM.search(text)
        warehouse = WAREHOUSE.search(fresh.group(1)) if fresh else None
        if status != 200 or warehouse is None or PLAY_DISABLED.search(text):
            return
        fields["warehouse"] = warehouse.group(1)
        name = "move robotmaze"
    else:
        commands = [rng.choice("RRDDUL") for _ in range(rng.randint(1, 4))]
        fields.update({f"command_{i + 1}": c for i, c in enumerate(commands)})
        fields["runs"] = str(rng.randint(1, 2))
        name = "move robotmaze"
    status, _, _ = client.request(name, "POST", f"/games/{game_id}/move", fields, htmx=True)
    if status == 200:  # acknowledged, in the timed window or not: it must be in the database
        with ack_lock:
            acknowledged[game_id] += 1


def player_loop(
    client: Client, pair: Pair, creator: bool, stop: threading.Event, rng: random.Random
) -> None:
    """Play the pair's games until `stop`: the creator makes each new game, the other joins it."""
    current = 0
    while not stop.is_set():
        if creator and pair.game_id == current:
            game_id = game_new(client, pair.kind)
            if not game_id:
                stop.wait(1)
                continue
            with pair.ready:
                pair.game_id = game_id
                pair.ready.notify_all()
        elif not creator:
            with pair.ready:
                pair.ready.wait_for(
                    lambda c=current: pair.game_id != c or stop.is_set(),  # type: ignore[misc]
                    timeout=1,
                )
            if pair.game_id == current:
                continue
            if not game_join(client, pair.game_id):
                stop.wait(1)
                continue
        current = pair.game_id
        client_game[id(client)] = current
        play_game(client, pair.kind, current, stop, rng)


client_game: dict[int, int] = {}


def play_game(
    client: Client, kind: str, game_id: int, stop: threading.Event, rng: random.Random
) -> None:
    while not stop.is_set():
        status, _, text = client.request("page", "GET", f"/games/{game_id}/", htmx=True)
        if status != 200:
            stop.wait(0.2)
            continue
        if POLLING.search(text) is None:
            return  # over
        form = MOVE_FORM.search(text)
        if form is not None:
            move(client, kind, game_id, form.group(1), rng, form.group(0)[:2000])
            continue
        version = VERSION.search(text)
        if version is None:
            continue
        # Nothing to do: one poll, as the page does, then the page again.
        client.request("poll", "GET", f"/games/{game_id}/?since={version.group(1)}", htmx=True)


# --- the phases ----------------------------------------------------------------------------------


def run_clients(
    seconds: float, clients: list[Any], work: Callable[[Any, threading.Event], None]
) -> float:
    stop = threading.Event()
    threads = [threading.Thread(target=work, args=(c, stop), daemon=True) for c in clients]
    for t in threads:
        t.start()
    time.sleep(min(2.0, seconds / 5))  # warm-up, not counted
    rec.reset()
    rec.on = True
    started = time.perf_counter()
    time.sleep(seconds)
    rec.on = False
    elapsed = time.perf_counter() - started
    stop.set()
    for t in threads:
        t.join(TIMEOUT + 5)
    return elapsed


def loop_get(
    name: str, path_of: Callable[[Any], str], *, htmx: bool = False
) -> Callable[..., None]:
    def work(client: Client, stop: threading.Event) -> None:
        while not stop.is_set():
            client.request(name, "GET", path_of(client), htmx=htmx)

    return work


@dataclass
class Row:
    name: str
    count: int
    rate: float
    p50: float
    p95: float
    p99: float
    errors: int
    refused: int
    statuses: str = ""


def rows(elapsed: float) -> list[Row]:
    out = []
    for name, e in sorted(rec.endpoints.items()):
        t = sorted(e.times) or [0.0]

        def pct(p: float, t: list[float] = t) -> float:
            return t[min(len(t) - 1, int(p * len(t)))] * 1000

        out.append(
            Row(
                name,
                len(e.times),
                len(e.times) / elapsed,
                pct(0.5),
                pct(0.95),
                pct(0.99),
                e.errors,
                e.refused,
                " ".join(f"{k}:{v}" for k, v in sorted(e.statuses.items()) if k >= 400 or k == 0),
            )
        )
    return out


def table(title: str, results: list[Row], yardstick: float) -> None:
    print(f"\n{title}")
    print(
        f"| {'endpoint':<22} | {'req/s':>7} | {'x yardstick':>11} | {'p50 ms':>7} | "
        f"{'p95 ms':>7} | {'p99 ms':>7} | {'errors':>6} | {'4xx':>5} |"
    )
    print(f"|{'-' * 24}|{'-' * 9}|{'-' * 13}|{'-' * 9}|{'-' * 9}|{'-' * 9}|{'-' * 8}|{'-' * 7}|")
    for r in results:
        ratio = r.rate / yardstick if yardstick else 0.0
        print(
            f"| {r.name:<22} | {r.rate:>7.1f} | {ratio:>11.3f} | {r.p50:>7.1f} | {r.p95:>7.1f} | "
            f"{r.p99:>7.1f} | {r.errors:>6} | {r.refused:>5} | {r.statuses}",
            flush=True,
        )


def players_run(port: int, n: int, seconds: float) -> list[Client]:
    """The phases for n players; returns the guests that sit in a game."""
    figures: dict[str, Row] = {}

    def phase(title: str, clients: list[Any], work: Callable[..., None]) -> list[Row]:
        elapsed = run_clients(seconds, clients, work)
        got = rows(elapsed)
        for r in got:
            figures[f"{title}: {r.name}"] = r
        return got

    yard = phase(
        "yardstick",
        [Client(port) for _ in range(n)],
        loop_get("yardstick", lambda c: f"/bench/yardstick?id={random.randint(1, 50)}"),
    )
    yardstick = yard[0].rate if yard else 0.0
    table(f"{n} clients: yardstick", yard, yardstick)

    # Guests, in pairs: half Corn maze, half Robot Maze Race.
    guests = [Client(port) for _ in range(max(2, n - n % 2))]
    pairs = [Pair("cornmaze" if i % 2 == 0 else "robotmaze") for i in range(len(guests) // 2)]
    roles = [(g, pairs[i // 2], i % 2 == 0, random.Random(i)) for i, g in enumerate(guests)]

    def play(role: Any, stop: threading.Event) -> None:
        client, pair, creator, rng = role
        player_loop(client, pair, creator, stop, rng)
        with pair.ready:
            pair.ready.notify_all()

    table(f"{n} players: play", phase("play", roles, play), yardstick)
    seated = [g for g in guests if client_game.get(id(g))]
    table(
        f"{n} players: game page (full page, signed in)",
        phase(
            "game page", seated, loop_get("game page", lambda c: f"/games/{client_game[id(c)]}/")
        ),
        yardstick,
    )
    table(
        f"{n} players: lobby signed in",
        phase("lobby", seated, loop_get("lobby signed in", lambda c: "/")),
        yardstick,
    )
    table(
        f"{n} clients: lobby anonymous",
        phase(
            "lobby anon",
            [Client(port) for _ in range(n)],
            loop_get("lobby anonymous", lambda c: "/"),
        ),
        yardstick,
    )
    table(
        f"{n} players: record.json",
        phase(
            "record",
            seated,
            loop_get("record.json", lambda c: f"/games/{client_game[id(c)]}/record.json"),
        ),
        yardstick,
    )
    return seated


def race_viewers(port: int, viewers: int, seconds: float) -> float:
    """A live Maze Race, a guest against two bots (the guest presses Ready and stands still;
    the bots step every tick), watched by `viewers` anonymous clients that poll the race's
    partial as fast as it answers. Returns the partials served a second: at two polls a
    second each, half that is the number of live viewers the machine serves."""
    runner = Client(port)
    runner.request("new form", "GET", "/new/mazerace/")
    status, headers, _ = runner.request(
        "new",
        "POST",
        "/new/mazerace/",
        {"race": "live", "seats": "3", "seat_1": "strong", "seat_2": "flood"},
    )
    found = re.search(r"/games/(\d+)/$", headers.get("location", ""))
    if status != 302 or found is None:
        print(f"\nlive race: could not create one ({status})")
        return 0.0
    game_id = int(found.group(1))
    runner.request("page", "GET", f"/games/{game_id}/")
    runner.request("ready", "POST", f"/games/{game_id}/ready", htmx=True)
    time.sleep(3.5)  # the countdown
    watchers = [Client(port) for _ in range(viewers)]
    elapsed = run_clients(
        seconds,
        watchers,
        loop_get("live race partial", lambda c: f"/games/{game_id}/", htmx=True),
    )
    got = rows(elapsed)
    table(f"live race {game_id}: {viewers} viewers polling its partial", got, 0.0)
    _, _, text = runner.request("page", "GET", f"/games/{game_id}/", htmx=True)
    running = POLLING.search(text) is not None
    print(f"the race was {'still running' if running else 'over'} at the end of the window")
    rate = got[0].rate if got else 0.0
    print(f"live viewers at two polls a second: about {rate / 2:.0f}")
    return rate


# --- the stack -----------------------------------------------------------------------------------


def stack_env(port: int, db_mode: str, var_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED}
    env.update(
        DJANGO_SETTINGS_MODULE="mazesite.settings",
        DEBUG="0",
        SECRET_KEY="bench-only-not-secret",
        SECURE_SSL_REDIRECT="0",
        ALLOWED_HOSTS="127.0.0.1,localhost",
        DATABASE_URL=f"{SERVER}/{DATABASE}",
        REDIS_URL=REDIS,
        CELERY_QUEUE=QUEUE,
        MAZESITE_VAR_DIR=str(var_dir),
        BENCH_YARDSTICK="1",
        LOG_LEVEL="WARNING",
        PORT=str(port),
        # Every player of the bench comes from 127.0.0.1: the per-client limits are raised;
        # the per-seat ones stay.
        RATE_LIMITS=(
            "guest_client=1000000/10m,create_player=100000/h,join_player=100000/h,"
            "signup_client=1000/h"
        ),
    )
    if db_mode == "pool":
        env.update(DB_POOL="1", CONN_MAX_AGE="0")
    else:
        env.update(CONN_MAX_AGE="600", CONN_HEALTH_CHECKS="1")
    return env


def recreate_database() -> None:
    import psycopg

    with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {DATABASE}")


def wait_http(port: int, path: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", path, headers={"Host": "127.0.0.1"})
            if conn.getresponse().status == 200:
                return True
        except OSError:
            pass
        time.sleep(0.3)
    return False


def stack_start(
    env: dict[str, str], var_dir: Path, web_args: list[str]
) -> list[subprocess.Popen[bytes]]:
    log = (var_dir / "stack.log").open("ab")
    web = subprocess.Popen(
        [
            str(BIN / "gunicorn"),
            "-c",
            str(BASE_DIR / "gunicorn.conf.py"),
            *web_args,
            "mazesite.wsgi",
        ],
        cwd=BASE_DIR,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    worker = subprocess.Popen(
        [
            str(BIN / "celery"),
            "-A",
            "mazesite",
            "worker",
            "--concurrency=1",
            "--loglevel=WARNING",
            "-Q",
            QUEUE,
            "-n",
            f"perfbench-{os.getpid()}@%h",
        ],
        cwd=BASE_DIR,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    return [web, worker]


def stack_stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for p in processes:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in processes:
        try:
            p.wait(20)
        except subprocess.TimeoutExpired:
            p.kill()


def manage(env: dict[str, str], *args: str) -> None:
    subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=BASE_DIR,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )


# --- afterwards ----------------------------------------------------------------------------------


def moves_check(env: dict[str, str]) -> tuple[int, int]:
    """(acknowledged, lost): each game's moves answered 200 against its rows in the database."""
    import psycopg

    with psycopg.connect(env["DATABASE_URL"]) as conn:
        counts: dict[int, int] = dict(
            conn.execute(
                "SELECT game_id, count(*) FROM games_move WHERE game_id = ANY(%s) GROUP BY game_id",
                [list(acknowledged)],
            ).fetchall()
        )
    lost = sum(max(0, n - counts.get(g, 0)) for g, n in acknowledged.items())
    return sum(acknowledged.values()), lost


def bulk_games(env: dict[str, str], total: int) -> int:
    """Add games by SQL, copies of a real finished one, until the database holds `total`: a
    tenth running, one in a hundred open, the rest finished; two seats each, for 1,000 players."""
    import psycopg

    with psycopg.connect(env["DATABASE_URL"], autocommit=True) as conn:
        (have,) = conn.execute("SELECT count(*) FROM games_game").fetchone() or (0,)
        template = (
            conn.execute(
                "SELECT id FROM games_game WHERE status = 'finished' ORDER BY id LIMIT 1"
            ).fetchone()
            or conn.execute("SELECT min(id) FROM games_game").fetchone()
        )
        if template is None or template[0] is None or have >= total:
            return int(have)
        columns = [
            r[0]
            for r in conn.execute(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_name = 'games_game' AND column_name <> 'id' ORDER BY ordinal_position"
            ).fetchall()
        ]
        conn.execute(
            "INSERT INTO auth_user (password, is_superuser, username, first_name, last_name, "
            "email, is_staff, is_active, date_joined) "
            "SELECT '!', false, 'bulk' || i, '', '', '', false, true, now() "
            "FROM generate_series(1, 1000) i ON CONFLICT DO NOTHING"
        )
        (first_user,) = conn.execute(
            "SELECT min(id) FROM auth_user WHERE username LIKE 'bulk%%'"
        ).fetchone() or (0,)
        picked = []
        for c in columns:
            if c == "status":
                picked.append(
                    "CASE WHEN i %% 100 = 0 THEN 'open' WHEN i %% 10 = 0 THEN 'active' "
                    "ELSE 'finished' END"
                )
            elif c in ("created_at", "started_at", "finished_at"):
                picked.append("now() - (i || ' minutes')::interval")
            else:
                picked.append(c)
        n = total - have
        conn.execute("SELECT setseed(0.5)")
        conn.execute(
            f"CREATE TEMP TABLE bulk AS WITH made AS ("
            f"INSERT INTO games_game ({', '.join(columns)}) "
            f"SELECT {', '.join(picked)} FROM games_game, generate_series(1, %s) i "
            f"WHERE games_game.id = %s RETURNING id, status) SELECT * FROM made",
            [n, template[0]],
        )
        seat_columns = [
            r[0]
            for r in conn.execute(
                "SELECT column_name FROM information_schema.columns "
                "WHERE table_name = 'games_seat' AND column_name <> 'id' ORDER BY ordinal_position"
            ).fetchall()
        ]
        seat_picked = []
        for c in seat_columns:
            if c == "game_id":
                seat_picked.append("bulk.id")
            elif c == "user_id":
                seat_picked.append(f"{first_user} + ((bulk.id * 2 + s.index) %% 1000)")
            elif c == "deadline":
                seat_picked.append("NULL")
            elif c == "place":
                seat_picked.append("CASE WHEN bulk.status = 'finished' THEN s.place ELSE NULL END")
            else:
                seat_picked.append(f"s.{c}")
        conn.execute(
            f"INSERT INTO games_seat ({', '.join(seat_columns)}) "
            f"SELECT {', '.join(seat_picked)} FROM bulk "
            f"JOIN games_seat s ON s.game_id = %s",
            [template[0]],
        )
        conn.execute("ANALYZE")
        (have,) = conn.execute("SELECT count(*) FROM games_game").fetchone() or (0,)
        return int(have)


def scale_run(
    port: int, env: dict[str, str], bulk: int, seconds: float, seated: list[Client]
) -> None:
    clients = seated[:50]
    game_of = {id(c): client_game[id(c)] for c in clients}

    def measure(label: str) -> None:
        for name, work in (
            ("lobby signed in", loop_get("lobby signed in", lambda c: "/")),
            ("game page", loop_get("game page", lambda c: f"/games/{game_of[id(c)]}/")),
        ):
            elapsed = run_clients(seconds, clients, work)
            table(f"{label}: {name}, {len(clients)} clients", rows(elapsed), 0.0)
        anon = [Client(port) for _ in clients]
        elapsed = run_clients(seconds, anon, loop_get("lobby anonymous", lambda c: "/"))
        table(f"{label}: lobby anonymous, {len(anon)} clients", rows(elapsed), 0.0)

    import psycopg

    with psycopg.connect(env["DATABASE_URL"]) as conn:
        (before,) = conn.execute("SELECT count(*) FROM games_game").fetchone() or (0,)
    measure(f"{before} games")
    started = time.perf_counter()
    after = bulk_games(env, bulk)
    print(f"\nadded {after - before} games by SQL in {time.perf_counter() - started:.1f} s")
    measure(f"{after} games")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--players", type=int, nargs="+", default=[10, 50, 200])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--port", type=int, default=8300)
    parser.add_argument("--db", choices=["persistent", "pool"], default="persistent")
    parser.add_argument("--bulk", type=int, default=0, help="then time with this many games")
    parser.add_argument("--workers", type=int, help="gunicorn workers (default: the cores)")
    parser.add_argument("--threads", type=int, help="gunicorn threads (default: 4)")
    parser.add_argument("--worker-class", help="gunicorn worker class (default: gthread)")
    parser.add_argument("--keep", action="store_true", help="leave the var dir")
    parser.add_argument(
        "--race-viewers", type=int, default=0, help="then watch a live race with this many"
    )
    args = parser.parse_args()
    if not 8300 <= args.port <= 8399:
        parser.error("--port: this bench's ports are 8300-8399")
    names_for(args.port)
    var_dir = Path(tempfile.mkdtemp(prefix="perfbench-", dir="/tmp"))
    env = stack_env(args.port, args.db, var_dir)
    if args.workers:
        env["WEB_CONCURRENCY"] = str(args.workers)
    if args.threads:
        env["GUNICORN_THREADS"] = str(args.threads)
    if args.worker_class:
        env["GUNICORN_WORKER_CLASS"] = args.worker_class
    workers = env.get("WEB_CONCURRENCY", os.cpu_count())
    worker_class = env.get("GUNICORN_WORKER_CLASS", "gthread")
    print(
        f"load | database {DATABASE}, port {args.port}, connections {args.db}, gunicorn "
        f"{workers} x {worker_class} {env.get('GUNICORN_THREADS', '4')} threads, "
        f"{os.cpu_count()} cores, var {var_dir}",
        flush=True,
    )
    recreate_database()
    manage(env, "migrate", "--noinput")
    manage(env, "collectstatic", "--noinput")
    processes = stack_start(env, var_dir, [])
    cpu_before = os.times()
    try:
        if not wait_http(args.port, "/bench/yardstick", 60):
            print("load | gunicorn did not answer within 60 s; see", var_dir / "stack.log")
            return 2
        # A few games exist before the yardstick reads them.
        seed = Client(args.port)
        for kind in ("cornmaze", "robotmaze"):
            game_new(seed, kind)
        seated: list[Client] = []
        for n in args.players:
            seated = players_run(args.port, n, args.seconds)
        if rec.samples:
            print("\nfirst errors:", *rec.samples, sep="\n  ")
        if rec.refusals:
            print("\nrefusals (4xx) in the timed windows, by reason:")
            for reason, count in sorted(rec.refusals.items(), key=lambda kv: -kv[1]):
                print(f"  {count:>5}  {reason}")
        cpu = os.times()
        print(f"\nclient CPU: {cpu.user - cpu_before.user + cpu.system - cpu_before.system:.1f} s")
        if args.race_viewers:
            race_viewers(args.port, args.race_viewers, min(args.seconds, 15.0))
        total, lost = moves_check(env)
        print(f"acknowledged moves: {total}, not in the database: {lost}")
        if args.bulk:
            scale_run(args.port, env, args.bulk, args.seconds, seated)
        return 0 if lost == 0 else 1
    finally:
        stack_stop(processes)
        if not args.keep:
            shutil.rmtree(var_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
