"""The archive: finished and aborted games, newest first, filters that combine, keyset pages,
htmx partials and plain GET, a fixed number of queries, the Atom feed."""

from __future__ import annotations

import hashlib
import itertools
import random
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from urllib.parse import parse_qs, urlparse

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from games.archive import reads, results
from games.engines import cornmaze
from games.models import Game, Move, Seat
from games.play import challenges, core
from tests.conftest import seat_user, to_move

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}
ATOM = "{http://www.w3.org/2005/Atom}"
T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
_seeds = itertools.count(1)


def bulk_finished(
    n: int,
    seats: Sequence[User | str],
    *,
    kind: str = "cornmaze",
    clock: str = "P3D",
    winner: int | None = 0,
    reason: str = "exit",
    status: str = "finished",
    at: datetime = T0,
    step: timedelta = timedelta(minutes=1),
    ply: int = 12,
    timed_out: int | None = None,
) -> list[Game]:
    """`n` games over, made in bulk (not played): `seats` are users or bot levels; the first
    finished at `at`, each next one `step` earlier. `winner` is the seat in first place; seat
    `timed_out` ran out of time at the last move. Stored as services.game_end would: the seats'
    copy of finished_at, and the players' results."""
    games = []
    for i in range(n):
        seed = next(_seeds).to_bytes(32, "big")
        games.append(
            Game(
                kind=kind,
                options={"size": 8},
                clock=clock,
                status=status,
                seed=seed,
                seed_sha256=hashlib.sha256(seed).hexdigest(),
                ply=ply,
                result_reason=reason if status == "finished" else "aborted",
                started_at=at - step * i - timedelta(days=1),
                finished_at=at - step * i,
            )
        )
    games = Game.objects.bulk_create(games)
    placed = [
        [
            Seat(
                game=g,
                index=index,
                user=who if isinstance(who, User) else None,
                bot=who if isinstance(who, str) else "",
                place=None
                if status != "finished" or winner is None
                else (1 if index == winner else 2),
                finished_at=g.finished_at,
            )
            for index, who in enumerate(seats)
        ]
        for g in games
    ]
    Seat.objects.bulk_create(seat for game_seats in placed for seat in game_seats)
    if timed_out is not None:
        Move.objects.bulk_create(
            Move(
                game=g,
                ply=g.ply,
                seat=timed_out,
                at=g.finished_at,
                move={"timeout": True},
                outcome={"dropped": timed_out},
            )
            for g in games
        )
    results.results_count(list(zip(games, placed, strict=True)))
    return games


def play_plan(
    state: dict, rng: random.Random, min_ply: int = 6, *, first_ply: int = 0
) -> list[list[int]]:
    """The moves of a Corn maze from `state` to its end: random legal moves that do not win
    until `min_ply` (where there is one), then the move that takes the marker furthest right,
    which always ends (the first legal move can go round in circles). A pure function of the
    state and `rng`: with a fixed seed (make_cornmaze(seed=...)) the game is the same every
    run, and so is its length."""
    moves: list[list[int]] = []
    for ply in range(first_ply, first_ply + 400):
        if cornmaze.result(state) is not None:
            return moves
        (seat,) = cornmaze.to_move(state)
        size = state["size"]
        options = [
            (cornmaze.apply(state, seat, {"shifts": shifts})[1]["end"][1], shifts)
            for shifts in cornmaze.legal_moves(state)
        ]
        if ply + 1 < min_ply:
            choices = [s for col, s in options if col != size - 1] or [s for _, s in options]
        else:
            best = max(col for col, _ in options)
            choices = [s for col, s in options if col == best]
        shifts = rng.choice(choices)
        moves.append(shifts)
        state = cornmaze.apply(state, seat, {"shifts": shifts})[0]
    raise AssertionError("the game did not end")


def play_out(game: Game, *, min_ply: int = 6, states: list | None = None) -> Game:
    """Play a Corn maze to its end through the service, as `play_plan` says (its moves drawn
    from the game's seed); appends each stored state to `states` if given. How long the game
    lasts depends on the seed: a test that needs a length fixes the seed and asserts it."""
    game.refresh_from_db()
    assert game.state is not None
    if states is not None:
        states.append(game.state)
    rng = random.Random(game.seed_sha256)
    for shifts in play_plan(game.state, rng, min_ply, first_ply=game.ply):
        core.move_submit(
            game_id=game.pk,
            user=seat_user(game, to_move(game)),
            number=game.ply,
            move={"shifts": shifts},
        )
        game.refresh_from_db()
        if states is not None:
            states.append(game.state)
    assert game.status == Game.Status.FINISHED
    return game


def ids(response) -> list[int]:
    return [int(m) for m in re.findall(r'data-game="(\d+)"', response.content.decode())]


def newest_first(games: Sequence[Game]) -> list[int]:
    return [g.pk for g in sorted(games, key=lambda g: (g.finished_at, g.pk), reverse=True)]


@pytest.fixture
def people(make_user):
    return {name: make_user(name) for name in ["ann", "bob", "cat", "Guest 2935"]}


def test_finished_and_aborted_games_newest_first_and_nothing_running(client, make_cornmaze, people):
    played = play_out(make_cornmaze(seats=2, size=6))
    running = make_cornmaze()
    old = bulk_finished(2, [people["ann"], people["bob"]], at=T0 - timedelta(days=30))
    aborted = bulk_finished(1, [people["ann"], people["cat"]], status="aborted", ply=0, at=T0)
    response = client.get("/archive/")
    assert response.status_code == 200
    assert ids(response) == [played.pk, aborted[0].pk, old[0].pk, old[1].pk]
    assert running.pk not in ids(response)
    page = response.content.decode()
    row = page.split(f'id="game-{played.pk}"')[1].split("</tr>")[0]
    assert "reached the right edge" in row and "1st" in row and "2nd" in row
    assert f">{played.ply}<" in row
    assert f'href="/games/{played.pk}/replay/"' in row
    finished = played.finished_at.isoformat()
    assert f'<time datetime="{finished}"' in row and "UTC</time>" in row
    aborted_row = page.split(f'id="game-{aborted[0].pk}"')[1].split("</tr>")[0]
    assert "aborted" in aborted_row and ">0<" in aborted_row


@pytest.mark.parametrize(
    ("reason", "words"),
    [
        # A Corn maze's; a Maze Race's is its exit. Said after anyone's place too ("you came
        # 3rd · ..."), so never as if it were their own doing.
        ("exit", ">the winner reached the right edge<"),
        ("damage", ">a robot broke down<"),
        ("timeout", "out of time"),
        ("resign", "resignation"),
    ],
)
def test_how_a_game_ended_in_words(client, people, reason, words):
    (game,) = bulk_finished(1, [people["ann"], people["bob"]], reason=reason)
    page = client.get("/archive/").content.decode()
    assert words in page.split(f'id="game-{game.pk}"')[1].split("</tr>")[0]


@pytest.fixture
def mixed(people):
    """A spread of games, each group with its own kind, clock, players, bots and time."""
    ann, bob, cat = people["ann"], people["bob"], people["cat"]
    day = timedelta(days=1)
    return {
        "ann_beats_bob": bulk_finished(3, [ann, bob], winner=0, at=T0),
        "bob_beats_ann": bulk_finished(2, [ann, bob], winner=1, at=T0 - day),
        "ann_beats_bot": bulk_finished(2, [ann, "simple"], winner=0, at=T0 - 2 * day),
        "bot_beats_cat": bulk_finished(2, ["strong", cat], winner=0, at=T0 - 3 * day),
        "cat_30d": bulk_finished(2, [cat, bob], clock="P30D", at=T0 - 4 * day),
        "robot": bulk_finished(2, [bob, cat], kind="robotmaze", reason="damage", at=T0 - 5 * day),
        "race": bulk_finished(
            2, [ann, cat, "flood"], kind="mazerace", clock="live", at=T0 - 6 * day
        ),
    }


def expect(mixed, *groups) -> list[int]:
    return newest_first([g for name in groups for g in mixed[name]])


@pytest.mark.parametrize(
    ("query", "groups"),
    [
        ({"game": "robotmaze"}, ["robot"]),
        ({"game": "mazerace"}, ["race"]),
        ({"player": "ann"}, ["ann_beats_bob", "bob_beats_ann", "ann_beats_bot", "race"]),
        ({"player": "ann", "result": "won"}, ["ann_beats_bob", "ann_beats_bot", "race"]),
        ({"player": "ann", "result": "lost"}, ["bob_beats_ann"]),
        ({"player": "cat", "result": "lost"}, ["bot_beats_cat", "robot", "race"]),
        ({"clock": "P30D"}, ["cat_30d"]),
        ({"clock": "live"}, ["race"]),
        ({"bots": "yes"}, ["ann_beats_bot", "bot_beats_cat", "race"]),
        ({"bots": "no"}, ["ann_beats_bob", "bob_beats_ann", "cat_30d", "robot"]),
        ({"from": "2026-05-29", "to": "2026-05-30"}, ["ann_beats_bot", "bot_beats_cat"]),
        ({"from": "2026-05-31"}, ["ann_beats_bob", "bob_beats_ann"]),
        ({"to": "2026-05-27"}, ["robot", "race"]),
        # The first and the last day a date picker offers: no bound at all.
        (
            {"from": "0001-01-01", "to": "9999-12-31"},
            ["ann_beats_bob", "bob_beats_ann", "ann_beats_bot", "bot_beats_cat", "cat_30d"]
            + ["robot", "race"],
        ),
        # Combined.
        ({"player": "cat", "bots": "yes"}, ["bot_beats_cat", "race"]),
        ({"player": "cat", "game": "cornmaze", "bots": "no"}, ["cat_30d"]),
        ({"player": "ann", "result": "won", "bots": "no", "game": "cornmaze"}, ["ann_beats_bob"]),
        (
            {"game": "cornmaze", "clock": "P3D", "from": "2026-05-30", "bots": "yes"},
            ["ann_beats_bot"],
        ),
        ({"player": "bob", "game": "mazerace"}, []),
        # A bot by its name as the games show it (and as people type it); won or lost by it.
        ({"player": "Bot (strong)"}, ["bot_beats_cat"]),
        ({"player": "bot (simple)", "result": "lost"}, ["ann_beats_bot"]),
        ({"player": "BOT(flood)", "result": "won"}, []),
        ({"player": "Bot (flood)", "game": "mazerace", "result": "lost"}, ["race"]),
    ],
)
def test_filters_alone_and_combined(client, mixed, query, groups):
    response = client.get("/archive/", query)
    assert response.status_code == 200
    assert ids(response) == expect(mixed, *groups)
    if not groups:
        assert "No finished game matches these filters" in response.content.decode()


def test_a_guest_is_a_player_to_filter_by(client, people):
    guest = people["Guest 2935"]
    games = bulk_finished(2, [guest, people["ann"]], winner=1)
    bulk_finished(2, [people["bob"], people["ann"]])
    response = client.get("/archive/?player=Guest+2935&result=lost")
    assert ids(response) == newest_first(games)
    assert 'href="/players/Guest%202935/"' in response.content.decode()


def test_a_bot_is_a_player_to_filter_by(client, people, make_cornmaze):
    """A bot's games are found by its name as the games show it, in any case and spacing: those
    over with a seat of its level, newest first, paged, each listed once; won or lost by it."""
    ann, bob = people["ann"], people["bob"]
    won = bulk_finished(28, ["strong", ann], winner=0, at=T0)
    lost = bulk_finished(2, [bob, "strong"], winner=0, at=T0 - timedelta(days=1))
    # Bots alone, one of each place: won by the bot and lost by it too.
    selfplay = bulk_finished(1, ["strong", "strong"], winner=1, at=T0 - timedelta(days=2))
    bulk_finished(3, [ann, "simple"], at=T0 + timedelta(hours=1))
    bulk_finished(3, [ann, bob], at=T0 + timedelta(hours=2))
    running = make_cornmaze(seats=2, bots=["strong"])

    for typed in ["Bot (strong)", "bot (strong)", "BOT(Strong)", "  bot ( strong ) "]:
        response = client.get("/archive/", {"player": typed})
        assert response.status_code == 200
        assert ids(response) == newest_first(won + lost + selfplay)[: reads.PAGE_SIZE]
    assert running.pk not in ids(response)
    seen, urls = walk(client, "/archive/?player=bot+(strong)", "next")
    assert seen == newest_first(won + lost + selfplay)
    # The pages after the first name the bot as the site writes it.
    assert parse_qs(urlparse(urls[1]).query)["player"] == ["Bot (strong)"]
    won_by_it = ids(client.get("/archive/", {"player": "Bot (strong)", "result": "won"}))
    assert won_by_it == newest_first(won + selfplay)[: reads.PAGE_SIZE]
    lost_by_it = ids(client.get("/archive/", {"player": "bot (strong)", "result": "lost"}))
    assert lost_by_it == newest_first(lost + selfplay)
    # A bot has no player page: its seat is a name, not a link.
    page = response.content.decode()
    assert '<span class="bot-name">Bot (strong)</span>' in page
    assert 'href="/players/Bot' not in page
    assert client.get("/players/Bot%20(strong)/").status_code == 404


def test_a_bot_is_found_in_a_game_called_off_before_it_started(client, people):
    ann = people["ann"]
    game = core.game_create(
        kind="cornmaze",
        creator=ann,
        options={"size": 8},
        clock_choice="P3D",
        seats=[core.SeatPlan(), core.SeatPlan(bot="strong"), core.SeatPlan()],
    )
    challenges.game_withdraw(game_id=game.pk, user=ann)
    assert ids(client.get("/archive/", {"player": "Bot (strong)"})) == [game.pk]


def test_a_bot_of_no_level_is_refused_and_filters_nothing(client, mixed):
    everything = expect(mixed, *mixed)
    for url in ("/archive/", "/archive/feed/"):
        response = client.get(url, {"player": "bot (medium)", "result": "won"})
        if url == "/archive/feed/":  # refused, saying why: never every game under its link
            assert (response.status_code, response["Content-Type"]) == (
                400,
                "text/plain; charset=utf-8",
            )
            assert response.content.decode() == (
                "This feed's filters cannot be read, so it lists nothing:\n"
                "Player: There is no bot named “bot (medium)”: the bots are Bot (flood), "
                "Bot (simple), Bot (strong) and Bot (wall).\n"
            )
            continue
        assert response.status_code == 200
        page = response.content.decode()
        assert (
            "There is no bot named “bot (medium)”: the bots are Bot (flood), Bot (simple), "
            "Bot (strong) and Bot (wall)." in page
        )
        # Its error says why; neither "no player" nor "choose a player" is said besides.
        assert "There is no player named" not in page
        assert "Choose a player" not in page
        assert ids(response) == everything
        # Nor do the page's links carry it on (nor the result it left without a player).
        assert 'href="/archive/feed/"' in page


def test_the_archive_feed_lists_a_bots_games_and_a_bot_has_no_feed_of_its_own(client, mixed):
    feed = ET.fromstring(client.get("/archive/feed/", {"player": "bot (strong)"}).content)
    entries = feed.findall(f"{ATOM}entry")
    assert [int(e.find(f"{ATOM}link").get("href").split("/")[-3]) for e in entries] == (
        expect(mixed, "bot_beats_cat")
    )
    self_link = next(li for li in feed.findall(f"{ATOM}link") if li.get("rel") == "self")
    assert "player=Bot+%28strong%29" in self_link.get("href")
    # The player feed is a player page's; a bot has none.
    assert client.get("/players/Bot%20(strong)/feed/").status_code == 404


def test_bad_filters_are_dropped_with_a_message_not_an_error_page(client, mixed):
    response = client.get(
        "/archive/", {"game": "chess", "result": "won", "from": "2026-13-40", "clock": "P3D"}
    )
    assert response.status_code == 200
    page = response.content.decode()
    assert "Select a valid choice" in page
    assert "Choose a player to see the games they won or lost." in page
    assert "Enter a day as year-month-day, such as 2026-12-04." in page
    assert "The games below are listed without those filters." in page
    assert ids(response) == expect(
        mixed, "ann_beats_bob", "bob_beats_ann", "ann_beats_bot", "bot_beats_cat", "robot"
    )
    response = client.get("/archive/", {"player": "nobody"})
    assert ids(response) == []
    assert "There is no player named “nobody”." in response.content.decode()
    # A day written as some countries write it is not guessed at: 04/12/2026 is not read.
    response = client.get("/archive/", {"from": "04/12/2026"})
    assert "Enter a day as year-month-day, such as 2026-12-04." in response.content.decode()
    assert ids(response) == ids(client.get("/archive/"))
    response = client.get("/archive/", {"from": "2026-06-02", "to": "2026-06-01"})
    assert "The end date is before the start date." in response.content.decode()
    assert "The games below are listed without that filter." in response.content.decode()
    for url in ("/archive/", "/archive/feed/", "/players/ann/", "/players/ann/feed/"):
        assert client.get(url, {"from": "0001-01-01", "to": "9999-12-31"}).status_code == 200


def walk(client, url: str, rel: str) -> tuple[list[int], list[str]]:
    """Follow the `rel` links from `url`; the ids of every page in order, and the URLs."""
    seen: list[int] = []
    urls = [url]
    for _ in range(100):
        response = client.get(url)
        assert response.status_code == 200
        seen.extend(ids(response))
        link = re.search(rf'href="([^"]+)"[^>]*rel="{rel}"', response.content.decode())
        if link is None:
            return seen, urls
        url = link.group(1).replace("&amp;", "&")
        urls.append(url)
    raise AssertionError("too many pages")


def test_keyset_pages_have_no_gaps_or_repeats_even_with_equal_finish_times(client, people):
    # 70 games in groups of 7 that finished in the same microsecond: ids settle the order.
    games = []
    for k in range(10):
        games += bulk_finished(
            7, [people["ann"], people["bob"]], at=T0 - timedelta(hours=k), step=timedelta(0)
        )
    seen, urls = walk(client, "/archive/", "next")
    assert seen == newest_first(games)
    assert len(urls) == 3  # 25 + 25 + 20
    assert all("after=" in u for u in urls[1:])
    assert all("offset" not in u and "page=" not in u for u in urls)
    # A game that finishes while someone reads page 2 moves nothing: the cursor is a place.
    bulk_finished(1, [people["ann"], people["bob"]], at=T0 + timedelta(hours=1))
    again = ids(client.get(urls[1]))
    assert again == newest_first(games)[25:50]
    # And back: "Newer" from the last page walks back to the newest one.
    back, _ = walk(client, urls[2], "prev")
    assert back[:20] == newest_first(games)[50:]
    assert back[20:45] == newest_first(games)[25:50]


def test_keyset_pages_keep_the_filters(client, people):
    ann_games = bulk_finished(30, [people["ann"], people["bob"]], winner=0)
    bulk_finished(30, [people["cat"], people["bob"]], step=timedelta(seconds=7))
    seen, urls = walk(client, "/archive/?player=ann&result=won", "next")
    assert seen == newest_first(ann_games)
    assert parse_qs(urlparse(urls[1]).query)["player"] == ["ann"]


def links_of(response) -> dict[str, str]:
    """The page's pager links by their rel."""
    found = re.findall(r'href="([^"]+)"[^>]*rel="(\w+)"', response.content.decode())
    return {rel: url.replace("&amp;", "&") for url, rel in found}


@pytest.mark.parametrize("base", ["/archive/", "/archive/?player=ann", "/players/ann/"])
def test_a_cursor_made_by_hand_never_leads_to_an_empty_page(client, people, base):
    """A cursor is a place in the list, and a hand-made one can stand past either end: its page
    shows what is there, and every Newer or Older link on it leads to games."""
    games = bulk_finished(30, [people["ann"], people["bob"]])
    order = newest_first(games)
    newest, oldest = (
        max(games, key=lambda g: g.finished_at),
        min(games, key=lambda g: g.finished_at),
    )
    ahead = reads.Cursor(at=datetime(2500, 1, 1, tzinfo=UTC), id=1).token
    sep = "&" if "?" in base else "?"
    for query in [
        "before=0.0",
        "after=0.0",
        f"before={ahead}",
        f"after={ahead}",
        f"before={reads.Cursor(at=newest.finished_at, id=newest.pk).token}",
        f"after={reads.Cursor(at=oldest.finished_at, id=oldest.pk).token}",
    ]:
        response = client.get(f"{base}{sep}{query}")
        assert response.status_code == 200
        links = links_of(response)
        assert "first" in links, query  # the newest page is always a click away
        for rel in ("prev", "next"):
            if rel in links:
                assert ids(client.get(links[rel])), f"{query}: {rel} is an empty page"

    # Before the beginning of time: the oldest games, newer ones a click away, nothing older.
    response = client.get(f"{base}{sep}before=0.0")
    assert ids(response) == order[-25:]
    assert "next" not in links_of(response)
    assert ids(client.get(links_of(response)["prev"])) == order[:5]


def test_reversed_dates_are_refused_and_filter_nothing(client, people):
    """A range that ends before it starts is reported and left out whole: neither of its dates
    filters the list. A feed, which has nowhere to say so, refuses it with a 400 that does."""
    games = bulk_finished(6, [people["ann"], people["bob"]], step=timedelta(days=1))
    reversed_range = {"from": "2026-05-31", "to": "2026-05-29"}  # T0 is 1 June
    for url in ("/archive/", "/players/ann/"):
        response = client.get(url, reversed_range)
        assert response.status_code == 200
        assert "The end date is before the start date." in response.content.decode()
        assert ids(response) == newest_first(games)
        # The dates stay in the form, to be put right.
        assert 'value="2026-05-31"' in response.content.decode()
    for feed in ("/archive/feed/", "/players/ann/feed/"):
        response = client.get(feed, reversed_range)
        assert response.status_code == 400
        assert "To (UTC): The end date is before the start date." in response.content.decode()
        assert b"<entry" not in response.content
    # Unreadable values too, and a result without a player in the archive's feed; the same
    # filters read, the feeds list the games.
    for feed, query in [
        ("/players/ann/feed/", {"clock": "P9D"}),
        ("/archive/feed/", {"from": "yesterday"}),
        ("/archive/feed/", {"result": "won"}),
    ]:
        assert client.get(feed, query).status_code == 400
    won = ET.fromstring(client.get("/players/ann/feed/", {"result": "won"}).content)
    assert len(won.findall(f"{ATOM}entry")) == len(games)
    entries = ET.fromstring(client.get("/archive/feed/", {"from": "2026-05-01"}).content)
    assert len(entries.findall(f"{ATOM}entry")) == len(games)


def test_cursor_tokens_round_trip_to_the_microsecond():
    at = datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=UTC)
    cursor = reads.Cursor(at=at, id=42)
    assert reads.Cursor.parse(cursor.token) == cursor
    for bad in ["", "x", "12", "1.x", "99999999999999999999999.1"]:
        assert reads.Cursor.parse(bad) is None


def test_htmx_gets_the_listing_only_and_a_plain_get_the_page(client, mixed):
    full = client.get("/archive/?game=robotmaze")
    partial = client.get("/archive/?game=robotmaze", **HTMX)
    assert "<html" in full.content.decode() and "<html" not in partial.content.decode()
    assert partial.content.decode().lstrip().startswith('<section id="listing"')
    assert ids(partial) == ids(full) == expect(mixed, "robot")
    assert "HX-Request" in full["Vary"] and "HX-Request" in partial["Vary"]
    # The back button after htmx lost its cache asks for the whole page.
    restore = client.get("/archive/?game=robotmaze", HTTP_HX_HISTORY_RESTORE_REQUEST="true", **HTMX)
    assert "<html" in restore.content.decode()


def test_the_filters_are_a_plain_get_form_with_htmx_on_top(client, mixed):
    page = client.get("/archive/?player=ann&bots=yes").content.decode()
    assert "{#" not in page and "{%" not in page and "{{" not in page
    form = page.split('<form id="filters"')[1].split("</form>")[0]
    assert 'method="get" action="/archive/"' in form
    assert 'hx-get="/archive/"' in form and 'hx-push-url="true"' in form
    for name in ["game", "player", "result", "clock", "bots", "from", "to"]:
        assert f'name="{name}"' in form
    assert 'value="ann"' in form and '<option value="yes" selected>' in form
    assert '<button type="submit">Filter</button>' in form
    feed = re.search(r'href="(/archive/feed/[^"]*)"', page)
    assert feed and "player=ann" in feed.group(1)


def count_queries(client, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200
    return len(queries)


ARCHIVE_URLS = [
    "/archive/",
    "/archive/?player=ann&game=cornmaze&result=won&bots=no",
    "/archive/?clock=P3D&from=2026-01-01&to=2026-12-31&bots=yes",
    "/archive/?player=bot+(simple)&game=cornmaze&result=lost",
]


@pytest.mark.parametrize("url", ARCHIVE_URLS)
def test_the_archive_runs_a_fixed_number_of_queries(client, people, django_assert_num_queries, url):
    ann, bob = people["ann"], people["bob"]
    bulk_finished(5, [ann, bob])
    bulk_finished(5, [bob, "simple"])
    with django_assert_num_queries(1):  # the games with their seats
        small = client.get(url)
    assert ids(small)
    bulk_finished(500, [ann, bob], at=T0 - timedelta(days=1))
    bulk_finished(490, [bob, "simple", ann], at=T0 - timedelta(days=2))
    assert Game.objects.count() == 1000
    with django_assert_num_queries(1):  # the games with their seats
        big = client.get(url)
    assert len(ids(big)) == reads.PAGE_SIZE
    older = re.search(r'href="([^"]+)"[^>]*rel="next"', big.content.decode())
    assert older is not None
    with django_assert_num_queries(1):  # the games with their seats
        client.get(older.group(1).replace("&amp;", "&"), **HTMX)


def test_the_archive_feed_is_atom_with_an_entry_per_game(client, mixed):
    response = client.get("/archive/feed/")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/atom+xml")
    feed = ET.fromstring(response.content)
    assert feed.tag == f"{ATOM}feed"
    for name in ["id", "title", "updated", "author"]:
        assert feed.find(f"{ATOM}{name}") is not None
    entries = feed.findall(f"{ATOM}entry")
    assert len(entries) == sum(len(g) for g in mixed.values())
    first = entries[0]
    newest = expect(mixed, *mixed)[0]
    assert first.find(f"{ATOM}link").get("href").endswith(f"/games/{newest}/replay/")
    assert first.find(f"{ATOM}id").text.startswith("http")
    datetime.fromisoformat(first.find(f"{ATOM}updated").text)
    assert "ann vs bob" in first.find(f"{ATOM}title").text
    assert "reached the right edge" in first.find(f"{ATOM}summary").text
    # With the archive's filters.
    robots = ET.fromstring(client.get("/archive/feed/?game=robotmaze").content)
    assert len(robots.findall(f"{ATOM}entry")) == 2
    # A player's name in other capitals: the feed under the name as written (it was empty).
    moved = client.get("/archive/feed/?player=CAT&game=robotmaze")
    assert (moved.status_code, moved["Location"]) == (
        301,
        "/archive/feed/?player=cat&game=robotmaze",
    )
    cats = ET.fromstring(client.get(moved["Location"]).content)
    assert len(cats.findall(f"{ATOM}entry")) == 2
    assert client.get("/archive/feed/?player=nobody-here").status_code == 200


@pytest.mark.django_db
def test_the_date_filters_say_their_days_are_utc(client) -> None:
    """The list shows each viewer's own times; the filter's days are UTC days, and say so."""
    page = client.get("/archive/").content.decode()
    assert '<span>From (UTC)</span> <input type="date" name="from"' in page
    assert '<span>To (UTC)</span> <input type="date" name="to"' in page
