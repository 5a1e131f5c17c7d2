"""Report tables of the Overview page: changepoints of a lineage's red rate."""

from __future__ import annotations

import pandas as pd
from sqlalchemy import Engine

from analytics import changepoints as cp
from analytics.frames import logical_run_frame
from reports.query import Query
from reports.table_inputs import events_of
from reports.table_spec import ReportTable
from store.page_queries import daily_job_presence
from store.project import Project

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
    return cp.nearest_events(found, events_of(engine, project))[CHANGEPOINTS_COLUMNS]


TABLES = (
    ReportTable(
        "changepoints",
        "a date where a lineage's red rate shifted",
        CHANGEPOINTS_COLUMNS,
        changepoints_table,
    ),
)
