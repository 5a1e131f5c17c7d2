"""The Overview's run counts (reports.overview_tables.run_counts): one statement of every date,
shared by the timeline and the changepoints and by every date range of whole days; a bound
inside a day is still cut at its moment. On the demo's database, read only."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd
import pytest
from sqlalchemy import event

from analytics import recent
from analytics.frames import logical_run_frame
from reports import overview_tables, table_inputs
from reports.query import Query
from reports.tables import build
from store.engine import make_engine
from store.page_queries import run_span
from store.settings import load_config


@pytest.fixture
def demo(demo_db: str, monkeypatch: pytest.MonkeyPatch) -> tuple[object, object, Query, list[int]]:
    """The demo's engine and project, the query of its last 60 whole days, and a list that
    grows by one at each run-counts statement (the memo of counts emptied first)."""
    engine = make_engine(demo_db, read_only=True)
    project = load_config(env={}, db_url=demo_db).project()
    _, newest = run_span(engine, project.repo)
    assert newest is not None
    until = datetime.combine(newest.date() + timedelta(days=1), datetime.min.time(), UTC)
    monkeypatch.setattr(table_inputs, "_COUNTS", {})
    calls: list[int] = []
    statement = overview_tables.counts_sql.run_counts

    def counted(*args: Any) -> pd.DataFrame:
        calls.append(1)
        return statement(*args)

    monkeypatch.setattr(overview_tables.counts_sql, "run_counts", counted)
    return engine, project, Query(until - timedelta(days=60), until), calls


def test_the_timeline_changepoints_and_other_whole_day_ranges_share_one_statement(demo) -> None:
    engine, project, query, calls = demo
    build(engine, project, "stability", query)
    build(engine, project, "changepoints", query)
    shorter = replace(query, since=query.since + timedelta(days=30))
    shared = build(engine, project, "stability", shorter)
    assert len(calls) == 1
    table_inputs._COUNTS.clear()
    alone = build(engine, project, "stability", shorter)  # read for this range only
    assert len(calls) == 2
    pd.testing.assert_frame_equal(shared, alone)
    assert shared["period"].min() >= pd.Timestamp(shorter.since) - pd.Timedelta(days=6)


def test_a_bound_inside_a_day_counts_the_runs_from_its_moment(demo) -> None:
    engine, project, query, calls = demo
    noon = replace(query, since=query.since + timedelta(days=20, hours=12))
    timeline = build(engine, project, "stability", replace(noon, period="D"))
    runs = build(engine, project, "runs", noon)
    runs = runs[runs["lineage"].notna()]
    assert runs["created_at"].min() >= noon.since
    per_day = timeline[timeline["period"] == pd.Timestamp(noon.since).floor("D")]
    first_day = runs[runs["created_at"].dt.floor("D") == pd.Timestamp(noon.since).floor("D")]
    assert len(first_day) and (per_day["runs"] + per_day["excluded"]).sum() == len(first_day)
    assert (timeline["runs"] + timeline["excluded"]).sum() == len(runs)
    build(engine, project, "stability", query)  # the whole days: another statement
    assert len(calls) == 2


def test_a_new_date_range_or_scope_reads_the_silent_workflows_no_more(
    demo, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, project, query, _ = demo
    reads: list[int] = []
    silent = table_inputs.silent_workflows

    def counted(*args: Any) -> pd.DataFrame:
        reads.append(1)
        return silent(*args)

    monkeypatch.setattr(table_inputs, "silent_workflows", counted)
    build(engine, project, "status", query)
    shorter = replace(query, since=query.since + timedelta(days=30), scope="all")
    shared = build(engine, project, "status", shorter)
    assert len(reads) == 1
    table_inputs._COUNTS.clear()
    pd.testing.assert_frame_equal(shared, build(engine, project, "status", shorter))
    assert len(reads) == 2


def test_the_status_reads_each_workflows_newest_web_address_alone(
    demo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tiles read their runs' few columns from the derived tables, and the web address of
    each workflow's newest run alone: the same tiles as from the whole logical runs."""
    engine, project, query, _ = demo
    asked: list[list[int]] = []
    urls = overview_tables.counts_sql.run_urls

    def counted(bind: Any, run_ids: list[int]) -> dict[int, str | None]:
        asked.append(list(run_ids))
        return urls(bind, run_ids)

    monkeypatch.setattr(overview_tables.counts_sql, "run_urls", counted)
    status = build(engine, project, "status", query)
    runs = overview_tables.logical_run_frame(engine, project, query.where(project), lean=True)
    assert len(asked) == 1 and len(asked[0]) == runs["workflow_path"].nunique()
    monkeypatch.setattr(overview_tables, "_tile_runs", lambda *_: runs)
    whole = build(engine, project, "status", query)
    pd.testing.assert_frame_equal(status, whole)
    newest = runs.sort_values(["created_at", "run_id"]).groupby("lineage")["html_url"].last()
    lineages = status[status["level"] == "lineage"].set_index("name")["last_run_url"]
    assert lineages.notna().all() and lineages.to_dict() == newest.reindex(lineages.index).to_dict()


def test_the_overview_reads_jobs_in_one_statement_of_every_date(demo) -> None:
    """The page's tables read the jobs once (the changepoints' job presence, per workflow, day
    and job name: from its rollup, the range being whole days) and its runs in one statement of
    counts; another date range reads neither."""
    engine, project, query, calls = demo
    statements: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        statements.append(statement)

    event.listen(engine, "before_cursor_execute", seen)
    page = ("status", "stability", "incident-lineages", "changepoints")
    for name in page:
        build(engine, project, name, query)
    shorter = replace(query, since=query.since + timedelta(days=30))
    for name in page:
        build(engine, project, name, shorter)
    event.remove(engine, "before_cursor_execute", seen)
    jobs = [
        s
        for s in statements
        if re.search(r"\b(FROM|JOIN) (logical_jobs|jobs|rollup_jobs|rollup_job_names)\b", s)
    ]
    assert len(jobs) == 1 and "GROUP BY" in jobs[0] and len(calls) == 1


def test_a_tile_links_each_workflow_s_newest_run_by_time_then_id(monkeypatch) -> None:
    """The one web address a tile reads per workflow is its newest run's: the latest time, of
    two at that time the larger id; a workflow with no time has none. Found over the paths'
    codes, without a pandas grouping (#49: two groupbys cost 4 ms of the status tiles)."""
    moments = ["2026-05-02", "2026-05-03", "2026-05-03", "2026-05-01", "2026-05-02", None]
    paths = pd.Series(["b.yml", "a.yml", "a.yml", "b.yml", "a.yml", "c.yml"], dtype="category")
    created = pd.Series(pd.to_datetime(moments, utc=True))
    run_ids = pd.Series([5, 3, 4, 9, 8, 7])
    monkeypatch.setattr(pd.Series, "groupby", None)
    assert sorted(overview_tables._newest_runs(paths, created, run_ids)) == [4, 5]


def test_the_tiles_read_outcomes_in_their_windows_and_give_what_all_outcomes_give(demo) -> None:
    """The status tiles read a run's outcome only in their two windows (and a day more), and the
    two latest counted runs of the workflows whose status may hang on an older one: the rest of
    the range is read without its outcome, and the tiles are those of every outcome read."""
    engine, project, _, _ = demo
    query = Query()  # the whole history: workflows retired long before its end
    where = query.where(project)
    _, newest = run_span(engine, project.repo)
    reference = pd.Timestamp(newest)
    runs = overview_tables._tile_runs(engine, project, where, reference)
    every = logical_run_frame(engine, project, where, lean=True)
    assert sorted(runs["run_id"]) == sorted(every["run_id"])
    truth = dict(zip(every["run_id"], every["logical_outcome"], strict=True))
    known = runs.dropna(subset=["logical_outcome"])
    assert [truth[run] for run in known["run_id"]] == known["logical_outcome"].tolist()
    cut = reference - pd.Timedelta(days=2 * project.analysis.recent_days + 1)
    assert runs.loc[runs["created_at"] <= cut, "logical_outcome"].isna().mean() > 0.9
    counts = overview_tables.run_counts(engine, project, query)
    analysis = project.analysis

    def tiles(frame: pd.DataFrame) -> pd.DataFrame:
        events = table_inputs.events_of(engine, project)
        return recent.tile_tables(
            frame, reference, events, analysis, recent_days=analysis.recent_days, counts=counts
        )

    read_all = runs.assign(logical_outcome=runs["run_id"].map(truth).astype("str"))
    pd.testing.assert_frame_equal(tiles(runs), tiles(read_all))
