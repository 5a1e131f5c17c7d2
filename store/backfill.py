"""Which windows a first collect (a backfill) lists, in which order, and what it has yet to list.

A backfill covers [floor, now] in windows of at most `[collect] window_days`. The windows around
the configured events come first: the before/after comparisons that the Migrations page, the
changepoints and the summary's headline rest on. The rest follows newest first, because the
tiles and the nightly summary read the recent days. A backfill cut off by its request budget has
thus collected what is read most. The spans already listed are stored per workflow
(``sync_state.backfill``), so a backfill resumes in any order and never lists a span twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

Span = tuple[datetime, datetime]  # [start, end)


@dataclass(frozen=True)
class Window:
    start: datetime
    end: datetime
    focus: bool  # around a configured event
    open: bool  # the newest window: listed open-ended, up to the moment of listing


@dataclass(frozen=True)
class Progress:
    """What a workflow's backfill has listed: spans from ``floor`` on, or all of it."""

    floor: datetime | None
    done: tuple[Span, ...]
    complete: bool

    def missing(self, span: Span) -> list[Span]:
        """The parts of ``span`` not collected yet (nothing when the backfill is complete)."""
        if self.complete:
            return []
        start = span[0] if self.floor is None else max(span[0], self.floor)
        return subtract((start, span[1]), self.done)

    def listed(self, until: datetime) -> list[Span]:
        """The spans collected: the backfill's, and once it is complete everything from its
        floor up to ``until``, which its listing has covered since."""
        if not self.complete or self.floor is None:
            return list(self.done)
        return merge([*self.done, (self.floor, until)])


def progress_of(
    window_start: datetime | None, stored: dict[str, Any] | None, watermark: datetime | None
) -> Progress:
    """A sync state's backfill progress; a state an older collect wrote (a watermark, no
    spans) had listed everything up to its watermark, oldest first."""
    floor, done = load(stored)
    if floor is None and watermark is not None:
        done = [(datetime.min.replace(tzinfo=watermark.tzinfo), watermark)]
    return Progress(floor, tuple(done), window_start is not None)


def merge(spans: Iterable[Span]) -> list[Span]:
    """Sorted, with overlapping or touching spans joined."""
    merged: list[Span] = []
    for start, end in sorted(s for s in spans if s[0] < s[1]):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def subtract(span: Span, done: Iterable[Span]) -> list[Span]:
    """The parts of ``span`` that no span of ``done`` covers, oldest first."""
    left, (start, end) = [], span
    for d_start, d_end in merge(done):
        if d_end <= start or d_start >= end:
            continue
        if d_start > start:
            left.append((start, d_start))
        start = max(start, d_end)
    if start < end:
        left.append((start, end))
    return left


def _cut(span: Span, size: timedelta, newest_first: bool) -> list[Span]:
    start, end = span
    pieces = []
    if newest_first:
        while end > start:
            pieces.append((max(start, end - size), end))
            end -= size
    else:
        while start < end:
            pieces.append((start, min(end, start + size)))
            start += size
    return pieces


def event_spans(dates: Iterable[datetime], days: int) -> list[Span]:
    """The before/after windows of the configured events: ``days`` on each side."""
    return merge((d - timedelta(days=days), d + timedelta(days=days)) for d in dates)


def plan(
    floor: datetime, now: datetime, done: Sequence[Span], focus: Sequence[Span], size: timedelta
) -> list[Window]:
    """The windows still to list, in the order to list them."""
    todo = subtract((floor, now), done)
    focused = [part for gap in todo for f in merge(focus) for part in _overlap(gap, f)]
    rest = [part for gap in todo for part in subtract(gap, focused)]
    windows = [(w, True) for span in merge(focused) for w in _cut(span, size, False)]
    windows += [(w, False) for span in reversed(rest) for w in _cut(span, size, True)]
    return [Window(s, e, focus, e == now) for (s, e), focus in windows]


def _overlap(a: Span, b: Span) -> list[Span]:
    start, end = max(a[0], b[0]), min(a[1], b[1])
    return [(start, end)] if start < end else []


def dump(floor: datetime, done: Iterable[Span], default: datetime) -> dict[str, Any]:
    """The JSON that ``sync_state.backfill`` holds; ``default``: where the config then said a
    first collect starts, so that an event added to it later is seen to move that earlier."""
    return {
        "from": floor.isoformat(),
        "done": [[s.isoformat(), e.isoformat()] for s, e in done],
        "default": default.isoformat(),
    }


def default_of(stored: dict[str, Any] | None) -> datetime | None:
    """The default start ``dump`` recorded (None: a state written before it was recorded)."""
    found = (stored or {}).get("default")
    return None if found is None else datetime.fromisoformat(found)


def load(stored: dict[str, Any] | None) -> tuple[datetime | None, list[Span]]:
    stored = stored or {}
    floor = datetime.fromisoformat(stored["from"]) if "from" in stored else None
    spans = stored.get("done", [])
    return floor, [(datetime.fromisoformat(s), datetime.fromisoformat(e)) for s, e in spans]
