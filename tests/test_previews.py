"""Move previews: what a chosen move would do, drawn by the server from what the viewer may see
and never from the hidden state. A Corn maze preview does not know the arrows the shifts will
draw (they come from the game's random stream when the move is played); a Robot Maze Race plan
knows of the other warehouse only what the robot found."""

from __future__ import annotations

import copy
import hashlib
import re

import pytest
from django.test import Client
from django.urls import reverse
from hypothesis import given, settings
from hypothesis import strategies as st

from games.engines import cornmaze, robotmaze
from games.models import Game
from games.play import core
from games.ui.cornmaze import preview
from games.ui.robotmaze import plan_lines, program_plan
from tests.conftest import seat_user, to_move
from tests.test_robotmaze_site import WAREHOUSES, play, set_up

HTMX = {"HTTP_HX_REQUEST": "true"}
CSRF = re.compile(r'(name="csrfmiddlewaretoken" value=|"X-CSRFToken": )"[^"]*"')


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def board(body: str) -> str:
    """The board and the move form of a game page (its seed's hash left out), CSRF tokens out."""
    part = body.split('id="board"', 1)[1].split('<section class="fairness">', 1)[0]
    return CSRF.sub("CSRF", part)


def draw_differently(game: Game, shifts: list[int]) -> bytes:
    """Another seed for this game whose next draws give these shifts other new arrows."""
    state = game.state
    drawn = cornmaze.apply(state, to_move(game), {"shifts": shifts})[1]["drawn"]
    for n in range(100):
        seed = hashlib.sha256(f"other {n}".encode()).digest()
        other = {**state, "seed": seed.hex()}
        if cornmaze.apply(other, to_move(game), {"shifts": shifts})[1]["drawn"] != drawn:
            return seed
    raise AssertionError("no other seed draws differently")


def reseed(game: Game, seed: bytes) -> None:
    state = {**game.state, "seed": seed.hex()}
    Game.objects.filter(pk=game.pk).update(
        seed=seed, seed_sha256=hashlib.sha256(seed).hexdigest(), state=state
    )
    game.refresh_from_db()


# --- Corn maze ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_corn_maze_preview_does_not_depend_on_the_arrows_that_will_drop_in(make_cornmaze):
    game = make_cornmaze(size=6)
    seat = to_move(game)
    player = client_for(seat_user(game, seat))
    shifts = cornmaze.legal_moves(game.state)[0]
    letters = [cornmaze.column_letter(c) for c in shifts]
    response = player.post(
        reverse("game_draft", args=[game.pk]), {"first": letters[0], "second": letters[1]}, **HTMX
    )
    assert response.status_code == 200
    before = board(response.content.decode())
    assert f"Preview of {letters[0]} then {letters[1]}" in before
    assert 'id="preview-path"' in before
    # Each shifted column's new top arrow is not known: drawn as ?, said as not known.
    new_cells = 2  # two shifts, each with its own new arrow (in one column or two)
    assert before.count('class="cell new"') + before.count('class="cell on-path new"') == new_cells
    assert before.count("a new arrow, not known yet") == new_cells

    # The same game with another seed, whose shifts would draw other arrows: the same preview.
    reseed(game, draw_differently(game, shifts))
    after = board(player.get(reverse("game", args=[game.pk]), **HTMX).content.decode())
    assert after == before

    # Nobody else sees it, nor makes one: a spectator, the player who is not to move.
    spectator = Client()
    refused = spectator.post(reverse("game_draft", args=[game.pk]), {"first": "a"}, **HTMX)
    assert refused.status_code == 409 and "Preview of" not in refused.content.decode()
    waiting = client_for(seat_user(game, 1 - seat))
    waiting.post(reverse("game_draft", args=[game.pk]), {"first": "a", "second": "a"})
    for other in (spectator, waiting):
        assert "Preview of" not in other.get(reverse("game", args=[game.pk])).content.decode()


@pytest.mark.django_db
def test_the_corn_maze_preview_without_javascript_and_for_this_turn_only(make_cornmaze):
    game = make_cornmaze(size=6)
    seat = to_move(game)
    player = client_for(seat_user(game, seat))
    url = reverse("game_draft", args=[game.pk])
    first, second = (cornmaze.column_letter(c) for c in cornmaze.legal_moves(game.state)[-1])

    # One shift chosen: kept, nothing to preview yet, no error.
    response = player.post(url, {"first": first})
    assert response.status_code == 302
    page = player.get(response["Location"]).content.decode()
    assert f'id="first-{first}" value="{first}" checked' in page
    assert "Preview of" not in page and 'role="alert"' not in page

    response = player.post(url, {"first": first, "second": second})
    page = player.get(response["Location"]).content.decode()
    assert f'id="second-{second}" value="{second}" checked' in page
    assert f"Preview of {first} then {second}" in page

    # A column off the board is a sentence, and changes nothing.
    refused = player.post(url, {"first": "z", "second": second}, **HTMX)
    assert refused.status_code == 409 and "for the first shift" in refused.content.decode()

    # Once the turn is played, the old choice is gone; the other player's turn shows none.
    game.refresh_from_db()
    core.move_submit(
        game_id=game.pk,
        user=seat_user(game, seat),
        number=game.ply,
        move={"shifts": cornmaze.legal_moves(game.state)[-1]},
    )
    game.refresh_from_db()
    if game.status == Game.Status.ACTIVE:
        page = player.get(reverse("game", args=[game.pk])).content.decode()
        assert "Preview of" not in page


@settings(max_examples=60, deadline=None)
@given(seed=st.binary(min_size=32, max_size=32), size=st.integers(6, 12), pick=st.integers(0))
def test_a_corn_maze_preview_is_the_real_walk_up_to_the_first_new_arrow(seed, size, pick):
    state = cornmaze.start(seed, {"size": size}, 3)
    (seat,) = cornmaze.to_move(state)
    moves = cornmaze.legal_moves(state)
    shifts = moves[pick % len(moves)]
    shown = preview(cornmaze.view(state, seat), seat, shifts)
    real = cornmaze.apply(state, seat, {"shifts": shifts})[1]
    assert real["path"][: len(shown.path)] == shown.path
    end = shown.path[-1]
    if shown.arrows[end[0]][end[1]] != "?":
        assert shown.path == real["path"]
    # Where it may end, each new arrow taken as equally likely: the real end is among them.
    assert any(cell == real["end"] for _, cell in shown.ends)
    assert abs(sum(p for p, _ in shown.ends) - 1) < 1e-9


# --- Robot Maze Race ----------------------------------------------------------------------


@pytest.fixture
def game(make_user) -> Game:
    game = core.game_create(
        kind="robotmaze",
        creator=make_user(),
        options={},
        clock_choice="P3D",
        seats=[core.SeatPlan(), core.SeatPlan()],
    )
    core.game_join(game_id=game.pk, user=make_user())
    game.refresh_from_db()
    return game


@pytest.mark.django_db
def test_the_robot_plan_knows_the_other_warehouse_only_as_far_as_the_robot_found_it(game):
    set_up(game)
    play(game, "R", 1)
    game.refresh_from_db()
    (runner,) = robotmaze.to_move(game.state)
    player = client_for(game.seats.get(index=runner).user)
    response = player.post(
        reverse("game_draft", args=[game.pk]),
        {"command_1": "R", "command_2": "D", "runs": "4"},
        **HTMX,
    )
    assert response.status_code == 200
    before = board(response.content.decode())
    assert "not known yet" in before and 'class="plan-lines"' in before

    # Another warehouse for the other seat, the same where the robot has been: the same plan.
    game.refresh_from_db()
    robot = robotmaze.view(game.state, runner)["robots"][runner]
    known = set(robot["visited"]) | set(robot["crates"])
    state = copy.deepcopy(game.state)
    rows = [list(row) for row in state["warehouses"][1 - runner]]
    moved = 0
    for r in range(robotmaze.SIZE):
        for c in range(robotmaze.SIZE):
            cell = robotmaze.cell_name(r, c)
            if cell not in known and cell not in {robotmaze.ENTRANCE, robotmaze.EXIT}:
                rows[r][c] = "." if rows[r][c] == "X" else "X"
                moved += 1
    assert moved > 50
    state["warehouses"][1 - runner] = ["".join(row) for row in rows]
    Game.objects.filter(pk=game.pk).update(state=state)
    after = board(player.get(reverse("game", args=[game.pk]), **HTMX).content.decode())
    assert after == before

    # The other player and a spectator see no plan, and cannot make one.
    for other in (Client(), client_for(game.seats.get(index=1 - runner).user)):
        page = other.get(reverse("game", args=[game.pk])).content.decode()
        assert "plan-lines" not in page and 'class="plan' not in page


@settings(max_examples=60, deadline=None)
@given(
    warehouse=st.sampled_from(WAREHOUSES),
    history=st.lists(
        st.tuples(st.text("UDLR", min_size=1, max_size=4), st.integers(1, 4)), max_size=4
    ),
    program=st.text("UDLR", min_size=1, max_size=4),
    runs=st.integers(1, 4),
)
def test_a_robot_plan_is_the_real_run_up_to_the_first_cell_not_known(
    warehouse, history, program, runs
):
    state = robotmaze.start(hashlib.sha256(b"plan").digest(), {})
    state = robotmaze.apply(state, 0, {"warehouse": WAREHOUSES[1]})[0]
    state = robotmaze.apply(state, 1, {"warehouse": warehouse})[0]
    seat = state["first_seat"]
    for earlier, times in history:
        if state["phase"] != "play":
            return
        state = robotmaze.apply(state, state["turn"], {"program": earlier, "runs": times})[0]
    if state["phase"] != "play":
        return
    seat = state["turn"]
    robot = robotmaze.view(state, seat)["robots"][seat]
    plan = program_plan(robot, program, runs)
    real = robotmaze.apply(state, seat, {"program": program, "runs": runs})[1]["steps"]
    for planned, happened in zip(plan, real, strict=False):
        if planned["result"] == "unknown":
            assert happened["result"] in {"clear", "crate"}
            break
        assert planned == happened
    else:
        assert len(plan) == len(real)


def test_a_robot_plan_that_reaches_the_exit_says_the_rest_is_not_run() -> None:
    """R four times from J7: three moves reach J10 and the fourth is never run; the plan said
    "4 moves" over three lines and did not say why."""
    robot = {"at": "J7", "damage": 0, "visited": ["A1"], "crates": [], "walls": []}
    lines = plan_lines(program_plan(robot, "R", 4), 0, planned=4)
    assert lines == [
        "Right: J7 to J8: not known yet",
        "Right: J8 to J9: not known yet",
        "Right: J9 to J10: not known yet, the exit",
        "The robot would be out at J10: the last move is not run.",
    ]
    two_short = plan_lines(program_plan(robot, "RR", 4), 0, planned=8)
    assert two_short[-1] == "The robot would be out at J10: the last 5 moves are not run."
    assert plan_lines(program_plan(robot, "R", 3), 0, planned=3)[-1].endswith("the exit")
