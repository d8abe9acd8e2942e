"""The archive of finished games, the player pages and the replay. Each URL serves its page and,
to htmx, the partial that changes; every link and form also works as a plain GET."""

from __future__ import annotations

from datetime import datetime
from html import escape
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBase
from django.shortcuts import redirect, render
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_http_methods, require_safe
from django.views.decorators.vary import vary_on_headers

from games.archive import rating_reads, reads, replay_page, selectors
from games.archive.filters import filters_from
from games.archive.records import (
    SAME_AS_HELD,
    RecordUnreadable,
    record_build,
    record_checked_out,
    record_parse,
    record_site_differences,
    record_verify,
)
from games.models import Game
from games.ui import SEAT_COLOURS, mark_html, time_html, wording
from games.web import limits
from games.web.http import HtmxHttpRequest

# A page shows 25 of these. Written out here rather than in a template: Django's template
# engine (and format_html's lazy-aware escaping) would spend ten times as long on them as the
# queries take (see bench/archive.py). Every text is escaped with html.escape.
ROW_HTML = (
    '<tr class="archive-row" id="game-{id}" data-game="{id}">'
    '<td class="game-kind"><a href="{url}">{title} #{id}</a> '
    '<span class="clock">{clock}</span></td>'
    '<td class="players"><ul class="seat-list">{seats}</ul></td>'
    '<td class="ending{aborted}">{ending}</td>'
    '<td class="num moves">{moves}<span class="unit"> move{plural}</span></td>'
    '<td class="finished">{finished}</td>'
    '<td class="links">{replay}</td>'
    "</tr>\n"
)
SEAT_HTML = '<li class="seat{winner}">{mark} {name}{place}</li>'
MARKS_HTML = [mark_html(c) for c in range(SEAT_COLOURS)]


def rows_html(rows: list[reads.Row]) -> list[SafeString]:
    return [mark_safe(_row_html(row)) for row in rows]  # every text escaped in _row_html


def _row_html(row: reads.Row) -> str:
    finished = time_html(datetime.fromisoformat(row.finished_iso)) if row.finished_iso else ""
    return ROW_HTML.format(
        id=row.id,
        url=escape(row.url),
        title=escape(row.title),
        clock=escape(row.clock_text),
        seats="".join(_seat_html(s) for s in row.seats),
        aborted=" aborted" if row.status == Game.Status.ABORTED else "",
        ending=escape(row.ending),
        moves=row.moves,
        plural="" if row.moves == 1 else "s",
        finished=finished,
        replay=f'<a class="replay-link" href="{escape(row.replay_url)}">Replay</a>'
        if row.replay_url
        else "",
    )


def _seat_html(seat: reads.SeatRow) -> str:
    name = escape(seat.name)
    return SEAT_HTML.format(
        winner=" winner" if seat.place == 1 else "",
        mark=MARKS_HTML[seat.colour],
        name=f'<a href="{escape(seat.url)}">{name}</a>'
        if seat.url
        else f'<span class="bot-name">{name}</span>',
        place=f' <span class="place">{seat.place_text}</span>' if seat.place_text else "",
    )


def _partial(request: HtmxHttpRequest) -> bool:
    # A history restore (the back button after the cache was lost) wants the whole page.
    return bool(request.htmx) and not request.htmx.history_restore_request


@require_safe
@vary_on_headers("HX-Request")
def archive_list(request: HtmxHttpRequest) -> HttpResponse:
    form, filters = filters_from(request.GET)
    after = reads.Cursor.parse(request.GET.get("after"))
    before = reads.Cursor.parse(request.GET.get("before"))
    page = reads.finished_page(filters, after=after, before=before)
    # An unknown player finds no game; only then is it worth asking whether they exist. A bot
    # of a level no bot has was refused by the form.
    unknown_player = ""
    person = filters.player and not filters.bot
    if person and not page.rows and reads.player_named(filters.player) is None:
        written = reads.name_as_written(filters.player)
        if written is not None:
            params = request.GET.copy()
            params["player"] = written
            return redirect(f"{reverse('archive')}?{params.urlencode()}")
        unknown_player = filters.player
    template = "archive/archive.html"
    if _partial(request):
        template += "#listing"
    return TemplateResponse(
        request,
        template,
        {
            "form": form,
            "page": page,
            "rows": rows_html(page.rows),
            "unknown_player": unknown_player,
            "query": urlencode(filters.query()),
            "action": reverse("archive"),
        },
    )


@require_safe
@vary_on_headers("HX-Request")
def player_detail(request: HtmxHttpRequest, name: str) -> HttpResponse:
    player = reads.player_named(name)
    if player is None:
        return _player_elsewhere(request, name)
    form, filters = filters_from(request.GET, player=player.name)
    after = reads.Cursor.parse(request.GET.get("after"))
    before = reads.Cursor.parse(request.GET.get("before"))
    page = reads.finished_page(filters, after=after, before=before, running_of=player)
    page.player_in_query = False
    partial = _partial(request)
    context: dict[str, Any] = {
        "player": player,
        "form": form,
        "page": page,
        "rows": rows_html(page.rows),
        "running_limit": reads.RUNNING_LIMIT,
        "query": urlencode(filters.query(player=False)),
        "action": reverse("player", args=[player.name]),
    }
    template = "players/player.html"
    if partial:
        template += "#listing"
    else:
        # The full page only: the listing's htmx partial has no ratings.
        context["ratings"] = rating_reads.player_ratings(player.id)
        context["rating_explained"] = wording.RATING_EXPLAINED
        context["min_games"] = rating_reads.LEADERBOARD_MIN_GAMES
    return TemplateResponse(request, template, context)


def _player_elsewhere(request: HttpRequest, name: str) -> HttpResponse:
    """A player's page asked for by their name in another case or width: there, for good,
    with the same query; a 404 if nobody has the name."""
    written = reads.name_as_written(name)
    if written is None:
        raise Http404("No such player.")
    query = request.META.get("QUERY_STRING", "")
    url = reverse("player", args=[written]) + (f"?{query}" if query else "")
    return redirect(url, permanent=True)


@require_safe
def leaderboard(request: HtmxHttpRequest, kind: str) -> HttpResponse:
    """A game kind's rated players with enough games, best first, 50 to a page (`?after=`)."""
    if kind not in Game.Kind.values:
        raise Http404("No such game.")
    board = rating_reads.leaderboard_page(kind, request.GET.get("after"))
    return TemplateResponse(
        request,
        "players/leaderboard.html",
        {
            "board": board,
            "kinds": Game.Kind.choices,
            "min_games": rating_reads.LEADERBOARD_MIN_GAMES,
            "rating_explained": wording.RATING_EXPLAINED,
        },
    )


# --- replay ----------------------------------------------------------------------------------


@require_safe
@vary_on_headers("HX-Request")
def game_replay(request: HtmxHttpRequest, game_id: int) -> HttpResponseBase:
    """A finished game, one ply at a time: `?ply=N` (0 is the start), `?view=<viewpoint>`, and
    `?verify=1` to replay the record from its seed and say whether it checks out."""
    game = selectors.game_for_page(game_id)
    if game is None:
        raise Http404("No such game.")
    if not game.is_over:
        # A running game has hidden parts and a live page: watch it there.
        return redirect(game)
    verify = request.GET.get("verify") == "1"
    if verify and _partial(request):
        return TemplateResponse(
            request, "replay/replay.html#verify", {"game": game, "verification": _verify(game)}
        )
    context = replay_page.replay_context(game, request.GET.get("ply"), request.GET.get("view"))
    if verify:
        context["verification"] = _verify(game)
    template = "replay/replay.html"
    if _partial(request):
        template += "#step"
    return TemplateResponse(request, template, context)


def _verify(game: Game) -> dict[str, Any]:
    record = record_build(game, viewer_seat=None)
    problems = record_verify(record)
    return {"ok": not problems, "problems": problems, "moves": len(record["moves"])}


# --- checking a record someone has -----------------------------------------------------------

NO_RECORD = "Choose the record's file, or paste its text."
TWO_RECORDS = "Send the record one way: its file or its text, not both."
NOT_HELD = (
    "This site holds no game with the record's id, so the players' names and the moves' times, "
    "which the seed cannot check, were not compared with its own."
)


def record_too_large() -> str:
    most = settings.RECORD_MAX_BYTES // 2**20
    return f"That is too large for a record: a record is at most {most} MB."


@require_http_methods(["GET", "HEAD", "POST"])
@limits.limit("record_verify_client", lambda request: limits.client_ip(request), done_only=True)
def record_verify_page(request: HttpRequest) -> HttpResponse:
    """A game record someone has (downloaded, or sent to them), checked: posted as a file or as
    its text, replayed from its seed (record_verify) and, when it names a game of this site that
    is over, compared with this site's own record of it. No account needed; nothing changes."""
    template = "archive/record_verify.html"
    if request.method != "POST":
        return render(request, template, {})
    text = request.POST.get("text", "")
    try:
        record = _record_posted(request, text)
    except RecordUnreadable as exc:
        return render(request, template, {"error": str(exc), "text": text}, status=400)
    problems = record_verify(record)
    if not isinstance(record, dict):  # JSON, but no record at all
        return render(request, template, {"error": " ".join(problems), "text": text}, status=400)
    differences = record_site_differences(record, user=request.user)
    problems += differences or []
    verification = {
        "ok": not problems,
        "problems": problems,
        "checked": "" if problems else record_checked_out(record),
        "site": NOT_HELD if differences is None else SAME_AS_HELD,
    }
    return render(request, template, {"verification": verification, "text": text})


def _record_posted(request: HttpRequest, text: str) -> Any:
    """The JSON of the record posted, as a file or as text; RecordUnreadable saying why not."""
    upload = request.FILES.get("file")
    if upload is not None and text.strip():
        raise RecordUnreadable(TWO_RECORDS)
    if upload is None and not text.strip():
        raise RecordUnreadable(NO_RECORD)
    if upload is not None:
        # Its size is known before it is read (the body is at most DATA_UPLOAD_MAX_MEMORY_SIZE).
        if upload.size is None or upload.size > settings.RECORD_MAX_BYTES:
            raise RecordUnreadable(record_too_large())
        return record_parse(upload.read(), name="The file")
    if len(text.encode()) > settings.RECORD_MAX_BYTES:
        raise RecordUnreadable(record_too_large())
    return record_parse(text, name="The text")
