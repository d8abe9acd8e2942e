"""A soak of the `make run` stack: live Maze Races against bots and Corn maze and Robot Maze Race
games between players, over HTTP as browsers play them, for ten minutes; then what went wrong.

    .venv/bin/python bench/soak.py                         # 10 minutes: 30 races, 300 moves
    .venv/bin/python bench/soak.py --minutes 2             # a short try: 6 races, 60 moves

It starts the stack through its launcher (`python -m mazesite.devstack`, as `make run` does) in
a fresh var dir under /tmp and on a port of its own, with the site's mail going to an SMTP
server (aiosmtpd) that this bench runs. Players: a few guests, and a few people who sign up and
verify their address through the link in the mail they get (only they get mail). Each player
is a client of its own (urllib, a cookie jar, a 30 s timeout, one request at a time) that
reads the page and posts its forms as a browser does, CSRF token included, with htmx's
headers where the page's forms use htmx:

- races: one live Maze Race every minutes*60/races seconds, a runner against one or two bots
  (wall, flood, strong); it presses Ready and steps about four times a second through the open
  ways, half the time on the hint's advice, polling as the page does, until the race is over;
- turn games: four pairs of players, each playing Corn mazes and Robot Maze Races (set-up with
  the page's random warehouse, then programs) one after the other; a player is sometimes away
  for 12-25 s (no polling: the site should mail it that it is its turn), and the moves are
  spread evenly over the run.

Then it stops starting things, waits for the races to end and the mails to settle, stops the
stack (SIGTERM, as Ctrl-C) and prints: 5xx responses, requests with no answer, /healthz checks
that were not 200, worker and beat restarts, races left unfinished, and mails lost or doubled
(the outbox rows that should have gone out, read from the stack's database, against the mails
the SMTP server received). The target is 0 for each.
"""

from __future__ import annotations

import argparse
import email
import email.policy
import functools
import itertools
import logging
import os
import queue
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from html.parser import HTMLParser
from http.cookiejar import CookieJar
from pathlib import Path
from typing import Any

BASE_DIR = Path(__file__).resolve().parent.parent
VERIFY_SUBJECT = "Confirm your email address for mazesite"
TIMEOUT = 30.0
STEP_EVERY = 0.26  # a little slower than the live speed (a step every 250 ms)
POLL_EVERY = 0.5  # a live race's page polls twice a second
TURN_POLL_EVERY = 3.0  # a game by turns polls every 3 s
RACE_BOTS = ["wall", "flood", "strong"]
PAIRS = 4
RUNNERS = 6
# What the stack must not inherit from a shell that ran `make test`.
NOT_INHERITED = {"DATABASE_URL", "REDIS_URL", "CELERY_QUEUE", "PYTEST_XDIST_WORKER", "PORT"}


# --- what was seen --------------------------------------------------------------------------


@dataclass
class Stats:
    lock: threading.Lock = field(default_factory=threading.Lock)
    statuses: Counter[int] = field(default_factory=Counter)
    server_errors: list[str] = field(default_factory=list)
    no_answer: list[str] = field(default_factory=list)
    health: Counter[int] = field(default_factory=Counter)
    moves: Counter[str] = field(default_factory=Counter)
    refused: Counter[str] = field(default_factory=Counter)
    races: list[int] = field(default_factory=list)
    games: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Players of this bench whose thread died: their games stopped, so the figures undercount.
    crashed: list[str] = field(default_factory=list)

    def saw(self, method: str, url: str, status: int, body: str) -> None:
        with self.lock:
            self.statuses[status] += 1
            if status >= 500:
                first = " ".join(body.split())[:200]
                self.server_errors.append(f"{status} {method} {url}: {first}")

    def lost(self, method: str, url: str, error: BaseException) -> None:
        with self.lock:
            self.no_answer.append(f"{method} {url}: {type(error).__name__}: {error}")

    def note(self, text: str) -> None:
        with self.lock:
            self.notes.append(text)
        print(f"soak | {text}", flush=True)


stats = Stats()


# --- the pages ------------------------------------------------------------------------------


@dataclass
class Form:
    attrs: dict[str, str]
    hidden: dict[str, str] = field(default_factory=dict)
    radios: dict[str, list[tuple[str, bool]]] = field(default_factory=dict)  # (value, enabled)
    selects: dict[str, list[str]] = field(default_factory=dict)
    buttons: list[dict[str, str]] = field(default_factory=list)

    @property
    def action(self) -> str:
        return self.attrs.get("action", "")

    @property
    def htmx(self) -> bool:
        """A browser with JavaScript sends it by htmx: the form posts by htmx, or its Play
        button does (the corn maze's form leaves its drafts to a box inside it)."""
        play = self.button(id="play")
        return "hx-post" in self.attrs or (play is not None and "hx-post" in play)

    def button(self, **match: str) -> dict[str, str] | None:
        for b in self.buttons:
            if all(b.get(k) == v for k, v in match.items()):
                return b
        return None


class Page(HTMLParser):
    """The forms of a page (or htmx partial) and the game section's polling attributes."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.html = html
        self.forms: list[Form] = []
        self.game: dict[str, str] | None = None
        self._form: Form | None = None
        self._select: str | None = None
        self.feed(html)

    def handle_starttag(self, tag: str, attr_list: list[tuple[str, str | None]]) -> None:
        attrs = {k: v or "" for k, v in attr_list}
        if tag == "section" and attrs.get("id") == "game":
            self.game = attrs
        elif tag == "form":
            self._form = Form(attrs)
            self.forms.append(self._form)
        elif self._form is None:
            return
        elif tag == "input":
            name, kind = attrs.get("name", ""), attrs.get("type", "text")
            if kind == "hidden" and name:
                self._form.hidden[name] = attrs.get("value", "")
            elif kind == "radio" and name:
                self._form.radios.setdefault(name, []).append(
                    (attrs.get("value", ""), "disabled" not in attrs)
                )
        elif tag == "select":
            self._select = attrs.get("name", "")
            self._form.selects[self._select] = []
        elif tag == "option" and self._select is not None:
            self._form.selects[self._select].append(attrs.get("value", ""))
        elif tag == "button":
            self._form.buttons.append(attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._form = None
        elif tag == "select":
            self._select = None

    def form(self, *, id: str | None = None, action_has: str | None = None) -> Form | None:
        for f in self.forms:
            if id is not None and f.attrs.get("id") != id:
                continue
            if action_has is not None and action_has not in f.action:
                continue
            return f
        return None

    @property
    def polling(self) -> bool:
        """The game's page still polls for the game: it is not over (a player's page of a
        finished game polls only for a rematch offer)."""
        return (
            self.game is not None
            and "hx-get" in self.game
            and "rematch_until=" not in self.game["hx-get"]
        )

    @property
    def poll_url(self) -> str:
        assert self.game is not None
        return self.game["hx-get"]

    @property
    def over(self) -> bool:
        return self.game is not None and not self.polling


# --- a player -------------------------------------------------------------------------------


class Player:
    """One browser: a cookie jar and one request at a time."""

    def __init__(self, base: str, name: str) -> None:
        self.base = base
        self.name = name
        self.email = ""
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(CookieJar()))

    def request(
        self, method: str, path: str, data: dict[str, str] | None = None, *, htmx: bool = False
    ) -> tuple[int, str, str]:
        """(status, final URL, body); status 0 when the server did not answer."""
        url = path if path.startswith("http") else self.base + path
        body = urllib.parse.urlencode(data).encode() if data is not None else None
        request = urllib.request.Request(url, data=body, method=method)
        if htmx:
            request.add_header("HX-Request", "true")
            request.add_header("HX-Target", "game")
        try:
            with self.opener.open(request, timeout=TIMEOUT) as response:
                text = response.read().decode(errors="replace")
                status, final = response.status, response.geturl()
        except urllib.error.HTTPError as error:
            text = error.read().decode(errors="replace")
            status, final = error.code, url
        except (OSError, TimeoutError) as error:
            stats.lost(method, url, error)
            return 0, url, ""
        stats.saw(method, url, status, text)
        return status, final, text

    def get(self, path: str, *, htmx: bool = False) -> tuple[int, str, str]:
        return self.request("GET", path, htmx=htmx)

    def submit(
        self, form: Form, fields: dict[str, str], *, action: str = ""
    ) -> tuple[int, str, str]:
        return self.request(
            "POST", action or form.action, {**form.hidden, **fields}, htmx=form.htmx
        )

    def page(self, game_id: int) -> Page | None:
        status, _, text = self.get(f"/games/{game_id}/", htmx=True)
        return Page(text) if status == 200 else None


def game_create(player: Player, kind: str, fields: dict[str, str]) -> int | None:
    status, _, text = player.get(f"/new/{kind}/")
    form = Page(text).form(id="new-game") if status == 200 else None
    if form is None:
        stats.note(f"{player.name}: no creation form for {kind} (status {status})")
        return None
    status, final, _ = player.submit(form, fields, action=f"/new/{kind}/")
    found = re.search(r"/games/(\d+)/$", final)
    if status != 200 or found is None:
        stats.note(f"{player.name}: creating a {kind} answered {status} at {final}")
        return None
    return int(found.group(1))


# --- mail ------------------------------------------------------------------------------------


class Inbox:
    """An aiosmtpd handler that keeps (to, subject, text) of every mail."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.mails: list[tuple[str, str, str]] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        body = message.get_body(preferencelist=("plain",))
        text = str(body.get_content()) if body is not None else ""
        for to in envelope.rcpt_tos:
            with self.lock:
                self.mails.append((to, " ".join(str(message["Subject"]).split()), text))
        return "250 Message accepted for delivery"

    def find(self, to: str, subject: str) -> str | None:
        with self.lock:
            for mail_to, mail_subject, text in self.mails:
                if mail_to == to and mail_subject == subject:
                    return text
        return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(check: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def sign_up(base: str, inbox: Inbox, name: str) -> Player | None:
    """A person signs up with an address and opens the link in the mail to verify it."""
    player = Player(base, name)
    player.email = f"{name}@soak.example"
    status, _, text = player.get("/accounts/signup/")
    form = Page(text).form(id="signup")
    if status != 200 or form is None:
        stats.note(f"{name}: no sign-up form (status {status})")
        return None
    password = f"soak-{name}-passphrase-{random.randrange(10**6)}"
    status, final, _ = player.submit(
        form,
        {"username": name, "email": player.email, "password1": password, "password2": password},
        action="/accounts/signup/",
    )
    if status != 200 or final.rstrip("/") != base:
        stats.note(f"{name}: signing up answered {status} at {final}")
        return None
    if not wait_for(lambda: inbox.find(player.email, VERIFY_SUBJECT) is not None, 60):
        stats.note(f"{name}: no verification mail within 60 s")
        return None
    link = re.search(
        r"https?://\S+/accounts/verify/\S+/", inbox.find(player.email, VERIFY_SUBJECT) or ""
    )
    if link is None:
        stats.note(f"{name}: no link in the verification mail")
        return None
    status, _, text = player.get(link.group(0))
    if status != 200 or "verified" not in text:
        stats.note(f"{name}: the verification link answered {status}")
        return None
    return player


# --- live races -----------------------------------------------------------------------------


def race_play(runner: Player, *, seed: int) -> None:
    rng = random.Random(seed)
    bots = rng.sample(RACE_BOTS, rng.choice([1, 1, 2]))
    fields = {"race": "live", "seats": str(1 + len(bots))}
    fields.update({f"seat_{i + 1}": bot for i, bot in enumerate(bots)})
    game_id = game_create(runner, "mazerace", fields)
    if game_id is None:
        return
    with stats.lock:
        stats.races.append(game_id)
    page = runner.page(game_id)
    deadline = time.monotonic() + 13 * 60  # Ready within 10 minutes, then 10 minutes at most
    while time.monotonic() < deadline:
        if page is None:
            time.sleep(POLL_EVERY)
            page = runner.page(game_id)
            continue
        if page.over:
            return
        ready = page.form(action_has="/ready")
        steer = page.form(id="steer")
        if ready is not None:
            status, _, text = runner.submit(ready, {})
            page = Page(text) if status in (200, 409) else None
            continue
        if steer is not None and 'id="countdown"' not in page.html:
            page = race_step(runner, game_id, steer, page, rng)
            time.sleep(STEP_EVERY)
            continue
        time.sleep(POLL_EVERY)
        status, _, text = runner.get(page.poll_url, htmx=True)
        if status == 200:
            page = Page(text)
        elif status == 286:
            return  # htmx's "stop polling": the race is over
    stats.note(f"race {game_id}: still running after 13 minutes")


def race_step(
    runner: Player, game_id: int, steer: Form, page: Page, rng: random.Random
) -> Page | None:
    """One step through an open way, on the hint's advice half the time."""
    open_ways = [b for b in steer.buttons if b.get("name") == "dir" and "disabled" not in b]
    if not open_ways:
        return page
    choice = rng.choice(open_ways)
    hint_form = page.form(action_has="/hint")
    if hint_form is not None and rng.random() < 0.5:
        status, _, text = runner.submit(hint_form, {})
        advice = re.search(r"The strong bot would go <strong>(\w+)</strong>", text)
        if status == 200 and advice is not None:
            hinted = [b for b in open_ways if b.get("aria-label") == f"Step {advice.group(1)}"]
            choice = hinted[0] if hinted else choice
            fresh = Page(text).form(id="steer")
            steer = fresh or steer
    status, _, text = runner.submit(steer, {"dir": choice["value"]})
    if status == 200:
        stats.moves["mazerace"] += 1
    elif status in (409, 429):
        stats.refused[f"mazerace {status}"] += 1
    return Page(text) if status in (200, 409) else None


# --- games by turns -------------------------------------------------------------------------


class MoveBudget:
    """The turn games' moves, spread evenly over the run: the n-th waits for n/rate seconds."""

    def __init__(self, total: int, seconds: float) -> None:
        self.total, self.seconds = total, seconds
        self.start = time.monotonic()
        self.lock = threading.Lock()
        self.taken = 0

    def take(self) -> bool:
        with self.lock:
            if self.taken >= self.total:
                return False
            due = self.start + self.taken * self.seconds / self.total
            self.taken += 1
        time.sleep(max(0.0, due - time.monotonic()))
        return True

    def give_back(self) -> None:
        with self.lock:
            self.taken -= 1

    @property
    def done(self) -> bool:
        with self.lock:
            return self.taken >= self.total


def crash_counted(play: Callable[..., None]) -> Callable[..., None]:
    """`play`, with an exception it raises counted in the report (a thread's or a pool's would
    go unseen, its player's games quietly stopped)."""

    @functools.wraps(play)
    def counted(*args: Any) -> None:
        try:
            play(*args)
        except Exception:
            with stats.lock:
                stats.crashed.append(traceback.format_exc(limit=3).strip().splitlines()[-1])
            raise

    return counted


def pair_play(a: Player, b: Player, budget: MoveBudget, stop: threading.Event, seed: int) -> None:
    rng = random.Random(seed)
    kinds = itertools.cycle(["cornmaze", "robotmaze"] if seed % 2 else ["robotmaze", "cornmaze"])
    while not stop.is_set() and not budget.done:
        kind = next(kinds)
        creator, joiner = (a, b) if rng.random() < 0.5 else (b, a)
        fields = (
            {"size": "8", "seats": "2", "clock": "P3D", "seat_1": "person"}
            if kind == "cornmaze"
            else {"clock": "P3D", "seat_1": "person"}
        )
        game_id = game_create(creator, kind, fields)
        if game_id is None:
            time.sleep(5)
            continue
        page = joiner.page(game_id)
        join = page.form(action_has="/join") if page else None
        if join is None:
            stats.note(f"{kind} {game_id}: no join form for {joiner.name}")
            continue
        joiner.submit(join, {})
        with stats.lock:
            stats.games.append(game_id)
        turns_play(game_id, kind, [creator, joiner], budget, stop, rng)


def turns_play(
    game_id: int,
    kind: str,
    players: list[Player],
    budget: MoveBudget,
    stop: threading.Event,
    rng: random.Random,
) -> None:
    """Each player polls the page every 3 s (or is away), and moves when the page offers it a
    move and the budget allows one. Returns when the game is over or the run is."""
    away_until = {p.name: 0.0 for p in players}
    while not stop.is_set():
        for player in players:
            now = time.monotonic()
            if now < away_until[player.name]:
                continue
            if rng.random() < 0.08:
                away_until[player.name] = now + rng.uniform(12, 25)  # longer than "watching"
                continue
            page = player.page(game_id)
            if page is None:
                continue
            if page.over:
                return
            form = page.form(id="move-form")
            if form is None:
                continue
            if not budget.take():
                return
            if not turn_move(player, kind, form, rng):
                budget.give_back()
        time.sleep(TURN_POLL_EVERY / len(players))


def turn_move(player: Player, kind: str, form: Form, rng: random.Random) -> bool:
    if kind == "cornmaze":
        first = [v for v, enabled in form.radios.get("first", []) if enabled]
        second = [v for v, _ in form.radios.get("second", [])]
        status, _, _ = player.submit(
            form, {"first": rng.choice(first), "second": rng.choice(second)}
        )
    elif "warehouse" in form.hidden:
        # The set-up: the page's random warehouse, then "Set up this warehouse".
        random_button = form.button(value="random")
        if random_button is None:
            return False
        status, _, text = player.submit(
            form, {"action": "random"}, action=random_button["formaction"]
        )
        fresh = Page(text).form(id="move-form") if status == 200 else None
        play = fresh.button(id="play") if fresh else None
        if fresh is None or play is None or "disabled" in play:
            return False
        status, _, _ = player.submit(fresh, {}, action=play.get("formaction", ""))
    else:
        play = form.button(id="play")
        if play is None:
            return False
        commands = [rng.choice("RRDDUL") for _ in range(rng.randint(1, 4))]
        fields = {f"command_{i + 1}": c for i, c in enumerate(commands)}
        fields["runs"] = str(rng.randint(1, 2))
        # No formaction: the form's own action, as a browser posts it.
        status, _, _ = player.submit(form, fields, action=play.get("formaction", ""))
    if status == 200:
        stats.moves[kind] += 1
        return True
    stats.refused[f"{kind} {status}"] += 1
    return False


# --- the stack ------------------------------------------------------------------------------


def stack_start(var_dir: Path, port: int, smtp_port: int) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED}
    env.update(
        MAZESITE_VAR_DIR=str(var_dir),
        EMAIL_HOST="127.0.0.1",
        EMAIL_PORT=str(smtp_port),
        LOG_LEVEL="INFO",
        # Every player of the bench comes from 127.0.0.1: the per-client limits are raised, as
        # for as many networks as there are players; the per-seat and per-account ones stay.
        RATE_LIMITS="guest_client=1000/10m,signup_client=1000/h,verify_mail_client=1000/h",
    )
    log = (var_dir / "devstack.log").open("wb")
    return subprocess.Popen(
        [sys.executable, "-m", "mazesite.devstack", "--port", str(port)],
        cwd=BASE_DIR,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def health_watch(base: str, stop: threading.Event) -> None:
    checker = Player(base, "healthz")
    while not stop.wait(5):
        status, _, _ = checker.get("/healthz")
        with stats.lock:
            stats.health[status] += 1


# --- the figures ------------------------------------------------------------------------------


def django_setup(var_dir: Path) -> None:
    for name in NOT_INHERITED:
        os.environ.pop(name, None)
    os.environ["MAZESITE_VAR_DIR"] = str(var_dir)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mazesite.settings")
    sys.path.insert(0, str(BASE_DIR))
    import django

    django.setup()


def mails_pending() -> int:
    from games.models import Outbox

    return Outbox.objects.filter(status=Outbox.Status.PENDING).count()


def mail_figures(inbox: Inbox) -> dict[str, Any]:
    """The outbox rows that should have gone out against the mails received. A row should have
    gone out if it was sent, if it is still pending or failed, or if it is a "your turn" mail
    that was not sent while it is still that player's turn (held back and then dropped)."""
    from games.models import Outbox, Seat

    expected: Counter[tuple[str, str]] = Counter()
    unsent_but_due = 0
    statuses: Counter[str] = Counter()
    notes: Counter[str] = Counter()
    for row in Outbox.objects.select_related("game"):
        statuses[row.status] += 1
        if row.status == Outbox.Status.SENT:
            expected[(row.to_email, " ".join(row.subject.split()))] += 1
        elif row.status in (Outbox.Status.PENDING, Outbox.Status.FAILED):
            unsent_but_due += 1
        else:
            notes[row.note] += 1
            still_their_turn = (
                row.kind == Outbox.Kind.YOUR_TURN
                and row.game is not None
                and row.seat is not None
                and row.game.status == "active"
                and row.game.ply == row.ply
                and Seat.objects.filter(
                    game=row.game, index=row.seat, user_id=row.user_id, deadline__isnull=False
                ).exists()
            )
            unsent_but_due += still_their_turn
    received: Counter[tuple[str, str]] = Counter(
        (to, subject) for to, subject, _ in inbox.mails if subject != VERIFY_SUBJECT
    )
    missing = sum((expected - received).values())
    doubled = sum((received - expected).values())
    return {
        "rows": dict(statuses),
        "skipped_notes": dict(notes),
        "should_have_gone": sum(expected.values()) + unsent_but_due,
        "received": sum(received.values()),
        "lost": missing + unsent_but_due,
        "doubled": doubled,
    }


def race_figures() -> dict[str, int]:
    from games.models import Game

    races = Game.objects.filter(pk__in=stats.races)
    return {
        "started": races.count(),
        "finished": races.filter(status=Game.Status.FINISHED).count(),
        "aborted": races.filter(status=Game.Status.ABORTED).count(),
        "unfinished": races.exclude(status__in=[Game.Status.FINISHED, Game.Status.ABORTED]).count(),
    }


# --- the run --------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--races", type=int, help="live races (default: 3 a minute)")
    parser.add_argument("--moves", type=int, help="turn-game moves (default: 30 a minute)")
    parser.add_argument("--port", type=int, default=0, help="default: a free port")
    parser.add_argument("--keep", action="store_true", help="keep the var dir and its log")
    args = parser.parse_args()
    seconds = args.minutes * 60
    races = args.races if args.races is not None else round(3 * args.minutes)
    moves = args.moves if args.moves is not None else round(30 * args.minutes)
    port = args.port or free_port()
    base = f"http://127.0.0.1:{port}"
    var_dir = Path(tempfile.mkdtemp(prefix="soak-", dir="/tmp"))
    django_setup(var_dir)

    from aiosmtpd.controller import Controller

    logging.getLogger("mail.log").setLevel(logging.WARNING)  # aiosmtpd: a line per command
    inbox = Inbox()
    smtp_port = free_port()
    smtp = Controller(inbox, hostname="127.0.0.1", port=smtp_port)
    smtp.start()
    stack = stack_start(var_dir, port, smtp_port)
    print(f"soak | the stack on {base}, var dir {var_dir}, log {var_dir / 'devstack.log'}")
    stop = threading.Event()
    try:
        if not wait_for(lambda: Player(base, "-").get("/healthz")[0] == 200, 180):
            print("soak | the stack did not become healthy within 3 minutes", file=sys.stderr)
            return 2
        # Counted from here on: only what the players see.
        stats.statuses.clear()
        stats.server_errors.clear()
        stats.no_answer.clear()
        started = time.monotonic()
        watcher = threading.Thread(target=health_watch, args=(base, stop), daemon=True)
        watcher.start()

        people = [sign_up(base, inbox, f"soak{i}") for i in range(RUNNERS // 2 + PAIRS)]
        registered = [p for p in people if p is not None]
        guests = [Player(base, f"guest{i}") for i in range(RUNNERS + 2 * PAIRS - len(registered))]
        print(f"soak | {len(registered)} verified players, {len(guests)} guests")
        everyone = registered + guests
        random.Random(11).shuffle(everyone)
        runners: queue.Queue[Player] = queue.Queue()
        for runner in everyone[:RUNNERS]:
            runners.put(runner)
        pairs = [(everyone[RUNNERS + 2 * i], everyone[RUNNERS + 2 * i + 1]) for i in range(PAIRS)]

        budget = MoveBudget(moves, seconds * 0.95)
        turn_threads = [
            threading.Thread(
                target=crash_counted(pair_play), args=(a, b, budget, stop, i), daemon=True
            )
            for i, (a, b) in enumerate(pairs)
        ]
        for t in turn_threads:
            t.start()

        @crash_counted
        def one_race(n: int) -> None:
            runner = runners.get()
            try:
                race_play(runner, seed=n)
            finally:
                runners.put(runner)

        with ThreadPoolExecutor(max_workers=RUNNERS) as pool:
            for n in range(races):
                time.sleep(max(0.0, started + n * seconds / races - time.monotonic()))
                pool.submit(one_race, n)
                print(
                    f"soak | race {n + 1} of {races} started at {time.monotonic() - started:.0f} s"
                )
            time.sleep(max(0.0, started + seconds - time.monotonic()))
            stop.set()
            print("soak | time is up: waiting for the races to end")
        for t in turn_threads:
            t.join(timeout=60)

        # The players have left: held "your turn" mails and retries have time to go out.
        print("soak | waiting for the mails to settle")
        last = (-1, -1)
        quiet_since = time.monotonic()
        settle_until = time.monotonic() + 240
        while time.monotonic() < settle_until:
            now = (mails_pending(), len(inbox.mails))
            if now != last:
                last, quiet_since = now, time.monotonic()
            elif now[0] == 0 and time.monotonic() - quiet_since > 30:
                break
            time.sleep(1)
        elapsed = time.monotonic() - started
    finally:
        stop.set()
        stack.send_signal(signal.SIGTERM)
        try:
            stack_code = stack.wait(timeout=120)
        except subprocess.TimeoutExpired:
            stack.kill()
            stack_code = stack.wait()
        smtp.stop()

    log = (var_dir / "devstack.log").read_text(errors="replace")
    restarts = len(re.findall(r"restarting it \(restart", log))
    gave_up = "not starting it again" in log or "stopping everything: the " in log
    race = race_figures()
    mail = mail_figures(inbox)
    five = sum(n for status, n in stats.statuses.items() if status >= 500)
    bad_health = sum(n for status, n in stats.health.items() if status != 200)
    print()
    print(f"soak: {elapsed / 60:.1f} minutes on {base} (launcher exit code {stack_code})")
    by_status = dict(sorted(stats.statuses.items()))
    print(f"  requests: {sum(stats.statuses.values())} by status {by_status}")
    print(f"  moves: {dict(stats.moves)}; refused: {dict(stats.refused) or 0}")
    print(f"  turn games: {len(stats.games)}; live races: {race}")
    print(f"  outbox rows: {mail['rows']}; skipped because: {mail['skipped_notes']}")
    print(f"  mails: {mail['should_have_gone']} should have gone out, {mail['received']} received")
    for line in (
        stats.server_errors[:5] + stats.no_answer[:5] + stats.notes[:10] + stats.crashed[:3]
    ):
        print(f"  seen: {line}")
    figures = {
        "5xx responses": five,
        "requests with no answer": len(stats.no_answer),
        "/healthz checks not 200": bad_health,
        "worker/beat restarts": restarts + int(gave_up),
        "races left unfinished": race["unfinished"],
        "races aborted": race["aborted"],
        "mails lost": mail["lost"],
        "mails doubled": mail["doubled"],
        "bench players crashed": len(stats.crashed),
    }
    width = max(map(len, figures))
    for name, value in figures.items():
        print(f"  {name:<{width}}  {value}")
    if args.keep:
        print(f"soak | kept {var_dir}")
    else:
        shutil.rmtree(var_dir, ignore_errors=True)
    return 0 if not any(figures.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
