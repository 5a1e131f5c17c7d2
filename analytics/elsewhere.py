"""Works elsewhere (PyTorch HUD): a failure whose job went green on another runner at about
the same time points at the runner, not at the code. The one definition, shared by the
dashboard's Runners page and the environment table (docs/vocabulary.md)."""

from __future__ import annotations

import pandas as pd

from analytics.rates import with_period
from store.vocabulary import GREEN_OUTCOMES

PERIOD = "W"  # "at about the same time": the same ISO week (analytics.rates.with_period)
JOB_KEYS = ["workflow_path", "logical_job"]


def failed_elsewhere(jobs: pd.DataFrame, where: str) -> pd.DataFrame:
    """The hard-failed logical jobs of ``jobs`` (logical_outcome ``fail``), each with
    ``works_elsewhere``: the same logical job (workflow_path, logical_job) went green (pass or
    flaky) in the same ISO week under another value of ``where`` (runner_name, runner_pool).
    ``jobs``: logical jobs (analytics.outcomes.logical_jobs) with ``where``; the rows keep
    their columns and index."""
    # On a narrow frame: the period and every merge below copy each column they keep.
    weekly = with_period(jobs[[*JOB_KEYS, where, "created_at"]], PERIOD)
    keys = [*JOB_KEYS, "period"]
    outcome = jobs["logical_outcome"]
    green = weekly.loc[outcome.isin(GREEN_OUTCOMES).to_numpy(), [*keys, where]]
    green = green.drop_duplicates()
    green_places = green.groupby(keys).size().rename("_green_places").reset_index()
    is_fail = (outcome == "fail").to_numpy()
    failed = weekly.loc[is_fail, [*keys, where]]
    # Left merges keep the failed rows' order; a job with no runner (NaN) is one place too.
    places = failed.merge(green_places, on=keys, how="left")["_green_places"].fillna(0)
    here = failed.merge(green.assign(_here=1), on=[*keys, where], how="left")["_here"].fillna(0)
    elsewhere = places.to_numpy() - here.to_numpy() > 0
    return jobs[is_fail].assign(works_elsewhere=elsewhere)


def works_elsewhere(failed: pd.DataFrame, by: str) -> pd.DataFrame:
    """Per ``by`` value (runner_name or runner_pool) with a hard failure: failed_jobs, and
    works_elsewhere = the share of them that works elsewhere. ``failed``: the flagged
    failures, ``failed_elsewhere(jobs, by)``, computed once per page and shared.

    Columns: ``by``, failed_jobs, works_elsewhere."""
    return (
        failed.groupby(by)
        .agg(failed_jobs=("works_elsewhere", "size"), works_elsewhere=("works_elsewhere", "mean"))
        .reset_index()
    )
