"""Hostile input, everywhere, as everyone: every URL of the site (read from the URLconf, so that
a new one is fuzzed too), every form field the pages show, as every role (anonymous, a guest, a
registered player, a spectator with games of its own, and a player and a guest player of the
game), for every game kind running and finished. Values are random and hostile (other scripts'
digits, NUL, huge strings, repeated and missing fields, JSON and file bodies in place of a form).

The property: never a 500, and a request that is refused (4xx, or a redirect to sign in), or
any GET, changes nothing in the site's tables. The database is set up once per test; each
request runs in a savepoint that is rolled back, so every example starts from the same site.
A rate limit (429) counts as a refusal like any other."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from html.parser import HTMLParser
from typing import Any
from urllib.parse import quote

import hypothesis
import pytest
from django.apps import apps
from django.conf import settings as django_settings
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection, transaction
from django.http import HttpResponseBase
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from django.utils import timezone
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from games.accounts import calendar
from games.accounts.guests import guest_create
from games.chat import service as chat
from games.engines import ENGINES, mazerace, robotmaze
from games.models import ChatMute, Game, Profile
from games.play import core
from games.play.paces import race
from tests.test_robotmaze_site import WAREHOUSES

pytestmark = pytest.mark.django_db

ROLES = ("anonymous", "guest", "registered", "spectator", "player", "guest player")
# Values that broke, or might break, a parser or a query.
HOSTILE = [
    "",
    " ",
    "0",
    "1",
    "-1",
    "+1",
    "1_0",
    "0x1",
    "1e3",
    "²",
    "٣",
    "１",
    "9" * 40,
    "\x00",
    "a\x00b",
    "x" * 3000,
    "é" * 300,
    "Ｇuest_1",
    "a" * 250 + "@example.com",
    "ﷺ" * 10,
    "<script>alert(1)</script>",
    "' OR 1=1 --",
    "../../etc/passwd",
    "%00",
    "N",
    "a1",
    "c e",
]
UNICODE_DIGITS = st.text(st.characters(categories=("Nd", "No", "Nl")), min_size=1, max_size=4)


def hostile_text() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(HOSTILE),
        st.text(max_size=12),
        UNICODE_DIGITS,
        st.integers(-(10**12), 10**12).map(str),
    )


# --- the site: its URLs, its forms, one of each game --------------------------------------------


def site_routes() -> list[tuple[str, str]]:
    """(route, name) of every URL in the URLconf. Django's admin is left out: it is Django's
    own, for staff only."""

    def walk(patterns: list[Any], prefix: str) -> Iterator[tuple[str, str]]:
        for p in patterns:
            if isinstance(p, URLResolver):
                yield from walk(p.url_patterns, prefix + str(p.pattern))
            elif isinstance(p, URLPattern):
                yield prefix + str(p.pattern), str(p.name)

    return [(r, n) for r, n in walk(get_resolver().url_patterns, "") if not r.startswith("admin/")]


PARAMETER = re.compile(r"<(?:(\w+):)?(\w+)>")


class FormFields(HTMLParser):
    """The names of a page's form controls, each with the values the page offers."""

    def __init__(self, found: dict[str, set[str]]) -> None:
        super().__init__()
        self.found = found
        self.select: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag in {"input", "select", "textarea", "button"} and a.get("name"):
            values = self.found.setdefault(str(a["name"]), set())
            if a.get("value") is not None:
                values.add(str(a["value"]))
            self.select = str(a["name"]) if tag == "select" else self.select
        elif tag == "option" and self.select and a.get("value") is not None:
            self.found[self.select].add(str(a["value"]))

    def handle_endtag(self, tag: str) -> None:
        if tag == "select":
            self.select = None


@dataclass
class Site:
    games: dict[str, Game]
    users: dict[str, User | None]
    sessions: dict[str, str] = field(default_factory=dict)
    fields: dict[str, list[str]] = field(default_factory=dict)
    routes: list[tuple[str, str]] = field(default_factory=site_routes)
    tables: list[str] = field(default_factory=list)
    # Every table's digest as set up: each request is rolled back, so each must find it so.
    baseline: dict[str, str] = field(default_factory=dict)

    def client(self, role: str) -> Client:
        client = Client()
        if role in self.sessions:
            client.cookies[django_settings.SESSION_COOKIE_NAME] = self.sessions[role]
        return client

    def values(self, parameter: str, game: Game) -> list[str]:
        """What to put in a URL's <parameter>: real ones and wrong ones. A URL with a parameter
        not named here fails the test, so that a new URL is given values when it is added."""
        names = [u.username for u in self.users.values() if u is not None]
        known: dict[str, list[str]] = {
            "game_id": [str(game.pk), str(max(g.pk for g in self.games.values()) + 999)],
            "kind": [game.kind, "chess"],
            "name": [*names, "nobody"],
            "token": [
                "x",
                "a" * 80,
                *self.calendar_tokens,
                self.games["cornmaze private"].invite_token,
            ],
            "key": [self.guest_key, "x"],
            "uidb64": ["MQ", "x"],
        }
        assert parameter in known, f"test_fuzz has no values for the URL parameter <{parameter}>"
        return known[parameter]

    @property
    def calendar_tokens(self) -> list[str]:
        """The calendar feeds' secrets of the player and the guest player (a feed's URL)."""
        tokens = []
        for role in ("player", "guest player"):
            user = self.users[role]
            assert user is not None
            token = calendar.calendar_token(user, Profile.objects.get(user=user))
            tokens += [token] if token else []
        return tokens

    @property
    def guest_key(self) -> str:
        user = self.users["guest player"]
        assert user is not None
        return Profile.objects.get(user=user).guest_key

    def snapshot(self) -> dict[str, str]:
        """A digest of every row of the site's tables (the games app's and the users)."""
        quote_name = connection.ops.quote_name
        sql = " UNION ALL ".join(
            f"SELECT %s, md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) "
            f"FROM {quote_name(table)} t"
            for table in self.tables
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, self.tables)
            return dict(cursor.fetchall())


def _started(kind: str, creator: User, other: User, options: dict, clock: str, bots=()) -> Game:
    plans = [core.SeatPlan(), core.SeatPlan(), *(core.SeatPlan(bot=b) for b in bots)]
    game = core.game_create(
        kind=kind, creator=creator, options=options, clock_choice=clock, seats=plans
    )
    core.game_join(game_id=game.pk, user=other)
    game.refresh_from_db()
    return game


def _finished(game: Game, user: User) -> Game:
    core.game_resign(game_id=game.pk, user=user)
    game.refresh_from_db()
    assert game.is_over
    return game


def _race_step(game: Game, user: User, seat: int) -> None:
    game.refresh_from_db()
    assert game.state is not None
    direction = mazerace.view(game.state, seat)["open"][0]
    number = core.move_number(game, seat)
    core.move_submit(game_id=game.pk, user=user, number=number, move={"dir": direction})


@pytest.fixture
def site(db: None) -> Site:
    player = User.objects.create_user("fuzz-player", "player@example.com", "a-long-passphrase")
    Profile.objects.create(user=player, email_verified=True)
    spectator = User.objects.create_user("fuzz-spectator", "", "a-long-passphrase")
    Profile.objects.create(user=spectator)
    registered = User.objects.create_user("fuzz-registered", "", "a-long-passphrase")
    Profile.objects.create(user=registered)
    guest_player, guest = guest_create(), guest_create()
    users: dict[str, User | None] = {
        "anonymous": None,
        "guest": guest,
        "registered": registered,
        "spectator": spectator,
        "player": player,
        "guest player": guest_player,
    }
    games: dict[str, Game] = {}
    with core.bot_tasks_paused():
        games["cornmaze open"] = core.game_create(
            kind="cornmaze",
            creator=player,
            options={"size": 8},
            clock_choice="P3D",
            seats=[core.SeatPlan(), core.SeatPlan()],
        )
        corn = _started("cornmaze", player, guest_player, {"size": 8}, "P3D")
        games["cornmaze running"] = corn
        # A time bank, weekends off and a day given (issue 14): the give-time form is shown.
        banked = core.game_create(
            kind="cornmaze",
            creator=player,
            options={"size": 8},
            clock_choice="P3D",
            seats=[core.SeatPlan(), core.SeatPlan()],
            clock_options={"bank_days": 7, "weekends_off": True},
        )
        core.game_join(game_id=banked.pk, user=guest_player)
        games["cornmaze banked"] = banked
        games["cornmaze finished"] = _finished(
            _started("cornmaze", player, guest_player, {"size": 6}, "P3D"), player
        )
        robots = _started("robotmaze", player, guest_player, {}, "P3D")
        games["robotmaze set-up"] = robots
        play = _started("robotmaze", player, guest_player, {}, "P30D")
        for seat, user in enumerate((player, guest_player)):
            core.move_submit(
                game_id=play.pk, user=user, number=0, move={"warehouse": WAREHOUSES[seat]}
            )
        play.refresh_from_db()
        games["robotmaze play"] = play
        games["robotmaze finished"] = _finished(
            _started("robotmaze", player, guest_player, {}, "P3D"), guest_player
        )
        live = _started("mazerace", player, guest_player, {"mode": "live"}, "live", bots=("wall",))
        for user in (player, guest_player):
            race.race_ready(game_id=live.pk, user=user)
        Game.objects.filter(pk=live.pk).update(race_starts_at=timezone.now() - timedelta(seconds=5))
        _race_step(live, guest_player, 1)
        games["live race running"] = live
        done = _started("mazerace", player, guest_player, {"mode": "live"}, "live")
        for user in (player, guest_player):
            race.race_ready(game_id=done.pk, user=user)
        Game.objects.filter(pk=done.pk).update(race_starts_at=timezone.now())
        core.game_resign(game_id=done.pk, user=player)
        games["live race finished"] = _finished(done, guest_player)
        slow = _started("mazerace", player, guest_player, {"mode": "slow"}, "P3D")
        _race_step(slow, player, 0)
        games["slow race running"] = slow
        over = _started("mazerace", player, guest_player, {"mode": "slow"}, "P30D")
        _race_step(over, guest_player, 1)
        core.game_resign(game_id=over.pk, user=player)
        games["slow race finished"] = _finished(over, guest_player)
        # A challenge of the player by the guest player, and the player's private game.
        games["cornmaze challenge"] = core.game_create(
            kind="cornmaze",
            creator=guest_player,
            options={"size": 8},
            clock_choice="P3D",
            seats=[core.SeatPlan(), core.SeatPlan()],
            reserved=[player],
        )
        games["cornmaze private"] = core.game_create(
            kind="cornmaze",
            creator=player,
            options={"size": 8},
            clock_choice="P3D",
            seats=[core.SeatPlan(), core.SeatPlan()],
            invite=True,
        )
    # A chat in every game, so that its forms (write, mute, report, unmute) are on the pages;
    # only its players see a private game waiting for players.
    for name, game in games.items():
        chat.chat_post(game_id=game.pk, user=player, text="a player's message")
        if name != "cornmaze private":
            chat.chat_post(game_id=game.pk, user=spectator, text="a spectator's message")
            chat.chat_post(game_id=game.pk, user=registered, text="another spectator's message")
    ChatMute.objects.create(user=player, muted=registered, created_at=timezone.now())
    for game in games.values():
        game.refresh_from_db()
    # Calendar feeds (games/accounts/calendar.py), with their deadlines in them.
    calendar.calendar_link_new(user=player)
    calendar.calendar_link_new(user=guest_player)
    found = Site(games=games, users=users)
    for role, user in users.items():
        if user is not None:
            client = Client()
            client.force_login(user)
            found.sessions[role] = client.cookies[django_settings.SESSION_COOKIE_NAME].value
    found.tables = [User._meta.db_table] + [
        model._meta.db_table for model in apps.get_app_config("games").get_models()
    ]
    # Every form control the pages show, as every role, with the values they offer.
    controls: dict[str, set[str]] = {}
    pages = [reverse(name) for name in ("lobby", "archive", "signup", "login", "password_reset")]
    pages += [reverse(n) for n in ("account", "email_settings", "password_change")]
    pages += [reverse("game_new", args=[kind]) for kind in ENGINES]
    pages += [reverse("leaderboard", args=[kind]) for kind in ENGINES]
    pages += [reverse("game", args=[g.pk]) for g in games.values()]
    pages += [reverse("game_replay", args=[g.pk]) for g in games.values() if g.is_over]
    # The roles that see forms of their own: the others see a subset of these.
    for role in ("anonymous", "player", "guest player"):
        for page in pages:
            FormFields(controls).feed(found.client(role).get(page).content.decode())
    found.fields = {name: sorted(values) for name, values in controls.items()}
    # The move forms' own fields, whether or not a page showed them to this role just now.
    # And the vacation's (issue 14), which the account page shows one at a time.
    for name in ("ply", "step", "dir", "first", "second", "runs", "warehouse", "program") + (
        "return_on",
        "automatic",
    ):
        found.fields.setdefault(name, [])
    assert {"ply", "step", "dir", "username", "email", "password1", "player"} <= set(found.fields)
    assert {"seat", "time_zone", "bank", "weekends_off", "text", "message", "person"} <= set(
        found.fields
    )
    assert robotmaze.MAX_RUNS and found.games["robotmaze play"].state["phase"] == "play"
    found.baseline = found.snapshot()
    return found


# --- one request ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Attempt:
    role: str
    game: str
    route: str
    name: str
    path_values: tuple[str, ...]
    method: str  # GET, HEAD, POST (a form), JSON (a JSON body), FILE (a form with a file)
    data: tuple[tuple[str, tuple[str, ...]], ...]
    htmx: bool


def _path(route: str, values: tuple[str, ...]) -> str:
    parts = iter(values)
    return "/" + PARAMETER.sub(lambda _: quote(next(parts), safe=""), route)


def _send(site: Site, attempt: Attempt) -> HttpResponseBase:
    client = site.client(attempt.role)
    path = _path(attempt.route, attempt.path_values)
    extra = {"HTTP_HX_REQUEST": "true"} if attempt.htmx else {}
    data = {k: list(v) for k, v in attempt.data}
    if attempt.method == "GET":
        return client.get(path, data, **extra)
    if attempt.method == "HEAD":
        return client.head(path, data, **extra)
    if attempt.method == "JSON":
        body = json.dumps({k: v if len(v) > 1 else v[0] for k, v in data.items()})
        return client.post(path, body, content_type="application/json", **extra)
    if attempt.method == "FILE" and data:
        name = next(iter(data))
        data[name] = [SimpleUploadedFile("x.txt", data[name][0].encode())]  # type: ignore[list-item]
    return client.post(path, data, **extra)


def _refused(response: HttpResponseBase) -> bool:
    if response.status_code >= 400:
        return True
    location = response.get("Location", "") if response.status_code in (301, 302) else ""
    return location.startswith(reverse("login"))


def attempt_once(site: Site, attempt: Attempt) -> int:
    """Send one request in a savepoint that is rolled back, check the property, and return the
    response's status. The site before it is the baseline: a change that outlived its rollback
    would show in every request after it."""
    with transaction.atomic():
        response = _send(site, attempt)
        # Only a read or a refusal must leave the tables as they were.
        checked = attempt.method in ("GET", "HEAD") or _refused(response)
        after = site.snapshot() if checked else site.baseline
        transaction.set_rollback(True)
    status = response.status_code
    health = attempt.name == "healthz" and status == 503  # it says what is down; not an error
    assert status < 500 or health, (attempt, status)
    changed = sorted(t for t in site.tables if site.baseline[t] != after[t])
    assert not changed, (attempt, status, changed)
    return status


# --- the tests ------------------------------------------------------------------------------


@st.composite
def attempts(draw: st.DrawFn, site: Site) -> Attempt:
    role = draw(st.sampled_from(ROLES))
    game = draw(st.sampled_from(sorted(site.games)))
    route, name = draw(st.sampled_from(site.routes))
    path_values = tuple(
        draw(st.one_of(st.sampled_from(site.values(p, site.games[game])), hostile_text()))
        for _, p in PARAMETER.findall(route)
    )
    names = draw(
        st.lists(
            st.one_of(st.sampled_from(sorted(site.fields)), st.text(max_size=6)),
            max_size=6,
            unique=True,
        )
    )
    data = tuple(
        (
            n,
            tuple(
                draw(
                    st.lists(
                        st.one_of(st.sampled_from(site.fields.get(n) or [""]), hostile_text()),
                        min_size=1,
                        max_size=3,
                    )
                )
            ),
        )
        for n in names
    )
    method = draw(st.sampled_from(["GET", "HEAD", "POST", "POST", "POST", "JSON", "FILE"]))
    return Attempt(role, game, route, name, path_values, method, data, draw(st.booleans()))


# The sweep's values: in every form field a digit of another script, a NUL, far too much; and
# in place of a URL's parameters.
PAYLOADS = ("²", "a\x00b", "x" * 3000)
PATH_VALUES = ("\x00", "²", "x" * 3000, "Ｇuest_1")


def sweep(site: Site, role: str) -> Iterator[Attempt]:
    """Every URL for this role and each game, by GET and POST, with every form field the pages
    show set to "²"; and for each URL, signed in and not, the other PAYLOADS in the fields and
    PATH_VALUES in its parameters (refused before any view, whatever the role or game)."""
    for route, name in site.routes:
        parameters = [p for _, p in PARAMETER.findall(route)]
        games = sorted(site.games) if "game_id" in parameters else ["cornmaze running"]
        for method in ("GET", "POST"):
            for game in games:
                path_values = tuple(site.values(p, site.games[game])[0] for p in parameters)
                data = tuple((field_name, (PAYLOADS[0],)) for field_name in site.fields)
                yield Attempt(role, game, route, name, path_values, method, data, True)
            if role not in ("anonymous", "player"):
                continue
            path_values = tuple(site.values(p, site.games[games[0]])[0] for p in parameters)
            for value in PAYLOADS[1:]:
                data = tuple((field_name, (value,)) for field_name in site.fields)
                yield Attempt(role, games[0], route, name, path_values, method, data, False)
            for value in PATH_VALUES if parameters else ():
                path_values = (value,) * len(parameters)
                yield Attempt(role, games[0], route, name, path_values, method, (), False)


# The roles two by two, and the random requests apart: tests of about the same length, which
# the workers share.
ROLE_PAIRS = (("anonymous", "player"), ("guest", "guest player"), ("registered", "spectator"))
assert sorted(sum(ROLE_PAIRS, ())) == sorted(ROLES)


@pytest.mark.parametrize("roles", ROLE_PAIRS, ids=" and ".join)
def test_every_url_and_form_as_each_role_never_500s_and_a_refusal_changes_nothing(
    site: Site, roles: tuple[str, str]
) -> None:
    not_allowed: set[tuple[str, str]] = set()  # a view's methods do not depend on the rest
    for role in roles:
        for attempt in sweep(site, role):
            gate = (attempt.route, attempt.method)
            if gate not in not_allowed and attempt_once(site, attempt) == 405:
                not_allowed.add(gate)


def test_random_hostile_requests_never_500_and_a_refusal_changes_nothing(site: Site) -> None:
    @hypothesis.settings(
        max_examples=120,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(st.data())
    def random_requests(data: st.DataObject) -> None:
        attempt_once(site, data.draw(attempts(site)))

    random_requests()
