"""The frames analytics.frames assembles logical runs and jobs from: one loader per frame.
Filters run in SQL on the run (repo, creation time, workflow path), so a page asks only for the
runs it shows. Times come back tz-aware UTC."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from sqlalchemy import String, func, select, type_coerce

from store.models import (
    Failure,
    Job,
    JobLog,
    LogicalJob,
    LogicalRun,
    RunAttempt,
    Workflow,
    WorkflowRun,
)
from store.runfilter import Bind, RunFilter, conclusion, filtered, raw_frame

if TYPE_CHECKING:  # pandas is imported where it is used: a collect never needs it
    import pandas as pd


def load_runs(engine: Bind, where: RunFilter = RunFilter()) -> pd.DataFrame:
    """One row per run as GitHub reports it now (its latest attempt), with the workflow's name.

    Columns: run_id, repo, workflow_id, workflow_path, workflow_name, event, head_branch,
    head_sha, run_number, run_attempt, status, conclusion, created_at, html_url."""
    run = WorkflowRun
    stmt = (
        select(*_run_columns(lean=False))
        .outerjoin(Workflow, Workflow.id == run.workflow_id)
        .order_by(run.created_at, run.id)
    )
    return raw_frame(engine, filtered(stmt, where), ("created_at",))


def _run_columns(*, lean: bool) -> list[Any]:
    """The columns of ``load_runs`` or, ``lean``, of ``run_outcomes``."""
    run = WorkflowRun
    if lean:
        return [
            run.id.label("run_id"),
            run.workflow_path,
            run.event,
            run.head_branch,
            run.head_sha,
            run.run_attempt,
            conclusion(run),
            run.created_at,
            run.html_url,
        ]
    return [
        run.id.label("run_id"),
        run.repo,
        run.workflow_id,
        run.workflow_path,
        func.coalesce(Workflow.name, run.name).label("workflow_name"),
        run.event,
        run.head_branch,
        run.head_sha,
        run.run_number,
        run.run_attempt,
        run.status,
        conclusion(run),
        run.created_at,
        run.html_url,
    ]


def run_outcomes(engine: Bind, where: RunFilter = RunFilter()) -> pd.DataFrame:
    """The selected runs with only what logical outcomes and the dashboard's pages read, in no
    particular order: run_id, workflow_path, event, head_branch, head_sha, run_attempt,
    conclusion, created_at, html_url."""
    stmt = select(*_run_columns(lean=True))
    return raw_frame(engine, filtered(stmt, where), ("created_at",))


def load_attempts(
    engine: Bind, where: RunFilter = RunFilter(), *, reruns_only: bool = False
) -> pd.DataFrame:
    """Every stored attempt of the selected runs. Columns: run_id, attempt, status, conclusion.
    ``reruns_only``: only of runs with more than one attempt, the only ones whose logical
    outcome the attempts change (analytics.outcomes.logical_runs)."""
    att = RunAttempt
    stmt = (
        select(att.run_id, att.attempt, att.status, conclusion(att))
        .join(WorkflowRun, WorkflowRun.id == att.run_id)
        .order_by(att.run_id, att.attempt)
    )
    if reruns_only:
        stmt = stmt.where(WorkflowRun.run_attempt > 1)
    return raw_frame(engine, filtered(stmt, where))


def load_jobs(engine: Bind, where: RunFilter = RunFilter()) -> pd.DataFrame:
    """Every job of every attempt of the selected runs.

    Columns: job_id, run_id, run_attempt, name, status, conclusion, created_at, started_at,
    completed_at, runner_name, runner_group_name, labels (a tuple of str), html_url."""
    stmt = (
        select(
            Job.id.label("job_id"),
            Job.run_id,
            Job.run_attempt,
            Job.name,
            Job.status,
            conclusion(Job),
            Job.created_at,
            Job.started_at,
            Job.completed_at,
            Job.runner_name,
            Job.runner_group_name,
            type_coerce(Job.labels, String).label("labels"),
            Job.html_url,
        )
        .join(WorkflowRun, WorkflowRun.id == Job.run_id)
        .order_by(Job.run_id, Job.run_attempt, Job.id)
    )
    times = ("created_at", "started_at", "completed_at")
    frame = raw_frame(engine, filtered(stmt, where), times)
    return frame.assign(labels=label_tuples(frame["labels"]))


FAILURE_DETAIL = ("rule", "signature", "line", "env")


def load_failures(
    engine: Bind, where: RunFilter = RunFilter(), *, detail: tuple[str, ...] = FAILURE_DETAIL
) -> pd.DataFrame:
    """The classified failures of the selected runs (``job_id`` 0: the run itself).

    Columns: run_id, run_attempt, job_id, category, evidence, stage, log_status (of the job's
    log; None for a run without jobs), then the ``detail`` columns asked for, of rule,
    signature, line and env (dict): run and job categories need none."""
    fail = Failure
    columns = {
        "rule": fail.rule,
        "signature": fail.signature,
        "line": fail.line,
        "env": type_coerce(fail.env, String).label("env"),
    }
    stmt = (
        select(
            fail.run_id,
            fail.run_attempt,
            fail.job_id,
            fail.category,
            fail.evidence,
            fail.stage,
            JobLog.status.label("log_status"),
        )
        .add_columns(*(columns[name] for name in detail))
        .join(WorkflowRun, WorkflowRun.id == fail.run_id)
        .outerjoin(JobLog, JobLog.job_id == fail.job_id)
        .order_by(fail.run_id, fail.run_attempt, fail.job_id)
    )
    frame = raw_frame(engine, filtered(stmt, where))
    if "env" in detail:
        frame["env"] = _json_values(frame["env"])
    return frame


def _json_values(
    column: pd.Series, convert: Callable[[Any], Any] = lambda value: value
) -> pd.Series:
    """JSON values of ``column`` through ``convert``: JSON text fetched raw (SQLite) is parsed
    once per distinct text (a million jobs carry a few dozen label sets); a driver that parses
    JSON itself (psycopg) hands over values that are converted row by row. None stays None."""
    import numpy as np
    import pandas as pd

    sample = next((v for v in column if v is not None), None)
    if sample is not None and not isinstance(sample, str):
        values = [None if v is None else convert(v) for v in column]
        return pd.Series(values, index=column.index, dtype="object")
    codes, distinct = pd.factorize(column)
    parsed = np.empty(len(distinct) + 1, dtype=object)  # the last slot: None (code -1)
    parsed[: len(distinct)] = [convert(json.loads(text)) for text in distinct]
    return pd.Series(parsed[codes], index=column.index, dtype="object")


def label_tuples(column: pd.Series) -> pd.Series:
    """Runner labels as tuples of str, the one type every frame carries (hashable, so pandas
    groups by them)."""
    return _json_values(column, tuple)


def json_dicts(column: pd.Series) -> pd.Series:
    """JSON objects (a failure's ``env``) fetched as text or parsed by the driver, as dicts."""
    return _json_values(column)


def job_times(engine: Bind, where: RunFilter = RunFilter()) -> pd.DataFrame:
    """Every job of every attempt of the selected runs, only what repair time, retry tax and
    percentiles read (analytics.health.health_table), in no particular order: run_id,
    run_attempt, created_at, started_at, completed_at, runner_name, labels (a tuple of str)."""
    stmt = select(
        Job.run_id,
        Job.run_attempt,
        Job.created_at,
        Job.started_at,
        Job.completed_at,
        Job.runner_name,
        type_coerce(Job.labels, String).label("labels"),
    ).join(WorkflowRun, WorkflowRun.id == Job.run_id)
    frame = raw_frame(engine, filtered(stmt, where), ("created_at", "started_at", "completed_at"))
    return frame.assign(labels=label_tuples(frame["labels"]))


def job_outcomes(engine: Bind, where: RunFilter = RunFilter()) -> pd.DataFrame:
    """Every job of every attempt of the selected runs, only what outcomes need: job_id,
    run_id, run_attempt, name, conclusion, runner_name, labels (a tuple of str)."""
    stmt = select(
        Job.id.label("job_id"),
        Job.run_id,
        Job.run_attempt,
        Job.name,
        conclusion(Job),
        Job.runner_name,
        type_coerce(Job.labels, String).label("labels"),
    ).join(WorkflowRun, WorkflowRun.id == Job.run_id)
    frame = raw_frame(engine, filtered(stmt, where))
    return frame.assign(labels=label_tuples(frame["labels"]))


# ---- the derived tables (analytics.derived keeps them) -----------------------------------------

DERIVED_RUN_COLUMNS = (
    "red_attempts",
    "first_attempt_conclusion",
    "logical_outcome",
    "failure_category",
    "failure_basis",
)


def derived_runs(engine: Bind, where: RunFilter = RunFilter(), *, lean: bool) -> pd.DataFrame:
    """The selected runs as ``run_outcomes`` (``lean``) or ``load_runs`` give them, with their
    logical outcome and failure from ``logical_runs``: DERIVED_RUN_COLUMNS. A run the derived
    table lacks (none in a database the collector keeps) is left out."""
    derived = [getattr(LogicalRun, name) for name in DERIVED_RUN_COLUMNS]
    stmt = select(*_run_columns(lean=lean), *derived).join(
        LogicalRun, LogicalRun.run_id == WorkflowRun.id
    )
    if not lean:
        stmt = stmt.outerjoin(Workflow, Workflow.id == WorkflowRun.workflow_id).order_by(
            WorkflowRun.created_at, WorkflowRun.id
        )
    return raw_frame(engine, filtered(stmt, where), ("created_at",))


DERIVED_JOB_COLUMNS = (
    "run_id",
    "logical_job",
    "attempts",
    "last_attempt",
    "first_conclusion",
    "conclusion",
    "logical_outcome",
    "runner_name",
    "labels",
    "started_at",
    "completed_at",
    "red_attempts",
    "red_attempt",
    "red_job_id",
    "category",
)


JOB_TIMES = ("started_at", "completed_at")


def derived_jobs(
    engine: Bind, where: RunFilter = RunFilter(), *, lean: bool = False
) -> pd.DataFrame:
    """The logical jobs of the selected runs from ``logical_jobs``: DERIVED_JOB_COLUMNS (but
    the times when ``lean``), labels as tuples of str, times tz-aware UTC, in no particular
    order."""
    job = LogicalJob
    names = [n for n in DERIVED_JOB_COLUMNS if not (lean and n in JOB_TIMES)]
    columns = [
        type_coerce(job.labels, String).label("labels") if name == "labels" else getattr(job, name)
        for name in names
    ]
    stmt = select(*columns).join(WorkflowRun, WorkflowRun.id == job.run_id)
    frame = raw_frame(engine, filtered(stmt, where), () if lean else JOB_TIMES)
    return frame.assign(labels=label_tuples(frame["labels"]))
