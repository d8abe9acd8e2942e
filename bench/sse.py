"""Live race viewers by Server-Sent Events (README "Performance"): how many spectators one
events process holds, and how soon each step reaches them.

    .venv/bin/python bench/sse.py                        # 1,000 viewers of 2 races, 20 s
    .venv/bin/python bench/sse.py --viewers 2000 --races 4 --seconds 30

It (re)creates the database `mazesite_ssebench` on the shared PostgreSQL (BENCH_SERVER_URL),
migrates it, and starts gunicorn (gunicorn.conf.py, DEBUG off, port 8330), a Celery worker on
the queue `mazesite-ssebench` of the shared Redis, and one events process (uvicorn
mazesite.events:app, port 8331). A guest opens each live race against two bots ("wall" and
"flood", the slow walkers, so that the races last) through gunicorn and presses Ready; the
worker's ticks step the bots, and each committed tick is published on the channel.

Then `--viewers` spectators, spread over the races and over `--clients` client processes,
hold an event stream each (as=watch: the spectator's board in every event). Each client
process also subscribes to the channel itself: a step's latency is from the moment its version
was published (as that process heard it from Redis) to the moment a viewer had the board of
that version. It prints the viewers connected, the events delivered a second, the latency's
p50/p95/p99 and the events process's CPU (its share of one core) and memory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.databases import recreate_database  # noqa: E402
from bench.load import BIN, NOT_INHERITED, Client, manage, stack_stop, wait_http  # noqa: E402

BASE_DIR = Path(__file__).resolve().parent.parent
SERVER = os.environ.get("BENCH_SERVER_URL", "postgres://postgres@127.0.0.1:5432").rstrip("/")
DATABASE = "mazesite_ssebench"
REDIS = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
QUEUE = "mazesite-ssebench"
CHANNEL = f"{QUEUE}:race-versions"  # games/live.py: channel()
EVENT_ID = re.compile(rb"id: (\d+)\nevent: board")


def env_for(port: int, events_port: int, var_dir: Path) -> dict[str, str]:
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
        LOG_LEVEL="WARNING",
        PORT=str(port),
        CONN_MAX_AGE="600",
        RACE_EVENTS_ORIGIN=f"http://127.0.0.1:{events_port}",
        SSE_MAX_CONNECTIONS="100000",
        RATE_LIMITS="guest_client=1000000/10m,create_player=100000/h,join_player=100000/h",
    )
    return env


def start(env: dict[str, str], var_dir: Path, events_port: int) -> list[subprocess.Popen[bytes]]:
    log = (var_dir / "stack.log").open("ab")
    common: dict[str, Any] = {"cwd": BASE_DIR, "env": env, "stdout": log, "stderr": log}
    web = subprocess.Popen(
        [str(BIN / "gunicorn"), "-c", "gunicorn.conf.py", "mazesite.wsgi"], **common
    )
    worker = subprocess.Popen(
        [str(BIN / "celery"), "-A", "mazesite", "worker", "--concurrency=1"]
        + ["--loglevel=WARNING", "-Q", QUEUE, "-n", f"ssebench-{os.getpid()}@%h"],
        **common,
    )
    events = subprocess.Popen(
        [str(BIN / "uvicorn"), "mazesite.events:app", "--host", "127.0.0.1"]
        + ["--port", str(events_port), "--no-access-log", "--log-level", "warning"]
        + ["--timeout-graceful-shutdown", "2", "--backlog", "4096"],
        **common,
    )
    return [web, worker, events]


def race_open(port: int) -> int:
    guest = Client(port)
    guest.request("new form", "GET", "/new/mazerace/")
    status, headers, _ = guest.request(
        "new",
        "POST",
        "/new/mazerace/",
        {"race": "live", "seats": "3", "seat_1": "wall", "seat_2": "flood"},
    )
    found = re.search(r"/games/(\d+)/$", headers.get("location", ""))
    if status != 302 or found is None:
        raise SystemExit(f"could not open a live race ({status})")
    game_id = int(found.group(1))
    guest.request("page", "GET", f"/games/{game_id}/")
    guest.request("ready", "POST", f"/games/{game_id}/ready", htmx=True)
    return game_id


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


# --- a client process: many viewers, one probe on the channel ------------------------------------


def clients(
    events_port: int, games: list[int], viewers: int, warmup: float, seconds: float, out: Any
) -> None:
    out.put(asyncio.run(_clients(events_port, games, viewers, warmup, seconds)))


async def _clients(
    events_port: int, games: list[int], viewers: int, warmup: float, seconds: float
) -> dict[str, Any]:
    import redis.asyncio as aioredis

    loop = asyncio.get_running_loop()
    published: dict[tuple[int, int], float] = {}
    latencies: list[float] = []
    counts = {"connected": 0, "events": 0, "unmatched": 0, "refused": 0, "dropped": 0}
    window = {"from": float("inf"), "to": float("inf")}

    async def probe() -> None:
        client = aioredis.Redis.from_url(REDIS)
        async with client.pubsub() as pubsub:
            await pubsub.subscribe(CHANNEL)
            async for message in pubsub.listen():
                if message.get("type") == "message":
                    said = json.loads(message["data"])
                    published[(said["g"], said["v"])] = loop.time()

    async def viewer(game_id: int) -> None:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", events_port)
        except OSError:
            counts["refused"] += 1
            return
        writer.write(
            f"GET /games/{game_id}/events?as=watch HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            "Accept: text/event-stream\r\n\r\n".encode()
        )
        buffer = b""
        head = True
        try:
            while True:
                data = await reader.read(262144)
                if not data:
                    counts["dropped"] += 1
                    return
                now = loop.time()
                buffer += data
                if head:
                    if b"\r\n\r\n" not in buffer:
                        continue
                    status = buffer.split(b" ", 2)[1]
                    if status != b"200":
                        counts["refused"] += 1
                        return
                    counts["connected"] += 1
                    head = False
                *events, buffer = buffer.split(b"\n\n")
                for event in events:
                    found = EVENT_ID.search(event)
                    if found is None or not window["from"] <= now <= window["to"]:
                        continue
                    counts["events"] += 1
                    at = published.get((game_id, int(found.group(1))))
                    if at is None:
                        counts["unmatched"] += 1
                    else:
                        latencies.append(now - at)
        finally:
            writer.close()

    listening = asyncio.create_task(probe())
    tasks = []
    for i in range(viewers):
        tasks.append(asyncio.create_task(viewer(games[i % len(games)])))
        if i % 100 == 99:
            await asyncio.sleep(0.05)  # no thundering herd on the accept queue
    await asyncio.sleep(warmup)
    window["from"] = loop.time()
    await asyncio.sleep(seconds)
    window["to"] = loop.time()
    for task in [*tasks, listening]:
        task.cancel()
    await asyncio.gather(*tasks, listening, return_exceptions=True)
    return {"latencies": latencies, **counts}


# --- the run -------------------------------------------------------------------------------------


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--viewers", type=int, default=1000)
    parser.add_argument("--races", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--clients", type=int, default=2, help="client processes")
    parser.add_argument("--port", type=int, default=8330)
    args = parser.parse_args()
    events_port = args.port + 1

    var_dir = Path(tempfile.mkdtemp(prefix="ssebench-"))
    env = env_for(args.port, events_port, var_dir)
    recreate_database(SERVER, DATABASE)
    manage(env, "migrate", "--noinput")
    manage(env, "collectstatic", "--noinput")
    processes = start(env, var_dir, events_port)
    try:
        if not wait_http(args.port, "/", 60):
            print((var_dir / "stack.log").read_text()[-3000:])
            raise SystemExit("gunicorn did not come up (its log is above)")
        games = [race_open(args.port) for _ in range(args.races)]
        time.sleep(3.5)  # the countdown
        events_pid = processes[2].pid
        out: Any = multiprocessing.Queue()
        per = [
            args.viewers // args.clients + (i < args.viewers % args.clients)
            for i in range(args.clients)
        ]
        warmup = 3 + args.viewers / 2000
        workers = [
            multiprocessing.Process(
                target=clients, args=(events_port, games, n, warmup, args.seconds, out)
            )
            for n in per
        ]
        for w in workers:
            w.start()
        time.sleep(warmup)
        cpu_before, wall_before = cpu_seconds(events_pid), time.monotonic()
        time.sleep(args.seconds)
        cpu = (cpu_seconds(events_pid) - cpu_before) / (time.monotonic() - wall_before)
        memory = rss_mb(events_pid)
        results = [out.get(timeout=60) for _ in workers]
        for w in workers:
            w.join(10)
        latencies = [x for r in results for x in r["latencies"]]
        total = {k: sum(r[k] for r in results) for k in results[0] if k != "latencies"}
        ms = [x * 1000 for x in latencies]
        print(f"\n{args.viewers} spectators of {args.races} live races over {args.seconds:.0f} s")
        print(
            f"connected: {total['connected']}, refused {total['refused']}, "
            f"dropped {total['dropped']}"
        )
        print(
            f"boards delivered: {total['events']} ({total['events'] / args.seconds:.0f} a second), "
            f"{total['unmatched']} without a publish heard"
        )
        if ms:
            print(
                f"latency from publish to viewer: p50 {percentile(ms, 50):.1f} ms, "
                f"p95 {percentile(ms, 95):.1f} ms, p99 {percentile(ms, 99):.1f} ms, "
                f"mean {statistics.fmean(ms):.1f} ms"
            )
        print(f"events process: {cpu * 100:.0f}% of one core, {memory:.0f} MB resident")
        states = Client(args.port)
        for game_id in games:
            _, _, text = states.request("page", "GET", f"/games/{game_id}/", htmx=True)
            running = "data-events=" in text
            print(f"race {game_id}: {'still running' if running else 'over'} at the end")
    finally:
        stack_stop(processes)
        shutil.rmtree(var_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
