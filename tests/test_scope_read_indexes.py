"""The Flaky jobs page's statements (store.job_counts) read the runs and logical jobs of a
scope from indexes alone on SQLite (the rollup of job outcomes for whole days), and the window
statement gets its runs in order: each statement run is explained (EXPLAIN QUERY PLAN) with
the parameters it ran with."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from reports.job_tables import PER_JOB
from store.job_counts import job_counts, red_turns
from tests.support.plans import SCOPE, query_plan


def test_the_flaky_jobs_counts_read_runs_and_logical_jobs_from_indexes_alone(sqlite_engine):
    """A bound inside a day reads the logical jobs (whole days read the rollup of job
    outcomes, the runners left out)."""
    noon = replace(SCOPE, since=SCOPE.since + timedelta(hours=12))
    plan = query_plan(sqlite_engine, lambda: job_counts(sqlite_engine, noon, PER_JOB))
    assert "workflow_runs USING COVERING INDEX ix_workflow_runs_scope_reads" in plan
    assert "logical_jobs USING COVERING INDEX ix_logical_jobs_count_reads" in plan
    whole = query_plan(sqlite_engine, lambda: job_counts(sqlite_engine, SCOPE, PER_JOB))
    assert "SEARCH rollup_job_outcomes USING INDEX ix_rollup_job_outcomes_repo_day" in whole
    assert "logical_jobs" not in whole and "workflow_runs" not in whole, whole


def test_the_red_turns_window_reads_the_runs_in_order(sqlite_engine):
    plan = query_plan(sqlite_engine, lambda: red_turns(sqlite_engine, SCOPE))
    assert "workflow_runs USING COVERING INDEX ix_workflow_runs_scope_reads" in plan
    assert "TEMP B-TREE" not in plan
