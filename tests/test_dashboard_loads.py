"""The dashboard's lean loads (scope in SQL, attempts of reruns only, failure categories only)
give the same logical runs and jobs as the full loads the export and summary use."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest
from sqlalchemy.orm import Session

from analytics.before_after import KNOWN_COLUMNS, basis_mix
from analytics.config_tables import event_table
from analytics.frames import logical_job_frame, logical_run_frame
from analytics.outcomes import in_scope, scope_terms
from dashboard.filters import Filters
from dashboard.loaders import shared
from reports.query import Query
from store.engine import make_engine
from store.events import add_event, all_events
from store.frame_queries import load_runs
from store.migrate import upgrade
from store.models import Job, RunAttempt, Workflow, WorkflowRun
from store.runfilter import RunFilter
from store.settings import load_config
from store.upsert import upsert
from tests.support.collected import collected_copy
from tests.support.settings import analysis

REPO = "verl-project/verl"
RUN_KEYS = [
    "run_id",
    "logical_outcome",
    "first_attempt_conclusion",
    "failure_category",
    "failure_basis",
]
JOB_KEYS = ["run_id", "logical_job", "logical_outcome", "red_attempts", "red_job_id", "category"]


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> str:
    return collected_copy(tmp_path_factory.mktemp("loads"))


@pytest.fixture
def reference(db, monkeypatch):
    """(logical runs, logical jobs) of every run, loaded in full (analytics.frames)."""
    monkeypatch.setenv("CIFLAKE_DB_URL", db)
    engine, config = make_engine(db, read_only=True), load_config()
    runs = logical_run_frame(engine, config.project(), RunFilter(repo=REPO))
    jobs = logical_job_frame(engine, config.project(), RunFilter(repo=REPO), runs)
    yield runs, jobs, config
    engine.dispose()


def _rows(frame: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    return frame[keys].astype(object).sort_values(keys[:2]).reset_index(drop=True)


@pytest.mark.parametrize("scope", ["default", "pr", "all"])
def test_sql_scope_selects_the_runs_in_scope(db, scope):
    engine = make_engine(db, read_only=True)
    every = load_runs(engine, RunFilter(repo=REPO))
    events, branch = scope_terms(scope, "main")
    scoped = load_runs(engine, RunFilter(repo=REPO, events=events, branch=branch))
    expected = every[in_scope(every, scope, "main")]
    assert len(scoped) > 0 and (scope == "all") == (len(scoped) == len(every))
    assert sorted(scoped["run_id"]) == sorted(expected["run_id"])
    engine.dispose()


@pytest.mark.parametrize("scope", ["default", "pr", "all"])
def test_lean_frames_equal_the_full_loads(db, reference, scope):
    """The lean loads the Overview's tables read (scope in SQL, attempts of reruns only,
    failure categories only) give the full loads' logical runs and jobs of the scope."""
    runs, jobs, config = reference
    project = config.project()
    where = Query(None, None, (), scope).where(project)
    engine = make_engine(db, read_only=True)
    lean_runs = logical_run_frame(engine, project, where, lean=True)
    expected_runs = runs[in_scope(runs, scope, project.default_branch)]
    assert (lean_runs["logical_outcome"] == "flaky").any()
    pd.testing.assert_frame_equal(_rows(lean_runs, RUN_KEYS), _rows(expected_runs, RUN_KEYS))
    lean_jobs = logical_job_frame(engine, project, where, lean_runs, lean=True)
    expected_jobs = jobs[in_scope(jobs, scope, project.default_branch)]
    assert lean_jobs["category"].notna().any()
    pd.testing.assert_frame_equal(_rows(lean_jobs, JOB_KEYS), _rows(expected_jobs, JOB_KEYS))
    engine.dispose()


def test_one_workflows_job_days_are_the_scopes_jobs_of_that_workflow(db, reference, monkeypatch):
    """The Overview's job x day grid (the ``job-days`` table of one workflow): every workflow
    gets the logical jobs and counted runs of the scope's full job frame."""
    monkeypatch.setenv("CIFLAKE_DB_URL", db)
    _, jobs, config = reference
    filters = Filters(REPO, *shared.day_span(db, REPO), (), "default")
    scope = jobs[in_scope(jobs, "default", config.project().default_branch)]
    counted = scope[scope["logical_outcome"] != "excluded"]
    paths = counted["workflow_path"].unique()
    assert len(paths) > 5
    for path in paths:
        grid = shared.table(db, filters, "job-days", paths=(path,))
        expected = counted[counted["workflow_path"] == path]
        assert set(grid["logical_job"]) == set(expected["logical_job"]), path
        assert grid["runs"].sum() == len(expected) > 0, path


def test_migrations_basis_lines_equal_those_of_the_full_loads(db, reference):
    """The Migrations page's evidence lines come from the same red runs as the full loads."""
    runs, _, config = reference
    filters = Filters(REPO, *shared.day_span(db, REPO), (), "default")
    shown = shared.table(db, filters, "basis-mix", since=None, until=None)
    expected = basis_mix(
        runs,
        event_table(all_events(config.project(), make_engine(db, read_only=True))),
        analysis(window_days=config.project().analysis.window_days),
        default_branch=config.project().default_branch,
        lineages=sorted({w.lineage for w in config.project().workflows}),
        per_lineage=False,
    )
    assert shown["before_red"].sum() > 0 and shown["before_basis"].str.contains("n=").any()
    pd.testing.assert_frame_equal(shown, expected)


def test_export_page_before_after_says_how_much_is_known(db, reference):
    """The Export page's before-after CSV carries the same known/basis columns as
    `ciflake export before-after`, one per (event, lineage) row of the table."""
    runs, _, config = reference
    filters = Filters(REPO, *shared.day_span(db, REPO), (), "default")
    table = shared.table(db, filters, "before-after", since=None, until=None)
    assert set(KNOWN_COLUMNS) <= set(table.columns)
    red = table["before_flaky"] + table["before_fail"]
    with_red = table[red > 0]
    assert len(with_red) and with_red["before_known"].between(0, 1).all()
    pairs = zip(red[red > 0], with_red["before_basis"], strict=True)
    assert all(f"n={n} failure" in text for n, text in pairs)


def test_changepoints_come_with_the_nearest_event(tmp_path, monkeypatch):
    """A lineage whose red rate steps from 1 in 12 to 7 in 12 runs a day on 2024-01-31, when a
    second job joins its runs, and an image change recorded the day after: the overview finds
    the step, says what changed in the job set that day and names the nearest event."""
    url = f"sqlite:///{tmp_path / 'step.db'}"
    monkeypatch.setenv("CIFLAKE_DB_URL", url)
    engine = make_engine(url)
    upgrade(engine)
    path = ".github/workflows/e2e_ascend.yml"
    start = datetime(2024, 1, 1, 8, tzinfo=UTC)
    runs = [
        {
            "id": day * 100 + i,
            "repo": REPO,
            "workflow_id": 1,
            "workflow_path": path,
            "event": "push",
            "head_branch": "main",
            "head_sha": f"{day * 100 + i:040x}",
            "run_number": day * 100 + i,
            "run_attempt": 1,
            "status": "completed",
            "conclusion": "failure" if i < (1 if day < 30 else 7) else "success",
            "created_at": start + timedelta(days=day, minutes=i),
        }
        for day in range(60)
        for i in range(12)
    ]
    with Session(engine) as session, session.begin():
        upsert(
            session,
            Workflow,
            [{"id": 1, "repo": REPO, "path": path, "name": "ascend", "state": "active"}],
        )
        upsert(session, WorkflowRun, runs)
        upsert(session, RunAttempt, [{"run_id": run["id"], "attempt": 1} for run in runs])
        jobs = [
            {
                "id": run["id"] * 10 + k,
                "run_id": run["id"],
                "run_attempt": 1,
                "name": name,
                "conclusion": run["conclusion"] if k == 0 else "success",
                "labels": [],
                "steps": [],
            }
            for run in runs
            for k, name in enumerate(["npu", "npu-vlm"][: 1 + (run["id"] >= 3000)])
        ]
        upsert(session, Job, jobs)
    add_event(engine, REPO, start + timedelta(days=31), "new NPU image", None, "image")
    filters = Filters(REPO, *shared.day_span(url, REPO), (), "default")
    found = shared.table(url, filters, "changepoints")
    assert list(found["lineage"]) == ["e2e_ascend"]
    step = found.iloc[0]
    assert step["date"] == pd.Timestamp("2024-01-31", tz="UTC")
    assert step["date_low"] <= step["date"] <= step["date_high"]
    assert step["before_rate"] == pytest.approx(1 / 12) and step["after_rate"] == pytest.approx(
        7 / 12
    )
    assert step["known_change"] == f"{path}: +npu-vlm"
    assert step["event_title"] == "new NPU image"
    assert step["distance_days"] == pytest.approx(-(1 + 8 / 24))
    engine.dispose()


@pytest.mark.parametrize(("setting", "backend"), [(None, "system"), ("mimalloc", "mimalloc")])
def test_the_dashboard_takes_arrow_memory_from_the_c_heap_unless_told(setting, backend):
    """dashboard.loaders switches pyarrow's allocator (why: its docstring), in a fresh
    interpreter as the dashboard's own process starts; ARROW_DEFAULT_MEMORY_POOL still wins."""
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    if setting is not None:
        env["ARROW_DEFAULT_MEMORY_POOL"] = setting
    code = "import dashboard.loaders, pyarrow; print(pyarrow.default_memory_pool().backend_name)"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == [backend]


@pytest.mark.parametrize(("setting", "passed"), [(None, "system"), ("mimalloc", "mimalloc")])
def test_the_launcher_passes_the_arrow_pool_to_streamlit(monkeypatch, setting, passed):
    """``ciflake dashboard`` starts Streamlit with ARROW_DEFAULT_MEMORY_POOL=system, so Arrow's
    C++ side takes the C heap too, unless the user's environment names a pool."""
    from dashboard import launch

    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    if setting is not None:
        monkeypatch.setenv("ARROW_DEFAULT_MEMORY_POOL", setting)
    started: dict = {}
    monkeypatch.setattr(launch.subprocess, "Popen", lambda command, env: started.update(env))
    launch.start_dashboard(db_url="sqlite:///x.db", host="127.0.0.1", port=0)
    assert started["ARROW_DEFAULT_MEMORY_POOL"] == passed


def test_the_launcher_serves_without_watching_the_source(monkeypatch):
    """``ciflake dashboard`` starts Streamlit with no file watcher: each new tab's session
    would otherwise register the app's modules with it before its page shows (#49)."""
    from dashboard import launch

    started: list = []
    monkeypatch.setattr(launch.subprocess, "Popen", lambda command, env: started.extend(command))
    launch.start_dashboard(db_url="sqlite:///x.db", host="127.0.0.1", port=0)
    at = started.index("--server.fileWatcherType")
    assert started[at + 1] == "none"


@pytest.mark.sqlite_only
def test_each_caller_gets_its_own_copy_of_a_table(thin_db, monkeypatch):
    """A table is cached as data: a page that changes its copy changes no other's."""
    url = thin_db("one run")
    monkeypatch.setenv("CIFLAKE_DB_URL", url)
    filters = Filters(REPO, *shared.day_span(url, REPO), (), "default")
    mine = shared.table(url, filters, "runs")
    mine["changed"] = True
    assert len(mine) == 1 and "changed" not in shared.table(url, filters, "runs").columns
