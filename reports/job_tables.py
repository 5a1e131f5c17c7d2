"""Report tables of logical jobs: flake rates, verdicts, runner pools, repair time and cost."""

from __future__ import annotations

import pandas as pd
from sqlalchemy import Engine

from analytics import elsewhere, once, verdicts
from analytics.frames import failures_frame
from analytics.health import HEALTH_COLUMNS, health_table
from reports.query import Query
from reports.table_inputs import logical_jobs_of, logical_runs_of
from reports.table_spec import ReportTable
from store.frame_queries import load_jobs
from store.incidents import load_members
from store.project import Project

FLAKY_COLUMNS = [
    "lineage",
    "logical_job",
    "scope",
    "runs",
    "pass",
    "flaky",
    "fail",
    "flake_rate",
    "flake_rate_low",
    "flake_rate_high",
    "success_rate",
    "success_rate_low",
    "success_rate_high",
    "enough_data",
    *(f"{c}_once" for c in ("runs", "pass", "flaky", "fail")),
    *(
        f"{rate}{end}_once"
        for rate in ("flake_rate", "success_rate")
        for end in ("", "_low", "_high")
    ),
]


VERDICTS_COLUMNS = [
    "lineage",
    "workflow_path",
    "logical_job",
    "run_id",
    "created_at",
    "head_sha",
    "logical_outcome",
    "attempts",
    "category",
    "verdict",
    "evidence",
    "verdict_once",
    "incident_id",
    "prev_run_id",
    "next_run_id",
    "same_sha_run_id",
    "runner_name",
    "html_url",
]


RUNNER_POOLS_COLUMNS = [
    "runner_pool",
    "runs",
    "pass",
    "flaky",
    "fail",
    "fail_rate",
    "fail_rate_low",
    "fail_rate_high",
    "failed_jobs",
    "works_elsewhere",
    "enough_data",
    *(f"{c}_once" for c in ("runs", "pass", "flaky", "fail")),
    *(f"fail_rate{end}_once" for end in ("", "_low", "_high")),
]


HEALTH_EXPORT_COLUMNS = ["lineage", "workflow_path", "scope", *HEALTH_COLUMNS]


def flaky_jobs_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    members = load_members(engine, query.where(project))
    table = once.flaky_table(
        logical_jobs_of(engine, project, query), project.analysis.min_runs, members
    )
    return table.assign(scope=query.scope)[FLAKY_COLUMNS]


def verdicts_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    failures = failures_frame(engine, query.where(project, dated=False))
    table = verdicts.job_verdicts(logical_jobs_of(engine, project, query), failures)
    members = load_members(engine, query.where(project))
    return once.verdicts_once(table, members)[VERDICTS_COLUMNS]


def runner_pools_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    placed = elsewhere.with_runner_pool(logical_jobs_of(engine, project, query))
    flagged = elsewhere.failed_elsewhere(placed, "runner_pool")
    members = load_members(engine, query.where(project))
    min_runs = project.analysis.min_runs
    table = elsewhere.runner_rates(placed, flagged, "runner_pool", min_runs, members)
    return table[RUNNER_POOLS_COLUMNS]


def health_export(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    runs = logical_runs_of(engine, project, query)
    jobs = load_jobs(engine, query.where(project))
    table = health_table(runs, jobs, ["lineage", "workflow_path"])
    return table.assign(scope=query.scope)[HEALTH_EXPORT_COLUMNS]


TABLES = (
    ReportTable(
        "flaky-jobs",
        "a logical job of a lineage, surely flakiest first",
        FLAKY_COLUMNS,
        flaky_jobs_table,
    ),
    ReportTable(
        "verdicts",
        "a failed logical job with its verdict (flaky, persistent...) and the runs behind it",
        VERDICTS_COLUMNS,
        verdicts_table,
        "category",
    ),
    ReportTable(
        "runner-pools",
        "a runner pool (label set): stability and works-elsewhere",
        RUNNER_POOLS_COLUMNS,
        runner_pools_table,
    ),
    ReportTable(
        "health",
        "a lineage and workflow: time to repair, retry tax, durations",
        HEALTH_EXPORT_COLUMNS,
        health_export,
    ),
)
