"""The one place the play core and the mail read the time, so tests can move it (time-machine)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.utils import timezone


def now() -> datetime:
    return timezone.now()


def format_left(left: timedelta) -> str:
    """Time left as the site shows it: `3 days, 0:00:00`, never negative, whole seconds."""
    seconds = max(0, int(left.total_seconds()))
    return str(timedelta(seconds=seconds))
