"""``collect --since`` after the first collect (#46): an earlier date extends the backfill down
to it, a collect cut off on the way goes on without --since, and the result is the database a
first collect from that date makes."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

import fakehub
from tests.support.collected import DEFAULT
from tests.support.hubtools import collect, snapshot
from tests.support.hubtools import migrated as migrated_engine

LATER = datetime(2026, 10, 1, tzinfo=UTC)
EARLIER = datetime(2026, 8, 1, tzinfo=UTC)


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
    once = f"sqlite:///{tmp_path / 'once.db'}"
    collect(hub, once, since=EARLIER)
    assert snapshot(migrated_engine(url)) == snapshot(migrated_engine(once))
