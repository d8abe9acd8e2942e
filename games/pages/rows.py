"""The lobby's lists of games, drawn by one function each instead of a template included per
row: a lobby shows up to 50 open and 50 running games and a page of one's own, and a template
per row cost more than the rest of the page. The markup is what templates/games/lobby.html
drew before, row for row."""

from __future__ import annotations

from collections.abc import Iterable
from html import escape

from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from games.archive.reads import Row
from games.archive.selectors import GameLine, YourGame
from games.models import Game
from games.ui import time_html
from games.ui.wording import clock_words

_PK = 2_147_483_647  # a placeholder game id, replaced in each row's URL


def _url(name: str) -> str:
    """The URL pattern of a view that takes a game id, with `{}` for the id: one reverse()
    for a list instead of one a row."""
    return reverse(name, args=[_PK]).replace(str(_PK), "{}")


# The lists of games are drawn with f-strings and the standard library's escape (which Django's
# `escape` is): format_html's escaping of every argument cost more than the rest of the drawing.


def _seat_names(game: GameLine) -> str:
    """Each player's name, linked to their page (guests too); a bot or an open seat as text; and
    "on vacation until ..." beside a player on vacation."""
    names = []
    for seat in game.seats:
        note = (
            f' <span class="vacation">on vacation until {time_html(seat.away)}</span>'
            if seat.away is not None
            else ""
        )
        name = escape(seat.name)
        if seat.url:
            names.append(
                f'<span class="seat-name"><a href="{escape(seat.url)}">{name}</a>{note}</span>'
            )
        else:
            names.append(f'<span class="seat-name">{name}{note}</span>')
    return "".join(names)


def game_rows(games: Iterable[GameLine], mine: set[int], csrf_token: str) -> SafeString:
    """The open or running games of the lobby, each with Join (a seat open), Watch, or Open
    (one of the viewer's own)."""
    game_url, join_url = _url("game"), _url("game_join")
    token = escape(csrf_token)
    rows = []
    for g in games:
        url = escape(game_url.format(g.id))
        if g.id in mine:
            action = f'<a class="watch" href="{url}">Open</a>'
        elif g.status == Game.Status.OPEN and any(s.is_open for s in g.seats):
            action = (
                f'<form method="post" action="{escape(join_url.format(g.id))}" class="inline">'
                f'<input type="hidden" name="csrfmiddlewaretoken" value="{token}">'
                '<button type="submit">Join</button></form>'
            )
        else:
            action = f'<a class="watch" href="{url}">Watch</a>'
        rows.append(
            f'<li class="game-row">\n  <a class="game-kind" href="{url}">'
            f"{escape(g.kind_title)} #{g.id}</a>\n"
            f'  <span class="seat-names">{_seat_names(g)}</span>\n'
            f'  <span class="clock">{escape(clock_words(g.kind, g.clock_duration))}</span>\n'
            f"  {action}\n</li>\n"
        )
    return SafeString("".join(rows))


def your_game_rows(rows: Iterable[YourGame]) -> SafeString:
    """A page of the viewer's own games: whose move, and the time left on the viewer's clock."""
    game_url = _url("game")
    out = []
    for row in rows:
        game = row.game
        waiting = [s.kept_for for s in game.seats if s.kept_for]
        if game.status == Game.Status.OPEN and waiting:
            state = f"waiting for {' and '.join(waiting)} to accept"
        elif game.status == Game.Status.OPEN:
            state = "waiting for players"
        elif row.your_move:
            state = ("in the maze" if row.race else "your move") + (
                f" · {row.left_text} left" if row.left_text else ""
            )
        elif row.out:
            state = "you are out · the others play on"
        else:
            state = _waiting_for(row)
        url = escape(game_url.format(game.id))
        out.append(
            f'<li class="game-row{" your-move" if row.your_move else ""}">\n'
            f'  <a href="{url}">{escape(game.kind_title)} #{game.id}</a>\n'
            f'  <span class="seat-names">{_seat_names(game)}</span>\n'
            f'  <span class="state">{escape(state)}</span>\n</li>\n'
        )
    return SafeString("".join(out))


def _waiting_for(row: YourGame) -> str:
    """Whom a game that is not the viewer's move waits for: the other players still in it.
    One left is "the other player" in a game of two, and named in a game of more, where the
    others are out (resigned or timed out)."""
    game = row.game
    who = "runner" if row.race else "player"
    left = [s for s in game.seats if s.index != row.seat and not s.out]
    if len(left) != 1:
        return f"waiting for the other {who}s"
    if len(game.seats) == 2:
        return f"waiting for the other {who}"
    return f"waiting for {left[0].name}"


def your_finished_rows(rows: Iterable[Row], username: str) -> SafeString:
    """A page of the viewer's finished games, newest first: every player's name linked to their
    page, the viewer's place, how it ended, when, and the replay."""
    out = []
    for row in rows:
        names = SafeString(
            "".join(
                format_html('<span class="seat-name"><a href="{}">{}</a></span>', s.url, s.name)
                if s.url
                else format_html('<span class="seat-name">{}</span>', s.name)
                for s in row.seats
            )
        )
        mine = next((s for s in row.seats if s.url and s.name == username), None)
        place = mine.place_text if mine is not None and mine.place_text else ""
        state = f"you came {place} · {row.ending}" if place else row.ending
        out.append(
            format_html(
                '<li class="game-row finished">\n  <a href="{}">{} #{}</a>\n'
                '  <span class="seat-names">{}</span>\n  <span class="state">{}</span>\n'
                '  <time datetime="{}">{}</time>\n  {}</li>\n',
                row.url,
                row.title,
                row.id,
                names,
                state,
                row.finished_iso,
                row.finished_text,
                format_html('<a class="watch" href="{}">Replay</a>\n', row.replay_url)
                if row.replay_url
                else "",
            )
        )
    return SafeString("".join(out))
