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
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from analytics.rates import OUTCOMES, add_rates, rank_by_lower_bound, verdict_label
from store.vocabulary import RED_OUTCOMES

ONCE = "_once"
INCIDENT = "incident_id"
FAIL, FLAKY = OUTCOMES.index("fail"), OUTCOMES.index("flaky")
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
    ``by``, logical_outcome, n (the weight): the rows that do not belong to an incident, then
    one row per group and incident (sorted by both). stability_once counts the same rows."""
    keys = list(by)
    hit = incident.notna().to_numpy()
    n = frame[weight].to_numpy() if weight is not None else np.ones(len(frame), dtype=int)
    rest = frame.loc[~hit, [*keys, "logical_outcome"]].assign(n=n[~hit])
    if not hit.any():
        return rest
    groups = _groups(frame, keys)
    group, failed = _one_per_incident(groups, incident, _outcome_codes(frame))
    one = pd.DataFrame({key: level.take(group) for key, level in groups.keys.items()})
    outcome = pd.Series(np.where(failed, "fail", "flaky"), name="logical_outcome", dtype="str")
    one = one.assign(logical_outcome=outcome, n=1)
    return pd.concat([rest, one], ignore_index=True)


def stability_once(
    frame: pd.DataFrame,
    incident: pd.Series,
    by: Sequence[str],
    min_runs: int,
    weight: str | None = None,
) -> pd.DataFrame:
    """analytics.rates.stability per group of ``by``, as today, with ONCE_COLUMNS beside it
    counted once (``<column>_once``: the rows of once_counts). ``frame``: rows, or counts with
    ``weight`` (analytics.rates.outcome_counts). Counted in numpy over the groups' codes,
    both ways in one array: two groupbys, a concat and a merge cost a table 25 to 50 ms."""
    keys = list(by)
    groups = _groups(frame, keys)
    outcome = _outcome_codes(frame)
    size = groups.number * len(OUTCOMES)
    rows = groups.code >= 0
    if weight is None:
        n = np.ones(len(frame))
    else:
        n = np.nan_to_num(frame[weight].to_numpy(dtype=float))  # a missing count adds nothing
    counted = rows & (outcome >= 0)
    cells = groups.code * len(OUTCOMES) + outcome
    today = np.bincount(cells[counted], weights=n[counted], minlength=size)
    alone = counted & incident.isna().to_numpy()
    once = np.bincount(cells[alone], weights=n[alone], minlength=size)
    group, failed = _one_per_incident(groups, incident, outcome)
    once += np.bincount(group * len(OUTCOMES) + np.where(failed, FAIL, FLAKY), minlength=size)
    # today's groups: those with an outcome (a row whose only outcome is missing makes none)
    shown = np.bincount(groups.code[rows & frame["logical_outcome"].notna().to_numpy()])
    shown = np.flatnonzero(shown)
    both = np.concatenate(
        [today.reshape(-1, len(OUTCOMES))[shown], once.reshape(-1, len(OUTCOMES))[shown]]
    )
    counts = pd.DataFrame(both.astype(np.int64), columns=OUTCOMES)
    counts.insert(0, "runs", counts["pass"] + counts["flaky"] + counts["fail"])
    rated = add_rates(counts, min_runs)
    columns: dict[str, Any] = {key: level.take(shown) for key, level in groups.keys.items()}
    if not len(frame):  # its keys are objects, as analytics.rates.outcome_counts gives them
        columns = {key: level.astype(object) for key, level in columns.items()}
    columns.update({c: rated[c].to_numpy()[: len(shown)] for c in rated.columns})
    columns.update({f"{c}{ONCE}": rated[c].to_numpy()[len(shown) :] for c in ONCE_COLUMNS})
    return pd.DataFrame(columns)


class _Groups(NamedTuple):
    code: np.ndarray  # each row's group, -1 where a key is missing
    keys: dict[str, pd.Index]  # each group's key of each column of ``by``
    number: int  # of groups


def _groups(frame: pd.DataFrame, by: list[str]) -> _Groups:
    """The groups of ``by`` in ``frame`` as DataFrame.groupby sees them (sorted, missing keys
    dropped, categories observed), as one code per row."""
    code = np.zeros(len(frame), dtype=np.int64)
    first = np.zeros(0, dtype=np.int64)
    levels: list[tuple[str, np.ndarray, pd.Index]] = []
    for key in by:
        mine, level = pd.factorize(frame[key], sort=True)
        levels.append((key, mine, level))
        # the groups so far, each split by this column's keys in their order, renumbered
        code = np.where((code >= 0) & (mine >= 0), code * len(level) + mine, -1)
        kept = code >= 0
        _, first, code[kept] = np.unique(code[kept], return_index=True, return_inverse=True)
    at = np.flatnonzero(code >= 0)[first]
    return _Groups(code, {key: level.take(mine[at]) for key, mine, level in levels}, len(at))


def _outcome_codes(frame: pd.DataFrame) -> np.ndarray:
    """Each row's place in OUTCOMES (-1: another outcome, or none), through its few values."""
    code, names = pd.factorize(frame["logical_outcome"])
    places: np.ndarray = pd.Index(OUTCOMES).get_indexer(pd.Index(names))
    return np.where(code >= 0, places[code], -1)


def _one_per_incident(
    groups: _Groups, incident: pd.Series, outcome: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Counting once: (group, failed) of the one row that each incident's red rows of a group
    (``incident`` aligned on the rows) become, sorted by group then incident; failed when
    one of them failed."""
    hit = incident.notna().to_numpy() & (groups.code >= 0)
    which, names = pd.factorize(incident.to_numpy()[hit], sort=True)
    pairs, first = np.unique(groups.code[hit] * len(names) + which, return_inverse=True)
    failed = np.zeros(len(pairs), dtype=bool)
    np.logical_or.at(failed, first, outcome[hit] == FAIL)
    return pairs // max(len(names), 1), failed


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
