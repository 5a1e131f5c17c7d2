"""The environments table's works elsewhere looks at each failure's whole ISO week: a range that
starts mid-week still sees the greens of that week's days before it (docs/vocabulary.md,
Failures by environment), from the derived tables' counts as from the raw rows; worked out by
hand on two runs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy.orm import Session

from analytics import derived
from analytics.elsewhere import week_start
from reports.query import Query
from reports.tables import build
from store.engine import make_engine
from store.migrate import upgrade
from store.models import Failure, Job, RunAttempt, Workflow, WorkflowRun
from store.settings import load_config
from store.upsert import upsert
from tests.test_page_queries import WORKFLOW, _run

REPO = "verl-project/verl"
MONDAY = datetime(2026, 6, 1, 8, tzinfo=UTC)
THURSDAY = datetime(2026, 6, 4, tzinfo=UTC)


def test_the_week_starts_on_monday_in_utc() -> None:
    assert week_start(MONDAY + timedelta(days=3)) == datetime(2026, 6, 1, tzinfo=UTC)
    assert week_start(datetime(2026, 6, 8, tzinfo=UTC)) == datetime(2026, 6, 8, tzinfo=UTC)
    west = datetime(2026, 6, 7, 23, tzinfo=timezone(timedelta(hours=-3)))  # Monday in UTC
    assert week_start(west) == datetime(2026, 6, 8, tzinfo=UTC)


def _seed(url: str) -> None:
    """Job "npu" passes on runner r1 on Monday (run 1) and fails on r2 on Thursday (run 2),
    its log printing CANN 8.0."""
    engine = make_engine(url)
    upgrade(engine)
    runs = [
        {**_run(run_id, at), "conclusion": conclusion}
        for run_id, at, conclusion in [(1, MONDAY, "success"), (2, THURSDAY, "failure")]
    ]
    jobs = [
        {
            "id": run["id"] * 10,
            "run_id": run["id"],
            "run_attempt": 1,
            "name": "npu",
            "conclusion": run["conclusion"],
            "runner_name": f"r{run['id']}",
            "labels": [],
            "steps": [],
        }
        for run in runs
    ]
    failure = {
        "run_id": 2,
        "run_attempt": 1,
        "job_id": 20,
        "category": "npu_env",
        "rule": "rule-npu_env",
        "signature": "cann",
        "env": {"CANN": "8.0"},
        "classifier_version": "test",
        "classified_at": THURSDAY,
        "classifier_category": "npu_env",
        "classifier_evidence": "log",
    }
    with Session(engine) as session, session.begin():
        workflow = {"id": 1, "repo": REPO, "path": WORKFLOW, "name": "e2e", "state": "active"}
        upsert(session, Workflow, [workflow])
        upsert(session, WorkflowRun, runs)
        upsert(session, RunAttempt, [{"run_id": r["id"], "attempt": 1} for r in runs])
        upsert(session, Job, jobs)
        upsert(session, Failure, [failure])
    derived.rebuild(engine, REPO, load_config(env={}, db_url=url).project())
    engine.dispose()


@pytest.mark.parametrize("since", [THURSDAY, datetime(2026, 6, 1, tzinfo=UTC)])
def test_a_range_from_mid_week_sees_the_greens_of_the_weeks_first_days(db_url, since, monkeypatch):
    """From Thursday, Monday's pass on r1 makes r2's failure work elsewhere; from the Monday
    itself there is no earlier day of the week to add."""
    _seed(db_url)
    engine = make_engine(db_url, read_only=True)
    project = load_config(env={}, db_url=db_url).project()
    assert derived.is_current(engine, REPO, project.job_name_strip)
    query = Query(since, None, (), "default")
    found = build(engine, project, "environments", query)
    monkeypatch.setattr(derived, "is_current", lambda *args, **kwargs: False)
    raw = build(engine, project, "environments", query)
    for table in (found, raw):
        columns = ["fact", "version", "failures", "runners", "works_elsewhere_share"]
        assert table[columns].values.tolist() == [["CANN", "8.0", 1, 1, 1.0]]
    engine.dispose()
