"""The measures of bench/load.py, routed only with settings.BENCH_YARDSTICK (never in
production by default): the yardstick, a bare Django view with one indexed query, and the least
move, what every move POST must do at the least."""

from __future__ import annotations

from django.db import connection, transaction
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_POST

from games.models import Game


def yardstick(request: HttpRequest) -> HttpResponse:
    game_id = request.GET.get("id", "1")
    version = (
        Game.objects.filter(pk=int(game_id) if game_id.isdigit() else 1)
        .values_list("version", flat=True)
        .first()
    )
    return HttpResponse(f"{version}\n", content_type="text/plain")


@require_POST
def least_move(request: HttpRequest) -> HttpResponse:
    """The least a move POST can be: signed in (the session and the user), past the CSRF check
    (the middleware's), a game's row read under its lock and written, committed to disk. No
    engine, no rate limit, no move row, no seats, no answer to draw: whatever a move costs, it
    costs at least this. Writes nothing a player could see (the version is written as it is)."""
    if not request.user.is_authenticated:
        return HttpResponse("not signed in\n", status=403, content_type="text/plain")
    game_id = request.GET.get("id", "")
    if not game_id.isdigit():
        return HttpResponse("no game\n", status=400, content_type="text/plain")
    table = Game._meta.db_table
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SELECT version FROM {table} WHERE id = %s FOR UPDATE", [int(game_id)])
        row = cursor.fetchone()
        if row is None:
            return HttpResponse("no game\n", status=404, content_type="text/plain")
        cursor.execute(f"UPDATE {table} SET version = %s WHERE id = %s", [row[0], int(game_id)])
    return HttpResponse(f"{row[0]}\n", content_type="text/plain")
