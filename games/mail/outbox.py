"""Mails about games: who gets which, the outbox that sends each one once, and sending.

Rows are made inside a service's transaction, under the game's lock, and a task queued on commit
sends them: a move that rolls back leaves no row and queues nothing. The unique key of a row
(game, seat, ply, kind; user and day for a digest) makes a second task for the same mail find it
there; the row's lock, held while sending, makes two tasks at once send it once.

The outbox is the queue, not the broker: a pending row holds when it is next due
(`Outbox.next_try_at`) and the sweep queues the rows whose time has come. That one column covers
a task that was lost (the broker down at commit, a worker killed: due again `task_grace()` after
it was queued, about a minute), a send that failed (due again after its backoff), and a "your
turn" mail held while the player has the game open (due again when they leave)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from smtplib import SMTPException
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import EmailMultiAlternatives
from django.db import transaction
from django.db.models import QuerySet
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from games import clock, queueing, statements
from games.mail import chatnews, preferences, watching
from games.models import Clock, EmailPreferences, Game, Move, Outbox, Seat, Vacation
from games.ui import wording

logger = logging.getLogger(__name__)
User = get_user_model()
Kind = Outbox.Kind
TurnMails = EmailPreferences.TurnMails


# What a mail server or the network raises; the mail is tried again after a backoff.
SEND_ERRORS: tuple[type[Exception], ...] = (SMTPException, OSError)


# Tries of a mail the server refuses: again after 30 s, 1, 2, 4 and 8 minutes, then failed.
MAX_ATTEMPTS = 6


RETRY_BACKOFF = timedelta(seconds=30)


# A chat mail waits this long after the message that made it (the player may read it on the
# page meanwhile), and looks this far back for the games with messages to tell.
CHAT_MAIL_DELAY = timedelta(minutes=10)
CHAT_LOOKBACK = timedelta(days=2)


# A queued mail task that has not settled its row within this many sweeps was lost.
TASK_GRACE_SWEEPS = 4


def people() -> QuerySet[Any]:
    return User.objects.select_related("profile", "email_preferences")


def mail_rows(
    *, game: Game, people: Sequence[tuple[Seat, Any]], kind: str, ply: int
) -> list[Outbox]:
    """An outbox row, not saved, for each (seat, user) who wants this mail."""
    lost_at = clock.now() + task_grace()
    return [
        Outbox(game=game, seat=seat.index, ply=ply, kind=kind, user=user, next_try_at=lost_at)
        for seat, user in people
        if user is not None
        and not seat.bot
        and preferences.verified_address(user)
        and preferences.wants(preferences.preferences_for(user), kind)
    ]


def mails_queue(rows: Sequence[Outbox]) -> None:
    """Save the rows that are not there already (the outbox's unique key: game, seat, ply,
    kind) and send them on commit: one INSERT ... ON CONFLICT DO NOTHING. Under the games'
    locks, so no other transaction makes these games' rows meanwhile."""
    statements.rows_insert(rows, ignore_conflicts=True, then=send_on_commit)


def task_grace() -> timedelta:
    """How long after its task was queued a pending mail counts as lost and is queued again:
    TASK_GRACE_SWEEPS sweeps (a minute at the default 15 s). A task runs within seconds, so a
    mail whose queueing was lost (the broker down at commit, a worker killed) goes out within a
    minute or two; a second task for a mail that was only slow finds it sent, or locked."""
    return timedelta(seconds=TASK_GRACE_SWEEPS * settings.SWEEP_INTERVAL_SECONDS)


def send_on_commit(outbox_ids: Iterable[int]) -> None:
    """Queue a task for each of these rows on commit; their `next_try_at` is `task_grace()`
    later, for the sweep to find them if the task never comes."""
    queueing.queue_on_commit(queueing.MAIL_SEND, [(pk,) for pk in outbox_ids])


# --- sending ---------------------------------------------------------------------------------


def outbox_send(*, outbox_id: int) -> str | None:
    """Send one outbox mail, unless it went out already or is not wanted any more. Returns the
    row's new status, or None if there was nothing to do (it is not pending, or another task
    has it). A mail that cannot go out now stays pending with the time of its next try, for the
    sweep: a "your turn" mail while the player has the game open is held until they leave; a
    send error is recorded and tried again after a backoff, MAX_ATTEMPTS times at most (then
    the mail is failed)."""
    with transaction.atomic():
        # Locked while sending: a second task for the same row skips it and, if the first one
        # dies, the lock goes with its connection and the row is still pending.
        row = Outbox.objects.select_for_update(skip_locked=True).filter(pk=outbox_id).first()
        if row is None or row.status != Outbox.Status.PENDING:
            return None
        user = User.objects.select_related("profile", "email_preferences").get(pk=row.user_id)
        now = clock.now()
        reason = _not_wanted(row, user)
        held_until = None if reason else _held_until(row)
        if held_until is not None:
            row.next_try_at = held_until
            row.note = "held while the player has the game open"
            row.save(update_fields=["next_try_at", "note"])
            return row.status
        message, told = (None, {}) if reason else _message(row, user)
        if message is None:
            row.status = Outbox.Status.SKIPPED
            row.note = reason or "nothing to tell"
            row.save(update_fields=["status", "note"])
            return row.status
        row.to_email = message.to[0]
        row.subject = message.subject[:200]
        row.attempts += 1
        try:
            message.send()
        except SEND_ERRORS as exc:
            row.note = f"{type(exc).__name__}: {exc}"[:2000]
            if row.attempts >= MAX_ATTEMPTS:
                row.status = Outbox.Status.FAILED
            else:
                row.next_try_at = now + RETRY_BACKOFF * 2 ** (row.attempts - 1)
            logger.warning("mail %s, try %s: %s", row.pk, row.attempts, row.note)
        else:
            row.status = Outbox.Status.SENT
            row.sent_at = now
            row.note = ""
            # The chat messages it listed are told: no later mail lists them again.
            chatnews.mailed_mark(user_id=user.pk, told=told)
        row.save()
    return row.status


def _not_wanted(row: Outbox, user: Any) -> str:
    """Why this mail should not go out at all, or ""."""
    if not preferences.verified_address(user):
        return "no verified address"
    if not preferences.wants(preferences.preferences_for(user), row.kind):
        return "switched off in the email settings"
    if row.kind in {Kind.YOUR_TURN, Kind.REMINDER}:
        seat = (
            Seat.objects.filter(game_id=row.game_id or 0, index=row.seat or 0)
            .select_related("game")
            .first()
        )
        if seat is None or seat.game.status != Game.Status.ACTIVE:
            return "the game is over"
        # The turn this mail is about is the one that started at the row's ply; a seat that has
        # moved since may be to move again, in a later turn with a mail of its own.
        if (
            seat.user_id != user.pk
            or seat.deadline is None
            or Move.objects.filter(game_id=seat.game_id, seat=seat.index, ply__gt=row.ply).exists()
        ):
            return "the seat has moved since"
    if row.kind == Kind.CHALLENGE:
        kept = Seat.objects.filter(
            game_id=row.game_id or 0,
            index=row.seat or 0,
            reserved_for_id=user.pk,
            user__isnull=True,
            game__status=Game.Status.OPEN,
        )
        if not kept.exists():
            return "the challenge is not waiting for them any more"
    if row.kind == Kind.WITHDRAWN:
        # A challenged player who had not answered hears of the withdrawal only if they heard
        # of the challenge: one withdrawn before its mail went out was never theirs to know.
        unanswered = Seat.objects.filter(
            game_id=row.game_id or 0, index=row.seat or 0, user__isnull=True
        ).exists()
        told = Outbox.objects.filter(
            kind=Kind.CHALLENGE,
            game_id=row.game_id or 0,
            seat=row.seat or 0,
            user_id=user.pk,
            status=Outbox.Status.SENT,
        ).exists()
        if unanswered and not told:
            return "they never had the challenge's mail"
    return ""


def _held_until(row: Outbox) -> datetime | None:
    """Until when a "your turn" mail waits because the player has the game open, or None."""
    if row.kind != Kind.YOUR_TURN or row.game_id is None:
        return None
    return watching.watching_until(game_id=row.game_id, user_id=row.user_id)


def _message(
    row: Outbox, user: Any
) -> tuple[EmailMultiAlternatives | None, dict[int, list[chatnews.Unread]]]:
    """The mail, and the chat messages it tells of (by game), its times in the recipient's own
    time zone (their profile's, UTC without one), each with its zone's abbreviation."""
    context = _context(row, user)
    if context is None:
        return None, {}
    name = row.kind
    with timezone.override(preferences.user_zone(user.pk)):
        subject = " ".join(render_to_string(f"emails/{name}_subject.txt", context).split())
        text = render_to_string(f"emails/{name}_body.txt", context)
        html = render_to_string(f"emails/{name}_body.html", context)
    message = EmailMultiAlternatives(
        subject,
        text,
        to=[preferences.verified_address(user)],
        headers={
            # RFC 8058: one POST to this address unsubscribes, without signing in.
            "List-Unsubscribe": f"<{context['unsubscribe_url']}>",
            "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
            "Auto-Submitted": "auto-generated",
        },
    )
    message.attach_alternative(html, "text/html")
    return message, context.get("chat_told", {})


def _context(row: Outbox, user: Any) -> dict[str, Any] | None:
    context: dict[str, Any] = {
        "user": user,
        "site_url": settings.SITE_URL,
        "settings_url": settings.SITE_URL + reverse("email_settings"),
        "unsubscribe_url": preferences.unsubscribe_url(user_id=user.pk, kind=row.kind),
        "unsubscribe_what": preferences.UNSUBSCRIBE_WHAT[Kind(row.kind)],
    }
    if row.kind == Kind.CHAT:
        return _chat_context(row, user, context)
    if row.kind == Kind.DIGEST:
        seats = digest_seats(user.pk)
        if not seats:
            return None
        now = clock.now()
        told = chatnews.unread(user_id=user.pk, game_ids=[s.game_id for s in seats])
        context["chat_told"] = told
        zone = _clock_zone(user.pk, [s.game for s in seats])
        context["games"] = [
            {
                "game": s.game,
                "url": settings.SITE_URL + s.game.get_absolute_url(),
                "left": _left(s.game, s.deadline, zone, now) if s.deadline else "",
                "deadline": s.deadline,
                "chat": told.get(s.game_id, []),
            }
            for s in seats
        ]
        return context
    game = row.game
    assert game is not None
    seats = list(game.seats.select_related("user", "reserved_for").order_by("index"))
    mine = next(s for s in seats if s.index == row.seat)
    context.update(
        game=game,
        title=game.get_kind_display(),
        game_url=settings.SITE_URL + game.get_absolute_url(),
        others=[s.name for s in seats if s.index != row.seat],
        seat=mine,
    )
    if row.kind == Kind.VACATION:
        vacation = Vacation.objects.filter(user_id=user.pk).first()
        if vacation is None or vacation.until is None:
            return None
        context["until"] = vacation.until
        context["days_left"] = vacation.days_left
        context["days"] = vacation.days_planned
        context["account_url"] = settings.SITE_URL + reverse("account")
    if row.kind == Kind.CHALLENGE:
        context["challenger"] = game.created_by.get_username() if game.created_by else "Someone"
        context["rematch"] = game.rematch_of_id is not None
        context["rematch_of"] = game.rematch_of_id
        context["clock"] = wording.clock_words(game.kind, game.clock_duration)
    elif row.kind in {Kind.DECLINED, Kind.WITHDRAWN, Kind.EXPIRED}:
        context.update(_called_off(game, seats, mine))
        if row.kind == Kind.DECLINED:
            declined = next((s for s in seats if s.declined_at is not None), None)
            by = declined.reserved_for if declined is not None else None
            context["decliner"] = by.get_username() if by is not None else "A challenged player"
        elif row.kind == Kind.EXPIRED:
            context["silent"] = wording.listed(
                [
                    s.reserved_for.get_username()
                    for s in seats
                    if s.is_reserved and s.reserved_for is not None
                ]
            )
            waited = (game.finished_at or clock.now()) - game.created_at
            context["days"] = waited.days
    elif row.kind == Kind.DROPPED:
        context["out_of_time"] = wording.out_of_time(game.kind, len(seats))
    elif row.kind in {Kind.YOUR_TURN, Kind.REMINDER}:
        assert mine.deadline is not None
        context["deadline"] = mine.deadline
        zone = _clock_zone(user.pk, [game])
        context["left"] = _left(game, mine.deadline, zone, clock.now())
        context["clock"] = clock.format_left(game.clock_duration or timedelta())
        # A race has no turns: its clock runs from the start until the runner is out.
        context["race"] = wording.steps_apart(game.kind)
        context["out_of_time"] = wording.out_of_time_rule(game.kind, len(seats))
        if row.kind == Kind.YOUR_TURN:
            told = chatnews.unread(user_id=user.pk, game_ids=[game.pk])
            context["chat_told"] = told
            context["chat"] = told.get(game.pk, [])
    else:
        context.update(_result(game, seats, mine))
    return context


def _chat_context(row: Outbox, user: Any, context: dict[str, Any]) -> dict[str, Any] | None:
    """A chat mail: the players' messages this player missed in their games, or None (nothing
    to tell: they read them on the page, or another mail told them)."""
    since = row.created_at - CHAT_LOOKBACK
    told = chatnews.unread(
        user_id=user.pk, game_ids=chatnews.games_with_news(user_id=user.pk, since=since)
    )
    if not told:
        return None
    games = {g.pk: g for g in Game.objects.filter(pk__in=told).defer("state", "seed")}
    context["chat_told"] = told
    context["games"] = [
        {
            "game": games[game_id],
            "url": settings.SITE_URL + games[game_id].get_absolute_url() + "#chat",
            "chat": messages,
        }
        for game_id, messages in told.items()
        if game_id in games
    ]
    return context


def _called_off(game: Game, seats: list[Seat], mine: Seat) -> dict[str, Any]:
    """What a mail about an open game called off before it started says to one seat: the game,
    whose it was, what this seat had done, and where to find another game."""
    if mine.user_id is None:
        answered = "not answered yet"  # a challenged player, whose seat is still kept
    elif mine.reserved_for_id == mine.user_id:
        answered = "accepted"
    else:
        answered = "joined"
    return {
        # The creator's mail says "your challenge"; another names whose it was.
        "yours": mine.user_id is not None and mine.user_id == game.created_by_id,
        "challenger": game.created_by.get_username() if game.created_by else "Someone",
        "challenge": any(s.reserved_for_id is not None for s in seats),
        "answered": answered,
        "rematch_of": game.rematch_of_id,
        "settings": wording.settings_words(game),
        "called_off": wording.CALL_OFF_COSTS,
        "new_game_url": settings.SITE_URL + reverse("game_new", args=[game.kind]),
        "lobby_url": settings.SITE_URL + reverse("lobby"),
    }


def _result(game: Game, seats: list[Seat], mine: Seat) -> dict[str, Any]:
    """What a "game over" mail says to one seat."""
    if game.status == Game.Status.ABORTED:
        return {
            "outcome": "aborted",
            "summary": wording.aborted_text(
                game.result_reason, live_race=game.clock == Clock.LIVE, ply=game.ply
            ),
        }
    winners = [_seat_name(seats, s.index, mine) for s in seats if s.place == 1]
    how = ""
    if game.result_reason in {"resign", "timeout"}:
        left = [(_seat_name(seats, seat, mine), how) for seat, how in game.departures()]
        how = wording.departures_text(left) if left else ""
    elif game.result_reason == "exit":
        how = wording.winner_out(game.kind)
    if mine.place == 1:
        outcome = "you won"
    elif mine.place is None:
        outcome = "it ended"
    else:
        outcome = "you lost"
    # A sentence: "You won", "Nobody won"; a username as it is spelt ("bob won").
    said = " and ".join(winners) or "nobody"
    if said.startswith(("you", "nobody")):
        said = said[0].upper() + said[1:]
    summary = f"{said} won" + (f" ({how})." if how else ".")
    return {"outcome": outcome, "summary": summary}


def _seat_name(seats: list[Seat], index: int, mine: Seat) -> str:
    if index == mine.index:
        return "you"
    return next((s.name for s in seats if s.index == index), f"seat {index}")


# --- for the admin and the sweep -------------------------------------------------------------


def outbox_resend(*, outbox_ids: Iterable[int]) -> int:
    """Send stuck mails (pending or failed) again. A mail that was sent or skipped stays so."""
    with transaction.atomic():
        ids = list(
            Outbox.objects.select_for_update()
            .filter(
                pk__in=list(outbox_ids), status__in=[Outbox.Status.PENDING, Outbox.Status.FAILED]
            )
            .values_list("pk", flat=True)
        )
        Outbox.objects.filter(pk__in=ids).update(
            status=Outbox.Status.PENDING,
            attempts=0,
            note="",
            next_try_at=clock.now() + task_grace(),
        )
        send_on_commit(ids)
    return len(ids)


def due_mails(now: datetime) -> QuerySet[Outbox]:
    """Pending mails whose next try has come, earliest first (a range scan of the partial
    index `outbox_pending_next_try`)."""
    return Outbox.objects.filter(status=Outbox.Status.PENDING, next_try_at__lte=now).order_by(
        "next_try_at"
    )


def outbox_queue_due(*, now: datetime, limit: int = 500) -> int:
    """Queue a task for each pending mail whose next try has come (for the sweep), and give it
    `task_grace()` to run. A mail that another task is sending (its row locked) is skipped."""
    with transaction.atomic():
        ids = list(
            due_mails(now).select_for_update(skip_locked=True).values_list("pk", flat=True)[:limit]
        )
        Outbox.objects.filter(pk__in=ids).update(next_try_at=now + task_grace())
        send_on_commit(ids)
    return len(ids)


def _clock_zone(user_id: int, games: Sequence[Game]) -> ZoneInfo | None:
    """The person's own zone if one of these games has weekends off (a query), else None."""
    if any(game.clock_options.get("weekends_off") for game in games):
        return preferences.user_zone(user_id)
    return None


def _left(game: Game, deadline: datetime, zone: ZoneInfo | None, now: datetime) -> str:
    """The time a person's clock has left: with weekends off, counted on the clock, which
    stands still in their weekends (`zone`: their own, from `_clock_zone`)."""
    weekends_off = zone is not None and game.clock_options.get("weekends_off")
    return clock.format_left(clock.clock_between(now, deadline, zone if weekends_off else None))


def digest_seats(user_id: int) -> list[Seat]:
    """A person's seats to move, soonest deadline first: what their digest lists."""
    return list(
        Seat.objects.filter(user_id=user_id, deadline__isnull=False, game__status="active")
        .select_related("game")
        .defer("game__state", "game__seed")
        .order_by("deadline")
    )
