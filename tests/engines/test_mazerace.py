from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from games.engines import mazegen, mazerace
from games.engines.base import IllegalMove, Result
from games.engines.mazegen import BIT, CELL_OF, CELLS, EXIT, NAMES, SIZE, STEP

SEED = bytes(range(32))


def comb_maze() -> list[int]:
    """Row 1 is one corridor from a1 to o1; every column is a corridor down from row 1 to 15."""
    maze = [0] * CELLS
    for column in range(SIZE):
        for row in range(SIZE):
            cell = row * SIZE + column
            if row > 0:
                maze[cell] |= BIT["N"]
            if row < SIZE - 1:
                maze[cell] |= BIT["S"]
            if row == 0 and column > 0:
                maze[cell] |= BIT["W"]
            if row == 0 and column < SIZE - 1:
                maze[cell] |= BIT["E"]
    return maze


def race_on(maze: list[int], seats: int = 2, mode: str = "live") -> dict[str, Any]:
    """A race whose maze is replaced by `maze` (the runners' first sight follows it)."""
    state = mazerace.start(SEED, {"mode": mode}, seats)
    state["maze"] = mazegen.encode(maze)
    for runner in state["runners"]:
        runner["seen"] = [NAMES[c] for c in sorted(mazerace.sight(maze, 0))]
    return state


def run(state: dict[str, Any], seat: int, dirs: str, start_ms: int = 0, gap: int = 250):
    """Step `dirs` one after another, each asked for as soon as the last one has landed."""
    outcomes = []
    for i, direction in enumerate(dirs):
        move: dict[str, Any] = {"dir": direction}
        if state["mode"] == "live":
            move["now_ms"] = start_ms + i * gap
        state, outcome = mazerace.apply(state, seat, move)
        outcomes.append(outcome)
    return state, outcomes


TO_EXIT = "E" * 14 + "S" * 14  # on the comb maze: along row 1, then down column o


# --- options -----------------------------------------------------------------------------


def test_options() -> None:
    assert mazerace.default_options() == {"mode": "live"}
    assert mazerace.validate_options({}, 2) == {"mode": "live"}
    assert mazerace.validate_options({"mode": "slow"}, 4) == {"mode": "slow"}
    refused: list[tuple[dict[str, Any], int]] = [
        ({}, 1),
        ({}, 5),
        ({"mode": "fast"}, 2),
        ({"size": 15}, 2),
    ]
    for options, seats in refused:
        with pytest.raises(ValueError) as caught:
            mazerace.validate_options(options, seats)
        assert str(caught.value).endswith(".")


def test_start() -> None:
    state = mazerace.start(SEED, {}, 3)
    assert mazerace.to_move(state) == [0, 1, 2]
    assert mazerace.first_seat(state) == 0
    assert mazerace.result(state) is None
    initial = mazerace.initial(state)
    assert initial["size"] == 15
    assert mazegen.decode(initial["open"]) == mazegen.maze_from_seed(SEED)[0]
    assert json.loads(json.dumps(state)) == state
    assert state["stream"] == mazegen.maze_from_seed(SEED)[1]


# --- walls and fog -----------------------------------------------------------------------


def test_a_step_into_a_wall_is_refused() -> None:
    state = race_on(comb_maze())
    for direction, word in [("N", "north"), ("W", "west")]:
        with pytest.raises(IllegalMove, match=f"^There is a wall to the {word}.$"):
            mazerace.apply(state, 0, {"dir": direction, "now_ms": 0})
    state, _ = run(state, 0, "S")  # now on a2, in column a
    with pytest.raises(IllegalMove, match="^There is a wall to the east.$"):
        mazerace.apply(state, 0, {"dir": "E", "now_ms": 250})


def test_malformed_moves_are_refused() -> None:
    state = race_on(comb_maze())
    malformed: list[dict[str, Any]] = [
        {},
        {"dir": "X", "now_ms": 0},
        {"dir": "E", "now_ms": -1},
        {"dir": "E"},
        {"dir": "E", "now_ms": True},
        {"dir": "E", "now_ms": 0, "x": 1},
        {"resign": False},
    ]
    for move in malformed:
        with pytest.raises(IllegalMove):
            mazerace.apply(state, 0, move)
    with pytest.raises(IllegalMove):
        mazerace.apply(state, 2, {"dir": "E", "now_ms": 0})


def test_fog_is_what_the_runner_sees_in_straight_lines() -> None:
    maze = comb_maze()
    state = race_on(maze)
    column_a = {f"a{row}" for row in range(1, 16)}
    row_1 = {f"{c}1" for c in "abcdefghijklmno"}
    assert set(mazerace.view(state, 0)["cells"]) == column_a | row_1
    state, _ = run(state, 0, "E")  # b1: sees down column b as well
    column_b = {f"b{row}" for row in range(1, 16)}
    assert set(mazerace.view(state, 0)["cells"]) == column_a | row_1 | column_b
    # The other runner has not moved and sees no more than at the start.
    assert set(mazerace.view(state, 1)["cells"]) == column_a | row_1


def test_fog_stops_at_the_first_closed_wall() -> None:
    maze = comb_maze()
    # Close b1-c1: row 1 is seen from a1 only as far as b1.
    maze[1] &= ~BIT["E"]
    maze[2] &= ~BIT["W"]
    state = race_on(maze)
    seen = set(mazerace.view(state, 0)["cells"])
    assert seen == {f"a{row}" for row in range(1, 16)} | {"b1"}
    assert mazerace.view(state, 0)["cells"]["b1"] == BIT["W"] | BIT["S"]


def test_sentences() -> None:
    maze = comb_maze()
    state = race_on(maze)
    assert mazerace.view(state, 0)["sentence"] == "start"
    state, _ = run(state, 0, "E")
    assert mazerace.view(state, 0)["sentence"] == "junction: 2 ways on"
    assert mazerace.view(state, 0)["open"] == ["E", "S", "W"]
    state, _ = run(state, 0, "S", start_ms=250)
    assert mazerace.view(state, 0)["sentence"] == "corridor"
    state, _ = run(state, 0, "S" * 13, start_ms=500)
    assert mazerace.view(state, 0)["sentence"] == "dead end"
    assert mazerace.view(state, 0)["open"] == ["N"]


# --- timing ------------------------------------------------------------------------------


def test_a_step_asked_for_too_early_waits_and_only_one_may_wait() -> None:
    state = race_on(comb_maze())
    state, first = mazerace.apply(state, 0, {"dir": "E", "now_ms": 1000})
    assert first == {"at": "b1", "landed_ms": 1000}
    state, second = mazerace.apply(state, 0, {"dir": "E", "now_ms": 1100})
    assert second == {"at": "c1", "landed_ms": 1250}  # waits for the first to land + 250 ms
    with pytest.raises(IllegalMove, match="^One step is already waiting.$"):
        mazerace.apply(state, 0, {"dir": "E", "now_ms": 1200})
    state, third = mazerace.apply(state, 0, {"dir": "E", "now_ms": 1250})
    assert third == {"at": "d1", "landed_ms": 1500}
    state, fourth = mazerace.apply(state, 0, {"dir": "E", "now_ms": 5000})
    assert fourth == {"at": "e1", "landed_ms": 5000}
    # The other runner has its own pace.
    state, other = mazerace.apply(state, 1, {"dir": "S", "now_ms": 1200})
    assert other == {"at": "a2", "landed_ms": 1200}


def test_equal_landings_share_first_place() -> None:
    state = race_on(comb_maze(), seats=3)
    state, _ = run(state, 0, TO_EXIT)
    state, outcomes = run(state, 1, TO_EXIT)
    assert outcomes[-1] == {"at": "o15", "landed_ms": 27 * 250}
    assert mazerace.to_move(state) == [2]
    state, _ = mazerace.apply(state, 2, {"resign": True})
    assert mazerace.result(state) == Result(reason="exit", places=[1, 1, 3])


def test_the_first_to_land_wins_even_if_its_step_was_asked_for_later() -> None:
    state = race_on(comb_maze())
    state, _ = run(state, 0, TO_EXIT[:-1])  # one step short, last landed at 26 * 250
    state, _ = run(state, 1, TO_EXIT[:-1])
    # Seat 0 asks at 6600 (lands 6750), seat 1 asks later at 6700 (lands 6700).
    state, slow = mazerace.apply(state, 0, {"dir": "S", "now_ms": 6600})
    state, quick = mazerace.apply(state, 1, {"dir": "S", "now_ms": 6700})
    assert (slow["landed_ms"], quick["landed_ms"]) == (6750, 6750)
    assert mazerace.result(state) == Result(reason="exit", places=[1, 1])


# --- the deadline ------------------------------------------------------------------------


def test_the_deadline_is_30_seconds_after_the_first_exit() -> None:
    state = race_on(comb_maze(), seats=3)
    assert mazerace.deadline_ms(state) == 600_000
    state, _ = run(state, 1, "SSS")  # covers a1..a4: 4 cells
    state, _ = run(state, 2, "SSSSS")  # covers 6 cells
    state, _ = run(state, 0, TO_EXIT, start_ms=10_000)
    exit_ms = 10_000 + 27 * 250
    assert mazerace.deadline_ms(state) == exit_ms + 30_000
    assert mazerace.to_move(state) == [1, 2]
    assert mazerace.view(state, None)["strip"][0] == {
        "seat": 0,
        "steps": 28,
        "out": True,
        "place": 1,
    }
    with pytest.raises(ValueError):
        mazerace.close(state, exit_ms + 29_999)
    # A step that would land after the deadline is refused.
    with pytest.raises(IllegalMove, match="deadline"):
        mazerace.apply(state, 1, {"dir": "S", "now_ms": exit_ms + 30_001})
    closed = mazerace.close(state, exit_ms + 30_000)
    assert mazerace.result(closed) == Result(reason="exit", places=[1, 3, 2])
    assert mazerace.to_move(closed) == []
    assert mazerace.deadline_ms(closed) is None
    with pytest.raises(IllegalMove, match="over"):
        mazerace.apply(closed, 1, {"dir": "S", "now_ms": exit_ms + 30_001})
    with pytest.raises(ValueError):
        mazerace.close(closed, exit_ms + 40_000)


def test_a_race_with_nobody_out_closes_after_ten_minutes() -> None:
    state = race_on(comb_maze(), seats=3)
    state, _ = run(state, 0, "SS")
    state, _ = run(state, 1, "SS")
    state, _ = run(state, 2, "S")
    with pytest.raises(IllegalMove, match="deadline"):
        mazerace.apply(state, 2, {"dir": "S", "now_ms": 600_001})
    state, last = mazerace.apply(state, 2, {"dir": "S", "now_ms": 600_000})
    assert last["landed_ms"] == 600_000
    with pytest.raises(ValueError):
        mazerace.close(state, 599_999)
    closed = mazerace.close(state, 600_000)
    # Seats 0 and 1 covered 3 cells each; seat 2 also 3 by now: all share first place.
    assert mazerace.result(closed) == Result(reason="deadline", places=[1, 1, 1])


def test_cells_covered_count_distinct_cells() -> None:
    state = race_on(comb_maze())
    state, _ = run(state, 0, "SNSNSN")  # 6 steps, 2 cells
    state, _ = run(state, 1, "SSS")  # 3 steps, 4 cells
    assert [r["covered"] for r in state["runners"]] == [2, 4]
    closed = mazerace.close(state, 600_000)
    assert mazerace.result(closed) == Result(reason="deadline", places=[2, 1])


# --- resignations and slow races ---------------------------------------------------------


def test_a_resigned_runner_is_out_where_it_stands() -> None:
    state = race_on(comb_maze(), seats=3)
    state, _ = run(state, 0, "SSSSSS")  # 7 cells
    state, outcome = mazerace.apply(state, 0, {"resign": True})
    assert outcome == {"at": "a7", "out": "resign"}
    assert mazerace.notation({"resign": True}, outcome) == "resigns"
    assert mazerace.to_move(state) == [1, 2]
    assert mazerace.deadline_ms(state) == 600_000  # a resignation starts no 30 seconds
    with pytest.raises(IllegalMove, match="out of the maze"):
        mazerace.apply(state, 0, {"dir": "N", "now_ms": 5000})
    state, _ = run(state, 1, "SS")  # 3 cells
    state, _ = run(state, 2, TO_EXIT)
    closed = mazerace.close(state, mazerace.deadline_ms(state) or 0)
    assert mazerace.result(closed) == Result(reason="exit", places=[2, 3, 1])


def test_when_everybody_gives_up_the_last_way_out_is_the_reason() -> None:
    state = race_on(comb_maze())
    state, _ = mazerace.apply(state, 0, {"resign": True})
    state, _ = mazerace.apply(state, 1, {"timeout": True})
    assert mazerace.result(state) == Result(reason="timeout", places=[1, 1])


def test_a_slow_race_is_won_by_the_fewest_steps() -> None:
    state = race_on(comb_maze(), seats=3, mode="slow")
    assert mazerace.deadline_ms(state) is None
    state, outcomes = run(state, 0, "EW" + TO_EXIT)  # 30 steps, out first
    assert outcomes[0] == {"at": "b1", "landed_ms": None}
    state, _ = run(state, 1, TO_EXIT)  # 28 steps, out later but quicker
    # Seat 2 may yet get out in fewer steps: no place is sure before the end.
    assert [entry["place"] for entry in mazerace.view(state, None)["strip"]] == [None] * 3
    assert [entry["out"] for entry in mazerace.view(state, None)["strip"]] == [True, True, False]
    assert mazerace.to_move(state) == [2]
    state, outcome = mazerace.apply(state, 2, {"timeout": True})
    assert outcome == {"at": "a1", "out": "timeout"}
    assert mazerace.result(state) == Result(reason="exit", places=[2, 1, 3])
    with pytest.raises(ValueError):
        mazerace.close(state, 10**9)


def test_notation() -> None:
    assert mazerace.notation({"dir": "E", "now_ms": 300}, {"at": "b1", "landed_ms": 300}) == (
        "E b1"
    )
    assert mazerace.notation({"timeout": True}, {"at": "a1", "out": "timeout"}) == "times out"


def test_apply_does_not_change_the_given_state() -> None:
    state = race_on(comb_maze())
    before = copy.deepcopy(state)
    mazerace.apply(state, 0, {"dir": "E", "now_ms": 0})
    mazerace.apply(state, 1, {"resign": True})
    with pytest.raises(IllegalMove):
        mazerace.apply(state, 0, {"dir": "N", "now_ms": 0})
    mazerace.close(state, 600_000)
    assert state == before


# --- views -------------------------------------------------------------------------------

RUNNER_KEYS = {"at", "path", "steps", "covered", "landed_ms", "out", "cells", "open", "sentence"}
PUBLIC_KEYS = {"mode", "size", "start", "exit", "seat", "over", "deadline_ms", "strip", "result"}
AFTER_KEYS = {"maze", "runners"}


def test_view_keys_per_role() -> None:
    state = race_on(comb_maze())
    state, _ = run(state, 0, "E")
    assert set(mazerace.view(state, 0)) == PUBLIC_KEYS | RUNNER_KEYS
    spectator = mazerace.view(state, None)
    assert set(spectator) == PUBLIC_KEYS
    assert spectator["strip"] == [
        {"seat": 0, "steps": 1, "out": False, "place": None},
        {"seat": 1, "steps": 0, "out": False, "place": None},
    ]
    # A runner's view says nothing of the other runner but the strip.
    assert mazerace.view(state, 1)["path"] == ["a1"]
    state, _ = run(state, 0, TO_EXIT[1:], start_ms=250)
    state, _ = mazerace.apply(state, 1, {"resign": True})
    for seat in (0, 1, None):
        after = mazerace.view(state, seat)
        assert after["over"] is True
        assert set(after) >= AFTER_KEYS
        assert mazegen.decode(after["maze"]) == comb_maze()
        assert after["runners"][0]["path"][-1] == "o15"
        assert after["result"] == {"reason": "exit", "places": [1, 2]}
    assert [entry["place"] for entry in mazerace.view(state, None)["strip"]] == [1, 2]


def test_no_view_carries_the_seed() -> None:
    state = mazerace.start(SEED, {}, 2)
    for seat in (0, 1, None):
        text = json.dumps(mazerace.view(state, seat))
        assert SEED.hex() not in text
        assert '"seed"' not in text and '"stream"' not in text


# --- properties --------------------------------------------------------------------------


def straight_line_sight(maze: list[int], path: list[str]) -> set[str]:
    """The fog rule written out again, independently of the engine."""
    seen: set[str] = set()
    for name in path:
        cell = CELL_OF[name]
        seen.add(name)
        for direction in "NESW":
            here = cell
            while maze[here] & BIT[direction]:
                here += STEP[direction]
                seen.add(NAMES[here])
    return seen


def check_invariants(state: dict[str, Any]) -> None:
    maze = mazegen.decode(state["maze"])
    for runner in state["runners"]:
        path = runner["path"]
        assert path[0] == "a1" and runner["at"] == path[-1]
        assert runner["steps"] == len(path) - 1
        assert runner["covered"] == len(set(path))
        for a, b in zip(path, path[1:], strict=False):
            direction = mazegen.direction_between(CELL_OF[a], CELL_OF[b])
            assert maze[CELL_OF[a]] & BIT[direction], "a step went through a wall"
        assert set(runner["seen"]) == straight_line_sight(maze, path)
        assert runner["seen"] == sorted(runner["seen"], key=CELL_OF.__getitem__)
        assert (runner["out"] == "exit") == (runner["at"] == "o15")
        assert runner["out"] == "exit" or "o15" not in path[:-1]
    done = mazerace.result(state)
    out = [runner["out"] is not None for runner in state["runners"]]
    if done is None:
        assert mazerace.to_move(state) == [seat for seat, o in enumerate(out) if not o]
    else:
        assert mazerace.to_move(state) == []
        assert min(done.places) == 1
        assert len(done.places) == len(state["runners"])
    assert json.loads(json.dumps(state)) == state


def check_views(state: dict[str, Any]) -> None:
    maze = mazegen.decode(state["maze"])
    over = state["result"] is not None
    for seat, runner in enumerate(state["runners"]):
        view = mazerace.view(state, seat)
        text = json.dumps(view)
        assert state["seed"] not in text
        assert '"seed"' not in text and '"stream"' not in text
        assert view["cells"] == {name: maze[CELL_OF[name]] for name in runner["seen"]}
        if not over:
            # No wall of an unseen cell: the only walls are those of `cells`, and `open` and
            # `sentence` are about the runner's own cell, which it always sees.
            assert set(view) == PUBLIC_KEYS | RUNNER_KEYS
            assert view["at"] in runner["seen"]
            assert view["path"] == runner["path"]
    spectator = mazerace.view(state, None)
    if not over:
        assert set(spectator) == PUBLIC_KEYS


actions = st.lists(
    st.tuples(
        st.integers(0, 3),  # seat
        st.sampled_from(["home"] * 80 + ["step"] * 16 + ["close"] * 2 + ["resign", "timeout"]),
        st.integers(0, 3),  # which of the open directions, for "step"
        st.sampled_from([250, 400, 0, 50, 20_000]),  # ms after this seat's last request
    ),
    min_size=120,
    max_size=400,
)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.binary(min_size=32, max_size=32),
    mode=st.sampled_from(["live", "slow"]),
    seats=st.integers(2, 4),
    plan=actions,
)
def test_random_play_keeps_the_rules(
    seed: bytes, mode: str, seats: int, plan: list[tuple[int, str, int, int]]
) -> None:
    state = mazerace.start(seed, {"mode": mode}, seats)
    check_invariants(state)
    home = mazegen.distances(mazegen.decode(state["maze"]), EXIT)  # "home" steps towards it
    asked = [0] * seats
    record: list[tuple[int, dict[str, Any], dict[str, Any]]] = []
    states = [state]
    closed_at: int | None = None
    for seat_pick, kind, which, gap in plan:
        seat = seat_pick % seats
        if state["result"] is not None:
            break
        before = copy.deepcopy(state)
        if kind == "close":
            deadline = mazerace.deadline_ms(state)
            if deadline is None:
                continue
            now = max(asked) + gap
            if now < deadline:
                with pytest.raises(ValueError):
                    mazerace.close(state, now)
                continue
            state = mazerace.close(state, now)
            closed_at = now
        else:
            if kind in ("step", "home"):
                here = CELL_OF[state["runners"][seat]["at"]]
                options = mazerace.view(state, seat)["open"]
                if kind == "home":
                    options = [min(options, key=lambda d: home[here + STEP[d]])]
                move: dict[str, Any] = {"dir": options[which % len(options)]}
                asked[seat] += gap
                if mode == "live":
                    move["now_ms"] = asked[seat]
            else:
                move = {kind: True}
            try:
                state, outcome = mazerace.apply(before, seat, move)
            except IllegalMove as refused:
                assert str(refused).endswith(".")
                assert state == before
                continue
            if "dir" in move:
                runner = state["runners"][seat]
                assert outcome == {"at": runner["at"], "landed_ms": runner["landed_ms"]}
                if mode == "live":
                    last = before["runners"][seat]["landed_ms"]
                    assert outcome["landed_ms"] >= move["now_ms"]
                    assert last is None or outcome["landed_ms"] >= last + 250
            record.append((seat, move, outcome))
        assert states[-1] == before, "apply and close leave the given state alone"
        states.append(state)
        check_invariants(state)
        check_views(state)

    done = mazerace.result(state)
    event(f"ended by {done.reason}" if done else "still running")
    # Replaying the moves from the seed gives the same states and outcomes.
    replay = mazerace.start(seed, {"mode": mode}, seats)
    replayed = [replay]
    for seat, move, outcome in record:
        replay, again = mazerace.apply(replay, seat, move)
        assert again == outcome
        replayed.append(replay)
    if closed_at is not None:
        replayed.append(mazerace.close(replay, closed_at))
    assert replayed == states
