from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import SESSION_KEY
from django.http import (
    Http404,
    HttpResponse,
    HttpResponseBase,
    HttpResponsePermanentRedirect,
    JsonResponse,
)
from django.middleware.csrf import get_token
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.template.response import TemplateResponse
from django.templatetags.static import static
from django.urls import reverse
from django.utils.cache import patch_cache_control
from django.utils.html import format_html
from django.utils.safestring import mark_safe
from django.views.decorators.http import (
    require_http_methods,
    require_POST,
    require_safe,
)
from django_htmx.http import HttpResponseStopPolling

from games import clock
from games.accounts.guests import player_for
from games.archive import reads, selectors
from games.archive.filters import Filters
from games.archive.records import record_build
from games.chat import service as chat
from games.engines import ENGINES, get_engine
from games.engines.base import JSON
from games.mail import views as mail_views
from games.models import Game, Move
from games.pages import contexts, game_cache, rows
from games.play import challenges, core
from games.play.paces import race
from games.ui import MoveInputError, get_ui, has_ui, move_number_field, wording
from games.web import health, limits
from games.web.http import HtmxHttpRequest
from games.web.inputs import ascii_int, text_field


@require_safe
def lobby(request: HtmxHttpRequest) -> HttpResponse:
    # "Your games" is paged (?page=2): a player may have hundreds running.
    page = ascii_int(request.GET.get("page")) or 1
    your_games = selectors.your_games(request.user, page)  # type: ignore[arg-type]
    yours = {
        "your_games": your_games,
        "your_game_rows": rows.your_game_rows(your_games),
        "lobby_poll_every": settings.LOBBY_POLL_EVERY,
        **_your_finished(request),
    }
    if request.htmx and request.GET.get("part") == "your-games":
        # The section's own poll: only that section, and the title with its count.
        if not request.user.is_authenticated:
            return HttpResponseStopPolling()
        return render(request, "games/_your_games_poll.html", yours)
    lists = selectors.lobby_lists()
    mine = selectors.games_of(request.user, lists.open + lists.active)  # type: ignore[arg-type]
    token = get_token(request)
    return render(
        request,
        "games/lobby.html",
        {
            "open_games": rows.game_rows(lists.open, mine, token) if lists.open else "",
            "active_games": rows.game_rows(lists.active, mine, token) if lists.active else "",
            # Challenges and rematch offers waiting for your answer (one query).
            "challenges": selectors.challenges_for(request.user),  # type: ignore[arg-type]
            **yours,
        },
    )


YOUR_FINISHED_PAGE = 10


def _your_finished(request: HtmxHttpRequest) -> dict[str, Any]:
    """The lobby's "your finished games": a page of YOUR_FINISHED_PAGE, newest first, paged by
    the archive's keyset cursors (`done_after`: older, `done_before`: newer), one query
    (archive.reads.finished_page, along seat_user_finished)."""
    user = request.user
    if not user.is_authenticated:
        return {"your_finished": None}
    after = reads.Cursor.parse(request.GET.get("done_after"))
    before = None if after else reads.Cursor.parse(request.GET.get("done_before"))
    name = user.get_username()
    page = reads.finished_page(
        Filters(player=name), after=after, before=before, size=YOUR_FINISHED_PAGE
    )
    # Each pager keeps the other's place: the running games' page, the finished games' cursor.
    done = (
        f"done_after={after.token}" if after else (f"done_before={before.token}" if before else "")
    )
    return {
        "your_finished": page,
        "your_finished_rows": rows.your_finished_rows(page.rows, name),
        "your_finished_older": f"done_after={page.older.token}" if page.older else "",
        "your_finished_newer": f"done_before={page.newer.token}" if page.newer else "",
        "your_finished_query": f"&{done}" if done else "",
    }


@require_http_methods(["GET", "HEAD", "POST"])
@limits.limit("create_player", lambda request, kind: limits.player_key(request), done_only=True)
def game_new(request: HtmxHttpRequest, kind: str) -> HttpResponse:
    if not has_ui(kind):
        raise Http404("No such game.")
    # A player page's "Challenge" link names the player to challenge (?challenge=name).
    initial = {"challenge": (request.GET.get("challenge") or "")[:150]}
    form = get_ui(kind).create_form(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        options, clock_choice, bots = form.create_args()
        names, invite = form.challenge_args()
        try:
            with player_for(request) as user:
                game = core.game_create(
                    kind=kind,
                    creator=user,
                    options=options,
                    clock_choice=clock_choice,
                    seats=[core.SeatPlan(bot=b) for b in bots],
                    clock_options=form.clock_options(),
                    rated=bool(form.cleaned_data.get("rated")),
                    reserved=challenges.challenged_players(names=names, creator=user),
                    invite=invite,
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
    return _game_page(request, game_id)


def _game_page(
    request: HtmxHttpRequest, game_id: int, *, invited: bool = False
) -> HttpResponseBase:
    """The game's page, or its partial for a poll; `invited`: asked through the invite link of
    a private game (which may be seen before one joins it)."""
    # The player has the game open: no "your turn" mail while the page polls. The page writes
    # the mark with its read of the kept page (_game_response).
    since = request.GET.get("since")
    if request.htmx and since is not None:
        mail_views.game_watched(request, game_id)
        # Polling: one indexed read, and nothing to send unless the game changed.
        current = selectors.game_version(game_id)
        if current is None:
            raise Http404("No such game.")
        version, status, private = current
        # A private game waiting for players tells nobody outside it that it exists, not even
        # by a 204: its poll is answered by the page, which knows who may see it.
        hidden = private and status == Game.Status.OPEN and not invited
        if str(version) == since and not hidden:
            # A player's page of a finished game asks until the time it was given for a rematch
            # offer (contexts.game_context), which moves the version.
            rematch_until = ascii_int(request.GET.get("rematch_until"), max_digits=12) or 0
            waiting = status == Game.Status.FINISHED and clock.now().timestamp() < rematch_until
            over = status in {Game.Status.FINISHED, Game.Status.ABORTED} and not waiting
            return _not_stored(HttpResponseStopPolling() if over else HttpResponse(status=204))
        return _game_response(request, game_id, invited=invited)
    return _game_response(
        request, game_id, watch=mail_views.game_watch(request, game_id), invited=invited
    )


def _game_response(
    request: HtmxHttpRequest,
    game_id: int,
    *,
    error: str = "",
    status: int = 200,
    chat_error: str = "",
    chat_text: str = "",
    game: Game | None = None,
    move: Move | None = None,
    watch: tuple[str, float, int] | None = None,
    invited: bool = False,
    shown: JSON | None = None,
) -> HttpResponse:
    """The game's page or partial; `watch`: the viewer's watching mark to write (a look);
    `invited`: asked through a private game's invite link; `shown`: a draft to draw instead of
    the kept one. A private game waiting for players is not found by anyone else who is not in
    it (Game.hidden_from)."""
    draft = request.session.get(_draft_key(game_id)) if shown is None else shown
    now = clock.now()
    # A page with an error or a draft is drawn for its request alone; any other may be kept
    # (game_cache). The move's answer, from the game it wrote (a version nobody saw yet), is
    # kept for the mover's next look.
    facts = None
    if not error and draft is None:
        facts = game_cache.page_facts(
            game_id, request.user, now, game=game, your_move=not request.htmx
        )
    # A full page's shell (its key from the chat and the header) is read with the partial.
    shell = None
    if facts and facts.key and not request.htmx:
        shell = _page_shell(request, game_id, facts, chat_error, chat_text)
    html = None
    if facts and facts.key and game is None:
        html, shell_html = game_cache.kept(facts.key, shell.key if shell else "", also_set=watch)
        if shell:
            shell.html = shell_html
    elif watch is not None:
        mail_views.game_watched(request, game_id)
    if facts and html is not None:
        token = get_token(request)
        filled = game_cache.fill(html, token, facts.deadlines, now)
        if filled is not None:
            return _game_kept(request, filled, status, shell, token, facts)
    # The moves are read only for a page that shows its log: a live race polled twice a
    # second has hundreds of steps and shows none of them.
    if game is None:
        game = selectors.game_for_page(game_id, with_moves=False)
    if game is None or (not invited and game.hidden_from(game.seats.all(), request.user)):
        raise Http404("No such game.")
    context = contexts.game_context(game, request.user, error=error, draft=draft, new_move=move)
    if invited and game.status == Game.Status.OPEN:
        # Its poll and its sign-in links go through the link too, and what the game's own
        # address would not show this visitor is not linked. (An open game's page is never
        # kept: game_cache.)
        context["page_path"] = context["sign_in_next"] = request.path
        context["record_hidden"] = game.hidden_from(game.seats.all(), request.user)
    if facts and facts.key and facts.version == game.version:
        # Drawn once with marks for what differs per request, kept, then filled in.
        html = render_to_string("games/game.html#game", game_cache.marked(context), request)
        game_cache.keep(facts.key, html)
        deadlines = {s.index: s.deadline for s in game.seats.all() if s.deadline is not None}
        token = get_token(request)
        filled = game_cache.fill(html, token, deadlines, now)
        if filled is not None:
            return _game_kept(request, filled, status, shell, token, facts)
    template = "games/game.html"
    if request.htmx:
        template += "#game"
    if not request.htmx:
        # The chat is outside the game's partial, with a poll of its own (game_chat).
        context.update(chat_context(request, game, context["my_seat"] is not None))
        context.update(chat_error=chat_error, chat_text=chat_text)
    response = TemplateResponse(request, template, context, status=status)
    return _page_stored(response, game.is_over, context["my_seat"] is not None)


def _page_stored(response: HttpResponse, over: bool, is_player: bool) -> HttpResponse:
    """A game's page or partial, for how long the browser may keep it: a game over that the
    viewer did not play, a minute (only the header, who is signed in, still changes); any other
    never (a player's page of a finished game shows the rematch offer, which changes)."""
    if over and not is_player:
        patch_cache_control(response, private=True, max_age=60)
    else:
        _not_stored(response)
    return response


@dataclass
class _PageShell:
    """The full page around a kept partial: its context, its key ("" if it is drawn for its
    request alone) and the HTML kept under that key, if any."""

    context: dict[str, Any]
    key: str
    html: str | None = None


def _page_shell(
    request: HtmxHttpRequest,
    game_id: int,
    facts: game_cache.PageFacts,
    chat_error: str,
    chat_text: str,
) -> _PageShell:
    # The page around the partial shows the game's id and title, and the chat, which read
    # only its id and whether it is over: no need to read the game itself.
    game = Game(pk=game_id, kind=facts.kind, status=facts.status)
    context = {
        "game": game,
        "title": ENGINES[facts.kind].TITLE,
        **chat_context(request, game, facts.is_player, facts.chat_written),
        "chat_error": chat_error,
        "chat_text": chat_text,
    }
    key = ""
    if not chat_error and not chat_text:
        key, your_move = game_cache.shell_key(request, facts, game_id, context["chat"])
        context["your_move_count"] = your_move  # read for the key: not again by the header
    return _PageShell(context, key)


def _game_kept(
    request: HtmxHttpRequest,
    html: str,
    status: int,
    shell: _PageShell | None,
    token: str,
    facts: game_cache.PageFacts,
) -> HttpResponse:
    """The page or partial around a kept partial, whose CSRF token is `token`: the shell's
    forms get the same one (each get_token masks the secret anew, 32 random characters)."""
    if shell is None:
        return _page_stored(HttpResponse(html, status=status), facts.over, facts.is_player)
    context = shell.context
    if not shell.key:
        context["game_html"] = mark_safe(html)  # noqa: S308 - drawn by the template
        response = TemplateResponse(request, "games/game.html", context, status=status)
        return _page_stored(response, facts.over, facts.is_player)
    kept = shell.html
    if kept is None:
        # Drawn once with marks for the partial and the CSRF token, kept, then filled in.
        marked = {
            **context,
            "game_html": mark_safe(game_cache.GAME_MARK),  # noqa: S308 - a mark
            "csrf_token": game_cache.CSRF_MARK,
        }
        kept = render_to_string("games/game.html", marked, request)
        game_cache.keep(shell.key, kept)
    page = game_cache.shell_fill(kept, token, html)
    if page is None:
        context["game_html"] = mark_safe(html)  # noqa: S308 - drawn by the template
        response = TemplateResponse(request, "games/game.html", context, status=status)
        return _page_stored(response, facts.over, facts.is_player)
    return _page_stored(HttpResponse(page, status=status), facts.over, facts.is_player)


def _not_stored(response: HttpResponseBase) -> HttpResponseBase:
    """A running game's page, partial, poll or record changes with every move and shows each
    viewer its own hidden parts: no cache, shared or not, may keep it."""
    patch_cache_control(response, private=True, no_store=True)
    return response


@require_POST
@limits.limit("join_player", lambda request, game_id: limits.player_key(request), done_only=True)
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

    # Under the game's lock: the number first, then the move against the seat's own view of
    # the position played on.
    def read_number(game: Game) -> int:
        number = ascii_int(request.POST.get(move_number_field(get_ui(game.kind))))
        if number is None:
            raise MoveInputError("That move cannot be read: the form is incomplete.")
        return number

    # The form as a draft, read against the position it was made for: a refused move's page
    # shows what the player had chosen (a page without JavaScript has no draft of it yet).
    kept: list[JSON] = []
    shown: list[JSON] = []  # or, if it cannot be a draft, the form as chosen, not kept

    def read(game: Game, view: JSON) -> JSON:
        ui = get_ui(game.kind)
        try:
            kept.append(
                ui.draft_update(request.POST, view, request.session.get(_draft_key(game_id)))
            )
        except MoveInputError as exc:
            if exc.shown is not None:
                shown.append(exc.shown)
        return ui.parse_move(request.POST, view)

    try:
        played = core.move_read_and_submit(
            game_id=game_id, user=request.user, read_number=read_number, read=read
        )
    except (MoveInputError, core.GameError) as exc:
        if kept:
            request.session[_draft_key(game_id)] = kept[0]
        return _refused(request, game_id, str(exc), shown=shown[0] if shown else None)
    request.session.pop(_draft_key(game_id), None)
    # The answer's partial from the game and seats the move read and wrote under the lock:
    # committed, so the same as a read now would give, without reading them again; its log
    # adds the move played to the mover's kept log.
    return _after_action(request, game_id, game=played.game, move=played)


@require_POST
def game_draft(request: HtmxHttpRequest, game_id: int) -> HttpResponseBase:
    """A change to the move form that is not a move yet: kept in the session, shown at once."""
    game = get_object_or_404(Game, pk=game_id)
    seat = _seat_of(game, request)
    if seat is None:
        return _refused(request, game_id, "Only a player of this game can prepare a move.")
    if game.is_over:
        return _refused(request, game_id, "The game is over.")
    if game.state is None:
        return _refused(request, game_id, core.NOT_STARTED)
    view = get_engine(game.kind).view(game.state, seat)
    key = _draft_key(game_id)
    try:
        request.session[key] = get_ui(game.kind).draft_update(
            request.POST, view, request.session.get(key)
        )
    except MoveInputError as exc:
        return _refused(request, game_id, str(exc), shown=exc.shown)
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


@require_POST
def game_give_time(request: HtmxHttpRequest, game_id: int) -> HttpResponseBase:
    """Give an opponent one more day (play.core.time_give), once in a turn."""
    if not request.user.is_authenticated:
        return _refused(request, game_id, "Only a player of this game can give time.")
    seat_index = ascii_int(request.POST.get("seat"))
    if seat_index is None:
        return _refused(request, game_id, "Choose the player to give time to.")
    try:
        core.time_give(game_id=game_id, user=request.user, seat_index=seat_index)
    except core.GameError as exc:
        return _refused(request, game_id, str(exc))
    return _after_action(request, game_id)


def _draft_key(game_id: int) -> str:
    return f"draft:{game_id}"


@require_http_methods(["GET", "HEAD", "POST"])
def game_resign(request: HtmxHttpRequest, game_id: int) -> HttpResponseBase:
    """Resign, once asked (`_said_yes`). Whoever cannot resign is told why, to a GET too."""
    if not request.user.is_authenticated:
        return _refused(request, game_id, "You have no seat in this game.")
    if not _said_yes(request):
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
    refusal = core.resign_refusal(game, mine)
    if refusal is not None:
        return _refused(request, game_id, refusal)
    out = core.seats_out(game)
    others = [s.name for s in seats if s != mine and s.index not in out]
    title = get_engine(game.kind).TITLE
    return _confirm_page(
        request,
        game,
        "resign",
        _Asking(f"Resign {title} #{game.pk}?", wording.resign_costs(game.kind, others)),
        settings_said=False,
    )


def _said_yes(request: HtmxHttpRequest) -> bool:
    """Whether the player said yes to an action that cannot be undone (resign, decline,
    withdraw, abort): htmx asked in the page (hx-confirm) and sent its post only then; without
    JavaScript, the form's first post (or a GET) shows the page that asks (`_confirm_page`),
    and its own form's post says yes."""
    return request.method == "POST" and bool(request.htmx or request.POST.get("confirm") == "yes")


@dataclass(frozen=True)
class _Asking:
    """What the page that asks says: its question, what the action costs, and what its link
    goes back to."""

    question: str
    costs: str
    back: str = "game"


def _confirm_page(
    request: HtmxHttpRequest,
    game: Game,
    action: str,
    asking: _Asking,
    *,
    settings_said: bool = True,
) -> HttpResponse:
    """The page that asks before `action` (its view is game_<action>): the question, the
    game's settings, what it costs, and a form that posts confirm=yes to the action."""
    return render(
        request,
        "games/confirm.html",
        {
            "game": game,
            "title": get_engine(game.kind).TITLE,
            "action": action,
            "action_url": reverse(f"game_{action}", args=[game.pk]),
            "verb": action.capitalize(),
            "question": asking.question,
            "settings": wording.settings_words(game) if settings_said else "",
            "costs": asking.costs,
            "back": asking.back,
        },
    )


def _after_action(
    request: HtmxHttpRequest, game_id: int, *, game: Game | None = None, move: Move | None = None
) -> HttpResponseBase:
    if request.htmx:
        return _game_response(request, game_id, game=game, move=move)
    return redirect("game", game_id=game_id)


def _refused(
    request: HtmxHttpRequest,
    game_id: int,
    message: str,
    *,
    invited: bool = False,
    shown: JSON | None = None,
) -> HttpResponseBase:
    # The same page or partial with the reason; status 409 (htmx is configured to swap it).
    # `shown`: the move form as the player filled it in (MoveInputError.shown), not kept.
    return _game_response(request, game_id, error=message, status=409, invited=invited, shown=shown)


@require_safe
def game_record(request: HtmxHttpRequest, game_id: int) -> HttpResponse:
    game = get_object_or_404(Game, pk=game_id)
    if game.hidden_from(game.seats.all(), request.user):
        raise Http404("No such game.")
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


# --- challenges, invite links, withdraw, abort, rematch (play.challenges) ----------------------


def _challenge_answer(
    request: HtmxHttpRequest,
    game_id: int,
    act: Callable[..., object],
    signed_out: str,
) -> HttpResponseBase:
    """A signed-in player's answer to a game (accept, decline, withdraw, abort) by the service
    `act`; its refusal, or `signed_out` for a visitor, as a sentence on the game page."""
    if not request.user.is_authenticated:
        return _refused(request, game_id, signed_out)
    try:
        act(game_id=game_id, user=request.user)
    except core.GameError as exc:
        return _refused(request, game_id, str(exc))
    return _after_action(request, game_id)


@require_POST
def game_accept(request: HtmxHttpRequest, game_id: int) -> HttpResponseBase:
    """Accept a challenge or a rematch offer: take the seat kept for you."""
    return _challenge_answer(
        request, game_id, challenges.challenge_accept, "Sign in to answer a challenge."
    )


@require_http_methods(["GET", "HEAD", "POST"])
def game_decline(request: HtmxHttpRequest, game_id: int) -> HttpResponseBase:
    """Decline a challenge or a rematch offer, once asked: it is off for everyone."""

    def ask(game: Game) -> _Asking:
        offer = "rematch offer" if game.rematch_of_id else "challenge"
        challenger = game.created_by.get_username() if game.created_by else "someone"
        return _Asking(
            format_html("Decline {}'s {}?", challenger, offer),
            wording.CALL_OFF_COSTS,
            back="offer" if game.rematch_of_id else "challenge",
        )

    return _asked_first(
        request,
        game_id,
        "decline",
        refusal=challenges.decline_refusal,
        ask=ask,
        act=challenges.challenge_decline,
        signed_out="Sign in to answer a challenge.",
    )


@require_http_methods(["GET", "HEAD", "POST"])
def game_withdraw(request: HtmxHttpRequest, game_id: int) -> HttpResponseBase:
    """The creator calls off an open game or a challenge, once asked."""
    return _asked_first(
        request,
        game_id,
        "withdraw",
        refusal=challenges.withdraw_refusal,
        ask=lambda game: _Asking(
            f"Withdraw {get_engine(game.kind).TITLE} #{game.pk}?", wording.CALL_OFF_COSTS
        ),
        act=challenges.game_withdraw,
        signed_out="Only the player who made this game can withdraw it.",
    )


@require_http_methods(["GET", "HEAD", "POST"])
def game_abort(request: HtmxHttpRequest, game_id: int) -> HttpResponseBase:
    """End a game nobody but its creator has moved in yet, once asked: no result."""
    return _asked_first(
        request,
        game_id,
        "abort",
        refusal=challenges.abort_refusal,
        ask=lambda game: _Asking(
            f"Abort {get_engine(game.kind).TITLE} #{game.pk}?", wording.ABORT_COSTS
        ),
        act=challenges.game_abort,
        signed_out="You have no seat in this game.",
    )


def _asked_first(
    request: HtmxHttpRequest,
    game_id: int,
    action: str,
    *,
    refusal: Callable[..., str | None],
    ask: Callable[[Game], _Asking],
    act: Callable[..., object],
    signed_out: str,
) -> HttpResponseBase:
    """A signed-in player's action on a game that has not really begun (decline, withdraw,
    abort) by the service `act`, once they said yes (`_said_yes`); until then the page that
    asks (`ask`: its question, costs and way back). Whoever cannot act (`refusal`: the service's
    own check, read here without the lock) is told why (409) to a post, and nothing is asked; a
    GET with nothing to ask (a link followed, a refusal's page reloaded) goes to the game's
    page, which says where the game stands."""
    if not request.user.is_authenticated:
        return _refused(request, game_id, signed_out)
    if _said_yes(request):
        return _challenge_answer(request, game_id, act, signed_out)
    game = get_object_or_404(Game.objects.select_related("created_by"), pk=game_id)
    why = refusal(game=game, user=request.user)
    if why is not None:
        return _refused(request, game_id, why) if request.method == "POST" else redirect(game)
    return _confirm_page(request, game, action, ask(game))


@require_POST
@limits.limit("create_player", lambda request, game_id: limits.player_key(request), done_only=True)
def game_rematch(request: HtmxHttpRequest, game_id: int) -> HttpResponseBase:
    """Offer the players of a finished game the same game again; its page shows the offer."""
    if not request.user.is_authenticated:
        return _refused(request, game_id, "Only a player of this game can offer a rematch.")
    try:
        rematch = challenges.rematch_offer(game_id=game_id, user=request.user)
    except core.GameError as exc:
        return _refused(request, game_id, str(exc))
    return redirect(rematch)


@require_http_methods(["GET", "HEAD", "POST"])
@limits.limit(
    "join_player", lambda request, game_id, token: limits.player_key(request), done_only=True
)
def game_invite(request: HtmxHttpRequest, game_id: int, token: str) -> HttpResponseBase:
    """A private game's invite link: the game's page with a Join button, for whoever has the
    link (a guest is made on joining, as for an open game). A wrong token is a page not found,
    the same as a game that does not exist."""
    game = get_object_or_404(Game, pk=game_id)
    if not core.invite_token_matches(game, token):
        raise Http404("This invite link is not valid: copy the whole link you were sent.")
    if request.method == "POST":
        try:
            with player_for(request) as user:
                core.game_join(game_id=game_id, user=user, token=token)
        except core.GameError as exc:
            return _refused(request, game_id, str(exc), invited=True)
        return redirect("game", game_id=game_id)
    response = _game_page(request, game_id, invited=True)
    # An open game's page is never kept (game_cache): it is drawn by its template (or is a
    # poll's 204).
    if isinstance(response, TemplateResponse) and game.status == Game.Status.OPEN:
        assert response.context_data is not None
        seats = list(game.seats.all())
        mine = request.user.is_authenticated and any(s.user_id == request.user.pk for s in seats)
        response.context_data["invite_join_url"] = (
            "" if mine or not any(s.is_open for s in seats) else request.path
        )
    return response


# --- the chat (games/chat) --------------------------------------------------------------------


def chat_context(
    request: HtmxHttpRequest, game: Game, is_player: bool, written: bool | None = None
) -> dict[str, Any]:
    """The chat's part of a game page; `written`: whether the game has any message at all,
    if known (chat.chat_read)."""
    chat_view = chat.chat_read(game=game, user=request.user, is_player=is_player, written=written)
    return {
        "chat": chat_view,
        "chat_poll_every": settings.CHAT_POLL_EVERY,
    }


@require_safe
def game_chat(request: HtmxHttpRequest, game_id: int) -> HttpResponseBase:
    """The chat's messages, for its poll: 204 while nothing changed for this viewer (one query
    besides the session's), else the messages' partial. Without htmx, the game page."""
    if not request.htmx:
        return redirect(reverse("game", args=[game_id]) + "#chat")
    user_id = request.session.get(SESSION_KEY)
    changed = chat.chat_changed(
        game_id=game_id,
        user_id=int(user_id) if user_id is not None else None,
        after=ascii_int(request.GET.get("after")) or 0,
        over=request.GET.get("over") == "1",
        is_player=request.GET.get("player") == "1",
    )
    if changed is None:
        raise Http404("No such game.")
    if not changed:
        return _not_stored(HttpResponse(status=204))
    return _not_stored(_chat_response(request, game_id, part="chat_messages"))


def _chat_response(
    request: HtmxHttpRequest,
    game_id: int,
    *,
    part: str = "chat",
    error: str = "",
    notice: str = "",
    text: str = "",
    status: int = 200,
) -> HttpResponse:
    game = get_object_or_404(Game.objects.defer("state", "seed"), pk=game_id)
    if game.hidden_from(game.seats.all(), request.user):
        raise Http404("No such game.")
    context = {
        "game": game,
        "chat_error": error,
        "chat_notice": notice,
        "chat_text": text,
        **chat_context(request, game, _seat_of(game, request) is not None),
    }
    return render(request, f"games/_chat.html#{part}", context, status=status)


def _chat_done(request: HtmxHttpRequest, game_id: int, notice: str = "") -> HttpResponseBase:
    if request.htmx:
        return _chat_response(request, game_id, notice=notice)
    if notice:
        messages.success(request, notice)
    # A finished game's page may be kept a minute by the browser: a new address shows the
    # chat as it is now.
    return redirect(f"{reverse('game', args=[game_id])}?chat={clock.now().timestamp():.0f}#chat")


def _chat_refused(
    request: HtmxHttpRequest, game_id: int, message: str, text: str = ""
) -> HttpResponseBase:
    # The chat (htmx) or the game page with the reason, and the message kept in the box.
    if request.htmx:
        return _chat_response(request, game_id, error=message, text=text, status=409)
    if not Game.objects.filter(pk=game_id).exists():
        raise Http404("No such game.")
    return _game_response(request, game_id, chat_error=message, chat_text=text, status=409)


@require_POST
@limits.limit("chat_player", lambda request, game_id: limits.player_key(request), done_only=True)
def game_chat_post(request: HtmxHttpRequest, game_id: int) -> HttpResponseBase:
    text = text_field(request.POST.get("text"))
    try:
        chat.chat_post(game_id=game_id, user=request.user, text=text)
    except chat.ChatError as exc:
        return _chat_refused(request, game_id, str(exc), text)
    return _chat_done(request, game_id)


@require_POST
@limits.limit(
    "chat_action_player", lambda request, game_id: limits.player_key(request), done_only=True
)
def game_chat_report(request: HtmxHttpRequest, game_id: int) -> HttpResponseBase:
    message_id = ascii_int(request.POST.get("message"))
    try:
        chat.chat_report(game_id=game_id, user=request.user, message_id=message_id)
    except chat.ChatError as exc:
        return _chat_refused(request, game_id, str(exc))
    return _chat_done(request, game_id, wording.CHAT_REPORTED)


@require_POST
@limits.limit(
    "chat_action_player", lambda request, game_id: limits.player_key(request), done_only=True
)
def game_chat_mute(request: HtmxHttpRequest, game_id: int) -> HttpResponseBase:
    message_id = ascii_int(request.POST.get("message"))
    try:
        mute = chat.chat_mute(game_id=game_id, user=request.user, message_id=message_id)
    except chat.ChatError as exc:
        return _chat_refused(request, game_id, str(exc))
    return _chat_done(request, game_id, wording.chat_muted(mute.muted.get_username()))


@require_POST
@limits.limit(
    "chat_action_player", lambda request, game_id: limits.player_key(request), done_only=True
)
def game_chat_unmute(request: HtmxHttpRequest, game_id: int) -> HttpResponseBase:
    person = ascii_int(request.POST.get("person"))
    try:
        chat.chat_unmute(user=request.user, muted_id=person)
    except chat.ChatError as exc:
        return _chat_refused(request, game_id, str(exc))
    return _chat_done(request, game_id, wording.CHAT_UNMUTED)
