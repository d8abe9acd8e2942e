"""Replays: every state rebuilt from the seed equals the one the game went through; the page
steps by ply as a page and as an htmx partial; verify checks the record and catches tampering;
viewpoints plug in per game; a fixed number of queries."""

from __future__ import annotations

import hashlib
import re
from datetime import timedelta

import pytest
import time_machine
from django.db import connection
from django.test.utils import CaptureQueriesContext

from games.archive import replays, selectors
from games.engines import cornmaze
from games.models import Game, Move
from games.play import challenges, core
from tests.conftest import seat_user, to_move
from tests.test_archive import bulk_finished, play_out

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


# Seeds whose Corn mazes play_out plays to a known length (its draws come from the seed).
SEVEN_MOVES = hashlib.sha256(b"replay 1").digest()  # 3 seats, 6x6
THREE_MOVES = hashlib.sha256(b"short 3").digest()  # 2 seats, 6x6
FORTY_FOUR_MOVES = hashlib.sha256(b"long 1").digest()  # 6 seats, 12x12


@pytest.fixture
def finished(make_cornmaze) -> Game:
    game = play_out(make_cornmaze(seats=3, size=6, seed=SEVEN_MOVES))
    assert game.ply == 7  # the tests below step through moves 1 to 5
    return game


def loaded(game: Game) -> Game:
    found = selectors.game_for_page(game.pk)
    assert found is not None
    return found


@pytest.mark.parametrize(("seats", "size"), [(2, 6), (3, 8), (4, 12)])
def test_the_replay_rebuilds_every_state_the_game_went_through(make_cornmaze, seats, size):
    game = make_cornmaze(seats=seats, size=size)
    original: list[dict] = []
    play_out(game, min_ply=size * 2, states=original)
    game = loaded(game)
    moves = list(game.moves.all())
    assert len(original) == len(moves) + 1 == game.ply + 1
    assert replays.replay_states(game, moves) == original
    for ply in {0, 1, len(moves) // 2, len(moves)}:
        rebuilt = replays.replay_state(game, moves, ply)
        assert rebuilt.ply == ply and not rebuilt.problem
        assert rebuilt.state == original[ply]


def test_a_resignation_and_a_timeout_replay_too(make_cornmaze):
    game = make_cornmaze(seats=3, size=6)
    states = [Game.objects.get(pk=game.pk).state]
    mover = to_move(game)
    # A first move that does not win at once (the engine is a pure function of the state).
    shifts = next(
        m
        for m in cornmaze.legal_moves(game.state)
        if cornmaze.result(cornmaze.apply(game.state, mover, {"shifts": m})[0]) is None
    )
    core.move_submit(
        game_id=game.pk, user=seat_user(game, mover), number=0, move={"shifts": shifts}
    )
    states.append(Game.objects.get(pk=game.pk).state)
    with time_machine.travel(timedelta(days=4)):
        late = to_move(game)
        core.seat_timeout(game_id=game.pk, seat_index=late)
    states.append(Game.objects.get(pk=game.pk).state)
    resigner = next(i for i in range(3) if i != late)
    core.game_resign(game_id=game.pk, user=seat_user(game, resigner))
    game = loaded(game)
    assert game.status == Game.Status.FINISHED
    states.append(game.state)
    assert replays.replay_states(game, list(game.moves.all())) == states


def test_an_aborted_game_replays_with_the_reason_its_page_gives(client, make_cornmaze):
    game = make_cornmaze(seats=2, size=6)
    mover = to_move(game)
    core.move_submit(
        game_id=game.pk,
        user=seat_user(game, mover),
        number=0,
        move={"shifts": cornmaze.legal_moves(game.state)[0]},
    )
    challenges.game_abort(game_id=game.pk, user=seat_user(game, mover))
    said = "Aborted by a player before anyone else moved. No result."
    for url in (f"/games/{game.pk}/", f"/games/{game.pk}/replay/"):
        page = client.get(url).content.decode()
        assert said in page, url
        assert "nobody moved before the first deadline" not in page, url


def test_the_page_steps_through_the_moves(client, finished):
    url = f"/games/{finished.pk}/replay/"
    page = client.get(url).content.decode()
    assert "{#" not in page and "{%" not in page and "{{" not in page
    assert 'data-ply="0"' in page and f'data-last="{finished.ply}"' in page
    assert "The start." in page and "moves first." in page
    assert re.search(r'<span class="button secondary disabled" data-step="prev"', page)
    assert f'href="{url}?ply=1"' in page and f'hx-get="{url}?ply=1"' in page
    assert 'hx-target="#step"' in page
    # Every move in the log is a link to its ply.
    for ply in range(1, finished.ply + 1):
        assert f'href="{url}?ply={ply}"' in page
    moves = list(finished.moves.all())
    game = loaded(finished)
    page = client.get(f"{url}?ply=2").content.decode()
    assert f"Move 2 of {finished.ply}:" in page
    assert 'data-ply="2" title="' in page and 'aria-current="step"' in page
    state = replays.replay_state(game, moves, 2).state
    for seat, (row, col) in enumerate(state["markers"]):
        assert f'data-seat="{seat}" data-cell="{chr(97 + col)}{row + 1}"' in page
    assert f'href="{url}?ply=1"' in page and f'href="{url}?ply=3"' in page
    # The end shows the result; out-of-range plies are clamped.
    end = client.get(f"{url}?ply=999").content.decode()
    assert f'data-ply="{finished.ply}"' in end and "wins: reached the right edge" in end
    far = client.get(f"{url}?ply={'9' * 40}").content.decode()
    assert f'data-ply="{finished.ply}"' in far
    assert 'data-step="next" aria-disabled="true"' in end
    assert 'data-ply="0"' in client.get(f"{url}?ply=x").content.decode()


def test_htmx_gets_only_the_step(client, finished):
    url = f"/games/{finished.pk}/replay/"
    partial = client.get(f"{url}?ply=1", **HTMX).content.decode()
    assert partial.lstrip().startswith('<div id="step"') and "<html" not in partial
    assert 'data-ply="1"' in partial and 'id="board"' in partial
    assert 'id="log"' not in partial


def test_downloads_seed_and_hash_are_on_the_page(client, finished):
    page = client.get(f"/games/{finished.pk}/replay/").content.decode()
    assert f'href="/games/{finished.pk}/record.json" download="cornmaze-{finished.pk}.json"' in page
    assert f'<code id="seed">{finished.seed_hex}</code>' in page
    assert f'<code id="seed-sha">{finished.seed_sha256}</code>' in page
    assert f"data:text/plain;charset=utf-8,{finished.seed_hex}" in page
    game_page = client.get(f"/games/{finished.pk}/").content.decode()
    assert f'href="/games/{finished.pk}/replay/">Replay</a>' in game_page


def test_a_running_game_has_no_replay_yet(client, make_cornmaze):
    game = make_cornmaze()
    response = client.get(f"/games/{game.pk}/replay/")
    assert response.status_code == 302 and response["Location"] == f"/games/{game.pk}/"
    assert "/replay/" not in client.get(f"/games/{game.pk}/").content.decode()
    assert client.get("/games/999999/replay/").status_code == 404


def test_verify_says_a_real_game_checks_out(client, finished):
    url = f"/games/{finished.pk}/replay/?ply=0&verify=1"
    partial = client.get(url, **HTMX).content.decode()
    assert partial.lstrip().startswith('<div id="verify"')
    assert "Checks out" in partial and f"all {finished.ply} moves" in partial
    # Without JavaScript the link gives the whole page with the answer.
    page = client.get(url).content.decode()
    assert "<html" in page and "Checks out" in page


@pytest.mark.parametrize(
    ("tamper", "problem"),
    [
        (
            lambda g: Move.objects.filter(game=g, ply=1).update(
                outcome={"drawn": ["<", "<"], "path": [[0, 0]], "end": [0, 0]}
            ),
            "Move 1: the outcome is not what the rules and the seed give.",
        ),
        (
            lambda g: Game.objects.filter(pk=g.pk).update(seed=b"\x00" * 32),
            "The seed does not match the SHA-256 published at the start.",
        ),
        (
            lambda g: g.seats.filter(place=1).update(place=2),
            "The result is not the one the moves give.",
        ),
    ],
)
def test_verify_catches_a_tampered_game(client, finished, tamper, problem):
    tamper(finished)
    page = client.get(f"/games/{finished.pk}/replay/?verify=1", **HTMX).content.decode()
    assert "Does NOT check out" in page and "Checks out" not in page
    assert problem in page


def test_a_stored_move_that_does_not_apply_stops_the_replay_there(client, finished):
    Move.objects.filter(game=finished, ply=2).update(move={"shifts": [40, 40]})
    page = client.get(f"/games/{finished.pk}/replay/?ply=5").content.decode()
    assert 'data-ply="1"' in page
    assert "Move 2 does not apply" in page
    verify = client.get(f"/games/{finished.pk}/replay/?verify=1", **HTMX).content.decode()
    assert "Move 2 is not legal" in verify


def test_a_game_kind_can_offer_viewpoints(client, finished, monkeypatch):
    """How Robot Maze Race and Maze Race plug in: a list of viewpoints, and a view for each."""
    seen = []

    def viewpoints(game, seats):
        return [replays.Viewpoint("all", "Everything")] + [
            replays.Viewpoint(f"seat-{s.index}", f"{s.name}'s side", seat=s.index) for s in seats
        ]

    def view(state, viewpoint):
        seen.append(viewpoint)
        shown = cornmaze.view(state, viewpoint.seat)
        if viewpoint.seat is not None:  # say, only this seat's marker
            shown["markers"] = [
                m if i == viewpoint.seat else None for i, m in enumerate(shown["markers"])
            ]
        return shown

    monkeypatch.setitem(replays.VIEWPOINTS, "cornmaze", viewpoints)
    monkeypatch.setitem(replays.REPLAY_VIEWS, "cornmaze", view)
    url = f"/games/{finished.pk}/replay/"
    page = client.get(f"{url}?ply=1").content.decode()
    assert '<select name="view">' in page and "side</option>" in page
    assert page.count('class="marker"') == 3
    page = client.get(f"{url}?ply=1&view=seat-1").content.decode()
    assert seen[-1].seat == 1
    assert page.count('class="marker"') == 1 and 'data-seat="1"' in page
    assert '<option value="seat-1" selected>' in page
    # Stepping keeps the viewpoint; an unknown one falls back to the first.
    assert f'href="{url}?ply=2&amp;view=seat-1"' in page
    client.get(f"{url}?ply=1&view=nonsense")
    assert seen[-1].key == "all"


def test_a_kind_without_viewpoints_replays_everything(finished):
    game = loaded(finished)
    (only,) = replays.replay_viewpoints(game, list(game.seats.all()))
    assert only == replays.EVERYTHING
    state = replays.replay_state(game, list(game.moves.all()), 1).state
    assert replays.replay_view("cornmaze", state, only) == cornmaze.view(state, None)


def queries(client, url: str, **extra) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(url, **extra)
    assert response.status_code == 200
    return len(captured)


def test_a_replay_runs_a_fixed_number_of_queries(
    client, make_cornmaze, make_user, django_assert_num_queries
):
    short = play_out(make_cornmaze(seats=2, size=6, seed=THREE_MOVES), min_ply=3)
    long = play_out(make_cornmaze(seats=6, size=12, seed=FORTY_FOUR_MOVES), min_ply=40)
    assert (short.ply, long.ply) == (3, 44)
    people = [make_user(), make_user()]
    bulk_finished(10, people)
    for game in (short, long):
        base = f"/games/{game.pk}/replay/"
        # The game, its seats, its moves; verify builds the record: its seats and moves again,
        # and its clock events (issue 14).
        with django_assert_num_queries(3):
            client.get(f"{base}?ply={game.ply}")
        with django_assert_num_queries(3):
            client.get(f"{base}?ply=1", **HTMX)
        with django_assert_num_queries(6):
            client.get(f"{base}?verify=1", **HTMX)
    bulk_finished(990, people)
    assert Game.objects.count() == 1002
    for game in (short, long):
        with django_assert_num_queries(3):
            client.get(f"/games/{game.pk}/replay/?ply={game.ply}")
