"""What the Overview's silence reads ask of the runs, and the statements migration 0012's index
(repo, created_at) took from the covering scope index: SILENT's newest runs of each workflow
come from the workflow indexes (migration 0013 adds (workflow_id, event, created_at)), the
history's two ends from the two ends of an index, the Runners page's environments from the
failures, the coverage's job segments from the scope index (plans explained with the
parameters each statement ran with, on an empty database, as in tests/test_runs_in_time.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pandas as pd
from sqlalchemy import Engine, event, insert, select

from store.engine import make_engine
from store.job_counts import failed_job_environments
from store.migration_counts import job_segments
from store.models import Workflow, WorkflowRun
from store.page_queries import run_span
from store.runfilter import RunFilter
from store.triggers import workflow_watch
from tests.support.plans import SCOPE, assert_starts_from, index_round_trip, query_plan

INDEX = "ix_workflow_runs_workflow_id_event_created_at"
DAY = datetime(2026, 1, 1, tzinfo=UTC)


def _store(engine: Engine, repo: str, workflows: list[tuple[int, str, datetime]], runs: list):
    """Workflow records (id, path, updated_at) and runs (id, workflow id, event, created_at),
    each run with its workflow's path, as the collector stores them."""
    paths = {wf_id: path for wf_id, path, _ in workflows}
    with engine.begin() as conn:
        conn.execute(
            insert(Workflow),
            [
                {"id": i, "repo": repo, "path": p, "name": p, "state": "active", "updated_at": at}
                for i, p, at in workflows
            ],
        )
        conn.execute(
            insert(WorkflowRun),
            [
                {
                    "id": run_id,
                    "repo": repo,
                    "workflow_id": wf_id,
                    "workflow_path": paths[wf_id],
                    "event": kind,
                    "head_sha": "0" * 40,
                    "run_number": run_id,
                    "run_attempt": 1,
                    "created_at": at,
                }
                for run_id, wf_id, kind, at in runs
            ],
        )


def test_a_re_added_path_s_newest_runs_are_those_of_all_its_records(engine):
    day = DAY
    _store(
        engine,
        "o/r",
        [(1, "a.yml", day), (2, "a.yml", day + timedelta(days=60)), (3, "b.yml", day)],
        [
            (11, 1, "push", day + timedelta(days=4)),
            (12, 1, "schedule", day + timedelta(days=5)),
            (21, 2, "push", day + timedelta(days=63)),
            (31, 3, "push", day + timedelta(days=31)),
        ],
    )
    watch = workflow_watch(engine, "o/r", ["a.yml", "b.yml", "c.yml"])
    assert list(watch["workflow_path"]) == ["a.yml", "b.yml"]
    assert list(watch["updated_at"]) == [pd.Timestamp(day + timedelta(days=60)), pd.Timestamp(day)]
    assert list(watch["last_run_at"]) == [
        pd.Timestamp(day + timedelta(days=63)),
        pd.Timestamp(day + timedelta(days=31)),
    ]
    assert watch["last_schedule_at"].iloc[0] == pd.Timestamp(day + timedelta(days=5))
    assert pd.isna(watch["last_schedule_at"].iloc[1])


def test_a_collected_run_s_path_and_repository_are_its_workflow_s(thin_db):
    """What workflow_watch keys on: the collector stores each run with the path of the
    workflow it was listed under."""
    engine = make_engine(thin_db("first night"))
    run = WorkflowRun
    with engine.connect() as conn:
        runs = conn.scalar(select(run.id).limit(1))
        odd = conn.execute(
            select(run.id)
            .join(Workflow, Workflow.id == run.workflow_id)
            .where((Workflow.path != run.workflow_path) | (Workflow.repo != run.repo))
        ).all()
    engine.dispose()
    assert runs is not None and odd == []


def test_silence_reads_each_workflow_s_newest_runs_from_its_indexes(sqlite_engine):
    plan = query_plan(sqlite_engine, lambda: workflow_watch(sqlite_engine, "o/r", ["a.yml"]))
    assert f"SEARCH workflow_runs USING COVERING INDEX {INDEX} (workflow_id=? AND event=?)" in plan
    newest = "SEARCH workflow_runs USING COVERING INDEX ix_workflow_runs_workflow_id_created_at"
    assert f"{newest} (workflow_id=?)" in plan
    assert "(repo=?)" not in plan.replace("workflows USING INDEX ix_workflows_repo (repo=?)", "")


def test_the_history_s_two_ends_are_read_without_walking_its_runs(sqlite_engine):
    runs = 400
    _store(
        sqlite_engine,
        "o/steps",
        [(900, "steps.yml", DAY)],
        [(9000 + i, 900, "push", DAY + timedelta(hours=i)) for i in range(runs)],
    )
    steps = [0]

    def count() -> int:
        steps[0] += 1
        return 0

    def watch(conn: object, cursor: object, *_: object) -> None:
        conn.connection.driver_connection.set_progress_handler(count, 1)  # type: ignore[attr-defined]

    event.listen(sqlite_engine, "before_cursor_execute", watch)
    try:
        oldest, newest = run_span(sqlite_engine, "o/steps")
    finally:
        event.remove(sqlite_engine, "before_cursor_execute", watch)
    assert (oldest, newest) == (DAY, DAY + timedelta(hours=runs - 1))
    assert steps[0] < runs  # a few steps per end, not a few per run


def test_the_environments_start_from_the_failures(sqlite_engine):
    plan = query_plan(sqlite_engine, lambda: failed_job_environments(sqlite_engine, SCOPE))
    assert_starts_from(plan, "failures")
    assert "TEMP B-TREE" not in plan  # in failure order as they are read


def test_the_coverage_s_job_segments_read_the_scope_index(sqlite_engine):
    cuts = [DAY, DAY + timedelta(days=10), DAY + timedelta(days=20)]
    every = RunFilter("o/r", events=("push", "schedule"), branch="main")
    plan = query_plan(sqlite_engine, lambda: job_segments(sqlite_engine, every, cuts))
    scope = "workflow_runs USING COVERING INDEX ix_workflow_runs_scope_reads (head_branch=? AND"
    assert scope in plan


def test_migration_0013_adds_the_index_and_takes_it_back(db_url):
    columns = ["workflow_id", "event", "created_at"]
    index_round_trip(db_url, INDEX, columns, "0012", "ix_workflow_runs_repo_created_at")
