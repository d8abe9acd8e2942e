"""Playing with people one knows: challenges, private invite links, withdrawing an open game,
aborting a game nobody else has moved in, and rematches.

A challenge is an open game with seats kept for the challenged players (`Seat.reserved_for`):
nobody else can take them, each challenged player accepts (the seat becomes theirs) or
declines (the challenge is off for everyone: the game is cancelled), and the game starts when
the last seat is filled, as a game with open seats does. A rematch offer is such a challenge,
made from a finished game: the same kind, options (copied whole) and clock, every seat turned
one place, the bots in theirs (a bot accepts at once). A challenge not accepted within
CHALLENGE_DAYS expires.

An open game that never started and is called off (withdrawn, declined, expired) ends as
ABORTED with that reason and without "game over" mails. Instead the people who waited on it
are told: a decline mails the challenger, who waits for the answer, and the players who had
accepted (or joined), who wait for the start; a withdrawal mails everyone but its creator,
the challenged players who had not answered yet too; an expired challenge mails its
challenger and the players who had accepted (or joined), naming who did not answer, and not
those who never answered. A running game that is aborted ends through `core.game_end` with no
places. Neither changes anybody's results."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction

from games import clock
from games.bots import levels
from games.engines import ENGINES
from games.mail import notices
from games.models import (
    DECLINED,
    EXPIRED,
    PLAYER_ABORTED,
    WITHDRAWN,
    Game,
    Profile,
    Seat,
    users_named,
)
from games.play import core, deadlines
from games.play.core import GameError

CHALLENGE_DAYS = 7
MAX_CHALLENGED = 5  # a Corn maze has six seats at most


def challenge_expires(game: Game, seats: Sequence[Seat]) -> bool:
    """Whether this open game (its `seats` read with it) has seats kept for players who have
    not accepted in time. One whose challenged players have all accepted waits on for its open
    seats, if any."""
    return game.created_at + timedelta(days=CHALLENGE_DAYS) <= clock.now() and any(
        s.is_reserved for s in seats
    )


def challenged_players(*, names: Sequence[str], creator: User) -> list[User]:
    """The registered players behind these names, in order, or a GameError saying which name
    cannot be challenged and why: oneself, an unknown name, a guest, a bot, a name twice."""
    names = [n.strip() for n in names if n.strip()]
    if len(names) > MAX_CHALLENGED:
        raise GameError(f"Challenge at most {MAX_CHALLENGED} players at once.")
    folded = [n.casefold() for n in names]
    for i, name in enumerate(folded):
        if name in folded[:i]:
            raise GameError(f"You named {names[i]} twice.")
    found = {
        u.get_username().casefold(): u
        for u in User.objects.filter(username__in=names, is_active=True)
    }
    if len(found) < len(names):
        # Usernames are case-sensitive in the database: look again, ignoring case.
        for name in names:
            if name.casefold() not in found:
                user = users_named(name).filter(is_active=True).first()
                if user is not None:
                    found[name.casefold()] = user
    bots = {"bot", *(level.casefold() for kind in ENGINES for level in levels(kind))}
    players = []
    for name in names:
        user = found.get(name.casefold())
        if user is None:
            level = name.casefold().removeprefix("bot (").removesuffix(")")
            if level in bots:
                raise GameError(
                    f"{name} is a bot: bots need no challenge. Choose one as a seat instead."
                )
            raise GameError(f"There is no player called {name}.")
        if user.pk == creator.pk:
            raise GameError("You cannot challenge yourself: name someone else.")
        if Profile.objects.filter(user=user, is_guest=True).exists():
            raise GameError(
                f"{user.get_username()} is a guest: invite guests with a private link instead."
            )
        players.append(user)
    return players


def challenge_accept(*, game_id: int, user: User) -> Seat:
    """Take the seat kept for this user; the game starts when no seat is left to fill."""
    with transaction.atomic():
        game = core.game_locked(game_id)
        seat = _kept_seat(game, user)
        seat.user = user
        seat.joined_at = clock.now()
        seat.save(update_fields=["user", "joined_at"])
        game.version += 1
        game.save(update_fields=["version"])
        core.game_start_when_full(game)
    return seat


def challenge_decline(*, game_id: int, user: User) -> Game:
    """Decline a challenge (or a rematch offer): it is off for everyone, and the challenger and
    the players who had accepted (or joined) are told by mail."""
    with transaction.atomic():
        game = core.game_locked(game_id)
        kept = _declined_seat(game, user)
        _call_off(game, DECLINED)
        kept.declined_at = game.finished_at
        kept.save(update_fields=["declined_at"])
        notices.challenge_declined(game=game)
    return game


def decline_refusal(*, game: Game, user: User) -> str | None:
    """Why this user cannot decline this game, or None: what the page that asks first checks
    (`challenge_decline` checks again, under the lock)."""
    try:
        _declined_seat(game, user)
    except GameError as exc:
        return str(exc)
    return None


def game_withdraw(*, game_id: int, user: User) -> Game:
    """The creator calls off a game that has not started: an open game or a challenge. The
    other people who waited on it are told by mail: whoever had accepted or joined, and the
    challenged players who had not answered yet."""
    with transaction.atomic():
        game = core.game_locked(game_id)
        refusal = withdraw_refusal(game=game, user=user)
        if refusal is not None:
            raise GameError(refusal)
        _call_off(game, WITHDRAWN)
        notices.game_withdrawn(game=game)
    return game


def withdraw_refusal(*, game: Game, user: User) -> str | None:
    """Why this user cannot withdraw this game, or None: checked by `game_withdraw` under the
    lock, and by the page that asks first without it."""
    if game.created_by_id != user.pk:
        return "Only the player who made this game can withdraw it."
    if game.status == Game.Status.ABORTED:
        return _called_off_text(game)
    if game.status != Game.Status.OPEN:
        return "The game has started: it cannot be withdrawn. You can resign."
    return None


def game_abort(*, game_id: int, user: User) -> Game:
    """A player ends a running game in which nobody but its creator has moved yet: aborted,
    with no result for anybody."""
    with transaction.atomic():
        game = core.game_locked(game_id)
        refusal = abort_refusal(game=game, user=user)
        if refusal is not None:
            raise GameError(refusal)
        core.game_end(game, at=clock.now(), reason=PLAYER_ABORTED, places=None)
        game.save(update_fields=list(core.GAME_END_FIELDS))
    return game


def abort_refusal(*, game: Game, user: User) -> str | None:
    """Why this user cannot abort this game, or None: checked by `game_abort` under the lock,
    and by the page that asks first without it."""
    seats = list(game.seats.order_by("index"))
    if not any(s.user_id == user.pk for s in seats):
        return "You have no seat in this game."
    if game.status == Game.Status.OPEN:
        return "The game has not started: its creator can withdraw it instead."
    if game.status != Game.Status.ACTIVE:
        return "The game is over: there is nothing to abort."
    if not abortable(game, seats):
        # The creator's moves never stand in the way: it is someone else's, or one's own.
        mine_or_free = [
            s.index
            for s in seats
            if s.user_id is not None and s.user_id in {user.pk, game.created_by_id}
        ]
        others = game.moves.exclude(seat__in=mine_or_free).exists()
        who = "another player has" if others else "you have"
        return f"Too late to abort: {who} moved already. You can resign instead."
    return None


def abortable(game: Game, seats: Sequence[Seat]) -> bool:
    """Whether nobody but the game's creator has moved yet in this running game (one query).
    A Robot Maze Race's set-up is not play: while it is unfinished the game may be aborted, as
    its clock would abort it, whoever has set up."""
    if game.status != Game.Status.ACTIVE:
        return False
    if not core.play_started(game):
        return True
    creator = [s.index for s in seats if s.user_id is not None and s.user_id == game.created_by_id]
    return not game.moves.exclude(seat__in=creator).exists()


def rematch_wait_until(finished_at: datetime | None, now: datetime) -> int | None:
    """Until when (a Unix time) the players' page of a game that finished at `finished_at`
    asks for a rematch offer (REMATCH_WAIT_SECONDS after the end); None once that has passed,
    or for a game not finished."""
    if finished_at is None:
        return None
    until = int((finished_at + timedelta(seconds=settings.REMATCH_WAIT_SECONDS)).timestamp())
    return until if until > now.timestamp() else None


def rematch_offer(*, game_id: int, user: User) -> Game:
    """Offer the players of a finished game the same game again (its kind, options, clock,
    clock options and whether it is rated), seats turned one place: seat 1's player sits in
    seat 0, and so on, the first seat's player last. The offer is a challenge to the other
    people; it starts at once if the others are bots. One offer a game: once it is made, it is
    what any player who asks again gets."""
    with transaction.atomic():
        old = core.game_locked(game_id)
        seats = list(old.seats.select_related("user").order_by("index"))
        if not any(s.user_id == user.pk for s in seats):
            raise GameError("Only a player of this game can offer a rematch.")
        if old.status != Game.Status.FINISHED:
            raise GameError("A rematch can be offered once the game is finished.")
        offered = Game.objects.filter(rematch_of=old).first()
        if offered is not None:
            # A second click, or two players at once: the offer made is the answer to both,
            # and a player it waits for has asked for the same game: they accept it.
            waits_for = offered.seats.filter(reserved_for=user, user__isnull=True)
            if offered.status == Game.Status.OPEN and waits_for.exists():
                challenge_accept(game_id=offered.pk, user=user)
                offered.refresh_from_db()
            return offered
        # The other players' pages of the finished game, which wait for an offer, show it.
        old.version += 1
        old.save(update_fields=["version"])
        seed, seed_sha256 = Game.new_seed()
        game = Game.objects.create(
            kind=old.kind,
            options=old.options,
            clock=old.clock,
            clock_options=old.clock_options,
            rated=old.rated,
            seed=seed,
            seed_sha256=seed_sha256,
            created_by=user,
            rematch_of=old,
        )
        bank = deadlines.bank_full(game) if "bank_days" in game.clock_options else None
        now = clock.now()
        count = len(seats)
        turned = [seats[(i + 1) % count] for i in range(count)]
        Seat.objects.bulk_create(
            Seat(
                game=game,
                index=i,
                user=user if s.user_id == user.pk else None,
                bot=s.bot,
                joined_at=now if (s.bot or s.user_id == user.pk) else None,
                reserved_for=s.user if (not s.bot and s.user_id != user.pk) else None,
                bank=None if s.bot else bank,
            )
            for i, s in enumerate(turned)
        )
        if not core.game_start_when_full(game):
            notices.challenges_made(
                game=game, seats=list(game.seats.filter(reserved_for__isnull=False))
            )
    return game


def _kept_seat(game: Game, user: User) -> Seat:
    """The seat kept for this user in this open game, or the reason it cannot be accepted or
    declined. The caller holds the game lock, unless it only asks (`decline_refusal`)."""
    seats = list(game.seats.order_by("index"))
    if game.status == Game.Status.ABORTED:
        raise GameError(_called_off_text(game))
    if any(s.user_id == user.pk for s in seats):
        if game.status == Game.Status.OPEN:
            raise GameError("You have accepted already: the game starts when everyone has.")
        if game.status == Game.Status.ACTIVE:
            raise GameError("You have accepted already: the game has started.")
        raise GameError("You have accepted already, and the game is over.")
    kept = next((s for s in seats if s.is_reserved and s.reserved_for_id == user.pk), None)
    if kept is None:
        raise GameError("This challenge is not for you.")
    if game.status != Game.Status.OPEN:
        raise GameError("This challenge is not waiting for an answer any more.")
    if challenge_expires(game, seats):
        raise GameError(f"This challenge has expired: it waited {CHALLENGE_DAYS} days.")
    return kept


def _declined_seat(game: Game, user: User) -> Seat:
    """`_kept_seat` for a decline: a challenger who declines their own challenge is told how to
    call it off (they were told they had "accepted already")."""
    if game.created_by_id == user.pk and game.status == Game.Status.OPEN:
        raise GameError('This is your own challenge: "Withdraw this game" calls it off.')
    return _kept_seat(game, user)


def _called_off_text(game: Game) -> str:
    return {
        WITHDRAWN: "This game was withdrawn by its creator.",
        DECLINED: "This challenge was declined, so it will not start.",
        EXPIRED: f"This challenge has expired: it waited {CHALLENGE_DAYS} days.",
    }.get(game.result_reason, "This game was aborted.")


def _call_off(game: Game, reason: str) -> None:
    """End an open game that never started: no places, no "game over" mails (the caller tells
    those who waited on it). The caller holds the lock."""
    now = clock.now()
    game.status = Game.Status.ABORTED
    game.finished_at = now
    game.result_reason = reason
    game.version += 1
    game.save(update_fields=["status", "finished_at", "result_reason", "version"])
    # Its people's and its bots' seats: their games over are read from the seats
    # (seat_user_finished, seat_bot_finished). An open seat has nobody's games to list.
    game.seats.exclude(user__isnull=True, bot="").update(finished_at=now)


def challenges_expire() -> int:
    """Call off the challenges that waited CHALLENGE_DAYS without every answer (for the sweep):
    each re-checked under its game's lock. Its challenger and the players who had accepted (or
    joined) are told by mail; the challenged players who never answered are not. Returns how
    many."""
    cutoff = clock.now() - timedelta(days=CHALLENGE_DAYS)
    ids = list(
        Game.objects.filter(
            status=Game.Status.OPEN,
            created_at__lte=cutoff,
            seats__reserved_for__isnull=False,
            seats__user__isnull=True,
        )
        .values_list("pk", flat=True)
        .distinct()[:500]
    )
    done = 0
    for game_id in ids:
        with transaction.atomic():
            game = core.game_locked(game_id)
            if game.status == Game.Status.OPEN and challenge_expires(game, list(game.seats.all())):
                _call_off(game, EXPIRED)
                notices.challenge_expired(game=game)
                done += 1
    return done
