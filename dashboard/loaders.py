"""Cached loaders: every number a page shows comes from here, computed by ``store.queries``
(SQL) and ``analytics`` (pandas). Streamlit reruns a page on every click, so each loader is
cached with a TTL (new collects show up without a restart) and keyed on the database URL and
the sidebar filters only."""

from __future__ import annotations

import os
import zlib
from dataclasses import replace
from datetime import date, datetime
from typing import Any
from urllib.parse import urlparse

import pandas as pd
import streamlit as st
from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from analytics import before_after as ba
from analytics import changepoints as cp
from analytics import coverage, evidence, outcomes, rates, setup, verdicts
from ciflake.config import Config, load_config
from ciflake.events import all_events
from dashboard import derive
from dashboard.filters import Filters
from store import queries
from store.engine import DatabaseURLError, make_engine
from store.migrate import current_revision, head_revision

TTL = "5m"
EXCERPT_BEFORE, EXCERPT_AFTER = 30, 10  # log lines shown around a matched line
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
# What a logical job carries of its run.
RUN_COLUMNS = [
    "run_id",
    "workflow_path",
    "lineage",
    "tags",
    "event",
    "head_branch",
    "head_sha",
    "created_at",
    "html_url",
]


@st.cache_resource
def config_for(config_path: str | None, db_url: str | None) -> Config:
    return load_config(config_path, db_url=db_url)


def current_config() -> Config:
    """The config as ``ciflake dashboard`` passed it: CIFLAKE_CONFIG and CIFLAKE_DB_URL."""
    return config_for(os.environ.get("CIFLAKE_CONFIG"), os.environ.get("CIFLAKE_DB_URL"))


@st.cache_resource
def engine(db_url: str) -> Engine:
    """A read-only engine: the dashboard never writes or migrates the collector's database."""
    return make_engine(db_url, read_only=True)


@st.cache_data(ttl="1m")
def database_problem(db_url: str) -> str | None:
    """Why the database cannot be shown yet, with the command that fixes it; None when fine."""
    try:
        revision = current_revision(engine(db_url))
    except (DatabaseURLError, SQLAlchemyError) as exc:
        return f"The database cannot be opened ({exc}). Run `ciflake collect --once` to create it."
    if revision is None:
        return "The database is empty. Run `ciflake db upgrade`, then `ciflake collect --once`."
    if revision != head_revision():
        return (
            f"The database schema is at {revision}, this version needs {head_revision()}. "
            "Run `ciflake db upgrade`."
        )
    if not queries.repositories(engine(db_url)):
        return "No runs collected yet. Run `ciflake collect --once`."
    return None


@st.cache_data(ttl=TTL)
def repositories(db_url: str) -> list[str]:
    return queries.repositories(engine(db_url))


@st.cache_data(ttl=TTL)
def day_span(db_url: str, repo: str) -> tuple[date, date]:
    """The first and last day with runs: the default date range."""
    oldest, newest = queries.run_span(engine(db_url), repo)
    today = pd.Timestamp.now(tz="UTC").date()
    return (oldest or newest or pd.Timestamp(today)).date(), (newest or pd.Timestamp(today)).date()


@st.cache_data(ttl="1m")
def last_collect(db_url: str, repo: str) -> datetime | None:
    row = queries.last_sync(engine(db_url), repo)
    return None if row is None else (row.finished_at or row.started_at)


@st.cache_data(ttl=TTL)
def is_simulated(db_url: str, repo: str) -> bool:
    """Runs whose web address is on a loopback host came from fakehub, not GitHub."""
    url = queries.latest_run_url(engine(db_url), repo)
    return url is not None and urlparse(url).hostname in LOOPBACK_HOSTS


def _tagged_paths(config: Config, tags: tuple[str, ...]) -> tuple[str, ...]:
    """The workflow files carrying any of ``tags`` (no tags: every workflow, no filter)."""
    if not tags:
        return ()
    return tuple(w.path for w in config.workflows if set(w.tags) & set(tags)) or ("<none>",)


def _where(filters: Filters, *, dated: bool = False) -> queries.RunFilter:
    """The SQL filter: repository, tagged workflows and scope, and by default every date: the
    shared frames cut dates in pandas (``_dated``), so every date range shares one load."""
    config = current_config()
    paths = _tagged_paths(config, filters.tags)
    return filters.run_filter(paths, dated=dated, default_branch=config.default_branch)


def _dated(frame: pd.DataFrame, filters: Filters) -> pd.DataFrame:
    window = filters.run_filter(())
    return frame[(frame["created_at"] >= window.since) & (frame["created_at"] < window.until)]


# The three shared frames below are cached as resources: one object shared by every loader and
# session, never pickled on store nor copied on each hit (cache_data would do both, and at a
# million jobs that costs more than computing a page). Callers must not modify them in place;
# pandas filters and ``assign`` return new frames.
@st.cache_resource(ttl=TTL)
def _all_runs(db_url: str, where: queries.RunFilter) -> pd.DataFrame:
    config, eng = current_config(), engine(db_url)
    attempts = queries.load_attempts(eng, where, reruns_only=True)
    runs = outcomes.logical_runs(queries.run_outcomes(eng, where), attempts)
    runs = outcomes.attach_lineage(runs, setup.workflow_table(config.workflows))
    return outcomes.with_run_categories(runs, _all_failures(db_url, where))


@st.cache_resource(ttl=TTL)
def _all_failures(db_url: str, where: queries.RunFilter) -> pd.DataFrame:
    return queries.load_failures(engine(db_url), where, detail=())


# What before/after and the category mix read of a logical run, and coverage of a logical job:
# merging only these keeps every other (string) column out of the window joins.
WINDOW_RUN_COLUMNS = [
    "run_id",
    "lineage",
    "created_at",
    "logical_outcome",
    "failure_category",
    "failure_basis",
    "event",
    "head_branch",
]
COVERAGE_JOB_COLUMNS = [
    "run_id",
    "lineage",
    "workflow_path",
    "logical_job",
    "logical_outcome",
    "created_at",
]
COVERAGE_LOST_COLUMNS = [
    "event_pr",
    "event_title",
    "lineage",
    "logical_job",
    "successor_job",
    "before_runs",
    "last_run_at",
    "last_workflow_path",
]
# What a successor's first-runs strip reads of a run (event and branch: for the scope).
STRIP_RUN_COLUMNS = [
    "run_id",
    "workflow_path",
    "created_at",
    "logical_outcome",
    "failure_category",
    "html_url",
    "event",
    "head_branch",
]


@st.cache_resource(ttl=TTL)
def runs(db_url: str, filters: Filters, *, dated: bool = True) -> pd.DataFrame:
    """Logical runs in scope with lineage, tags and failure_category; ``dated``: in the
    date range only. Shared by the loaders of a page (a resource: do not modify it)."""
    frame = _all_runs(db_url, _where(filters))
    return _dated(frame, filters) if dated else frame


@st.cache_resource(ttl=TTL)
def _all_jobs(db_url: str, where: queries.RunFilter) -> pd.DataFrame:
    run_columns = _all_runs(db_url, where)[RUN_COLUMNS]
    attempts = queries.job_outcomes(engine(db_url), where)
    attempts = attempts.assign(started_at=pd.NaT, completed_at=pd.NaT)
    jobs = outcomes.logical_jobs(attempts, run_columns, current_config().job_name_strip)
    return jobs.assign(category=verdicts.job_categories(jobs, _all_failures(db_url, where)))


@st.cache_resource(ttl=TTL)
def jobs(db_url: str, filters: Filters, *, dated: bool = True) -> pd.DataFrame:
    """Logical jobs in scope, with the category of their last red shard. Shared by the
    loaders of a page (a resource: do not modify it)."""
    frame = _all_jobs(db_url, _where(filters))
    return _dated(frame, filters) if dated else frame


def events(db_url: str) -> pd.DataFrame:
    """Change events of the config and of the database (analytics.setup.event_table)."""
    return setup.event_table(all_events(current_config(), engine(db_url)))


# ---- Overview -------------------------------------------------------------------------------


@st.cache_data(ttl=TTL)
def tiles(db_url: str, filters: Filters) -> pd.DataFrame:
    """Status tiles per lineage and per workflow (derive.tile_statuses)."""
    config = current_config()
    frame = runs(db_url, filters)
    _, newest = queries.run_span(engine(db_url), filters.repo)
    by_lineage = derive.tile_statuses(
        frame, "lineage", newest, config.stale_factor, config.min_runs
    )
    by_workflow = derive.tile_statuses(
        frame, "workflow_path", newest, config.stale_factor, config.min_runs
    )
    return pd.concat(
        [by_lineage.assign(level="lineage"), by_workflow.assign(level="workflow")],
        ignore_index=True,
    )


@st.cache_data(ttl=TTL)
def timeline(db_url: str, filters: Filters, freq: str) -> pd.DataFrame:
    """Success rate with its Wilson interval per lineage and day or week."""
    frame = runs(db_url, filters)
    if frame.empty:
        return rates.stability(frame.assign(period=pd.NaT), ["lineage", "period"])
    periods = rates.with_period(frame, freq)
    return rates.stability(periods, ["lineage", "period"], current_config().min_runs)


@st.cache_data(ttl=TTL)
def heatmap(db_url: str, filters: Filters, workflow_path: str, days: int) -> pd.DataFrame:
    """Cells of the job x day grid of one workflow, the last ``days`` days of the range. Only
    that workflow's jobs are loaded: the overview needs no other job."""
    where = replace(_where(filters), paths=(workflow_path,))
    return derive.job_day_cells(_dated(_all_jobs(db_url, where), filters), days)


# ---- Migrations -----------------------------------------------------------------------------


@st.cache_data(ttl=TTL)
def before_after(db_url: str, filters: Filters) -> pd.DataFrame:
    config = current_config()
    return ba.before_after(
        _all_runs(db_url, _where(filters))[WINDOW_RUN_COLUMNS],
        events(db_url),
        window_days=config.window_days,
        first_runs=config.first_runs,
        scope=filters.scope,
        default_branch=config.default_branch,
        min_runs=config.min_runs,
        lineages=sorted({w.lineage for w in config.workflows}),
    )


def _window_mix_args(db_url: str, filters: Filters) -> dict[str, Any]:
    """What category_shift and basis_mix read: the windowed runs and the same settings."""
    config = current_config()
    return {
        "runs": _all_runs(db_url, _where(filters))[WINDOW_RUN_COLUMNS],
        "events": events(db_url),
        "window_days": config.window_days,
        "scope": filters.scope,
        "default_branch": config.default_branch,
        "lineages": sorted({w.lineage for w in config.workflows}),
    }


@st.cache_data(ttl=TTL)
def category_shift(db_url: str, filters: Filters) -> pd.DataFrame:
    return ba.category_shift(**_window_mix_args(db_url, filters))


@st.cache_data(ttl=TTL)
def before_after_known(db_url: str, filters: Filters) -> pd.DataFrame:
    """The before/after table with how much of each side's category mix is known, as
    ``ciflake export before-after`` writes it (the Export page's CSV)."""
    known = ba.basis_mix(**_window_mix_args(db_url, filters))
    return ba.with_basis(before_after(db_url, filters), known)


@st.cache_data(ttl=TTL)
def basis_mix(db_url: str, filters: Filters) -> pd.DataFrame:
    """How much of each event's red-run category mix is known, per side (ba.basis_mix)."""
    return ba.basis_mix(**_window_mix_args(db_url, filters), per_lineage=False)


@st.cache_data(ttl=TTL)
def successor_first_runs(db_url: str, filters: Filters) -> pd.DataFrame:
    config = current_config()
    frame = _all_runs(db_url, _where(filters))[STRIP_RUN_COLUMNS]
    return derive.successor_first_runs(frame, events(db_url), config.first_runs, config.window_days)


@st.cache_data(ttl=TTL)
def changepoints(db_url: str, filters: Filters) -> pd.DataFrame:
    """The dates where a lineage's red rate shifted in the range (analytics.changepoints),
    each with what changed in its job set that day and the nearest change event that touches
    its lineage. Job set changes are read over every date: the first run of a workflow in the
    range is not its first run."""
    found = cp.lineage_changepoints(
        runs(db_url, filters),
        runs(db_url, filters, dated=False),
        queries.daily_job_presence(engine(db_url), _where(filters)),
    )
    return cp.nearest_events(found, events(db_url))


@st.cache_data(ttl=TTL)
def coverage_lost(db_url: str, filters: Filters) -> pd.DataFrame:
    """Logical jobs that ran in the window before an event (of any kind) and have no
    successor after it (analytics.coverage)."""
    config, table = current_config(), events(db_url)
    diff = coverage.coverage_diff(
        jobs(db_url, filters, dated=False)[COVERAGE_JOB_COLUMNS],
        table,
        setup.job_renames(config.lineages),
        window_days=config.window_days,
        kinds=tuple(table["event_kind"].unique()),
    )
    return coverage.lost_jobs(diff)[COVERAGE_LOST_COLUMNS]


# ---- Failures -------------------------------------------------------------------------------


@st.cache_data(ttl=TTL)
def failure_periods(db_url: str, filters: Filters, freq: str) -> pd.DataFrame:
    """Failures per category and day or week. Columns: period, category, failures."""
    paths = _tagged_paths(current_config(), filters.tags)
    days = queries.daily_failure_counts(engine(db_url), filters.run_filter(paths))
    periods = rates.with_period(days, freq, "day")
    return periods.groupby(["period", "category"], as_index=False)["failures"].sum()


FAILURE_KEYS = ["run_id", "run_attempt", "job_id"]


@st.cache_data(ttl=TTL)
def failure_bases(db_url: str, filters: Filters) -> pd.DataFrame:
    """The failures the categories chart counts, each with its stage and basis
    (analytics.evidence). Columns: run_id, run_attempt, job_id, category, stage, basis."""
    paths = _tagged_paths(current_config(), filters.tags)
    failures = queries.load_failures(engine(db_url), filters.run_filter(paths), detail=())
    failures = failures.assign(basis=evidence.failure_basis(failures))
    return failures[[*FAILURE_KEYS, "category", "stage", "basis"]]


@st.cache_data(ttl=TTL)
def signatures(db_url: str, filters: Filters) -> pd.DataFrame:
    paths = _tagged_paths(current_config(), filters.tags)
    table = queries.signature_summary(engine(db_url), filters.run_filter(paths))
    return derive.mark_new(table, pd.Timestamp(filters.last_day, tz="UTC"))


@st.cache_data(ttl=TTL)
def signature_failures(db_url: str, filters: Filters, signature: str) -> pd.DataFrame:
    """The newest failures with ``signature`` (store.queries.signature_failures), with their
    basis (analytics.evidence)."""
    paths = _tagged_paths(current_config(), filters.tags)
    found = queries.signature_failures(engine(db_url), signature, filters.run_filter(paths))
    return found.assign(basis=evidence.failure_basis(found))


@st.cache_data(ttl=TTL)
def log_excerpt(db_url: str, job_id: int, line_number: float | None) -> tuple[int, str] | None:
    """(first line number, text) of the archived log around the matched line, or None when
    there is no log or no line. Logs are zlib-compressed as the collector stores them."""
    stored = queries.job_log(engine(db_url), job_id) if job_id else None
    if stored is None or line_number is None or pd.isna(line_number):
        return None
    content, compression = stored
    raw = zlib.decompress(content) if compression == "zlib" else content
    lines = raw.decode("utf-8", errors="replace").splitlines()
    first = max(0, int(line_number) - 1 - EXCERPT_BEFORE)
    return first + 1, "\n".join(lines[first : int(line_number) + EXCERPT_AFTER])


# ---- Flaky jobs -----------------------------------------------------------------------------


@st.cache_data(ttl=TTL)
def flaky_jobs(db_url: str, filters: Filters) -> pd.DataFrame:
    """Logical jobs ranked by the Wilson lower bound of their flake rate."""
    frame = jobs(db_url, filters)
    table = rates.stability(frame, ["lineage", "logical_job"], current_config().min_runs)
    return rates.rank_by_lower_bound(table, "flake_rate")


@st.cache_data(ttl=TTL)
def job_verdicts(db_url: str, filters: Filters) -> pd.DataFrame:
    """Every failed logical job with its verdict and evidence (analytics.verdicts)."""
    frame = jobs(db_url, filters)
    return verdicts.job_verdicts(frame, _all_failures(db_url, _where(filters)))


# ---- Runners and environments ---------------------------------------------------------------


@st.cache_data(ttl=TTL)
def runner_rates(db_url: str, filters: Filters, by: str) -> pd.DataFrame:
    """Stability of logical jobs per runner pool or runner, with "works elsewhere"."""
    frame = derive.with_runner_pool(jobs(db_url, filters))
    table = rates.stability(frame, [by], current_config().min_runs)
    table = table.merge(derive.works_elsewhere(frame, by), on=by, how="left")
    table["failed_jobs"] = table["failed_jobs"].fillna(0).astype(int)
    table = table.assign(
        fail_rate=1 - table["success_rate"],
        fail_rate_low=1 - table["success_rate_high"],
        fail_rate_high=1 - table["success_rate_low"],
    )
    return rates.rank_by_lower_bound(table, "fail_rate")


@st.cache_data(ttl=TTL)
def environment_failures(db_url: str, filters: Filters) -> pd.DataFrame:
    """Failures per environment fact (cann, driver, torch...) and version, with the runners
    and categories they hit."""
    failures = queries.load_failures(engine(db_url), _where(filters, dated=True), detail=("env",))
    return derive.environment_failures(failures, jobs(db_url, filters))
