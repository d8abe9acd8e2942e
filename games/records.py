"""The game record (DESIGN.md, "The game record"): build one for a viewer, and verify one by
replaying it from its seed."""

from __future__ import annotations

import hashlib
from typing import Any

from django.conf import settings

from .engines import ENGINES, IllegalMove
from .engines.base import JSON
from .models import Game, json_safe

FORMAT = "mazesite-record/1"


def record_build(game: Game, *, viewer_seat: int | None) -> JSON:
    """The record as this viewer may see it: while the game runs, the seed and anything the
    engine calls hidden are left out."""
    engine = ENGINES[game.kind]
    over = game.is_over
    seats = list(game.seats.select_related("user").order_by("index"))
    moves = []
    for m in game.moves.order_by("ply"):
        shown = _public_move(game.kind, m.move, m.outcome, m.seat, viewer_seat, over)
        if shown is None:
            continue
        move, outcome = shown
        moves.append(
            {"ply": m.ply, "seat": m.seat, "at": m.at.isoformat(), "move": move, "outcome": outcome}
        )
    initial: JSON = {}
    first_seat = None
    if game.state is not None:
        first_seat = engine.first_seat(game.state)
        if over or getattr(engine, "INITIAL_IS_PUBLIC", False):
            initial = engine.initial(game.state)
    places = [s.place for s in seats] if game.status == Game.Status.FINISHED else []
    return json_safe(
        {
            "format": FORMAT,
            "game": game.kind,
            "id": str(game.pk),
            "url": settings.SITE_URL + game.get_absolute_url(),
            "options": {**game.options, "clock": game.clock},
            "seed_sha256": game.seed_sha256,
            "seed": game.seed_hex if over else None,
            "players": [
                {
                    "seat": s.index,
                    "name": s.name if not s.bot else f"Bot ({s.bot})",
                    "bot": s.bot or None,
                }
                for s in seats
            ],
            "first_seat": first_seat,
            "initial": initial,
            "moves": moves,
            "result": {
                "status": "active" if not over else str(game.status),
                "reason": game.result_reason,
                "places": places,
            },
        }
    )


def _public_move(
    kind: str, move: JSON, outcome: JSON, seat: int, viewer: int | None, over: bool
) -> tuple[JSON, JSON] | None:
    engine = ENGINES[kind]
    redact = getattr(engine, "record_move", None)
    if redact is None:
        return move, outcome
    shown: tuple[JSON, JSON] | None = redact(move, outcome, seat, viewer, over)
    return shown


def record_verify(record: Any) -> list[str]:
    """Replay a record from its seed. Returns the problems found; none means it checks out."""
    if not isinstance(record, dict):
        return ["A record is a JSON object."]
    if record.get("format") != FORMAT:
        return [f"This is not a {FORMAT} record."]
    engine = ENGINES.get(record.get("game", ""))
    if engine is None:
        return [f"Unknown game {record.get('game')!r}."]
    seed_hex = record.get("seed")
    if not seed_hex:
        return ["The record has no seed: the game is not over, so it cannot be checked yet."]
    try:
        seed = bytes.fromhex(seed_hex)
    except ValueError:
        return ["The seed is not hexadecimal."]
    problems: list[str] = []
    if hashlib.sha256(seed).hexdigest() != record.get("seed_sha256"):
        problems.append("The seed does not match the SHA-256 published at the start.")
    options = {k: v for k, v in (record.get("options") or {}).items() if k != "clock"}
    players = record.get("players") or []
    try:
        state = engine.start(seed, options, len(players))
    except (ValueError, KeyError, TypeError) as exc:
        return [*problems, f"The game cannot be set up from these options: {exc}"]
    if json_safe(engine.initial(state)) != record.get("initial"):
        problems.append("The starting position is not the one the seed gives.")
    if engine.first_seat(state) != record.get("first_seat"):
        problems.append("The first seat is not the one the seed gives.")
    for entry in record.get("moves") or []:
        ply = entry.get("ply")
        try:
            state, outcome = engine.apply(state, entry["seat"], entry["move"])
        except (IllegalMove, KeyError, TypeError, ValueError) as exc:
            problems.append(f"Move {ply} is not legal: {exc}")
            return problems
        if json_safe(outcome) != entry.get("outcome"):
            problems.append(f"Move {ply}: the outcome is not what the rules and the seed give.")
    result = engine.result(state)
    claimed = record.get("result") or {}
    if claimed.get("status") == "finished":
        if result is None:
            problems.append("The record says the game finished, but the moves do not finish it.")
        elif result.places != claimed.get("places") or result.reason != claimed.get("reason"):
            problems.append("The result is not the one the moves give.")
    elif result is not None and claimed.get("status") == "active":
        problems.append("The moves finish the game, but the record says it goes on.")
    return problems
