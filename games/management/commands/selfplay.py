from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from statistics import mean
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from games.archive.records import record_build
from games.bots import levels
from games.engines import ENGINES
from games.models import Clock, Game
from games.play import core

SELFPLAY_USER = "selfplay"


class Command(BaseCommand):
    help = (
        "Play whole games between bots through the real services, store them as finished "
        "games, and print wins per bot level."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("game", choices=sorted(ENGINES))
        parser.add_argument("--games", type=int, default=10)
        parser.add_argument("--size", type=int, default=None, help="board size (Corn maze)")
        parser.add_argument("--seats", type=int, default=2)
        parser.add_argument("--bots", default="simple,strong", help="levels, comma-separated")
        parser.add_argument("--out", default=None, help="a folder for each game's record")
        parser.add_argument("--max-plies", type=int, default=5000)

    def handle(self, *args: Any, **options: Any) -> None:
        kind: str = options["game"]
        bots = [b.strip() for b in options["bots"].split(",") if b.strip()]
        known = levels(kind)
        unknown = [b for b in bots if b not in known]
        if unknown or not bots:
            raise CommandError(f"Unknown bot level(s) {unknown}; {kind} has {known}.")
        seats = options["seats"]
        engine = ENGINES[kind]
        if not engine.MIN_SEATS <= seats <= engine.MAX_SEATS:
            raise CommandError(
                f"{engine.TITLE} takes {engine.MIN_SEATS} to {engine.MAX_SEATS} seats."
            )
        out = Path(options["out"]) if options["out"] else None
        if out:
            out.mkdir(parents=True, exist_ok=True)
        game_options = dict(engine.default_options())
        if game_options.get("mode") == "live":
            # A live race runs on the race clock. Selfplay runs the slow race: the same maze
            # for every seat, and the bots step one at a time through the play core.
            game_options["mode"] = "slow"
        if options["size"] is not None:
            game_options["size"] = options["size"]
        creator, _ = get_user_model().objects.get_or_create(username=SELFPLAY_USER)

        played: Counter[str] = Counter()
        won: Counter[str] = Counter()
        plies: list[int] = []
        moves_by_level: dict[str, list[int]] = {}
        for n in range(options["games"]):
            # Rotate the bots round the seats so that no level keeps the same seat.
            lineup = [bots[(n + i) % len(bots)] for i in range(seats)]
            game = self._play_one(kind, creator, game_options, lineup, options["max_plies"])
            plies.append(game.ply)
            moves = Counter(game.moves.values_list("seat", flat=True))
            for seat in game.seats.all():
                played[seat.bot] += 1
                moves_by_level.setdefault(seat.bot, []).append(moves[seat.index])
                if seat.place == 1:
                    won[seat.bot] += 1
            if out:
                record = record_build(game, viewer_seat=None)
                (out / f"{kind}-{game.pk}.json").write_text(json.dumps(record, indent=2))
            self.stdout.write(f"game {game.pk}: {' vs '.join(lineup)} -> {self._winners(game)}")

        self.stdout.write("")
        self.stdout.write(f"{options['games']} games of {engine.TITLE}, {seats} seats")
        noun = "steps" if kind == "mazerace" else "moves"
        for level in sorted(played):
            share = won[level] / played[level] if played[level] else 0.0
            self.stdout.write(
                f"  {level:>8}: won {won[level]} of {played[level]} seats played ({share:.1%}),"
                f" {mean(moves_by_level[level]):.1f} {noun} a seat on average"
            )
        if plies:
            self.stdout.write(f"  mean turns per game: {mean(plies):.1f}")

    def _play_one(
        self, kind: str, creator: Any, options: dict[str, Any], lineup: list[str], max_plies: int
    ) -> Game:
        with core.bot_tasks_paused():
            game = core.game_create(
                kind=kind,
                creator=creator,
                options=options,
                clock_choice=Clock.LIVE if options.get("mode") == "live" else Clock.DAYS_3,
                seats=[core.SeatPlan(bot=b) for b in lineup],
            )
            while game.status == Game.Status.ACTIVE and game.ply < max_plies:
                if core.bot_turn_play(game_id=game.pk, ply=game.ply) is None:
                    raise CommandError(f"game {game.pk} stalled at ply {game.ply}")
                game.refresh_from_db()
        if game.status == Game.Status.ACTIVE:
            raise CommandError(f"game {game.pk} did not finish in {max_plies} plies")
        return game

    @staticmethod
    def _winners(game: Game) -> str:
        names = [f"seat {s.index} ({s.bot})" for s in game.seats.all() if s.place == 1]
        return ", ".join(names) + f" won in {game.ply} turns ({game.result_reason})"
