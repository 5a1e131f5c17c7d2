"""The logical-job tables' statements by hand: time to repair from where the runs turn red or
green (store.job_counts.red_turns, one window statement; analytics.health.streaks_of_turns pairs
the turns) against repair_times walking every run; the verdicts of one logical job
(Query.logical_job) as the rows of every verdict that are its."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd
import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from analytics.elsewhere import NO_RUNNER_NAME, with_runner_pool
from analytics.health import repair_times, streak_health, streaks_of_turns
from analytics.job_counts import counts_of, runner_parts
from reports import job_tables, tables
from reports.query import Query
from reports.table_inputs import forget_counts, logical_jobs_of
from store import job_counts as job_counts_module
from store.engine import make_engine
from store.frame_queries import load_jobs
from store.incidents import load_members
from store.job_counts import job_counts, red_turns, runner_counts
from store.models import LogicalRun, Workflow, WorkflowRun
from store.runfilter import RunFilter
from store.settings import ConfigError, load_config
from store.vocabulary import HOSTED_RUNNER_PREFIX, HOSTED_RUNNERS, short_lived_runners
from tests.support.plans import SCOPE, query_plan

START = datetime(2026, 6, 1, 10, tzinfo=UTC)
KEYS = ["workflow_path", "head_branch"]
# (run id, branch, hours after START, logical outcome): run 3 and run 4 start at one moment
# (the tie goes by run id); the excluded run 5 sits inside a streak without breaking it.
RUNS = [
    (1, "main", 0, "pass"),
    (2, "main", 1, "fail"),
    (4, "main", 2, "fail"),
    (3, "main", 2, "fail"),
    (5, "main", 3, "excluded"),
    (6, "main", 4, "flaky"),
    (7, "main", 5, "fail"),  # still red
    (8, None, 0, "fail"),
    (9, None, 6, "pass"),
]


def _runs() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "run_id": [r[0] for r in RUNS],
            "workflow_path": ".github/workflows/w.yml",
            "head_branch": [r[1] for r in RUNS],
            "created_at": pd.to_datetime([START + timedelta(hours=r[2]) for r in RUNS]),
            "logical_outcome": [r[3] for r in RUNS],
        }
    )


def test_the_turns_give_the_streaks_that_walking_every_run_gives(engine) -> None:
    with Session(engine) as session:
        session.add(
            Workflow(id=1, repo="o/r", path=".github/workflows/w.yml", name="w", state="active")
        )
        session.flush()
        for run_id, branch, hours, outcome in RUNS:
            session.add(
                WorkflowRun(
                    id=run_id,
                    repo="o/r",
                    workflow_id=1,
                    workflow_path=".github/workflows/w.yml",
                    event="push",
                    head_branch=branch,
                    head_sha=f"s{run_id}",
                    run_number=run_id,
                    run_attempt=1,
                    created_at=START + timedelta(hours=hours),
                )
            )
            session.flush()
            session.add(LogicalRun(run_id=run_id, red_attempts=0, logical_outcome=outcome))
        session.commit()
    turns = red_turns(engine, RunFilter(repo="o/r"))
    assert sorted(zip(turns["run_id"], turns["red"], strict=True)) == [
        (2, 1),
        (6, 0),
        (7, 1),
        (8, 1),
        (9, 0),
    ]
    streaks = streaks_of_turns(turns, KEYS)
    walked = repair_times(_runs(), KEYS)
    columns = [*KEYS, "red_run_id", "red_at", "green_at", "hours"]
    pd.testing.assert_frame_equal(
        streaks[columns], walked[columns], check_dtype=False, check_index_type=False
    )
    assert streaks["hours"].tolist()[:1] == [3.0] and streaks["green_at"].isna().tolist() == [
        False,
        True,
        False,
    ]


def _turns(runs: pd.DataFrame) -> pd.DataFrame:
    """What store.job_counts.red_turns returns for ``runs``, walked by hand: per workflow and
    branch in time order (ties by run id), without excluded runs, each run whose hard red
    differs from the run before it (none before: not red)."""
    kept = runs[runs["logical_outcome"] != "excluded"].assign(
        red=lambda f: (f["logical_outcome"] == "fail").astype(int)
    )
    turns = []
    for _, sequence in kept.groupby(KEYS, dropna=False):
        previous = 0
        for row in sequence.sort_values(["created_at", "run_id"]).itertuples(index=False):
            if row.red != previous:
                turns.append(row)
            previous = row.red
    return pd.DataFrame(turns)[[*KEYS, "run_id", "created_at", "red"]]


def test_the_repair_table_pairs_the_turns_without_sorting_a_frame(monkeypatch) -> None:
    """streaks_of_turns orders the turns on numpy positions (analytics.sequences) and
    streak_health keeps mttr's key order: neither sorts a frame, a sort on the text keys
    that cost the Flaky jobs page's repair table more than the rest of its pandas (#49).
    Turns in no order, of two workflows and a missing branch, give repair_times' streaks."""
    other = _runs().assign(workflow_path=".github/workflows/a.yml", run_id=_runs()["run_id"] + 9)
    runs = pd.concat([_runs(), other], ignore_index=True)
    turns = _turns(runs).sample(frac=1, random_state=3).reset_index(drop=True)
    walked = repair_times(runs, KEYS)

    def refused(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a pandas sort on the repair table's path")

    for owner in (pd.DataFrame, pd.Series):
        monkeypatch.setattr(owner, "sort_values", refused)
    streaks = streaks_of_turns(turns, KEYS)
    columns = [*KEYS, "red_run_id", "red_at", "green_at", "hours"]
    pd.testing.assert_frame_equal(streaks[columns], walked[columns], check_dtype=False)
    table = streak_health(streaks, None, ["workflow_path"])
    assert table["workflow_path"].tolist() == [".github/workflows/a.yml", ".github/workflows/w.yml"]
    assert table[["repaired", "open"]].to_numpy().tolist() == [[2, 1], [2, 1]]
    assert table["mttr_hours"].tolist() == [4.5, 4.5]


def test_the_verdicts_of_one_job_are_its_rows_of_every_verdict(thin_db, monkeypatch) -> None:
    """Every job's verdicts are its rows of every verdict, though each reads the runs of the
    workflows it ran in alone (the counts the flaky-jobs table shares say which)."""
    url = thin_db("first night")
    engine = make_engine(url, read_only=True)
    project = load_config(env={}, db_url=url).project()
    every = tables.build(engine, project, "verdicts", Query())
    ran_in = job_counts(engine, Query().where(project), ["workflow_path", "logical_job"])
    read: list[RunFilter] = []
    real = job_tables.failed_jobs

    def failed_jobs(bind: Engine, where: RunFilter, logical_job: str | None) -> pd.DataFrame:
        read.append(where)
        return real(bind, where, logical_job)

    monkeypatch.setattr(job_tables, "failed_jobs", failed_jobs)
    for job in every["logical_job"].unique():
        mine = tables.build(engine, project, "verdicts", Query(logical_job=job))
        expected = every[every["logical_job"] == job].reset_index(drop=True)
        pd.testing.assert_frame_equal(mine, expected)
        assert len(mine) and len(mine) < len(every)
        assert read[-1].paths == tuple(sorted(ran_in[ran_in["logical_job"] == job].workflow_path))
    with pytest.raises(ConfigError, match="'runners' has no logical_job column"):
        tables.build(engine, project, "runners", Query(logical_job=job))
    engine.dispose()


def test_the_runners_table_pools_the_hosted_vms_into_one_row(thin_db):
    url = thin_db("first night")
    engine = make_engine(url, read_only=True)
    project = load_config(env={}, db_url=url).project()
    query = Query(scope="all")
    # GitHub's hosted VMs, runner group "GitHub Actions", are the runners named by the prefix
    jobs = load_jobs(engine, query.where(project))
    hosted = jobs["runner_group_name"] == "GitHub Actions"
    named = jobs["runner_name"].astype(object).str.startswith(HOSTED_RUNNER_PREFIX, na=False)
    assert hosted.sum() > 1 and (named == hosted).all()
    logical = logical_jobs_of(engine, project, query)
    ran = logical[logical["runner_name"].notna()]
    on_vm = ran["runner_name"].astype(object).str.startswith(HOSTED_RUNNER_PREFIX)
    assert ran.loc[on_vm, "runner_name"].nunique() > 1  # several VMs, one row
    runners = tables.build(engine, project, "runners", query).set_index("runner_name")
    assert not runners.index.str.startswith(HOSTED_RUNNER_PREFIX).any()
    assert runners.at[HOSTED_RUNNERS, "runners"] == ran.loc[on_vm, "runner_name"].nunique()
    counted = ran[on_vm & (ran["logical_outcome"] != "excluded")]
    assert runners.at[HOSTED_RUNNERS, "runs"] == len(counted)
    assert runners.at[HOSTED_RUNNERS, "fail"] == (counted["logical_outcome"] == "fail").sum()
    engine.dispose()


STUCK_RUNNER = "linux-aarch64-a3-8-stuck-runner-07"  # fakehub's host incident


def test_the_runners_table_rates_the_hosts_one_can_rate_and_pools_the_others(demo_db) -> None:
    """A row per host with min_runs counted jobs or a runner incident, one per pool for the
    short-lived others (one container per job), (GitHub-hosted) and (none): not thousands of
    rows of one job each; every counted job and host is in one row."""
    engine = make_engine(demo_db, read_only=True)
    project = load_config(env={}, db_url=demo_db).project()
    runners = tables.build(engine, project, "runners", Query())
    pools = tables.build(engine, project, "runner-pools", Query())["runner_pool"]
    jobs = with_runner_pool(logical_jobs_of(engine, project, Query()))
    counted = jobs[jobs["logical_outcome"] != "excluded"]
    per_host = counted.groupby("runner_name").size()
    hosted = per_host.index.str.startswith(HOSTED_RUNNER_PREFIX)
    rated = set(per_host[~hosted & (per_host >= project.analysis.min_runs)].index) - {
        NO_RUNNER_NAME
    }
    assert len(rated) < len(per_host) / 100  # most hosts ran too few jobs to rate
    pooled = {short_lived_runners(pool) for pool in pools}
    names = set(runners["runner_name"])
    assert STUCK_RUNNER in names  # (with fewer jobs, its incident keeps it: test_job_counts)
    assert names - rated - {STUCK_RUNNER} <= pooled | {HOSTED_RUNNERS, NO_RUNNER_NAME}
    assert len(runners) == len(names) <= len(rated) + len(pools) + 3
    rows = runners.set_index("runner_name")
    assert (rows.loc[[*rated, STUCK_RUNNER], "runners"] == 1).all()
    assert rows.at[STUCK_RUNNER, "incidents"] >= 1
    assert rows["runs"].sum() == len(counted)
    assert rows["runners"].sum() == jobs["runner_name"].nunique() - 1  # (none) is no host
    engine.dispose()


def test_the_runners_page_reads_its_counts_aggregated_in_one_statement(demo_db, monkeypatch):
    """The runner-pools, runners and environments tables share one GROUP BY that returns
    their aggregates, not a row per host (most hosts run one job), #49."""
    engine = make_engine(demo_db, read_only=True)
    project = load_config(env={}, db_url=demo_db).project()
    fetched: list[tuple[str, int]] = []
    read = job_counts_module.raw_frame

    def counted(bind: Engine, stmt: Any, *times: Any) -> pd.DataFrame:
        frame = read(bind, stmt, *times)
        fetched.append((str(stmt), len(frame)))
        return frame

    monkeypatch.setattr(job_counts_module, "raw_frame", counted)
    forget_counts()
    for name in ("runner-pools", "runners", "environments"):
        tables.build(engine, project, name, Query())
    grouped = [rows for statement, rows in fetched if "GROUP BY" in statement]
    hosts = logical_jobs_of(engine, project, Query())["runner_name"].nunique()
    assert len(grouped) == 1 and grouped[0] < hosts / 10
    engine.dispose()


def test_the_runner_counts_group_the_scope_s_jobs_before_the_other_groupings(sqlite_engine):
    """runner_counts groups the logical jobs of the scope by job_counts' keys as it reads them,
    before its other groupings read them again: read a row each, the 16x benchmark's jobs
    (16 a group) made the statement twice as slow on SQLite, three times on PostgreSQL (#49).
    Whole days read the rollup of jobs, a time inside a day the logical jobs (store.rollups)."""
    noon = replace(SCOPE, since=SCOPE.since + timedelta(hours=12))
    for where, table in ((SCOPE, "rollup_jobs"), (noon, "logical_jobs")):
        plan = query_plan(
            sqlite_engine, lambda where=where: runner_counts(sqlite_engine, where, 2, [])
        )
        steps = plan.splitlines()
        [read] = [
            i
            for i, step in enumerate(steps)
            if f"SCAN {table}" in step or f"SEARCH {table}" in step
        ]
        placed = steps[read + 1 : steps.index("MATERIALIZE greens")]
        assert "USE TEMP B-TREE FOR GROUP BY" in placed, plan


def test_the_runner_counts_are_the_parts_the_raw_rows_give(thin_db) -> None:
    """store.job_counts.runner_counts (SQL, SQLite and PostgreSQL) and analytics.job_counts
    .runner_parts (pandas, the raw path) agree row for row, with a host kept by its runs, one
    by an incident, the hosted VMs and pooled hosts."""
    url = thin_db("first night")
    engine = make_engine(url, read_only=True)
    project = load_config(env={}, db_url=url).project()
    where = Query(scope="all").where(project)
    jobs = logical_jobs_of(engine, project, Query(scope="all"))
    ran = jobs["runner_name"].dropna()
    named = ran[~ran.str.startswith(HOSTED_RUNNER_PREFIX)].iloc[:1]
    counts = counts_of(jobs, load_members(engine, where))
    raw = runner_parts(counts, 2, named)
    sql = runner_counts(engine, where, 2, named.tolist())

    def rows(parts: pd.DataFrame) -> list[tuple[Any, ...]]:
        keys = parts.drop(columns=["n", "works"]).astype(object)
        keys = keys.where(keys.notna(), None).assign(n=parts["n"].astype(int))
        keys = keys.assign(works=parts["works"].fillna(0).astype(int))
        return sorted(keys.itertuples(index=False, name=None), key=repr)

    assert set(sql["part"]) == {"runner", "runners", "pool", "place"}
    assert sql["n"].dtype.kind == "i" and sql["works"].dtype.kind == "f"  # not Decimal
    assert (sql.loc[sql["part"] == "place", "works"] > 0).any()  # some work elsewhere
    assert rows(sql[raw.columns]) == rows(raw)
    engine.dispose()
