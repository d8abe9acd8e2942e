"""Where a page's time goes, and how long it takes: the Corn maze move POST, the game page of
each game, the lobby (signed in with many games of one's own, and anonymous) and record.json,
through Django's test client (the whole middleware stack) on PostgreSQL with DEBUG off and
persistent connections.

    .venv/bin/python bench/profile_pages.py                    # median ms of each, 200 times
    .venv/bin/python bench/profile_pages.py --requests 50 --own 500
    .venv/bin/python bench/profile_pages.py --profile --only lobby --top 25

It (re)creates the database `mazesite_speedbench` on the shared PostgreSQL (BENCH_SERVER_URL),
plays a Corn maze, a Robot Maze Race and a slow Maze Race a few moves in, and gives the signed-in
player `--own` more running Corn mazes (copies, made with bulk_create) and `--others` games of
other players. Without --profile it prints, for each request, the median and p90 wall time, the
median CPU time of this process (the figure to compare on a shared machine) and the queries;
with --profile the functions by own and cumulative time (cProfile).

Where the time went (cProfile, 40 requests each, 500 own and 500 other running games; branch
speed, December 2026), and what was done about it:
- Lobby signed in (about 7x the anonymous lobby): "your games" read and drew every running game
  of one's own (503 rows: 119,000 model instances a request, the games' state decoded, 20,000
  template nodes): now a page of 20, ordered in SQL (archive.selectors.your_games), and every
  list of the lobby drawn by one function per list (games/pages/rows.py) instead of a template
  included per row.
- Lobby anonymous: the 50 + 50 rows through `{% include %}` were about half its time (rows.py).
- Corn maze page and the move POST (which answers with the page's partial): about two thirds in
  the template engine, the board's 64 to 144 cells in nested loops, each number through
  number_format: the cells and labels are now one string (ui/cornmaze.grid_svg), the
  screen reader's table one function (now the whole board: cornmaze_board), the move log one
  format_html_join. The
  rest of the POST is the database: 17-18 queries, 12 of them in the move's transaction
  (games/play/, not changed here).
- Robot Maze Race page: its up to three 10x10 grids through an included template per grid,
  a template node per cell: now ui/robotmaze.grid_html, inside the board's tag robotmaze_board.
- Maze Race page: already drawn from prebuilt strings; record.json: 6 small queries, no change.

Tasks a move queues go to the queue `mazesite-speedbench` of the shared Redis, which nobody
consumes; the bench deletes it at the end.
"""

from __future__ import annotations

import argparse
import io
import os
import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

BASE_DIR = Path(__file__).resolve().parent.parent
# Run as a script, this file's folder comes first on the path: keep the standard library first.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
import cProfile  # noqa: E402
import pstats  # noqa: E402

DATABASE = os.environ.get("BENCH_DATABASE", "mazesite_speedbench")
QUEUE = os.environ.get("BENCH_QUEUE", "mazesite-speedbench")


def setup() -> None:
    sys.path.insert(0, str(BASE_DIR))
    from bench.inprocess import django_on_new_database

    django_on_new_database(DATABASE, QUEUE, RATE_LIMITS="move_seat=1000000/5s")


def quiet_shifts(state: Any, seat: int) -> list[int]:
    from bench.inprocess import quiet_shifts

    moves = quiet_shifts(state, seat)
    return moves[0]


def cornmaze_between(me: Any, you: Any) -> Any:
    """A new 8x8 Corn maze, `me` in seat 0 and `you` in seat 1, started."""
    from games.play import core

    game = core.game_create(
        kind="cornmaze",
        creator=me,
        options={"size": 8},
        clock_choice="P3D",
        seats=[core.SeatPlan(), core.SeatPlan()],
    )
    core.game_join(game_id=game.pk, user=you)
    return game


def finished_cornmaze(me: Any, you: Any) -> Any:
    """A Corn maze between the two, played to its end by the simple bot's moves."""
    from games.bots import get_bot
    from games.engines import cornmaze
    from games.models import Game
    from games.play import core

    game = cornmaze_between(me, you)
    rng = random.Random("profile_pages: finished")
    bot = get_bot("cornmaze", "simple")
    while True:
        game.refresh_from_db()
        if game.status != Game.Status.ACTIVE:
            return game
        assert game.state is not None
        (seat,) = cornmaze.to_move(game.state)
        move = bot(cornmaze.view(game.state, seat), seat, rng)
        core.move_submit(game_id=game.pk, user=(me, you)[seat], number=game.ply, move=move)


def make_data(own: int, others: int) -> dict[str, Any]:
    from django.contrib.auth import get_user_model

    from games.engines import cornmaze, robotmaze
    from games.models import Game, Seat
    from games.play import core

    User = get_user_model()
    me, you = (User.objects.create_user(username=n, password="x") for n in ("me", "you"))
    with core.bot_tasks_paused():
        games = {}
        for kind, options, clock in (
            ("cornmaze", {"size": 8}, "P3D"),
            ("robotmaze", {}, "P3D"),
            ("mazerace", {"mode": "slow"}, "P3D"),
        ):
            game = core.game_create(
                kind=kind,
                creator=me,
                options=options,
                clock_choice=clock,
                seats=[core.SeatPlan(), core.SeatPlan()],
            )
            core.game_join(game_id=game.pk, user=you)
            games[kind] = game
        robot = games["robotmaze"]
        rng = random.Random("profile_pages")  # the same warehouses every run
        for user in (me, you):
            robot.refresh_from_db()
            core.move_submit(
                game_id=robot.pk,
                user=user,
                number=0,  # each seat's set-up is its move 0 (robotmaze.move_number)
                move={"warehouse": robotmaze.random_warehouse(rng)},
            )
        corn = games["cornmaze"]
        for _ in range(6):
            corn.refresh_from_db()
            if corn.status != Game.Status.ACTIVE:  # won already: another one
                corn = games["cornmaze"] = cornmaze_between(me, you)
                continue
            assert corn.state is not None
            (seat,) = cornmaze.to_move(corn.state)
            core.move_submit(
                game_id=corn.pk,
                user=(me, you)[seat],
                number=corn.ply,
                move={"shifts": quiet_shifts(corn.state, seat)},
            )
        games["finished"] = finished_cornmaze(me, you)
    for game in games.values():
        game.refresh_from_db()
    template = games["cornmaze"]
    template_seats = list(template.seats.all())

    def copies(n: int, players: tuple[Any, Any]) -> list[int]:
        made = Game.objects.bulk_create(
            [
                Game(
                    kind=template.kind,
                    options=template.options,
                    clock=template.clock,
                    status=template.status,
                    seed=template.seed,
                    seed_sha256=template.seed_sha256,
                    state=template.state,
                    ply=template.ply,
                    version=template.version,
                    created_by=players[0],
                    started_at=template.started_at,
                )
                for _ in range(n)
            ],
            batch_size=500,
        )
        Seat.objects.bulk_create(
            [
                Seat(
                    game=g,
                    index=s.index,
                    user=players[s.index],
                    deadline=s.deadline,
                    joined_at=s.joined_at,
                )
                for g in made
                for s in template_seats
            ],
            batch_size=1000,
        )
        return [g.pk for g in made]

    spare = copies(own, (me, you))
    a, b = User.objects.create_user("a"), User.objects.create_user("b")
    copies(others, (a, b))
    return {"me": me, "you": you, "spare": spare, **games}


def run(args: argparse.Namespace) -> None:
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from bench.inprocess import users_settled
    from games.engines import cornmaze
    from games.models import Game

    data = make_data(args.own, args.others)
    users_settled()
    clients = {}
    for who in ("me", "you"):
        c = Client()
        c.force_login(data[who])
        clients[who] = c
    anonymous = Client()
    htmx = {"HX-Request": "true", "HX-Target": "game"}
    corn = data["cornmaze"]
    playing = [data["spare"].pop()]  # the moves are played in the copies: corn stays as it is

    def move_once() -> Callable[[], Any]:
        """Prepares the next move (not timed) and returns the timed POST."""
        game = Game.objects.get(pk=playing[0])
        while game.status != Game.Status.ACTIVE:  # that one was won: play on in a copy
            if not data["spare"]:
                sys.exit("profile_pages: every copy of the Corn maze is over; give a larger --own")
            playing[0] = data["spare"].pop()
            game = Game.objects.get(pk=playing[0])
        assert game.state is not None
        (seat,) = cornmaze.to_move(game.state)
        letters = [chr(ord("a") + s) for s in quiet_shifts(game.state, seat)]
        client = clients[("me", "you")[seat]]
        form = {"ply": str(game.ply), "first": letters[0], "second": letters[1]}
        path = f"/games/{game.pk}/move"
        return lambda: client.post(path, form, headers=htmx)

    me = clients["me"]
    turn = [0]

    def partial_next() -> Callable[[], Any]:
        """The htmx GET of the game's partial, of each of the three games in turn."""
        turn[0] += 1
        game = (corn, data["robotmaze"], data["mazerace"])[turn[0] % 3]
        return lambda: me.get(f"/games/{game.pk}/", headers=htmx)

    cases: dict[str, tuple[str, Callable[[], Callable[[], Any]]]] = {
        "move": ("Corn maze move POST (htmx)", move_once),
        "cornmaze": (
            "Corn maze page, signed in",
            lambda: lambda: me.get(f"/games/{corn.pk}/"),
        ),
        "finished": (
            "finished Corn maze page, signed in player",
            lambda: lambda: me.get(f"/games/{data['finished'].pk}/"),
        ),
        "robotmaze": (
            "Robot Maze Race page, signed in",
            lambda: lambda: me.get(f"/games/{data['robotmaze'].pk}/"),
        ),
        "mazerace": (
            "Maze Race page, signed in",
            lambda: lambda: me.get(f"/games/{data['mazerace'].pk}/"),
        ),
        "partials": (
            "the three games' partials (htmx), signed in",
            lambda: partial_next(),
        ),
        "poll": (
            "poll with nothing new (204), signed in",
            lambda: lambda: me.get(f"/games/{corn.pk}/?since={corn.version}", headers=htmx),
        ),
        "lobby": (f"lobby, signed in, {args.own + 3} own games", lambda: lambda: me.get("/")),
        "lobby-anon": ("lobby, anonymous", lambda: lambda: anonymous.get("/")),
        "record": (
            "record.json of the Corn maze",
            lambda: lambda: me.get(f"/games/{corn.pk}/record.json"),
        ),
    }
    print(f"{args.requests} requests each, after 10 to warm up; --own {args.own}")
    for key, (name, prepare) in cases.items():
        if args.only and key not in args.only:
            continue
        for _ in range(10):  # warm-up: templates compiled, statements prepared
            prepare()()
        profile = cProfile.Profile()
        times: list[float] = []
        cpu: list[float] = []  # this process's CPU: less shaken by the other work on the machine
        queries = 0
        for _ in range(args.requests):
            request = prepare()
            with CaptureQueriesContext(connection) as captured:
                started, cpu_started = time.perf_counter(), time.process_time()
                if args.profile:
                    profile.enable()
                answer = request()
                if args.profile:
                    profile.disable()
                times.append(time.perf_counter() - started)
                cpu.append(time.process_time() - cpu_started)
            assert answer.status_code == (204 if key == "poll" else 200), (key, answer.status_code)
            queries += len(captured.captured_queries)
        times.sort()
        print(
            f"{name:<42} median {statistics.median(times) * 1000:7.1f} ms"
            f"  p90 {times[int(len(times) * 0.9)] * 1000:7.1f} ms"
            f"  CPU median {statistics.median(cpu) * 1000:6.1f} ms"
            f"  {queries / args.requests:5.1f} queries  {len(answer.content) // 1024} KiB"
        )
        if args.queries:
            for q in captured.captured_queries:
                print("   ", q["time"], q["sql"][:300])
        if args.profile:
            report(profile, args.top)
    import redis

    redis.Redis.from_url(os.environ["REDIS_URL"]).delete(QUEUE)


def report(profile: cProfile.Profile, top: int) -> None:
    for title, order in (("own time", "tottime"), ("cumulative time", "cumulative")):
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats(order).print_stats(top)
        lines = out.getvalue().replace(str(BASE_DIR) + "/", "").splitlines()
        lines = [re.sub(r"\S*site-packages/", "", line) for line in lines]
        start = next(i for i, line in enumerate(lines) if "ncalls" in line)
        print(f"  -- top {top} by {title}")
        print("\n".join("  " + line for line in lines[start : start + top + 1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--own", type=int, default=500, help="running games of one's own")
    parser.add_argument("--others", type=int, default=500, help="running games of others")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--queries", action="store_true", help="print the last request's SQL")
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument(
        "--only",
        nargs="*",
        choices=[
            "move",
            "cornmaze",
            "finished",
            "robotmaze",
            "mazerace",
            "partials",
            "poll",
            "lobby",
            "lobby-anon",
            "record",
        ],
    )
    args = parser.parse_args()
    setup()
    run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
