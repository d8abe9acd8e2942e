"""Robot Maze Race through the site: set-up, programs, and a referee that never leaks."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.test import Client
from django.urls import reverse

from games.archive.records import record_verify
from games.engines import robotmaze
from games.models import Game, Move, Outbox, Reminder
from games.play import challenges, core
from tests.worker_fixtures import make_player

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}

# Two legal warehouses with patterns nobody would draw by chance.
WAREHOUSES = [
    [
        "..........",
        ".XXXXXXXXX",
        "..........",
        "XXXXXXXX.X",
        "..........",
        ".X.X......",
        "..........",
        "..........",
        "..........",
        "..........",
    ],
    [
        "....X..X..",
        "....X..X..",
        "....X..X..",
        "....X.....",
        "....X.....",
        "....X.....",
        "....X.....",
        "....X.....",
        "..........",
        "XXXXXXXXX.",
    ],
]
assert all(robotmaze.is_legal_warehouse(w) for w in WAREHOUSES)


def crate_cells(rows):
    return {
        robotmaze.cell_name(r, c)
        for r, row in enumerate(rows)
        for c, ch in enumerate(row)
        if ch == "X"
    }


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def robot_game(alice, bob) -> Game:  # type: ignore[no-untyped-def]
    """A Robot Maze Race of 3-day clocks between these two, in its set-up."""
    game = core.game_create(
        kind="robotmaze",
        creator=alice,
        options={},
        clock_choice="P3D",
        seats=[core.SeatPlan(), core.SeatPlan()],
    )
    core.game_join(game_id=game.pk, user=bob)
    game.refresh_from_db()
    return game


@pytest.fixture
def game(make_user) -> Game:
    return robot_game(make_user("alice"), make_user("bob"))


def set_up(game: Game, seats: tuple[int, ...] = (0, 1)) -> None:
    """These seats set up their warehouses (WAREHOUSES), in this order."""
    for seat in seats:
        game.refresh_from_db()
        core.move_submit(
            game_id=game.pk,
            user=game.seats.get(index=seat).user,
            number=core.move_number(game, seat),
            move={"warehouse": WAREHOUSES[seat]},
        )
    game.refresh_from_db()


def play(game: Game, program: str, runs: int) -> Move:
    game.refresh_from_db()
    (seat,) = robotmaze.to_move(game.state)
    return core.move_submit(
        game_id=game.pk,
        user=game.seats.get(index=seat).user,
        number=game.ply,
        move={"program": program, "runs": runs},
    )


def test_set_up_by_clicks_random_and_clear_in_the_session(game):
    alice = client_for(game.seats.get(index=0).user)
    url = reverse("game_draft", args=[game.pk])
    page = alice.get(f"/games/{game.pk}/").content.decode()
    assert "0 of 20 crates" in page and "Place 20 more crates" in page
    # Each name links to the player's page.
    assert (
        '<a href="/players/alice/">alice</a> is setting up; '
        '<a href="/players/bob/">bob</a> is setting up.'
    ) in page

    alice.post(url, {"warehouse": "." * 100, "toggle": "A1"})
    page = alice.get(f"/games/{game.pk}/").content.decode()
    assert "1 of 20 crates" in page and "A1 is the entrance: no crate there." in page

    response = alice.post(url, {"action": "random"}, **HTMX)
    body = response.content.decode()
    assert response.status_code == 200 and "<html" not in body
    assert "20 of 20 crates" in body and "A legal warehouse" in body
    drawn = re.search(r'name="warehouse" value="([.X]{100})"', body).group(1)
    assert robotmaze.is_legal_warehouse([drawn[i : i + 10] for i in range(0, 100, 10)])

    alice.post(url, {"action": "clear"})
    assert "0 of 20 crates" in alice.get(f"/games/{game.pk}/").content.decode()
    # Nothing was played by any of this.
    assert not Move.objects.exists()


def test_taps_kept_by_the_page_toggle_together_and_a_bad_cell_changes_nothing(game):
    """The page sends the taps made while one was on its way in one post (static/js/site.js):
    each toggles, in order; a cell that is none of the warehouse's is refused, and the draft
    stays as it was."""
    alice = client_for(game.seats.get(index=0).user)
    url = reverse("game_draft", args=[game.pk])
    one_crate = "." * 10 + "X" + "." * 89  # B1
    response = alice.post(url, {"warehouse": one_crate, "toggle": ["B2", "C1", "B2", "C2"]}, **HTMX)
    body = response.content.decode()
    assert response.status_code == 200 and "3 of 20 crates" in body
    held = re.search(r'name="warehouse" value="([.X]{100})"', body).group(1)
    assert held[10:30] == "X.........XX........"
    refused = alice.post(url, {"warehouse": held, "toggle": ["D4", "K1"]}, **HTMX)
    assert refused.status_code == 409
    assert "K1 is not a cell of the warehouse." in refused.content.decode()
    page = alice.get(f"/games/{game.pk}/").content.decode()
    assert "3 of 20 crates" in page and f'name="warehouse" value="{held}"' in page


def test_both_set_ups_count_whichever_page_was_loaded_first(game):
    """Set-up is at once: bob loaded his page before alice sent her warehouse; his still counts,
    and sent again it is refused and changes nothing."""
    alice, bob = (client_for(game.seats.get(index=seat).user) for seat in (0, 1))
    pages = [c.get(f"/games/{game.pk}/").content.decode() for c in (alice, bob)]
    numbers = [re.search(r'name="ply" value="(\d+)"', page).group(1) for page in pages]
    assert numbers == ["0", "0"]
    url = reverse("game_move", args=[game.pk])
    sent = [{"ply": numbers[seat], "warehouse": "".join(WAREHOUSES[seat])} for seat in (0, 1)]
    assert alice.post(url, sent[0], **HTMX).status_code == 200
    assert bob.post(url, sent[1], **HTMX).status_code == 200
    game.refresh_from_db()
    assert game.ply == 2 and game.state["phase"] == "play"
    # Sent again from a page of the set-up, the form is refused as the set-up it was, not
    # read as a program of the game that has begun (it was "Choose at least one command.").
    for client, seat in ((bob, 1), (alice, 0)):
        again = client.post(url, sent[seat], **HTMX)
        assert again.status_code == 409 and 'role="alert"' in again.content.decode()
        assert "You have played that move already: a move counts once." in (again.content.decode())
    game.refresh_from_db()
    assert game.ply == 2 and Move.objects.filter(game=game).count() == 2


def test_no_damage_is_shown_before_play_begins(game):
    """In the set-up no robot has run: a warehouse set up shows no "Damage: 0 of 20" under it;
    once both are set up, each grid shows its robot's damage."""
    alice, bob = (client_for(game.seats.get(index=seat).user) for seat in (0, 1))
    set_up(game, (0,))
    page = alice.get(f"/games/{game.pk}/").content.decode()
    assert 'data-grid="secret-0"' in page and "Damage:" not in page
    assert "Damage:" not in bob.get(f"/games/{game.pk}/").content.decode()
    set_up(game, (1,))
    for client in (alice, bob):
        page = client.get(f"/games/{game.pk}/").content.decode()
        assert page.count('<p class="damage">Damage: <strong>0</strong> of 20</p>') == 2


def test_a_wall_of_crates_is_refused_with_the_blockers_shown(game):
    alice = client_for(game.seats.get(index=0).user)
    blocked = ["." * 10] * 10
    blocked[1] = "X" * 10  # row B walls off the entrance
    blocked[3] = "X" * 10
    text = "".join(blocked)
    alice.post(reverse("game_draft", args=[game.pk]), {"warehouse": text})
    page = alice.get(f"/games/{game.pk}/").content.decode()
    assert "No path from A1 to J10" in page
    assert page.count('class="blocker') + page.count(" blocker") >= 10
    response = alice.post(reverse("game_move", args=[game.pk]), {"ply": "0", "warehouse": text})
    assert response.status_code == 409 and "No path from A1 to J10" in response.content.decode()
    assert not Move.objects.exists()


def test_a_program_before_the_other_warehouse_is_set_up_is_refused_as_such(game, make_user):
    """Alice has set up and bob has not: a program from her, previewed or played, is told why
    it waits (it used to be told that her warehouse form was incomplete)."""
    set_up(game, seats=(0,))
    alice = client_for(game.seats.get(index=0).user)
    program = {"ply": "1", "command_1": "R", "runs": "1"}
    for name in ("game_move", "game_draft"):
        response = alice.post(reverse(name, args=[game.pk]), program, **HTMX)
        assert response.status_code == 409, name
        assert "Your warehouse is set up: the robots start once the other one is too." in (
            response.content.decode()
        )
    assert Move.objects.filter(game=game).count() == 1
    # A game still waiting for its second player has nothing to prepare yet.
    waiting = core.game_create(
        kind="robotmaze",
        creator=make_user("carol"),
        options={},
        clock_choice="P3D",
        seats=[core.SeatPlan(), core.SeatPlan()],
    )
    carol = client_for(waiting.seats.get(index=0).user)
    response = carol.post(reverse("game_draft", args=[waiting.pk]), {"action": "random"}, **HTMX)
    assert response.status_code == 409
    assert "The game has not started yet: it is waiting for players." in response.content.decode()
    # Withdrawn, it is over, not waiting.
    challenges.game_withdraw(game_id=waiting.pk, user=waiting.seats.get(index=0).user)
    response = carol.post(reverse("game_draft", args=[waiting.pk]), {"action": "random"}, **HTMX)
    assert response.status_code == 409 and "The game is over." in response.content.decode()


def test_abort_after_the_set_up_says_who_moved(game):
    """Both have set up and the play has begun: neither may abort, and bob (who joined) is
    told it is his own move that counts (he used to be told another player had moved)."""
    set_up(game)
    alice, bob = (game.seats.get(index=seat).user for seat in (0, 1))
    with pytest.raises(core.GameError) as refused:
        challenges.game_abort(game_id=game.pk, user=bob)
    assert str(refused.value) == (
        "Too late to abort: you have moved already. You can resign instead."
    )
    with pytest.raises(core.GameError, match="another player has moved already"):
        challenges.game_abort(game_id=game.pk, user=alice)
    assert Game.objects.get(pk=game.pk).status == "active"


def selected_commands(response) -> list[str]:
    """The command each of the program form's selects has chosen ("" for "—")."""
    page = response.content.decode()
    chosen = []
    for slot in range(1, 5):
        select = re.search(rf'<select name="command_{slot}".*?</select>', page, re.S)
        assert select is not None, slot
        picked = re.search(r'<option value="(\w*)" selected>', select.group(0))
        chosen.append(picked.group(1) if picked else "")
    return chosen


def test_program_preview_outcomes_and_the_end(game):
    set_up(game)
    (seat,) = robotmaze.to_move(game.state)
    runner = client_for(game.seats.get(index=seat).user)
    runner.post(
        reverse("game_draft", args=[game.pk]),
        {"command_1": "R", "command_2": "R", "command_3": "D", "runs": "3"},
    )
    page = runner.get(f"/games/{game.pk}/").content.decode()
    assert "R R D, 3 times: 9 moves" in page
    # A preview with a gap is refused and the drafted program stays.
    gap = runner.post(
        reverse("game_draft", args=[game.pk]), {"command_1": "L", "command_3": "L", "runs": "1"}
    )
    assert gap.status_code == 409 and "Command 2 is empty" in gap.content.decode()
    # Its answer draws the form as chosen, with no plan: the drafted one, drawn instead, was a
    # stale preview, and the next "Run the program" ran it.
    assert selected_commands(gap) == ["L", "", "L", ""]
    assert "R R D" not in gap.content.decode() and 'class="plan-lines"' not in gap.content.decode()
    assert "R R D, 3 times: 9 moves" in runner.get(f"/games/{game.pk}/").content.decode()
    for data, message in [
        ({"runs": "2"}, "Choose at least one command"),
        ({"command_1": "R", "runs": "5"}, "Run the program 1 to 4 times"),
        ({"program": "RRRRR", "runs": "1"}, "1 to 4 commands"),
        # A gap is not closed up: "— D" would be played as "D".
        ({"command_2": "D", "runs": "1"}, "Command 1 is empty but a later one is chosen"),
        ({"command_1": "R", "command_3": "D", "runs": "1"}, "Command 2 is empty"),
    ]:
        response = runner.post(reverse("game_move", args=[game.pk]), {"ply": "2", **data})
        assert response.status_code == 409 and message in response.content.decode()
        # The refused form as it was sent, not the draft before it.
        sent = [data.get(f"command_{i}", "") for i in range(1, 5)]
        assert selected_commands(response) == sent, data
        assert "R R D" not in response.content.decode()
    response = runner.post(
        reverse("game_move", args=[game.pk]), {"ply": "2", "command_1": "U", "runs": "1"}
    )
    assert response.status_code == 302
    page = runner.get(f"/games/{game.pk}/").content.decode()
    assert "A1 to the north: wall (damage 1)" in page


def test_a_robot_that_reaches_twenty_damage_loses_mid_program_and_all_is_revealed(game):
    set_up(game)
    loser = robotmaze.to_move(game.state)[0]
    play(game, "UUUU", 4)  # 16 walls
    play(game, "R", 1)
    move = play(game, "UULL", 4)  # 4 more walls: over at the 4th command
    game.refresh_from_db()
    assert len(move.outcome["steps"]) == 4 and move.outcome["damage"] == 20
    assert game.status == Game.Status.FINISHED and game.result_reason == "damage"
    assert game.seats.get(index=loser).place == 2
    page = Client().get(f"/games/{game.pk}/").content.decode()
    for seat in (0, 1):
        # Both warehouses drawn in full for everyone, and the seed.
        for cell in crate_cells(WAREHOUSES[seat]):
            assert f'data-cell="{cell}"' in page
    assert page.count('class="crate') >= 20
    assert game.seed_hex in page
    # Each grid says whose robot ran in whose warehouse, by name.
    names = [game.seats.get(index=seat).name for seat in (0, 1)]
    for robot, owner in ((0, 1), (1, 0)):
        title = f"{names[robot]}'s robot in {names[owner]}'s warehouse"
        assert re.search(rf"<h2 [^>]*><svg class=\"mark\".*?</svg> {re.escape(title)}</h2>", page)
    replay = Client().get(reverse("game_replay", args=[game.pk]) + "?ply=3").content.decode()
    assert f"{names[1]}'s robot in {names[0]}'s warehouse" in replay
    record = json.loads(Client().get(f"/games/{game.pk}/record.json").content)
    assert record["initial"] == {"warehouses": WAREHOUSES}
    assert [m["move"] for m in record["moves"][:2]] == [{"warehouse": w} for w in WAREHOUSES]
    assert record_verify(record) == []


@pytest.mark.parametrize("last", ["first mover", "second mover"])
def test_the_first_program_has_a_whole_clock_whoever_set_up_last(last):
    """The first program is a turn of its own: the seat to write it gets three days from the
    moment both warehouses are ready, with a reminder and a "your turn" mail for that turn,
    even when it is the seat that set up last (whose set-up clock had been running)."""
    start = datetime(2027, 2, 1, 9, tzinfo=UTC)
    with time_machine.travel(start, tick=False):
        game = robot_game(make_player(), make_player())
    first = robotmaze.first_seat(game.state)
    order = [1 - first, first] if last == "first mover" else [first, 1 - first]
    for hours, seat in zip((1, 50), order, strict=True):
        with time_machine.travel(start + timedelta(hours=hours), tick=False):
            set_up(game, (seat,))
    ready = start + timedelta(hours=50)
    game.refresh_from_db()
    assert robotmaze.to_move(game.state) == [first]
    mover = game.seats.get(index=first)
    assert mover.deadline == ready + timedelta(days=3)
    assert game.seats.get(index=1 - first).deadline is None
    (reminder,) = Reminder.objects.filter(seat=mover)
    assert reminder.ply == game.ply == 2
    assert reminder.due == ready + timedelta(days=3) - timedelta(days=3) / 5
    mails = Outbox.objects.filter(game=game, seat=first, kind=Outbox.Kind.YOUR_TURN)
    assert sorted(mails.values_list("ply", flat=True)) == [0, 2]  # the set-up's, the program's


def test_a_set_up_that_has_not_finished_may_be_aborted_by_either_player(game):
    """As its clock would abort it: the creator may abort after the other set up (the page
    offered only resigning, at the cost of a loss)."""
    set_up(game, seats=(1,))
    alice = client_for(game.seats.get(index=0).user)
    page = alice.get(reverse("game", args=[game.pk])).content.decode()
    assert reverse("game_abort", args=[game.pk]) in page
    assert alice.post(reverse("game_abort", args=[game.pk]), {"confirm": "yes"}).status_code == 302
    game.refresh_from_db()
    assert (game.status, game.result_reason) == (Game.Status.ABORTED, "player_aborted")
    record = json.loads(Client().get(reverse("game_record", args=[game.pk])).content)
    assert record_verify(record) == []


def test_a_set_up_that_never_finished_is_aborted_on_timeout(game):
    core.move_submit(
        game_id=game.pk,
        user=game.seats.get(index=0).user,
        number=0,
        move={"warehouse": WAREHOUSES[0]},
    )
    Game.objects.filter(pk=game.pk)
    game.seats.filter(index=1).update(deadline="2000-01-01T00:00Z")
    core.seat_timeout(game_id=game.pk, seat_index=1)
    game.refresh_from_db()
    assert game.status == Game.Status.ABORTED
    assert list(game.seats.values_list("place", flat=True)) == [None, None]
    page = client_for(game.seats.get(index=0).user).get(reverse("game", args=[game.pk]))
    assert "Your secret warehouse</" in page.content.decode()  # and no robot's run on it
    assert "the other robot's run" not in page.content.decode()
    assert "did not set up" in page.content.decode()
    assert "is setting up" not in page.content.decode()
    # One warehouse was set up: the page and the replay say the set-up did not finish.
    said = "Aborted: the set-up did not finish in time. No result."
    for url in (reverse("game", args=[game.pk]), reverse("game_replay", args=[game.pk])):
        page = Client().get(url).content.decode()
        assert said in page and "nobody moved" not in page, url
    assert "set-up not finished, no result" in Client().get(reverse("archive")).content.decode()
    # Its record, a set-up move and an abort on time, checks out.
    assert (
        record_verify(json.loads(Client().get(reverse("game_record", args=[game.pk])).content))
        == []
    )


def responses(game: Game, client: Client) -> list[str]:
    urls = [
        ("/", {}),
        (f"/games/{game.pk}/", {}),
        (f"/games/{game.pk}/", HTMX),
        (f"/games/{game.pk}/?since=0", HTMX),
        (f"/games/{game.pk}/record.json", {}),
    ]
    bodies = [client.get(url, **extra).content.decode() for url, extra in urls]
    # A draft and a refused move render the page too.
    bodies.append(
        client.post(reverse("game_draft", args=[game.pk]), {"action": "x"}).content.decode()
    )
    bodies.append(
        client.post(reverse("game_move", args=[game.pk]), {"ply": "99"}, **HTMX).content.decode()
    )
    return bodies


def rendered_crates(body: str) -> set[str]:
    """Cells drawn as a crate (not as a crate found by a robot)."""
    return set(re.findall(r'<td class="[^"]*\bcrate\b[^"]*" data-cell="([A-J]\d+)"', body))


def found_crates(body: str) -> set[str]:
    return set(re.findall(r'<td class="[^"]*\bfound\b[^"]*" data-cell="([A-J]\d+)"', body))


@pytest.mark.parametrize("stage", ["one set up", "both set up", "mid game"])
def test_no_viewer_ever_sees_the_other_warehouse_before_the_end(game, make_user, stage):
    core.move_submit(
        game_id=game.pk,
        user=game.seats.get(index=0).user,
        number=0,
        move={"warehouse": WAREHOUSES[0]},
    )
    if stage != "one set up":
        core.move_submit(
            game_id=game.pk,
            user=game.seats.get(index=1).user,
            number=0,
            move={"warehouse": WAREHOUSES[1]},
        )
    if stage == "mid game":
        play(game, "RRRR", 4)
        play(game, "DDDR", 3)
        play(game, "DRDR", 2)
    game.refresh_from_db()
    assert not game.is_over
    found = set()
    for robot in game.state["robots"]:
        found |= {s["to"] for m in robot["moves"] for s in m["steps"] if s["result"] == "crate"}
    viewers = {
        "seat 0": (client_for(game.seats.get(index=0).user), 0),
        "seat 1": (client_for(game.seats.get(index=1).user), 1),
        "spectator": (client_for(make_user()), None),
        "anonymous": (Client(), None),
    }
    for role, (client, seat) in viewers.items():
        set_up = seat is not None and game.state["warehouses"][seat] is not None
        own = crate_cells(WAREHOUSES[seat]) if set_up else set()
        bodies = responses(game, client)
        if seat is not None and game.state["warehouses"][seat] is not None:
            # The check below can fail: a seat's own page draws its own crates.
            assert rendered_crates(bodies[1]) == own
        for body in bodies:
            assert game.seed_hex not in body, role
            for other in (0, 1):
                if other == seat:
                    continue
                for row in set(WAREHOUSES[other]) - {"." * 10}:
                    assert row not in body, (role, row)
                assert "".join(WAREHOUSES[other]) not in body, role
            assert rendered_crates(body) <= own, (role, rendered_crates(body) - own)
            assert found_crates(body) <= found | own, role
