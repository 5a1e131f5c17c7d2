"""A verdict for every failed logical job, with the evidence that decided it.

PyTorch's trunk logic adapted to push and nightly CI (DESIGN.md), first rule that holds wins:

1. ``flaky``: it passed on a rerun of the same run, or the same logical job passed in
   another run of the same commit;
2. ``infra``: its category is an infra one (store.vocabulary.INFRA_CATEGORIES);
3. ``persistent``: the previous or next run of the same job on the same branch also failed hard;
4. ``one_off``: an isolated red between greens, with no rerun evidence;
5. ``unclassified``: no neighbour on one side to compare with.

Runs that failed with no jobs (invalid workflow files, category ``ci_config``) have no logical
job and so no verdict: they are never flakiness.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import pandas as pd

from analytics import sequences
from store.vocabulary import GREEN_OUTCOMES, INFRA_CATEGORIES, RED_OUTCOMES

SEQUENCE = ["workflow_path", "logical_job", "head_branch"]
# The verdict of each rule of _decide, in its order.
VERDICTS = ("flaky", "flaky", "infra", "persistent", "persistent", "one_off")


def job_categories(jobs: pd.DataFrame, failures: pd.DataFrame) -> pd.Series:
    """The category of each logical job's last red shard (``red_job_id``), aligned on jobs."""
    by_job = failures.drop_duplicates("job_id").set_index("job_id")["category"]
    return jobs["red_job_id"].map(by_job)


def job_verdicts(jobs: pd.DataFrame, failures: pd.DataFrame) -> pd.DataFrame:
    """One row per failed logical job (``logical_outcome`` flaky or fail) of ``jobs``
    (analytics.outcomes.logical_jobs), with ``category``, ``verdict`` and ``evidence``, and
    the runs that gave it: ``prev_run_id``/``next_run_id`` (neighbours on the branch, NaN when
    none) and ``same_sha_run_id`` (a green run of the same commit)."""
    outcome = jobs["logical_outcome"].to_numpy()
    kept = np.flatnonzero(outcome != "excluded")
    rows, group = sequences.ordered(jobs, SEQUENCE, kept, ["created_at", "run_id"])
    outcomes, run_ids = outcome[rows], jobs["run_id"].to_numpy()[rows]
    red = np.flatnonzero(np.isin(outcomes, RED_OUTCOMES))
    previous, following = sequences.neighbours(group)
    prev, after = previous[red], following[red]
    has_prev, has_next = prev >= 0, after >= 0
    failed = jobs.iloc[rows[red]].reset_index(drop=True)
    failed = failed.join(
        pd.DataFrame(
            {
                "prev_run_id": np.where(has_prev, run_ids[prev], np.nan),
                "prev_outcome": np.where(has_prev, outcomes[prev], None),
                "next_run_id": np.where(has_next, run_ids[after], np.nan),
                "next_outcome": np.where(has_next, outcomes[after], None),
            }
        )
    )
    failed["category"] = job_categories(failed, failures)
    same_sha = _green_on_same_commit(jobs, rows, outcomes, run_ids)[red]
    failed["same_sha_run_id"] = np.where(same_sha != run_ids[red], same_sha, np.nan)
    return decided(failed)


def decided(failed: pd.DataFrame) -> pd.DataFrame:
    """``failed`` (red logical jobs with ``prev_``/``next_run_id`` and ``_outcome``,
    ``same_sha_run_id``, category, red_attempt, last_attempt) with ``verdict`` and
    ``evidence``, without the neighbours' outcomes: what job_verdicts and the derived tables'
    statement (store.job_counts.failed_jobs) both end with."""
    verdict, evidence = _decide(failed)
    out = failed.assign(verdict=verdict, evidence=evidence)
    return out.drop(columns=["prev_outcome", "next_outcome"])


def _green_on_same_commit(
    jobs: pd.DataFrame, rows: np.ndarray, outcomes: np.ndarray, run_ids: np.ndarray
) -> np.ndarray:
    """For each of ``rows`` (positions in ``jobs``, with their outcomes and run ids): the
    smallest run id where the same logical job went green on the same commit; NaN if none."""
    sha = jobs["head_sha"].iloc[rows].factorize()[0]
    name = jobs["logical_job"].iloc[rows].factorize()[0]
    pair = np.where((sha < 0) | (name < 0), -1, sha * (int(name.max(initial=0)) + 1) + name)
    greens = np.flatnonzero(np.isin(outcomes, GREEN_OUTCOMES) & (pair >= 0))
    first_green = pd.Series(run_ids[greens]).groupby(pair[greens]).min()
    return pd.Series(pair).map(first_green).to_numpy(dtype=float)


class _Row(NamedTuple):
    """What the evidence of a failed job quotes."""

    red_attempt: float
    last_attempt: int
    run_id: int
    same_sha_run_id: float
    category: str
    prev_run_id: float
    next_run_id: float


def _number(value: float) -> str:
    return "<NA>" if pd.isna(value) else str(int(value))


def _run(run_id: float) -> str:
    return f"run {_number(run_id)}"


# The evidence of each rule of _decide, in its order, then of the two kinds of unclassified;
# written for the chosen rows only: building every rule's text for every row cost more.
EVIDENCE: tuple[Callable[[_Row], str], ...] = (
    lambda r: (
        f"failed on attempt {_number(r.red_attempt)}, passed on attempt "
        f"{r.last_attempt} of {_run(r.run_id)}"
    ),
    lambda r: f"passed in {_run(r.same_sha_run_id)} on the same commit",
    lambda r: f"category {r.category}",
    lambda r: f"previous {_run(r.prev_run_id)} also failed",
    lambda r: f"next {_run(r.next_run_id)} also failed",
    lambda r: f"isolated: previous {_run(r.prev_run_id)} and next {_run(r.next_run_id)} passed",
    lambda r: "no run on one side to compare with",
    lambda r: "no neighbour run",
)


def _decide(failed: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    prev_green = failed["prev_outcome"].isin(GREEN_OUTCOMES).to_numpy()
    next_green = failed["next_outcome"].isin(GREEN_OUTCOMES).to_numpy()
    conditions = [
        (failed["logical_outcome"] == "flaky").to_numpy(),
        failed["same_sha_run_id"].notna().to_numpy(),
        failed["category"].isin(INFRA_CATEGORIES).to_numpy(),
        (failed["prev_outcome"] == "fail").to_numpy(),
        (failed["next_outcome"] == "fail").to_numpy(),
        prev_green & next_green,
    ]
    unclassified = np.where(prev_green | next_green, len(conditions), len(conditions) + 1)
    rule = np.select(conditions, list(range(len(conditions))), default=unclassified)
    verdict = np.array([*VERDICTS, "unclassified", "unclassified"])[rule]
    # Rows as plain tuples of numpy values: itertuples would iterate Arrow strings one by one.
    values = zip(*(failed[c].to_numpy(dtype=object) for c in _Row._fields), strict=True)
    rows = map(_Row._make, values)
    return verdict, [EVIDENCE[r](row) for r, row in zip(rule, rows, strict=True)]
