"""``ciflake export``: the analytics as CSV files for retrospectives.

Fixed column orders (a spreadsheet or script may rely on them):

- ``runs``: one row per workflow run (its attempts collapsed into a logical outcome)
- ``jobs``: one row per job of every attempt, as GitHub reported it, with its logical job name
  and the category of its failure and the evidence that decided it (empty when it did not fail)
- ``failures``: one row per classified failure (``job_id`` 0: a run that failed with no jobs),
  with the evidence that decided its category and the stage the job stopped in
- ``signatures``: one row per failure signature in the range, with its newest example
- ``flaky``: one row per logical job (default-branch scope unless asked otherwise), surely
  flakiest first (Wilson lower bound of the flake rate = flaky / (pass + flaky))
- ``before-after``: one row per change event and lineage it touches, default-branch scope unless
  asked otherwise; ``before_runs`` = before_pass + before_flaky + before_fail (excluded runs
  count in no rate); rates are fractions in [0, 1] with a 95% Wilson interval; ``p_value`` is a
  two-sided Fisher exact test of pass vs (flaky + fail), empty when a side has no runs;
  ``<side>_known`` is the share of the side's red runs whose category is known (empty without
  red runs) and ``<side>_basis`` says on what evidence (analytics.evidence.describe).
- ``health``: one row per lineage and workflow (default-branch scope unless asked otherwise):
  time to repair (median and mean hours from a red run to the next green on its branch,
  ``repaired`` streaks and ``open`` ones), retry tax (``rerun_jobs`` of ``jobs`` job runs were
  reruns, ``accelerator_hours`` they held) and job duration and queue p50/p95 in minutes
  (analytics.health.health_table, as the Flaky jobs page shows it)

Files are UTF-8 with a header; times are ISO-8601 UTC (``2026-06-03T07:51:40Z``); a text cell
that begins with ``=``, ``+``, ``-`` or ``@`` is prefixed with ``'`` so no spreadsheet runs it.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pandas as pd
from sqlalchemy import Engine

from analytics.before_after import basis_mix, before_after, with_basis
from analytics.config_tables import config_lineages, event_table, workflow_table
from analytics.frames import RUN_CONTEXT, logical_job_frame, logical_run_frame
from analytics.health import HEALTH_COLUMNS, health_table
from analytics.outcomes import attach_lineage, in_scope, normalise_job_names
from analytics.rates import rank_by_lower_bound, stability
from analytics.spreadsheet import for_spreadsheets
from store.events import all_events
from store.frame_queries import load_failures, load_jobs, load_runs
from store.page_queries import failure_details, signature_summary
from store.runfilter import RunFilter
from store.settings import Config, ConfigError, parse_datetime
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
]

FLAKY_COLUMNS = [
    "lineage",
    "workflow_path",
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
    "before_known",
    "after_known",
    "before_basis",
    "after_basis",
]

HEALTH_EXPORT_COLUMNS = ["lineage", "workflow_path", "scope", *HEALTH_COLUMNS]

TABLES = ("runs", "jobs", "failures", "signatures", "flaky", "before-after", "health")
# The column each table's --category filter looks at; the others have no single category.
CATEGORY_COLUMNS = {
    "runs": "failure_category",
    "jobs": "failure_category",
    "failures": "category",
    "signatures": "category",
}


def runs_export(engine: Engine, config: Config, where: RunFilter) -> pd.DataFrame:
    """The ``runs`` table, in RUNS_COLUMNS order."""
    return logical_run_frame(engine, config, where)[RUNS_COLUMNS]


def jobs_export(engine: Engine, config: Config, where: RunFilter) -> pd.DataFrame:
    """The ``jobs`` table: every stored job of every attempt, in JOBS_COLUMNS order."""
    runs = load_runs(engine, where)[["run_id", "workflow_path"]]
    jobs = load_jobs(engine, where).rename(columns={"name": "job_name"})
    jobs = _with_lineage(jobs.merge(runs, on="run_id", how="left"), config)
    category = load_failures(engine, where).drop_duplicates("job_id").set_index("job_id")
    jobs = jobs.assign(
        logical_job=normalise_job_names(jobs["job_name"], config.job_name_strip),
        labels=jobs["labels"].map(lambda labels: ";".join(labels or [])),
        failure_category=jobs["job_id"].map(category["category"]),
        evidence=jobs["job_id"].map(category["evidence"]),
    )
    return jobs[JOBS_COLUMNS]


def failures_export(engine: Engine, config: Config, where: RunFilter) -> pd.DataFrame:
    """The ``failures`` table, oldest first, in FAILURES_COLUMNS order."""
    failures = failure_details(engine, where).iloc[::-1].reset_index(drop=True)
    return _with_lineage(failures, config)[FAILURES_COLUMNS]


def _with_lineage(frame: pd.DataFrame, config: Config) -> pd.DataFrame:
    return attach_lineage(frame, workflow_table(config.workflows))


def signatures_export(engine: Engine, config: Config, where: RunFilter) -> pd.DataFrame:
    """The ``signatures`` table, most failures first, in SIGNATURES_COLUMNS order."""
    renamed = {"first_seen_here": "first_seen_in_range", "last_seen": "last_seen_in_range"}
    return signature_summary(engine, where).rename(columns=renamed)[SIGNATURES_COLUMNS]


def flaky_export(
    engine: Engine, config: Config, where: RunFilter, scope: str = "default"
) -> pd.DataFrame:
    """The ``flaky`` table: logical jobs in ``scope`` ranked by the Wilson lower bound of their
    flake rate (analytics.rates.rank_by_lower_bound), in FLAKY_COLUMNS order."""
    runs = logical_run_frame(engine, config, where)
    jobs = logical_job_frame(engine, config, where, runs)
    jobs = jobs[in_scope(jobs, scope, config.default_branch)]
    keys = ["lineage", "workflow_path", "logical_job"]
    table = rank_by_lower_bound(stability(jobs, keys, config.min_runs), "flake_rate")
    return table.assign(scope=scope)[FLAKY_COLUMNS]


def health_export(
    engine: Engine, config: Config, where: RunFilter, scope: str = "default"
) -> pd.DataFrame:
    """The ``health`` table: analytics.health.health_table per lineage and workflow of the runs
    in ``scope``, in HEALTH_EXPORT_COLUMNS order."""
    runs = logical_run_frame(engine, config, where)
    runs = runs[in_scope(runs, scope, config.default_branch)]
    table = health_table(runs, load_jobs(engine, where), ["lineage", "workflow_path"])
    return table.assign(scope=scope)[HEALTH_EXPORT_COLUMNS]


def before_after_export(
    engine: Engine, config: Config, where: RunFilter, scope: str = "default"
) -> pd.DataFrame:
    """The ``before-after`` table for the events dated within ``where``'s since/until; the runs
    are read from W days before the first of them to W days after the last."""
    events = event_table(all_events(config, engine))
    if where.since is not None:
        events = events[events["event_date"] >= where.since]
    if where.until is not None:
        events = events[events["event_date"] < where.until]
    window = pd.Timedelta(days=config.window_days)
    runs_where = RunFilter(
        repo=where.repo,
        since=where.since - window if where.since else None,
        until=where.until + window if where.until else None,
        paths=where.paths,
    )
    runs = logical_run_frame(engine, config, runs_where)
    lineages = config_lineages(config.workflows)  # as the Migrations page
    table = before_after(
        runs,
        events,
        window_days=config.window_days,
        first_runs=config.first_runs,
        scope=scope,
        default_branch=config.default_branch,
        min_runs=config.min_runs,
        lineages=lineages,
    )
    known = basis_mix(
        runs,
        events,
        window_days=config.window_days,
        scope=scope,
        default_branch=config.default_branch,
        lineages=lineages,
    )
    table = with_basis(table, known)
    renamed = {
        f"{side}_success_rate_{bound}": f"{side}_ci_{bound}"
        for side in ("before", "after")
        for bound in ("low", "high")
    }
    return table.rename(columns=renamed)[BEFORE_AFTER_COLUMNS]


def write_csv(frame: pd.DataFrame, path: str | Path) -> None:
    """Write ``frame`` as UTF-8 CSV with a header; one ConfigError line when it cannot."""
    try:
        for_spreadsheets(frame).to_csv(path, index=False, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror or exc}") from None


# The tables that take no scope, by name.
EXPORTS = {
    "runs": runs_export,
    "jobs": jobs_export,
    "failures": failures_export,
    "signatures": signatures_export,
}


def check_table(table: str, category: str | None = None) -> None:
    """ConfigError for a table that does not exist, or a --category it cannot filter on,
    before any database work."""
    if table not in TABLES:
        raise ConfigError(f"unknown export table {table!r} (choose from: {', '.join(TABLES)})")
    if category is not None and category not in CATEGORIES:
        raise ConfigError(f"unknown category {category!r} (choose from: {', '.join(CATEGORIES)})")
    if category is not None and table not in CATEGORY_COLUMNS:
        raise ConfigError(
            f"--category does not apply to {table!r} (only to: {', '.join(CATEGORY_COLUMNS)})"
        )


def export_table(
    engine: Engine,
    config: Config,
    table: str,
    where: RunFilter,
    scope: str = "default",
    category: str | None = None,
) -> pd.DataFrame:
    """The frame of ``table`` (one of TABLES), only the rows of ``category`` when given."""
    check_table(table, category)
    if table == "before-after":
        return before_after_export(engine, config, where, scope)
    if table == "flaky":
        return flaky_export(engine, config, where, scope)
    if table == "health":
        return health_export(engine, config, where, scope)
    frame = EXPORTS[table](engine, config, where)
    if category is None:
        return frame
    return frame[frame[CATEGORY_COLUMNS[table]] == category].reset_index(drop=True)


def parse_range(since: str | None, until: str | None) -> tuple[datetime | None, datetime | None]:
    """--since/--until as UTC datetimes; a range that ends before it starts is an error."""
    start = parse_datetime(since, "--since") if since else None
    end = parse_datetime(until, "--until") if until else None
    if start and end and end <= start:
        raise ConfigError(f"--until {until!r} is not after --since {since!r}")
    return start, end
