"""How long one deadline sweep takes, with many games and with few: its cost should grow with
the number of expired deadlines, not with the number of games.

    .venv/bin/python bench/sweep.py                      # 1,000,000 and 10,000 games
    .venv/bin/python bench/sweep.py --games 200000       # a smaller large case

For each size it (re)creates the database `mazesite_bench` on the PostgreSQL of
BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432), migrates it, fills it with SQL
(generate_series, not the ORM) with running two-seat Corn mazes, `--expired` of which have a
deadline in the past (one game in three has a 7-day time bank, half of those with weekends off:
issue 14; their deadlines are further off, and the bank is in the seats' `bank`), and times one
`sweeps.deadlines_sweep()`: the selection and the
timeouts, a batch of games at a time in one locked transaction, "game over" mails written to
the outbox. Sending is not timed: the mail task is replaced by a no-op. Prints the plan of the
sweep's query, both times and their ratio.

Vacations are in the mix (issue 14): every player has a vacation row (read with the sweep's
seats), the expired seats' players have automatic vacation off (so they time out, as before),
and `--vacations` of the games (a tenth by default) have their seat to move held by a player
on vacation, its deadline moved past the vacation, with the vacation's clock event.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import psycopg

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))

from bench.databases import recreate_database  # noqa: E402

SERVER = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432").rstrip("/")
DATABASE = "mazesite_bench"


def setup_django() -> None:
    os.environ["DATABASE_URL"] = f"{SERVER}/{DATABASE}"
    os.environ["DEBUG"] = "0"  # no query log
    os.environ.setdefault("SECRET_KEY", "bench-only")
    os.environ.pop("REDIS_URL", None)
    os.environ["MAZESITE_VAR_DIR"] = "/tmp/mazesite-bench-var"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mazesite.settings")
    import django

    django.setup()


def fill(total: int, expired: int, vacations: int | None = None) -> None:
    """`total` running games, two people each, one seat to move with a deadline; `expired` of
    them, spread over the table, ran out between a minute and a day ago."""
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.db import connection

    from games.models import Game, Profile, Vacation
    from games.play import core

    call_command("migrate", verbosity=0)
    a = User.objects.create_user("alice", email="alice@example.com")
    b = User.objects.create_user("bob", email="bob@example.com")
    c = User.objects.create_user("carol", email="carol@example.com")
    for user in (a, b, c):
        Profile.objects.create(user=user, email_verified=True)
    for user in (a, b):
        Vacation.objects.create(user=user, automatic=False)
    # One real game, one move in: its state is every game's state.
    template = core.game_create(
        kind="cornmaze",
        creator=a,
        options={"size": 8},
        clock_choice="P3D",
        seats=[core.SeatPlan(), core.SeatPlan()],
    )
    core.game_join(game_id=template.pk, user=b)
    template.refresh_from_db()
    assert template.state is not None
    from games.engines import cornmaze

    first = cornmaze.to_move(template.state)[0]
    user = a if first == 0 else b
    move = cornmaze.legal_moves(template.state)[0]
    core.move_submit(game_id=template.pk, user=user, number=0, move={"shifts": [move[0], move[1]]})
    template.refresh_from_db()
    (to_move,) = cornmaze.to_move(template.state)
    Game.objects.filter(pk=template.pk).delete()

    every = max(1, total // expired)
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO games_game (kind, options, clock, status, seed, seed_sha256, state, ply,
                version, result_reason, created_by_id, created_at, started_at, clock_options)
            SELECT 'cornmaze', '{"size": 8}', 'P3D', 'active', %s, %s, %s::jsonb, 1, 3, '', %s,
                now() - interval '4 days', now() - interval '4 days',
                CASE n %% 6 WHEN 0 THEN '{"bank_days": 7}'::jsonb
                    WHEN 3 THEN '{"bank_days": 7, "weekends_off": true}'::jsonb
                    ELSE '{}'::jsonb END
            FROM generate_series(1, %s) AS n
            """,
            [
                bytes(template.seed),
                template.seed_sha256,
                _json(template.state),
                a.pk,
                total,
            ],
        )
        cursor.execute("SELECT min(id) FROM games_game")
        (first_id,) = cursor.fetchone()
        # Expired: every `every`-th game, `expired` of them; the rest run out within 3 days.
        cursor.execute(
            """
            INSERT INTO games_seat (game_id, index, user_id, bot, deadline, place, joined_at,
                bank)
            SELECT g.id, s.i, CASE s.i WHEN 0 THEN %(a)s ELSE %(b)s END, '',
                CASE
                    WHEN s.i <> %(to_move)s THEN NULL
                    WHEN (g.id - %(first)s) %% %(every)s = 0
                        AND (g.id - %(first)s) / %(every)s < %(expired)s
                        THEN now() - interval '1 minute' - random() * interval '1 day'
                    WHEN g.clock_options ? 'bank_days'
                        THEN now() + interval '1 hour' + random() * interval '10 days'
                    ELSE now() + interval '1 hour' + random() * interval '3 days'
                END,
                NULL, now() - interval '4 days',
                CASE WHEN g.clock_options ? 'bank_days' THEN interval '6 days' END
            FROM games_game g CROSS JOIN (VALUES (0), (1)) AS s(i)
            """,
            {
                "a": a.pk,
                "b": b.pk,
                "to_move": to_move,
                "first": first_id,
                "every": every,
                "expired": expired,
            },
        )
        # A tenth of the games not expired (or --vacations): carol's seat to move, on
        # vacation for 14 days, its deadline moved past it, with the vacation's clock event.
        away = (total - expired) // 10 if vacations is None else vacations
        cursor.execute(
            """
            UPDATE games_seat SET user_id = %(c)s,
                deadline = deadline + interval '14 days'
            WHERE id IN (
                SELECT s.id FROM games_seat s
                WHERE s.deadline > now() AND s.index = %(to_move)s
                ORDER BY s.id LIMIT %(away)s
            )
            """,
            {"c": c.pk, "to_move": to_move, "away": away},
        )
        cursor.execute(
            """
            INSERT INTO games_clockevent (game_id, seat, kind, at, ply, data)
            SELECT game_id, index, 'vacation_start', now() - interval '1 hour', 1,
                jsonb_build_object('until', now() + interval '14 days', 'automatic', false)
            FROM games_seat WHERE user_id = %s AND deadline IS NOT NULL
            """,
            [c.pk],
        )
        cursor.execute(
            """
            INSERT INTO games_vacation (user_id, days_left, automatic, started_at, until,
                days_planned, was_automatic)
            VALUES (%s, 0, true, now() - interval '1 hour', now() + interval '14 days', 14,
                false)
            """,
            [c.pk],
        )
        cursor.execute(
            """
            INSERT INTO games_reminder (seat_id, ply, due)
            SELECT id, 1, deadline - interval '3 days' / 5 FROM games_seat
            WHERE deadline IS NOT NULL
            """
        )
        cursor.execute("ANALYZE")
        cursor.execute("SELECT count(*) FROM games_seat WHERE deadline <= now()")
        (count,) = cursor.fetchone()
    assert count == expired, (count, expired)


def _json(value: object) -> str:
    import json

    return json.dumps(value)


def explain(now: datetime) -> str:
    from django.db import connection, transaction

    from games.play import sweeps

    query = sweeps.expired_seats(now).select_for_update(skip_locked=True, of=("game",))[:50]
    with transaction.atomic(), connection.cursor() as cursor:
        sql, params = query.query.sql_with_params()
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
        transaction.set_rollback(True)
    return plan


def snapshot(now: datetime) -> Callable[[], None]:
    """A function that puts the expired games back as they are now, so that a sweep can be
    timed again on the same games."""
    from django.db import connection

    from games.models import Game, Reminder, Seat

    game_ids = list(
        Seat.objects.filter(deadline__lte=now).values_list("game_id", flat=True).distinct()
    )
    games = list(Game.objects.filter(pk__in=game_ids).values("pk", "state", "ply", "version"))
    seats = list(Seat.objects.filter(game_id__in=game_ids).values_list("pk", "deadline"))
    reminders = list(Reminder.objects.filter(seat__game_id__in=game_ids))

    def restore() -> None:
        import json

        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM games_outbox")
            cursor.execute("DELETE FROM games_move WHERE game_id = ANY(%s)", [game_ids])
            # The timeouts rated the games (issue 15): their changes and ratings go too.
            cursor.execute("DELETE FROM games_ratingchange WHERE game_id = ANY(%s)", [game_ids])
            cursor.execute("DELETE FROM games_rating")
            cursor.execute(
                "DELETE FROM games_reminder WHERE id = ANY(%s)", [[r.pk for r in reminders]]
            )
            for game in games:
                cursor.execute(
                    "UPDATE games_game SET status = 'active', state = %s::jsonb, ply = %s, "
                    "version = %s, result_reason = '', finished_at = NULL, rating_seq = NULL "
                    "WHERE id = %s",
                    [json.dumps(game["state"]), game["ply"], game["version"], game["pk"]],
                )
            for pk, deadline in seats:
                cursor.execute(
                    "UPDATE games_seat SET deadline = %s, place = NULL WHERE id = %s",
                    [deadline, pk],
                )
        Reminder.objects.bulk_create(reminders)

    return restore


def timed(
    work: Callable[[], int], restore: Callable[[], None], *, repeat: int
) -> tuple[int, float]:
    """The fastest of `repeat` runs of `work`, the games put back after each. The fastest,
    since this machine's other jobs only ever make a run slower."""
    from django.db import connection

    best = float("inf")
    count = 0
    for _ in range(repeat):
        connection.close()
        started = time.perf_counter()
        count = work()
        best = min(best, time.perf_counter() - started)
        restore()
    return count, best


def selection(now: datetime, limit: int) -> int:
    """Only the sweep's claim (its query, for all expired seats at once), no timeouts."""
    from django.db import transaction

    from games.play import sweeps

    with transaction.atomic():
        query = sweeps.expired_seats(now).select_for_update(skip_locked=True, of=("game",))
        return len(list(query[:limit]))


def run(
    total: int, expired: int, *, show_plan: bool, repeat: int, vacations: int | None = None
) -> tuple[float, float]:
    from django.db import connections

    from games import queueing
    from games.models import Game
    from games.play import sweeps

    connections.close_all()
    recreate_database(SERVER, DATABASE)
    started = time.perf_counter()
    fill(total, expired, vacations)
    print(
        f"\n{total:,} games, {expired:,} expired: filled in {time.perf_counter() - started:.1f} s"
    )
    if show_plan:
        print("plan of one batch of the sweep's query:")
        print("    " + explain(datetime.now(UTC)).replace("\n", "\n    "))
    queueing.send = lambda *args, **kwargs: None  # no broker here: the mails are not sent
    now = datetime.now(UTC)
    restore = snapshot(now)
    claimed, select_time = timed(lambda: selection(now, expired), lambda: None, repeat=5)
    assert claimed == expired, claimed
    count, sweep_time = timed(sweeps.deadlines_sweep, restore, repeat=repeat)
    assert count == expired, count
    # And once more, checked: every expired game ended, each once.
    assert sweeps.deadlines_sweep() == expired
    assert Game.objects.filter(status="finished").count() == expired
    assert Game.objects.filter(status="active").count() == total - expired
    print(f"selection alone: {select_time * 1000:.1f} ms for {claimed:,} seats (best of 5)")
    print(
        f"one sweep: {count:,} timeouts in {sweep_time:.3f} s "
        f"({sweep_time / count * 1000:.2f} ms each, best of {repeat})"
    )
    return select_time, sweep_time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=1_000_000, help="the large case")
    parser.add_argument("--small", type=int, default=10_000, help="the small case")
    parser.add_argument("--expired", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=3, help="timed sweeps of each size")
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    parser.add_argument(
        "--vacations",
        type=int,
        default=None,
        help="games whose player to move is on vacation (default: a tenth of those running)",
    )
    args = parser.parse_args()
    setup_django()
    small = run(
        args.small, args.expired, show_plan=False, repeat=args.repeat, vacations=args.vacations
    )
    large = run(
        args.games, args.expired, show_plan=True, repeat=args.repeat, vacations=args.vacations
    )
    print(f"\n{args.expired:,} expired among {args.small:,} and among {args.games:,} games:")
    print(
        f"  selection: {small[0] * 1000:.1f} ms and {large[0] * 1000:.1f} ms, "
        f"ratio {large[0] / small[0]:.2f}"
    )
    print(f"  sweep:     {small[1]:.3f} s and {large[1]:.3f} s, ratio {large[1] / small[1]:.2f}")
    if not args.keep:
        from django.db import connections

        connections.close_all()
        with psycopg.connect(f"{SERVER}/postgres", autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")


if __name__ == "__main__":
    main()
