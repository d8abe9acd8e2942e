"""The lobby's HTML, pinned: the lists of open games, games in progress, one's own games,
finished games and challenges, drawn for an anonymous visitor, a guest, a player with many
games and a challenged player, over more games than the lists show, compared with the pages
kept in tests/lobby_html/. The lobby is read and drawn without the template engine's or the
ORM's help for speed (pages/rows.py, archive/selectors.py); this test says that it still shows
what it showed.

Game ids, cursors and the CSRF token differ from run to run: each game id is written as its
place among the test's games (G1, G2...), the token as CSRF. After a change meant to alter the
lobby, write the pages again with LOBBY_HTML_WRITE=1 and read the difference."""

from __future__ import annotations

import hashlib
import itertools
import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import time_machine
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from games.accounts.guests import guest_create
from games.models import Game
from games.play import challenges, core, vacations
from tests.conftest import play_to_the_end

pytestmark = pytest.mark.django_db

PAGES = Path(__file__).parent / "lobby_html"
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
NOW = T0 + timedelta(days=1, hours=3, minutes=7, seconds=11)


class Lobby:
    """Games made one minute apart, so that every list's order is fixed."""

    def __init__(self) -> None:
        self.minute = 0

    def at(self) -> Any:
        self.minute += 1
        return time_machine.travel(T0 + timedelta(minutes=self.minute), tick=False)

    def game(
        self,
        kind: str,
        creator: User,
        joiners: tuple[User, ...] = (),
        *,
        bots: tuple[str, ...] = (),
        open_seats: int = 0,
        clock: str = "P3D",
        reserved: tuple[str, ...] = (),
        invite: bool = False,
    ) -> Game:
        options: dict[str, Any] = {
            "cornmaze": {"size": 8},
            "robotmaze": {},
            "mazerace": {"mode": "live" if clock == "live" else "slow"},
        }[kind]
        seats = 1 + len(joiners) + open_seats + len(reserved)
        plans = [core.SeatPlan() for _ in range(seats)] + [core.SeatPlan(bot=b) for b in bots]
        with self.at(), core.bot_tasks_paused():
            game = core.game_create(
                kind=kind,
                creator=creator,
                options=options,
                clock_choice=clock,
                seats=plans,
                reserved=challenges.challenged_players(names=list(reserved), creator=creator),
                invite=invite,
            )
            for user in joiners:
                core.game_join(game_id=game.pk, user=user)
        return game


def players() -> dict[str, User]:
    names = ["ann", "bob", "cat", "dan", "eve"]
    users = {n: User.objects.create_user(username=n, password="a-long-passphrase") for n in names}
    guest = guest_create()
    User.objects.filter(pk=guest.pk).update(username="Guest Fox")
    guest.refresh_from_db()
    users["guest"] = guest
    return users


def made(users: dict[str, User]) -> None:
    ann, bob, cat, dan, eve, guest = (
        users[n] for n in ("ann", "bob", "cat", "dan", "eve", "guest")
    )
    lobby = Lobby()
    # Finished games: one's own finished list.
    for _ in range(2):
        game = lobby.game("cornmaze", ann, (bob,))
        with lobby.at(), core.bot_tasks_paused():
            play_to_the_end(game)
    # More running games than the lobby lists (50) and than a page of one's own (20).
    pairs = [(ann, bob), (cat, dan), (ann, eve), (bob, cat), (dan, ann), (eve, bob)]
    for i in range(54):
        creator, other = pairs[i % len(pairs)]
        lobby.game("cornmaze", creator, (other,), clock="P30D" if i % 5 == 0 else "P3D")
    lobby.game("cornmaze", ann, (), bots=("simple", "strong"))
    lobby.game("robotmaze", ann, (bob,))
    lobby.game("robotmaze", cat, (), bots=("simple",))
    lobby.game("mazerace", ann, (), bots=("wall",), clock="live")
    lobby.game("mazerace", bob, (ann,), clock="P30D")
    lobby.game("cornmaze", guest, (ann,))
    lobby.game("cornmaze", eve, (guest,), bots=("simple",))
    # Open games: an open seat, a bot and an open seat, a challenge with a seat for anyone,
    # challenges alone (not listed), a private game (not listed), each kind.
    lobby.game("cornmaze", dan, open_seats=1)
    lobby.game("cornmaze", ann, open_seats=1, bots=("simple",))
    lobby.game("cornmaze", cat, open_seats=1, reserved=("bob",))
    lobby.game("cornmaze", ann, reserved=("bob",))
    lobby.game("robotmaze", eve, reserved=("bob",))
    lobby.game("cornmaze", dan, open_seats=1, invite=True)
    lobby.game("robotmaze", guest, open_seats=1)
    lobby.game("mazerace", cat, open_seats=2, clock="P3D")
    lobby.game("mazerace", eve, open_seats=1, clock="live")
    # A player on vacation, shown beside their name.
    with time_machine.travel(NOW - timedelta(hours=1), tick=False):
        vacations.vacation_start(user=cat, until=NOW + timedelta(days=4))


def normalized(html: str, ids: dict[int, int]) -> str:
    def game(match: re.Match[str]) -> str:
        return f"{match[1]}G{ids[int(match[2])]}"

    html = re.sub(r'(name="csrfmiddlewaretoken" value=")[^"]+', r"\1CSRF", html)
    html = re.sub(r"(/games/|#)(\d+)\b", game, html)
    return re.sub(r"(done_(?:after|before)=\d+\.)(\d+)", game, html)


def content(response: Any) -> str:
    """The lobby's own part of the page, from its heading to the end of its last list."""
    assert response.status_code == 200
    html: str = response.content.decode()
    start = html.index("<h1>Maze games")
    end = html.index("</section>", html.index('<section id="active-games">')) + len("</section>")
    return html[start:end]


VIEWS = {
    "anonymous": (None, ""),
    "guest": ("guest", ""),
    "ann": ("ann", ""),
    "ann-page-2": ("ann", "?page=2"),
    "bob": ("bob", ""),
    "cat-on-vacation": ("cat", ""),
}


def test_the_lobby_shows_what_it_showed(monkeypatch: pytest.MonkeyPatch) -> None:
    # Who moves first is drawn from a game's seed: the same seeds every run.
    seeds = (hashlib.sha256(f"lobby {n}".encode()).digest() for n in itertools.count())
    monkeypatch.setattr(
        Game,
        "new_seed",
        staticmethod(lambda: (seed := next(seeds), hashlib.sha256(seed).hexdigest())),
    )
    users = players()
    made(users)
    ids = {pk: n for n, pk in enumerate(Game.objects.order_by("pk").values_list("pk", flat=True))}
    pages = {}
    with time_machine.travel(NOW, tick=False):
        for view, (name, query) in VIEWS.items():
            client = Client()
            if name is not None:
                client.force_login(users[name])
            pages[view] = normalized(content(client.get(reverse("lobby") + query)), ids)
    if os.environ.get("LOBBY_HTML_WRITE"):
        PAGES.mkdir(exist_ok=True)
        for view, html in pages.items():
            (PAGES / f"{view}.html").write_text(html)
    for view, html in pages.items():
        assert html == (PAGES / f"{view}.html").read_text(), view
