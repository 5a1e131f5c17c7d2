"""Report tables of change events: stability before and after, the coverage an event lost."""

from __future__ import annotations

import pandas as pd
from sqlalchemy import Engine

from analytics import coverage
from analytics.before_after import as_exported, basis_mix, before_after
from analytics.config_tables import config_lineages, job_renames
from analytics.frames import logical_run_frame
from reports.query import Query
from reports.table_inputs import events_of, logical_jobs_of
from reports.table_spec import ReportTable
from store.incidents import load_members
from store.project import Project

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


COVERAGE_LOST_COLUMNS = list(coverage.LOST_COLUMNS)


def before_after_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    """The events dated within the query's since/until; each one's windows read over every
    date (an event's windows are its own, whatever the range)."""
    events = events_of(engine, project)
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
    events = events_of(engine, project)
    diff = coverage.coverage_diff(
        logical_jobs_of(engine, project, query, dated=False),
        events,
        job_renames(project.lineages),
        window_days=project.analysis.window_days,
        kinds=tuple(events["event_kind"].unique()),
    )
    return coverage.lost_jobs(diff)[COVERAGE_LOST_COLUMNS]


TABLES = (
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
)
