"""When a workflow's `on.schedule` cron lines fire, and GitHub's scheduled runs of them.

A cron line is POSIX's five fields (minute, hour, day of month, month, day of week with 0 or 7
for Sunday), each `*`, a number, a range `a-b`, a step `*/n`, `a-b/n` or `a/n` (from a to the
field's max), or a list of these; when neither day field starts with `*`, a day matching either
fires (Vixie cron, which GitHub follows). An entry may name its own IANA `timezone` (UTC when
absent). GitHub queues a scheduled run late, often by minutes and
sometimes by hours (its docs: "delayed during periods of high loads"), so each run is created
after its slot by a drawn delay.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from random import Random
from zoneinfo import ZoneInfo

from fakehub.catalog import CronEntry

FIELDS = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))  # minute hour day month weekday
# A scheduled run's delay after its slot: a couple of minutes plus an exponential tail (mean
# 25 minutes), and one run in ten delayed by 1 to 5 hours more (measured: 3 to 6 hours).
LATE_MINUTES, LONG_DELAY_SHARE, LONG_DELAY_HOURS = 25.0, 0.1, (1.0, 5.0)


def _field(text: str, low: int, high: int) -> frozenset[int]:
    values: set[int] = set()
    for part in text.split(","):
        span, _, step = part.partition("/")
        a, dash, b = span.partition("-")
        first = low if span == "*" else int(a)
        last = int(b) if dash else (high if span == "*" or step else first)  # `a/n`: to the max
        values.update(range(first, last + 1, int(step or 1)))
    return frozenset(values)


def fire_times(entry: CronEntry, start: datetime, end: datetime) -> Iterator[datetime]:
    """The UTC moments in [start, end) at which the cron line fires, in its timezone."""
    fields = entry.cron.split()
    minutes, hours, days, months, weekdays = (
        _field(text, low, high) for text, (low, high) in zip(fields, FIELDS, strict=True)
    )
    weekdays = frozenset(d % 7 for d in weekdays)  # 7 is Sunday too
    either = not fields[2].startswith("*") and not fields[4].startswith("*")
    zone = ZoneInfo(entry.timezone or "UTC")
    day = start.astimezone(zone).date() - timedelta(days=1)
    while (first := datetime(day.year, day.month, day.day, tzinfo=zone)) < end:
        dom, dow = day.day in days, (day.weekday() + 1) % 7 in weekdays  # 0 = Sunday
        if day.month in months and ((dom or dow) if either else (dom and dow)):
            for hour in sorted(hours):
                for minute in sorted(minutes):
                    at = first.replace(hour=hour, minute=minute).astimezone(UTC)
                    if start <= at < end:
                        yield at
        day += timedelta(days=1)


def delay(rng: Random) -> timedelta:
    """How late GitHub queues one scheduled run after its slot."""
    minutes = 2 + rng.expovariate(1 / LATE_MINUTES)
    if rng.random() < LONG_DELAY_SHARE:
        minutes += 60 * rng.uniform(*LONG_DELAY_HOURS)
    return timedelta(minutes=minutes)
