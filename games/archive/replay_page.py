"""The replay page's context: a finished game at one ply, from one viewpoint, with its
controls, caption and result. Built here, outside the view, so that it can be read and tested
on its own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.urls import reverse

from games.archive import reads, replays
from games.engines import get_engine
from games.models import Clock, Game, Seat, departure
from games.ui import colour, get_ui, has_ui, wording
from games.web.inputs import MAX_DIGITS, ascii_int


@dataclass
class Control:
    """A replay button: a link to ply `to`, or greyed out (no `url`) where it would go nowhere."""

    rel: str
    label: str
    title: str
    to: int
    url: str = ""


def _ply(text: str | None, last: int) -> int:
    """The ply asked for: a number past the end (however long) is the end; no number, the
    start."""
    digits = (text or "").strip()
    if digits.isascii() and digits.isdigit() and len(digits) > MAX_DIGITS:
        return last
    return min(ascii_int(text) or 0, last)


def replay_context(game: Game, ply_text: str | None, view_key: str | None) -> dict[str, Any]:
    engine = get_engine(game.kind)
    seats: list[Seat] = list(game.seats.all())
    moves = list(game.moves.all())
    last = len(moves)
    viewpoints = replays.replay_viewpoints(game, seats)
    viewpoint = replays.viewpoint_for(viewpoints, view_key)
    rebuilt = replays.replay_state(game, moves, _ply(ply_text, last))
    ply = rebuilt.ply
    view = replays.replay_view(game.kind, rebuilt.state, viewpoint)
    ui = get_ui(game.kind) if has_ui(game.kind) else None
    names = {s.index: s.name for s in seats}
    base = reverse("game_replay", args=[game.pk])

    def query(to: int) -> str:
        params: dict[str, Any] = {"ply": to}
        if viewpoint != viewpoints[0]:
            params["view"] = viewpoint.key
        return f"{base}?{urlencode(params)}"

    controls = [
        Control("first", "« Start", "The start (Home)", 0),
        Control("prev", "◀ Back", "One move back (←)", ply - 1),
        Control("next", "Next ▶", "One move on (→)", ply + 1),
        Control("last", "End »", "The end (End)", last),
    ]
    for c in controls:
        c.url = query(c.to) if 0 <= c.to <= last and c.to != ply else ""
    if ply == 0 and wording.steps_apart(game.kind):
        caption = wording.START_APART
    elif ply == 0:
        first = engine.first_seat(rebuilt.state)
        caption = f"The start. {names.get(first, f'Seat {first + 1}')} moves first."
    else:
        m = moves[ply - 1]
        name = names.get(m.seat, f"Seat {m.seat + 1}")
        how = departure(m.move)
        if how:
            what = wording.departed(name, how)
        else:
            what = f"{name} played {engine.notation(m.move, m.outcome)}"
        caption = f"Move {ply} of {last}: {what}."
    winners = [s.name for s in seats if s.place == 1]
    if game.status == Game.Status.ABORTED:
        result = wording.aborted_text(
            game.result_reason, live_race=game.clock == Clock.LIVE, ply=game.ply
        )
    else:
        how = wording.ending(game.result_reason, kind=game.kind)
        if game.status == Game.Status.FINISHED and winners:
            if game.result_reason == "exit":  # the winners named: what they did
                how = wording.reached(game.kind)
            how = f"{' and '.join(winners)} {'win' if len(winners) > 1 else 'wins'}: {how}"
        result = f"{how}."
    return {
        "game": game,
        "title": engine.TITLE,
        "seats": [
            {
                "seat": s,
                "colour": colour(s.index),
                "place_text": reads.ordinal(s.place) if s.place else "",
                "url": reverse("player", args=[s.user.get_username()])
                if s.user is not None and not s.bot
                else "",
            }
            for s in seats
        ],
        "moves": [
            {
                "ply": m.ply,
                "colour": colour(m.seat),
                "name": names.get(m.seat, ""),
                "text": engine.notation(m.move, m.outcome),
                "url": query(m.ply),
            }
            for m in moves
        ],
        "start_url": query(0),
        "ply": ply,
        "last": last,
        "controls": controls,
        "caption": caption,
        "problem": rebuilt.problem,
        "is_end": ply == last,
        "result": result,
        "view": view,
        "ui": ui,
        "board": ui.board(view, viewpoint.seat, yours=False) if ui is not None else None,
        "viewpoints": viewpoints,
        "viewpoint": viewpoint,
        "base": base,
        "verify_url": f"{query(ply)}&verify=1",
        "record_url": reverse("game_record", args=[game.pk]),
        "record_name": f"{game.kind}-{game.pk}.json",
    }
