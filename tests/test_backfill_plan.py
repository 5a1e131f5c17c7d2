"""The order a backfill lists its windows in (store.backfill): around the events first,
then the rest newest first, never a span twice, and the whole range covered."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from store.backfill import Progress, event_spans, merge, plan, progress_of, subtract

DAY = timedelta(days=1)
FLOOR = datetime(2026, 1, 1, tzinfo=UTC)
NOW = datetime(2026, 4, 1, 12, tzinfo=UTC)
EVENT = datetime(2026, 2, 15, tzinfo=UTC)
WEEK = 7 * DAY


def _covered(windows) -> list[tuple[datetime, datetime]]:
    return merge((w.start, w.end) for w in windows)


def test_the_event_windows_come_first_then_the_rest_newest_first():
    windows = plan(FLOOR, NOW, [], event_spans([EVENT], 14), WEEK)
    focus = [w for w in windows if w.focus]
    assert windows[: len(focus)] == focus  # every event window before any other
    assert _covered(focus) == [(EVENT - 14 * DAY, EVENT + 14 * DAY)]
    rest = windows[len(focus) :]
    assert rest[0].end == NOW and rest[0].open  # the newest window, listed open-ended
    assert all(a.start >= b.end for a, b in zip(rest, rest[1:], strict=False))  # newest first
    assert _covered(windows) == [(FLOOR, NOW)]
    assert all(w.end - w.start <= WEEK for w in windows)
    assert sum(w.open for w in windows) == 1


def test_listed_spans_are_not_listed_again():
    first = plan(FLOOR, NOW, [], event_spans([EVENT], 14), WEEK)
    done = [(w.start, w.end) for w in first[:5]]
    later = plan(FLOOR, NOW + 3 * DAY, done, event_spans([EVENT], 14), WEEK)
    assert not any(w.start < d_end and w.end > d_start for w in later for d_start, d_end in done)
    assert merge([*done, *((w.start, w.end) for w in later)]) == [(FLOOR, NOW + 3 * DAY)]
    assert later[0].end == NOW + 3 * DAY  # the days since the last collect come first


def test_events_outside_the_range_add_nothing_and_nearby_events_merge():
    spans = event_spans([EVENT, EVENT + 10 * DAY, FLOOR - 60 * DAY], 14)
    assert (EVENT - 14 * DAY, EVENT + 24 * DAY) in spans
    windows = plan(FLOOR, NOW, [], spans, WEEK)
    assert _covered(windows) == [(FLOOR, NOW)]
    # the old event's windows end before the floor: only the two nearby ones, as one span
    assert _covered(w for w in windows if w.focus) == [(EVENT - 14 * DAY, EVENT + 24 * DAY)]


def test_subtract_and_merge():
    a, b = FLOOR, FLOOR + 10 * DAY
    assert subtract((a, b), []) == [(a, b)]
    assert subtract((a, b), [(a + DAY, a + 2 * DAY), (a + 5 * DAY, b + DAY)]) == [
        (a, a + DAY),
        (a + 2 * DAY, a + 5 * DAY),
    ]
    assert subtract((a, b), [(a - DAY, b)]) == []
    assert merge([(a + DAY, a + 2 * DAY), (a, a + DAY), (b, b)]) == [(a, a + 2 * DAY)]


def test_progress_says_what_is_missing():
    half = (FLOOR, FLOOR + 30 * DAY)
    stored = {"from": FLOOR.isoformat(), "done": [[half[0].isoformat(), half[1].isoformat()]]}
    progress = progress_of(None, stored, FLOOR + 30 * DAY)
    assert progress.missing((FLOOR - 20 * DAY, FLOOR + 40 * DAY)) == [(half[1], FLOOR + 40 * DAY)]
    assert progress_of(NOW, stored, None).missing((FLOOR, NOW)) == []  # complete
    older = progress_of(None, {}, FLOOR + 5 * DAY)  # an older collect's state: a watermark
    assert older.missing((FLOOR, FLOOR + 9 * DAY)) == [(FLOOR + 5 * DAY, FLOOR + 9 * DAY)]
    assert Progress(None, (), False).missing((FLOOR, NOW)) == [(FLOOR, NOW)]
