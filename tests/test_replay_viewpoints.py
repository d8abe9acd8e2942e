"""Replays of the hidden-information games, from each viewpoint."""

from __future__ import annotations

import re

import pytest

from games.models import Game
from games.play import core
from tests.test_robotmaze_site import WAREHOUSES, crate_cells, play, set_up

pytestmark = pytest.mark.django_db


def drawn_crates(body: str, grid: str) -> set[str]:
    box = body.split(f'data-grid="{grid}"')[1].split("</section>")[0]
    return set(re.findall(r'<td class="[^"]*\bcrate\b[^"]*" data-cell="([A-J]\d+)"', box))


def test_robot_maze_replays_from_either_side_or_with_both_warehouses(client, make_user):
    alice, bob = make_user("alice"), make_user("bob")
    game = core.game_create(
        kind="robotmaze",
        creator=alice,
        options={},
        clock_choice="P3D",
        seats=[core.SeatPlan(), core.SeatPlan()],
    )
    core.game_join(game_id=game.pk, user=bob)
    set_up(game)
    play(game, "UUUU", 4)
    play(game, "RRRR", 1)
    play(game, "UULL", 4)
    game.refresh_from_db()
    assert game.status == Game.Status.FINISHED
    url = f"/games/{game.pk}/replay/?ply=3"
    both = client.get(url + "&view=both").content.decode()
    # Both warehouses, under both robots' runs.
    assert drawn_crates(both, "open-0") == crate_cells(WAREHOUSES[1])
    assert drawn_crates(both, "open-1") == crate_cells(WAREHOUSES[0])
    side = client.get(url + "&view=seat0").content.decode()
    # Seat 0's side at that moment: its own warehouse, not the other one.
    assert drawn_crates(side, "secret-0") == crate_cells(WAREHOUSES[0])
    assert drawn_crates(side, "open-0") == set()
    assert "alice&#x27;s side" in side or "alice's side" in side
    # Whoever watches the replay is not the player: the grids are named, not "your".
    assert "Your " not in side
    assert "alice's secret warehouse, with bob's robot's run" in side
    assert "alice's robot in bob's warehouse" in side
    # The first set-up, with both warehouses asked for: the one set up so far is shown.
    first = game.moves.get(ply=1).seat
    setup = client.get(f"/games/{game.pk}/replay/?ply=1&view=both").content.decode()
    assert drawn_crates(setup, f"secret-{first}") == crate_cells(WAREHOUSES[first])
    assert f'data-grid="secret-{1 - first}"' not in setup


def test_maze_race_replays_the_whole_maze_or_one_runners_fog(client, make_user):
    with core.bot_tasks_paused():
        game = core.game_create(
            kind="mazerace",
            creator=make_user(),
            options={"mode": "slow"},
            clock_choice="P3D",
            seats=[core.SeatPlan(bot="flood"), core.SeatPlan(bot="wall")],
        )
        for _ in range(5000):
            game.refresh_from_db()
            if game.status != Game.Status.ACTIVE:
                break
            core.bot_turn_play(game_id=game.pk, ply=game.ply)
    assert game.status == Game.Status.FINISHED
    url = f"/games/{game.pk}/replay/?ply=20"
    whole = client.get(url + "&view=all")
    fog = client.get(url + "&view=seat0")
    assert whole.status_code == fog.status_code == 200
    seen = r'<rect class="cell seen[^"]*" data-cell='
    assert len(re.findall(seen, whole.content.decode())) == 225
    assert 0 < len(re.findall(seen, fog.content.decode())) < 225
    # The screen reader's table names each runner of the whole maze, not "you".
    assert "runner 1 is here" in whole.content.decode()
    assert "runner 2 is here" in whole.content.decode()
    assert "you are here" not in whole.content.decode()
    assert "where each runner is, runner 1 being the first" in whole.content.decode()
    # One runner's fog is not the watcher's: "the runner", not "you".
    one = fog.content.decode()
    assert "the runner is here" in one and "the runner's path" in one
    assert "The maze as far as this runner had seen it" in one
    assert not re.search(r"\byou(r)?\b", one.split('id="maze-table"')[1].split("</table>")[0])
    last = client.get(f"/games/{game.pk}/replay/?ply={game.ply}&view=all").content.decode()
    assert "the runner placed 1 ends here" in last and "where each runner ended" in last
    start = client.get(f"/games/{game.pk}/replay/").content.decode()
    assert "There are no turns: each runner steps on its own." in start
    assert "moves first" not in start
