from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from games.archive.results import results_recount
from games.models import PlayerResult


class Command(BaseCommand):
    help = (
        "Count every player's results (played, won, lost, timed out) again from the finished "
        "games: for games loaded or changed without the site, e.g. by SQL."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        results_recount()
        self.stdout.write(f"{PlayerResult.objects.count()} results counted.")
