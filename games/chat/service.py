"""A game's chat: writing, muting, reporting, and what each viewer may read.

Two channels. The players' channel: players write, anyone may read it (it is said on the
page). The spectators' channel: anyone signed in without a seat (guests too) writes; until the
game is over only spectators read it, so that a watcher, who may see what a player may not,
cannot tell a player anything. Once the game is over everyone reads both. Messages are plain
text (the templates escape them), at most ChatMessage.MAX_CHARS characters."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from typing import Any

from django.db import router, transaction
from django.db.models import Exists, OuterRef, Subquery

from games import clock, statements
from games.mail import chatnews, notices
from games.models import ChatMessage, ChatMute, ChatReport, Game, Seat

Channel = ChatMessage.Channel

# The page shows this many messages at most, the latest: a page costs the same however long
# the chat grew.
LATEST = 100

OVER = (Game.Status.FINISHED, Game.Status.ABORTED)


class ChatError(Exception):
    """A chat action the site refuses. `str(exc)` is a sentence for the person."""


def visible_channels(*, is_player: bool, over: bool) -> list[str]:
    """What a viewer reads: a player reads the spectators' channel only once the game is over."""
    if is_player and not over:
        return [Channel.PLAYERS]
    return [Channel.PLAYERS, Channel.SPECTATORS]


def text_clean(text: Any) -> str:
    """The message as it is stored, or ChatError: line ends made "\\n", other control
    characters dropped, spaces around it stripped; not empty, not too long."""
    if not isinstance(text, str):
        raise ChatError("Write a message first.")
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = "".join(
        c for c in text if c in "\n\t" or not unicodedata.category(c).startswith("C")
    ).strip()
    if not text:
        raise ChatError("Write a message first.")
    if len(text) > ChatMessage.MAX_CHARS:
        raise ChatError(
            f"A message can be at most {ChatMessage.MAX_CHARS} characters; yours has {len(text)}."
        )
    return text


def _is_player(game_id: int, user: Any) -> bool:
    return bool(
        user.is_authenticated and Seat.objects.filter(game_id=game_id, user_id=user.pk).exists()
    )


def chat_post(*, game_id: int, user: Any, text: Any) -> ChatMessage:
    """A message from `user`: in the players' channel if they have a seat, else in the
    spectators'. A player's message may bring the other players a chat mail (mail.notices)."""
    if not user.is_authenticated:
        raise ChatError("Sign in, or join a game as a guest, to chat.")
    clean = text_clean(text)
    with transaction.atomic():
        game = _game_seen(game_id, user)
        is_player = _is_player(game_id, user)
        message = ChatMessage.objects.create(
            game=game,
            author=user,
            channel=Channel.PLAYERS if is_player else Channel.SPECTATORS,
            text=clean,
            created_at=clock.now(),
        )
        if is_player:
            notices.chat_posted(game_id=game_id, author_id=user.pk)
    return message


def _game_seen(game_id: int, user: Any) -> Game:
    """The game, if `user` may see it (Game.hidden_from), else ChatError."""
    game = Game.objects.filter(pk=game_id).only("id", "status", "invite_token").first()
    if game is None or game.hidden_from(game.seats.all(), user):
        raise ChatError("There is no such game.")
    return game


def _visible_message(*, game_id: int, user: Any, message_id: int | None) -> ChatMessage:
    """A message of this game that `user` may read, or ChatError."""
    _game_seen(game_id, user)
    message = (
        ChatMessage.objects.filter(pk=message_id or 0, game_id=game_id)
        .select_related("author", "game")
        .first()
    )
    if message is None or message.channel not in visible_channels(
        is_player=_is_player(game_id, user), over=message.game.is_over
    ):
        raise ChatError("That message is not in this chat.")
    return message


def chat_report(*, game_id: int, user: Any, message_id: int | None) -> ChatReport:
    """`user` reports a message they can read, once; the staff see it in the admin."""
    if not user.is_authenticated:
        raise ChatError("Sign in to report a message.")
    message = _visible_message(game_id=game_id, user=user, message_id=message_id)
    if message.author_id == user.pk:
        raise ChatError("You cannot report your own message.")
    report, created = ChatReport.objects.get_or_create(
        message=message, reporter=user, defaults={"created_at": clock.now()}
    )
    if not created:
        raise ChatError("You have reported this message already.")
    return report


def chat_mute(*, game_id: int, user: Any, message_id: int | None) -> ChatMute:
    """`user` no longer sees the messages of the author of this message, in any game."""
    if not user.is_authenticated:
        raise ChatError("Sign in to mute someone.")
    message = _visible_message(game_id=game_id, user=user, message_id=message_id)
    if message.author_id == user.pk:
        raise ChatError("You cannot mute yourself.")
    mute, created = ChatMute.objects.get_or_create(
        user_id=user.pk, muted_id=message.author_id, defaults={"created_at": clock.now()}
    )
    if not created:
        raise ChatError(f"You have muted {message.author.get_username()} already.")
    return mute


def chat_unmute(*, user: Any, muted_id: int | None) -> None:
    """`user` sees the messages of `muted_id` again."""
    if not user.is_authenticated:
        raise ChatError("Sign in to unmute someone.")
    deleted, _ = ChatMute.objects.filter(user_id=user.pk, muted_id=muted_id or 0).delete()
    if not deleted:
        raise ChatError("You have not muted that person.")


# --- reading ---------------------------------------------------------------------------------


@dataclass
class ChatView:
    """What one viewer sees of a game's chat."""

    is_player: bool
    over: bool
    can_write: bool
    players: list[ChatMessage] = field(default_factory=list)
    spectators: list[ChatMessage] = field(default_factory=list)
    show_spectators: bool = False
    muted: list[tuple[int, str]] = field(default_factory=list)  # (user id, name), shown
    last_id: int = 0
    # Messages of muted people left out, in each channel.
    hidden_players: int = 0
    hidden_spectators: int = 0

    @property
    def hidden(self) -> int:
        return self.hidden_players + self.hidden_spectators


# The markers of the compiled read's parameters: the game and up to two channels (a viewer
# who reads one channel names it twice).
_GAME_ID, _FIRST, _SECOND = -7_000_201, "\x00first-channel", "\x00second-channel"
_LATEST = statements.Compiled(
    lambda game_id, first, second: (
        ChatMessage.objects.filter(game_id=game_id, channel__in=[first, second])
        .select_related("author")
        .order_by("-id")[:LATEST]
    ),
    _GAME_ID,
    _FIRST,
    _SECOND,
)


def _latest(game_id: int, channels: list[str]) -> list[ChatMessage]:
    """The latest LATEST messages of these channels (one or two), oldest first, each with its
    author: one statement along chat_game_latest, compiled once per connection (the ORM's
    building of it cost several times its round trip on every game page)."""
    first, second = (channels * 2)[:2]
    found = _LATEST.fetch(game_id, first, second, alias=router.db_for_read(ChatMessage))
    found.reverse()
    return found


def chat_read(*, game: Game, user: Any, is_player: bool, written: bool | None = None) -> ChatView:
    """The latest LATEST messages this viewer may read, without the muted people's (two
    queries; one when nobody wrote; none when the caller knows nobody wrote: `written`
    False, as a game page's facts tell). Marks them read for a player (chatnews), so that no
    mail tells of them."""
    over = game.is_over
    channels = visible_channels(is_player=is_player, over=over)
    rows = _latest(game.pk, channels) if written is not False else []
    view = ChatView(
        is_player=is_player,
        over=over,
        can_write=bool(user.is_authenticated),
        show_spectators=Channel.SPECTATORS in channels,
    )
    if not rows:
        return view
    view.last_id = rows[-1].pk
    authors = {m.author_id: m.author.get_username() for m in rows}
    muted: set[int] = set()
    if user.is_authenticated:
        muted = set(
            ChatMute.objects.filter(user_id=user.pk, muted_id__in=authors).values_list(
                "muted_id", flat=True
            )
        )
    for m in rows:
        if m.author_id in muted and m.channel == Channel.PLAYERS:
            view.hidden_players += 1
        elif m.author_id in muted:
            view.hidden_spectators += 1
        elif m.channel == Channel.PLAYERS:
            view.players.append(m)
        else:
            view.spectators.append(m)
    view.muted = sorted(((a, authors[a]) for a in muted), key=lambda pair: pair[1])
    if is_player:
        chatnews.seen_mark(game_id=game.pk, user_id=user.pk, message_id=view.last_id)
    return view


def chat_changed(
    *, game_id: int, user_id: int | None, after: int, over: bool, is_player: bool
) -> bool | None:
    """Whether a viewer whose chat shows messages up to `after`, for a game over or not, as a
    player or not, has anything new to see; None if there is no such game. One query."""
    seat = Seat.objects.filter(game_id=OuterRef("pk"), user_id=user_id or 0)
    messages = ChatMessage.objects.filter(game_id=OuterRef("pk")).order_by("-id").values("id")
    latest = messages[:1]
    latest_players = messages.filter(channel=Channel.PLAYERS)[:1]
    row = (
        Game.objects.filter(pk=game_id)
        .annotate(
            player=Exists(seat),
            latest=Subquery(latest),
            latest_players=Subquery(latest_players),
        )
        .values_list("status", "player", "latest", "latest_players")
        .first()
    )
    if row is None:
        return None
    status, player, latest_any, latest_players = row
    now_over = status in OVER
    if now_over != over or bool(player) != is_player:
        return True
    newest = latest_players if player and not now_over else latest_any
    return bool((newest or 0) > after)
