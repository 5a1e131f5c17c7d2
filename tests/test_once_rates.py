"""Counted once beside every rate (#48): the Overview's tiles and timeline, the Runners page's
runner and pool tables and ``ciflake export runner-pools``. A copy of the collected history
where one host failed the default branch's L20x8 jobs of 14 days (their runner renamed to it:
the 14 days, ending at a midnight, where one lineage has the most of them), written as a
runner incident with store.incidents.replace; the pages' date range ends with those days.
Each figure counted once is computed here from the logical runs and jobs: an incident's red
rows of a group are one."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta

import pandas as pd
import pytest
from sqlalchemy import update

from analytics.derived import refresh
from analytics.elsewhere import with_runner_pool
from analytics.frames import logical_job_frame, logical_run_frame
from dashboard.filters import Filters
from dashboard.loaders import shared
from reports.query import Query
from reports.tables import build
from store.engine import make_engine
from store.frame_queries import load_jobs
from store.incidents import replace
from store.models import Job
from store.page_queries import failure_details
from store.settings import load_config
from tests.support.collected import collected_copy

REPO = "verl-project/verl"
HOST = "vemlp-l20x8-stuck-runner"
INCIDENT = "fedcba9876543210fedcba9876543210"
RED = ("flaky", "fail")


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> tuple[str, pd.DataFrame, pd.Timestamp]:
    """The collected history, its L20x8 failures of the 14 days (``_busiest``; each attempt of
    their jobs) moved to HOST and made one runner incident; those members, and the end of
    the 14 days."""
    url = collected_copy(tmp_path_factory.mktemp("once-rates"))
    project = load_config(env={}, db_url=url).project()
    engine = make_engine(url)
    where = Query().where(project)
    failed = failure_details(engine, where)
    pools = load_jobs(engine, where).set_index("job_id")["labels"].map("+".join)
    failed = failed[failed["job_id"].map(pools) == "L20x8"]
    lineage = logical_run_frame(engine, project, where).set_index("run_id")["lineage"]
    end = _busiest(failed.assign(lineage=failed["run_id"].map(lineage)))
    failed = failed[failed["created_at"].between(end - timedelta(days=14), end, "right")]
    members = failed[["run_id", "run_attempt", "job_id"]]
    incident = {
        "id": INCIDENT,
        "repo": REPO,
        "kind": "runner",
        "category": "npu_env",
        "signature": None,
        "runner": HOST,
        "label": "one stuck L20x8 host (test)",
        "started_at": failed["created_at"].min().to_pydatetime(),
        "ended_at": end.to_pydatetime(),
        "jobs": len(members),
        "runs": members["run_id"].nunique(),
        "workflows": failed["workflow_path"].nunique(),
    }
    with engine.begin() as conn:
        # every attempt of the failed jobs ran on the host: a logical job reads its last one's
        for run_id, name in failed[["run_id", "job_name"]].drop_duplicates().itertuples(False):
            moved = update(Job).where(Job.run_id == run_id, Job.name == name)
            conn.execute(moved.values(runner_name=HOST))
        refresh(conn, members["run_id"].unique().tolist(), project.job_name_strip)
        replace(conn, REPO, [incident], members.assign(incident_id=INCIDENT).to_dict("records"))
    engine.dispose()
    return url, members, end


def _busiest(failed: pd.DataFrame) -> pd.Timestamp:
    """The midnight ending the 14 days where one lineage has the most runs in ``failed``."""
    ends = (failed["created_at"].dt.floor("D") + timedelta(days=1)).unique()
    runs = {
        end: failed[failed["created_at"].between(end - timedelta(days=14), end, "right")]
        .groupby("lineage")["run_id"]
        .nunique()
        .max()
        for end in sorted(ends)
    }
    end = max(runs, key=lambda e: runs[e])
    assert runs[end] >= 3
    return pd.Timestamp(end)


@pytest.fixture
def filters(db, monkeypatch) -> Iterator[Filters]:
    """Every day of the history up to the incident's end."""
    url, _, end = db
    monkeypatch.setenv("CIFLAKE_DB_URL", url)
    yield Filters(
        REPO, shared.day_span(url, REPO)[0], (end - timedelta(days=1)).date(), (), "default"
    )


def _frames(url: str, until: datetime | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The default branch's logical runs and logical jobs (with their pool) created before
    ``until``."""
    project = load_config(env={}, db_url=url).project()
    engine = make_engine(url, read_only=True)
    try:
        where = Query(until=until).where(project)
        runs = logical_run_frame(engine, project, where)
        return runs, with_runner_pool(logical_job_frame(engine, project, where, runs))
    finally:
        engine.dispose()


def _once_by_hand(table: pd.DataFrame, hit: pd.DataFrame, by: str) -> pd.DataFrame:
    """``table``'s counts as they are, less each group's red rows of the incident (``hit``),
    plus one: a fail if one of them failed, else a flaky."""
    counts = hit.groupby(by)["logical_outcome"].value_counts().unstack(fill_value=0)
    counts = counts.reindex(columns=list(RED), fill_value=0).reindex(table[by], fill_value=0)
    fail, flaky = counts["fail"].to_numpy(), counts["flaky"].to_numpy()
    once = table[[by, "pass"]].copy()
    once["fail"] = table["fail"].to_numpy() - fail + (fail > 0)
    once["flaky"] = table["flaky"].to_numpy() - flaky + ((fail == 0) & (flaky > 0))
    once["runs"] = once["pass"] + once["flaky"] + once["fail"]
    return once


def _hit_jobs(jobs: pd.DataFrame, members: pd.DataFrame) -> pd.DataFrame:
    """The red logical jobs whose last red shard is one of the incident's failures."""
    return jobs[jobs["logical_outcome"].isin(RED) & jobs["red_job_id"].isin(members["job_id"])]


@pytest.mark.parametrize("by", ["runner_pool", "runner_name"])
def test_the_runners_tables_give_the_fail_rate_counted_once(db, filters, by):
    url, members, end = db
    table = shared.table(url, filters, {"runner_pool": "runner-pools"}.get(by, "runners"))
    _, jobs = _frames(url, end)
    hit = _hit_jobs(jobs, members)
    assert hit[by].value_counts().max() >= 3  # one pool (and one host) failed several jobs
    once = _once_by_hand(table, hit, by)
    for column in ("runs", "flaky", "fail"):
        assert table[f"{column}_once"].tolist() == once[column].tolist(), column
    rate = (once["flaky"] + once["fail"]) / once["runs"]
    assert table["fail_rate_once"].to_numpy() == pytest.approx(rate.to_numpy(), nan_ok=True)
    place = "L20x8" if by == "runner_pool" else HOST
    row = table.set_index(by).loc[place]
    assert row["fail_once"] + row["flaky_once"] < row["fail"] + row["flaky"]
    if by == "runner_pool":  # the host failed every job it ran, counted once or not
        assert row["fail_rate_once"] < row["fail_rate"]


def test_export_runner_pools_gives_the_fail_rate_counted_once(db):
    url, members, end = db
    project = load_config(env={}, db_url=url).project()
    engine = make_engine(url, read_only=True)
    try:
        table = build(engine, project, "runner-pools", Query(until=end))
    finally:
        engine.dispose()
    _, jobs = _frames(url, end)
    once = _once_by_hand(table, _hit_jobs(jobs, members), "runner_pool")
    for column in ("runs", "pass", "flaky", "fail"):
        assert table[f"{column}_once"].tolist() == once[column].tolist(), column
    pool = table.set_index("runner_pool").loc["L20x8"]
    assert pool["runs_once"] < pool["runs"]
    assert pool["fail_rate_once"] == pytest.approx(
        (pool["flaky_once"] + pool["fail_once"]) / pool["runs_once"]
    )
    assert pool["fail_rate_low_once"] < pool["fail_rate_once"] < pool["fail_rate_high_once"]


def test_the_overview_tiles_give_the_window_counted_once(db, filters):
    url, members, end = db
    tiles = shared.table(url, filters, "status")
    runs, _ = _frames(url, end)
    days = shared.current_config().dashboard_recent_days
    window = runs[runs["created_at"] > end - timedelta(days=days)]
    red = window[window["logical_outcome"].isin(RED) & window["run_id"].isin(members["run_id"])]
    hit = red.groupby("lineage").size()
    assert hit.max() >= 3
    lineages = tiles[tiles["level"] == "lineage"].set_index("name")
    for lineage, count in hit.items():
        tile = lineages.loc[lineage]
        assert tile["runs_once"] == tile["runs"] - count + 1
        assert tile["success_rate_once"] == pytest.approx(tile["pass"] / tile["runs_once"])
        assert tile["label_once"].startswith(f"{tile['success_rate_once']:.2f} [")
        assert tile["label_once"] != tile["label"]
    rest = lineages.drop(hit.index)
    assert (rest["runs_once"] == rest["runs"]).all() and (rest["label_once"] == rest["label"]).all()


def test_the_overview_timeline_gives_each_period_counted_once(db, filters):
    url, members, end = db
    weeks = shared.table(url, filters, "stability")
    runs, _ = _frames(url, end)
    red = runs[runs["logical_outcome"].isin(RED) & runs["run_id"].isin(members["run_id"])]
    start = red["created_at"].dt.tz_convert("UTC").dt.tz_localize(None).dt.to_period("W-SUN")
    hit = red.groupby(["lineage", start.dt.start_time.dt.tz_localize("UTC")]).size()
    table = weeks.set_index(["lineage", "period"])
    expected = table["runs"].sub(hit.reindex(table.index, fill_value=0) - 1, fill_value=0)
    expected = expected.where(hit.reindex(table.index).notna(), table["runs"])
    assert table["runs_once"].tolist() == expected.astype(int).tolist()
    assert (table["runs_once"] < table["runs"]).sum() >= 1
    assert table["success_rate_once"].to_numpy() == pytest.approx(
        (table["pass"] / table["runs_once"]).to_numpy(), nan_ok=True
    )
