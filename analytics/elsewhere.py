"""Works elsewhere (PyTorch HUD): a failure whose job went green on another runner at about
the same time points at the runner, not at the code. The one definition, shared by the
dashboard's Runners page, the runner-pools report and the environment table
(docs/vocabulary.md); and runner pools, read from the jobs' stored labels."""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pandas as pd

from analytics.text import filled
from store.vocabulary import (
    GREEN_OUTCOMES,
    HOSTED_RUNNER_PREFIX,
    HOSTED_RUNNERS,
    NO_RUNNER,
    NO_RUNNER_NAME,
)

JOB_KEYS = ["workflow_path", "logical_job"]
_MAX_CODE = 2**31


def failed_elsewhere(jobs: pd.DataFrame, where: str) -> pd.DataFrame:
    """The hard-failed logical jobs of ``jobs`` (logical_outcome ``fail``), each with
    ``works_elsewhere``: the same logical job (workflow_path, logical_job) went green (pass or
    flaky) in the same ISO week under another value of ``where`` (runner_name, runner_pool; no
    runner, NaN, is one place too). A row without its workflow, name or time is never flagged.
    ``jobs``: logical jobs (analytics.outcomes.logical_jobs) with ``where``; the rows keep
    their columns and index."""
    # On integer codes rather than merges of string keys: this runs over every job in scope,
    # twice per Runners page, and the merges cost more than the rest of the page's own work.
    job, known = _job_week_codes(jobs)
    place = pd.factorize(jobs[where], use_na_sentinel=False)[0].astype(np.int64)
    width = int(place.max(initial=0)) + 1
    pair = job * width + place
    outcome = jobs["logical_outcome"]
    green = outcome.isin(GREEN_OUTCOMES).to_numpy() & known
    is_fail = (outcome == "fail").to_numpy()
    green_pairs = np.unique(pair[green])
    green_jobs, places = np.unique(green_pairs // width, return_counts=True)
    failed_job = job[is_fail]
    at = np.searchsorted(green_jobs, failed_job)
    found = at < len(green_jobs)
    found[found] = green_jobs[at[found]] == failed_job[found]
    green_places = np.zeros(len(failed_job), dtype=np.int64)
    green_places[found] = places[at[found]]
    here = np.isin(pair[is_fail], green_pairs)
    elsewhere = (green_places - here > 0) & known[is_fail]
    return jobs[is_fail].assign(works_elsewhere=elsewhere)


def _job_week_codes(jobs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(code, known): one int64 code per (workflow_path, logical_job, ISO week) of each row,
    at most _MAX_CODE or len(jobs), and whether the row has all three (the codes of the others are
    meaningless)."""
    created = jobs["created_at"].dt.tz_convert("UTC").dt.tz_localize(None).to_numpy()
    days = created.astype("datetime64[D]")
    known = ~np.isnat(days)
    # 1970-01-01 was a Thursday: the Monday starting its ISO week is day -3.
    week = np.where(known, (days.astype(np.int64) + 3) // 7, 0)
    code, bound = np.zeros(len(jobs), dtype=np.int64), 1
    for column in (jobs[JOB_KEYS[0]], jobs[JOB_KEYS[1]], week):
        values, distinct = pd.factorize(column)
        known &= values >= 0
        code, bound = code * (len(distinct) + 1) + values, bound * (len(distinct) + 1)
        if bound > _MAX_CODE:  # renumber densely, so that pairs with places fit in int64
            code = pd.factorize(code)[0].astype(np.int64)
            bound = int(code.max(initial=0)) + 1
    return code, known


def week_start(moment: datetime) -> datetime:
    """The Monday, 00:00 UTC, that starts the ISO week of ``moment``, in the time zone
    ``moment`` has: where works elsewhere starts looking for a failure at ``moment``."""
    day = pd.Timestamp(moment)
    utc = day.tz_convert("UTC") if day.tzinfo is not None else day
    monday = utc.normalize() - pd.Timedelta(days=utc.day_of_week)
    return (monday.tz_convert(day.tzinfo) if day.tzinfo is not None else monday).to_pydatetime()


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


def with_runner_pool(jobs: pd.DataFrame) -> pd.DataFrame:
    """``runner_pool`` (pool_names), and ``runner_name`` "(none)" when the job never ran."""
    return jobs.assign(
        runner_pool=pool_names(jobs["labels"]),
        runner_name=filled(jobs["runner_name"], NO_RUNNER_NAME),
    )


def pool_names(labels: pd.Series) -> pd.Series:
    """The runner pool of each label set (a tuple, store.frame_queries): its labels joined by
    "+"; "(no runner)" when the job never ran. Computed once per distinct label set."""
    codes, distinct = pd.factorize(labels)
    names = np.array([*("+".join(labels) or NO_RUNNER for labels in distinct), NO_RUNNER])
    return pd.Series(names[codes], index=labels.index)  # code -1 (no labels): the last name


def hosts(runner_names: pd.Series) -> pd.Series:
    """The row of each runner name in the runners table: the name of a host that persists;
    HOSTED_RUNNERS for every GitHub-hosted VM, which runs one job and is gone."""
    hosted = runner_names.str.startswith(HOSTED_RUNNER_PREFIX).to_numpy(dtype=bool, na_value=False)
    return runner_names.mask(hosted, HOSTED_RUNNERS)
