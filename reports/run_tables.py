"""Report tables of runs and jobs as GitHub reported them, one row each."""

from __future__ import annotations

import pandas as pd
from sqlalchemy import Engine

from analytics.frames import RUN_CONTEXT
from analytics.outcomes import normalise_job_names
from reports.query import Query
from reports.table_inputs import logical_runs_of, with_lineage
from reports.table_spec import ReportTable
from store.frame_queries import load_failures, load_jobs, load_runs
from store.project import Project

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


def runs_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    return logical_runs_of(engine, project, query)[RUNS_COLUMNS]


def jobs_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    where = query.where(project)
    runs = load_runs(engine, where)[["run_id", "workflow_path"]]
    jobs = load_jobs(engine, where).rename(columns={"name": "job_name"})
    jobs = with_lineage(jobs.merge(runs, on="run_id", how="left"), project)
    category = load_failures(engine, where).drop_duplicates("job_id").set_index("job_id")
    jobs = jobs.assign(
        logical_job=normalise_job_names(jobs["job_name"], project.job_name_strip),
        labels=jobs["labels"].map(lambda labels: ";".join(labels or [])),
        failure_category=jobs["job_id"].map(category["category"]),
        evidence=jobs["job_id"].map(category["evidence"]),
    )
    return jobs[JOBS_COLUMNS]


TABLES = (
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
)
