"""Maze Race: two to four runners race through the same foggy 15 x 15 maze to its far corner.

The maze is drawn from the seed by `mazegen` (its docstring is the algorithm, in words); after
that no more chance is needed, so the stream position in the state never moves again. Every
runner starts on a1; the exit is o15. A move is one step, `{"dir": "N" | "E" | "S" | "W"}`.

Fog. A runner has seen the cells it has stood in and every cell in a straight line from one of
them along open walls (in each of the four directions, up to the first closed wall). A seen cell
shows its four walls; the view never carries a wall of a cell its runner has not seen.

Live race (mode "live"). The site decides the time: it adds `now_ms`, the milliseconds since the
race began, to every step, `{"dir": "E", "now_ms": 1234}`. A runner's first step lands at
`now_ms`; every later step lands at `max(now_ms, last landing + 250)`, so a runner covers at most
one cell every 250 ms. A step asked for before the last one has landed waits for it; only one
may wait: a step asked for while the last accepted one has not landed yet (`now_ms` before its
landing) is refused with "One step is already waiting.". The outcome of a step is
`{"at": "b1", "landed_ms": 1234}`. The first runner to land on o15 wins; runners landing in
the same millisecond share a place, and later arrivals are placed by their landing times.
`deadline_ms(state)` says when the race must be closed: 30 s after the earliest exit landing,
or 10 minutes after the start while nobody has exited (a resignation does not start the 30 s).
A step that would land after the deadline is refused. At the deadline the site calls
`close(state, now_ms)`, which places the runners still in the maze by the number of distinct
cells they covered, more being better.

Slow race (mode "slow"). Every runner still in steps at its own pace (`now_ms` is ignored and
`landed_ms` is null); the fewest steps to the exit wins, equal steps share the place.

In both modes `{"resign": true}` and `{"timeout": true}` put a runner out where it stands; it
is placed with the runners that did not get out, by cells covered. Runners who got out come
before all of those. Equal runners share a place, and the places after them are skipped
(1, 1, 3). The race is over when every runner is out (or when it is closed at its deadline);
the reason is "exit" if somebody got out, else "deadline" or how the last runner left.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from games.engines import mazegen
from games.engines.base import JSON, Engine, IllegalMove, Result
from games.engines.mazegen import BIT, CELL_OF, EXIT, NAMES, SIZE, START

SLUG = "mazerace"
TITLE = "Maze Race"
MIN_SEATS = 2
MAX_SEATS = 4
MODES = ("live", "slow")
SEATS_MOVE_APART = True  # a runner's step does not depend on the other runners'

STEP_MS = 250  # a runner lands at most one step every 250 ms
CLOSE_AFTER_MS = 30_000  # the others' time to finish once the first runner is out
RACE_LIMIT_MS = 600_000  # a live race with nobody out ends after 10 minutes

WORDS = {"N": "north", "E": "east", "S": "south", "W": "west"}
MALFORMED = "A move is one step: N, E, S or W."


# --- options and start -------------------------------------------------------------------


def default_options() -> JSON:
    return {"mode": "live"}


def validate_options(options: JSON, seats: int) -> JSON:
    if isinstance(seats, bool) or not isinstance(seats, int):
        raise ValueError(f"A Maze Race is for {MIN_SEATS} to {MAX_SEATS} runners.")
    if not MIN_SEATS <= seats <= MAX_SEATS:
        raise ValueError(f"A Maze Race is for {MIN_SEATS} to {MAX_SEATS} runners.")
    unknown = sorted(set(options) - {"mode"})
    if unknown:
        raise ValueError(f"A Maze Race has no option called {unknown[0]!r}.")
    mode = options.get("mode", "live")
    if mode not in MODES:
        raise ValueError('A Maze Race is run "live" or "slow".')
    return {"mode": mode}


def start(seed: bytes, options: JSON, seats: int) -> JSON:
    mode = validate_options(options, seats)["mode"]
    maze, position = mazegen.maze_from_seed(seed)
    return {
        "seed": seed.hex(),
        "stream": position,
        "mode": mode,
        "maze": mazegen.encode(maze),
        "runners": [_new_runner(maze) for _ in range(seats)],
        "result": None,
    }


def _new_runner(maze: Sequence[int]) -> JSON:
    return {
        "at": NAMES[START],
        "path": [NAMES[START]],
        "seen": _names(sight(maze, START)),  # cell names in row-major order
        "steps": 0,
        "covered": 1,  # distinct cells stood on
        "landed_ms": None,  # when the last accepted step lands (live); None before the first
        "out": None,  # None while in the maze, then "exit", "resign" or "timeout"
    }


def initial(state: JSON) -> JSON:
    return {"size": SIZE, "open": list(state["maze"])}


def first_seat(state: JSON) -> int:
    return 0  # runners act at once: there is no turn order


def to_move(state: JSON) -> list[int]:
    if state["result"] is not None:
        return []
    return [seat for seat, runner in enumerate(state["runners"]) if runner["out"] is None]


def move_number(state: JSON, seat: int) -> int:
    """How many steps this runner has asked for so far (steps accepted, landed or waiting): its
    next step carries this number, so a step sent twice is taken once."""
    return int(state["runners"][seat]["steps"])


def result(state: JSON) -> Result | None:
    done = state["result"]
    if done is None:
        return None
    return Result(reason=done["reason"], places=list(done["places"]))


def notation(move: JSON, outcome: JSON) -> str:
    if move.get("resign"):
        return "resigns"
    if move.get("timeout"):
        return "times out"
    return f"{move['dir']} {outcome['at']}"


# --- the maze and the fog ----------------------------------------------------------------


@lru_cache(maxsize=32)
def _decoded(rows: tuple[str, ...]) -> tuple[int, ...]:
    return tuple(mazegen.decode(rows))


def maze_of(state: JSON) -> tuple[int, ...]:
    return _decoded(tuple(state["maze"]))


def sight(maze: Sequence[int], cell: int) -> set[int]:
    """The cell and every cell in a straight line from it along open walls."""
    seen = {cell}
    for direction, step in mazegen.STEP.items():
        bit = BIT[direction]
        here = cell
        while maze[here] & bit:
            here += step
            seen.add(here)
    return seen


def _names(cells: set[int]) -> list[str]:
    return [NAMES[cell] for cell in sorted(cells)]


def sentence(bits: int, cell: int) -> str:
    """What the sentence under the board says about the runner's cell."""
    if cell == EXIT:
        return "exit"
    if cell == START:
        return "start"
    ways = mazegen.open_count(bits)
    if ways <= 1:
        return "dead end"
    if ways == 2:
        return "corridor"
    return f"junction: {ways - 1} ways on"


# --- moves -------------------------------------------------------------------------------


def apply(state: JSON, seat: int, move: JSON) -> tuple[JSON, JSON]:
    if state["result"] is not None:
        raise IllegalMove("The race is over.")
    runners = state["runners"]
    if isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat < len(runners):
        raise IllegalMove("There is no such runner in this race.")
    if runners[seat]["out"] is not None:
        raise IllegalMove("Your runner is already out of the maze.")
    if not isinstance(move, dict):
        raise IllegalMove(MALFORMED)
    for leaving in ("resign", "timeout"):
        if leaving in move:
            if move[leaving] is not True:
                raise IllegalMove(MALFORMED)
            return _leave(state, seat, leaving)
    return _step(state, seat, move)


def _step(state: JSON, seat: int, move: JSON) -> tuple[JSON, JSON]:
    direction_given = move.get("dir")
    if (
        set(move) - {"dir", "now_ms"}
        or not isinstance(direction_given, str)
        or direction_given not in BIT
    ):
        raise IllegalMove(MALFORMED)
    direction: str = move["dir"]
    runner = state["runners"][seat]
    landed: int | None = None
    if state["mode"] == "live":
        now = move.get("now_ms")
        if isinstance(now, bool) or not isinstance(now, int) or now < 0:
            raise IllegalMove("A live step needs the time it was asked for.")
        last = runner["landed_ms"]
        if last is not None and now < last:
            raise IllegalMove("One step is already waiting.")
        landed = now if last is None else max(now, last + STEP_MS)
        deadline = deadline_ms(state)
        if deadline is not None and landed > deadline:
            raise IllegalMove("The race is over: that step would land after the deadline.")
    maze = maze_of(state)
    here = CELL_OF[runner["at"]]
    if not maze[here] & BIT[direction]:
        raise IllegalMove(f"There is a wall to the {WORDS[direction]}.")
    there = here + mazegen.STEP[direction]
    name = NAMES[there]
    seen = {CELL_OF[seen_name] for seen_name in runner["seen"]} | sight(maze, there)
    moved: JSON = {
        **runner,
        "at": name,
        "path": [*runner["path"], name],
        "seen": _names(seen),
        "steps": runner["steps"] + 1,
        "covered": runner["covered"] + (name not in runner["path"]),
        "landed_ms": landed,
        "out": "exit" if there == EXIT else None,
    }
    new = _with_runner(state, seat, moved)
    if all(r["out"] is not None for r in new["runners"]):
        new["result"] = _placed(new, "exit")
    return new, {"at": name, "landed_ms": landed}


def _leave(state: JSON, seat: int, how: str) -> tuple[JSON, JSON]:
    runner = state["runners"][seat]
    new = _with_runner(state, seat, {**runner, "out": how})
    runners = new["runners"]
    if all(r["out"] is not None for r in runners):
        exited = any(r["out"] == "exit" for r in runners)
        new["result"] = _placed(new, "exit" if exited else how)
    return new, {"at": runner["at"], "out": how}


def _with_runner(state: JSON, seat: int, runner: JSON) -> JSON:
    runners = list(state["runners"])
    runners[seat] = runner
    return {**state, "runners": runners}


# --- the clock and the end ---------------------------------------------------------------


def deadline_ms(state: JSON) -> int | None:
    """When a live race must be closed, in ms after its start; None when it needs no closing
    (a slow race, whose seats time out on their own clocks, or a race that is over)."""
    if state["mode"] != "live" or state["result"] is not None:
        return None
    exits = [r["landed_ms"] for r in state["runners"] if r["out"] == "exit"]
    if exits:
        return int(min(exits)) + CLOSE_AFTER_MS
    return RACE_LIMIT_MS


def close(state: JSON, now_ms: int) -> JSON:
    """The race closed at its deadline: the runners still in are placed by cells covered.
    ValueError if the race has no deadline or `now_ms` has not reached it."""
    deadline = deadline_ms(state)
    if deadline is None:
        raise ValueError("This race has no deadline to close it at.")
    if now_ms < deadline:
        raise ValueError(f"The race runs until {deadline} ms, not {now_ms}.")
    exited = any(r["out"] == "exit" for r in state["runners"])
    return {**state, "result": _placed(state, "exit" if exited else "deadline")}


def _rank_key(runner: JSON, live: bool) -> tuple[int, int]:
    if runner["out"] == "exit":
        return (0, runner["landed_ms"] if live else runner["steps"])
    return (1, -runner["covered"])


def _places(runners: Sequence[JSON], live: bool) -> list[int]:
    keys = [_rank_key(runner, live) for runner in runners]
    return [1 + sum(other < key for other in keys) for key in keys]


def _placed(state: JSON, reason: str) -> JSON:
    return {"reason": reason, "places": _places(state["runners"], state["mode"] == "live")}


# --- what a seat sees --------------------------------------------------------------------


def _strip(state: JSON) -> list[JSON]:
    """Per runner: steps run, whether it is out, and its place once it is sure: after the race,
    and in a live race as soon as the runner got out (nobody still in can land before it). In a
    slow race a runner still in may yet get out in fewer steps, so no place shows before the end."""
    runners = state["runners"]
    done = state["result"]
    live = state["mode"] == "live"
    exited = [runner for runner in runners if runner["out"] == "exit"]
    strip = []
    for seat, runner in enumerate(runners):
        place: int | None = None
        if done is not None:
            place = done["places"][seat]
        elif live and runner["out"] == "exit":
            key = _rank_key(runner, live)
            place = 1 + sum(_rank_key(other, live) < key for other in exited)
        strip.append(
            {
                "seat": seat,
                "steps": runner["steps"],
                "out": runner["out"] is not None,
                "place": place,
            }
        )
    return strip


def view(state: JSON, seat: int | None) -> JSON:
    """Public race info for everyone; a runner's own fogged maze for its seat; the whole maze
    and every path once the race is over. Never the seed or the stream position."""
    done = state["result"]
    shown: JSON = {
        "mode": state["mode"],
        "size": SIZE,
        "start": NAMES[START],
        "exit": NAMES[EXIT],
        "seat": seat,
        "over": done is not None,
        "deadline_ms": deadline_ms(state),
        "strip": _strip(state),
        "result": None
        if done is None
        else {"reason": done["reason"], "places": list(done["places"])},
    }
    if seat is not None:
        shown.update(_runner_view(maze_of(state), state["runners"][seat]))
    if done is not None:
        shown["maze"] = list(state["maze"])
        shown["runners"] = [track(runner) for runner in state["runners"]]
    return shown


def track(runner: JSON) -> JSON:
    """Where a runner went: its own to see during the race, everybody's after it."""
    return {
        "at": runner["at"],
        "path": list(runner["path"]),
        "steps": runner["steps"],
        "covered": runner["covered"],
        "landed_ms": runner["landed_ms"],
        "out": runner["out"],
    }


def _runner_view(maze: Sequence[int], runner: JSON) -> JSON:
    here = CELL_OF[runner["at"]]
    return {
        **track(runner),
        "cells": {name: maze[CELL_OF[name]] for name in runner["seen"]},
        "open": mazegen.open_directions(maze[here]),
        "sentence": sentence(maze[here], here),
    }


# --- the record -----------------------------------------------------------------------------


def record_move(
    move: JSON, outcome: JSON, seat: int, viewer: int | None, over: bool
) -> tuple[JSON, JSON] | None:
    """During the race a runner sees its own steps only, spectators none (a step tells where a
    runner is, and so something of the maze). The stored step carries the time the site gave
    it (`now_ms`); the record shows the direction, and the outcome says where and when it
    landed."""
    if not over and viewer != seat:
        return None
    return {k: v for k, v in move.items() if k != "now_ms"}, outcome


def replay_move(move: JSON, outcome: JSON) -> JSON:
    """A live step asked for at its landing time lands at that same time again."""
    landed = outcome.get("landed_ms")
    if "dir" in move and landed is not None:
        return {"dir": move["dir"], "now_ms": landed}
    return move


class Rules(Engine):
    """The mazerace rules as the site calls them (engines/base.py)."""

    SLUG = SLUG
    TITLE = TITLE
    MIN_SEATS = MIN_SEATS
    MAX_SEATS = MAX_SEATS
    SEATS_MOVE_APART = SEATS_MOVE_APART
    STALE_MOVE = "That step was taken already: the same step counts once. Look at the maze again."
    OUT_OF_TIME = "Your time to get out has run out."
    default_options = staticmethod(default_options)
    validate_options = staticmethod(validate_options)
    start = staticmethod(start)
    initial = staticmethod(initial)
    first_seat = staticmethod(first_seat)
    to_move = staticmethod(to_move)
    apply = staticmethod(apply)
    view = staticmethod(view)
    result = staticmethod(result)
    notation = staticmethod(notation)
    record_move = staticmethod(record_move)
    replay_move = staticmethod(replay_move)
    deadline_ms = staticmethod(deadline_ms)
    close = staticmethod(close)

    def seats_left(self, state: JSON) -> list[int]:
        return [
            seat
            for seat, runner in enumerate(state["runners"])
            if runner["out"] in {"resign", "timeout"}
        ]

    def move_number(self, state: JSON, seat: int, ply: int) -> int:
        return move_number(state, seat)


ENGINE = Rules()
