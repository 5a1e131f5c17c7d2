"""Report tables of the Overview page: the status tiles, the stability timeline and its
incidents, the changepoints of a lineage's red rate, the job x day grid of a workflow.

The timeline, the changepoints and the grid read their counts with one aggregated statement
over the derived tables while they are current (store.overview_counts); otherwise the same
counts come from the frames of raw rows (analytics.overview_counts), and the same code makes
the tables of them. The status tiles read every run of the range (STALE's usual gap), from the
derived tables with only the columns a tile reads."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
from sqlalchemy import Engine

from analytics import changepoints as cp
from analytics import overview_counts, rates, recent, sequences
from analytics.frames import logical_job_frame, logical_run_frame
from analytics.once import INCIDENT, stability_once
from reports.query import Query
from reports.table_inputs import (
    derived_current,
    events_of,
    shared_counts,
    silent_workflows_of,
    with_lineage,
)
from reports.table_spec import ReportTable
from store import incidents
from store import overview_counts as counts_sql
from store.overview_counts import JOB_DAY_KEYS, RUN_COUNT_KEYS
from store.page_queries import daily_job_presence, run_span
from store.project import Project
from store.runfilter import RunFilter

STATUS_COLUMNS = [
    "level",
    "name",
    "status",
    "recent_days",
    "runs",
    "pass",
    "success_rate",
    "success_rate_low",
    "success_rate_high",
    "label",
    "runs_once",
    "success_rate_once",
    "success_rate_low_once",
    "success_rate_high_once",
    "label_once",
    "previous_runs",
    "previous_rate",
    "previous_rate_low",
    "previous_rate_high",
    "trend",
    "trend_p",
    "sparkline",
    "last_run",
    "last_run_url",
    "usual_gap_hours",
    "silent_hours",
    "silent_reason",
    "silent_detail",
    "silent_since",
    "retired_at",
    "retired_by",
    "successors",
]
STABILITY_COLUMNS = [
    "lineage",
    "period",
    "runs",
    "pass",
    "flaky",
    "fail",
    "excluded",
    "success_rate",
    "success_rate_low",
    "success_rate_high",
    "eventual_success",
    "eventual_success_low",
    "eventual_success_high",
    "flake_rate",
    "flake_rate_low",
    "flake_rate_high",
    "enough_data",
    "runs_once",
    "pass_once",
    "flaky_once",
    "fail_once",
    "success_rate_once",
    "success_rate_low_once",
    "success_rate_high_once",
    "eventual_success_once",
    "eventual_success_low_once",
    "eventual_success_high_once",
    "flake_rate_once",
    "flake_rate_low_once",
    "flake_rate_high_once",
]
INCIDENT_LINEAGE_COLUMNS = [*incidents.INCIDENT_COLUMNS, "lineage"]
JOB_DAY_COLUMNS = overview_counts.CELL_COLUMNS
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


def run_counts(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    """The query's logical runs over every date per workflow, day, outcome, incident and
    whether in the query's dates (store.overview_counts.run_counts), with their lineage. One
    statement shared by the timeline and the changepoints, and by every date range of whole
    days (reports.table_inputs.shared_counts, keyed on the filter of every date and the bounds
    off midnight, the only ones the statement marks)."""
    since, until = (
        overview_counts.off_midnight(query.since),
        overview_counts.off_midnight(query.until),
    )
    every = query.where(project, dated=False)

    def compute(current: bool) -> pd.DataFrame:
        if current:
            found = counts_sql.run_counts(engine, every, since, until)
            counts = overview_counts.canonical(found, RUN_COUNT_KEYS)
        else:
            runs = logical_run_frame(engine, project, every, lean=True)
            members = incidents.load_members(engine, every)
            counts = overview_counts.run_counts(runs, members, since, until)
        return with_lineage(counts, project)

    marked = replace(every, since=since, until=until)  # the key: what the statement reads
    counts = shared_counts("overview run counts", engine, project, marked, compute)
    return overview_counts.in_dates(counts, query.since, query.until)


def stability_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    """Per lineage and period (the query's: day or week), the logical runs' counts and rates,
    as they are and with each incident's red runs counted once (analytics.once)."""
    counts = run_counts(engine, project, query)
    counts = rates.with_period(counts[counts["in_range"] == 1], query.period, column="day")
    by, min_runs = ["lineage", "period"], project.analysis.min_runs
    return stability_once(counts, counts[INCIDENT], by, min_runs, weight="runs")


def changepoints_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    """Dates in the range where a lineage's red rate shifted, with what changed in its job set
    that day (read over every date) and the nearest change event touching the lineage."""
    every = run_counts(engine, project, query)
    where = query.where(project, dated=False)
    presence = shared_counts(  # every date's: a new date range reads no job again
        "job presence",
        engine,
        project,
        where,
        lambda current: daily_job_presence(engine, where, rolled=current),
    )
    found = cp.counted_changepoints(every[every["in_range"] == 1], every, presence)
    return cp.nearest_events(found, events_of(engine, project))[CHANGEPOINTS_COLUMNS]


def status_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    """A status tile per lineage, then per workflow (analytics.recent.tile_tables): the last
    ``recent_days`` before the repository's newest run (or the query's end, if earlier)."""
    where = query.where(project)
    _, newest = run_span(engine, project.repo)
    reference = pd.Timestamp(newest) if newest else None
    if reference is not None and query.until is not None:
        reference = min(reference, pd.Timestamp(query.until))
    runs = _tile_runs(engine, project, where, reference)
    counts = run_counts(engine, project, query)  # the sparklines': shared with the timeline
    tiles = recent.tile_tables(
        runs,
        reference,
        events_of(engine, project),
        project.analysis,
        recent_days=project.analysis.recent_days,
        silent=silent_workflows_of(engine, project),
        members=incidents.load_members(engine, where),
        counts=counts[counts["in_range"] == 1],
    )
    return tiles.reindex(columns=STATUS_COLUMNS)


def _tile_runs(
    engine: Engine, project: Project, where: RunFilter, reference: pd.Timestamp | None
) -> pd.DataFrame:
    """The logical runs of ``where`` with what a tile reads (analytics.recent.TILE_COLUMNS):
    from the derived tables, only those columns, the outcomes only of the runs a tile's
    windows before ``reference`` hold and of the two latest counted runs of the workflows
    whose FAILING hangs on an older one, and the web address of each workflow's newest run
    alone (a lineage's newest is one of them), the only one a tile shows."""
    if not derived_current(engine, project):
        return logical_run_frame(engine, project, where, lean=True)
    after = None  # a day more than the windows: their edges never hang on a rounding
    if reference is not None:
        after = (
            reference - pd.Timedelta(days=2 * project.analysis.recent_days + 1)
        ).to_pydatetime()
    runs = counts_sql.tile_runs(engine, where, after)
    # Each text key hashed once, as the tiles' categories (sorted, as astype gives them), and
    # the lineage of each of the few workflows rather than of every run.
    paths = runs["workflow_path"].astype("category")
    known = with_lineage(pd.DataFrame({"workflow_path": paths.cat.categories}), project)
    names = pd.Index(sorted(set(known["lineage"])))
    codes = names.get_indexer(known["lineage"])
    lineage = pd.Categorical.from_codes(codes[paths.cat.codes.to_numpy()], categories=names)
    urls = counts_sql.run_urls(engine, _newest_runs(paths, runs["created_at"], runs["run_id"]))
    runs = runs.assign(workflow_path=paths, lineage=lineage, html_url=runs["run_id"].map(urls))
    return _with_latest_counted(engine, where, runs)


def _with_latest_counted(engine: Engine, where: RunFilter, runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with the outcomes of the two latest counted runs of each workflow whose status
    may hang on one not read (analytics.recent.failing_unread): a lineage's two latest counted
    runs are each one of its workflow's two latest."""
    paths = recent.failing_unread(runs)
    if not paths:
        return runs
    latest = counts_sql.latest_counted(engine, where, paths, 2)
    found = dict(zip(latest["run_id"], latest["logical_outcome"], strict=True))
    read = runs["logical_outcome"]
    unread = read.isna().to_numpy()
    values = read.to_numpy(dtype=object)
    values[unread] = [found.get(run_id) for run_id in runs["run_id"].to_numpy()[unread]]
    return runs.assign(logical_outcome=pd.Series(values, index=runs.index, dtype=read.dtype))


def _newest_runs(paths: pd.Series, created: pd.Series, run_ids: pd.Series) -> list[int]:
    """Each workflow's newest run (its latest time, then its largest id), as two groupbys
    found it, on numpy positions (analytics.sequences): a quarter of a millisecond, not four."""
    runs = pd.DataFrame({"path": paths, "created_at": created, "run_id": run_ids})
    dated = np.flatnonzero(runs.notna().all(axis=1).to_numpy())
    rows, group = sequences.ordered(runs, ["path"], dated, ["created_at", "run_id"])
    return [int(run_id) for run_id in run_ids.to_numpy()[rows[sequences.neighbours(group)[1] < 0]]]


def incident_lineages_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    """The incidents with a failure in a run of the query, a row per lineage they hit there."""
    hits = with_lineage(counts_sql.incident_workflows(engine, query.where(project)), project)
    found = incidents.load_incidents(engine, project.repo)
    return overview_counts.incident_lineages(found, hits)


def job_days_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    """The job x day grid of the query's workflows: per logical job and UTC day with counted
    runs, its worst state and how many runs."""
    where = query.where(project)
    if derived_current(engine, project):
        windows = [
            (w.workflow, w.start, w.end)
            for w in project.invalid_windows
            if not where.paths or w.workflow in where.paths
        ]
        found = counts_sql.job_day_counts(engine, where, windows)
        counts = overview_counts.canonical(found, JOB_DAY_KEYS)
    else:
        runs = logical_run_frame(engine, project, where, lean=True)
        jobs = logical_job_frame(engine, project, where, runs, lean=True)
        counts = overview_counts.job_day_counts(jobs)
    return overview_counts.job_day_cells(counts)


TABLES = (
    ReportTable(
        "status",
        "a lineage or workflow: its status tile (docs/vocabulary.md, Tiles)",
        STATUS_COLUMNS,
        status_table,
    ),
    ReportTable(
        "stability",
        "a lineage and period (a week, or a day): success rates, as they are and counted once",
        STABILITY_COLUMNS,
        stability_table,
    ),
    ReportTable(
        "incident-lineages",
        "an incident with a failure in the range and a lineage it hit",
        INCIDENT_LINEAGE_COLUMNS,
        incident_lineages_table,
        category_column="category",
    ),
    ReportTable(
        "job-days",
        "a logical job and UTC day of the selected workflows: its worst state and runs",
        JOB_DAY_COLUMNS,
        job_days_table,
    ),
    ReportTable(
        "changepoints",
        "a date where a lineage's red rate shifted",
        CHANGEPOINTS_COLUMNS,
        changepoints_table,
    ),
)
