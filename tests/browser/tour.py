"""A tour of every page of the site, as each role sees it: the games of each kind waiting for
players, running (with a move being prepared) and finished, their replays, the archive, a
player's page, the rules, the account pages and the errors. The axe test walks it
(test_accessibility_browser.py) and so does the screenshot tool (screenshots.py)."""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field

from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from playwright.sync_api import Browser, BrowserContext

from games.accounts import calendar
from games.accounts.guests import guest_create
from games.archive.ratings import ratings_recompute
from games.bots import get_bot
from games.chat import service as chat
from games.engines import cornmaze, robotmaze
from games.mail import preferences
from games.models import ChatMessage, Game
from games.play import challenges, core, vacations
from tests.test_archive import bulk_finished
from tests.test_mazerace_site import step, way_out
from tests.test_robotmaze_site import WAREHOUSES
from tests.worker_fixtures import make_player

ROLES = ("anonymous", "guest", "player", "spectator")
# Fixed seeds: the games have the same boards and lengths every run.
SEED = hashlib.sha256(b"tour").digest()


@dataclass
class Stop:
    role: str
    name: str  # a file name for its screenshot
    path: str


@dataclass
class Tour:
    users: dict[str, User | None]
    games: dict[str, Game] = field(default_factory=dict)
    stops: list[Stop] = field(default_factory=list)
    # The session cookie of each signed-in role: drafts are kept in it.
    clients: dict[str, Client] = field(default_factory=dict)

    def context(self, browser: Browser, base_url: str, role: str, **options) -> BrowserContext:
        """A browser context signed in as `role` (none for the anonymous visitor)."""
        return signed_in(browser, base_url, self.clients.get(role), **options)


def signed_in(browser: Browser, base_url: str, client: Client | None, **options) -> BrowserContext:
    """A browser context with the session of a test client (signed out with None)."""
    context = browser.new_context(base_url=base_url, **options)
    if client is not None:
        cookie = client.cookies[settings.SESSION_COOKIE_NAME]
        context.add_cookies([{"name": cookie.key, "value": cookie.value, "url": base_url}])
    return context


def client_for(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _seed(game: Game, seed: bytes) -> None:
    Game.objects.filter(pk=game.pk).update(seed=seed, seed_sha256=hashlib.sha256(seed).hexdigest())


def _create(
    kind: str, creator: User, seats: int = 2, clock: str = "P3D", clock_options=None
) -> Game:
    options = {"mode": "live" if clock == "live" else "slow"} if kind == "mazerace" else {}
    with core.bot_tasks_paused():
        game = core.game_create(
            kind=kind,
            creator=creator,
            options=options,
            clock_choice=clock,
            seats=[core.SeatPlan() for _ in range(seats)],
            clock_options=clock_options,
        )
    _seed(game, SEED)
    return game


def _join(game: Game, *users: User) -> Game:
    with core.bot_tasks_paused():
        for user in users:
            core.game_join(game_id=game.pk, user=user)
    game.refresh_from_db()
    return game


def _user(game: Game, seat: int) -> User:
    user = game.seats.get(index=seat).user
    assert user is not None
    return user


def _cornmaze_to_the_end(game: Game) -> Game:
    rng = random.Random(7)
    while True:
        game.refresh_from_db()
        if game.status != Game.Status.ACTIVE:
            return game
        (seat,) = cornmaze.to_move(game.state)
        move = get_bot("cornmaze", "simple")(cornmaze.view(game.state, seat), seat, rng)
        core.move_submit(game_id=game.pk, user=_user(game, seat), number=game.ply, move=move)


def _robot_set_up(game: Game) -> None:
    for seat in (0, 1):
        game.refresh_from_db()
        core.move_submit(
            game_id=game.pk,
            user=_user(game, seat),
            number=core.move_number(game, seat),
            move={"warehouse": WAREHOUSES[seat]},
        )
    game.refresh_from_db()


def _robot_run(game: Game, program: str, runs: int) -> None:
    game.refresh_from_db()
    (seat,) = robotmaze.to_move(game.state)
    core.move_submit(
        game_id=game.pk,
        user=_user(game, seat),
        number=game.ply,
        move={"program": program, "runs": runs},
    )


def build_tour() -> Tour:
    """Every page of the site for every role, with the games they show."""
    player = make_player("ariadne")
    rival = make_player("theseus")
    spectator = make_player("minos")
    guest = guest_create()
    tour = Tour(users={"anonymous": None, "guest": guest, "player": player, "spectator": spectator})
    for role in ("guest", "player", "spectator"):
        user = tour.users[role]
        assert user is not None
        tour.clients[role] = client_for(user)

    # Corn maze: waiting, running (the guest's and the player's turn), finished.
    corn_open = _create("cornmaze", rival, seats=3)
    corn_running = _join(_create("cornmaze", player, seats=2), rival)
    if cornmaze.to_move(corn_running.state) != [0]:
        core.move_submit(
            game_id=corn_running.pk,
            user=rival,
            number=corn_running.ply,
            move={"shifts": cornmaze.legal_moves(corn_running.state)[0]},
        )
        corn_running.refresh_from_db()
    first, second = cornmaze.legal_moves(corn_running.state)[-1]
    letters = cornmaze.column_letter
    tour.clients["player"].post(
        reverse("game_draft", args=[corn_running.pk]),
        {"first": letters(first), "second": letters(second)},
    )
    corn_guest = _join(_create("cornmaze", guest, seats=3), rival, spectator)
    corn_done = _cornmaze_to_the_end(_join(_create("cornmaze", player, seats=2), rival))

    # Robot Maze Race: waiting, setting up, playing (a program drafted), finished.
    robot_open = _create("robotmaze", rival)
    robot_setup = _join(_create("robotmaze", player), rival)
    tour.clients["player"].post(reverse("game_draft", args=[robot_setup.pk]), {"action": "random"})
    robot_play = _join(_create("robotmaze", player), rival)
    _robot_set_up(robot_play)
    _robot_run(robot_play, "RRDD", 2)
    _robot_run(robot_play, "DR", 3)
    robot_play.refresh_from_db()
    if robotmaze.to_move(robot_play.state) != [0]:
        _robot_run(robot_play, "D", 1)
    tour.clients["player"].post(
        reverse("game_draft", args=[robot_play.pk]),
        {"command_1": "R", "command_2": "D", "runs": "3"},
    )
    robot_done = _join(_create("robotmaze", player), rival)
    _robot_set_up(robot_done)
    robot_done.refresh_from_db()
    if robotmaze.to_move(robot_done.state) != [0]:
        _robot_run(robot_done, "R", 1)
    _robot_run(robot_done, "UUUU", 4)
    _robot_run(robot_done, "R", 1)
    _robot_run(robot_done, "ULUL", 4)

    # Maze Race: a live race waiting for Ready, a slow race running, a slow race finished.
    race_open = _create("mazerace", rival)
    race_ready = _join(_create("mazerace", rival, clock="live"), player)
    race_slow = _join(_create("mazerace", rival), player)
    for _ in range(3):
        step(race_slow, 1, way_out(race_slow, 1)[0])
    race_done = _join(_create("mazerace", rival), player)
    for direction in way_out(race_done, 1):
        step(race_done, 1, direction)
    core.game_resign(game_id=race_done.pk, user=_user(race_done, 0))

    # A time bank and weekends off: the rival gave the player a day, the player moved, and the
    # player may give the rival one (issue 14).
    corn_banked = _join(
        _create("cornmaze", player, clock_options={"bank_days": 7, "weekends_off": True}), rival
    )
    if cornmaze.to_move(corn_banked.state) != [0]:
        core.move_submit(
            game_id=corn_banked.pk,
            user=rival,
            number=corn_banked.ply,
            move={"shifts": cornmaze.legal_moves(corn_banked.state)[0]},
        )
        corn_banked.refresh_from_db()
    core.time_give(game_id=corn_banked.pk, user=rival, seat_index=0)
    core.move_submit(
        game_id=corn_banked.pk,
        user=player,
        number=corn_banked.ply,
        move={"shifts": cornmaze.legal_moves(corn_banked.state)[0]},
    )
    corn_banked.refresh_from_db()

    games = {
        "cornmaze-open": corn_open,
        "cornmaze-banked": corn_banked,
        "cornmaze-running": corn_running,
        "cornmaze-three": corn_guest,
        "cornmaze-finished": corn_done,
        "robotmaze-open": robot_open,
        "robotmaze-setup": robot_setup,
        "robotmaze-running": robot_play,
        "robotmaze-finished": robot_done,
        "mazerace-open": race_open,
        "mazerace-ready": race_ready,
        "mazerace-slow": race_slow,
        "mazerace-finished": race_done,
    }
    # Ratings: the finished games between registered players rated them as they ended; five
    # more Robot Maze Races, loaded and rated by a recompute, put both on that leaderboard.
    bulk_finished(5, [player, rival], kind="robotmaze", reason="damage", winner=0)
    ratings_recompute()

    # The rival is away (issue 14): every game of theirs shows "on vacation until ...".
    vacations.vacation_start(user=rival)

    # Chats: a running game's, where the player muted someone, and a finished game's, where
    # everyone reads both channels.
    for author, text in ((player, "Good luck!"), (rival, "You too."), (spectator, "A bold start.")):
        chat.chat_post(game_id=corn_running.pk, user=author, text=text)
    chat.chat_post(game_id=corn_running.pk, user=guest, text="Watching as a guest.")
    chat.chat_mute(
        game_id=corn_running.pk,
        user=player,
        message_id=ChatMessage.objects.get(author=rival, game=corn_running).pk,
    )
    for author, text in ((rival, "Well played."), (spectator, "What a finish!")):
        chat.chat_post(game_id=corn_done.pk, user=author, text=text)
    for game in games.values():
        game.refresh_from_db()
    assert corn_done.is_over and robot_done.is_over and race_done.is_over, "a game did not end"

    def stop(role: str, name: str, path: str) -> None:
        tour.stops.append(Stop(role, name, path))

    def game(name: str) -> str:
        return reverse("game", args=[games[name].pk])

    # The lobby and a player's page are each role's own. The pages that differ between roles
    # only in the header's account links are visited once, signed out, and a few signed in.
    for role in ROLES:
        stop(role, "lobby", reverse("lobby"))
        stop(role, "player", reverse("player", args=["ariadne"]))
    stop("anonymous", "archive", reverse("archive"))
    stop("anonymous", "record-verify", reverse("record_verify"))
    stop("anonymous", "leaderboard-cornmaze", reverse("leaderboard", args=["cornmaze"]))
    stop("player", "leaderboard-robotmaze", reverse("leaderboard", args=["robotmaze"]))
    for kind in ("cornmaze", "robotmaze", "mazerace"):
        stop("anonymous", f"rules-{kind}", reverse("rules", args=[kind]))
        stop("anonymous", f"new-{kind}", reverse("game_new", args=[kind]))
    for role in ("anonymous", "guest"):
        stop(role, "not-found", "/no/such/page/")
    stop("guest", "new-cornmaze", reverse("game_new", args=["cornmaze"]))
    # Every game as the player sees it: its own seats, and the games waiting for players,
    # which it may join. A spectator watches those running and finished, and so does an
    # anonymous visitor; the guest plays in a game of three.
    for name in games:
        stop("player", f"game-{name}", game(name))
        if not name.endswith("-open"):
            stop("spectator", f"game-{name}", game(name))
    for name in ("cornmaze-running", "mazerace-finished"):
        stop("anonymous", f"game-{name}", game(name))
    stop("guest", "game-cornmaze-three", game("cornmaze-three"))
    for name in ("cornmaze-finished", "robotmaze-finished", "mazerace-finished"):
        replay = reverse("game_replay", args=[games[name].pk])
        stop("anonymous", f"replay-{name}", replay + "?ply=2")
    stop("player", "resign-confirm", reverse("game_resign", args=[corn_running.pk]))
    # Accounts: the anonymous visitor's, the guest's, the registered player's.
    for name in ("login", "signup", "password_reset", "password_reset_done"):
        stop("anonymous", name, reverse(name))
    stop("anonymous", "guest-link-invalid", reverse("guest_return", args=["not-a-key"]))
    token = preferences.unsubscribe_token(user_id=player.pk, kind="your_turn")
    stop("anonymous", "unsubscribe", reverse("unsubscribe", args=[token]))
    # The player's account page shows a calendar link; the guest's offers to make one.
    calendar.calendar_link_new(user=player)
    for role in ("guest", "player"):
        stop(role, "account", reverse("account"))
        stop(role, "email-settings", reverse("email_settings"))
        stop(role, "logout", reverse("logout"))
        stop(role, "signup", reverse("signup"))
    stop("player", "password_change", reverse("password_change"))
    stop("player", "password_change_done", reverse("password_change_done"))
    # Challenges, invite links and rematches (issue 15): the rival challenges the player, who
    # has a private game of its own; a rematch of the finished Corn maze is offered. The lobby
    # and the finished game's page above show them too.
    plans = [core.SeatPlan(), core.SeatPlan()]
    challenged = core.game_create(
        kind="cornmaze",
        creator=rival,
        options={"size": 8},
        clock_choice="P3D",
        seats=plans,
        reserved=[player],
    )
    private = core.game_create(
        kind="cornmaze",
        creator=player,
        options={"size": 8},
        clock_choice="P3D",
        seats=plans,
        invite=True,
    )
    challenges.rematch_offer(game_id=corn_done.pk, user=_user(corn_done, 1))
    stop("player", "game-challenge", reverse("game", args=[challenged.pk]))
    stop("spectator", "game-challenge", reverse("game", args=[challenged.pk]))
    stop("player", "decline-confirm", reverse("game_decline", args=[challenged.pk]))
    stop("player", "game-private", reverse("game", args=[private.pk]))
    stop("player", "withdraw-confirm", reverse("game_withdraw", args=[private.pk]))
    # A game nobody has moved in yet, which its players may abort (the page that asks first).
    unmoved = _join(_create("cornmaze", rival, seats=2), player)
    stop("player", "abort-confirm", reverse("game_abort", args=[unmoved.pk]))
    invite = reverse("game_invite", args=[private.pk, private.invite_token])
    stop("guest", "game-invite", invite)
    stop("anonymous", "game-invite", invite)
    tour.games = games
    return tour
