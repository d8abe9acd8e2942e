"""Replays: a finished game rebuilt from its seed and its moves, one state per ply, and what a
replay shows of each state from a chosen viewpoint.

A game is a pure function of its seed and its moves (DESIGN.md), so nothing but the seed, the
options, the number of seats and the stored moves is needed; the stored `Game.state` is not
read. Once a game is over everything in it is public, but a hidden-information game still
replays best from one side at a time. So each game kind lists its viewpoints and says what
its board shows from each:

    VIEWPOINTS["robotmaze"] = robotmaze_viewpoints   # (game, seats) -> [Viewpoint, ...]
    REPLAY_VIEWS["robotmaze"] = robotmaze_replay_view  # (state, viewpoint) -> view JSON

The first viewpoint is the default. `Viewpoint.seat` is what `ui.board(view, viewer)` gets as
`viewer`. A kind with no entry replays with one viewpoint, "everything", drawn from
`engine.view(state, None)`: right for Corn maze, which hides nothing but the seed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from games.engines import IllegalMove, get_engine
from games.engines.base import JSON
from games.models import Game, Move, Seat, json_safe


@dataclass(frozen=True)
class Viewpoint:
    key: str  # in the URL, ?view=<key>
    label: str  # in the viewpoint menu
    seat: int | None = None  # whose side the board is drawn from; None: a spectator's


EVERYTHING = Viewpoint(key="all", label="Everything")

# Per game kind: the viewpoints a replay offers, and what the board shows from each one.
VIEWPOINTS: dict[str, Callable[[Game, Sequence[Seat]], list[Viewpoint]]] = {}
REPLAY_VIEWS: dict[str, Callable[[JSON, Viewpoint], JSON]] = {}


def replay_viewpoints(game: Game, seats: Sequence[Seat]) -> list[Viewpoint]:
    """The viewpoints this game replays from; the first is the default."""
    offer = VIEWPOINTS.get(game.kind)
    return offer(game, seats) if offer is not None else [EVERYTHING]


def viewpoint_for(viewpoints: Sequence[Viewpoint], key: str | None) -> Viewpoint:
    return next((v for v in viewpoints if v.key == key), viewpoints[0])


def replay_view(kind: str, state: JSON, viewpoint: Viewpoint) -> JSON:
    """What the replay's board shows of `state` from `viewpoint`."""
    show = REPLAY_VIEWS.get(kind)
    if show is not None:
        return show(state, viewpoint)
    return get_engine(kind).view(state, viewpoint.seat)


def replay_states(game: Game, moves: Sequence[Move]) -> list[JSON]:
    """`states[i]` is the game after ply i (`states[0]`: before the first move), rebuilt from
    the seed. Raises the engine's IllegalMove if a stored move does not apply."""
    return [json_safe(state) for state in _states(game, moves)]


@dataclass(frozen=True)
class Rebuilt:
    state: JSON
    ply: int  # the ply reached: less than asked if a stored move would not apply
    problem: str = ""


def replay_state(game: Game, moves: Sequence[Move], ply: int) -> Rebuilt:
    """The game after ply `ply`, rebuilt from the seed. A stored move that the rules refuse
    (a tampered database) stops the rebuild there, with the reason."""
    reached = -1
    state: JSON = {}
    try:
        for reached, state in enumerate(  # noqa: B007
            _states(game, moves[:ply], to_the_end=ply >= len(moves))
        ):
            pass
    except IllegalMove as exc:
        return Rebuilt(
            state=state, ply=reached, problem=f"Move {reached + 1} does not apply: {exc}"
        )
    return Rebuilt(state=state, ply=reached)


def _states(game: Game, moves: Sequence[Move], *, to_the_end: bool = True) -> Iterator[JSON]:
    """The states after each of `moves`; `to_the_end`: they are all the game's moves, so the
    last state is the game's end (a race closed at its deadline is closed there)."""
    engine = get_engine(game.kind)
    # The seats are prefetched by the page; counting them costs no query then.
    state = engine.start(bytes(game.seed), dict(game.options), len(game.seats.all()))
    for n, move in enumerate(moves):
        yield state
        state, _ = engine.apply(state, move.seat, move.move)
        if to_the_end and n == len(moves) - 1:
            state = _closed(game, state)
    yield state


def _closed(game: Game, state: JSON) -> JSON:
    """A live race that ended at its deadline was closed by the clock, not by a move: the last
    state of its replay is the closed race."""
    if game.status != Game.Status.FINISHED:
        return state
    return dict(get_engine(game.kind).closed_at_deadline(state))


# Robot Maze Race: either seat's side, or both warehouses. A finished game hides nothing, so
# every viewpoint may show what that seat knew then, or everything.


def robotmaze_viewpoints(game: Game, seats: Sequence[Seat]) -> list[Viewpoint]:
    return _everything_then_each_seat(Viewpoint(key="both", label="Both warehouses"), seats, "side")


def robotmaze_replay_view(state: JSON, viewpoint: Viewpoint) -> JSON:
    view = get_engine("robotmaze").view(state, viewpoint.seat)
    if viewpoint.seat is None:
        view["warehouses"] = [list(rows) if rows else None for rows in state["warehouses"]]
    return view


# Maze Race: the whole maze with every path, or one runner's fog as it was at that moment.


def mazerace_viewpoints(game: Game, seats: Sequence[Seat]) -> list[Viewpoint]:
    return _everything_then_each_seat(Viewpoint(key="all", label="The whole maze"), seats, "fog")


def _everything_then_each_seat(
    everything: Viewpoint, seats: Sequence[Seat], noun: str
) -> list[Viewpoint]:
    return [everything] + [
        Viewpoint(key=f"seat{s.index}", label=f"{s.name}'s {noun}", seat=s.index) for s in seats
    ]


def mazerace_replay_view(state: JSON, viewpoint: Viewpoint) -> JSON:
    from games.engines import mazerace

    view = mazerace.view(state, viewpoint.seat)
    if viewpoint.seat is None and not view["over"]:
        # Drawn as the results page draws a race: the maze and every path so far.
        view.update(
            over=True,
            maze=list(state["maze"]),
            runners=[mazerace.track(runner) for runner in state["runners"]],
        )
    return view


VIEWPOINTS["robotmaze"] = robotmaze_viewpoints
REPLAY_VIEWS["robotmaze"] = robotmaze_replay_view
VIEWPOINTS["mazerace"] = mazerace_viewpoints
REPLAY_VIEWS["mazerace"] = mazerace_replay_view
