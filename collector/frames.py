"""The analytics frames loaded from the store with the config's lineages: logical runs and
logical jobs. Shared by the summary and the CSV export, so both count runs the same way."""

from __future__ import annotations

import pandas as pd
from sqlalchemy import Engine

from analytics.outcomes import attach_lineage, logical_jobs, logical_runs, with_run_categories
from analytics.setup import workflow_table
from analytics.verdicts import job_categories
from ciflake.config import Config
from store.queries import RunFilter, load_attempts, load_failures, load_jobs, load_runs

# What a logical job carries of its run.
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
]


def logical_run_frame(engine: Engine, config: Config, where: RunFilter) -> pd.DataFrame:
    """The logical runs of ``where`` with failure category, lineage and tags."""
    runs = logical_runs(load_runs(engine, where), load_attempts(engine, where))
    runs = with_run_categories(runs, load_failures(engine, where))
    return attach_lineage(runs, workflow_table(config.workflows))


def logical_job_frame(
    engine: Engine, config: Config, where: RunFilter, runs: pd.DataFrame | None = None
) -> pd.DataFrame:
    """The logical jobs of ``where`` (analytics.outcomes.logical_jobs) with the run context and
    ``category``, the category of their last red shard. ``runs``: logical_run_frame of the same
    filter, when the caller has it already."""
    if runs is None:
        runs = logical_run_frame(engine, config, where)
    jobs = logical_jobs(load_jobs(engine, where), runs[RUN_CONTEXT], config.job_name_strip)
    return jobs.assign(category=job_categories(jobs, load_failures(engine, where)))
