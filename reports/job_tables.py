"""Report tables of logical jobs: flake rates, verdicts, runner pools and runners, environments,
repair time and cost. While the derived tables are current (analytics.derived), each table's
counts come from one statement of store.job_counts (the runner-pools, runners and
environment tables share one, store.job_counts.runner_counts, aggregated per table row, read
once per filter and collect); otherwise the same counts come
from the logical jobs computed from the raw rows (analytics.frames). The statistics then run on
the counts alike (analytics.job_counts, analytics.verdicts)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pandas as pd
from sqlalchemy import Engine

from analytics import elsewhere, verdicts
from analytics.elsewhere import week_start
from analytics.environments import COLUMNS as ENVIRONMENT_COLUMNS
from analytics.environments import environment_failures
from analytics.frames import failures_frame
from analytics.health import (
    HEALTH_COLUMNS,
    REPAIR_COLUMNS,
    health_table,
    streak_health,
    streak_keys,
    streaks_of_turns,
)
from analytics.job_counts import (
    counts_of,
    flaky_table,
    host_incidents,
    incidents_per_place,
    rated_runners,
    runner_parts,
    works_elsewhere_of,
)
from analytics.once import verdicts_once
from reports.query import Query
from reports.table_inputs import (
    derived_current,
    logical_jobs_of,
    logical_runs_of,
    shared_counts,
    with_lineage,
)
from reports.table_spec import ReportTable
from store.frame_queries import json_dicts, load_failures, load_jobs
from store.incidents import incidents_hitting, load_members
from store.job_counts import (
    failed_job_environments,
    failed_jobs,
    job_counts,
    red_turns,
    runner_counts,
)
from store.project import Project
from store.runfilter import RunFilter

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
    "incidents",
]
RUNNERS_COLUMNS = ["runner_name", "runners", *RUNNER_POOLS_COLUMNS[1:]]


HEALTH_EXPORT_COLUMNS = ["lineage", "workflow_path", "scope", *HEALTH_COLUMNS]
REPAIR_EXPORT_COLUMNS = ["lineage", "workflow_path", "scope", *REPAIR_COLUMNS]


def _job_counts(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    """The logical jobs of ``query`` counted (analytics.job_counts.COUNT_KEYS, n) from the raw
    rows, what the raw path counts from (the derived tables count in SQL); shared by the
    tables of a page (reports.table_inputs.shared_counts): do not modify it."""
    where = query.where(project)

    def compute(_: bool) -> pd.DataFrame:
        return counts_of(logical_jobs_of(engine, project, query), load_members(engine, where))

    return shared_counts("jobs", engine, project, where, compute)


def _runner_parts(
    engine: Engine, project: Project, query: Query
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """What the Runners page's tables count (store.job_counts.runner_counts): from the derived
    tables in one statement, else from the raw rows' counts (analytics.job_counts
    .runner_parts); with the incidents of the range (store.incidents.incidents_hitting), read
    once for the counts and the runner tables; shared by the page's tables: do not modify them."""
    where, min_runs = query.where(project), project.analysis.min_runs

    def compute(current: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
        hit = incidents_hitting(engine, where)
        named = host_incidents(hit)
        if current:
            return runner_counts(engine, where, min_runs, named.unique().tolist()), hit
        return runner_parts(_job_counts(engine, project, query), min_runs, named), hit

    return shared_counts(f"runners {min_runs}", engine, project, where, compute)


PER_JOB = ["workflow_path", "logical_job", "logical_outcome", "incident_id"]


def _per_job_counts(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    """The logical jobs of ``query`` counted per PER_JOB (n): a GROUP BY of four keys when the
    derived tables are current, else summed from _job_counts."""
    where = query.where(project)

    def compute(current: bool) -> pd.DataFrame:
        if current:
            return job_counts(engine, where, PER_JOB)
        counts = _job_counts(engine, project, query)
        return counts.groupby(PER_JOB, dropna=False, sort=False)["n"].sum().reset_index()

    return shared_counts("jobs per job", engine, project, where, compute)


def flaky_jobs_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    counts = _per_job_counts(engine, project, query)
    table = flaky_table(with_lineage(counts, project), project.analysis.min_runs)
    return table.assign(scope=query.scope)[FLAKY_COLUMNS]


def verdicts_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    if derived_current(engine, project):
        where = _workflows_of_job(engine, project, query)
        failed = _neighboured(failed_jobs(engine, where, query.logical_job))
        table = verdicts.decided(with_lineage(failed, project))
    else:
        failures = failures_frame(engine, query.where(project, dated=False))
        table = verdicts.job_verdicts(logical_jobs_of(engine, project, query), failures)
    members = load_members(engine, query.where(project))
    return verdicts_once(table, members)[VERDICTS_COLUMNS]


def _workflows_of_job(engine: Engine, project: Project, query: Query) -> RunFilter:
    """``query``'s filter, cut to the workflows its logical job ran in when it names one (the
    counts that the flaky-jobs table shares say which): the job's rows, its neighbours and
    its green runs of the same commit are all in them, and the runs' scope index then reads
    those workflows' runs alone instead of every run of the scope."""
    where = query.where(project)
    if query.logical_job is None:
        return where
    counts = _per_job_counts(engine, project, query)
    ran_in = counts.loc[counts["logical_job"] == query.logical_job, "workflow_path"]
    return replace(where, paths=tuple(sorted(ran_in.unique()))) if len(ran_in) else where


def _neighboured(failed: pd.DataFrame) -> pd.DataFrame:
    """store.job_counts.failed_jobs' rows as analytics.verdicts.job_verdicts orders and types
    them: by workflow, logical job and branch (missing last), then time and run; run ids and
    attempts that may be missing as floats; a green run of the same commit that is the job's
    own run is none."""
    order = ["workflow_path", "logical_job", "head_branch", "created_at", "run_id"]
    failed = failed.sort_values(order, na_position="last", kind="stable").reset_index(drop=True)
    floats = ["prev_run_id", "next_run_id", "same_sha_run_id", "red_attempt", "red_job_id"]
    failed = failed.astype({column: float for column in floats} | {"logical_outcome": object})
    own = failed["same_sha_run_id"] == failed["run_id"]
    return failed.assign(same_sha_run_id=failed["same_sha_run_id"].mask(own))


def _runner_table(by: str, columns: list[str]) -> Any:
    """The builder of the runner table per ``by`` (runner_pool or runner_name): with the runner
    incidents of the range on each (analytics.job_counts.incidents_per_place)."""

    def build(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
        parts, hit = _runner_parts(engine, project, query)
        table = rated_runners(parts, by, project.analysis.min_runs)
        return table.assign(incidents=incidents_per_place(table[by], hit))[columns]

    return build


def environments_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    """The failures of the range; whether each works elsewhere looks at its whole ISO week,
    so the jobs are read from the Monday that starts the week of ``since``."""
    where = query.where(project)
    week = query if query.since is None else replace(query, since=week_start(query.since))
    if derived_current(engine, project):
        rows = failed_job_environments(engine, where)
        rows = rows.assign(env=json_dicts(rows["env"]), red_job_id=rows["job_id"])
        parts, _ = _runner_parts(engine, project, query)
        before = None
        if week.since != query.since:  # the week's days before the range: a few more counts
            before = job_counts(engine, replace(where, since=week.since, until=query.since))
        elsewhere_now = works_elsewhere_of(rows, parts[parts["part"] == "place"], before)
        return environment_failures(rows, rows.assign(works_elsewhere=elsewhere_now))
    failures = load_failures(engine, where, detail=("env",))
    jobs = logical_jobs_of(engine, project, week)
    return environment_failures(failures, elsewhere.failed_elsewhere(jobs, "runner_name"))


HEALTH_KEYS = ["lineage", "workflow_path"]


def repair_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    if derived_current(engine, project):
        turns = with_lineage(red_turns(engine, query.where(project)), project)
        streaks = streaks_of_turns(turns, streak_keys(HEALTH_KEYS))
        table = streak_health(streaks, None, HEALTH_KEYS)
    else:
        table = health_table(logical_runs_of(engine, project, query), None, HEALTH_KEYS)
    return table.assign(scope=query.scope)[REPAIR_EXPORT_COLUMNS]


def health_export(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    runs = logical_runs_of(engine, project, query)
    jobs = load_jobs(engine, query.where(project))
    table = health_table(runs, jobs, HEALTH_KEYS)
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
        "a runner pool (label set): stability, works-elsewhere and runner incidents",
        RUNNER_POOLS_COLUMNS,
        _runner_table("runner_pool", RUNNER_POOLS_COLUMNS),
    ),
    ReportTable(
        "runners",
        "a runner (host name) one can rate: it ran min_runs counted jobs or had a runner "
        "incident; per pool, one row for its other, short-lived hosts; GitHub's hosted VMs are "
        "one row: stability, works-elsewhere and runner incidents",
        RUNNERS_COLUMNS,
        _runner_table("runner_name", RUNNERS_COLUMNS),
    ),
    ReportTable(
        "environments",
        "an environment version (CANN, driver, torch...) printed in failed jobs' logs",
        ENVIRONMENT_COLUMNS,
        environments_table,
    ),
    ReportTable(
        "repair",
        "a lineage and workflow: time to repair (the health table without job times)",
        REPAIR_EXPORT_COLUMNS,
        repair_table,
    ),
    ReportTable(
        "health",
        "a lineage and workflow: time to repair, retry tax, durations",
        HEALTH_EXPORT_COLUMNS,
        health_export,
    ),
)
