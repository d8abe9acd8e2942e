"""Automatic vacation with a real Celery worker and beat (tests/worker_fixtures.py) and a real
SMTP server: a player whose clock runs out, with days left, does not time out: the worker's
sweep starts a vacation instead and mails them once; when the days are gone (the vacation's
end put in the past directly, as the worker tests put deadlines), the seat times out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from games.models import Game, Outbox, Seat, Vacation
from games.play import vacations
from tests.worker_fixtures import (
    Inbox,
    WorkerProcess,
    make_game,
    make_player,
    play_one,
    player_at,
    to_move,
    wait_until,
)

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def _vacation_mails(inbox: Inbox) -> list[str]:
    return [str(m["Subject"]) for m in inbox.messages if "on vacation until" in str(m["Subject"])]


def test_automatic_vacation_instead_of_a_timeout_one_mail_then_a_timeout_when_the_days_are_gone(
    celery_worker_process: WorkerProcess, smtp_server: Inbox
) -> None:
    ann = make_player("ann-away", automatic_vacation=True)
    bob = make_player("bob-here")
    game = make_game(ann, bob)
    play_one(game)  # a game nobody has moved in would be aborted
    if player_at(game, to_move(game)) != ann:
        play_one(game)
    late = to_move(game)
    assert player_at(game, late) == ann
    # 14 days, and one more if ann's week of play began with a move of hers here.
    allowance = vacations.vacation_for(ann).days_left
    Seat.objects.filter(game=game, index=late).update(
        deadline=datetime.now(UTC) - timedelta(seconds=1)
    )

    wait_until(
        lambda: Vacation.objects.filter(user=ann, was_automatic=True).exists(),
        timeout=60,
        what=f"the worker to start a vacation\n{celery_worker_process.output()[-3000:]}",
    )
    wait_until(lambda: len(_vacation_mails(smtp_server)) == 1, timeout=60, what="the mail")
    vacation = Vacation.objects.get(user=ann)
    assert vacation.days_left == 0 and vacation.days_planned == allowance
    assert vacation.until is not None
    (message,) = [m for m in smtp_server.messages if "on vacation until" in str(m["Subject"])]
    assert message["To"] == ann.email
    celery_worker_process.wait_for_sweeps(3)  # nothing more happens meanwhile
    game.refresh_from_db()
    assert game.status == Game.Status.ACTIVE
    seat = Seat.objects.get(game=game, index=late)
    assert seat.deadline is not None and seat.deadline >= vacation.until
    assert len(_vacation_mails(smtp_server)) == 1

    # The fourteen days are over (put in the past, as the worker tests put deadlines): the
    # clock that ran out runs out again, with no days left, and the seat times out.
    now = datetime.now(UTC)
    Vacation.objects.filter(user=ann).update(
        started_at=now - timedelta(days=14, seconds=2), until=now - timedelta(seconds=1)
    )
    Seat.objects.filter(game=game, index=late).update(deadline=now - timedelta(seconds=1))
    # Ann never moves here; who moves first is the seed's: a game where nobody has moved yet is
    # aborted by a timeout (no result), one where Bob moved first is lost by Ann.
    started = Game.objects.get(pk=game.pk).ply > 0
    wait_until(
        lambda: Game.objects.get(pk=game.pk).is_over,
        timeout=60,
        what=f"the timeout\n{celery_worker_process.output()[-3000:]}",
    )
    game.refresh_from_db()
    if started:
        assert (game.status, game.result_reason) == (Game.Status.FINISHED, "timeout")
        assert game.seats.get(index=late).place == 2
    else:
        assert (game.status, game.result_reason) == (Game.Status.ABORTED, "aborted")
    celery_worker_process.wait_for_sweeps(3)
    assert len(_vacation_mails(smtp_server)) == 1
    assert Outbox.objects.filter(kind=Outbox.Kind.VACATION).count() == 1
