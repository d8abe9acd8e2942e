"""What the play core tells the mail, inside its transaction and under the game's lock: a
turn started, a deadline moved, turns or games ended; and the reminders that fall due."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime, timedelta

from django.contrib.auth import get_user_model

from games.mail import outbox
from games.models import EmailPreferences, Game, Outbox, Reminder, Seat

logger = logging.getLogger(__name__)
User = get_user_model()
Kind = Outbox.Kind
TurnMails = EmailPreferences.TurnMails


# A reminder goes out when this share of the clock is left.
REMINDER_SHARE = 5


# --- called by the play core, inside their transaction, under the game's lock -----------------


def reminder_time(*, deadline: datetime, clock_duration: timedelta) -> datetime:
    """The one rule for when a reminder is due: when a fifth of the clock is left before the
    deadline, however the deadline was set or moved."""
    return deadline - clock_duration / REMINDER_SHARE


def turn_started(*, game: Game, seat: Seat) -> None:
    """A seat was given a deadline (`play.deadlines.deadlines_set`): a reminder for when a fifth of
    its time is left, and a "your turn" mail."""
    duration = game.clock_duration
    if duration is None or seat.deadline is None or seat.user_id is None or seat.bot:
        return  # bots need no reminding
    due = reminder_time(deadline=seat.deadline, clock_duration=duration)
    Reminder.objects.bulk_create(
        [Reminder(seat=seat, ply=game.ply, due=due)], ignore_conflicts=True
    )
    # The seat's person as the move read them (play.core.seats_read), or read now.
    user = seat.user if _person_read(seat) else outbox.people().filter(pk=seat.user_id).first()
    outbox.mails_queue(
        outbox.mail_rows(game=game, people=[(seat, user)], kind=Kind.YOUR_TURN, ply=game.ply)
    )


def _person_read(seat: Seat) -> bool:
    """Whether the seat's user came with its profile and mail preferences (no query more)."""
    if not Seat.user.is_cached(seat):
        return False
    user = seat.user
    return user is not None and all(
        field.is_cached(user) for field in (User.profile, User.email_preferences)
    )


def deadline_moved(*, game: Game, seat: Seat) -> None:
    """The deadline of a seat to move has moved (`play.deadlines.deadlines_set`): its reminder moves
    with it. One that went out already is not sent again for the same turn."""
    duration = game.clock_duration
    if duration is None or seat.deadline is None:
        return
    Reminder.objects.filter(seat=seat).update(
        due=reminder_time(deadline=seat.deadline, clock_duration=duration)
    )


def turns_ended(seats: Sequence[Seat]) -> None:
    """These seats moved, were dropped, or their game ended (`play.deadlines.deadlines_set`): their
    reminders are not needed any more."""
    if seats:
        Reminder.objects.filter(seat__in=[seat.pk for seat in seats]).delete()


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
