from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from games.engines import ENGINES, IllegalMove, Result, cornmaze
from games.engines.randomstream import RandomStream

SEED = bytes(range(32))

# An 6x6 board with no way out on its own: every arrow points up. Tests draw on it.
UP6 = ["^^^^^^"] * 6


def board(
    arrows: list[str],
    markers: list[list[int] | None],
    to_move: int = 0,
    seed: bytes = SEED,
) -> dict[str, Any]:
    """A game in progress with the given arrows and markers (the stream as from the start)."""
    state = cornmaze.start(seed, {"size": len(arrows)}, len(markers))
    state["arrows"] = list(arrows)
    state["markers"] = copy.deepcopy(markers)
    state["to_move"] = to_move
    state["dropped"] = [seat for seat, marker in enumerate(markers) if marker is None]
    return state


def put(arrows: list[str], row: int, col: int, arrow: str) -> list[str]:
    rows = list(arrows)
    rows[row] = rows[row][:col] + arrow + rows[row][col + 1 :]
    return rows


def next_draws(state: dict[str, Any], count: int) -> list[str]:
    stream = RandomStream(bytes.fromhex(state["seed"]), state["rng"])
    return [cornmaze.ARROWS[stream.below(4)] for _ in range(count)]


# --- options and start -------------------------------------------------------------------


def test_the_engine_is_registered() -> None:
    assert ENGINES["cornmaze"] is cornmaze.ENGINE and ENGINES["cornmaze"].SLUG == "cornmaze"
    assert (cornmaze.MIN_SEATS, cornmaze.MAX_SEATS) == (2, 6)
    assert cornmaze.default_options() == {"size": 8}


@pytest.mark.parametrize("size", [6, 8, 12, "7", " 10 "])
def test_valid_sizes(size: Any) -> None:
    assert cornmaze.validate_options({"size": size}, 2) == {"size": int(size)}


def test_options_keep_only_the_size_and_default_it() -> None:
    assert cornmaze.validate_options({"clock": "P3D"}, 3) == {"size": 8}


@pytest.mark.parametrize("size", [5, 13, 0, -8, "x", "8.0", "", True, 8.0, None, "٨"])
def test_invalid_sizes(size: Any) -> None:
    with pytest.raises(ValueError, match="The board size must be from 6 to 12."):
        cornmaze.validate_options({"size": size}, 2)


@pytest.mark.parametrize("seats", [0, 1, 7, True])
def test_invalid_seats(seats: Any) -> None:
    with pytest.raises(ValueError, match="2 to 6 players"):
        cornmaze.validate_options({"size": 8}, seats)


def test_start_draws_in_the_documented_order() -> None:
    state = cornmaze.start(SEED, {"size": 7}, 3)
    stream = RandomStream(SEED)
    arrows = ["".join("<>^v"[stream.below(4)] for _ in range(7)) for _ in range(7)]
    free = list(range(7))
    rows = [free.pop(stream.below(len(free))) for _ in range(3)]
    first = stream.below(3)
    assert state["arrows"] == arrows
    assert state["markers"] == [[row, 0] for row in rows]
    assert len(set(rows)) == 3
    assert cornmaze.first_seat(state) == first
    assert cornmaze.to_move(state) == [first]
    assert state["rng"] == stream.position
    assert cornmaze.initial(state) == {"arrows": arrows, "markers": [[r, 0] for r in rows]}
    assert cornmaze.result(state) is None


def test_start_is_a_pure_function_of_the_seed() -> None:
    assert cornmaze.start(SEED, {"size": 8}, 4) == cornmaze.start(SEED, {"size": 8}, 4)
    assert cornmaze.start(SEED, {"size": 8}, 4) != cornmaze.start(b"other", {"size": 8}, 4)


def test_six_seats_on_the_smallest_board_take_every_row() -> None:
    state = cornmaze.start(SEED, {"size": 6}, 6)
    assert sorted(marker[0] for marker in state["markers"]) == list(range(6))


# --- shifts ------------------------------------------------------------------------------


def test_a_shift_moves_the_column_and_its_markers_down() -> None:
    arrows = ["<<<<<<", "<<v<<<", "<<><<<", "<<^<<<", "<<<<<<", "<<><<<"]
    state = board(arrows, [[1, 0], [2, 2]])
    drawn = next_draws(state, 2)
    new, outcome = cornmaze.apply(state, 0, {"shifts": [2, 5]})
    assert outcome["drawn"] == drawn
    column_c = [row[2] for row in new["arrows"]]
    assert column_c == [drawn[0], "<", "v", ">", "^", "<"]  # the bottom ">" fell off
    assert new["arrows"][0][5] == drawn[1]
    assert new["markers"][1] == [3, 2]  # seat 1 rode down with column c
    assert new["rng"] == state["rng"] + 8


def test_the_same_column_twice_shifts_it_two_rows() -> None:
    arrows = put(put(UP6, 0, 3, "v"), 1, 3, ">")
    state = board(arrows, [[0, 0], [1, 3]])
    drawn = next_draws(state, 2)
    new, outcome = cornmaze.apply(state, 0, {"shifts": [3, 3]})
    assert [row[3] for row in new["arrows"]][:4] == [drawn[1], drawn[0], "v", ">"]
    assert new["markers"][1] == [3, 3]


def test_a_column_with_a_marker_in_its_bottom_row_cannot_be_shifted() -> None:
    state = board(UP6, [[0, 0], [5, 2]])
    with pytest.raises(IllegalMove, match="Column c cannot be shifted: a marker stands in"):
        cornmaze.apply(state, 0, {"shifts": [2, 0]})
    with pytest.raises(IllegalMove, match="Column c cannot be shifted second"):
        cornmaze.apply(state, 0, {"shifts": [0, 2]})
    assert cornmaze.view(state, 0)["blocked"] == [2]


def test_the_second_shift_is_judged_after_the_first() -> None:
    state = board(UP6, [[0, 0], [4, 2]])
    assert [2, 2] not in cornmaze.legal_moves(state)
    assert [2, 3] in cornmaze.legal_moves(state)
    with pytest.raises(IllegalMove, match="after the first shift, a marker stands in its bottom"):
        cornmaze.apply(state, 0, {"shifts": [2, 2]})
    new, _ = cornmaze.apply(state, 0, {"shifts": [2, 3]})
    assert new["markers"][1] == [5, 2]
    view = cornmaze.view(state, 0)
    assert view["blocked"] == []
    assert view["blocked_after"]["2"] == [2]
    assert view["blocked_after"]["3"] == []


def test_the_last_column_is_never_blocked() -> None:
    markers: list[list[int] | None] = [[5, c] for c in range(6)]
    assert cornmaze.blocked_columns(markers, 6) == [0, 1, 2, 3, 4]
    assert cornmaze.blocked_after(markers, 6) == {"5": [0, 1, 2, 3, 4]}


def test_only_the_last_column_is_left_when_all_others_are_blocked() -> None:
    markers: list[list[int] | None] = [[5, c] for c in range(5)]
    markers.append([0, 0])
    state = board(UP6, markers, to_move=5)
    assert cornmaze.legal_moves(state) == [[5, 5]]
    new, _ = cornmaze.apply(state, 5, {"shifts": [5, 5]})
    assert new["markers"][:5] == markers[:5]


# --- the walk ----------------------------------------------------------------------------


def test_the_marker_steps_right_then_follows_arrows() -> None:
    # From a2: step to b2 (">"), c2 ("v"), c3 ("<"), b3 ("<") then a3 points off the left.
    arrows = ["^^^^^^", "^>v^^^", "<<<^^^", "^^^^^^", "^^^^^^", "^^^^^^"]
    state = board(arrows, [[1, 0], [4, 0]])
    new, outcome = cornmaze.apply(state, 0, {"shifts": [5, 5]})
    assert outcome["path"] == [[1, 0], [1, 1], [1, 2], [2, 2], [2, 1], [2, 0]]
    assert outcome["end"] == [2, 0]
    assert new["markers"][0] == [2, 0]
    assert new["last"] == {"seat": 0, "shifts": [5, 5], "path": outcome["path"]}
    assert new["to_move"] == 1
    assert new["turn"] == 1


def test_the_path_begins_where_the_shifts_left_the_marker() -> None:
    # The marker at a1 rides down to a3 when column a is shifted twice.
    arrows = ["<<<<<<", "<<<<<<", "<<<<<<", "<<<<<<", "<<<<<<", "<<<<<<"]
    state = board(arrows, [[0, 0], [4, 1]])
    _, outcome = cornmaze.apply(state, 0, {"shifts": [0, 0]})
    assert outcome["path"] == [[2, 0], [2, 1]]


def test_up_and_down_wrap_around() -> None:
    # b1 "^" goes to b6 (wrap), b6 "v" would go back to b1: visited, so stop at b6.
    arrows = put(put(UP6, 0, 1, "^"), 5, 1, "v")
    state = board(arrows, [[0, 0], [3, 0]])
    _, outcome = cornmaze.apply(state, 0, {"shifts": [4, 4]})
    assert outcome["path"] == [[0, 0], [0, 1], [5, 1]]


def test_down_wraps_from_the_bottom_to_the_top() -> None:
    arrows = ["<vvvvv"] * 6
    arrows = put(arrows, 0, 1, "<")
    state = board(arrows, [[4, 0], [2, 0]])
    _, outcome = cornmaze.apply(state, 0, {"shifts": [3, 3]})
    # b5 v b6 v b1 "<" to a1, "<" off the left edge.
    assert outcome["path"] == [[4, 0], [4, 1], [5, 1], [0, 1], [0, 0]]


def test_stop_at_an_arrow_pointing_off_the_left_edge() -> None:
    # a1 steps to b1 "v", b2 "<", a2 "<" points off the board: stop at a2.
    arrows = put(put(put(UP6, 0, 1, "v"), 1, 1, "<"), 1, 0, "<")
    state = board(arrows, [[0, 0], [4, 0]])
    _, outcome = cornmaze.apply(state, 0, {"shifts": [5, 5]})
    assert outcome["path"] == [[0, 0], [0, 1], [1, 1], [1, 0]]


def test_stop_at_an_arrow_pointing_off_the_right_edge() -> None:
    # e1 steps to f1 ">": off the right edge, so the marker stays in the last column.
    arrows = put(UP6, 0, 5, ">")
    state = board(arrows, [[0, 4], [4, 0]])
    new, outcome = cornmaze.apply(state, 0, {"shifts": [1, 1]})
    assert outcome["path"] == [[0, 4], [0, 5]]
    assert new["winner"] == 0


def test_the_cell_where_the_turn_began_counts_as_visited() -> None:
    arrows = put(UP6, 2, 3, "<")
    state = board(arrows, [[0, 0], [2, 2]], to_move=1)
    _, outcome = cornmaze.apply(state, 1, {"shifts": [5, 5]})
    assert outcome["path"] == [[2, 2], [2, 3]]


def test_stop_at_a_cell_visited_this_turn() -> None:
    # b1 ">" c1 "v" c2 "<" b2 "^" points back at b1: visited, stop at b2.
    arrows = ["^>v^^^", "^^^^^^", "^^^^^^", "^^^^^^", "^^^^^^", "^^^^^^"]
    arrows = put(put(arrows, 1, 2, "<"), 1, 1, "^")
    state = board(arrows, [[0, 0], [4, 0]])
    _, outcome = cornmaze.apply(state, 0, {"shifts": [5, 5]})
    assert outcome["path"] == [[0, 0], [0, 1], [0, 2], [1, 2], [1, 1]]


def test_a_column_of_up_arrows_loops_once_and_stops() -> None:
    state = board(UP6, [[2, 0], [4, 0]])
    _, outcome = cornmaze.apply(state, 0, {"shifts": [5, 5]})
    assert outcome["path"] == [[2, 0], [2, 1], [1, 1], [0, 1], [5, 1], [4, 1], [3, 1]]


def test_reaching_the_last_column_wins() -> None:
    arrows = put(put(UP6, 1, 4, ">"), 1, 5, ">")
    state = board(arrows, [[4, 0], [1, 3], [0, 0]], to_move=1)
    new, outcome = cornmaze.apply(state, 1, {"shifts": [2, 2]})
    assert outcome["end"] == [1, 5]
    assert new["winner"] == 1
    assert cornmaze.to_move(new) == []
    assert cornmaze.result(new) == Result(reason="exit", places=[2, 1, 2])
    assert cornmaze.view(new, None)["winner"] == 1
    with pytest.raises(IllegalMove, match="The game is over."):
        cornmaze.apply(new, 2, {"shifts": [0, 0]})


def test_a_marker_can_pass_through_the_last_column_and_leave_it() -> None:
    # e2 steps to f2 "^", f1 "<", e1 "<", d1 "v", d2 ">" points at e2 where it began: stop.
    arrows = put(put(put(UP6, 1, 5, "^"), 0, 5, "<"), 0, 4, "<")
    arrows = put(put(arrows, 0, 3, "v"), 1, 3, ">")
    state = board(arrows, [[1, 4], [4, 0]])
    new, outcome = cornmaze.apply(state, 0, {"shifts": [2, 2]})
    assert outcome["path"] == [[1, 4], [1, 5], [0, 5], [0, 4], [0, 3], [1, 3]]
    assert new["winner"] is None
    assert new["to_move"] == 1


def test_a_left_arrow_in_the_last_column_after_the_step_right_wins() -> None:
    # The step from e to f; f's "<" points back at the start cell: stop in the last column.
    arrows = put(UP6, 3, 5, "<")
    state = board(arrows, [[3, 4], [0, 0]])
    new, outcome = cornmaze.apply(state, 0, {"shifts": [0, 1]})
    assert outcome["end"] == [3, 5]
    assert new["reason"] == "exit"


# --- turns, timeouts and resignations ----------------------------------------------------


def test_turns_pass_in_seat_order_skipping_dropped_seats() -> None:
    state = board(UP6, [[0, 0], None, [2, 0], [3, 0]], to_move=3)
    new, _ = cornmaze.apply(state, 3, {"shifts": [5, 5]})
    assert new["to_move"] == 0
    new, _ = cornmaze.apply(new, 0, {"shifts": [5, 5]})
    assert new["to_move"] == 2


@pytest.mark.parametrize("kind", ["timeout", "resign"])
def test_two_seats_a_drop_ends_the_game(kind: str) -> None:
    state = board(UP6, [[0, 0], [1, 0]], to_move=1)
    new, outcome = cornmaze.apply(state, 1, {kind: True})
    assert outcome == {"dropped": 1}
    assert new["markers"] == [[0, 0], None]
    assert cornmaze.result(new) == Result(reason=kind, places=[1, 2])
    assert cornmaze.to_move(new) == []


def test_three_seats_a_timeout_drops_the_seat_and_play_goes_on() -> None:
    state = board(UP6, [[0, 0], [1, 0], [2, 0]], to_move=1)
    new, outcome = cornmaze.apply(state, 1, {"timeout": True})
    assert outcome == {"dropped": 1}
    assert new["markers"] == [[0, 0], None, [2, 0]]
    assert new["dropped"] == [1]
    assert new["to_move"] == 2
    assert cornmaze.result(new) is None
    assert cornmaze.view(new, 0)["dropped"] == [1]
    with pytest.raises(IllegalMove, match="no longer in this game"):
        cornmaze.apply(new, 1, {"resign": True})
    new, _ = cornmaze.apply(new, 2, {"shifts": [5, 5]})
    assert new["to_move"] == 0
    new, _ = cornmaze.apply(new, 0, {"timeout": True})
    assert cornmaze.result(new) == Result(reason="timeout", places=[2, 2, 1])


def test_three_seats_a_resignation_out_of_turn_keeps_the_turn() -> None:
    state = board(UP6, [[0, 0], [1, 0], [2, 0]], to_move=1)
    new, _ = cornmaze.apply(state, 0, {"resign": True})
    assert new["to_move"] == 1
    assert new["markers"][0] is None
    new, _ = cornmaze.apply(new, 2, {"resign": True})
    assert cornmaze.result(new) == Result(reason="resign", places=[2, 1, 2])


def test_a_timeout_comes_only_for_the_seat_to_move() -> None:
    state = board(UP6, [[0, 0], [1, 0], [2, 0]], to_move=1)
    with pytest.raises(IllegalMove, match="It is not your turn."):
        cornmaze.apply(state, 0, {"timeout": True})


def test_a_dropped_marker_no_longer_blocks_a_column() -> None:
    state = board(UP6, [[0, 0], [5, 2], [1, 0]], to_move=0)
    assert cornmaze.view(state, 0)["blocked"] == [2]
    new, _ = cornmaze.apply(state, 1, {"resign": True})
    assert cornmaze.view(new, 0)["blocked"] == []


# --- illegal moves -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("move", "message"),
    [
        ({"shifts": [0]}, "A move is two columns, such as c e."),
        ({"shifts": [0, 1, 2]}, "A move is two columns"),
        ({"shifts": "a b"}, "A move is two columns"),
        ({"shifts": [0, "b"]}, "A move is two columns"),
        ({"shifts": [0, True]}, "A move is two columns"),
        ({"shifts": [0, 1], "extra": 1}, "A move is two columns"),
        ({}, "A move is two columns"),
        ({"timeout": False}, "A move is two columns"),
        ({"resign": 1}, "A move is two columns"),
        ({"shifts": [0, 6]}, "The board has no column g: its columns are a to f."),
        ({"shifts": [-1, 0]}, "The board has no column -1: its columns are a to f."),
    ],
)
def test_malformed_moves(move: dict[str, Any], message: str) -> None:
    state = board(UP6, [[0, 0], [1, 0]])
    with pytest.raises(IllegalMove, match=message):
        cornmaze.apply(state, 0, move)


def test_not_your_turn_and_no_such_seat() -> None:
    state = board(UP6, [[0, 0], [1, 0]])
    with pytest.raises(IllegalMove, match="It is not your turn."):
        cornmaze.apply(state, 1, {"shifts": [0, 0]})
    with pytest.raises(IllegalMove, match="no such seat"):
        cornmaze.apply(state, 2, {"shifts": [0, 0]})
    with pytest.raises(IllegalMove, match="A move is two columns"):
        cornmaze.apply(state, 0, "a b")  # type: ignore[arg-type]


def test_apply_does_not_change_its_input() -> None:
    state = cornmaze.start(SEED, {"size": 8}, 3)
    before = copy.deepcopy(state)
    seat = state["to_move"]
    cornmaze.apply(state, seat, {"shifts": [1, 2]})
    cornmaze.apply(state, seat, {"timeout": True})
    cornmaze.apply(state, (seat + 1) % 3, {"resign": True})
    assert state == before


# --- notation and parsing ----------------------------------------------------------------


def test_notation() -> None:
    assert cornmaze.notation({"shifts": [2, 4]}, {}) == "c e"
    assert cornmaze.notation({"timeout": True}, {"dropped": 0}) == "ran out of time"
    assert cornmaze.notation({"resign": True}, {"dropped": 0}) == "resigned"


@pytest.mark.parametrize("text", ["c e", "C E", "c,e", "ce", " c  e ", "c-e"])
def test_parse_move_text(text: str) -> None:
    assert cornmaze.parse_move_text(text, 8) == {"shifts": [2, 4]}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("c", "A move is two columns"),
        ("c e f", "A move is two columns"),
        ("", "A move is two columns"),
        ("c 4", "4 is not a column"),
        ("c i", "The board has no column i: its columns are a to h."),
    ],
)
def test_parse_move_text_refuses(text: str, message: str) -> None:
    with pytest.raises(IllegalMove, match=message):
        cornmaze.parse_move_text(text, 8)


def test_column_letters() -> None:
    assert cornmaze.column_letter(0) == "a"
    assert cornmaze.column_letter(11) == "l"
    assert cornmaze.parse_column("L") == 11


# --- the view and the bots' simulation ---------------------------------------------------


def test_the_view_shows_everything_but_the_seed_and_stream() -> None:
    state = cornmaze.start(SEED, {"size": 8}, 2)
    view = cornmaze.view(state, None)
    assert set(view) == {
        "size",
        "seats",
        "arrows",
        "markers",
        "first_seat",
        "to_move",
        "dropped",
        "winner",
        "reason",
        "blocked",
        "blocked_after",
        "last",
        "turn",
    }
    assert view["arrows"] == state["arrows"]
    assert view["last"] is None
    assert view["turn"] == 0
    assert set(view["blocked_after"]) == {str(c) for c in range(8) if c not in view["blocked"]}
    assert SEED.hex() not in json.dumps(view)
    assert view == cornmaze.view(state, 0)


def test_simulate_agrees_with_apply() -> None:
    for index in range(30):
        seed = f"simulate-{index}".encode()
        state = cornmaze.start(seed, {"size": 8}, 3)
        seat = state["to_move"]
        view = cornmaze.view(state, seat)
        for shifts in cornmaze.legal_moves(view)[::7]:
            ends = cornmaze.simulate(view, seat, shifts)
            assert abs(sum(prob for prob, _ in ends) - 1.0) < 1e-9
            _, outcome = cornmaze.apply(state, seat, {"shifts": shifts})
            assert outcome["end"] in [end for _, end in ends]


# --- properties of whole games -----------------------------------------------------------


def check_position(state: dict[str, Any]) -> None:
    size = state["size"]
    for marker in state["markers"]:
        if marker is not None:
            assert 0 <= marker[0] < size and 0 <= marker[1] < size
    assert json.loads(json.dumps(state)) == state
    view = cornmaze.view(state, state["to_move"])
    assert "seed" not in view and "rng" not in view
    assert state["seed"] not in json.dumps(view)
    assert json.loads(json.dumps(view)) == view
    legal = cornmaze.legal_moves(view)
    if state["to_move"] is None:
        assert legal == []
        return
    assert legal
    seat = state["to_move"]
    for first in view["blocked"]:
        with pytest.raises(IllegalMove, match="cannot be shifted"):
            cornmaze.apply(state, seat, {"shifts": [first, size - 1]})
    for first, seconds in view["blocked_after"].items():
        for second in seconds:
            with pytest.raises(IllegalMove, match="cannot be shifted second"):
                cornmaze.apply(state, seat, {"shifts": [int(first), second]})
    allowed = sum(size - len(seconds) for seconds in view["blocked_after"].values())
    assert len(legal) == allowed


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.binary(min_size=32, max_size=32),
    size=st.integers(6, 12),
    seats=st.integers(2, 6),
    data=st.data(),
)
def test_random_games_keep_the_rules(seed: bytes, size: int, seats: int, data: Any) -> None:
    state = cornmaze.start(seed, {"size": size}, seats)
    played: list[tuple[int, dict[str, Any], dict[str, Any], dict[str, Any]]] = []
    check_position(state)
    for _ in range(40):
        if state["to_move"] is None:
            break
        seat = state["to_move"]
        roll = data.draw(st.integers(0, 29), label="roll")
        if roll == 0:
            move: dict[str, Any] = {"timeout": True}
        elif roll == 1:
            live = [s for s in range(seats) if s not in state["dropped"]]
            seat = data.draw(st.sampled_from(live), label="resigner")
            move = {"resign": True}
        else:
            move = {"shifts": data.draw(st.sampled_from(cornmaze.legal_moves(state)))}
        before = copy.deepcopy(state)
        new, outcome = cornmaze.apply(state, seat, move)
        assert state == before
        # As stored and read back (Rules.APPLY_GIVES_JSON): no tuple, no key but a string.
        assert json.loads(json.dumps([new, outcome])) == [new, outcome]
        if "shifts" in move:
            assert outcome["end"] == outcome["path"][-1]
            assert len(outcome["drawn"]) == 2
            assert new["markers"][seat] == outcome["end"]
        played.append((seat, move, outcome, new))
        state = new
        check_position(state)

    result = cornmaze.result(state)
    if result is not None:
        assert result.places.count(1) == 1
        assert len(result.places) == seats
        assert set(result.places) == {1, 2}
        winner = result.places.index(1)
        assert winner not in state["dropped"]
        if result.reason == "exit":
            assert state["markers"][winner][1] == size - 1
    else:
        assert all(m is None or m[1] < size - 1 for m in state["markers"])

    replay = cornmaze.start(seed, {"size": size}, seats)
    for seat, move, outcome, expected in played:
        replay, again = cornmaze.apply(replay, seat, move)
        assert again == outcome
        assert replay == expected
