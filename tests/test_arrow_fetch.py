"""store.arrow_fetch reads big results on a SQLite file through ADBC: every query that goes
through ``raw_frame`` gives the frame the DBAPI cursor gives, with filters of every kind
(dates, IN lists, no match), and the ADBC path is really taken where it applies."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from typing import Any

import pandas as pd
import pytest
from sqlalchemy import create_engine, literal, null, select

from store import arrow_fetch, frame_queries, page_queries, runfilter
from store.engine import make_engine
from store.models import WorkflowRun
from store.runfilter import RunFilter, filtered, raw_frame

REPO = "verl-project/verl"
FILTERS = {
    "everything": RunFilter(),
    "dates, workflows, event, branch": RunFilter(
        repo=REPO,
        since=datetime(2026, 6, 1, tzinfo=UTC),
        until=datetime(2026, 9, 1, tzinfo=UTC),
        paths=(
            ".github/workflows/e2e_ascend.yml",
            ".github/workflows/e2e_v1_separate_async.yml",
        ),
        events=("push",),
        branch="main",
    ),
    "no such repository": RunFilter(repo="nobody/nothing"),
}
QUERIES: dict[str, Callable[..., pd.DataFrame]] = {
    "load_runs": frame_queries.load_runs,
    "load_attempts": frame_queries.load_attempts,
    "load_jobs": frame_queries.load_jobs,
    "load_failures": frame_queries.load_failures,
    "job_times": frame_queries.job_times,
    "job_outcomes": frame_queries.job_outcomes,
    "derived_runs": partial(frame_queries.derived_runs, lean=False),
    "derived_runs lean": partial(frame_queries.derived_runs, lean=True),
    "derived_jobs": partial(frame_queries.derived_jobs, lean=False),
    "derived_jobs lean": partial(frame_queries.derived_jobs, lean=True),
    "daily_job_presence": page_queries.daily_job_presence,
}


def _both(monkeypatch, read: Callable[[], pd.DataFrame]) -> tuple[pd.DataFrame, pd.DataFrame, bool]:
    """``read()`` through ADBC (and whether ADBC answered) and through the DBAPI cursor."""
    answered: list[bool] = []

    def counted(*args: Any) -> pd.DataFrame | None:
        frame = arrow_fetch.arrow_frame(*args)
        answered.append(frame is not None)
        return frame

    with monkeypatch.context() as patch:
        patch.setattr(runfilter, "arrow_frame", counted)
        arrow = read()
    with monkeypatch.context() as patch:
        patch.setattr(runfilter, "arrow_frame", lambda *args: None)
        dbapi = read()
    return arrow, dbapi, any(answered)


@pytest.mark.parametrize("where", FILTERS.values(), ids=FILTERS.keys())
@pytest.mark.parametrize("query", QUERIES.values(), ids=QUERIES.keys())
def test_adbc_reads_the_frames_the_cursor_reads(demo_db: str, monkeypatch, query, where) -> None:
    engine = make_engine(demo_db, read_only=True)
    arrow, dbapi, used = _both(monkeypatch, lambda: query(engine, where))
    engine.dispose()
    pd.testing.assert_frame_equal(arrow.reset_index(drop=True), dbapi.reset_index(drop=True))
    assert used == (len(dbapi) > 0), "ADBC reads every non-empty result on a SQLite file"


def test_a_column_without_any_value_is_none_as_pandas_makes_it(demo_db: str, monkeypatch) -> None:
    """ADBC types a NULL-only column as integers; pandas makes None objects of it."""
    engine = make_engine(demo_db, read_only=True)
    stmt = select(WorkflowRun.id, null().label("absent"), literal("x").label("text"))
    arrow, dbapi, used = _both(monkeypatch, lambda: raw_frame(engine, filtered(stmt, RunFilter())))
    engine.dispose()
    assert used and dbapi["absent"].dtype == object
    pd.testing.assert_frame_equal(arrow, dbapi)


def test_a_connection_is_read_through_itself(demo_db: str) -> None:
    """The collector reads its own batch inside the transaction that writes it: another
    connection would not see those rows, so a Connection never goes through ADBC."""
    engine = make_engine(demo_db, read_only=True)
    with engine.connect() as conn:
        assert arrow_fetch.arrow_frame(conn, select(WorkflowRun.id)) is None
    assert arrow_fetch.arrow_frame(engine, select(WorkflowRun.id)) is not None
    engine.dispose()


def test_postgresql_and_memory_databases_use_the_cursor() -> None:
    stmt = select(WorkflowRun.id)
    memory = make_engine("sqlite://")
    server = create_engine("postgresql+psycopg://reader@127.0.0.1:1/ciflake")  # never connected
    assert arrow_fetch.arrow_frame(memory, stmt) is None
    assert arrow_fetch.arrow_frame(server, stmt) is None
    memory.dispose()
