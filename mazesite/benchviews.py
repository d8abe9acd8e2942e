"""The yardstick of bench/load.py: a bare Django view with one indexed query. Routed only with
settings.BENCH_YARDSTICK (never in production by default)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from games.models import Game


def yardstick(request: HttpRequest) -> HttpResponse:
    game_id = request.GET.get("id", "1")
    version = (
        Game.objects.filter(pk=int(game_id) if game_id.isdigit() else 1)
        .values_list("version", flat=True)
        .first()
    )
    return HttpResponse(f"{version}\n", content_type="text/plain")
