"""Where the time of a request goes: cProfile of the Corn maze move POST, the game page, the
lobby and record.json, through Django's test client (the whole middleware stack) against
PostgreSQL with DEBUG off and persistent connections (README "Performance").

    .venv/bin/python bench/profile.py                 # 200 requests of each
    .venv/bin/python bench/profile.py --requests 50 --top 30 --only move

It (re)creates the database `mazesite_perfprofile` on the shared PostgreSQL
(BENCH_SERVER_URL), makes 100 games (Corn mazes between two players, a few moves each, some
finished) and profiles each request `--requests` times after a warm-up. For each it prints the
wall time per request, the queries per request, the share of the time by part (templates, the
ORM building queries, the database driver and server round trips, middleware, the site's own
code, the rest), then the `--top` functions by their own time and by cumulative time.

Tasks a move queues go to the queue `mazesite-perfprofile` of the shared Redis, which nobody
consumes; the bench deletes it at the end.
"""

from __future__ import annotations

import argparse
import io
import os
import random
import re
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

BASE_DIR = Path(__file__).resolve().parent.parent
# Run as a script, this file's folder comes first on the path, and this file would be the
# standard library's `profile` that cProfile imports.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
import cProfile  # noqa: E402
import pstats  # noqa: E402

DATABASE = os.environ.get("BENCH_DATABASE", "mazesite_perfprofile")
QUEUE = os.environ.get("BENCH_QUEUE", "mazesite-perfprofile")

PARTS = [
    ("templates", ("django/template/", "template_partials", "games/ui/tags", "/templatetags/")),
    ("database driver + server", ("psycopg", "django/db/backends/")),
    ("ORM query building", ("django/db/models/", "django/db/utils")),
    (
        "middleware + handlers",
        (
            "django/middleware",
            "django/contrib/sessions",
            "django/contrib/auth",
            "django/core/handlers",
            "csp/",
            "django_htmx",
            "whitenoise",
            "django_prometheus",
            "mazesite/logs",
            "mazesite/dbrouter",
            "games/web/",
            "django_ratelimit",
            "structlog",
        ),
    ),
    ("cache + broker (Redis, Celery)", ("redis/", "kombu", "celery", "django/core/cache")),
    ("the site's code", ("/games/", "/mazesite/")),
    ("test client", ("django/test/",)),
]


def setup() -> None:
    sys.path.insert(0, str(BASE_DIR))
    from bench.inprocess import django_on_new_database

    django_on_new_database(DATABASE, QUEUE, RATE_LIMITS="move_seat=100000/5s")


def quiet_move(state: Any, seat: int) -> list[int]:
    from bench.inprocess import quiet_shifts

    moves = quiet_shifts(state, seat)
    return random.choice(moves)


def make_games(count: int) -> tuple[Any, Any, Any]:
    """`count` Corn mazes between pairs of players, a few moves each; returns (game, the two
    players' users) of one running game to profile."""
    from django.contrib.auth import get_user_model

    from games.engines import cornmaze
    from games.models import Game
    from games.play import core as services
    from games.play.pacing import bot_tasks_paused

    User = get_user_model()
    users = [User.objects.get_or_create(username=f"p{i}")[0] for i in range(20)]
    first = None
    with bot_tasks_paused():
        for i in range(count):
            a, b = users[i % 20], users[(i * 7 + 1) % 20 if (i * 7 + 1) % 20 != i % 20 else 0]
            game = services.game_create(
                kind="cornmaze",
                creator=a,
                options={"size": 8},
                clock_choice="P3D",
                seats=[services.SeatPlan(), services.SeatPlan()],
            )
            services.game_join(game_id=game.pk, user=b)
            for _ in range(6):
                game.refresh_from_db()
                if game.status != Game.Status.ACTIVE:
                    break
                assert game.state is not None
                (seat,) = cornmaze.to_move(game.state)
                user = game.seats.get(index=seat).user
                assert user is not None
                services.move_submit(
                    game_id=game.pk,
                    user=user,
                    number=game.ply,
                    move={"shifts": quiet_move(game.state, seat)},
                )
            game.refresh_from_db()
            if game.status != Game.Status.ACTIVE:
                continue
            if count > 1 and i % 3 == 0:
                services.game_resign(game_id=game.pk, user=b)
            elif first is None:
                first = game
    if first is None:  # every game ended within its first moves: another one
        return make_games(1)
    first.refresh_from_db()
    return first, first.seats.get(index=0).user, first.seats.get(index=1).user


STDLIB = "Python's own (not attributed)"


def part_of(filename: str) -> str:
    for part, needles in PARTS:
        if any(n in filename for n in needles):
            return part
    return STDLIB


def attribution(table: dict[Any, Any], func: Any, depth: int) -> dict[str, float]:
    """The parts a function's own time belongs to: its file's, or, for a builtin or the
    standard library (getattr, isinstance, str.join...), its callers' parts, in proportion to
    the time it spent for each caller."""
    part = part_of(func[0])
    if part != STDLIB or depth > 6:
        return {part: 1.0}
    callers = table[func][4]
    weights = {caller: figures[2] for caller, figures in callers.items() if caller in table}
    total = sum(weights.values())
    if not total:
        return {STDLIB: 1.0}
    shares: dict[str, float] = defaultdict(float)
    for caller, weight in weights.items():
        for caller_part, share in attribution(table, caller, depth + 1).items():
            shares[caller_part] += share * weight / total
    return shares


def report(
    name: str, profile: cProfile.Profile, seconds: float, n: int, queries: int, top: int
) -> None:
    stats = pstats.Stats(profile)
    total = sum(v[2] for v in stats.stats.values())  # type: ignore[attr-defined]
    parts: dict[str, float] = defaultdict(float)
    table: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    for func, (_, _, tottime, _, _) in table.items():
        for part, share in attribution(table, func, 0).items():
            parts[part] += tottime * share
    print(f"\n=== {name}: {seconds / n * 1000:.1f} ms a request (wall), {queries / n:.1f} queries")
    for part, t in sorted(parts.items(), key=lambda kv: -kv[1]):
        print(f"  {part:<32} {t / total * 100:5.1f}%  {t / n * 1000:6.2f} ms")
    for title, order, restriction in (
        ("by own time", "tottime", None),
        ("of the site's functions, by cumulative time", "cumulative", r"/(games|mazesite)/"),
    ):
        out = io.StringIO()
        chosen = pstats.Stats(profile, stream=out).sort_stats(order)
        if restriction:
            chosen.print_stats(restriction, top)
        else:
            chosen.print_stats(top)
        lines = out.getvalue().replace(str(BASE_DIR) + "/", "").splitlines()
        lines = [re.sub(r"\S*site-packages/", "", line) for line in lines]
        start = next(i for i, line in enumerate(lines) if "ncalls" in line)
        print(f"  -- top {top} {title}")
        print("\n".join("  " + line for line in lines[start : start + top + 1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--games", type=int, default=100)
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--only", choices=["move", "page", "lobby", "record"])
    args = parser.parse_args()
    setup()
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from bench.inprocess import users_settled
    from games.engines import cornmaze
    from games.models import Game

    game, a, b = make_games(args.games)
    users_settled()
    clients = {}
    for user in (a, b):
        c = Client()
        c.force_login(user)
        clients[user.pk] = c
    htmx = {"HX-Request": "true", "HX-Target": "game"}

    def move_once() -> Callable[[], Any]:
        """Prepares the next move (not timed) and returns the timed POST."""
        nonlocal game
        game.refresh_from_db()
        if game.status != Game.Status.ACTIVE:
            game, _, _ = make_games(1)
            for user in (game.seats.get(index=0).user, game.seats.get(index=1).user):
                clients.setdefault(user.pk, Client()).force_login(user)
        assert game.state is not None
        (seat,) = cornmaze.to_move(game.state)
        user = game.seats.get(index=seat).user
        letters = [chr(ord("a") + s) for s in quiet_move(game.state, seat)]
        client = clients[user.pk]
        data = {"ply": str(game.ply), "first": letters[0], "second": letters[1]}
        path = f"/games/{game.pk}/move"
        return lambda: client.post(path, data, headers=htmx)

    page_client = clients[a.pk]
    cases: dict[str, Callable[[], Callable[[], Any]]] = {
        "move": move_once,
        "page": lambda: lambda: page_client.get(f"/games/{game.pk}/"),
        "lobby": lambda: lambda: page_client.get("/"),
        "record": lambda: lambda: page_client.get(f"/games/{game.pk}/record.json"),
    }
    names = {
        "move": "Corn maze move POST (htmx)",
        "page": "game page (full, signed in)",
        "lobby": "lobby (signed in)",
        "record": "record.json",
    }
    for key, prepare in cases.items():
        if args.only and key != args.only:
            continue
        for _ in range(10):  # warm-up: templates compiled, statements prepared
            prepare()()
        profile = cProfile.Profile()
        seconds = 0.0
        queries = 0
        for _ in range(args.requests):
            request = prepare()
            with CaptureQueriesContext(connection) as captured:
                started = time.perf_counter()
                profile.enable()
                answer = request()
                profile.disable()
                seconds += time.perf_counter() - started
            assert answer.status_code == 200, (key, answer.status_code)
            queries += len(captured.captured_queries)
        report(names[key], profile, seconds, args.requests, queries, args.top)
    import redis

    redis.Redis.from_url(os.environ["REDIS_URL"]).delete(QUEUE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
