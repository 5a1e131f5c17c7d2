"""Each concept has one definition (docs/vocabulary.md): the dashboard's loaders and the nightly
summary, fed the same database, give the same answer for STALE, NEW, a successor's first runs,
works-elsewhere and the environment failures.

The database is fakehub's collected history with only the configured workflows of the lineages
that #7357 touches on the default branch (every other run moved to a pull-request branch), so the
dashboard's default scope and the summary read the same runs; each test then shapes the history
so that the old, separate definitions would disagree."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta

import pandas as pd
import pytest
from sqlalchemy import Engine, select, update
from sqlalchemy.orm import Session

from analytics.config_tables import event_table
from analytics.newness import NEW_DAYS
from dashboard.filters import Filters
from dashboard.loaders import shared
from reports.summary import load_summary
from reports.summary_tables import SummaryData
from store.engine import make_engine
from store.events import all_events
from store.models import Failure, WorkflowRun
from store.page_queries import run_span
from store.settings import Config, load_config
from tests.support.collected import collected_copy

REPO = "verl-project/verl"
PR = 7357
DEFAULT_EVENTS = ("push", "schedule", "workflow_dispatch")
OPD = ".github/workflows/e2e_v1_separate_async_opd.yml"
V1 = ".github/workflows/e2e_v1_separate_async.yml"
NIGHTLY = ".github/workflows/e2e_v1_separate_async_nightly.yml"  # added by the migration
PREDECESSOR = ".github/workflows/e2e_fully_async_policy.yml"


class History:
    """A private copy of the collected database, as the dashboard and the summary see it."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.config: Config = load_config(env={}, db_url=url)
        self.engine: Engine = make_engine(url)
        self.event = (
            event_table(all_events(self.config.project(), self.engine))
            .set_index("event_pr")
            .loc[PR]
        )
        lineages = self.event["event_lineages"] or [
            w.lineage for w in self.config.project().workflows
        ]
        touched = set(lineages)  # as the summary reads them: none given, every lineage
        self.paths = [w.path for w in self.config.project().workflows if w.lineage in touched]
        self.move_to_pr(~WorkflowRun.workflow_path.in_(self.paths))

    def move_to_pr(self, *where: object) -> None:
        """Take the runs matching ``where`` off the default branch."""
        with Session(self.engine) as session, session.begin():
            stmt = update(WorkflowRun).where(*where)  # type: ignore[arg-type]
            session.execute(stmt.values(event="pull_request", head_branch="elsewhere"))

    def main_runs(self, path: str) -> list[tuple[int, pd.Timestamp]]:
        """(id, created_at) of the default-branch runs of ``path``, oldest first."""
        run = WorkflowRun
        stmt = (
            select(run.id, run.created_at)
            .where(run.workflow_path == path, run.head_branch == "main")
            .where(run.event.in_(DEFAULT_EVENTS))
            .order_by(run.created_at, run.id)
        )
        with self.engine.connect() as conn:
            return [(row.id, _utc(row.created_at)) for row in conn.execute(stmt)]

    def newest(self) -> pd.Timestamp:
        return pd.Timestamp(run_span(self.engine, REPO)[1])

    def summary(self, since: datetime, now: datetime) -> SummaryData:
        events = all_events(self.config.project(), self.engine)
        return load_summary(self.engine, self.config.project(), events, pr=PR, since=since, now=now)

    def filters(self, first_day: date, last_day: date | None = None) -> Filters:
        return Filters(REPO, first_day, last_day or self.newest().date(), (), "default")


@pytest.fixture
def history(tmp_path, monkeypatch) -> Iterator[History]:
    url = collected_copy(tmp_path)
    monkeypatch.setenv("CIFLAKE_DB_URL", url)
    monkeypatch.delenv("CIFLAKE_CONFIG", raising=False)
    made = History(url)
    yield made
    made.engine.dispose()


def _utc(moment: datetime) -> pd.Timestamp:
    stamp = pd.Timestamp(moment)
    return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")


def _midnight(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


def test_stale_is_the_same_on_the_tiles_and_in_the_summary(history):
    """opd stops running on the default branch in mid-October: STALE on both, silent since its
    last run until the newest stored run (not the wall clock). The nightly whose cron stops
    firing on 2026-11-10 is SILENT (its schedule not firing) on both, so STALE on neither. v1
    keeps only three runs (two gaps) after the event: too few gaps for any verdict, on both."""
    opd = history.main_runs(OPD)
    late = [i for i, at in opd if at >= datetime(2026, 10, 15, tzinfo=UTC)]
    history.move_to_pr(WorkflowRun.id.in_(late))
    v1 = [i for i, at in history.main_runs(V1) if at >= history.event["event_date"]]
    history.move_to_pr(WorkflowRun.id.in_(v1[3:]))
    since = datetime(2026, 8, 15, tzinfo=UTC)  # reads runs from since - 21 days, at midnight
    start = since - timedelta(days=21)
    assert start < history.event["event_date"] - timedelta(
        days=history.config.project().analysis.window_days
    )
    data = history.summary(since, datetime(2026, 11, 30, tzinfo=UTC))
    tiles = shared.table(history.url, history.filters(start.date()), "status")
    tiles = tiles[(tiles["level"] == "workflow") & tiles["name"].isin(history.paths)]
    tiles = tiles[tiles["last_run"] >= history.event["event_date"]].set_index("name")
    shown_stale = set(tiles.index[tiles["status"] == "STALE"])
    summary_stale = set(data.stale["workflow_path"])
    assert summary_stale == shown_stale == {OPD}
    assert tiles.at[NIGHTLY, "status"] == "SILENT"
    assert list(data.silent["workflow_path"]) == [NIGHTLY]
    assert tiles.at[V1, "status"] != "STALE"
    row = data.stale.set_index("workflow_path").loc[OPD]
    silent = (history.newest() - row["last_run_at"]).total_seconds() / 3600
    assert row["silent_hours"] == pytest.approx(silent)
    assert tiles.at[OPD, "silent_hours"] == pytest.approx(silent)
    assert tiles.at[OPD, "usual_gap_hours"] == pytest.approx(row["usual_gap_hours"])


def test_new_is_the_same_in_the_signature_table_and_in_the_summary(history):
    """The newest default-branch failure gets a signature never seen before: NEW on both. Every
    other signature of the summary's failures is NEW or not on both alike: first seen in the
    whole history within the NEW_DAYS days before the end of the period."""
    run, failure = WorkflowRun, Failure
    stmt = (
        select(failure.run_id, failure.run_attempt, failure.job_id, run.created_at)
        .join(run, run.id == failure.run_id)
        .where(run.head_branch == "main", run.event.in_(DEFAULT_EVENTS), failure.job_id != 0)
        .order_by(run.created_at.desc())
        .limit(1)
    )
    with Session(history.engine) as session, session.begin():
        newest = session.execute(stmt).one()
        session.execute(
            update(failure)
            .where(failure.run_id == newest.run_id, failure.job_id == newest.job_id)
            .values(signature="fresh-signature")
        )
    end = _midnight(_utc(newest.created_at).date() + timedelta(days=2))
    since = end - timedelta(days=30)
    data = history.summary(since, end)
    table = shared.table(
        history.url, history.filters(since.date(), end.date() - timedelta(1)), "signatures"
    )
    shown = table.set_index("signature")["new"]
    rows = data.failures.dropna(subset=["signature"])
    summary_new = rows.groupby("signature")["group"].agg(lambda g: bool((g == "NEW").all()))
    assert len(summary_new) >= 3 and summary_new["fresh-signature"]
    assert set(summary_new.index) <= set(shown.index)
    assert summary_new.to_dict() == shown[summary_new.index].astype(bool).to_dict()
    firsts = table.set_index("signature")["first_seen"][summary_new.index]
    assert summary_new.to_dict() == (firsts >= end - timedelta(days=NEW_DAYS)).to_dict()
    assert not summary_new.all(), "every signature NEW: the test tells no definitions apart"


def test_a_successors_first_runs_are_the_same_on_the_page_and_in_the_summary(history):
    """A scheduled run of a predecessor that fires after the merge is no successor's first
    run: only the workflows the event created have a strip, on both."""
    event_date = history.event["event_date"]
    before = [i for i, at in history.main_runs(PREDECESSOR) if at < event_date]
    with Session(history.engine) as session, session.begin():
        session.execute(
            update(WorkflowRun)
            .where(WorkflowRun.id == before[-1])
            .values(created_at=(event_date + timedelta(hours=2)).to_pydatetime())
        )
    data = history.summary(datetime(2026, 8, 15, tzinfo=UTC), datetime(2026, 11, 30, tzinfo=UTC))
    first_day, _ = shared.day_span(history.url, REPO)
    strips = shared.table(
        history.url, history.filters(first_day), "first-runs", since=None, until=None
    )
    strips = strips[(strips["event_pr"] == PR) & strips["workflow_path"].isin(history.paths)]
    columns = ["workflow_path", "html_url", "logical_outcome"]
    ordered = ["workflow_path", "created_at"]
    shown = strips.sort_values(ordered)[columns].reset_index(drop=True)
    summary = data.strips.sort_values(ordered)[columns].reset_index(drop=True)
    assert set(summary["workflow_path"]) == {V1, OPD}
    pd.testing.assert_frame_equal(summary.astype(object), shown.astype(object))


MONDAY = datetime(2026, 8, 17, tzinfo=UTC)  # weeks start on Mondays: the same weeks on both


def test_works_elsewhere_is_the_same_on_the_runners_page_and_in_the_summary(history):
    data = history.summary(MONDAY, datetime(2026, 11, 30, tzinfo=UTC))
    table = shared.table(history.url, history.filters(MONDAY.date()), "runners")
    failed = table.dropna(subset=["works_elsewhere"])
    shown = int((failed["failed_jobs"] * failed["works_elsewhere"]).round().sum())
    summary = int(data.failures["works_elsewhere"].sum())
    assert shown == summary > 0
    assert not data.failures["works_elsewhere"].all()


def test_environment_failures_are_the_same_on_the_runners_page_and_in_the_summary(history):
    data = history.summary(MONDAY, datetime(2026, 11, 30, tzinfo=UTC))
    shown = shared.table(history.url, history.filters(MONDAY.date()), "environments")
    assert len(data.environments) and data.environments["failures"].sum() > 0
    pd.testing.assert_frame_equal(
        data.environments.reset_index(drop=True), shown.reset_index(drop=True)
    )
