"""The frames several report tables start from: a query's logical runs and jobs, the change
events, the lineage of a workflow's rows."""

from __future__ import annotations

import pandas as pd
from sqlalchemy import Engine

from analytics.config_tables import event_table, workflow_table
from analytics.frames import logical_job_frame, logical_run_frame
from analytics.outcomes import attach_lineage
from reports.query import Query
from store.events import all_events
from store.project import Project


def logical_runs_of(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    return logical_run_frame(engine, project, query.where(project))


def logical_jobs_of(
    engine: Engine, project: Project, query: Query, *, dated: bool = True
) -> pd.DataFrame:
    where = query.where(project, dated=dated)
    return logical_job_frame(engine, project, where, logical_run_frame(engine, project, where))


def events_of(engine: Engine, project: Project) -> pd.DataFrame:
    return event_table(all_events(project, engine))


def with_lineage(frame: pd.DataFrame, project: Project) -> pd.DataFrame:
    return attach_lineage(frame, workflow_table(project.workflows))
