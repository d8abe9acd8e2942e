"""How long `manage.py ratings_recompute` takes over a million finished games.

    .venv/bin/python bench/ratings.py                     # 1,000,000 games, 20,000 players
    .venv/bin/python bench/ratings.py --games 100000      # smaller
    .venv/bin/python bench/ratings.py --reuse             # time again, no refill

It (re)creates the database `mazesite_bench_ratings` on the PostgreSQL of BENCH_DATABASE_URL
(default postgres://postgres@127.0.0.1:5432), migrates it and fills it with SQL
(generate_series, not the ORM): `--users` registered players and `--games` finished games of
the three kinds (2% aborted, which are not rated), two seats each but one Corn maze in four
with three to six, a bot in seat 1 of one game in four, places drawn at random (equal places
too), as play.core.game_end would leave them, except that no game has a rating yet.

Then it runs the recompute twice: the first also numbers the games (rating_seq, in finish
order, as for games loaded by SQL), the second is the recompute alone; and says whether both
gave the same numbers (a digest of every rating and every change), and the time a player page
takes for the player with the most rated games (its queries are bounded: tests/
test_query_counts.py)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))

from bench.databases import recreate_database  # noqa: E402

SERVER = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432").rstrip("/")
DATABASE = "mazesite_bench_ratings"


def setup_django() -> None:
    os.environ["DATABASE_URL"] = f"{SERVER}/{DATABASE}"
    os.environ["DEBUG"] = "0"
    os.environ["SECURE_SSL_REDIRECT"] = "0"
    os.environ["ALLOWED_HOSTS"] = "testserver"
    os.environ.setdefault("SECRET_KEY", "bench-only")
    os.environ.pop("REDIS_URL", None)
    os.environ["MAZESITE_VAR_DIR"] = "/tmp/mazesite-bench-var"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mazesite.settings")
    import django

    django.setup()
    from django.conf import settings

    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }


def fill(games: int, users: int) -> None:
    from django.core.management import call_command
    from django.db import connection

    started = time.perf_counter()
    call_command("migrate", verbosity=0)
    with connection.cursor() as cursor:
        cursor.execute("SELECT setseed(0.42)")
        cursor.execute(
            """
            INSERT INTO auth_user (password, is_superuser, username, first_name, last_name,
                email, is_staff, is_active, date_joined)
            SELECT '!', false, 'player' || i, '', '', '', false, true, now() - interval '2 years'
            FROM generate_series(1, %s) i
            """,
            [users],
        )
        cursor.execute("SELECT min(id) FROM auth_user")
        (first_user,) = cursor.fetchone()
        # A game a few seconds apart; one in three shares its finish time with the one before.
        cursor.execute(
            """
            INSERT INTO games_game (kind, options, clock, status, seed, seed_sha256, ply,
                version, result_reason, created_at, started_at, finished_at, rated)
            SELECT kind, '{}', 'P3D',
                CASE WHEN i %% 50 = 0 THEN 'aborted' ELSE 'finished' END,
                '\\x00'::bytea, '', 20, 20,
                CASE WHEN i %% 50 = 0 THEN 'aborted' ELSE 'exit' END,
                at - interval '9 days', at - interval '8 days', at, true
            FROM (
                SELECT i,
                    (ARRAY['cornmaze', 'robotmaze', 'mazerace'])[1 + floor(random() * 3)::int]
                        AS kind,
                    date_trunc('second', now()) - ((%(games)s - i) / 3) * interval '10 seconds'
                        AS at
                FROM generate_series(1, %(games)s) i
            ) r
            ORDER BY i
            """,
            {"games": games},
        )
        print(f"games: {time.perf_counter() - started:.0f} s")
        # Seats: 2, or 3 to 6 in one Corn maze in four; a bot in the last seat of one game in
        # four (seat 1); players drawn at random (a game's players distinct, by a stride); places
        # drawn, so equal places happen.
        cursor.execute(
            """
            INSERT INTO games_seat (game_id, index, user_id, bot, place, joined_at, finished_at)
            SELECT g.id, s.i,
                CASE WHEN g.bot_seat = s.i THEN NULL
                     ELSE %(first)s + (g.base + s.i * 7919) %% %(users)s END,
                CASE WHEN g.bot_seat = s.i THEN (ARRAY['simple', 'strong'])[1 + g.id %% 2]
                     ELSE '' END,
                CASE WHEN g.status = 'aborted' THEN NULL
                     ELSE 1 + floor(random() * g.seats)::int END,
                g.started_at, g.finished_at
            FROM (
                SELECT id, status, started_at, finished_at,
                    floor(random() * %(users)s)::int AS base,
                    CASE WHEN kind = 'cornmaze' AND id %% 4 = 1 THEN 3 + (id / 4) %% 4 ELSE 2 END
                        AS seats,
                    CASE WHEN id %% 4 = 0 THEN 1 ELSE -1 END AS bot_seat
                FROM games_game
            ) g
            JOIN generate_series(0, 5) s(i) ON s.i < g.seats
            ORDER BY g.id, s.i
            """,
            {"first": first_user, "users": users},
        )
        print(f"seats: {time.perf_counter() - started:.0f} s")
        cursor.execute("ANALYZE")
    print(f"filled in {time.perf_counter() - started:.0f} s")


def digest() -> str:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT md5(string_agg(t, '|' ORDER BY t)) FROM (
                SELECT concat_ws(',', user_id, bot, kind, mu, sigma, games) AS t
                FROM games_rating
                UNION ALL
                SELECT concat_ws(',', c.game_id, c.seat, r.user_id, r.bot, c.mu_after,
                    c.sigma_after)
                FROM games_ratingchange c JOIN games_rating r ON r.id = c.rating_id
            ) x
            """
        )
        return str(cursor.fetchone()[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=1_000_000)
    parser.add_argument("--users", type=int, default=20_000)
    parser.add_argument("--reuse", action="store_true", help="keep the database as it is")
    args = parser.parse_args()
    if not args.reuse:
        recreate_database(SERVER, DATABASE)
    setup_django()
    if not args.reuse:
        fill(args.games, args.users)

    from django.db import connection
    from django.test import Client

    from games.archive.ratings import ratings_recompute
    from games.models import Game, Rating, RatingChange

    finished = Game.objects.filter(status=Game.Status.FINISHED).count()
    times = []
    digests = []
    for run in ("first (numbers the games too)", "again (the recompute alone)"):
        start = time.perf_counter()
        rated = ratings_recompute()
        took = time.perf_counter() - start
        times.append(took)
        digests.append(digest())
        print(
            f"recompute, {run}: {rated:,} rated games of {finished:,} finished, "
            f"{RatingChange.objects.count():,} changes, {Rating.objects.count():,} ratings "
            f"in {took:.1f} s ({rated / took:,.0f} games a second)"
        )
    print("the same numbers both times:", "yes" if digests[0] == digests[1] else "NO")

    top = Rating.objects.filter(user__isnull=False).order_by("-games").select_related("user")[0]
    assert top.user is not None
    client = Client()
    url = f"/players/{top.user.username}/"
    client.get(url)
    start = time.perf_counter()
    for _ in range(20):
        assert client.get(url).status_code == 200
    page_ms = (time.perf_counter() - start) / 20 * 1000
    connection.close()
    print(f"player page of {top.user.username} ({top.games:,} rated games): {page_ms:.1f} ms")
    print(f"RESULT games={finished} recompute_s={times[1]:.1f} first_s={times[0]:.1f}")


if __name__ == "__main__":
    main()
