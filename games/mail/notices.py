"""What the play core tells the mail, inside its transaction and under the game's lock: a
turn started, a deadline moved, turns or games ended; and the reminders that fall due."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.contrib.auth import get_user_model

from games import clock, statements
from games.mail import outbox, preferences
from games.models import ClockEvent, EmailPreferences, Game, Outbox, Reminder, Seat

logger = logging.getLogger(__name__)
User = get_user_model()
Kind = Outbox.Kind
TurnMails = EmailPreferences.TurnMails


# A reminder goes out when this share of the clock is left.
REMINDER_SHARE = 5


# --- called by the play core, inside their transaction, under the game's lock -----------------


def reminder_time(*, deadline: datetime, time_left: timedelta, zone: ZoneInfo | None) -> datetime:
    """The one rule for when a reminder is due: when a fifth of the time actually left is left
    before the deadline, however the deadline was set or moved. `time_left` is the seat's time
    for its turn (`Game.turn_time`: the per-move time and its bank left), counted by the seat's
    clock (`zone`: weekends off in it, `play.deadlines.seat_zones`), so that a reminder never
    falls in a weekend when the clock is stopped."""
    return clock.clock_back(deadline, time_left / REMINDER_SHARE, zone)


def turns_changed(
    *, ended: Sequence[Seat], started: Sequence[tuple[Game, Seat, ZoneInfo | None]]
) -> None:
    """Turns ended and started (`play.deadlines.deadlines_set`): the seats whose turn ended
    (they moved, were dropped, or their game ended) need their reminders no more; each seat
    given a deadline (with its clock's zone) gets a reminder for when a fifth of its time is
    left, and a "your turn" mail. The reminders are deleted and written in one statement."""
    reminders = []
    mails = []
    for game, seat, zone in started:
        if game.clock_duration is None or seat.deadline is None or seat.user_id is None:
            continue
        if seat.bot:
            continue  # bots need no reminding
        due = reminder_time(deadline=seat.deadline, time_left=game.turn_time(seat), zone=zone)
        reminders.append(Reminder(seat=seat, ply=game.ply, due=due))
        # The seat's person as the move read them (play.core.seats_read), or read now.
        user = seat.user if _person_read(seat) else outbox.people().filter(pk=seat.user_id).first()
        mails += outbox.mail_rows(
            game=game, people=[(seat, user)], kind=Kind.YOUR_TURN, ply=game.ply
        )
    statements.rows_replace(Reminder, "seat", [seat.pk for seat in ended], reminders)
    outbox.mails_queue(mails)


def _person_read(seat: Seat) -> bool:
    """Whether the seat's user came with its profile and mail preferences (no query more)."""
    if not Seat.user.is_cached(seat):
        return False
    user = seat.user
    return user is not None and all(
        field.is_cached(user) for field in (User.profile, User.email_preferences)
    )


def deadline_moved(*, game: Game, seat: Seat, zone: ZoneInfo | None) -> None:
    """The deadline of a seat to move has moved (`play.deadlines.deadlines_set`): its reminder moves
    with it. One that went out already is not sent again for the same turn."""
    duration = game.clock_duration
    if duration is None or seat.deadline is None:
        return
    Reminder.objects.filter(seat=seat).update(
        due=reminder_time(deadline=seat.deadline, time_left=game.turn_time(seat), zone=zone)
    )


def games_ended(games: Sequence[Game], seats: Sequence[Seat]) -> None:
    """These games are over (finished or aborted): a mail to every person. `seats` are theirs,
    with each user's profile and email preferences."""
    if not games:
        return
    by_id = {game.pk: game for game in games}
    rows = [
        row
        for seat in seats
        for row in outbox.mail_rows(
            game=by_id[seat.game_id],
            people=[(seat, seat.user)],
            kind=Kind.GAME_OVER,
            ply=by_id[seat.game_id].ply,
        )
    ]
    outbox.mails_queue(rows)


def reminder_due(*, reminder_id: int, now: datetime) -> bool:
    """Turn a due reminder into a mail, once. The caller holds the game's lock; the row is read
    again under it, since a move may have deleted it since the caller found it."""
    reminder = (
        Reminder.objects.select_related(
            "seat__game", "seat__user__profile", "seat__user__email_preferences"
        )
        .filter(pk=reminder_id)
        .first()
    )
    if reminder is None:
        return False
    seat = reminder.seat
    game = seat.game
    reminder.delete()
    if game.status != Game.Status.ACTIVE or seat.deadline is None or seat.deadline <= now:
        return False
    outbox.mails_queue(
        outbox.mail_rows(
            game=game, people=[(seat, seat.user)], kind=Kind.REMINDER, ply=reminder.ply
        )
    )
    return True


def vacation_started(*, game: Game, seat: Seat) -> None:
    """An automatic vacation started instead of this seat's timeout (`play.vacations`): one
    mail to its player. The outbox key keeps it to one for each vacation: its `ply` is the
    number of vacations that started for this seat in this game (a player back early may run
    out again in the same turn, and that second vacation has its own mail)."""
    if seat.user_id is None or seat.bot:
        return
    user = outbox.people().filter(pk=seat.user_id).first()
    started = ClockEvent.objects.filter(
        game=game, seat=seat.index, kind=ClockEvent.Kind.VACATION_START
    ).count()
    outbox.mails_queue(
        outbox.mail_rows(game=game, people=[(seat, user)], kind=Kind.VACATION, ply=started)
    )


def seat_dropped(*, game: Game, seat: Seat) -> None:
    """This seat's clock ran out in a game that goes on without it (a Corn maze of three or
    more, a slow race): one mail to its player now; the "game over" mail follows at the end.
    `seat` comes with its person (`play.core.seats_time_out`)."""
    outbox.mails_queue(
        outbox.mail_rows(game=game, people=[(seat, seat.user)], kind=Kind.DROPPED, ply=game.ply)
    )


def challenges_made(*, game: Game, seats: Sequence[Seat]) -> None:
    """Seats of a new game are kept for challenged players (a challenge, or a rematch offer): a
    mail to each, once (the outbox key: the game, the seat, ply 0)."""
    ids = [seat.reserved_for_id for seat in seats if seat.reserved_for_id is not None]
    if not ids:
        return
    users = {user.pk: user for user in outbox.people().filter(pk__in=ids)}
    outbox.mails_queue(
        outbox.mail_rows(
            game=game,
            people=[(seat, users.get(seat.reserved_for_id or 0)) for seat in seats],
            kind=Kind.CHALLENGE,
            ply=0,
        )
    )


def challenge_declined(*, game: Game) -> None:
    """A challenged player declined this game (a challenge, or a rematch offer), which is off:
    a mail to each person seated in it, once (the outbox key: the game, the seat, ply 0; a game
    is declined once): its challenger, the game's creator, and whoever had accepted (or had
    joined a seat left open beside the kept ones), who waited for the start too. The seats
    kept for those who had not answered have nobody in them, the decliner's included."""
    outbox.mails_queue(outbox.mail_rows(game=game, people=_seated(game), kind=Kind.DECLINED, ply=0))


def challenge_expired(*, game: Game) -> None:
    """This challenge (or rematch offer) waited its days without every answer, and is off: a
    mail to each person seated in it, once (the outbox key: the game, the seat, ply 0; a game
    expires once): its challenger, and whoever had accepted or joined. The challenged players
    who never answered get none: their seats, kept for them, have nobody in them."""
    outbox.mails_queue(outbox.mail_rows(game=game, people=_seated(game), kind=Kind.EXPIRED, ply=0))


def _seated(game: Game) -> list[tuple[Seat, Any]]:
    """Each seat with a person in it, and that person with their profile and preferences."""
    seats = game.seats.filter(user__isnull=False).select_related(
        "user__profile", "user__email_preferences"
    )
    return [(seat, seat.user) for seat in seats]


def game_withdrawn(*, game: Game) -> None:
    """Its creator withdrew this open game (a challenge, a rematch offer, or a game with open
    seats): a mail to each other person who waited on it, once (the outbox key: the game, the
    seat, ply 0; a game is withdrawn once). They are whoever had accepted or joined a seat, and
    each challenged player who had not answered yet (their seat is kept for them with nobody in
    it), whose challenge mail links to a game that will not start (`outbox` sends theirs only
    if that mail went out). Not the creator."""
    seats = game.seats.select_related(
        "user__profile",
        "user__email_preferences",
        "reserved_for__profile",
        "reserved_for__email_preferences",
    )
    people = [
        (seat, seat.user if seat.user is not None else seat.reserved_for)
        for seat in seats
        if seat.user_id is None or seat.user_id != game.created_by_id
    ]
    outbox.mails_queue(outbox.mail_rows(game=game, people=people, kind=Kind.WITHDRAWN, ply=0))


# --- called by the chat (games/chat/service.py), inside its transaction -----------------------


def chat_posted(*, game_id: int, author_id: int) -> None:
    """A player wrote in the players' channel: each other player who wants chat mails gets one,
    at most one a day (the index `outbox_unique_chat_day`), `outbox.CHAT_MAIL_DELAY` later, for
    the sweep to send. By then the page may have shown them the message, or a "your turn" mail
    or digest told them of it: the chat mail is then not sent (`chatnews.unread` is empty).
    Spectators' messages are never mailed."""
    now = clock.now()
    seats = (
        Seat.objects.filter(game_id=game_id, user__isnull=False, bot="")
        .exclude(user_id=author_id)
        .select_related("user__profile", "user__email_preferences")
    )
    users = {seat.user_id: seat.user for seat in seats}
    rows = [
        Outbox(
            kind=Kind.CHAT,
            user=user,
            day=now.date(),
            next_try_at=now + outbox.CHAT_MAIL_DELAY,
        )
        for user in users.values()
        if user is not None
        and preferences.verified_address(user)
        and preferences.wants(preferences.preferences_for(user), Kind.CHAT)
    ]
    Outbox.objects.bulk_create(rows, ignore_conflicts=True)
