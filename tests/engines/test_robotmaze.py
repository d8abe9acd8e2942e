"""Robot Maze Race rules: warehouses, set-up, programs, the end, and what each viewer sees."""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from games.engines import robotmaze as rm
from games.engines.base import IllegalMove, Result
from games.engines.randomstream import RandomStream

SEED = bytes(range(32))
EMPTY_ROW = "." * 10

# A warehouse with all 20 crates at the bottom left, away from the robot's way along row A
# and down column 10 (and away from J10 itself).
OPEN = [
    EMPTY_ROW,
    EMPTY_ROW,
    EMPTY_ROW,
    EMPTY_ROW,
    EMPTY_ROW,
    "XXXX......",
    "XXXX......",
    "XXXX......",
    "XXXX......",
    "XXXX......",
]
# B1 is a crate: a robot going down from A1 bumps it.
BUMPY = [
    EMPTY_ROW,
    "X.........",
    EMPTY_ROW,
    EMPTY_ROW,
    EMPTY_ROW,
    "XXXX......",
    "XXXX......",
    "XXXX......",
    "XXXX......",
    "XXX.......",
]
# The example of the rules: the crates at A2, B3, C4, D3, E3, F2 and G1 wall off the entrance.
WALLED = [
    ".X.......X",
    "..X.......",
    "...X......",
    "..X.......",
    "..X.......",
    ".X........",
    "X.........",
    "....XXXXX.",
    "....XXXXX.",
    "...XX.....",
]


def test_example_warehouses_are_what_they_say() -> None:
    assert rm.warehouse_problems(OPEN) == []
    assert rm.warehouse_problems(BUMPY) == []
    assert sum(row.count("X") for row in WALLED) == 20


def started(seed: bytes = SEED) -> dict[str, Any]:
    return rm.start(seed, {}, 2)


def ready(warehouses: tuple[list[str], list[str]] = (OPEN, OPEN), seed: bytes = SEED) -> Any:
    """A game past set-up: warehouses[s] is seat s's own warehouse."""
    state = started(seed)
    for seat in (0, 1):
        state, outcome = rm.apply(state, seat, {"warehouse": warehouses[seat]})
        assert outcome == {}
    return state


def seed_with_first(first: int) -> bytes:
    for n in range(100):
        seed = bytes([n]) * 32
        if rm.start(seed, {}, 2)["first_seat"] == first:
            return seed
    raise AssertionError("no seed found")


def program(state: Any, seat: int, text: str, runs: int = 1) -> tuple[Any, Any]:
    return rm.apply(state, seat, {"program": text, "runs": runs})


# Options and start -------------------------------------------------------------------------


def test_module_names_and_options() -> None:
    assert (rm.SLUG, rm.TITLE, rm.MIN_SEATS, rm.MAX_SEATS) == ("robotmaze", "Robot Maze Race", 2, 2)
    assert rm.default_options() == {}
    assert rm.validate_options({}, 2) == {}
    for seats in (1, 3):
        with pytest.raises(ValueError, match="two players"):
            rm.validate_options({}, seats)


def test_start_draws_the_first_seat_from_the_stream() -> None:
    state = started()
    assert state["phase"] == "setup"
    assert rm.first_seat(state) == RandomStream(SEED).below(2)
    assert state["seed"] == SEED.hex() and state["position"] == 4
    assert rm.to_move(state) == [0, 1]
    assert rm.result(state) is None
    assert json.loads(json.dumps(state)) == state
    firsts = {rm.start(bytes([n]) * 32, {}, 2)["first_seat"] for n in range(20)}
    assert firsts == {0, 1}


# Warehouses --------------------------------------------------------------------------------


def with_crates(count: int) -> list[str]:
    cells = [(r, c) for r in range(5, 10) for c in range(5)][:count]
    return ["".join("X" if (r, c) in cells else "." for c in range(10)) for r in range(10)]


@pytest.mark.parametrize(
    ("rows", "problem"),
    [
        (with_crates(17), "Place 3 more crates (17 of 20)."),
        (with_crates(19), "Place 1 more crate (19 of 20)."),
        (with_crates(0), "Place 20 more crates (0 of 20)."),
        (with_crates(21), "Remove 1 crate (21 of 20)."),
        (with_crates(23), "Remove 3 crates (23 of 20)."),
        (
            ["X" + OPEN[0][1:], *OPEN[1:5], "XXX.......", *OPEN[6:]],
            "A1 is the entrance: no crate there.",
        ),
        ([*OPEN[:5], "XXX.......", *OPEN[6:9], "XXXX.....X"], "J10 is the exit: no crate there."),
        (OPEN[:9], "A warehouse is 10 rows (A to J) of 10 cells."),
        ("." * 100, "A warehouse is 10 rows (A to J) of 10 cells."),
        ([*OPEN[:3], "." * 9, *OPEN[4:]], "Row D must have exactly 10 cells."),
        ([*OPEN[:3], "....O.....", *OPEN[4:]], "Row D may hold only '.' (empty) and 'X' (crate)."),
        ([*OPEN[:3], None, *OPEN[4:]], "Row D must have exactly 10 cells."),
    ],
)
def test_warehouse_problems_are_sentences(rows: Any, problem: str) -> None:
    assert rm.warehouse_problems(rows)[0] == problem
    assert not rm.is_legal_warehouse(rows)


def test_a_walled_off_entrance_names_the_blockers() -> None:
    (problem,) = rm.warehouse_problems(WALLED)
    assert problem == (
        "No path from A1 to J10: the crates at A2, B3, C4, D3, E3, F2, G1 wall off the "
        "entrance; moving any one of them opens a path."
    )
    assert rm.blocking_cells(WALLED) == ["A2", "B3", "C4", "D3", "E3", "F2", "G1"]
    assert rm.blocking_cells(OPEN) == []


def test_a_thick_wall_shows_the_crates_around_the_entrance() -> None:
    rows = [EMPTY_ROW, "X" * 10, EMPTY_ROW, "X" * 10, *[EMPTY_ROW] * 6]
    assert rm.blocking_cells(rows) == [f"B{c}" for c in range(1, 11)]
    problems = rm.warehouse_problems(rows)
    assert problems[-1].startswith("No path from A1 to J10: the crates at B1, B2")
    assert problems[-1].endswith(
        "wall off the entrance; the wall is thicker than one crate: clear a way through to J10."
    )


def test_a_walled_off_exit_is_called_the_exit() -> None:
    """Crates at I10 and J9 shut in the exit, not the entrance (they used to be said to)."""
    rows = ["." * 10, "." * 10, "X" * 9 + ".", "." * 10, "." + "X" * 9]
    rows += ["." * 10, "." * 10, "." * 10, "." * 9 + "X", "." * 8 + "X."]
    assert rm.warehouse_problems(rows) == [
        "No path from A1 to J10: the crates at I10, J9 wall off the exit; "
        "moving any one of them opens a path."
    ]
    assert rm.blocking_cells(rows) == ["I10", "J9"]


def test_a_wall_two_crates_thick_is_not_said_to_open_by_moving_its_inner_crates() -> None:
    rows = [".XX" + "." * 7, "XXX" + "." * 7, "XX" + "." * 8, "." * 10, "." * 10]
    rows += ["X" * 9 + ".", "." * 10, "." + "X" * 4 + "." * 5, "." * 10, "." * 10]
    assert rm.warehouse_problems(rows) == [
        "No path from A1 to J10: the crates at A2, B1 wall off the entrance; "
        "the wall is thicker than one crate: clear a way through to J10."
    ]


def test_several_problems_are_all_told() -> None:
    rows = ["X" + EMPTY_ROW[1:], "X" * 10, *[EMPTY_ROW] * 8]
    assert rm.warehouse_problems(rows)[:2] == [
        "Place 9 more crates (11 of 20).",
        "A1 is the entrance: no crate there.",
    ]
    assert rm.warehouse_problems(rows)[2].startswith("No path from A1 to J10")


def test_random_warehouses_are_legal_and_differ() -> None:
    drawn = [rm.random_warehouse(random.Random(n)) for n in range(30)]
    assert all(rm.warehouse_problems(rows) == [] for rows in drawn)
    assert len({tuple(rows) for rows in drawn}) == 30


def test_cells() -> None:
    assert rm.cell_name(0, 0) == "A1" and rm.cell_name(9, 9) == "J10"
    assert rm.parse_cell("J10") == (9, 9) and rm.parse_cell("C4") == (2, 3)
    # Other scripts' digits too: int() reads "\uff11" (a full-width 1) and "\u0663" as 1 and 3.
    for bad in ("K1", "A0", "A11", "A", "", "a1", "A1x", "A\uff11", "B\u0663", "A\u00b2"):
        with pytest.raises(ValueError):
            rm.parse_cell(bad)


# Set-up -----------------------------------------------------------------------------------


def test_set_up_is_simultaneous_in_either_order() -> None:
    for order in ((0, 1), (1, 0)):
        state = started()
        state, outcome = rm.apply(state, order[0], {"warehouse": OPEN})
        assert outcome == {}
        assert rm.to_move(state) == [order[1]]
        assert state["phase"] == "setup"
        state, outcome = rm.apply(state, order[1], {"warehouse": BUMPY})
        assert outcome == {}
        assert state["phase"] == "play"
        assert rm.to_move(state) == [rm.first_seat(state)]


def test_set_up_refusals() -> None:
    state = started()
    with pytest.raises(IllegalMove, match=r"^Place 3 more crates \(17 of 20\)\.$"):
        rm.apply(state, 0, {"warehouse": with_crates(17)})
    with pytest.raises(IllegalMove, match="^Both warehouses must be set up first.$"):
        program(state, 0, "R")
    state, _ = rm.apply(state, 0, {"warehouse": OPEN})
    with pytest.raises(IllegalMove, match="^Your warehouse is already set up.$"):
        rm.apply(state, 0, {"warehouse": OPEN})
    with pytest.raises(IllegalMove, match="^Both warehouses must be set up first.$"):
        program(state, 1, "R")
    state, _ = rm.apply(state, 1, {"warehouse": OPEN})
    with pytest.raises(IllegalMove, match="^Your warehouse is already set up.$"):
        rm.apply(state, 1, {"warehouse": OPEN})


def test_odd_moves_are_refused() -> None:
    state = ready()
    seat = rm.first_seat(state)
    for move in (
        {},
        {"program": "R"},
        {"runs": 1},
        {"resign": False},
        {"timeout": 1},
        {"pass": True},
    ):
        with pytest.raises(IllegalMove):
            rm.apply(state, seat, move)
    with pytest.raises(IllegalMove, match="There is no seat 2"):
        rm.apply(state, 2, {"resign": True})


# Programs --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "runs", "problem"),
    [
        ("", 1, "A program has 1 to 4 commands."),
        ("URRDL", 1, "A program has 1 to 4 commands."),
        (["R"], 1, "A program has 1 to 4 commands."),
        ("RX", 1, "A program uses only the commands U, D, L and R."),
        ("rd", 1, "A program uses only the commands U, D, L and R."),
        ("R", 0, "The robot runs the program 1 to 4 times."),
        ("R", 5, "The robot runs the program 1 to 4 times."),
        ("R", "2", "The robot runs the program 1 to 4 times."),
        ("R", True, "The robot runs the program 1 to 4 times."),
    ],
)
def test_program_refusals(text: Any, runs: Any, problem: str) -> None:
    state = ready()
    with pytest.raises(IllegalMove, match=f"^{problem}$"):
        program(state, rm.first_seat(state), text, runs)


def test_clear_crate_and_wall() -> None:
    # Seat 0 runs through seat 1's warehouse (BUMPY), where B1 holds a crate.
    state = ready((OPEN, BUMPY), seed_with_first(0))
    state, outcome = program(state, 0, "URDR", 2)
    assert outcome == {
        "steps": [
            {"from": "A1", "dir": "U", "to": None, "result": "wall"},
            {"from": "A1", "dir": "R", "to": "A2", "result": "clear"},
            {"from": "A2", "dir": "D", "to": "B2", "result": "clear"},
            {"from": "B2", "dir": "R", "to": "B3", "result": "clear"},
            {"from": "B3", "dir": "U", "to": "A3", "result": "clear"},
            {"from": "A3", "dir": "R", "to": "A4", "result": "clear"},
            {"from": "A4", "dir": "D", "to": "B4", "result": "clear"},
            {"from": "B4", "dir": "R", "to": "B5", "result": "clear"},
        ],
        "damage": 1,
        "at": "B5",
    }
    assert rm.to_move(state) == [1]
    state, outcome = program(state, 1, "L")  # seat 1's robot, in OPEN
    assert outcome == {
        "steps": [{"from": "A1", "dir": "L", "to": None, "result": "wall"}],
        "damage": 1,
        "at": "A1",
    }
    state, outcome = program(state, 0, "LLLD")
    assert [s["result"] for s in outcome["steps"]] == ["clear", "clear", "clear", "clear"]
    assert outcome["at"] == "C2"
    state, _ = program(state, 1, "R")
    state, outcome = program(state, 0, "UULD", 1)
    # C2 -> B2 -> A2, A1, then B1 is a crate: the robot stays and takes a point of damage.
    assert outcome["steps"][-1] == {"from": "A1", "dir": "D", "to": "B1", "result": "crate"}
    assert (outcome["damage"], outcome["at"]) == (2, "A1")


def test_turns_alternate_and_only_the_seat_to_move_may_run() -> None:
    state = ready(seed=seed_with_first(1))
    assert rm.to_move(state) == [1]
    with pytest.raises(IllegalMove, match="^It is not your turn.$"):
        program(state, 0, "R")
    state, _ = program(state, 1, "R")
    assert rm.to_move(state) == [0]
    with pytest.raises(IllegalMove, match="^It is not your turn.$"):
        program(state, 1, "R")
    state, _ = program(state, 0, "R")
    assert rm.to_move(state) == [1]


def walk_out(first: int = 0) -> Iterator[tuple[Any, Any]]:
    """Seat `first` runs along row A and down column 10 of OPEN; the other seat bumps walls."""
    state = ready(seed=seed_with_first(first))
    other = 1 - first
    for text, runs in (("R", 4), ("RRRR", 2)):  # to A5; then to A10 and three walls
        state, outcome = program(state, first, text, runs)
        yield state, outcome
        state, outcome = program(state, other, "U")
        yield state, outcome
    state, outcome = program(state, first, "D", 4)
    yield state, outcome
    state, outcome = program(state, other, "U")
    yield state, outcome
    state, outcome = program(state, first, "DDDD", 4)
    yield state, outcome


def test_reaching_j10_wins_at_once_mid_program() -> None:
    *_, (state, outcome) = walk_out(first=0)
    # E10 -> F10, G10, H10, I10, J10: the program stops after 5 of its 16 commands.
    assert [s["to"] for s in outcome["steps"]] == ["F10", "G10", "H10", "I10", "J10"]
    assert (outcome["at"], outcome["damage"]) == ("J10", 3)
    assert rm.result(state) == Result(reason="exit", places=[1, 2])
    assert rm.to_move(state) == [] and state["phase"] == "over"
    with pytest.raises(IllegalMove, match="^The game is over.$"):
        program(state, 1, "U")
    with pytest.raises(IllegalMove, match="^The game is over.$"):
        rm.apply(state, 1, {"resign": True})


def test_wall_runs_count_as_damage_and_the_second_seat_can_win() -> None:
    *_, (state, outcome) = walk_out(first=1)
    assert rm.result(state) == Result(reason="exit", places=[2, 1])
    assert state["robots"][0]["damage"] == 3
    assert [s["result"] for s in walk_out_steps(first=1)[0]] == ["clear"] * 4


def walk_out_steps(first: int) -> list[list[Any]]:
    return [outcome["steps"] for _, outcome in walk_out(first)]


def test_the_twentieth_point_of_damage_ends_the_game_mid_program() -> None:
    state = ready(seed=seed_with_first(0))
    for _ in range(4):
        state, outcome = program(state, 0, "UUUU")  # four walls a turn
        state, _ = program(state, 1, "R")
    assert state["robots"][0]["damage"] == 16
    state, outcome = program(state, 0, "LU", 4)
    assert len(outcome["steps"]) == 4  # of 8 commands: the fourth wall was the 20th point
    assert outcome["damage"] == 20 and outcome["at"] == "A1"
    assert rm.result(state) == Result(reason="damage", places=[2, 1])
    assert rm.to_move(state) == []


def test_a_crate_bumped_again_and_again_is_damage_each_time() -> None:
    state = ready((OPEN, BUMPY), seed_with_first(0))
    state, outcome = program(state, 0, "D", 4)
    assert [s["result"] for s in outcome["steps"]] == ["crate"] * 4
    assert (outcome["damage"], outcome["at"]) == (4, "A1")
    view = rm.view(state, 0)
    assert view["robots"][0]["crates"] == ["B1"]


# Timeouts and resignations -----------------------------------------------------------------


def test_timeout_and_resign_in_play() -> None:
    state = ready(seed=seed_with_first(0))
    with pytest.raises(IllegalMove, match="^It is not your turn.$"):
        rm.apply(state, 1, {"timeout": True})
    after, outcome = rm.apply(state, 0, {"timeout": True})
    assert outcome == {} and rm.result(after) == Result("timeout", [2, 1])
    after, outcome = rm.apply(state, 1, {"resign": True})  # resigning needs no turn
    assert outcome == {} and rm.result(after) == Result("resign", [1, 2])
    assert rm.to_move(after) == []


def test_timeout_and_resign_during_set_up() -> None:
    state = started()
    state, _ = rm.apply(state, 0, {"warehouse": OPEN})
    with pytest.raises(IllegalMove, match="^It is not your turn.$"):
        rm.apply(state, 0, {"timeout": True})
    after, _ = rm.apply(state, 1, {"timeout": True})
    assert rm.result(after) == Result("timeout", [1, 2])
    after, _ = rm.apply(state, 0, {"resign": True})
    assert rm.result(after) == Result("resign", [2, 1])
    # Once over, both warehouses that exist are shown.
    assert rm.view(after, None)["warehouses"] == [OPEN, None]


# The record, the view, the notation --------------------------------------------------------


def test_initial_and_notation() -> None:
    state = ready((OPEN, BUMPY))
    assert rm.initial(state) == {"warehouses": [OPEN, BUMPY]}
    assert rm.notation({"program": "URRD", "runs": 3}, {}) == "URRD x3"
    assert rm.notation({"program": "R", "runs": 1}, {}) == "R x1"
    assert rm.notation({"warehouse": OPEN}, {}) == "set up"
    assert rm.notation({"timeout": True}, {}) == "ran out of time"
    assert rm.notation({"resign": True}, {}) == "resigned"


def test_views_per_role() -> None:
    state = ready((OPEN, BUMPY), seed_with_first(0))
    state, _ = program(state, 0, "DR", 2)  # bumps the crate on B1, then A2, B2, B3
    keys = {"viewer", "phase", "to_move", "first_seat", "set_up", "warehouses", "robots", "result"}
    robot_keys = {"at", "damage", "moves", "steps", "visited", "crates", "walls"}
    for viewer in (0, 1, None):
        view = rm.view(state, viewer)
        assert set(view) == keys and view["viewer"] == viewer
        assert all(set(robot) == robot_keys for robot in view["robots"])
        assert view["phase"] == "play" and view["to_move"] == [1]
        assert view["set_up"] == [True, True] and view["result"] is None
        runner = view["robots"][0]
        assert runner["visited"] == ["A1", "A2", "B2", "B3"]
        assert runner["crates"] == ["B1"] and runner["walls"] == []
        assert runner["damage"] == 1 and runner["at"] == "B3"
        assert runner["moves"][0]["program"] == "DR" and runner["moves"][0]["runs"] == 2
        assert len(runner["steps"]) == 4
    assert rm.view(state, 0)["warehouses"] == [OPEN, None]
    assert rm.view(state, 1)["warehouses"] == [None, BUMPY]
    assert rm.view(state, None)["warehouses"] == [None, None]
    state, _ = program(state, 1, "U")
    assert rm.view(state, None)["robots"][1]["walls"] == [{"at": "A1", "dir": "U"}]
    state, _ = rm.apply(state, 0, {"resign": True})
    for viewer in (0, 1, None):
        view = rm.view(state, viewer)
        assert view["warehouses"] == [OPEN, BUMPY]
        assert view["result"] == {"reason": "resign", "places": [2, 1]}


def test_apply_does_not_change_the_given_state() -> None:
    state = started()
    for move, seat in (({"warehouse": OPEN}, 0), ({"warehouse": BUMPY}, 1)):
        before = copy.deepcopy(state)
        state_after, _ = rm.apply(state, seat, move)
        assert state == before
        state = state_after
    moves: list[dict[str, Any]] = [{"program": "DRRU", "runs": 4}, {"timeout": True}]
    for play in [*moves, {"resign": True}]:
        before = copy.deepcopy(state)
        rm.apply(state, rm.first_seat(state), play)
        assert state == before
    before = copy.deepcopy(state)
    rm.view(state, 0)["robots"][0]["moves"].append("x")
    rm.initial(state)["warehouses"][0].append("x")
    assert state == before


# Properties -------------------------------------------------------------------------------

programs = st.tuples(
    st.text(alphabet="UDLR", min_size=1, max_size=4), st.integers(min_value=1, max_value=4)
)
games = st.tuples(
    st.binary(min_size=32, max_size=32),
    st.integers(min_value=0, max_value=10**6),
    st.lists(programs, min_size=1, max_size=60),
)


def play_out(seed: bytes, draw: int, moves: list[tuple[str, int]]) -> list[tuple[Any, Any, Any]]:
    """(move, state, outcome) for a set-up from `draw` and then the programs in turn."""
    rng = random.Random(draw)
    state = rm.start(seed, {}, 2)
    log = []
    for seat in (1, 0):
        move: Any = {"warehouse": rm.random_warehouse(rng)}
        state, outcome = rm.apply(state, seat, move)
        log.append((move, state, outcome))
    for text, runs in moves:
        if rm.result(state) is not None:
            break
        (seat,) = rm.to_move(state)
        move = {"program": text, "runs": runs}
        state, outcome = rm.apply(state, seat, move)
        # As stored and read back (Rules.APPLY_GIVES_JSON): no tuple, no key but a string.
        assert json.loads(json.dumps([state, outcome])) == [state, outcome]
        log.append((move, state, outcome))
    return log


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(games)
def test_programs_follow_the_rules(game: tuple[bytes, int, list[tuple[str, int]]]) -> None:
    seed, draw, moves = game
    log = play_out(seed, draw, moves)
    state = log[1][1]
    warehouses = state["warehouses"]
    damage = [0, 0]
    at = ["A1", "A1"]
    for move, after, outcome in log[2:]:
        seat = next(
            s
            for s in (0, 1)
            if len(after["robots"][s]["moves"]) != len(state["robots"][s]["moves"])
        )
        rows = warehouses[1 - seat]
        planned = list(move["program"]) * move["runs"]
        steps = outcome["steps"]
        assert [s["dir"] for s in steps] == planned[: len(steps)]
        for step in steps:
            assert step["from"] == at[seat]
            to, told = rm.step(rows, at[seat], step["dir"])
            assert (step["to"], step["result"]) == (to, told)
            if told == "clear":
                assert to is not None
                at[seat] = to
                r, c = rm.parse_cell(to)
                assert rows[r][c] == "." and 0 <= r < 10 and 0 <= c < 10
            else:
                damage[seat] += 1
        assert (outcome["at"], outcome["damage"]) == (at[seat], damage[seat])
        assert damage[seat] <= rm.MAX_DAMAGE
        ended = at[seat] == rm.EXIT or damage[seat] == rm.MAX_DAMAGE
        # The game ends exactly when the rules say, and stops the program right there.
        assert (rm.result(after) is not None) == ended
        if ended:
            result = rm.result(after)
            assert result is not None
            winner = seat if at[seat] == rm.EXIT else 1 - seat
            assert result.reason == ("exit" if at[seat] == rm.EXIT else "damage")
            assert result.places[winner] == 1 and result.places[1 - winner] == 2
        else:
            assert len(steps) == len(planned)
            assert rm.to_move(after) == [1 - seat]
        assert json.loads(json.dumps(after)) == after
        state = after


@settings(max_examples=30, deadline=None)
@given(games)
def test_replaying_the_moves_gives_the_same_game(
    game: tuple[bytes, int, list[tuple[str, int]]],
) -> None:
    seed, draw, moves = game
    log = play_out(seed, draw, moves)
    state = rm.start(seed, {}, 2)
    order = [1, 0]
    for index, (move, expected_state, expected_outcome) in enumerate(log):
        seat = order[index] if index < 2 else rm.to_move(state)[0]
        state, outcome = rm.apply(json.loads(json.dumps(state)), seat, move)
        assert state == expected_state and outcome == expected_outcome


def strings_in(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings_in(item)


def recognisable(rng: random.Random, mark: str) -> list[str]:
    """A legal warehouse whose every row holds `mark` (a pattern nobody else's rows have)."""
    while True:
        rows = []
        for _ in range(10):
            start = rng.randrange(0, 10 - len(mark) + 1)
            row = "." * start + mark + "." * (10 - len(mark) - start)
            rows.append(row)
        rows[0] = "." + rows[0][1:] if rows[0][0] == "X" else rows[0]
        rows[9] = rows[9][:9] + "." if rows[9][9] == "X" else rows[9]
        if rm.is_legal_warehouse(rows):
            return rows


@settings(max_examples=40, deadline=None)
@given(
    st.binary(min_size=32, max_size=32),
    st.integers(min_value=0, max_value=10**6),
    st.lists(programs, max_size=40),
)
def test_views_never_leak_a_secret(seed: bytes, draw: int, moves: list[tuple[str, int]]) -> None:
    rng = random.Random(draw)
    # Two crates a row, spaced apart by 2 for seat 0 and by 3 for seat 1: the rows differ.
    warehouses = [recognisable(rng, "X.X"), recognisable(rng, "X..X")]
    state = rm.start(seed, {}, 2)
    history = [state]
    for seat in (0, 1):
        state, _ = rm.apply(state, seat, {"warehouse": warehouses[seat]})
        history.append(state)
    for text, runs in moves:
        if rm.result(state) is not None:
            break
        state, _ = rm.apply(state, rm.to_move(state)[0], {"program": text, "runs": runs})
        history.append(state)
    for seen in history:
        if rm.result(seen) is not None:
            continue
        for viewer in (0, 1, None):
            view = rm.view(seen, viewer)
            text = json.dumps(view)
            assert seed.hex() not in text and "seed" not in text and "position" not in text
            own = set(warehouses[viewer]) if viewer is not None else set()
            secret = {row for s in (0, 1) if s != viewer for row in warehouses[s]}
            leaked = [s for s in strings_in(view) if s in secret and s not in own]
            assert leaked == []
            # Only crates that a robot found are named, and only by its runs.
            for runner in (0, 1):
                robot = view["robots"][runner]
                hits = {s["to"] for s in robot["steps"] if s["result"] == "crate"}
                assert set(robot["crates"]) == hits
