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
    weekly = with_period(jobs, PERIOD)
    keys = [*JOB_KEYS, "period"]
    green = weekly.loc[weekly["logical_outcome"].isin(GREEN_OUTCOMES), [*keys, where]]
    green = green.drop_duplicates()
    green_places = green.groupby(keys).size().rename("_green_places")
    failed = weekly[weekly["logical_outcome"] == "fail"]
    # pandas maps by a Series too; the stubs take only a mapping or a function
    places = pd.MultiIndex.from_frame(failed[keys]).map(green_places).fillna(0)  # type: ignore[arg-type]
    here = pd.MultiIndex.from_frame(failed[[*keys, where]]).isin(
        pd.MultiIndex.from_frame(green[[*keys, where]])
    )
    elsewhere = places.to_numpy() - here.astype(int) > 0
    return failed.drop(columns="period").assign(works_elsewhere=elsewhere)


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
