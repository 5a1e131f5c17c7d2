"""Counted once where it is shown: the registry tables (verdicts, flaky-jobs, before-after) and
the nightly summary, on a copy of the collected history with an incident written into it
(store.incidents.replace): every failed default-branch job since 2026-06-01, before and after
both of verl's migrations."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from reports.query import Query
from reports.summary_render import render_summary
from reports.tables import build
from store.engine import make_engine
from store.incidents import replace
from store.models import Job, WorkflowRun
from store.settings import load_config
from tests.support.collected import collected_copy
from tests.support.summaries import summary_data

START = datetime(2026, 6, 1, tzinfo=UTC)
SINCE = datetime(2026, 8, 12, tzinfo=UTC)  # #7357 merged: the summary's failures from it
NOW = datetime(2026, 11, 28, tzinfo=UTC)
INCIDENT = "0123456789abcdef0123456789abcdef"


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> tuple[str, pd.DataFrame]:
    """The collected history with one incident, every failed default-branch job since START;
    and those members."""
    url = collected_copy(tmp_path_factory.mktemp("once"))
    engine = make_engine(url)
    with Session(engine) as session, session.begin():
        runs = select(WorkflowRun.id).where(
            WorkflowRun.head_branch == "main", WorkflowRun.created_at >= START
        )
        rows = session.execute(
            select(Job.run_id, Job.run_attempt, Job.id).where(
                Job.run_id.in_(runs), Job.conclusion == "failure"
            )
        ).all()
        members = pd.DataFrame(rows, columns=["run_id", "run_attempt", "job_id"])
        assert members["run_id"].nunique() >= 15
        incident = {
            "id": INCIDENT,
            "repo": "verl-project/verl",
            "kind": "workflows",
            "category": "network",
            "signature": None,
            "runner": None,
            "label": "HF Hub",
            "started_at": START,
            "ended_at": NOW,
            "jobs": len(members),
            "runs": members["run_id"].nunique(),
            "workflows": 9,
        }
        replace(
            session.connection(),
            "verl-project/verl",
            [incident],
            members.assign(incident_id=INCIDENT).to_dict("records"),
        )
    engine.dispose()
    return url, members


def _table(url: str, name: str) -> pd.DataFrame:
    project = load_config(env={}, db_url=url).project()
    engine = make_engine(url, read_only=True)
    try:
        return build(engine, project, name, Query())
    finally:
        engine.dispose()


def test_the_incidents_failures_are_never_flaky_counted_once(db):
    url, members = db
    table = _table(url, "verdicts")
    hit = table["incident_id"].notna()
    assert hit.sum() >= 15 and table.loc[hit, "run_id"].isin(members["run_id"]).all()
    assert set(table.loc[hit, "verdict_once"]) == {"incident"}
    assert set(table.loc[hit, "incident_id"]) == {INCIDENT}
    rest = table[~hit]
    assert (rest["verdict_once"] == rest["verdict"]).all() and rest["incident_id"].isna().all()


def test_flaky_jobs_and_before_after_count_the_incident_once(db):
    url, members = db
    flaky = _table(url, "flaky-jobs")
    assert (flaky["runs_once"] <= flaky["runs"]).all()
    shrunk = flaky[flaky["runs_once"] < flaky["runs"]]
    # each logical job the incident failed in several runs keeps one red run of it
    assert len(shrunk) >= 1
    assert (shrunk["pass_once"] == shrunk["pass"]).all()
    assert (shrunk["flaky_once"] + shrunk["fail_once"] >= 1).all()
    windows = _table(url, "before-after")
    for side in ("before", "after"):
        assert (windows[f"{side}_runs_once"] <= windows[f"{side}_runs"]).all()
        hit = windows[f"{side}_incident_id"].notna()
        assert (windows.loc[hit, f"{side}_incident_id"] == INCIDENT).all()
        # the window's red runs less those of the incident, plus one for it
        red = windows[f"{side}_flaky"] + windows[f"{side}_fail"]
        once = windows[f"{side}_flaky_once"] + windows[f"{side}_fail_once"]
        assert (once[hit] == red[hit] - windows.loc[hit, f"{side}_incident_red"] + 1).all()
        assert (once[~hit] == red[~hit]).all()
    assert windows["before_incident_red"].sum() + windows["after_incident_red"].sum() >= 2


def test_the_summary_groups_incident_failures_and_gives_the_headline_counted_once(db):
    url, _ = db
    text = render_summary(summary_data(url, SINCE, NOW))
    assert "🌩️ INCIDENT (one of an incident's failures: counted once, never flaky)" in text
    headline = text.split("\n\n| lineage |", 1)[0]
    assert "Each incident counted once (docs/vocabulary.md): successors " in headline
