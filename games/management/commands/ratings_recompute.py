from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand

from games.archive.ratings import ratings_recompute
from games.models import Rating


class Command(BaseCommand):
    help = (
        "Compute every rating again from the rated games, in the order they ended: the same "
        "numbers as the site kept as they ended. Finished games loaded by SQL are rated too."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        start = time.perf_counter()
        games = ratings_recompute()
        took = time.perf_counter() - start
        self.stdout.write(
            f"{games} rated games, {Rating.objects.count()} ratings, computed in {took:.1f} s."
        )
