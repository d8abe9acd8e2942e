"""The one place the play core and the mail read the time, so tests can move it (time-machine)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.utils import timezone


def now() -> datetime:
    return timezone.now()


def format_left(left: timedelta) -> str:
    """Time left as the site shows it: `3 days, 0:00:00`, never negative, whole seconds."""
    seconds = max(0, int(left.total_seconds()))
    return str(timedelta(seconds=seconds))


# --- clock arithmetic: pure functions of instants (aware datetimes) ------------------------------
#
# A clock with weekends off does not run from Saturday 00:00 to Monday 00:00 in its player's own
# time zone. Clock time is real elapsed time (a day with a daylight-saving change counts its 23
# or 25 hours); a local midnight that a change skips or repeats is read as zoneinfo reads it
# (fold 0), the same in both functions, so that they are exact inverses.

WEEKEND_START = 5  # Saturday, as date.weekday() counts


def zone_or_none(name: str | None) -> ZoneInfo | None:
    """The zone of this IANA name, or None for an empty or unknown one."""
    if not name:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


UTC_ZONE = ZoneInfo("UTC")


def person_zone(time_zone: str | None) -> ZoneInfo:
    """A person's own zone from its IANA name (Profile.time_zone): their clock's in a game with
    weekends off, their mails'; UTC for an empty or unknown name."""
    return zone_or_none(time_zone) or UTC_ZONE


def _local_midnight(day: date, zone: ZoneInfo) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=zone).astimezone(UTC)


def _weekend_from(t: datetime, zone: ZoneInfo) -> tuple[datetime, datetime]:
    """The weekend (start, end) that holds `t`, or else the next one after it."""
    local = t.astimezone(zone).date()
    weekday = local.weekday()
    saturday = local + timedelta(days=WEEKEND_START - weekday)  # Sunday: the day before
    start = _local_midnight(saturday, zone)
    end = _local_midnight(saturday + timedelta(days=2), zone)
    if end <= t:
        start = _local_midnight(saturday + timedelta(days=7), zone)
        end = _local_midnight(saturday + timedelta(days=9), zone)
    return start, end


def clock_add(start: datetime, amount: timedelta, zone: ZoneInfo | None) -> datetime:
    """The instant when a clock started at `start` has run `amount` (not negative): `start +
    amount` for a clock that always runs (zone None), else skipping each weekend in `zone`."""
    if zone is None or amount <= timedelta(0):
        return start + amount
    t, left = start, amount
    while True:
        weekend, monday = _weekend_from(t, zone)
        if weekend > t:
            if left <= weekend - t:
                return t + left
            left -= weekend - t
        t = monday


def _weekend_before(t: datetime, zone: ZoneInfo) -> tuple[datetime, datetime]:
    """The last weekend (start, end) that starts before `t`: the one that holds `t`, or else
    the one before it."""
    local = t.astimezone(zone).date()
    saturday = local - timedelta(days=(local.weekday() - WEEKEND_START) % 7)
    start = _local_midnight(saturday, zone)
    if start >= t:
        saturday -= timedelta(days=7)
        start = _local_midnight(saturday, zone)
    return start, _local_midnight(saturday + timedelta(days=2), zone)


def clock_back(end: datetime, amount: timedelta, zone: ZoneInfo | None) -> datetime:
    """The last instant at which a clock that runs out at `end` has `amount` (not negative)
    still to run: `end - amount` for a clock that always runs (zone None), else counted back
    over the weekdays in `zone`, so never inside a weekend (at most at its Monday 00:00)."""
    if zone is None or amount <= timedelta(0):
        return end - amount
    t, left = end, amount
    while True:
        weekend, monday = _weekend_before(t, zone)
        if monday < t:
            if left <= t - monday:
                return t - left
            left -= t - monday
        t = weekend


def clock_between(start: datetime, end: datetime, zone: ZoneInfo | None) -> timedelta:
    """How long a clock runs from `start` to `end` (negative if `end` is earlier): the elapsed
    time, less the weekends in `zone` (None: a clock that always runs)."""
    if zone is None:
        return end - start
    if end < start:
        return -clock_between(end, start, zone)
    stopped = sum((b - a for a, b in weekends_between(start, end, zone)), timedelta(0))
    return end - start - stopped


def weekends_between(
    start: datetime, end: datetime, zone: ZoneInfo
) -> list[tuple[datetime, datetime]]:
    """The weekends in `zone` from `start` to `end`, each cut to that span: when a clock with
    weekends off stands still."""
    out = []
    t = start
    while t < end:
        weekend, monday = _weekend_from(t, zone)
        if weekend >= end:
            break
        out.append((max(weekend, start), min(monday, end)))
        t = monday
    return out


def bank_after(
    *, bank: timedelta, left: timedelta, full: timedelta, increment: timedelta
) -> timedelta:
    """A time bank after its seat moved: the part of `bank` that `left` (the clock time that was
    left to the deadline) still covers, then `increment`, at most `full` (the starting bank). A
    move within the per-move time leaves `left` above the bank, so it spends nothing."""
    kept = max(timedelta(0), min(bank, left))
    return min(full, kept + increment)
