"""Failures by environment: the versions (CANN, driver, torch...) found in failed jobs' logs,
and how many hard failures each one was under. The one definition, shared by the dashboard's
Runners page and anything else that tabulates them (docs/vocabulary.md). The fingerprint comes
from failed jobs' logs only, so these are failure counts, never rates."""

from __future__ import annotations

from collections import Counter

import pandas as pd

COLUMNS = [
    "fact",
    "version",
    "failures",
    "logical_jobs",
    "runners",
    "categories",
    "first_seen",
    "last_seen",
    "works_elsewhere_share",
]


def _facts(failures: pd.DataFrame) -> pd.DataFrame:
    """One row per failure and environment fact of its log: job_id, category, fact, version.
    Flattened in one pass over the dicts (a failure without a fingerprint has no row): a
    Series of lists exploded costs several times more on a hundred thousand failures."""
    rows = [
        (job_id, category, fact, version)
        for job_id, category, env in zip(
            failures["job_id"], failures["category"], failures["env"], strict=True
        )
        if env
        for fact, version in env.items()
    ]
    facts = pd.DataFrame(rows, columns=["job_id", "category", "fact", "version"])
    return facts.drop_duplicates(["job_id", "fact"])


def environment_failures(failures: pd.DataFrame, flagged: pd.DataFrame) -> pd.DataFrame:
    """Hard-failed logical jobs (one per logical job of a run: its last red shard's failure)
    per environment fact and version found in that failure's log (``env``), with the logical
    jobs and runners they hit, their categories, first and last seen, and
    works_elsewhere_share (analytics.elsewhere, by runner_name).

    ``failures``: rows with job_id, category, env; ``flagged``: the hard-failed logical jobs
    with works_elsewhere, ``analytics.elsewhere.failed_elsewhere(jobs, "runner_name")``, which
    a page or the summary computes once and shares. Columns: COLUMNS, by fact, most failures
    first."""
    facts = _facts(failures)
    failed = flagged[flagged["red_job_id"].notna()]
    if facts.empty or failed.empty:
        return pd.DataFrame(columns=COLUMNS)
    located = failed[["red_job_id", "logical_job", "runner_name", "created_at", "works_elsewhere"]]
    merged = facts.merge(
        located.astype({"red_job_id": "int64"}), left_on="job_id", right_on="red_job_id"
    )
    if merged.empty:
        return pd.DataFrame(columns=COLUMNS)
    grouped = merged.groupby(["fact", "version"])
    # one groupby call per column: a named aggregation costs several times more on a few rows
    table = pd.DataFrame(
        {
            "failures": grouped.size(),
            "logical_jobs": grouped["logical_job"].nunique(),
            "runners": grouped["runner_name"].nunique(),
            "first_seen": grouped["created_at"].min(),
            "last_seen": grouped["created_at"].max(),
            "works_elsewhere_share": grouped["works_elsewhere"].mean(),
            "categories": grouped["category"].agg(_category_counts),
        }
    )
    table = table.reset_index().sort_values(
        ["fact", "failures", "version"], ascending=[True, False, True]
    )
    return table[COLUMNS].reset_index(drop=True)


def _category_counts(categories: pd.Series) -> str:
    """ "<category> <failures>, ..." most failures first, ties in order of appearance, none
    for a missing one (as Series.value_counts gives them, without a Series per group)."""
    return ", ".join(f"{k} {v}" for k, v in Counter(categories.dropna()).most_common())
