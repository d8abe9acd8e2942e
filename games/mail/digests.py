"""The daily digest: one mail a day for each person who chose it, listing the games that
wait for their move."""

from __future__ import annotations

import logging
from datetime import date

from django.contrib.auth import get_user_model
from django.db import transaction

from games import clock
from games.mail import outbox, preferences
from games.models import EmailPreferences, Game, Outbox, Seat

logger = logging.getLogger(__name__)
User = get_user_model()
Kind = Outbox.Kind
TurnMails = EmailPreferences.TurnMails


# --- digests ---------------------------------------------------------------------------------


def digest_queue_all(*, day: date | None = None) -> int:
    """One digest for each person who chose it and has a game waiting for their move. Safe to
    run twice a day: the second run finds each day's row there."""
    day = day or clock.now().date()
    user_ids = set(
        Seat.objects.filter(
            deadline__isnull=False,
            game__status=Game.Status.ACTIVE,
            user__email_preferences__turn_mails=TurnMails.DIGEST,
        ).values_list("user_id", flat=True)
    )
    created: list[int] = []
    with transaction.atomic():
        for user in User.objects.select_related("profile").filter(pk__in=user_ids):
            if not preferences.verified_address(user):
                continue
            row, was_created = Outbox.objects.get_or_create(
                kind=Kind.DIGEST,
                user=user,
                day=day,
                defaults={"next_try_at": clock.now() + outbox.task_grace()},
            )
            if was_created:
                created.append(row.pk)
        outbox.send_on_commit(created)
    return len(created)
