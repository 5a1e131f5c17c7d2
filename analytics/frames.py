"""The one assembler of logical runs and logical jobs, below every consumer: the dashboard (which
only adds caching), the nightly summary and the CSV export read these frames, so all three count
runs the same way.

With this analytics.derived, the only modules of ``analytics`` that read the store; the rest
stay pure functions of the frames they build. The logical outcomes come from the derived tables
the collector keeps (analytics.derived) while they are current, else from the raw rows: the
frames are the same either way (tests/test_derived_same_answers.py). What depends on the
configuration (lineage, tags, invalid windows) is added here, so editing it needs no rebuild.
``lean``: only the columns pages read (no job times nor failure detail); full frames carry
every column the summary and the export write.
"""

from __future__ import annotations

import pandas as pd
from sqlalchemy import Engine

from analytics import derived
from analytics.config_tables import invalid_window_table, workflow_table
from analytics.outcomes import (
    LOGICAL_JOB_COLUMNS,
    attach_lineage,
    logical_jobs,
    logical_runs,
    mark_invalid_windows,
    with_run_categories,
)
from analytics.verdicts import job_categories
from store.frame_queries import (
    DERIVED_RUN_COLUMNS,
    derived_jobs,
    derived_runs,
    job_outcomes,
    load_attempts,
    load_failures,
    load_jobs,
    load_runs,
    run_outcomes,
)
from store.project import Project
from store.runfilter import RunFilter

# What a logical job carries of its run; a lean run frame has no repo nor workflow_name.
RUN_CONTEXT = [
    "run_id",
    "repo",
    "workflow_path",
    "workflow_name",
    "lineage",
    "tags",
    "event",
    "head_branch",
    "head_sha",
    "created_at",
    "html_url",
]


def failures_frame(engine: Engine, where: RunFilter, *, lean: bool = False) -> pd.DataFrame:
    """The classified failures of ``where``; lean: without rule, signature, line and env."""
    return load_failures(engine, where, detail=()) if lean else load_failures(engine, where)


def logical_run_frame(
    engine: Engine,
    project: Project,
    where: RunFilter,
    *,
    lean: bool = False,
) -> pd.DataFrame:
    """The logical runs of ``where`` with lineage, tags, failure category and basis; red runs
    in a configured ``[[invalid_windows]]`` are ``ci_config``."""
    workflows = workflow_table(project.workflows)
    windows = invalid_window_table(project.invalid_windows)
    if derived.is_current(engine, where.repo, project.job_name_strip):
        frame = attach_lineage(_as_computed(derived_runs(engine, where, lean=lean)), workflows)
        failure = [c for c in DERIVED_RUN_COLUMNS if c.startswith("failure_")]
        frame = frame[[c for c in frame.columns if c not in failure] + failure]
        return mark_invalid_windows(frame, windows)
    if lean:
        runs = run_outcomes(engine, where)
        attempts = load_attempts(engine, where, reruns_only=True)
    else:
        runs, attempts = load_runs(engine, where), load_attempts(engine, where)
    frame = attach_lineage(logical_runs(runs, attempts), workflows)
    frame = with_run_categories(frame, failures_frame(engine, where, lean=lean))
    return mark_invalid_windows(frame, windows)


def logical_job_frame(
    engine: Engine,
    project: Project,
    where: RunFilter,
    runs: pd.DataFrame,
    *,
    lean: bool = False,
) -> pd.DataFrame:
    """The logical jobs of ``where`` (analytics.outcomes.logical_jobs) with their run's context
    (RUN_CONTEXT) and ``category``, the category of their last red shard (``ci_config`` in a
    configured invalid window). ``runs``: logical_run_frame of the same filter."""
    context = runs[[c for c in RUN_CONTEXT if c in runs.columns]]
    windows = invalid_window_table(project.invalid_windows)
    if derived.is_current(engine, where.repo, project.job_name_strip):
        stored = derived_jobs(engine, where, lean=lean)
        jobs = context.merge(_as_computed(stored), on="run_id", how="inner")
        if lean:  # as the raw rows give them: pages read no job times
            jobs = jobs.assign(started_at=_no_time(jobs), completed_at=_no_time(jobs))
        jobs = jobs[[*context.columns, *LOGICAL_JOB_COLUMNS, "category"]]
        return mark_invalid_windows(jobs, windows, category="category")
    if lean:
        attempts = job_outcomes(engine, where)
        attempts = attempts.assign(started_at=_no_time(attempts), completed_at=_no_time(attempts))
    else:
        attempts = load_jobs(engine, where)
    jobs = logical_jobs(attempts, context, project.job_name_strip)
    jobs = jobs.assign(category=job_categories(jobs, failures_frame(engine, where, lean=lean)))
    return mark_invalid_windows(jobs, windows, category="category")


def _as_computed(frame: pd.DataFrame) -> pd.DataFrame:
    """A derived table's frame with the dtypes analytics.outcomes computes: text columns as
    strings even when every value is missing (a workflow with no red job has no category),
    ``logical_outcome`` as plain objects, red attempts and job ids as floats (NaN: never red)."""
    empty_text = [
        column
        for column in frame.columns
        if column != "labels" and frame[column].dtype == object and frame[column].isna().all()
    ]
    out = frame.astype({column: "str" for column in empty_text})
    out["logical_outcome"] = out["logical_outcome"].astype(object)
    for column in ("red_attempt", "red_job_id"):
        if column in out:
            out[column] = out[column].astype(float)
    return out


def _no_time(frame: pd.DataFrame) -> pd.Series:
    return pd.Series(pd.NaT, index=frame.index, dtype="datetime64[ns, UTC]")
