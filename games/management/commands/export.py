from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from games.archive.records import record_build
from games.models import Game


class Command(BaseCommand):
    help = "Print a game's record (the same JSON as its record.json page, as a visitor sees it)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("game_id", type=int)

    def handle(self, *args: Any, **options: Any) -> None:
        game = Game.objects.filter(pk=options["game_id"]).first()
        if game is None:
            raise CommandError(f"There is no game {options['game_id']}.")
        self.stdout.write(json.dumps(record_build(game, viewer_seat=None), indent=2))
