"""The report tables: one registry of named tables for ``ciflake export`` and the dashboard's
Export page alike (the nightly summary computes its sections with the same analytics
functions, not yet from this registry). Each table has one name, one set of keys and one
header (docs/commands.md, "ciflake export"), and is built from a repository's ``Project`` and a
``reports.query.Query`` (the dashboard's filters, or the command's options), so the same table
for the same filters is the same bytes wherever it is asked for.

Files are UTF-8 with a header; times are ISO-8601 UTC (``2026-06-03T07:51:40Z``); a text cell
that begins with ``=``, ``+``, ``-`` or ``@`` is prefixed with ``'`` so no spreadsheet runs it
(analytics.spreadsheet).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pandas as pd
from sqlalchemy import Engine

from analytics import changepoints as cp
from analytics import coverage, elsewhere, once, verdicts
from analytics.before_after import as_exported, basis_mix, before_after
from analytics.config_tables import config_lineages, event_table, job_renames, workflow_table
from analytics.frames import RUN_CONTEXT, failures_frame, logical_job_frame, logical_run_frame
from analytics.health import HEALTH_COLUMNS, health_table
from analytics.outcomes import attach_lineage, normalise_job_names
from reports.query import Query
from store.events import all_events
from store.frame_queries import load_failures, load_jobs, load_runs
from store.incidents import incidents_hitting, load_members
from store.page_queries import daily_job_presence, failure_details, signature_summary
from store.project import Project
from store.settings import ConfigError, parse_datetime
from store.triage import TRIAGE_COLUMNS, triage_signatures
from store.vocabulary import CATEGORIES

# A logical run's context (analytics.frames.RUN_CONTEXT), then its outcome; the link last.
RUNS_COLUMNS = [
    *(column for column in RUN_CONTEXT if column != "html_url"),
    "run_attempt",
    "logical_outcome",
    "conclusion",
    "first_attempt_conclusion",
    "failure_category",
    "html_url",
]

JOBS_COLUMNS = [
    "job_id",
    "run_id",
    "run_attempt",
    "workflow_path",
    "lineage",
    "job_name",
    "logical_job",
    "status",
    "conclusion",
    "created_at",
    "started_at",
    "completed_at",
    "runner_name",
    "runner_group_name",
    "labels",
    "failure_category",
    "html_url",
    "evidence",
]

FAILURES_COLUMNS = [
    "run_id",
    "run_attempt",
    "job_id",
    "created_at",
    "workflow_path",
    "lineage",
    "job_name",
    "runner_name",
    "category",
    "rule",
    "signature",
    "line_number",
    "line",
    "log_status",
    "html_url",
    "evidence",
    "stage",
    "classifier_category",
    "classifier_evidence",
    "correction_note",
]

SIGNATURES_COLUMNS = [
    "signature",
    "category",
    "rule",
    "failures",
    "jobs",
    "first_seen",
    "first_seen_in_range",
    "last_seen_in_range",
    "line",
    "runner_name",
    "html_url",
    "issue_url",
    "issue_state",
    "correction_note",
]

KNOWN_ISSUES_COLUMNS = list(TRIAGE_COLUMNS)

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

BEFORE_AFTER_COLUMNS = [
    "event_date",
    "event_pr",
    "event_title",
    "lineage",
    "scope",
    "window_days",
    *(
        f"{side}_{c}"
        for side in ("before", "after")
        for c in ("runs", "pass", "flaky", "fail", "success_rate", "ci_low", "ci_high")
    ),
    "p_value",
    *(
        f"{side}_{c}_once"
        for side in ("before", "after")
        for c in ("runs", "pass", "flaky", "fail", "success_rate", "ci_low", "ci_high")
    ),
    "p_value_once",
    *(f"{side}_{c}" for side in ("before", "after") for c in ("incident_id", "incident_red")),
    "before_known",
    "after_known",
    "before_basis",
    "after_basis",
]

HEALTH_EXPORT_COLUMNS = ["lineage", "workflow_path", "scope", *HEALTH_COLUMNS]

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

COVERAGE_LOST_COLUMNS = list(coverage.LOST_COLUMNS)

CHANGEPOINTS_COLUMNS = [
    "lineage",
    "date",
    "date_low",
    "date_high",
    "before_rate",
    "after_rate",
    "before_runs",
    "after_runs",
    "gain",
    "known_change",
    "event_date",
    "event_pr",
    "event_title",
    "distance_days",
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


def _runs(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    return logical_run_frame(engine, project, query.where(project))


def _jobs(engine: Engine, project: Project, query: Query, *, dated: bool = True) -> pd.DataFrame:
    where = query.where(project, dated=dated)
    return logical_job_frame(engine, project, where, logical_run_frame(engine, project, where))


def _events(engine: Engine, project: Project) -> pd.DataFrame:
    return event_table(all_events(project, engine))


def _with_lineage(frame: pd.DataFrame, project: Project) -> pd.DataFrame:
    return attach_lineage(frame, workflow_table(project.workflows))


def runs_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    return _runs(engine, project, query)[RUNS_COLUMNS]


def jobs_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    where = query.where(project)
    runs = load_runs(engine, where)[["run_id", "workflow_path"]]
    jobs = load_jobs(engine, where).rename(columns={"name": "job_name"})
    jobs = _with_lineage(jobs.merge(runs, on="run_id", how="left"), project)
    category = load_failures(engine, where).drop_duplicates("job_id").set_index("job_id")
    jobs = jobs.assign(
        logical_job=normalise_job_names(jobs["job_name"], project.job_name_strip),
        labels=jobs["labels"].map(lambda labels: ";".join(labels or [])),
        failure_category=jobs["job_id"].map(category["category"]),
        evidence=jobs["job_id"].map(category["evidence"]),
    )
    return jobs[JOBS_COLUMNS]


def failures_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    failures = failure_details(engine, query.where(project)).iloc[::-1].reset_index(drop=True)
    return _with_lineage(failures, project)[FAILURES_COLUMNS]


def signatures_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    renamed = {"first_seen_here": "first_seen_in_range", "last_seen": "last_seen_in_range"}
    table = signature_summary(engine, query.where(project))
    return table.rename(columns=renamed)[SIGNATURES_COLUMNS]


def known_issues_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    """The linked and corrected signatures, their failures counted in the query's runs."""
    return triage_signatures(engine, query.where(project))[KNOWN_ISSUES_COLUMNS]


def flaky_jobs_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    members = load_members(engine, query.where(project))
    table = once.flaky_table(_jobs(engine, project, query), project.analysis.min_runs, members)
    return table.assign(scope=query.scope)[FLAKY_COLUMNS]


def verdicts_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    failures = failures_frame(engine, query.where(project, dated=False))
    table = verdicts.job_verdicts(_jobs(engine, project, query), failures)
    members = load_members(engine, query.where(project))
    return once.verdicts_once(table, members)[VERDICTS_COLUMNS]


def health_export(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    runs = _runs(engine, project, query)
    jobs = load_jobs(engine, query.where(project))
    table = health_table(runs, jobs, ["lineage", "workflow_path"])
    return table.assign(scope=query.scope)[HEALTH_EXPORT_COLUMNS]


def before_after_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    """The events dated within the query's since/until; each one's windows read over every
    date (an event's windows are its own, whatever the range)."""
    events = _events(engine, project)
    if query.since is not None:
        events = events[events["event_date"] >= query.since]
    if query.until is not None:
        events = events[events["event_date"] < query.until]
    every = query.where(project, dated=False)
    runs = logical_run_frame(engine, project, every)
    lineages = config_lineages(project.workflows)
    branch, analysis = project.default_branch, project.analysis
    # the runs are the query's scope already (SQL): every one of them counts
    table = before_after(
        runs,
        events,
        analysis,
        default_branch=branch,
        scope="all",
        lineages=lineages,
        members=load_members(engine, every),
    )
    known = basis_mix(runs, events, analysis, default_branch=branch, scope="all", lineages=lineages)
    return as_exported(table, known).assign(scope=query.scope)[BEFORE_AFTER_COLUMNS]


def coverage_lost_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    """Logical jobs that ran in the window before an event (of any kind) and have no
    successor after it; jobs read over every date, as the event's window is its own."""
    events = _events(engine, project)
    diff = coverage.coverage_diff(
        _jobs(engine, project, query, dated=False),
        events,
        job_renames(project.lineages),
        window_days=project.analysis.window_days,
        kinds=tuple(events["event_kind"].unique()),
    )
    return coverage.lost_jobs(diff)[COVERAGE_LOST_COLUMNS]


def changepoints_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    """Dates in the range where a lineage's red rate shifted, with what changed in its job set
    that day (read over every date) and the nearest change event touching the lineage."""
    every = query.where(project, dated=False)
    every_run = logical_run_frame(engine, project, every)
    runs = every_run
    if query.since is not None:
        runs = runs[runs["created_at"] >= query.since]
    if query.until is not None:
        runs = runs[runs["created_at"] < query.until]
    found = cp.lineage_changepoints(runs, every_run, daily_job_presence(engine, every))
    return cp.nearest_events(found, _events(engine, project))[CHANGEPOINTS_COLUMNS]


def runner_pools_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    placed = elsewhere.with_runner_pool(_jobs(engine, project, query))
    flagged = elsewhere.failed_elsewhere(placed, "runner_pool")
    members = load_members(engine, query.where(project))
    min_runs = project.analysis.min_runs
    table = elsewhere.runner_rates(placed, flagged, "runner_pool", min_runs, members)
    return table[RUNNER_POOLS_COLUMNS]


INCIDENTS_COLUMNS = [
    "incident_id",
    "started_at",
    "ended_at",
    "kind",
    "category",
    "label",
    "signature",
    "runner",
    "jobs",
    "runs",
    "workflows",
]


def incidents_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    """The incidents that hit at least one of the query's runs, oldest first; their counts
    are over every run they hit."""
    found = incidents_hitting(engine, query.where(project))
    return found.rename(columns={"id": "incident_id"})[INCIDENTS_COLUMNS]


@dataclass(frozen=True)
class ReportTable:
    """A named table: what one row is, and the column a --category filter reads (None: the
    table has no single category)."""

    name: str
    row: str
    columns: list[str]
    build: Callable[[Engine, Project, Query], pd.DataFrame]
    category_column: str | None = None


TABLES = {
    table.name: table
    for table in (
        ReportTable(
            "runs",
            "a workflow run, its attempts collapsed into a logical outcome",
            RUNS_COLUMNS,
            runs_table,
            "failure_category",
        ),
        ReportTable(
            "jobs",
            "a job of an attempt, as GitHub reported it, with its logical name and failure",
            JOBS_COLUMNS,
            jobs_table,
            "failure_category",
        ),
        ReportTable(
            "failures",
            "a classified failure, with the evidence that decided it",
            FAILURES_COLUMNS,
            failures_table,
            "category",
        ),
        ReportTable(
            "signatures",
            "a failure signature, with its newest example",
            SIGNATURES_COLUMNS,
            signatures_table,
            "category",
        ),
        ReportTable(
            "known-issues",
            "a failure signature linked to an issue or corrected by a maintainer",
            KNOWN_ISSUES_COLUMNS,
            known_issues_table,
            "category",
        ),
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
            "before-after",
            "a change event and a lineage it touches: stability before and after",
            BEFORE_AFTER_COLUMNS,
            before_after_table,
        ),
        ReportTable(
            "coverage-lost",
            "a job that ran before an event and has no successor after it",
            COVERAGE_LOST_COLUMNS,
            coverage_lost_table,
        ),
        ReportTable(
            "changepoints",
            "a date where a lineage's red rate shifted",
            CHANGEPOINTS_COLUMNS,
            changepoints_table,
        ),
        ReportTable(
            "runner-pools",
            "a runner pool (label set): stability and works-elsewhere",
            RUNNER_POOLS_COLUMNS,
            runner_pools_table,
        ),
        ReportTable(
            "incidents",
            "a burst of failures with one cause (a host, a signature, a category across "
            "workflows), counted once",
            INCIDENTS_COLUMNS,
            incidents_table,
            "category",
        ),
        ReportTable(
            "health",
            "a lineage and workflow: time to repair, retry tax, durations",
            HEALTH_EXPORT_COLUMNS,
            health_export,
        ),
    )
}


def check_table(name: str, category: str | None = None) -> ReportTable:
    """The table ``name``; a ConfigError line for a table that does not exist, or a category
    it cannot filter on, before any database work."""
    if name not in TABLES:
        raise ConfigError(f"unknown report table {name!r} (choose from: {', '.join(TABLES)})")
    table = TABLES[name]
    if category is not None and category not in CATEGORIES:
        raise ConfigError(f"unknown category {category!r} (choose from: {', '.join(CATEGORIES)})")
    if category is not None and table.category_column is None:
        having = ", ".join(t.name for t in TABLES.values() if t.category_column)
        raise ConfigError(f"--category does not apply to {name!r} (only to: {having})")
    return table


def build(engine: Engine, project: Project, name: str, query: Query) -> pd.DataFrame:
    """The table ``name`` for ``project`` and ``query``: only the rows of ``query.category``
    when given."""
    table = check_table(name, query.category)
    frame = table.build(engine, project, query)[table.columns]
    if query.category is None or table.category_column is None:
        return frame.reset_index(drop=True)
    return frame[frame[table.category_column] == query.category].reset_index(drop=True)


def write_csv(data: bytes, path: str | Path) -> None:
    """Write a table's CSV bytes to ``path``; one ConfigError line when it cannot."""
    try:
        Path(path).write_bytes(data)
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from None


def parse_range(since: str | None, until: str | None) -> tuple[datetime | None, datetime | None]:
    """--since/--until as UTC datetimes; a range that ends before it starts is an error."""
    start = parse_datetime(since, "--since") if since else None
    end = parse_datetime(until, "--until") if until else None
    if start and end and end <= start:
        raise ConfigError(f"--until {until!r} is not after --since {since!r}")
    return start, end
