"""Bad input never answers 500 and changes nothing: each case below once did (tests/test_fuzz.py
looks for more). Digits are ASCII only; NUL and over-long input are refused before any query;
form fields fit their columns; names are normalised before they are checked; a refused join
makes no guest; `verify` says what is malformed in a record."""

from __future__ import annotations

import copy
import hashlib
import io
import json
import re
import unicodedata
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import Resolver404, resolve, reverse
from hypothesis import given
from hypothesis import strategies as st

from games.accounts import profiles
from games.accounts.guests import guest_create
from games.archive.records import clock_events_problems, record_build, record_verify
from games.chat import service as chat
from games.models import (
    ChatMessage,
    ChatMute,
    ChatReport,
    ClockEvent,
    Game,
    Move,
    Profile,
    Vacation,
)
from games.play import core
from games.web import middleware
from games.web.inputs import ascii_int
from games.web.middleware import MAX_CHARS
from tests.conftest import FIXED_SEED, play_to_the_end, seat_user
from tests.test_archive import play_out
from tests.test_mazerace_site import make_race
from tests.test_robotmaze_site import WAREHOUSES

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}
PASSWORD = "correct horse battery"
NUL_SENTENCE = "This request holds a NUL character"


def signed_in(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


# --- digits ------------------------------------------------------------------------------------


@given(st.text(max_size=12))
def test_ascii_int_reads_ascii_digits_and_nothing_else(text: str) -> None:
    number = ascii_int(text)
    plain = text.strip()
    if plain.isascii() and plain.isdigit() and len(plain) <= 9:
        assert number == int(plain)
    else:
        assert number is None


def test_other_scripts_digits_are_not_numbers() -> None:
    assert "²".isdigit() and ascii_int("²") is None  # isdigit took it; int() then raised
    assert int("٣") == 3 and ascii_int("٣") is None  # int() took it
    assert [ascii_int(t) for t in ("7", " 7 ", "0042", "1_0", "+1", "-1", "9" * 10)] == [
        7,
        7,
        42,
        None,
        None,
        None,
        None,
    ]


def test_a_program_run_a_superscript_number_of_times_is_refused(make_user) -> None:
    players = [make_user(), make_user()]
    game = core.game_create(
        kind="robotmaze",
        creator=players[0],
        options={},
        clock_choice="P3D",
        seats=[core.SeatPlan(), core.SeatPlan()],
    )
    core.game_join(game_id=game.pk, user=players[1])
    for seat, player in enumerate(players):
        core.move_submit(
            game_id=game.pk, user=player, number=0, move={"warehouse": WAREHOUSES[seat]}
        )
    game.refresh_from_db()
    client = signed_in(seat_user(game, game.state["turn"]))
    for runs in ("²", "٣", "4²"):
        data = {"ply": "2", "command_1": "R", "runs": runs}
        response = client.post(f"/games/{game.pk}/move", data, **HTMX)
        assert response.status_code == 409
        assert "Run the program 1 to 4 times." in response.content.decode()
        response = client.post(f"/games/{game.pk}/draft", data, **HTMX)
        assert response.status_code == 409
    assert Move.objects.filter(game=game).count() == 2


def test_a_replay_and_the_archive_read_only_ascii_digits(client: Client, make_cornmaze) -> None:
    game = play_to_the_end(make_cornmaze(seats=2, size=6, seed=FIXED_SEED))

    def shown(ply: str) -> str:
        response = client.get(f"/games/{game.pk}/replay/", {"ply": ply})
        assert response.status_code == 200
        found = re.search(r'id="step" class="replay-step" data-ply="(\d+)"', response.text)
        assert found, response.text
        return found.group(1)

    # Past the end, however long the number, is the end; no number of ASCII digits, the start.
    assert shown("1") == "1" and shown(str(game.ply + 5)) == shown("9" * 40) == str(game.ply)
    assert [shown(ply) for ply in ("²", "٣", "-1")] == ["0"] * 3
    for cursor in ("١٢٣.٤", "²", "1.²", "9" * 30 + ".1", "."):
        assert client.get(f"/archive/?after={cursor}").status_code == 200


def test_a_new_game_with_other_digits_is_refused_and_makes_nobody(client: Client) -> None:
    for seats in ("²", "٣", "３"):
        response = client.post("/new/cornmaze/", {"size": "8", "seats": seats, "clock": "P3D"})
        assert response.status_code == 400
        assert "Enter a whole number." in response.content.decode()
        response = client.post("/new/mazerace/", {"race": "live", "seats": seats})
        assert response.status_code == 400
    assert not User.objects.exists() and not Game.objects.exists()


# --- NUL and over-long input ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "data"),
    [
        ("get", "/players/%00/", {}),
        ("get", "/players/%00/feed/", {}),
        ("get", "/accounts/guest/%00/", {}),
        ("post", "/accounts/guest/%00/", {}),
        ("get", "/archive/", {"player": "a\x00b"}),
        ("get", "/unsubscribe/%00/", {}),
        ("post", "/accounts/signup/", {"username": "a\x00", "password1": PASSWORD}),
        ("post", "/accounts/login/", {"username": "x", "password": "\x00"}),
        ("post", "/accounts/password_reset/", {"email\x00": "a@example.com"}),
        ("get", "/accounts/calendar/1.%00.ics", {}),
        ("post", "/accounts/calendar/", {"action": "new\x00"}),
    ],
)
def test_a_nul_anywhere_is_refused_with_a_sentence_before_any_query(
    client: Client, method: str, path: str, data: dict[str, str]
) -> None:
    with CaptureQueriesContext(connection) as queries:
        response = getattr(client, method)(path, data)
    assert response.status_code == 400
    assert NUL_SENTENCE in response.content.decode()
    assert len(queries) == 0


def test_a_nul_in_a_cookie_or_a_header_is_refused(client: Client) -> None:
    client.cookies["sessionid"] = "abcdefgh\x00"
    assert client.get("/").status_code == 400
    assert Client().get("/", HTTP_HX_CURRENT_URL="http://x/\x00").status_code == 400


def test_over_long_input_is_refused_with_a_sentence(client: Client) -> None:
    long = "x" * (MAX_CHARS + 1)
    for response in (
        client.get(f"/players/{long}/"),
        client.get("/archive/", {"player": long}),
        client.post("/accounts/login/", {"username": "x", "password": long}),
    ):
        assert response.status_code == 400
        assert "longer than anything this site takes" in response.content.decode()
    assert client.get("/archive/", {"player": "x" * MAX_CHARS}).status_code == 200


def test_a_body_larger_than_the_site_takes_is_refused_before_it_is_read(client: Client) -> None:
    """Django would parse a form's uploaded file of any size (to a temporary file) when the
    request's form is first read; the body's declared length is checked before that. Here the
    request declares more than it holds: refused all the same, by what it says."""
    upload = SimpleUploadedFile("big.json", b"{}")
    declared = str(settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)
    for path in ("/accounts/login/", "/records/verify/"):
        # A page that says so, with the site's header to go on from; to htmx, the sentence.
        response = client.post(path, {"file": upload}, CONTENT_LENGTH=declared)
        assert response.status_code == 400
        assert response["Content-Type"].startswith("text/html")
        assert f'role="alert">{middleware.too_large()}</p>' in response.content.decode()
        assert 'href="/archive/"' in response.content.decode()
        assert "script-src 'self'" in response["Content-Security-Policy"]
        assert "Sign in" not in response.content.decode()  # it does not know who asks
        response = client.post(
            path, {"file": upload}, CONTENT_LENGTH=declared, HTTP_HX_REQUEST="true"
        )
        assert response.status_code == 400
        assert response.content.decode() == middleware.too_large()
    # The pasted text of a game record is the one value that may be longer than MAX_CHARS.
    response = client.post("/records/verify/", {"text": "x" * (MAX_CHARS + 1)})
    assert response.status_code == 400
    assert "The text is not JSON" in response.content.decode()
    response = client.post("/accounts/login/", {"username": "x" * (MAX_CHARS + 1), "text": "x"})
    assert "longer than anything this site takes" in response.content.decode()


# --- form fields and their columns ------------------------------------------------------------


LONG_EMAIL = "a" * 250 + "@example.com"  # 262 characters: the column holds 254


def test_an_address_longer_than_its_column_is_refused_everywhere(client: Client) -> None:
    response = client.post(
        reverse("signup"),
        {"username": "Theseus", "email": LONG_EMAIL, "password1": PASSWORD, "password2": PASSWORD},
    )
    assert response.status_code == 400
    assert "at most 254 characters" in response.content.decode()
    assert not User.objects.exists()

    guest = guest_create()
    claim = signed_in(guest).post(
        reverse("guest_claim"),
        {"username": "Theseus", "email": LONG_EMAIL, "password1": PASSWORD, "password2": PASSWORD},
    )
    assert claim.status_code == 400
    change = signed_in(guest).post(reverse("email_change"), {"email": LONG_EMAIL})
    assert change.status_code == 400
    assert "at most 254 characters" in change.content.decode()
    guest.refresh_from_db()
    assert guest.email == "" and guest.get_username().startswith("Guest ")
    # The service refuses it too, whoever calls it.
    with pytest.raises(profiles.AccountError, match="at most 254"):
        profiles.email_address_set(user=guest, email=LONG_EMAIL)
    assert User.objects.get(pk=guest.pk).email == ""


# --- names: normalised, then checked ------------------------------------------------------


def signup(client: Client, username: str) -> Any:
    data = {"username": username, "email": "", "password1": PASSWORD, "password2": PASSWORD}
    return client.post(reverse("signup"), data)


def claim(guest: User, username: str) -> Any:
    data = {"username": username, "email": "", "password1": PASSWORD, "password2": PASSWORD}
    return signed_in(guest).post(reverse("guest_claim"), data)


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("Ｇuest_1", "kept for guests"),  # NFKC: Guest_1
        ("ｇｕｅｓｔ", "kept for guests"),
        ("Simple", "is a bot"),  # a bot's name, in any case
        ("ＷＡＬＬ", "is a bot"),  # NFKC: WALL
        ("bot", "is a bot"),
        ("Ｕniq", "That username is taken"),  # NFKC: Uniq, beside uniq
        ("ﷺ" * 10, "at most 150 characters"),  # 10 characters that NFKC makes 180
    ],
)
def test_a_name_is_normalised_before_it_is_checked(
    client: Client, make_user, name: str, error: str
) -> None:
    make_user("uniq")
    users = User.objects.count()
    response = signup(client, name)
    assert response.status_code == 400 and error in response.content.decode()
    guest = guest_create()
    response = claim(guest, name)
    assert response.status_code == 400 and error in response.content.decode()
    assert User.objects.get(pk=guest.pk).get_username().startswith("Guest ")
    assert User.objects.count() == users + 1  # the guest, and nobody else
    # No path skips it: the service refuses the same names.
    with pytest.raises(profiles.AccountError, match=error):
        profiles.account_create(username=name, password=PASSWORD, email="")
    with pytest.raises(profiles.AccountError, match=error):
        profiles.guest_claim(user=guest, username=name, password=PASSWORD, email="")


def test_a_claimed_name_is_stored_normalised(make_user) -> None:
    guest = guest_create()
    response = claim(guest, "Ｔheseus")
    assert response.status_code == 302
    guest.refresh_from_db()
    assert guest.get_username() == "Theseus" == unicodedata.normalize("NFKC", "Ｔheseus")
    assert not guest.profile.is_guest


# --- a refused join, or a game that cannot be made, makes no guest -------------------------


GAME_ROUTES = [
    *["", "join", "move", "draft", "resign", "give-time", "ready", "hint", "chat", "chat/post"],
    *["chat/report", "chat/mute", "chat/unmute", "record.json", "accept", "decline", "withdraw"],
    *["abort", "rematch", "invite/abc/", "replay/"],
]


def test_a_game_id_beyond_64_bits_is_no_game(make_user) -> None:
    """Such an id is no route at all (it would overflow the database's integer in a query)."""
    client = Client()
    client.force_login(make_user())
    for route in GAME_ROUTES:
        for digits in ("9223372036854775808", "9" * 40):
            path = f"/games/{digits}/{route}"
            with pytest.raises(Resolver404):
                resolve(path)
            assert client.get(path).status_code == 404, path
            assert client.post(path, {"confirm": "yes"}).status_code == 404, path
        # The longest id that routes: no such game, said as for any other.
        path = f"/games/{'9' * 18}/{route}"
        assert resolve(path).kwargs["game_id"] == 10**18 - 1
        assert client.get(path).status_code in {302, 404, 405}, path
        assert client.post(path, {"confirm": "yes"}).status_code in {404, 405}, path


def test_a_refused_join_makes_no_guest(client: Client, make_cornmaze) -> None:
    running = make_cornmaze()
    finished = play_to_the_end(make_cornmaze(seed=FIXED_SEED))
    users, profiles = User.objects.count(), Profile.objects.count()
    assert client.post("/games/999999/join").status_code == 404
    assert client.post(f"/games/{running.pk}/join").status_code == 409  # every seat taken
    assert client.post(f"/games/{finished.pk}/join").status_code == 409
    assert client.post("/new/cornmaze/", {"size": "99"}).status_code == 400
    assert client.post("/new/chess/").status_code == 404
    assert User.objects.count() == users and Profile.objects.count() == profiles
    assert "_auth_user_id" not in client.session
    # A join that works makes the guest and signs it in.
    open_game = core.game_create(
        kind="cornmaze",
        creator=seat_user(running, 0),
        options={"size": 8},
        clock_choice="P3D",
        seats=[core.SeatPlan(), core.SeatPlan()],
    )
    assert client.post(f"/games/{open_game.pk}/join").status_code == 302
    assert User.objects.count() == users + 1
    assert client.session["_auth_user_id"] == str(open_game.seats.get(index=1).user_id)


# --- clocks: a bank, weekends off, a day given (issue 14) ----------------------------------


def test_bad_clock_input_gets_a_sentence_and_changes_nothing(make_cornmaze) -> None:
    game = make_cornmaze()
    game.refresh_from_db()
    mover = next(s for s in game.seats.all() if s.deadline is not None)
    other = next(s for s in game.seats.all() if s.deadline is None)
    assert other.user is not None and mover.user is not None
    giver, receiver = signed_in(other.user), signed_in(mover.user)
    url = reverse("game_give_time", args=[game.pk])
    assert giver.post(url, {"seat": str(mover.index)}, **HTMX).status_code == 200
    before = Game.objects.values_list("clock_events", "version").get(pk=game.pk)
    deadlines = list(game.seats.order_by("index").values_list("deadline", flat=True))
    cases = [
        (giver, {"seat": str(mover.index)}, "already given time in this turn"),
        (giver, {"seat": str(other.index)}, "cannot give time to yourself"),
        (giver, {"seat": "٣"}, "Choose the player"),
        (giver, {"seat": "99"}, "no such seat"),
        (receiver, {"seat": str(other.index)}, "clock is not running"),
        (Client(), {"seat": str(mover.index)}, "Only a player"),
    ]
    for client, data, sentence in cases:
        response = client.post(url, data, **HTMX)
        assert response.status_code == 409 and sentence in response.content.decode(), data
    assert Game.objects.values_list("clock_events", "version").get(pk=game.pk) == before
    assert list(game.seats.order_by("index").values_list("deadline", flat=True)) == deadlines
    # Options on a live race, and a bank the form does not offer: nothing is made.
    games = Game.objects.count()
    creator = signed_in(mover.user)
    live = creator.post("/new/mazerace/", {"race": "live", "seats": "2", "weekends_off": "on"})
    assert live.status_code == 400 and "keeps its own clock" in live.content.decode()
    odd = creator.post("/new/cornmaze/", {"size": "8", "seats": "2", "clock": "P3D", "bank": "١٤"})
    assert odd.status_code == 400
    assert Game.objects.count() == games
    # An unknown time zone.
    zone = profiles.profile_for(mover.user).time_zone
    for name in ("Mars/Olympus", "utc ", "Europe/" + "x" * 80):
        response = creator.post(reverse("time_zone_change"), {"time_zone": name})
        assert response.status_code == 400
    assert Profile.objects.get(user=mover.user).time_zone == zone


# --- challenges, invites and rematches: refused with a sentence, nothing changed ----------


def test_a_player_out_of_the_game_cannot_give_time(make_cornmaze) -> None:
    """Three players; one who is not to move resigns and is out, while the others play on.
    A gift of time from that seat is refused by the site, and a record with one does not
    check out (both used to take it)."""
    game = make_cornmaze(seats=3)
    game.refresh_from_db()
    mover = next(s for s in game.seats.order_by("index") if s.deadline is not None)
    out = next(s for s in game.seats.order_by("index") if s.deadline is None)
    assert out.user is not None
    core.game_resign(game_id=game.pk, user=out.user)
    game.refresh_from_db()
    assert game.status == "active" and out.index in game.state["dropped"]
    before = Game.objects.values_list("clock_events", "version").get(pk=game.pk)
    response = signed_in(out.user).post(
        reverse("game_give_time", args=[game.pk]), {"seat": str(mover.index)}, **HTMX
    )
    assert response.status_code == 409
    assert "You are out of this game: you cannot give time." in response.content.decode()
    assert Game.objects.values_list("clock_events", "version").get(pk=game.pk) == before

    record = record_build(game, viewer_seat=None)
    record["clock_events"] = [
        {
            "at": record["moves"][-1]["at"],
            "seat": mover.index,
            "kind": "gift",
            "by": out.index,
            "ply": game.ply,
            "days": 1,
        }
    ]
    assert clock_events_problems(record, 3) == [
        f"Clock event 1: a gift of time from seat {out.index}, who was out of the game."
    ]


def test_a_runner_out_of_a_slow_race_cannot_give_time() -> None:
    """A slow Maze Race goes on after a runner resigns: that runner gives no more time, and
    gets no button for it (a gift from it made the site's own record fail its check)."""
    race = make_race(3, clock="P3D")
    quitter = race.seats.get(index=0).user
    core.game_resign(game_id=race.pk, user=quitter)
    race.refresh_from_db()
    assert race.status == "active"
    client = signed_in(quitter)
    page = client.get(race.get_absolute_url()).content.decode()
    assert 'class="give-time"' not in page and "one more day" not in page
    response = client.post(reverse("game_give_time", args=[race.pk]), {"seat": "1"}, **HTMX)
    assert response.status_code == 409
    assert "You are out of this game: you cannot give time." in response.content.decode()
    assert Game.objects.get(pk=race.pk).clock_events == []


def test_bad_challenges_answers_and_rematches_are_refused_and_change_nothing(
    make_user, make_cornmaze
) -> None:
    from tests.test_challenges import snapshot

    alice, bob = make_user("alice"), make_user("bob")
    guest = guest_create()
    as_alice, as_bob = Client(), Client()
    as_alice.force_login(alice)
    as_bob.force_login(bob)
    new = reverse("game_new", args=["cornmaze"])
    form = {"size": "8", "seats": "2", "clock": "P3D", "seat_1": "person"}
    before = snapshot()
    for names, sentence in [
        ("alice", "You cannot challenge yourself"),
        ("nobody", "There is no player called nobody"),
        (guest.username, "is a guest: invite guests with a private link instead"),
        ("wall", "is a bot: bots need no challenge"),
        ("bob, bob", "You named bob twice"),
        ("bob, " * 6, "Challenge at most 5 players at once"),
    ]:
        response = as_alice.post(new, {**form, "challenge": names})
        assert response.status_code == 400, names
        assert sentence in response.content.decode(), names
    assert snapshot() == before
    # Withdrawn, then accepted twice: the same sentence each time, nothing changed.
    game = core.game_create(
        kind="cornmaze",
        creator=alice,
        options={"size": 8},
        clock_choice="P3D",
        seats=[core.SeatPlan(), core.SeatPlan()],
        reserved=[bob],
    )
    withdraw = reverse("game_withdraw", args=[game.pk])
    assert as_alice.post(withdraw, {"confirm": "yes"}).status_code == 302
    before = snapshot()
    for _ in range(2):
        response = as_bob.post(reverse("game_accept", args=[game.pk]))
        assert response.status_code == 409
        assert "This game was withdrawn by its creator." in response.content.decode()
    assert as_bob.post(reverse("game_decline", args=[game.pk])).status_code == 409
    assert Client().post(reverse("game_accept", args=[game.pk])).status_code == 409
    assert as_bob.post(reverse("game_accept", args=[999999])).status_code == 404
    assert snapshot() == before
    # A rematch of a game still running; one offered twice is the same offer (test_challenges).
    running = make_cornmaze()
    first = seat_user(running, 0)
    as_first = Client()
    as_first.force_login(first)
    response = as_first.post(reverse("game_rematch", args=[running.pk]))
    assert response.status_code == 409 and "once the game is finished" in response.content.decode()
    core.game_resign(game_id=running.pk, user=first)
    assert as_first.post(reverse("game_rematch", args=[running.pk])).status_code == 302
    before = snapshot()
    assert Game.objects.filter(rematch_of=running).count() == 1
    # Withdraw a game that is not yours, and over.
    assert as_bob.post(reverse("game_withdraw", args=[running.pk])).status_code == 409
    assert snapshot() == before


# --- verify explains a malformed record ---------------------------------------------------


@pytest.fixture
def record(make_cornmaze) -> dict[str, Any]:
    # Eight moves every time (play_out draws them from the seed): the cases use the first two.
    seed = hashlib.sha256(b"record 1").digest()
    game = play_out(make_cornmaze(seats=2, size=6, seed=seed))
    assert game.ply == 8
    found = record_build(game, viewer_seat=None)
    assert record_verify(found) == []
    return found


@pytest.mark.parametrize(
    ("path", "value", "problem"),
    [
        (("moves",), {"a": 1}, "The field 'moves' must be an array, not an object."),
        (("options",), [], "The field 'options' must be an object, not an array."),
        (("players",), 2, "The field 'players' must be an array, not a number."),
        (("game",), ["cornmaze"], "The field 'game' must be a string, not an array."),
        (("seed",), 7, "The field 'seed' must be a string or null, not a number."),
        (("first_seat",), "0", "must be a whole number or null, not a string."),
        (("moves", 0), "c e", "Move 1 must be an object, not a string."),
        (("moves", 0, "seat"), None, "In move 1, the field 'seat' must be a whole number"),
        (("moves", 1, "move"), [2, 3], "In move 2, the field 'move' must be an object"),
        (("result", "places"), [1, "2"], "'places' must be an array of numbers"),
        (("moves", 0, "move", "shifts"), "ce", "Move 1 is not legal"),
        (("moves", 0, "seat"), 99, "Move 1 is not legal"),
    ],
)
def test_verify_says_what_is_malformed(record, path, value, problem) -> None:
    broken = copy.deepcopy(record)
    *parents, last = path
    target = broken
    for key in parents:
        target = target[key]
    target[last] = value
    problems = record_verify(broken)
    assert any(problem in p for p in problems), problems


def test_verify_survives_any_value_anywhere(record) -> None:
    """Any field of a real record replaced by any JSON value: sentences, never an exception."""
    leaves = st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
        max_leaves=5,
    )

    def paths(value: Any, at: tuple = ()) -> list[tuple]:
        found = [at]
        if isinstance(value, dict):
            for k, v in value.items():
                found += paths(v, (*at, k))
        elif isinstance(value, list):
            for i, v in enumerate(value[:3]):
                found += paths(v, (*at, i))
        return found

    every = paths(record)[1:]

    @given(path=st.sampled_from(every), value=leaves)
    def check(path: tuple, value: Any) -> None:
        broken = copy.deepcopy(record)
        target = broken
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        problems = record_verify(broken)
        assert isinstance(problems, list) and all(isinstance(p, str) for p in problems)

    check()


def test_the_verify_command_explains_instead_of_a_traceback(tmp_path, record) -> None:
    path = tmp_path / "record.json"
    for text, message in [
        (json.dumps({**record, "moves": {"a": 1}}), "does NOT check out"),
        ("[" * 100_000, "nested too deeply"),
        ('{"format": ' + "9" * 5000 + "}", "holds a number too long to read"),
        (b"\xff\xfe{}", "not UTF-8"),
        ("{", "not JSON"),
        (" \n", "is empty"),
    ]:
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)
        err = io.StringIO()
        with pytest.raises(CommandError, match=message):
            call_command("verify", str(path), stdout=io.StringIO(), stderr=err)
    # A good record saved with a byte order mark, as some editors save, checks out.
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(record).encode())
    out = io.StringIO()
    call_command("verify", str(path), stdout=out, stderr=io.StringIO())
    assert "checks out" in out.getvalue()


def test_a_calendar_link_post_with_a_wrong_action_says_so_and_changes_nothing(make_user) -> None:
    user = make_user()
    client = Client()
    client.force_login(user)
    for action in ("", "²", "renew", "x" * 300):
        response = client.post(reverse("calendar_link"), {"action": action})
        assert response.status_code == 400
        assert "Choose “Make a new link” or “Stop the link”." in response.content.decode()
        assert profiles.profile_for(user).calendar_key == ""


# --- ratings -----------------------------------------------------------------------------------


@pytest.mark.parametrize("after", ["x", "", "²", "٣", "-1", "9" * 40, "1.5", "1e3", "' OR 1=1 --"])
def test_a_leaderboard_cursor_that_cannot_be_read_starts_at_the_top(client: Client, after) -> None:
    response = client.get("/leaderboard/cornmaze/", {"after": after})
    assert response.status_code == 200
    assert "Back to the top" not in response.content.decode()
    assert client.get("/leaderboard/Cornmaze/").status_code == 404


def test_a_hostile_rated_value_is_read_as_a_checkbox_and_nothing_else(make_user) -> None:
    user = make_user()
    Profile.objects.create(user=user)
    client = signed_in(user)
    form = {"size": "8", "seats": "2", "clock": "P3D"}
    for value, rated in [("on", True), ("yes", True), ("false", False), ("", False)]:
        response = client.post("/new/cornmaze/", {**form, "rated": value})
        assert response.status_code == 302
        assert Game.objects.order_by("id").last().rated is rated  # type: ignore[union-attr]
    before = Game.objects.count()
    assert client.post("/new/cornmaze/", {**form, "rated": "a\x00b"}).status_code == 400
    assert Game.objects.count() == before


# --- vacation (issue 14) -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"return_on": "2000-01-01"}, "Choose a return date after today."),
        ({"return_on": "2999-01-01"}, "days of vacation, and you have 14 left."),
        ({"return_on": "２０９９-０１-０１"}, "Enter a valid date."),  # other scripts' digits
        ({"return_on": "2099-02-30"}, "Enter a valid date."),
        ({"return_on": "x" * 200}, "Enter a valid date."),
    ],
)
def test_a_bad_vacation_is_refused_with_a_message_and_changes_nothing(
    make_user, data: dict[str, str], message: str
) -> None:
    user = make_user()
    client = signed_in(user)
    before = list(Vacation.objects.values()), ClockEvent.objects.count()
    response = client.post(reverse("vacation_start"), data)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert (list(Vacation.objects.values()), ClockEvent.objects.count()) == before


def test_a_guest_asking_for_a_vacation_is_told_why_and_nothing_changes() -> None:
    client = signed_in(guest_create())
    for name in ("vacation_start", "vacation_end", "vacation_automatic"):
        response = client.post(reverse(name), {"return_on": "2099-01-01", "automatic": "on"})
        assert response.status_code == 400
        assert "Guests have no vacation days" in response.content.decode()
    assert not Vacation.objects.exists()


# --- the chat -----------------------------------------------------------------------------------


def chat_rows() -> tuple[int, int, int]:
    return ChatMessage.objects.count(), ChatMute.objects.count(), ChatReport.objects.count()


@pytest.mark.parametrize("htmx", [True, False])
def test_bad_chat_input_gets_a_sentence_and_changes_nothing(make_cornmaze, htmx: bool) -> None:
    game = make_cornmaze()
    player, other = seat_user(game, 0), seat_user(game, 1)
    chat.chat_post(game_id=game.pk, user=player, text="mine")
    chat.chat_post(game_id=game.pk, user=other, text="theirs")
    mine = ChatMessage.objects.get(text="mine").pk
    extra = HTMX if htmx else {}
    cases: list[tuple[Client, str, int, dict[str, str], str]] = [
        (signed_in(player), "game_chat_post", game.pk, {"text": ""}, "Write a message first."),
        (signed_in(player), "game_chat_post", game.pk, {}, "Write a message first."),
        (
            signed_in(player),
            "game_chat_post",
            game.pk,
            {"text": "\u200b\x01 "},
            "Write a message first.",
        ),
        (
            signed_in(player),
            "game_chat_post",
            game.pk,
            {"text": "y" * 501},
            "A message can be at most 500 characters; yours has 501.",
        ),
        (Client(), "game_chat_post", game.pk, {"text": "hi"}, "Sign in, or join a game as a guest"),
        (
            signed_in(player),
            "game_chat_report",
            game.pk,
            {"message": str(mine)},
            "You cannot report your own message.",
        ),
        (
            signed_in(player),
            "game_chat_mute",
            game.pk,
            {"message": str(mine)},
            "You cannot mute yourself.",
        ),
        (
            signed_in(player),
            "game_chat_mute",
            game.pk,
            {"message": "²"},
            "That message is not in this chat.",
        ),
        (
            signed_in(player),
            "game_chat_unmute",
            game.pk,
            {"person": str(other.pk)},
            "You have not muted that person.",
        ),
    ]
    before = chat_rows()
    for client, name, game_id, data, sentence in cases:
        response = client.post(reverse(name, args=[game_id]), data, **extra)
        assert response.status_code == 409, (name, data)
        assert sentence in response.content.decode(), (name, data)
    assert chat_rows() == before
    # A game that is not there.
    response = signed_in(player).post(
        reverse("game_chat_post", args=[game.pk + 999]), {"text": "hi"}, **extra
    )
    assert response.status_code in (404, 409)
    assert chat_rows() == before
