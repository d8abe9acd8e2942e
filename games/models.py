"""Games, their seats and moves. The database is the truth: an engine state is only ever
changed by a service, under a row lock, together with the Move that explains the change."""

from __future__ import annotations

import hashlib
import re
import secrets
import unicodedata
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import models
from django.urls import reverse
from django.utils import timezone


class Clock(models.TextChoices):
    DAYS_3 = "P3D", "3 days per move"
    DAYS_30 = "P30D", "30 days per move"
    LIVE = "live", "live"

    @classmethod
    def duration(cls, clock: str) -> timedelta | None:
        return {cls.DAYS_3: timedelta(days=3), cls.DAYS_30: timedelta(days=30)}.get(cls(clock))


def departure(move: dict[str, Any]) -> str | None:
    """How a move leaves the game: "resign", "timeout", or None for a move that stays."""
    if move.get("resign"):
        return "resign"
    if move.get("timeout"):
        return "timeout"
    return None


# Why a game was aborted (its result_reason), which says what moves it may have: its first
# clock ran out before the play began (ABORTED_ON_TIME: no move, or a Robot Maze Race's set-up
# only); a player aborted it before anyone but its creator moved (PLAYER_ABORTED); it was called
# off before it started (CALLED_OFF: no move at all).
ABORTED_ON_TIME = "aborted"
PLAYER_ABORTED = "player_aborted"
WITHDRAWN, DECLINED, EXPIRED = "withdrawn", "declined", "expired"
CALLED_OFF = (WITHDRAWN, DECLINED, EXPIRED)


class Game(models.Model):
    class Kind(models.TextChoices):
        CORNMAZE = "cornmaze", "Corn maze"
        ROBOTMAZE = "robotmaze", "Robot Maze Race"
        MAZERACE = "mazerace", "Maze Race"

    class Status(models.TextChoices):
        OPEN = "open", "waiting for players"
        ACTIVE = "active", "in progress"
        FINISHED = "finished", "finished"
        ABORTED = "aborted", "aborted"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    options = models.JSONField(default=dict)
    clock = models.CharField(max_length=8, choices=Clock.choices, default=Clock.DAYS_3)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN)
    seed = models.BinaryField(max_length=32, editable=False)
    seed_sha256 = models.CharField(max_length=64, editable=False)
    # The engine's state: holds the seed and everything hidden. Never rendered as it is.
    state = models.JSONField(null=True, blank=True, editable=False)
    ply = models.PositiveIntegerField(default=0)
    # Bumped by every change a viewer could see; the page polls it to know when to refresh.
    version = models.PositiveIntegerField(default=0)
    result_reason = models.CharField(max_length=32, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # A live race (Maze Race): the instant it starts, 3 s after the last runner pressed Ready,
    # and when the site must act on it: close it at its deadline, or abort it if its runners
    # never all pressed Ready. Swept like the seats' deadlines.
    race_starts_at = models.DateTimeField(null=True, blank=True)
    race_deadline = models.DateTimeField(null=True, blank=True)
    # Chosen at creation for a game by turns (play.core.game_create): {"bank_days": 7 or 14,
    # "weekends_off": true}; {} for the plain clock. Not the engine's: the engine never sees it.
    clock_options = models.JSONField(default=dict, db_default={}, blank=True)
    # What changed the clocks besides the moves, in order, as the record's `clock_events`:
    # {"at": ISO time, "seat": index, "kind": "gift", "by": index, "ply": the game's ply}.
    # Appended under the game's lock; read with the game row, so it costs no query.
    clock_events = models.JSONField(default=list, db_default=[], blank=True)
    # Ratings (games/archive/ratings.py): whether the game may change its players' ratings (a
    # creation option; off once a guest sits in it), and, once its end has changed them, its
    # place in the order in which rated games ended, which a recompute follows: finished_at
    # can tie, and two games ending at once may commit in either order.
    rated = models.BooleanField(default=True, db_default=True)
    rating_seq = models.PositiveBigIntegerField(null=True, blank=True, editable=False)
    # Challenges and invites (games/play/challenges.py). A private game's secret: only its
    # creator sees it, in the invite link; the game is not listed, and only the link joins it.
    invite_token = models.CharField(max_length=64, blank=True, editable=False, db_default="")
    # The finished game this one is the rematch of: one rematch offer a game, at most.
    rematch_of = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="rematch"
    )

    class Meta:
        indexes = [
            models.Index(fields=["status", "-created_at"], name="game_status_created"),
            models.Index(fields=["-finished_at", "-id"], name="game_finished"),
            # The lobby's games in progress, the latest started first (archive.selectors).
            models.Index(
                fields=["-started_at"],
                name="game_active_started",
                condition=models.Q(status="active"),
            ),
            models.Index(
                fields=["race_deadline"],
                name="game_race_deadline",
                condition=models.Q(race_deadline__isnull=False),
            ),
            # The next rated game's number (the greatest so far), and a recompute's order.
            models.Index(
                fields=["rating_seq"],
                name="game_rating_seq",
                condition=models.Q(rating_seq__isnull=False),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} #{self.pk}"

    def get_absolute_url(self) -> str:
        return reverse("game", args=[self.pk])

    @staticmethod
    def new_seed() -> tuple[bytes, str]:
        seed = secrets.token_bytes(32)
        return seed, hashlib.sha256(seed).hexdigest()

    @property
    def is_over(self) -> bool:
        return self.status in {self.Status.FINISHED, self.Status.ABORTED}

    def departures(self) -> list[tuple[int, str]]:
        """(seat, "resign" or "timeout") of each seat that left the game, in the order they
        left (one query)."""
        left = self.moves.filter(
            models.Q(move__has_key="resign") | models.Q(move__has_key="timeout")
        )
        rows = left.order_by("ply").values_list("seat", "move")
        return [(seat, how) for seat, move in rows if (how := departure(move))]

    @property
    def clock_duration(self) -> timedelta | None:
        return Clock.duration(self.clock)

    def turn_time(self, seat: Seat) -> timedelta:
        """The clock time a seat has for its turn, as it starts: the per-move time and what is
        left of its bank (`Seat.bank`). Its deadline is the turn's start plus this, counted by
        the seat's clock (play.deadlines.turn_deadlines); its reminder is due when a fifth of
        it is left (mail.notices.reminder_time)."""
        return (self.clock_duration or timedelta(0)) + (seat.bank or timedelta(0))

    @property
    def seed_hex(self) -> str:
        return bytes(self.seed).hex()

    def hidden_from(self, seats: Iterable[Seat], user: Any) -> bool:
        """Whether this viewer may not see this game: a private game waiting for players is
        seen only by its players, those it keeps a seat for and whoever opens its invite link
        (which does not ask this). Once it starts, anyone may watch it, as any game."""
        if self.status != self.Status.OPEN or not self.invite_token:
            return False
        me = user.pk if user.is_authenticated else None
        return me is None or not any(me in (s.user_id, s.reserved_for_id) for s in seats)


class Seat(models.Model):
    game = models.ForeignKey(Game, on_delete=models.CASCADE, related_name="seats")
    index = models.PositiveSmallIntegerField()
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="seats",
    )
    bot = models.CharField(max_length=16, blank=True)  # the bot's level; "" for a person
    # A seat kept for a challenged player (or a rematch's): it is theirs to accept, nobody
    # else's to join. Stays set once they accept (`user` then holds them too).
    reserved_for = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="reserved_seats",
    )
    deadline = models.DateTimeField(null=True, blank=True)
    # What is left of the seat's time bank (a game with `clock_options["bank_days"]`), as it
    # was when its turn started; recomputed when it moves (play.deadlines.turn_deadlines).
    # None: no bank (the plain clock, a bot).
    bank = models.DurationField(null=True, blank=True)
    place = models.PositiveSmallIntegerField(null=True, blank=True)
    joined_at = models.DateTimeField(null=True, blank=True)
    ready_at = models.DateTimeField(null=True, blank=True)  # a live race: pressed Ready
    # A seat kept for a challenged player who declined (play.challenges): the challenge is off.
    declined_at = models.DateTimeField(null=True, blank=True)
    # The game's finished_at, copied by play.core.game_end, so that a player's or a bot's games
    # over can be read newest first from one index (seat_user_finished, seat_bot_finished)
    # without visiting their games.
    finished_at = models.DateTimeField(null=True, blank=True)
    # When the seat left a game that goes on without it (resigned or timed out: the engine's
    # seats_left), copied by play.core so that "your games" can say so without the game's state.
    out_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["game", "index"]
        constraints = [
            models.UniqueConstraint(fields=["game", "index"], name="seat_unique_index"),
        ]
        indexes = [
            models.Index(
                fields=["deadline"],
                name="seat_deadline",
                condition=models.Q(deadline__isnull=False),
            ),
            # The sweep looks for bot turns whose task was lost: only bots to move are indexed.
            models.Index(
                fields=["deadline"],
                name="seat_bot_deadline",
                condition=models.Q(deadline__isnull=False) & ~models.Q(bot=""),
            ),
            # A player's games over, newest first, and their streak (games/archive/reads.py); the
            # seats of games not over (finished_at NULL) come first.
            models.Index(
                fields=["user", "-finished_at", "-game"],
                include=["place"],
                name="seat_user_finished",
            ),
            # A bot's games over, newest first (the archive's player filter, with a bot's name).
            models.Index(
                fields=["bot", "-finished_at", "-game"],
                include=["place"],
                name="seat_bot_finished",
                condition=~models.Q(bot=""),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.game} seat {self.index}: {self.name}"

    @property
    def is_open(self) -> bool:
        return self.user_id is None and not self.bot and self.reserved_for_id is None

    @property
    def is_reserved(self) -> bool:
        """Kept for a challenged player who has not accepted yet."""
        return self.user_id is None and self.reserved_for_id is not None

    @property
    def name(self) -> str:
        return seat_name(
            bot=self.bot,
            player=self.user.get_username() if self.user is not None else None,
            kept_for=self.reserved_for.get_username()
            if self.is_reserved and self.reserved_for is not None
            else None,
            declined=self.declined_at is not None,
        )


def bot_name(level: str) -> str:
    """A bot's name as the site shows it: "Bot (strong)"."""
    return f"Bot ({level})"


# bot_name's text as people type it: any case, spaces or none around the parentheses.
_BOT_NAME = re.compile(r"\s*bot\s*\(\s*([^()]*?)\s*\)\s*", re.IGNORECASE)


def bot_level_named(name: str) -> str | None:
    """The level in a bot's name (bot_name) as people type it, "bot (Strong)" or "BOT(strong)"
    alike, lowercased; None if `name` is not written as a bot's name. Whether there is a bot of
    that level is the caller's to ask (bots.all_levels). No username looks so: usernames have no
    parentheses."""
    match = _BOT_NAME.fullmatch(name)
    return match.group(1).lower() if match else None


def seat_name(*, bot: str, player: str | None, kept_for: str | None, declined: bool = False) -> str:
    """A seat's name as lists show it: its bot, its player's username, the challenged player it
    is kept for (`kept_for`, while nobody sits in it; `declined`: they said no), or an open
    seat."""
    if bot:
        return bot_name(bot)
    if player is None and kept_for is not None:
        return f"{kept_for} ({'declined' if declined else 'challenged'})"
    if player is None:
        return "(open seat)"
    return player


class PlayerResult(models.Model):
    """A player's results at one game: counts kept by play.core.game_end as each game finishes,
    so that a player page need not count thousands of games (games/archive/reads.py)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="results",
        db_index=False,  # player_result_unique_kind leads with the user
    )
    kind = models.CharField(max_length=16, choices=Game.Kind.choices)
    played = models.PositiveIntegerField(default=0)
    won = models.PositiveIntegerField(default=0)
    lost = models.PositiveIntegerField(default=0)
    timed_out = models.PositiveIntegerField(default=0)  # lost by running out of time

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "kind"], name="player_result_unique_kind"),
        ]

    def __str__(self) -> str:
        return f"{self.user} at {self.kind}: {self.won} of {self.played} won"


class Rating(models.Model):
    """A player's current rating at one game kind (OpenSkill's Plackett-Luce model: mu, the
    skill, and sigma, its uncertainty), kept by games/archive/ratings.py as each rated game
    ends. The player is a person (`user`) or a bot level (`bot`): a level plays the same way in
    every game, so it is one player, and bots have no users of their own."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="ratings",
        db_index=False,  # rating_unique_user leads with the user
    )
    bot = models.CharField(max_length=16, blank=True)
    kind = models.CharField(max_length=16, choices=Game.Kind.choices)
    mu = models.FloatField()
    sigma = models.FloatField()
    # mu - 3 sigma: the careful estimate the leaderboard sorts by and the pages show, scaled.
    ordinal = models.FloatField()
    games = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "kind"],
                condition=models.Q(user__isnull=False),
                name="rating_unique_user",
            ),
            models.UniqueConstraint(
                fields=["bot", "kind"], condition=~models.Q(bot=""), name="rating_unique_bot"
            ),
            models.CheckConstraint(
                condition=(models.Q(user__isnull=False) & models.Q(bot=""))
                | (models.Q(user__isnull=True) & ~models.Q(bot="")),
                name="rating_user_or_bot",
            ),
        ]
        indexes = [
            # The leaderboard: players with enough games, best first.
            models.Index(
                fields=["kind", "-ordinal", "id"],
                name="rating_leaderboard",
                condition=models.Q(games__gte=5),
            ),
        ]

    def __str__(self) -> str:
        who = bot_name(self.bot) if self.bot else str(self.user)
        return f"{who} at {self.kind}: {self.mu:.2f} ± {self.sigma:.2f}"


class RatingChange(models.Model):
    """What one rated game did to one seat's rating: before and after. The game's end shows
    it; the player page's chart reads the newest of them along rating_change_history."""

    # Both indexed by the constraint and the index below, which lead with them.
    game = models.ForeignKey(
        Game, on_delete=models.CASCADE, related_name="rating_changes", db_index=False
    )
    seat = models.PositiveSmallIntegerField()
    rating = models.ForeignKey(
        Rating, on_delete=models.CASCADE, related_name="changes", db_index=False
    )
    seq = models.PositiveBigIntegerField()  # the game's rating_seq
    at = models.DateTimeField()  # the game's finished_at
    place = models.PositiveSmallIntegerField()
    mu_before = models.FloatField()
    sigma_before = models.FloatField()
    mu_after = models.FloatField()
    sigma_after = models.FloatField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["game", "seat"], name="rating_change_unique_seat"),
        ]
        indexes = [models.Index(fields=["rating", "-seq"], name="rating_change_history")]

    def __str__(self) -> str:
        return f"{self.game} seat {self.seat}: {self.mu_before:.2f} -> {self.mu_after:.2f}"


class Move(models.Model):
    """One ply, append-only. `move` and `outcome` are the record's, as the engine gave them."""

    game = models.ForeignKey(Game, on_delete=models.CASCADE, related_name="moves")
    ply = models.PositiveIntegerField()
    seat = models.PositiveSmallIntegerField()
    at = models.DateTimeField()
    move = models.JSONField()
    outcome = models.JSONField(default=dict)

    class Meta:
        ordering = ["game", "ply"]
        constraints = [
            models.UniqueConstraint(fields=["game", "ply"], name="move_unique_ply"),
        ]

    def __str__(self) -> str:
        return f"{self.game} ply {self.ply}"


class Profile(models.Model):
    """What the site knows of a person beyond Django's user: guest or not, how to reach them."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="profile"
    )
    is_guest = models.BooleanField(default=False)
    # The secret of a guest's private link, which brings it back from another browser.
    guest_key = models.CharField(max_length=64, blank=True, db_index=True)
    email_verified = models.BooleanField(default=False)
    # A new address waiting for its link to be opened. Until then the verified `user.email`
    # keeps its mail and its password resets, so a typo does not cut the player off.
    pending_email = models.CharField(max_length=254, blank=True, db_default="")
    # The calendar feed's link (games/accounts/calendar.py): "" means no link. The link's secret
    # is derived from this and SECRET_KEY, so the database alone does not give it away; a new
    # value makes a new link, and the old one stops working.
    calendar_key = models.CharField(max_length=32, blank=True, db_default="")
    # An IANA zone name: the weekends of a game with weekends off are this player's own.
    time_zone = models.CharField(max_length=64, default="UTC", db_default="UTC")

    def __str__(self) -> str:
        return f"profile of {self.user}"


class UsernameKey(models.Model):
    """A user's name as names are compared for sameness (`of`): unique, so that no two
    players' names differ only in case or width, in any script. Neither database's own
    comparison does it in full (PostgreSQL's UPPER leaves ß as it is, SQLite's folds ASCII
    only), and a check before the insert leaves two sign-ups at once free to pass it. Kept
    with every save of a user's name (`accounts.profiles`)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        primary_key=True,
        on_delete=models.CASCADE,
        related_name="username_key",
    )
    # Case folding may lengthen a name (ß is ss): up to three times its 150 characters.
    key = models.CharField(max_length=450, unique=True)

    def __str__(self) -> str:
        return self.key

    @staticmethod
    def of(username: str) -> str:
        """NFKC case folding: `Straße` and `STRASSE` are `strasse`, `ＡＮＮＡ` is `anna`."""
        return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", username).casefold())


def users_named(username: str) -> models.QuerySet[Any]:
    """The user whose name is `username` but for case and width, if any: one indexed read of
    `UsernameKey` (a user written by raw SQL, without its key, is not found here)."""
    return get_user_model().objects.filter(username_key__key=UsernameKey.of(username))


def json_safe(value: Any) -> Any:
    """Tuples to lists, recursively, so that what an engine returns compares equal after a
    round trip through a JSONField. On every move, over the whole state: the leaves (most of
    it) are passed without a call each."""
    if isinstance(value, dict):
        return {
            k if type(k) is str else str(k): v if type(v) in _JSON_LEAVES else json_safe(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [v if type(v) in _JSON_LEAVES else json_safe(v) for v in value]
    return value


_JSON_LEAVES = frozenset({str, int, float, bool, type(None)})


# --- clocks and mails ------------------------------------------------------------------------


class Reminder(models.Model):
    """A reminder for a seat's turn, due when a fifth of its time is left: at the deadline
    minus a fifth of the turn's time on the seat's clock (`Game.turn_time`,
    `mail.notices.reminder_time`: with weekends off, counted back over weekdays), kept so by
    `play.deadlines.deadlines_set` however the deadline is set or moved. Made when the turn starts,
    deleted when the seat moves or the game ends; the sweep turns a due one into a mail, once
    per turn. A row, not a Celery task days ahead: the database keeps time, not the broker."""

    seat = models.ForeignKey(Seat, on_delete=models.CASCADE, related_name="reminders")
    ply = models.PositiveIntegerField()  # the game's ply when the turn started
    due = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["seat", "ply"], name="reminder_unique_seat_ply"),
        ]
        indexes = [models.Index(fields=["due"], name="reminder_due")]

    def __str__(self) -> str:
        return f"reminder for {self.seat} at ply {self.ply}"


class Outbox(models.Model):
    """One mail, sent at most once: the unique key (game, seat, ply, kind) for a game's mails,
    (user, day) for a digest, means a task that runs twice finds the row already there.

    The outbox is the queue: a pending row says when it is next due (`next_try_at`), and the
    sweep queues every pending row whose time has come. A task is queued at once when a row is
    made; its time is then a short grace later, after which the task counts as lost (see
    `mail.outbox.task_grace`). A send that failed waits out its backoff, and a "your turn"
    mail held while the player has the game open waits until they leave, in the same column."""

    class Kind(models.TextChoices):
        YOUR_TURN = "your_turn", "your turn"
        REMINDER = "reminder", "reminder"
        GAME_OVER = "game_over", "game over"
        DIGEST = "digest", "daily digest"
        VACATION = "vacation", "automatic vacation"
        CHALLENGE = "challenge", "challenge"
        CHAT = "chat", "chat messages"
        DROPPED = "dropped", "dropped from a game"
        DECLINED = "declined", "challenge declined"
        WITHDRAWN = "withdrawn", "game withdrawn"
        EXPIRED = "expired", "challenge expired"

    class Status(models.TextChoices):
        PENDING = "pending", "pending"
        SENT = "sent", "sent"
        SKIPPED = "skipped", "not sent"  # not wanted any more when its turn came; see `note`
        FAILED = "failed", "failed"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    game = models.ForeignKey(
        Game, null=True, blank=True, on_delete=models.CASCADE, related_name="mails"
    )
    seat = models.PositiveSmallIntegerField(null=True, blank=True)
    ply = models.PositiveIntegerField(default=0)
    day = models.DateField(null=True, blank=True)  # a digest's day
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    to_email = models.CharField(max_length=254, blank=True)
    subject = models.CharField(max_length=200, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    note = models.TextField(blank=True)  # the last error, or why it was not sent
    created_at = models.DateTimeField(default=timezone.now)
    # A pending mail's next try: the sweep queues it once this time has come.
    next_try_at = models.DateTimeField(default=timezone.now)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "outbox mail"
        constraints = [
            models.UniqueConstraint(
                fields=["game", "seat", "ply", "kind"], name="outbox_unique_mail"
            ),
            models.UniqueConstraint(
                fields=["user", "day"],
                condition=models.Q(kind="digest"),
                name="outbox_unique_digest",
            ),
            # One chat mail a day at most (games/mail/notices.py): one pending or sent a day.
            models.UniqueConstraint(
                fields=["user", "day"],
                condition=models.Q(kind="chat", status__in=["pending", "sent"]),
                name="outbox_unique_chat_day",
            ),
        ]
        indexes = [
            models.Index(
                fields=["next_try_at"],
                name="outbox_pending_next_try",
                condition=models.Q(status="pending"),
            ),
            models.Index(fields=["-created_at"], name="outbox_created"),
        ]

    def __str__(self) -> str:
        where = f" {self.game} seat {self.seat} ply {self.ply}" if self.game_id else ""
        return f"{self.get_kind_display()} to {self.user}{where}"


class EmailPreferences(models.Model):
    """Which mails a person wants. No row means the defaults."""

    class TurnMails(models.TextChoices):
        IMMEDIATE = "immediate", "a mail each time it is my turn"
        DIGEST = "digest", "one daily digest of the games where it is my move"
        OFF = "off", "no mail"

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="email_preferences"
    )
    turn_mails = models.CharField(
        max_length=16, choices=TurnMails.choices, default=TurnMails.IMMEDIATE
    )
    reminder = models.BooleanField(
        default=True, help_text="A reminder when a fifth of the time for a move is left."
    )
    game_over = models.BooleanField(default=True, help_text="A mail with the result.")
    challenge = models.BooleanField(
        default=True,
        db_default=True,
        help_text=(
            "A mail when someone challenges me or offers a rematch, and when a game I made, was "
            "challenged to or joined is called off before it starts."
        ),
    )
    chat = models.BooleanField(
        default=True,
        db_default=True,
        help_text="A mail with chat messages you missed, once a day at most.",
    )

    class Meta:
        verbose_name_plural = "email preferences"

    def __str__(self) -> str:
        return f"email preferences of {self.user}"


# --- vacations (issue 14) --------------------------------------------------------------------


class Vacation(models.Model):
    """A registered player's vacation allowance and the vacation they are on, if any
    (games/play/vacations.py). No row means the defaults: 14 days, automatic vacation on.

    While `started_at <= now < until` the player is on vacation: the days of it were taken from
    `days_left` when it started (`days_planned`), and a return before `until` gives back the days
    not begun. Their seats' deadlines were moved by the service; nothing here is swept."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="vacation"
    )
    days_left = models.PositiveSmallIntegerField(default=14)
    automatic = models.BooleanField(
        default=True,
        help_text="When a clock would run out, a vacation starts instead, while days are left.",
    )
    # Weeks played are counted up to here: a move at or after it is in a week not counted yet.
    weeks_counted_to = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    until = models.DateTimeField(null=True, blank=True)
    days_planned = models.PositiveSmallIntegerField(default=0)
    was_automatic = models.BooleanField(default=False)

    def __str__(self) -> str:
        return f"vacation of {self.user}"

    def on_vacation(self, now: Any) -> bool:
        return vacation_now(self.started_at, self.until, now) is not None


def vacation_now(
    started_at: datetime | None, until: datetime | None, now: datetime
) -> datetime | None:
    """When a vacation of these bounds ends, if it is on at `now` (else None): the one rule, for
    a Vacation and for the bounds the pages read as plain values."""
    if started_at is not None and until is not None and started_at <= now < until:
        return until
    return None


class ClockEvent(models.Model):
    """A vacation's start or early end in one game (games/play/vacations.py): rows, since a
    vacation writes them into all of a player's games at once. A gift of time is kept on the
    game itself (Game.clock_events); the record lists both, in time order, as `clock_events`."""

    class Kind(models.TextChoices):
        VACATION_START = "vacation_start", "vacation started"
        VACATION_END = "vacation_end", "vacation ended"

    game = models.ForeignKey(Game, on_delete=models.CASCADE, related_name="vacation_events")
    seat = models.PositiveSmallIntegerField()
    kind = models.CharField(max_length=32, choices=Kind.choices)
    at = models.DateTimeField()
    ply = models.PositiveIntegerField(default=0)  # the game's ply when it happened
    data = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["game", "at", "id"]
        indexes = [models.Index(fields=["game", "at"], name="clock_event_game_at")]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} in {self.game} seat {self.seat}"


# --- chat ------------------------------------------------------------------------------------


class ChatMessage(models.Model):
    """One message in a game's chat (games/chat). The players' channel is for everyone to read;
    the spectators' channel is read by spectators only until the game is over, so that nobody
    watching can tell a player what the player may not see. Plain text, shown escaped."""

    class Channel(models.TextChoices):
        PLAYERS = "players", "players"
        SPECTATORS = "spectators", "spectators"

    MAX_CHARS = 500

    game = models.ForeignKey(Game, on_delete=models.CASCADE, related_name="chat_messages")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="chat_messages"
    )
    channel = models.CharField(max_length=16, choices=Channel.choices)
    text = models.TextField(max_length=MAX_CHARS)
    created_at = models.DateTimeField()

    class Meta:
        indexes = [
            # A game's latest messages, and the poll's "anything after id N?".
            models.Index(fields=["game", "-id"], name="chat_game_latest"),
        ]

    def __str__(self) -> str:
        return f"{self.author} in {self.game} ({self.channel}): {self.text[:40]}"


class ChatMute(models.Model):
    """`user` does not see `muted`'s messages, in any game."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="chat_mutes",
        db_index=False,  # chat_mute_unique leads with the user
    )
    muted = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "muted"], name="chat_mute_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.user} muted {self.muted}"


class ChatReport(models.Model):
    """A person's report of a message, for the staff (the admin lists reported messages)."""

    message = models.ForeignKey(ChatMessage, on_delete=models.CASCADE, related_name="reports")
    reporter = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    created_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["message", "reporter"], name="chat_report_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.reporter} reported message {self.message_id}"


class ChatMailed(models.Model):
    """The last message of a game's chat that a mail has told a player of: a message is in one
    mail at most (games/mail/chatnews.py)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    game = models.ForeignKey(Game, on_delete=models.CASCADE, related_name="+")
    message_id = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "game"], name="chat_mailed_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.user} mailed up to {self.message_id} in {self.game}"
