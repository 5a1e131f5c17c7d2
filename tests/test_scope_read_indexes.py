"""The Flaky jobs page's statements (store.job_counts) read the runs and logical jobs of a
scope from indexes alone on SQLite, and the window statement gets its runs in order: each
statement run is explained (EXPLAIN QUERY PLAN) with the parameters it ran with."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import Engine, event

from reports.job_tables import PER_JOB
from store.engine import make_engine
from store.job_counts import job_counts, red_turns
from store.migrate import upgrade
from store.runfilter import RunFilter

SCOPE = RunFilter(
    "o/r",
    datetime(2026, 1, 1, tzinfo=UTC),
    datetime(2026, 2, 1, tzinfo=UTC),
    events=("push", "schedule"),
    branch="main",
)


@pytest.fixture(scope="module")
def sqlite_engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    engine = make_engine(f"sqlite:///{tmp_path_factory.mktemp('plans') / 'plans.db'}")
    upgrade(engine)
    return engine


def _plan(engine: Engine, read: object) -> str:
    """The query plan of the one statement ``read()`` runs, one line per step."""
    ran: list[tuple[str, object]] = []

    def keep(conn: object, cursor: object, statement: str, parameters: object, *_: object) -> None:
        ran.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", keep)
    try:
        read()  # type: ignore[operator]
    finally:
        event.remove(engine, "before_cursor_execute", keep)
    [(statement, parameters)] = ran
    with engine.connect() as conn:
        rows = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters).all()
    return "\n".join(row[-1] for row in rows)


def test_the_flaky_jobs_counts_read_runs_and_logical_jobs_from_indexes_alone(sqlite_engine):
    plan = _plan(sqlite_engine, lambda: job_counts(sqlite_engine, SCOPE, PER_JOB))
    assert "workflow_runs USING COVERING INDEX ix_workflow_runs_scope_reads" in plan
    assert "logical_jobs USING COVERING INDEX ix_logical_jobs_count_reads" in plan


def test_the_red_turns_window_reads_the_runs_in_order(sqlite_engine):
    plan = _plan(sqlite_engine, lambda: red_turns(sqlite_engine, SCOPE))
    assert "workflow_runs USING COVERING INDEX ix_workflow_runs_scope_reads" in plan
    assert "TEMP B-TREE" not in plan
