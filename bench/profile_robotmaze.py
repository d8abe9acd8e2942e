"""Where a Robot Maze Race move POST's CPU goes, and how much of it is its htmx answer (the
game's partial drawn afresh for the mover), through Django's test client on PostgreSQL with
DEBUG off and persistent connections.

    .venv/bin/python bench/profile_robotmaze.py                # median CPU ms, 300 moves
    .venv/bin/python bench/profile_robotmaze.py --profile --top 30

It (re)creates the database `mazesite_robotbench` on the shared PostgreSQL (BENCH_SERVER_URL)
and plays Robot Maze Races between two players, their warehouses placed, each program a step
into a clear cell and back (bench/load.py's moves), a game set aside at 60 plies as the load
bench does. It prints the median CPU time of this process per move POST, and of the answer's
two parts drawn apart from a request: `game_context` and the partial's template (the test
client copies every template's context, which inflates the POST's template share). With
--profile, cProfile's parts and functions (bench/profile.py's report).

Tasks a move queues go to the queue `mazesite-robotbench` of the shared Redis, which nobody
consumes; the bench deletes it at the end.
"""

from __future__ import annotations

import argparse
import os
import random
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

DATABASE = os.environ.get("BENCH_DATABASE", "mazesite_robotbench")
QUEUE = os.environ.get("BENCH_QUEUE", "mazesite-robotbench")
PLIES = 60  # a game played this far is set aside for another (bench/load.py's MOVE_PLIES)


def setup() -> None:
    sys.path.insert(0, str(BASE_DIR))
    from bench.inprocess import django_on_new_database

    django_on_new_database(DATABASE, QUEUE, RATE_LIMITS="move_seat=1000000/5s")


class Races:
    """Robot Maze Races between two players, set up, one of them played at a time."""

    def __init__(self, rng: random.Random) -> None:
        from django.contrib.auth import get_user_model
        from django.test import Client

        User = get_user_model()
        self.rng = rng
        self.users = [User.objects.create_user(username=n) for n in ("ann", "bo")]
        self.clients = []
        for user in self.users:
            client = Client()
            client.force_login(user)
            self.clients.append(client)
        self.game = self.new_game()

    def new_game(self) -> Any:
        from games.engines import robotmaze
        from games.play import core

        with core.bot_tasks_paused():
            game = core.game_create(
                kind="robotmaze",
                creator=self.users[0],
                options={},
                clock_choice="P3D",
                seats=[core.SeatPlan(), core.SeatPlan()],
            )
            core.game_join(game_id=game.pk, user=self.users[1])
            for user in self.users:
                core.move_submit(
                    game_id=game.pk,
                    user=user,
                    number=0,  # each seat's set-up is its move 0 (robotmaze.move_number)
                    move={"warehouse": robotmaze.random_warehouse(self.rng)},
                )
        game.refresh_from_db()
        return game

    def next_move(self) -> Callable[[], Any]:
        """Prepares the next move (not timed) and returns the timed htmx POST."""
        from bench.load import move_choose
        from games.engines import robotmaze

        self.game.refresh_from_db()
        if self.game.is_over or self.game.ply >= PLIES:
            self.game = self.new_game()
        state = self.game.state
        (seat,) = robotmaze.to_move(state)
        fields, _ = move_choose("robotmaze", state, seat, self.rng)
        data = {"ply": str(self.game.ply), **fields}
        client, path = self.clients[seat], f"/games/{self.game.pk}/move"
        headers = {"HX-Request": "true", "HX-Target": "game"}
        return lambda: client.post(path, data, headers=headers)


def answer_parts(races: Races) -> tuple[float, float]:
    """The CPU seconds of the answer's context and of its partial, for the player who moved last
    (the seats take turns), as the move's answer draws it (a kept partial's marks)."""
    from django.template.loader import render_to_string
    from django.test import RequestFactory

    from games.archive import selectors
    from games.engines import robotmaze
    from games.pages import contexts, game_cache

    game = selectors.game_for_page(races.game.pk, with_moves=False)
    assert game is not None and game.state is not None
    (seat,) = robotmaze.to_move(game.state)
    request = RequestFactory().get("/")
    request.user = races.users[1 - seat]
    started = time.process_time()
    context = contexts.game_context(game, request.user)
    built = time.process_time()
    render_to_string("games/game.html#game", game_cache.marked(context), request)
    return built - started, time.process_time() - built


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    setup()
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    races = Races(random.Random("profile_robotmaze"))
    for _ in range(20):  # warm-up: templates compiled, statements prepared
        races.next_move()()
    profile = cProfile.Profile() if args.profile else None
    cpu, wall, contexts_cpu, partials_cpu = [], 0.0, [], []
    queries = 0
    for _ in range(args.requests):
        post = races.next_move()
        with CaptureQueriesContext(connection) as captured:
            started, started_cpu = time.perf_counter(), time.process_time()
            if profile:
                profile.enable()
            answer = post()
            if profile:
                profile.disable()
            cpu.append(time.process_time() - started_cpu)
            wall += time.perf_counter() - started
        assert answer.status_code == 200, answer.status_code
        queries += len(captured.captured_queries)
        if not profile:
            context_cpu, partial_cpu = answer_parts(races)
            contexts_cpu.append(context_cpu)
            partials_cpu.append(partial_cpu)
    n = args.requests
    if profile:
        from bench.profile import report

        report("Robot Maze Race move POST (htmx)", profile, wall, n, queries, args.top)
    else:
        print(
            f"Robot Maze Race move POST (htmx), {n} moves: CPU median"
            f" {statistics.median(cpu) * 1000:.2f} ms (p90"
            f" {statistics.quantiles(cpu, n=10)[-1] * 1000:.2f}), {queries / n:.1f} queries;"
            f" the answer's context {statistics.median(contexts_cpu) * 1000:.2f} ms,"
            f" its partial {statistics.median(partials_cpu) * 1000:.2f} ms"
        )
    import redis

    redis.Redis.from_url(os.environ["REDIS_URL"]).delete(QUEUE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
