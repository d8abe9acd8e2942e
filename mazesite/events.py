"""Live races by Server-Sent Events: a small ASGI application beside Django (README "Operate").

    uvicorn mazesite.events:app --port 8001 --timeout-graceful-shutdown 2

`GET /games/<id>/events?as=watch|runner&v=<version>` is an event stream (text/event-stream) of
one live race (any other game, and a private race still waiting for players, is a 404). The
process subscribes once to the Redis channel of race versions (games/live.py: "game G is at
version V", sent after each change commits) and fans each message out to the viewers of that
game connected to it:

- a spectator (`as=watch`) gets the race's spectator board, `event: board`, data
  `{"v": V, "html": "<section id=game ...>"}`: the same for every spectator (a spectator sees
  nothing of the maze until the race ends), rendered once per version in this process, however
  many watch;
- a runner (`as=runner`) gets only `event: version`, data `{"v": V}`, and fetches its own board
  (with its own fog) from the site, as its poll would.

No event holds anything that a spectator may not see, so the stream needs no session: a
runner who asks for `as=watch` gets what anyone gets. Each event's id is its version; a client
that reconnects sends it back (Last-Event-ID, or `v` on its first connection) and is sent the
current state at once if it missed something. A comment every SSE_HEARTBEAT_SECONDS keeps idle
connections open through proxies and finds clients that are gone. When the race is over the
last board is followed by `event: end` and the stream closes. Past SSE_MAX_CONNECTIONS a
process answers 503: the page polls instead, as it does without JavaScript.

Pages of another origin (make run's site on PORT, this on PORT+1) may read the stream: it is
public, sent without cookies (Access-Control-Allow-Origin: *).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import time
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mazesite.settings")

import django  # noqa: E402

django.setup()

import redis.asyncio as aioredis  # noqa: E402
import uvicorn  # noqa: E402
from asgiref.sync import sync_to_async  # noqa: E402
from django.conf import settings  # noqa: E402
from django.db import close_old_connections  # noqa: E402

from games import live  # noqa: E402

logger = logging.getLogger("mazesite.events")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

PATH = re.compile(r"^/games/(\d{1,12})/events$")
MODES = {"watch", "runner"}
LISTEN_PING_SECONDS = 5.0  # a silent subscription is pinged this often (and dropped after 3)


@dataclass(eq=False)
class Viewer:
    game_id: int
    mode: str
    seen: int  # the last version this client has (or -1)
    pending: bytes | None = None  # the newest event not yet written (older ones are dropped)
    closing: bool = False
    leaving: bool = False  # the server is stopping: close without `end`, the browser reconnects
    wake: asyncio.Event = field(default_factory=asyncio.Event)

    def offer(self, version: int, event: bytes, *, end: bool = False) -> None:
        if version > self.seen:
            self.seen = version
            self.pending = event
        if end:
            self.closing = True
        self.wake.set()


@dataclass
class Board:
    """The spectator board of one game at one version, rendered once for every spectator."""

    version: int
    over: bool
    event: bytes


def _event(name: str, version: int, data: dict[str, Any]) -> bytes:
    body = json.dumps(data, separators=(",", ":"))
    return f"id: {version}\nevent: {name}\ndata: {body}\n\n".encode()


END = b"event: end\ndata: {}\n\n"


def _render_board(game_id: int) -> tuple[int, bool, str] | None:
    """The spectator's partial of the game as it is now (its version, whether it is over, the
    HTML): what `GET /games/<id>` answers a viewer with no seat. In a worker thread."""
    from django.contrib.auth.models import AnonymousUser
    from django.template.loader import render_to_string

    from games.archive import selectors
    from games.pages import contexts

    close_old_connections()
    try:
        game = selectors.game_for_page(game_id, with_moves=False)
        if game is None:
            return None
        context = contexts.game_context(game, AnonymousUser())
        html = render_to_string("games/game.html#game", context).strip()
        return game.version, game.is_over, html
    finally:
        close_old_connections()


def _has_stream(game_id: int) -> bool:
    """Whether this game has an event stream: a live race that anyone may see. A private race
    waiting for players is not found here, as it is not on its page (Game.hidden_from), and
    its pages poll until it starts (games.ui.mazerace.events_url)."""
    from games.models import Clock, Game

    close_old_connections()
    try:
        return (
            Game.objects.filter(pk=game_id, clock=Clock.LIVE)
            .exclude(status=Game.Status.OPEN, invite_token__gt="")
            .exists()
        )
    finally:
        close_old_connections()


def _read_version(game_id: int) -> tuple[int, bool] | None:
    from games.archive import selectors
    from games.models import Game

    close_old_connections()
    try:
        row = selectors.game_version(game_id)
    finally:
        close_old_connections()
    if row is None:
        return None
    return row[0], row[1] in {Game.Status.FINISHED, Game.Status.ABORTED}


class Hub:
    """This process's viewers, by game, and its one subscription to the channel."""

    def __init__(self) -> None:
        self.viewers: dict[int, set[Viewer]] = {}
        self.boards: dict[int, Board] = {}
        self.rendering: dict[int, asyncio.Task[None]] = {}
        self.wanted: dict[int, int] = {}  # the newest version heard of, per game being rendered
        self.count = 0
        self.delivered = 0
        self.listener: asyncio.Task[None] | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.subscribed = False
        self.catching_up: set[asyncio.Task[None]] = set()  # kept: the loop holds tasks weakly
        self.stopping = asyncio.Event()

    # --- the subscription ------------------------------------------------------------------

    def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.listener = asyncio.create_task(self._listen())

    async def stop(self) -> None:
        self.let_go()
        if self.listener is not None:
            self.listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self.listener

    def let_go(self) -> None:
        """The server is stopping: every stream ends now, without `end`, so that each browser
        reconnects (to another node, or to this one started again) and resyncs."""
        self.stopping.set()
        for viewers in list(self.viewers.values()):
            for viewer in viewers:
                viewer.leaving = True
                viewer.wake.set()

    async def _listen(self) -> None:
        """Subscribed until stopped; a lost Redis is retried every second (meanwhile the pages
        poll, since their streams say nothing, and a reconnecting client resyncs). What was
        published while this process did not listen is read from the database as soon as it
        listens again (`catch_up`), so an open stream never misses a version for good."""
        while not self.stopping.is_set():
            client = aioredis.Redis.from_url(settings.REDIS_URL)
            try:
                async with client.pubsub() as pubsub:
                    await pubsub.subscribe(live.channel())
                    await self._hear(pubsub)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001
                logger.warning("events: the Redis subscription failed (%r); again in 1 s", exc)
                await asyncio.sleep(1)
            finally:
                self.subscribed = False
                with contextlib.suppress(Exception):
                    await client.aclose()

    async def _hear(self, pubsub: Any) -> None:
        """The channel's messages until the connection fails. Redis confirms each subscription
        (also redis-py's own after a reconnect): then this process catches up. A connection
        that says nothing is pinged; one that does not answer (a host gone without a word) is
        given up, and the caller subscribes again."""
        heard_at = time.monotonic()
        while True:
            message = await pubsub.get_message(timeout=LISTEN_PING_SECONDS)
            if message is None:
                if time.monotonic() - heard_at > 3 * LISTEN_PING_SECONDS:
                    raise ConnectionError("Redis did not answer a ping on the race channel")
                await pubsub.ping()
                continue
            heard_at = time.monotonic()
            kind = message.get("type")
            if kind == "subscribe":
                self.subscribed = True
                logger.info("events: subscribed to %s", live.channel())
                self.catch_up()
            elif kind == "message":
                self.heard(message["data"])

    def catch_up(self) -> None:
        """Every game watched here, from the database: versions published while this process
        did not listen (Redis restarted, the connection lost) reach its open streams now."""
        games = list(self.viewers)
        if games:
            task = asyncio.create_task(self._catch_up(games))
            self.catching_up.add(task)
            task.add_done_callback(self.catching_up.discard)

    async def _catch_up(self, games: list[int]) -> None:
        for game_id in games:
            try:
                found = await sync_to_async(_read_version, thread_sensitive=False)(game_id)
            except Exception:
                logger.exception("events: reading the version of race %s failed", game_id)
                continue
            if found is not None and game_id in self.viewers:
                self.update(game_id, *found)

    def heard(self, data: bytes) -> None:
        try:
            said = json.loads(data)
            game_id, version, over = int(said["g"]), int(said["v"]), bool(said["over"])
        except (ValueError, KeyError, TypeError):
            logger.warning("events: a message that is not a race version: %r", data[:200])
            return
        if game_id in self.viewers:
            self.update(game_id, version, over)

    # --- fanning out -----------------------------------------------------------------------

    def update(self, game_id: int, version: int, over: bool) -> None:
        viewers = self.viewers.get(game_id, set())
        event = _event("version", version, {"v": version})
        watching = False
        for viewer in viewers:
            if viewer.mode == "runner":
                viewer.offer(version, event, end=over)
                self.delivered += 1
            else:
                watching = True
        if watching:
            board = self.boards.get(game_id)
            if board is not None and board.version >= version:
                self._board_out(game_id, board)
            else:
                self.wanted[game_id] = max(self.wanted.get(game_id, -1), version)
                if game_id not in self.rendering:
                    self.rendering[game_id] = asyncio.create_task(self._render(game_id))

    async def _render(self, game_id: int) -> None:
        """Renders the board until it is at least at the newest version heard of: one render
        at a time per game, however many versions come in meanwhile."""
        try:
            while True:
                found = await sync_to_async(_render_board, thread_sensitive=False)(game_id)
                if found is None:
                    return
                version, over, html = found
                board = Board(version, over, _event("board", version, {"v": version, "html": html}))
                if game_id in self.viewers:
                    self.boards[game_id] = board
                self._board_out(game_id, board)
                # A version heard of while this one was rendered: once more.
                if over or version >= self.wanted.get(game_id, -1):
                    return
        except Exception:
            logger.exception("events: rendering the board of race %s failed", game_id)
        finally:
            self.rendering.pop(game_id, None)
            self.wanted.pop(game_id, None)

    def _board_out(self, game_id: int, board: Board) -> None:
        for viewer in self.viewers.get(game_id, set()):
            if viewer.mode == "watch":
                viewer.offer(board.version, board.event, end=board.over)
                self.delivered += 1

    # --- viewers ---------------------------------------------------------------------------

    def join(self, viewer: Viewer) -> None:
        self.viewers.setdefault(viewer.game_id, set()).add(viewer)
        self.count += 1

    def leave(self, viewer: Viewer) -> None:
        viewers = self.viewers.get(viewer.game_id)
        self.count -= 1
        if viewers is None:
            return
        viewers.discard(viewer)
        if not viewers:
            del self.viewers[viewer.game_id]
            self.boards.pop(viewer.game_id, None)

    async def resync(self, viewer: Viewer) -> None:
        """A viewer just connected: the current state, if it has not seen it."""
        found = await sync_to_async(_read_version, thread_sensitive=False)(viewer.game_id)
        if found is None:
            viewer.closing = True
            viewer.wake.set()
            return
        version, over = found
        if version > viewer.seen or over:
            self.update(viewer.game_id, version, over)
            if over and version <= viewer.seen:
                viewer.offer(version, b"", end=True)


_hub: Hub | None = None


def hub() -> Hub:
    """This process's hub, started by the lifespan (or by the first stream, for a server
    run without lifespan events)."""
    global _hub
    if _hub is None:
        _hub = Hub()
        _hub.start()
    return _hub


# --- the ASGI application --------------------------------------------------------------------

CORS = [(b"access-control-allow-origin", b"*")]


async def _answer(send: Send, status: int, text: str, headers: list[tuple[bytes, bytes]]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"cache-control", b"no-store"),
                *CORS,
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": text.encode()})


def _seen(scope: Scope, query: dict[str, list[str]]) -> int:
    headers = dict(scope.get("headers") or [])
    raw = headers.get(b"last-event-id", b"").decode("latin-1") or (query.get("v") or [""])[0]
    return int(raw) if raw.isascii() and raw.isdigit() and len(raw) < 12 else -1


async def _stream(scope: Scope, receive: Receive, send: Send) -> None:
    path = scope.get("path", "")
    if path == "/healthz":
        # For a balancer: 200 while this process listens on the channel.
        if hub().subscribed and not hub().stopping.is_set():
            await _answer(send, 200, f"ok: {hub().count} viewers", [])
        else:
            await _answer(send, 503, "not subscribed to the race channel", [])
        return
    match = PATH.match(path)
    if match is None:
        await _answer(send, 404, "There is no event stream here.", [])
        return
    if scope.get("method") == "OPTIONS":
        await _answer(
            send,
            204,
            "",
            [
                (b"access-control-allow-methods", b"GET"),
                (b"access-control-allow-headers", b"last-event-id, cache-control"),
            ],
        )
        return
    if scope.get("method") not in {"GET", "HEAD"}:
        await _answer(send, 405, "Only GET reads an event stream.", [(b"allow", b"GET")])
        return
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    mode = (query.get("as") or ["watch"])[0]
    if mode not in MODES:
        await _answer(send, 400, "Say as=watch or as=runner.", [])
        return
    hub_ = hub()
    if hub_.count >= settings.SSE_MAX_CONNECTIONS or hub_.stopping.is_set():
        await _answer(
            send, 503, "Too many live viewers here: the page updates itself by polling.", []
        )
        return
    game_id = int(match.group(1))
    if not await sync_to_async(_has_stream, thread_sensitive=False)(game_id):
        await _answer(send, 404, "There is no event stream here.", [])
        return
    viewer = Viewer(game_id=game_id, mode=mode, seen=_seen(scope, query))
    hub_.join(viewer)
    gone = asyncio.Event()

    async def watch_disconnect() -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                gone.set()
                viewer.wake.set()
                return

    watcher = asyncio.create_task(watch_disconnect())
    try:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/event-stream; charset=utf-8"),
                    (b"cache-control", b"no-store"),
                    (b"x-accel-buffering", b"no"),
                    *CORS,
                ],
            }
        )
        await send(
            {
                "type": "http.response.body",
                "body": f"retry: {settings.SSE_RETRY_MS}\n: connected\n\n".encode(),
                "more_body": True,
            }
        )
        await hub_.resync(viewer)
        heartbeat = settings.SSE_HEARTBEAT_SECONDS
        while not gone.is_set():
            if viewer.leaving:
                await send({"type": "http.response.body", "body": b""})
                return
            if viewer.pending is None and not viewer.closing:
                viewer.wake.clear()
                try:
                    await asyncio.wait_for(viewer.wake.wait(), heartbeat)
                except TimeoutError:
                    await send(
                        {"type": "http.response.body", "body": b": ping\n\n", "more_body": True}
                    )
                    continue
            if gone.is_set() or viewer.leaving:
                continue
            chunk, viewer.pending = viewer.pending, None
            if viewer.closing:
                await send({"type": "http.response.body", "body": (chunk or b"") + END})
                return
            if chunk:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
    except asyncio.CancelledError:
        # The server stopped before the stream ended (its graceful timeout): nothing to say.
        pass
    finally:
        hub_.leave(viewer)
        watcher.cancel()


async def _lifespan(receive: Receive, send: Send) -> None:
    global _hub
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            _hub = None  # a hub of an earlier event loop (a test's earlier server) is dead
            hub()
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            if _hub is not None:
                await _hub.stop()
                _hub = None
            await send({"type": "lifespan.shutdown.complete"})
            return


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "lifespan":
        await _lifespan(receive, send)
    elif scope["type"] == "http":
        await _stream(scope, receive, send)


def _stop_streams_on_exit() -> None:
    """uvicorn waits for open responses before it stops, and an event stream never ends by
    itself: on SIGTERM or SIGINT, every stream of this process ends at once (the browsers
    reconnect elsewhere), then uvicorn stops as usual."""
    original = uvicorn.Server.handle_exit

    def handle_exit(self: uvicorn.Server, sig: int, frame: Any) -> None:
        current = _hub
        if current is not None and current.loop is not None:
            with contextlib.suppress(RuntimeError):
                current.loop.call_soon_threadsafe(current.let_go)
        original(self, sig, frame)

    uvicorn.Server.handle_exit = handle_exit  # type: ignore[method-assign]


_stop_streams_on_exit()


def stats() -> dict[str, float]:
    """For the bench and tests: viewers connected and events handed out in this process."""
    current = _hub
    return {
        "viewers": 0 if current is None else current.count,
        "delivered": 0 if current is None else current.delivered,
        "at": time.time(),
    }
