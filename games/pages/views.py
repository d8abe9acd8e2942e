from __future__ import annotations

from django.conf import settings
from django.http import (
    Http404,
    HttpResponse,
    HttpResponseBase,
    HttpResponsePermanentRedirect,
    JsonResponse,
)
from django.middleware.csrf import get_token
from django.shortcuts import get_object_or_404, redirect, render
from django.template.response import TemplateResponse
from django.templatetags.static import static
from django.utils.cache import patch_cache_control
from django.views.decorators.http import (
    require_http_methods,
    require_POST,
    require_safe,
)
from django_htmx.http import HttpResponseStopPolling

from games.accounts.guests import player_for
from games.archive import selectors
from games.archive.records import record_build
from games.engines import ENGINES, get_engine
from games.engines.base import JSON
from games.mail import views as mail_views
from games.models import Game
from games.pages import contexts, rows
from games.play import core
from games.play.paces import race
from games.ui import MoveInputError, get_ui, has_ui, move_number_field, wording
from games.web import health, limits
from games.web.http import HtmxHttpRequest
from games.web.inputs import ascii_int


@require_safe
def lobby(request: HtmxHttpRequest) -> HttpResponse:
    # "Your games" is paged (?page=2): a player may have hundreds running.
    page = ascii_int(request.GET.get("page")) or 1
    your_games = selectors.your_games(request.user, page)  # type: ignore[arg-type]
    yours = {
        "your_games": your_games,
        "your_game_rows": rows.your_game_rows(your_games),
        "lobby_poll_every": settings.LOBBY_POLL_EVERY,
    }
    if request.htmx and request.GET.get("part") == "your-games":
        # The section's own poll: only that section, and the title with its count.
        if not request.user.is_authenticated:
            return HttpResponseStopPolling()
        return render(request, "games/_your_games_poll.html", yours)
    open_games, active_games = selectors.open_games(), selectors.active_games()
    mine = selectors.games_of(request.user, open_games + active_games)  # type: ignore[arg-type]
    token = get_token(request)
    return render(
        request,
        "games/lobby.html",
        {
            "open_games": rows.game_rows(open_games, mine, token) if open_games else "",
            "active_games": rows.game_rows(active_games, mine, token) if active_games else "",
            **yours,
        },
    )


@require_http_methods(["GET", "HEAD", "POST"])
@limits.limit("create_player", lambda request, kind: limits.player_key(request))
def game_new(request: HtmxHttpRequest, kind: str) -> HttpResponse:
    if not has_ui(kind):
        raise Http404("No such game.")
    form = get_ui(kind).create_form(request.POST or None)
    if request.method == "POST" and form.is_valid():
        options, clock_choice, bots = form.create_args()
        try:
            with player_for(request) as user:
                game = core.game_create(
                    kind=kind,
                    creator=user,
                    options=options,
                    clock_choice=clock_choice,
                    seats=[core.SeatPlan(bot=b) for b in bots],
                )
        except core.GameError as exc:
            form.add_error(None, str(exc))
        else:
            return redirect(game)
    status = 400 if request.method == "POST" else 200
    return render(
        request,
        "games/new.html",
        {"form": form, "kind": kind, "title": ENGINES[kind].TITLE},
        status=status,
    )


@require_safe
def game_detail(request: HtmxHttpRequest, game_id: int) -> HttpResponseBase:
    # The player has the game open: no "your turn" mail while the page polls.
    mail_views.game_watched(request, game_id)
    since = request.GET.get("since")
    if request.htmx and since is not None:
        # Polling: one indexed read, and nothing to send unless the game changed.
        current = selectors.game_version(game_id)
        if current is None:
            raise Http404("No such game.")
        version, status = current
        if str(version) == since:
            unchanged = (
                HttpResponseStopPolling()
                if status in {Game.Status.FINISHED, Game.Status.ABORTED}
                else HttpResponse(status=204)
            )
            return _not_stored(unchanged)
    return _game_response(request, game_id)


def _game_response(
    request: HtmxHttpRequest,
    game_id: int,
    *,
    error: str = "",
    status: int = 200,
    game: Game | None = None,
) -> TemplateResponse:
    # The moves are read only for a page that shows its log: a live race polled twice a
    # second has hundreds of steps and shows none of them.
    if game is None:
        game = selectors.game_for_page(game_id, with_moves=False)
    if game is None:
        raise Http404("No such game.")
    template = "games/game.html"
    if request.htmx:
        template += "#game"
    draft = request.session.get(_draft_key(game_id))
    response = TemplateResponse(
        request,
        template,
        contexts.game_context(game, request.user, error=error, draft=draft),
        status=status,
    )
    if game.is_over:
        # Only the header (who is signed in) still changes: the browser may keep it a minute.
        patch_cache_control(response, private=True, max_age=60)
    else:
        _not_stored(response)
    return response


def _not_stored(response: HttpResponseBase) -> HttpResponseBase:
    """A running game's page, partial, poll or record changes with every move and shows each
    viewer its own hidden parts: no cache, shared or not, may keep it."""
    patch_cache_control(response, private=True, no_store=True)
    return response


@require_POST
@limits.limit("join_player", lambda request, game_id: limits.player_key(request))
def game_join(request: HtmxHttpRequest, game_id: int) -> HttpResponseBase:
    try:
        with player_for(request) as user:
            core.game_join(game_id=game_id, user=user)
    except core.GameError as exc:
        return _refused(request, game_id, str(exc))
    return _after_action(request, game_id)


@require_POST
@limits.limit("move_seat", lambda request, game_id: f"{limits.player_key(request)}:{game_id}")
def game_move(request: HtmxHttpRequest, game_id: int) -> HttpResponseBase:
    if not request.user.is_authenticated:
        return _refused(request, game_id, "Sign in or join the game to play.")

    def read(game: Game, view: JSON) -> tuple[int, JSON]:
        # Under the game's lock, against the seat's own view of the position played on.
        ui = get_ui(game.kind)
        number = ascii_int(request.POST.get(move_number_field(ui)))
        if number is None:
            raise MoveInputError("That move cannot be read: the form is incomplete.")
        return number, ui.parse_move(request.POST, view)

    try:
        played = core.move_read_and_submit(game_id=game_id, user=request.user, read=read)
    except (MoveInputError, core.GameError) as exc:
        return _refused(request, game_id, str(exc))
    request.session.pop(_draft_key(game_id), None)
    # The answer's partial from the game and seats the move read and wrote under the lock:
    # committed, so the same as a read now would give, without reading them again.
    return _after_action(request, game_id, game=played.game)


@require_POST
def game_draft(request: HtmxHttpRequest, game_id: int) -> HttpResponseBase:
    """A change to the move form that is not a move yet: kept in the session, shown at once."""
    game = get_object_or_404(Game, pk=game_id)
    seat = _seat_of(game, request)
    if seat is None or game.state is None or game.is_over:
        return _refused(request, game_id, "Only a player of this game can prepare a move.")
    view = get_engine(game.kind).view(game.state, seat)
    key = _draft_key(game_id)
    try:
        request.session[key] = get_ui(game.kind).draft_update(
            request.POST, view, request.session.get(key)
        )
    except MoveInputError as exc:
        return _refused(request, game_id, str(exc))
    return _after_action(request, game_id)


@require_POST
def game_ready(request: HtmxHttpRequest, game_id: int) -> HttpResponseBase:
    """A runner of a live race is ready to start."""
    if not request.user.is_authenticated:
        return _refused(request, game_id, "You have no seat in this race.")
    try:
        race.race_ready(game_id=game_id, user=request.user)
    except core.GameError as exc:
        return _refused(request, game_id, str(exc))
    return _after_action(request, game_id)


@require_POST
def game_hint(request: HtmxHttpRequest, game_id: int) -> HttpResponseBase:
    """The strong bot's next step from the runner's own view, in a race with a bot seat:
    kept with the runner's draft, so it shows until the runner steps."""
    game = get_object_or_404(Game, pk=game_id)
    seat = _seat_of(game, request)
    try:
        hint = race.race_hint(game=game, seat_index=seat)
    except core.GameError as exc:
        return _refused(request, game_id, str(exc))
    request.session[_draft_key(game_id)] = {"hint": hint}
    return _after_action(request, game_id)


def _seat_of(game: Game, request: HtmxHttpRequest) -> int | None:
    """The index of the viewer's seat in this game, or None for anyone else."""
    if not request.user.is_authenticated:
        return None
    seat: int | None = game.seats.filter(user=request.user).values_list("index", flat=True).first()
    return seat


def _draft_key(game_id: int) -> str:
    return f"draft:{game_id}"


@require_http_methods(["GET", "HEAD", "POST"])
def game_resign(request: HtmxHttpRequest, game_id: int) -> HttpResponseBase:
    """Resign, once asked: htmx asks in the page (hx-confirm); without JavaScript the form's
    first post (or a GET) shows a page that asks, and its own form says yes."""
    if not request.user.is_authenticated:
        return _refused(request, game_id, "You have no seat in this game.")
    confirmed = request.method == "POST" and (request.htmx or request.POST.get("confirm") == "yes")
    if not confirmed:
        return _resign_confirm(request, game_id)
    try:
        core.game_resign(game_id=game_id, user=request.user)
    except core.GameError as exc:
        return _refused(request, game_id, str(exc))
    return _after_action(request, game_id)


def _resign_confirm(request: HtmxHttpRequest, game_id: int) -> HttpResponseBase:
    game = get_object_or_404(Game, pk=game_id)
    seats = list(game.seats.all())
    mine = next((s for s in seats if s.user_id == request.user.pk), None)
    if mine is None or game.status != Game.Status.ACTIVE:
        return _refused(request, game_id, "You have no seat in a game in progress here.")
    others = [s.name for s in seats if s != mine]
    return render(
        request,
        "games/resign_confirm.html",
        {
            "game": game,
            "title": get_engine(game.kind).TITLE,
            "costs": wording.resign_costs(game.kind, others),
        },
    )


def _after_action(
    request: HtmxHttpRequest, game_id: int, *, game: Game | None = None
) -> HttpResponseBase:
    if request.htmx:
        return _game_response(request, game_id, game=game)
    return redirect("game", game_id=game_id)


def _refused(request: HtmxHttpRequest, game_id: int, message: str) -> HttpResponseBase:
    # The same page or partial with the reason; status 409 (htmx is configured to swap it).
    return _game_response(request, game_id, error=message, status=409)


@require_safe
def game_record(request: HtmxHttpRequest, game_id: int) -> HttpResponse:
    game = get_object_or_404(Game, pk=game_id)
    viewer = _seat_of(game, request)
    record = record_build(game, viewer_seat=viewer)
    response = JsonResponse(record, json_dumps_params={"indent": 2})
    response["Content-Disposition"] = f'inline; filename="{game.kind}-{game.pk}.json"'
    if game.is_over:
        # The same for every viewer once the game is over: any cache may keep it a while.
        patch_cache_control(response, public=True, max_age=300)
    else:
        _not_stored(response)
    return response


@require_safe
def rules(request: HtmxHttpRequest, kind: str) -> HttpResponse:
    if kind not in ENGINES:
        raise Http404("No such game.")
    return render(request, f"rules/{kind}.html", {"kind": kind, "title": ENGINES[kind].TITLE})


@require_safe
def favicon(request: HtmxHttpRequest) -> HttpResponse:
    """/favicon.ico, which browsers and feed readers ask for by themselves: the site's icon."""
    response = HttpResponsePermanentRedirect(static("img/favicon.svg"))
    patch_cache_control(response, public=True, max_age=86400)
    return response


@require_safe
def healthz(request: HtmxHttpRequest) -> HttpResponse:
    """200 while the database and the broker answer and a worker and the sweep have run lately
    (games/health.py); 503 naming each part that fails. HEAD answers the same, without a body."""
    failing = health.problems()
    body = {
        "ok": not failing,
        "failing": list(failing),
        "problems": [f"{part}: {why}" for part, why in failing.items()],
    }
    return JsonResponse(body, status=503 if failing else 200)
