"""The game record (DESIGN.md, "The game record"): build one for a viewer, and verify one by
replaying it from its seed."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings

from games.engines import ENGINES, IllegalMove
from games.engines.base import JSON, Engine
from games.models import (
    ABORTED_ON_TIME,
    CALLED_OFF,
    PLAYER_ABORTED,
    Clock,
    Game,
    departure,
    json_safe,
)
from games.web.inputs import ascii_int

FORMAT = "mazesite-record/1"


# What a record shows of each move, and how it is replayed, are the engine's (engines/base.py:
# record_move, replay_move); a game the rules close at a deadline with no move (a live race) is
# closed there when a record that says it finished is replayed (closed_at_deadline).


def record_build(game: Game, *, viewer_seat: int | None) -> JSON:
    """The record as this viewer may see it: while the game runs, the seed and anything the
    engine calls hidden are left out."""
    engine = ENGINES[game.kind]
    over = game.is_over
    seats = list(game.seats.select_related("user").order_by("index"))
    moves = []
    for m in game.moves.order_by("ply"):
        shown = public_move(game.kind, m.move, m.outcome, m.seat, viewer_seat, over)
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
        if over or engine.INITIAL_IS_PUBLIC:
            initial = engine.initial(game.state)
    places = [s.place for s in seats] if game.status == Game.Status.FINISHED else []
    vacation_events = [
        {"at": e.at.isoformat(), "seat": e.seat, "kind": e.kind, "ply": e.ply, **e.data}
        for e in game.vacation_events.all()
    ]
    clock_events = sorted([*game.clock_events, *vacation_events], key=lambda e: str(e["at"]))
    return json_safe(
        {
            "format": FORMAT,
            "game": game.kind,
            "id": str(game.pk),
            "url": settings.SITE_URL + game.get_absolute_url(),
            # The clock's options (a time bank, weekends off) beside the clock: not the engine's.
            "options": {**game.options, "clock": game.clock, **game.clock_options},
            "seed_sha256": game.seed_sha256,
            "seed": game.seed_hex if over else None,
            "players": [
                {
                    "seat": s.index,
                    "name": s.name,
                    "bot": s.bot or None,
                }
                for s in seats
            ],
            "first_seat": first_seat,
            "initial": initial,
            "moves": moves,
            # What moved a clock besides a move, in time order: the gifts of time kept on the
            # game (Game.clock_events) and the vacations' starts and early ends (ClockEvent rows);
            # the engines know no clocks, so these are the record's own.
            "clock_events": clock_events,
            "result": {
                "status": "active" if not over else str(game.status),
                "reason": game.result_reason,
                "places": places,
            },
        }
    )


def public_move(
    kind: str, move: JSON, outcome: JSON, seat: int, viewer: int | None, over: bool
) -> tuple[JSON, JSON] | None:
    """What this viewer may see of a stored move (None: nothing), as the record shows it."""
    return ENGINES[kind].record_move(move, outcome, seat, viewer, over)


# The fields the replay reads, each with the JSON type it must have (DESIGN.md, the record):
# (field, test, what it must be).
_OBJECT, _ARRAY, _TEXT = "an object", "an array", "a string"


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_FIELDS: list[tuple[str, Callable[[Any], bool], str]] = [
    ("game", lambda v: isinstance(v, str), _TEXT),
    ("seed", lambda v: v is None or isinstance(v, str), "a string or null"),
    ("seed_sha256", lambda v: isinstance(v, str), _TEXT),
    ("options", lambda v: isinstance(v, dict), _OBJECT),
    ("players", lambda v: isinstance(v, list), _ARRAY),
    ("first_seat", lambda v: v is None or _is_int(v), "a whole number or null"),
    ("initial", lambda v: isinstance(v, dict), _OBJECT),
    ("moves", lambda v: isinstance(v, list), _ARRAY),
    ("result", lambda v: isinstance(v, dict), _OBJECT),
]
_MOVE_FIELDS: list[tuple[str, Callable[[Any], bool], str]] = [
    ("ply", _is_int, "a whole number"),
    ("seat", _is_int, "a whole number"),
    ("move", lambda v: isinstance(v, dict), _OBJECT),
    ("outcome", lambda v: isinstance(v, dict), _OBJECT),
]
_RESULT_FIELDS: list[tuple[str, Callable[[Any], bool], str]] = [
    ("status", lambda v: isinstance(v, str), _TEXT),
    ("reason", lambda v: isinstance(v, str), _TEXT),
    ("places", lambda v: isinstance(v, list) and all(map(_is_int, v)), "an array of numbers"),
]


def _malformed(record: JSON) -> list[str]:
    """What in the record has the wrong JSON type, each in a sentence; [] when every field the
    replay reads has its type."""

    def check(
        obj: JSON, fields: list[tuple[str, Callable[[Any], bool], str]], where: str
    ) -> list[str]:
        return [
            f"{where}{name!r} must be {what}, not {_json_type(obj[name])}."
            if name in obj
            else f"{where}{name!r} is missing."
            for name, test, what in fields
            if name not in obj or not test(obj[name])
        ]

    problems = check(record, _FIELDS, "The field ")
    if problems:
        return problems
    for i, entry in enumerate(record["moves"]):
        if not isinstance(entry, dict):
            problems.append(f"Move {i + 1} must be an object, not {_json_type(entry)}.")
            continue
        problems += check(entry, _MOVE_FIELDS, f"In move {i + 1}, the field ")
        if len(problems) >= 5:  # enough to show what is wrong
            return problems
    problems += check(record["result"], _RESULT_FIELDS, "In the result, the field ")
    return problems


# The record's options that are the clock's, not the engine's.
CLOCK_KEYS = frozenset({"clock", "bank_days", "weekends_off"})


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return _TEXT
    return _ARRAY if isinstance(value, list) else _OBJECT


def record_verify(record: Any) -> list[str]:
    """Replay a record from its seed. Returns the problems found; none means it checks out. A
    record that is not one (wrong JSON types, missing fields) gets sentences saying what is
    malformed, never an exception."""
    if not isinstance(record, dict):
        return ["A record is a JSON object."]
    if record.get("format") != FORMAT:
        return [f"This is not a {FORMAT} record."]
    malformed = _malformed(record)
    if malformed:
        return malformed
    engine = ENGINES.get(record["game"])
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
    claimed = record["result"]
    if claimed["status"] == str(Game.Status.ABORTED) and claimed.get("reason") in CALLED_OFF:
        # Called off before it started: the seed drew nothing, there is nothing to replay.
        if (
            record["moves"]
            or claimed["places"]
            or record.get("first_seat") is not None
            or record.get("initial")
        ):
            problems.append(
                f"The record says the game was {claimed['reason']} before it started, but it "
                "has moves, places or a starting position."
            )
        return problems
    options = {k: v for k, v in record["options"].items() if k not in CLOCK_KEYS}
    clock = record["options"].get("clock")
    if clock not in Clock.values or (clock == Clock.LIVE) != (options.get("mode") == "live"):
        # A live race and a slow one rank their runners differently.
        problems.append(
            f"The clock {clock!r} is not this game's: a live race's is 'live', "
            "another game's 'P3D' or 'P30D'."
        )
    players = record["players"]
    try:
        state = engine.start(seed, options, len(players))
    except (ValueError, LookupError, TypeError) as exc:
        return [*problems, f"The game cannot be set up from these options: {exc}"]
    if engine.first_seat(state) != record.get("first_seat"):
        problems.append("The first seat is not the one the seed gives.")
    for number, entry in enumerate(record["moves"], start=1):
        ply = entry["ply"]
        if ply != number:
            problems.append(f"Move {number} is numbered {ply}: a game's moves are 1, 2, 3 and on.")
            return problems
        try:
            move = entry["move"]
            move = engine.replay_move(move, entry["outcome"])
            state, outcome = engine.apply(state, entry["seat"], move)
        except IllegalMove as exc:
            problems.append(f"Move {ply} is not legal: {exc}")
            return problems
        except (LookupError, TypeError, ValueError, AttributeError):
            # Not the engine's sentence: Python's own about a value of the wrong shape.
            problems.append(f"Move {ply} is not legal: it is not a {engine.TITLE} move.")
            return problems
        if json_safe(outcome) != entry.get("outcome"):
            problems.append(f"Move {ply}: the outcome is not what the rules and the seed give.")
    problems += clock_events_problems(record, len(players))
    # Checked after the moves: a Robot Maze Race's warehouses are its set-up moves.
    if json_safe(engine.initial(state)) != record.get("initial"):
        problems.append("The starting position is not the one the seed and the moves give.")
    result = engine.result(state)
    status = claimed["status"]
    if result is None and status == "finished":
        # A live race closed at its deadline, which is no move.
        result = engine.result(engine.closed_at_deadline(state))
    if status not in RESULT_STATUSES:
        problems.append(f"The result's status {status!r} is none of {', '.join(RESULT_STATUSES)}.")
    elif status == "finished":
        if result is None:
            problems.append("The record says the game finished, but the moves do not finish it.")
        elif result.places != claimed.get("places") or result.reason != claimed.get("reason"):
            problems.append("The result is not the one the moves give.")
    elif result is not None:
        said = "it goes on" if status == "active" else "it was aborted"
        problems.append(f"The moves finish the game, but the record says {said}.")
    elif status == "active":
        problems.append(
            "The record says the game goes on, but a game's seed is published at its end."
        )
    elif claimed["places"]:
        problems.append("A game that did not finish has no places.")
    else:
        problems += _abort_problems(engine, state, record["moves"], claimed.get("reason"))
    return problems


def _abort_problems(engine: Engine, state: JSON, moves: list[JSON], reason: Any) -> list[str]:
    """Whether the moves of a record that says its game was aborted allow that reason: a game
    that was played on cannot be passed off as aborted (models.py, ABORTED_ON_TIME...)."""
    if reason == ABORTED_ON_TIME:
        if engine.play_started(state, len(moves)):
            return ["The record says the game's clock ran out before it began, but it has moves."]
    elif reason == PLAYER_ABORTED:
        if len({entry["seat"] for entry in moves}) > 1:
            return [
                "The record says a player aborted the game, which is allowed only before anyone "
                "but its creator moved, but several players moved."
            ]
    elif reason not in CALLED_OFF:  # those are checked before the replay (record_verify)
        known = ", ".join((ABORTED_ON_TIME, PLAYER_ABORTED, *CALLED_OFF))
        return [f"An aborted game's reason {reason!r} is none of {known}."]
    return []


def _compared(name: str, value: Any) -> Any:
    if name == "url" and isinstance(value, str):
        return urlsplit(value).path
    return value


class RecordUnreadable(ValueError):
    """Text that cannot be read as a record's JSON; `str(exc)` says why, in a sentence."""


def record_parse(data: bytes | str, *, name: str) -> Any:
    """The JSON value in a record's bytes or text (UTF-8; a byte order mark, as some editors
    save one, is skipped). RecordUnreadable, with a sentence about `name` (a file's path, "The
    file"), when it cannot be read: whether it is a record is record_verify's to say."""
    try:
        text = data.decode("utf-8-sig") if isinstance(data, bytes) else data
    except UnicodeDecodeError:
        raise RecordUnreadable(f"{name} is not JSON: it is not UTF-8 text.") from None
    text = text.removeprefix("\ufeff")
    if not text.strip():
        raise RecordUnreadable(f"{name} is empty.")
    if _nested_deeper_than(text, RECORD_MAX_DEPTH):
        raise RecordUnreadable(f"{name} is nested too deeply to be a record.")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordUnreadable(f"{name} is not JSON: {exc}") from None
    except ValueError:  # Python's limit on the digits of an integer
        raise RecordUnreadable(
            f"{name} is not a record: it holds a number too long to read."
        ) from None


# A record nests a few levels (a move's outcome in the moves' list in the record); far deeper
# is no record. It is told before json.loads, which would go one call deeper a level until it
# hit Python's recursion limit, wherever in the stack the reading happens to stand.
RECORD_MAX_DEPTH = 64
_JSON_STRING_OR_BRACKET = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _nested_deeper_than(text: str, most: int) -> bool:
    """Whether the JSON in `text` opens more than `most` arrays and objects inside each other
    (strings are skipped: a bracket in one is text)."""
    depth = 0
    for match in _JSON_STRING_OR_BRACKET.finditer(text):
        bracket = match.group()
        if bracket in "[{":
            depth += 1
            if depth > most:
                return True
        elif bracket in "]}":
            depth -= 1
    return False


def record_checked_out(record: JSON) -> str:
    """The sentence for a record that record_verify found nothing wrong with."""
    moves = len(record.get("moves") or [])
    return (
        f"{record['game']} game {record.get('id')} checks out: the seed matches its SHA-256, "
        f"and all {moves} moves and every random draw replay exactly."
    )


SAME_AS_HELD = "It is the record this site holds, names and times included."
NOT_OVER_HERE = "This game is not over on this site."


def record_site_differences(record: JSON, *, user: Any) -> list[str] | None:
    """Where a record differs from this site's own record of the game it names (its `id`), as
    record_differences says; None if this site holds no such game (or none `user` may see). A
    game that is not over is not compared, so that nothing of its hidden parts is told: the
    one difference is that it is not over here."""
    pk = ascii_int(record.get("id"))
    game = Game.objects.filter(pk=pk).first() if pk is not None else None
    if game is None or game.hidden_from(game.seats.all(), user):
        return None
    if not game.is_over:
        return [NOT_OVER_HERE]
    return record_differences(record, record_build(game, viewer_seat=None))


# A record's result.status: a running game's, or one of Game.Status's ends.
RESULT_STATUSES = ("active", str(Game.Status.FINISHED), str(Game.Status.ABORTED))


def record_differences(record: JSON, held: JSON) -> list[str]:
    """Where a record differs from the one this site holds for its game (`held`, record_build
    with no viewer): what the seed cannot check, such as the players' names and the moves'
    times, checked against the site's own database. The `url` is checked by its path: one site
    is reached at several addresses (a port, a proxy's name), and SITE_URL names only one."""
    differences = [
        f"The field {name!r} is not what this site holds."
        for name in sorted(set(record) | set(held))
        if name != "moves" and _compared(name, record.get(name)) != _compared(name, held.get(name))
    ]
    mine, theirs = record.get("moves") or [], held.get("moves") or []
    if len(mine) != len(theirs):
        differences.append(f"The record has {len(mine)} moves; this site holds {len(theirs)}.")
    differences += [
        f"Move {b.get('ply')} is not what this site holds."
        for a, b in zip(mine, theirs, strict=False)
        if a != b
    ]
    return differences


def _instant(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        return None
    return at if at.tzinfo is not None else None


def clock_events_problems(record: JSON, seats: int) -> list[str]:
    """What is wrong with a record's `clock_events` (none in an older record), replayed beside
    its moves: each an object with `at`, `seat` and `kind`; a gift is from another seat (`by`)
    still in the game, in a turn the moves reach (`ply`), at most one from a seat in each
    turn; a vacation ends only after it started, and no seat timed out while on vacation (a
    vacation stops every clock of its player)."""
    events = record.get("clock_events", [])
    if not isinstance(events, list):
        return [f"The field 'clock_events' must be an array, not {_json_type(events)}."]
    problems: list[str] = []
    gifts: set[tuple[Any, Any]] = set()
    plies = len(record["moves"])
    # seat -> the ply of its resignation or timeout, after which it has no turn to give in
    left_at = {entry["seat"]: entry["ply"] for entry in record["moves"] if departure(entry["move"])}
    # seat -> [start, end) of each vacation
    vacations: dict[int, list[list[datetime]]] = {}
    for i, event in enumerate(events, start=1):
        if not isinstance(event, dict):
            problems.append(f"Clock event {i} must be an object, not {_json_type(event)}.")
            continue
        seat: Any = event.get("seat")
        at, kind = _instant(event.get("at")), event.get("kind")
        if at is None or not isinstance(kind, str):
            problems.append(f"Clock event {i} needs an 'at' time and a 'kind'.")
        elif not _is_int(seat) or not 0 <= seat < seats:
            problems.append(f"Clock event {i} names no seat of this game.")
        elif kind == "gift":
            by: Any = event.get("by")
            ply: Any = event.get("ply")
            if not _is_int(by) or not 0 <= by < seats or by == seat:
                problems.append(f"Clock event {i}: a gift of time is from another seat.")
            elif not _is_int(ply) or not 0 <= ply <= plies:
                problems.append(f"Clock event {i}: the gift is in no turn of the game.")
            elif by in left_at and ply >= left_at[by]:
                problems.append(
                    f"Clock event {i}: a gift of time from seat {by}, who was out of the game."
                )
            elif (by, ply) in gifts:
                problems.append(f"Clock event {i}: a second gift from seat {by} in one turn.")
            else:
                gifts.add((by, ply))
        elif kind == "vacation_start":
            until = _instant(event.get("until"))
            if until is None or until <= at:
                problems.append(f"Clock event {i}: a vacation needs an 'until' after its start.")
            else:
                vacations.setdefault(seat, []).append([at, until])
        elif kind == "vacation_end":
            started = vacations.get(seat)
            if not started or not started[-1][0] <= at <= started[-1][1]:
                problems.append(
                    f"Clock event {i}: a vacation ends that did not start, or after it was over."
                )
            else:
                started[-1][1] = at
    for entry in record["moves"]:
        if not entry["move"].get("timeout"):
            continue
        at = _instant(entry.get("at"))
        seat = entry["seat"]
        if at is not None and any(s <= at < e for s, e in vacations.get(seat, [])):
            problems.append(f"Move {entry['ply']}: a timeout while the player was on vacation.")
    return problems
