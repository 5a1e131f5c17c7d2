"""The one assembler of logical runs and logical jobs, below every consumer: the dashboard (which
only adds caching), the nightly summary and the CSV export read these frames, so all three count
runs the same way.

The only module of ``analytics`` that reads the store; the rest stay pure functions of the
frames it builds. ``lean``: only the columns pages read (``store.frame_queries.run_outcomes``,
``job_outcomes``; no job times nor failure detail), which is what keeps the dashboard fast on a
million jobs; full frames carry every column the summary and the export write.
"""

from __future__ import annotations

import pandas as pd
from sqlalchemy import Engine

from analytics.config_tables import invalid_window_table, workflow_table
from analytics.outcomes import (
    attach_lineage,
    logical_jobs,
    logical_runs,
    mark_invalid_windows,
    with_run_categories,
)
from analytics.verdicts import job_categories
from store.frame_queries import (
    job_outcomes,
    load_attempts,
    load_failures,
    load_jobs,
    load_runs,
    run_outcomes,
)
from store.runfilter import RunFilter
from store.settings import Config

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
    config: Config,
    where: RunFilter,
    *,
    lean: bool = False,
    failures: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The logical runs of ``where`` with lineage, tags, failure category and basis; red runs
    in a configured ``[[invalid_windows]]`` are ``ci_config``. ``failures``: failures_frame of
    the same filter, when the caller has it already."""
    if lean:
        runs = run_outcomes(engine, where)
        attempts = load_attempts(engine, where, reruns_only=True)
    else:
        runs, attempts = load_runs(engine, where), load_attempts(engine, where)
    if failures is None:
        failures = failures_frame(engine, where, lean=lean)
    frame = attach_lineage(logical_runs(runs, attempts), workflow_table(config.workflows))
    frame = with_run_categories(frame, failures)
    return mark_invalid_windows(frame, invalid_window_table(config.invalid_windows))


def logical_job_frame(
    engine: Engine,
    config: Config,
    where: RunFilter,
    runs: pd.DataFrame,
    *,
    lean: bool = False,
    failures: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The logical jobs of ``where`` (analytics.outcomes.logical_jobs) with their run's context
    (RUN_CONTEXT) and ``category``, the category of their last red shard (``ci_config`` in a
    configured invalid window). ``runs``:
    logical_run_frame of the same filter; ``failures`` as there."""
    if lean:
        attempts = job_outcomes(engine, where)
        no_time = pd.Series(pd.NaT, index=attempts.index, dtype="datetime64[ns, UTC]")
        attempts = attempts.assign(started_at=no_time, completed_at=no_time)
    else:
        attempts = load_jobs(engine, where)
    if failures is None:
        failures = failures_frame(engine, where, lean=lean)
    context = runs[[c for c in RUN_CONTEXT if c in runs.columns]]
    jobs = logical_jobs(attempts, context, config.job_name_strip)
    jobs = jobs.assign(category=job_categories(jobs, failures))
    windows = invalid_window_table(config.invalid_windows)
    return mark_invalid_windows(jobs, windows, category="category")
