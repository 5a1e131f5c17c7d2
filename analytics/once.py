"""Counted once: every rate, window and verdict also read with each incident as one failure.

An incident (analytics.incidents, stored in ``incidents`` and ``incident_failures``) fails many
jobs for one cause; counted as they are, one outage decides a red rate, a before/after answer or
a flaky verdict. Counted once, the red runs (or red logical jobs) that an incident hit within
one group of a table (a lineage, a window, a logical job...) are one red run: the first of them
that failed for good, else the first; the others leave the counts, numerator and denominator.

- A red logical run belongs to an incident when one of its failed jobs does (the incident with
  the smallest id, when several hit it); a red logical job when its last red shard
  (``red_job_id``) does. Green and excluded rows belong to none.
- Columns counted once carry the suffix ``_once``, beside the columns as today.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from analytics.rates import rank_by_lower_bound, stability, verdict_label
from store.vocabulary import RED_OUTCOMES

ONCE = "_once"
INCIDENT = "incident_id"
# What stability gives that counting once changes (enough_data stays as today's, the sample).
ONCE_COLUMNS = [
    "runs",
    "pass",
    "flaky",
    "fail",
    *(
        f"{rate}{end}"
        for rate in ("success_rate", "eventual_success", "flake_rate")
        for end in ("", "_low", "_high")
    ),
]


def run_incidents(runs: pd.DataFrame, members: pd.DataFrame) -> pd.Series:
    """The incident of each red logical run of ``runs``, aligned on it (NaN: none).
    ``members``: store.incidents.load_members."""
    by_run = members.groupby("run_id")[INCIDENT].min()
    red = runs["logical_outcome"].isin(RED_OUTCOMES)
    return runs["run_id"].map(by_run).where(red)


def job_incidents(jobs: pd.DataFrame, members: pd.DataFrame) -> pd.Series:
    """The incident of each red logical job of ``jobs`` (its last red shard's), aligned on it
    (NaN: none)."""
    by_job = members.drop_duplicates("job_id").set_index("job_id")[INCIDENT]
    red = jobs["logical_outcome"].isin(RED_OUTCOMES)
    return jobs["red_job_id"].map(by_job).where(red)


def once_counts(
    frame: pd.DataFrame, incident: pd.Series, by: Sequence[str], weight: str | None = None
) -> pd.DataFrame:
    """``frame`` (rows, or counts of rows in its ``weight`` column) counted once: within each
    group of ``by``, the rows of an incident (``incident``, aligned on ``frame``: the incident
    of each red row) become one row of weight 1, ``fail`` if any of them failed, else
    ``flaky`` (its first fail, else its first row: red rows are flaky or fail). Columns:
    ``by``, logical_outcome, n (the weight). The one counting once on counts: every family's
    rates counted once go through it."""
    keys = list(by)
    hit = incident.notna().to_numpy()
    n = frame[weight].to_numpy() if weight is not None else np.ones(len(frame), dtype=int)
    rest = frame.loc[~hit, [*keys, "logical_outcome"]].assign(n=n[~hit])
    if not hit.any():
        return rest
    red = frame.loc[hit, keys].assign(
        **{INCIDENT: incident.to_numpy()[hit]},
        failed=frame["logical_outcome"].to_numpy()[hit] == "fail",
    )
    failed = red.groupby([*keys, INCIDENT])["failed"].any()
    one = failed.map({True: "fail", False: "flaky"}).rename("logical_outcome").reset_index()
    return pd.concat([rest, one.drop(columns=INCIDENT).assign(n=1)], ignore_index=True)


def stability_once(
    frame: pd.DataFrame,
    incident: pd.Series,
    by: Sequence[str],
    min_runs: int,
    weight: str | None = None,
) -> pd.DataFrame:
    """analytics.rates.stability per group of ``by``, as today, with ONCE_COLUMNS beside it
    counted once (``<column>_once``, once_counts). ``frame``: rows, or counts with
    ``weight`` (analytics.rates.outcome_counts)."""
    today = stability(frame, by, min_runs, weight)
    counted = stability(once_counts(frame, incident, by, weight), by, min_runs, weight="n")
    return _beside(today, counted, by)


def _beside(today: pd.DataFrame, counted: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """``today``'s table with ONCE_COLUMNS of ``counted`` beside it as ``<column>_once``."""
    once = counted[[*by, *ONCE_COLUMNS]].rename(columns={c: f"{c}{ONCE}" for c in ONCE_COLUMNS})
    table = today.merge(once, on=list(by), how="left")
    counts = [f"{c}{ONCE}" for c in ("runs", "pass", "flaky", "fail")]
    table[counts] = table[counts].fillna(0).astype(int)
    return table


def label_once(table: pd.DataFrame, min_runs: int, rate: str = "success_rate") -> pd.Series:
    """analytics.rates.verdict_label of the ``rate`` counted once (stability_once's
    ``<column>_once``): "0.90 [0.70, 0.97] n=20", or not enough data under ``min_runs`` runs
    counted once."""
    once = table[[f"{c}{ONCE}" for c in ("runs", rate, f"{rate}_low", f"{rate}_high")]]
    once = once.rename(columns=lambda c: c.removesuffix(ONCE))
    return verdict_label(once.assign(enough_data=once["runs"] >= min_runs), rate)


def largest_incident(
    frame: pd.DataFrame, incident: pd.Series, by: Sequence[str], weight: str | None = None
) -> pd.DataFrame:
    """Per group of ``by`` that an incident hit: its largest incident (``incident_id``, ties:
    the smallest id) and how many red rows it has there (``incident_red``); ``weight`` as in
    stability_once."""
    hit = incident.notna().to_numpy()
    grouped = frame[hit].assign(**{INCIDENT: incident.to_numpy()[hit]}).groupby([*by, INCIDENT])
    counts = (
        (grouped.size() if weight is None else grouped[weight].sum())
        .rename("incident_red")
        .reset_index()
    )
    ordered = counts.sort_values(["incident_red", INCIDENT], ascending=[False, True])
    return ordered.drop_duplicates(list(by)).reset_index(drop=True)


def verdicts_once(verdicts: pd.DataFrame, members: pd.DataFrame) -> pd.DataFrame:
    """analytics.verdicts.job_verdicts' table with ``incident_id`` and ``verdict_once``: a
    failed job an incident explains is ``incident`` (never flaky because of incident failures),
    the others keep their verdict. ``members``: store.incidents.load_members."""
    incident = job_incidents(verdicts, members)
    verdict = np.where(incident.notna(), "incident", verdicts["verdict"].to_numpy(dtype=object))
    # text ids, even when no row has one (a table of one job with no incident)
    ids = pd.Series(incident.to_numpy(), index=verdicts.index).astype("str")
    return verdicts.assign(**{INCIDENT: ids}).assign(**{f"verdict{ONCE}": verdict})


FLAKY_KEYS = ["lineage", "logical_job"]  # a logical job across its lineage's renames


def flaky_table(jobs: pd.DataFrame, min_runs: int, members: pd.DataFrame) -> pd.DataFrame:
    """Logical jobs (per lineage) ranked by the Wilson lower bound of their flake rate, with
    their rates counted once beside (``members``: store.incidents.load_members): the Flaky
    jobs page and ``ciflake export flaky-jobs`` alike."""
    table = stability_once(jobs, job_incidents(jobs, members), FLAKY_KEYS, min_runs)
    return rank_by_lower_bound(table, "flake_rate")
