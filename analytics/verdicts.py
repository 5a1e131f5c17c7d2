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

import numpy as np
import pandas as pd

from store.vocabulary import GREEN_OUTCOMES, INFRA_CATEGORIES, RED_OUTCOMES

SEQUENCE = ["workflow_path", "logical_job", "head_branch"]


def job_categories(jobs: pd.DataFrame, failures: pd.DataFrame) -> pd.Series:
    """The category of each logical job's last red shard (``red_job_id``), aligned on jobs."""
    by_job = failures.drop_duplicates("job_id").set_index("job_id")["category"]
    return jobs["red_job_id"].map(by_job)


def job_verdicts(jobs: pd.DataFrame, failures: pd.DataFrame) -> pd.DataFrame:
    """One row per failed logical job (``logical_outcome`` flaky or fail) of ``jobs``
    (analytics.outcomes.logical_jobs), with ``category``, ``verdict`` and ``evidence``, and
    the runs that gave it: ``prev_run_id``/``next_run_id`` (neighbours on the branch, NaN when
    none) and ``same_sha_run_id`` (a green run of the same commit)."""
    # The neighbours are found on a narrow frame; the failed rows' other columns are taken at
    # the end: sorting every column of a million jobs costs more than the rest.
    columns = [*SEQUENCE, "created_at", "run_id", "head_sha", "logical_outcome"]
    narrow = jobs[columns].set_axis(pd.RangeIndex(len(jobs)))
    seq = narrow[narrow["logical_outcome"] != "excluded"]
    seq = seq.sort_values([*SEQUENCE, "created_at", "run_id"], kind="stable")
    grouped = seq.groupby(SEQUENCE, sort=False, dropna=False)
    seq = seq.assign(
        prev_run_id=grouped["run_id"].shift(1),
        prev_outcome=grouped["logical_outcome"].shift(1),
        next_run_id=grouped["run_id"].shift(-1),
        next_outcome=grouped["logical_outcome"].shift(-1),
    )
    greens = seq[seq["logical_outcome"].isin(GREEN_OUTCOMES)]
    same_sha = ["head_sha", "logical_job"]
    green_by_sha = greens.groupby(same_sha, as_index=False)["run_id"].min()
    found = seq[seq["logical_outcome"].isin(RED_OUTCOMES)]
    found = found[["prev_run_id", "prev_outcome", "next_run_id", "next_outcome"]]
    failed = jobs.iloc[found.index].reset_index(drop=True)
    failed = failed.join(found.reset_index(drop=True))
    failed["category"] = job_categories(failed, failures)
    # A left merge keeps the failed rows' order; mapping through a MultiIndex built a tuple
    # per green row, a tenth of a second at a million jobs.
    found_green = failed[same_sha].merge(green_by_sha, on=same_sha, how="left")
    failed["same_sha_run_id"] = found_green["run_id"].to_numpy()
    failed["same_sha_run_id"] = failed["same_sha_run_id"].where(
        failed["same_sha_run_id"] != failed["run_id"]
    )
    failed["verdict"], failed["evidence"] = _decide(failed)
    return failed.drop(columns=["prev_outcome", "next_outcome"]).reset_index(drop=True)


def _run(ids: pd.Series) -> pd.Series:
    return "run " + ids.astype("Int64").astype(str)


def _decide(failed: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    prev_fail = failed["prev_outcome"] == "fail"
    next_fail = failed["next_outcome"] == "fail"
    prev_green = failed["prev_outcome"].isin(GREEN_OUTCOMES)
    next_green = failed["next_outcome"].isin(GREEN_OUTCOMES)
    attempts = failed["red_attempt"].astype("Int64").astype(str)
    rules = [
        (
            failed["logical_outcome"] == "flaky",
            "flaky",
            "failed on attempt "
            + attempts
            + ", passed on attempt "
            + failed["last_attempt"].astype(str)
            + " of "
            + _run(failed["run_id"]),
        ),
        (
            failed["same_sha_run_id"].notna(),
            "flaky",
            "passed in " + _run(failed["same_sha_run_id"]) + " on the same commit",
        ),
        (
            failed["category"].isin(INFRA_CATEGORIES),
            "infra",
            "category " + failed["category"].astype(str),
        ),
        (prev_fail, "persistent", "previous " + _run(failed["prev_run_id"]) + " also failed"),
        (next_fail, "persistent", "next " + _run(failed["next_run_id"]) + " also failed"),
        (
            prev_green & next_green,
            "one_off",
            "isolated: previous "
            + _run(failed["prev_run_id"])
            + " and next "
            + _run(failed["next_run_id"])
            + " passed",
        ),
    ]
    conditions = [rule[0].to_numpy() for rule in rules]
    verdict = np.select(conditions, [rule[1] for rule in rules], default="unclassified")
    evidence = np.select(
        conditions,
        [rule[2].to_numpy() for rule in rules],
        default=np.where(
            prev_green | next_green, "no run on one side to compare with", "no neighbour run"
        ),
    )
    return verdict, evidence
