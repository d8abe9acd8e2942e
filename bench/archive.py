"""How fast the archive, a filtered archive page, a page deep in the list and a player page are
with a million finished games, through the real view stack, against a bare Django view that
runs one indexed query in the same run.

    .venv/bin/python bench/archive.py                           # 1,000,000 games, 40 moves each
    .venv/bin/python bench/archive.py --games 200000 --moves 40 # smaller
    .venv/bin/python bench/archive.py --reuse                   # time again, no refill

It (re)creates the database `mazesite_bench_archive` on the PostgreSQL of BENCH_DATABASE_URL
(default postgres://postgres@127.0.0.1:5432), migrates it and fills it with SQL
(generate_series, not the ORM): `--users` players (some guests), `--games` finished games (2%
aborted) of the three kinds and clocks, two seats each (a quarter with a bot), places (and
what play.core.game_end keeps with them: the seats' finish times, the players' results), and
`--moves` moves per game copied from one real Corn maze played by the engine, so that rows are
the size of real ones. One player (`busy`) sits in one game in a hundred; another
(`retired`) in one in a thousand of the oldest tenth, and none since.

Then, with DEBUG off and persistent connections, `django.test.Client` requests each page
`--rounds` times (after a warm-up; every round in a new order, garbage collected untimed
between requests) and prints the median and p95 of each, and
each as a ratio to the bare view; then the query plans (EXPLAIN ANALYZE, BUFFERS) of every
query each page runs.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.urls import include, path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))

from bench.databases import recreate_database  # noqa: E402

SERVER = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432").rstrip("/")
DATABASE = "mazesite_bench_archive"
BUSY = "busy"  # in one game in a hundred
RETIRED = "retired"  # one game in a thousand among the oldest tenth, none since


def bare_view(request: HttpRequest, game_id: int) -> HttpResponse:
    """The yardstick: the same middleware, one query on the primary key, no template."""
    from games.models import Game

    row = Game.objects.filter(pk=game_id).values_list("id", "kind", "ply").first()
    return HttpResponse(f"{row}", content_type="text/plain")


_FLOOR: Any = None


def floor_view(request: HttpRequest, game_id: int) -> HttpResponse:
    """A second yardstick, for context: the same one query, drawn in the site's base page
    (navigation, CSRF token, static links), as any real page is."""
    global _FLOOR
    from django.template import engines

    from games.models import Game

    if _FLOOR is None:
        _FLOOR = engines["django"].from_string(
            '{% extends "base.html" %}{% block content %}<p>{{ row }}</p>{% endblock %}'
        )
    row = Game.objects.filter(pk=game_id).values_list("id", "kind", "ply").first()
    return HttpResponse(_FLOOR.render({"row": row}, request))


def __getattr__(name: str) -> Any:
    """The bench's URLs (ROOT_URLCONF = "bench.archive"): the site's, and the bare view. Made
    when Django first asks, after setup, since the site's URLs import its models."""
    if name == "urlpatterns":
        return [
            path("bench/bare/<int:game_id>/", bare_view),
            path("bench/floor/<int:game_id>/", floor_view),
            path("", include("mazesite.urls")),
        ]
    raise AttributeError(name)


def setup_django(*, jit: bool = True) -> None:
    # PostgreSQL's JIT compiles a query whose estimated cost is high, which for a player with
    # thousands of games costs more than it saves; `--no-jit` shows the difference.
    os.environ["DATABASE_URL"] = f"{SERVER}/{DATABASE}" + ("" if jit else "?options=-c%20jit%3Doff")
    os.environ["DEBUG"] = "0"  # no query log, cached templates, as in production
    os.environ["CONN_MAX_AGE"] = "600"
    os.environ["SECURE_SSL_REDIRECT"] = "0"
    os.environ["ALLOWED_HOSTS"] = "testserver"
    os.environ.setdefault("SECRET_KEY", "bench-only")
    os.environ.pop("REDIS_URL", None)
    os.environ["MAZESITE_VAR_DIR"] = "/tmp/mazesite-bench-var"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mazesite.settings")
    import django

    django.setup()
    from django.conf import settings

    settings.ROOT_URLCONF = "bench.archive"
    # No collectstatic for a bench: plain static URLs instead of the manifest's hashed ones.
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }


def real_game(moves: int) -> tuple[bytes, dict[str, Any], list[dict[str, Any]]]:
    """A Corn maze played by the engine to at least `moves` plies: seed, final state, moves."""
    from games.engines import cornmaze

    seed = hashlib.sha256(b"mazesite bench archive").digest()
    rng = random.Random(7)
    state = cornmaze.start(seed, {"size": 8}, 2)
    played: list[dict[str, Any]] = []
    while cornmaze.result(state) is None and len(played) < moves + 200:
        (seat,) = cornmaze.to_move(state)
        options = [
            (cornmaze.apply(state, seat, {"shifts": s})[1]["end"][1], s)
            for s in cornmaze.legal_moves(state)
        ]
        if len(played) + 1 < moves:
            # Keep the marker to the left until the game is long enough, then race right.
            least = min(col for col, _ in options)
            choices = [s for col, s in options if col == least]
        else:
            best = max(col for col, _ in options)
            choices = [s for col, s in options if col == best]
        move = {"shifts": rng.choice(choices)}
        state, outcome = cornmaze.apply(state, seat, move)
        played.append({"ply": len(played) + 1, "seat": seat, "move": move, "outcome": outcome})
    return seed, state, played


def fill(games: int, moves: int, users: int) -> None:
    from django.core.management import call_command
    from django.db import connection

    from games.archive import results

    started = time.perf_counter()
    call_command("migrate", verbosity=0)
    seed, state, played = real_game(moves)
    print(f"template game: {len(played)} moves, state {len(json.dumps(state))} bytes of JSON")
    with connection.cursor() as cursor:
        cursor.execute("SELECT setseed(0.42)")
        # Players: one in ten a guest, whose name has a space; and the busy one.
        cursor.execute(
            """
            INSERT INTO auth_user (password, is_superuser, username, first_name, last_name,
                email, is_staff, is_active, date_joined)
            SELECT '!', false, CASE WHEN i %% 10 = 0 THEN 'Guest ' || i ELSE 'player' || i END,
                '', '', '', false, true, now() - interval '2 years'
            FROM generate_series(1, %s) i
            """,
            [users],
        )
        cursor.execute(
            "INSERT INTO auth_user (password, is_superuser, username, first_name, last_name, "
            "email, is_staff, is_active, date_joined) "
            "VALUES ('!', false, %s, '', '', '', false, true, now()) RETURNING id",
            [BUSY],
        )
        (busy_id,) = cursor.fetchone()
        cursor.execute(
            "INSERT INTO auth_user (password, is_superuser, username, first_name, last_name, "
            "email, is_staff, is_active, date_joined) "
            "VALUES ('!', false, %s, '', '', '', false, true, now()) RETURNING id",
            [RETIRED],
        )
        (retired_id,) = cursor.fetchone()
        cursor.execute("SELECT min(id) FROM auth_user")
        (first_user,) = cursor.fetchone()
        # Three games finish a minute; two of each three share their finish time.
        cursor.execute(
            """
            INSERT INTO games_game (kind, options, clock, status, seed, seed_sha256, state, ply,
                version, result_reason, created_by_id, created_at, started_at, finished_at)
            SELECT kind, '{"size": 8}',
                CASE WHEN kind = 'mazerace' AND rc < 0.5 THEN 'live'
                     WHEN rc < 0.8 THEN 'P3D' ELSE 'P30D' END,
                CASE WHEN i %% 50 = 0 THEN 'aborted' ELSE 'finished' END,
                %(seed)s, %(sha)s, %(state)s::jsonb,
                CASE WHEN i %% 50 = 0 THEN 0 ELSE %(ply)s END, %(ply)s,
                CASE WHEN i %% 50 = 0 THEN 'aborted'
                     ELSE (ARRAY['exit', 'exit', 'exit', 'timeout', 'resign'])[1 + i %% 5] END,
                NULL, at - interval '9 days', at - interval '8 days', at
            FROM (
                SELECT i, random() AS rc,
                    (ARRAY['cornmaze', 'robotmaze', 'mazerace'])[1 + floor(random() * 3)::int]
                        AS kind,
                    date_trunc('second', now()) - ((%(games)s - i) / 3) * interval '20 seconds'
                        - CASE WHEN i %% 3 = 2 THEN interval '2 seconds'
                               ELSE interval '0 seconds' END AS at
                FROM generate_series(1, %(games)s) i
            ) r
            ORDER BY i
            """,
            {
                "seed": seed,
                "sha": hashlib.sha256(seed).hexdigest(),
                "state": json.dumps(state),
                "ply": len(played),
                "games": games,
            },
        )
        print(f"games: {time.perf_counter() - started:.0f} s")
        # Two seats a game; a quarter have a bot in seat 1; the busy player in one in a hundred.
        cursor.execute(
            """
            INSERT INTO games_seat (game_id, index, user_id, bot, place, joined_at, finished_at)
            SELECT g.id, s.i,
                CASE WHEN s.i = 1 AND g.id %% 4 = 0 THEN NULL
                     WHEN s.i = 0 AND g.id %% 100 = 1 THEN %(busy)s
                     WHEN s.i = 0 AND g.id %% 1000 = 3 AND g.id < %(old)s THEN %(retired)s
                     ELSE %(first)s + floor(random() * %(users)s)::int END,
                CASE WHEN s.i = 1 AND g.id %% 4 = 0 THEN 'simple' ELSE '' END,
                CASE WHEN g.status = 'aborted' THEN NULL
                     WHEN (g.id %% 7 < 4) = (s.i = 0) THEN 1 ELSE 2 END,
                g.started_at, g.finished_at
            FROM games_game g CROSS JOIN (VALUES (0), (1)) s(i)
            ORDER BY g.id, s.i
            """,
            {
                "busy": busy_id,
                "retired": retired_id,
                "old": games // 10,
                "first": first_user,
                "users": users,
            },
        )
        print(f"seats: {time.perf_counter() - started:.0f} s")
        cursor.execute(
            "CREATE TEMP TABLE template_move (ply int, seat int, move jsonb, outcome jsonb)"
        )
        for m in played:
            cursor.execute(
                "INSERT INTO template_move VALUES (%s, %s, %s::jsonb, %s::jsonb)",
                [m["ply"], m["seat"], json.dumps(m["move"]), json.dumps(m["outcome"])],
            )
        cursor.execute("SELECT min(id), max(id) FROM games_game")
        low, high = cursor.fetchone()
        chunk = 50_000
        for start in range(low, high + 1, chunk):
            # A game that ended on time: its last move is the site's {"timeout": true}.
            cursor.execute(
                """
                INSERT INTO games_move (game_id, ply, seat, at, move, outcome)
                SELECT g.id, t.ply, t.seat, g.started_at + t.ply * interval '1 hour',
                    CASE WHEN g.result_reason = 'timeout' AND t.ply = g.ply
                         THEN '{"timeout": true}'::jsonb ELSE t.move END,
                    t.outcome
                FROM games_game g JOIN template_move t ON t.ply <= g.ply
                WHERE g.id >= %s AND g.id < %s
                ORDER BY g.id, t.ply
                """,
                [start, start + chunk],
            )
            done = min(high, start + chunk - 1) - low + 1
            if (done // chunk) % 4 == 0 or done >= high - low + 1:
                print(f"moves: {done:,} games, {time.perf_counter() - started:.0f} s")
    # What play.core.game_end keeps as each game ends, counted here for the games filled in.
    results.results_recount()
    print(f"results: {time.perf_counter() - started:.0f} s")
    connection.close()
    import psycopg

    with psycopg.connect(f"{SERVER}/{DATABASE}", autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE)")
    print(f"filled and analysed in {time.perf_counter() - started:.0f} s")


def catch_up() -> None:
    """A database filled by an earlier run: apply migrations made since (an index, say) and
    refresh the visibility map that index-only scans rely on."""
    import psycopg
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    connection.close()
    with psycopg.connect(f"{SERVER}/{DATABASE}", autocommit=True) as conn:
        conn.execute("VACUUM (ANALYZE) games_seat, games_game, games_playerresult")


def sizes() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT relname, n_live_tup, pg_size_pretty(pg_total_relation_size(relid))
            FROM pg_stat_user_tables WHERE relname IN
                ('games_game', 'games_seat', 'games_move', 'auth_user') ORDER BY relname
            """
        )
        for name, rows, size in cursor.fetchall():
            print(f"  {name:12} {rows:>12,} rows {size:>10}")


def pages() -> dict[str, str]:
    """The URLs timed: picked from the data, outside the timing."""
    from urllib.parse import quote, urlencode

    from django.db import connection

    from games.archive.reads import Cursor

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM games_game WHERE finished_at IS NOT NULL")
        (total,) = cursor.fetchone()
        # Setup only: where the 90% mark is. The pages themselves never use OFFSET.
        cursor.execute(
            "SELECT finished_at, id FROM games_game WHERE finished_at IS NOT NULL "
            "ORDER BY finished_at DESC, id DESC OFFSET %s LIMIT 1",
            [int(total * 0.9)],
        )
        at, deep_id = cursor.fetchone()
        # A typical player: the median number of games.
        cursor.execute(
            """
            SELECT u.username, count(*) FROM games_seat s JOIN auth_user u ON u.id = s.user_id
            WHERE u.username LIKE 'player%%' AND u.id %% 97 = 0
            GROUP BY u.username ORDER BY count(*), u.username
            """,
            [],
        )
        rows = cursor.fetchall()
        player, player_games = rows[len(rows) // 2]
        cursor.execute(
            "SELECT count(*) FROM games_seat s JOIN auth_user u ON u.id = s.user_id "
            "WHERE u.username = %s",
            [BUSY],
        )
        (busy_games,) = cursor.fetchone()
        cursor.execute(
            "SELECT max(id) FROM games_game WHERE status = 'finished' AND kind = 'cornmaze'"
        )
        (some_game,) = cursor.fetchone()
    print(f"  deep page: after game {int(total * 0.9):,} of {total:,}")
    print(f"  typical player: {player} with {player_games} games; {BUSY}: {busy_games}")
    deep = Cursor(at=at, id=deep_id).token
    return {
        "bare view (1 indexed query)": f"/bench/bare/{some_game}/",
        "base page + 1 indexed query": f"/bench/floor/{some_game}/",
        "archive, first page": "/archive/",
        "archive, deep page (90%)": f"/archive/?{urlencode({'after': deep})}",
        "archive, player + game": f"/archive/?{urlencode({'player': player, 'game': 'cornmaze'})}",
        "player page": f"/players/{quote(player)}/",
        # Beyond the brief, to see the worst case: a player in 1% of all games.
        "archive, busy player + game": (
            f"/archive/?{urlencode({'player': BUSY, 'game': 'cornmaze'})}"
        ),
        "player page, busy player": f"/players/{BUSY}/",
        "archive, retired player + game": (
            f"/archive/?{urlencode({'player': RETIRED, 'game': 'cornmaze'})}"
        ),
        "player page, retired player": f"/players/{RETIRED}/",
        # A bot sits in a quarter of all games: its seats are read along seat_bot_finished.
        "archive, bot + game + won": "/archive/?"
        + urlencode({"player": "Bot (simple)", "game": "cornmaze", "result": "won"}),
        "replay, last move": f"/games/{some_game}/replay/?ply=999",
    }


def measure(urls: dict[str, str], rounds: int) -> dict[str, list[float]]:
    from django.test import Client

    client = Client()
    times: dict[str, list[float]] = {name: [] for name in urls}
    for name, url in urls.items():
        for _ in range(5):  # warm-up: caches, connection, templates
            response = client.get(url)
            assert response.status_code == 200, (name, response.status_code)
    order = list(urls.items())
    shuffle = random.Random(1).shuffle
    for _ in range(rounds):
        # A new order each round, and the garbage of the page before collected untimed: else
        # whichever page follows the heaviest one pays for its garbage.
        shuffle(order)
        for name, url in order:
            gc.collect()
            t0 = time.perf_counter()
            response = client.get(url)
            times[name].append((time.perf_counter() - t0) * 1000)
            assert response.status_code == 200
    return times


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20, method="inclusive")[-1]


def report(times: dict[str, list[float]]) -> None:
    bare = times["bare view (1 indexed query)"]
    bare_median, bare_p95 = statistics.median(bare), p95(bare)
    print(f"\n{'page':32} {'median':>9} {'p95':>9} {'ratio med':>10} {'ratio p95':>10}")
    for name, values in times.items():
        median, high = statistics.median(values), p95(values)
        print(
            f"{name:32} {median:7.2f}ms {high:7.2f}ms "
            f"{median / bare_median:9.1f}x {high / bare_p95:9.1f}x"
        )


def plans(urls: dict[str, str]) -> None:
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client()
    for name, url in urls.items():
        with CaptureQueriesContext(connection) as captured:
            client.get(url)
        print(f"\n=== {name}: {url} ({len(captured)} queries)")
        for query in captured.captured_queries:
            sql = query["sql"]
            if not sql.lstrip().upper().startswith(("SELECT", "WITH")):
                continue
            with connection.cursor() as cursor:
                cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {sql}")
                plan = "\n".join(f"    {row[0]}" for row in cursor.fetchall())
            print(f"--- {sql[:300]}{'…' if len(sql) > 300 else ''}\n{plan}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=1_000_000)
    parser.add_argument("--moves", type=int, default=40)
    parser.add_argument("--users", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--reuse", action="store_true", help="time the database already there")
    parser.add_argument("--no-plans", action="store_true")
    parser.add_argument("--no-jit", action="store_true", help="connect with jit=off")
    args = parser.parse_args()
    if not args.reuse:
        recreate_database(SERVER, DATABASE)
    setup_django(jit=not args.no_jit)
    if not args.reuse:
        fill(args.games, args.moves, args.users)
    else:
        catch_up()
    sizes()
    urls = pages()
    report(measure(urls, args.rounds))
    if not args.no_plans:
        plans(urls)


if __name__ == "__main__":
    main()
