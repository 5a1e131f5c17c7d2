"""``collect --since`` after the first collect (#46): an earlier date extends the backfill down
to it, a collect cut off on the way goes on without --since, and the result is the database a
first collect from that date makes."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime

import pytest
from sqlalchemy.orm import Session

import fakehub
from collector.once import collect_once
from collector.sync_report import CollectOptions, CollectReport
from store import backfill, bookkeeping
from tests.support.collected import DEFAULT, Scenario, collected
from tests.support.hubtools import collect, hub_config, snapshot
from tests.support.hubtools import migrated as migrated_engine

LATER = datetime(2026, 10, 1, tzinfo=UTC)
EARLIER = datetime(2026, 8, 1, tzinfo=UTC)
REPO = "verl-project/verl"
# A first collect from EARLIER, in one go: what each way of getting there must equal.
FROM_EARLIER = Scenario(since=EARLIER)


@pytest.fixture()
def hub() -> Iterator[fakehub.Hub]:
    with DEFAULT.hub() as running:
        yield running


def test_an_earlier_since_extends_a_complete_backfill(hub, tmp_path):
    url = f"sqlite:///{tmp_path / 'extended.db'}"
    first = collect(hub, url, since=LATER)
    assert not first.stopped and first.runs_new > 0
    cut = collect(hub, url, since=EARLIER, max_requests=30)
    assert cut.stopped and cut.runs_new > 0, cut.line()
    reports = [collect(hub, url, since=None)]  # goes on from where --since left it
    while reports[-1].stopped:
        reports.append(collect(hub, url, since=None))
        assert len(reports) < 50, "the extension does not progress"
    assert sum(r.runs_new for r in reports) > 0
    assert collect(hub, url, since=None).runs_new == 0
    once = collected(FROM_EARLIER, tmp_path).url
    assert snapshot(migrated_engine(url)) == snapshot(migrated_engine(once))


def test_a_later_since_goes_on_from_where_the_backfill_started(hub, tmp_path):
    """A backfill cut off, then a collect with a later --since: nothing between is lost, and
    the report says that --since added nothing."""
    url = f"sqlite:///{tmp_path / 'later.db'}"
    cut = collect(hub, url, since=EARLIER, max_requests=30)
    assert cut.stopped, cut.line()
    later = collect(hub, url, since=LATER)
    assert not later.stopped and later.runs_new > 0, later.line()
    once = collected(FROM_EARLIER, tmp_path).url
    assert snapshot(migrated_engine(url)) == snapshot(migrated_engine(once))
    assert f"--since 2026-10-01 adds nothing: {REPO} is collected from 2026-08-01 on" in (
        later.line()
    )


def test_a_since_that_adds_nothing_says_so(hub, collected_db):
    """After a complete collect, --since its start or later: 0 new, exit 0, and one line why."""
    url = collected_db(DEFAULT).url
    report = collect(hub, url, since=LATER)
    assert report.runs_new == 0 and not report.stopped, report.line()
    assert f"--since 2026-10-01 adds nothing: {REPO} is collected from 2025-10-01 on" in (
        report.line()
    )


def test_an_event_added_during_a_backfill_moves_its_start_earlier(hub, tmp_path):
    """Every collect reads the config's default start again: an event added while a backfill
    is under way brings the days before it in."""
    url = f"sqlite:///{tmp_path / 'event.db'}"
    first = _collect_with_events(hub, url, datetime(2026, 11, 1, tzinfo=UTC))
    assert first.stopped, first.line()
    assert _floors(url) == {datetime(2026, 10, 2, tzinfo=UTC)}
    added = _collect_with_events(
        hub, url, datetime(2026, 9, 1, tzinfo=UTC), datetime(2026, 11, 1, tzinfo=UTC), None
    )
    assert not added.stopped, added.line()
    assert _floors(url) == {datetime(2026, 8, 2, tzinfo=UTC)}


def _collect_with_events(hub: fakehub.Hub, url: str, *dates: datetime | None) -> CollectReport:
    """A collect without --since under the built-in config with events on ``dates`` only (it
    starts 30 days before the first); of 30 requests, unless the last date is None."""
    config = hub_config(hub, url)
    project = config.project()
    events = tuple(replace(project.events[0], date=date) for date in dates if date)
    config = config.with_overrides(projects=(replace(project, events=events),))
    engine = migrated_engine(url)
    budget = 30 if dates[-1] else None
    try:
        return collect_once(config, engine, CollectOptions(quiet=True, max_requests=budget))
    finally:
        engine.dispose()


def _floors(url: str) -> set[datetime | None]:
    """Where the stored backfills of the workflows start."""
    engine = migrated_engine(url)
    try:
        with Session(engine) as session:
            states = bookkeeping.sync_states(session, REPO)
    finally:
        engine.dispose()
    floors = {backfill.load(s.backfill)[0] for s in states.values() if s.workflow_id}
    return {f if f is None or f.tzinfo else f.replace(tzinfo=UTC) for f in floors}
