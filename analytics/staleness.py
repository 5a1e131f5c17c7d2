"""STALE: a workflow (or lineage) that stopped running. The one definition, shared by the
dashboard's tiles, the nightly summary and anything else that says STALE (docs/vocabulary.md).

Two rules, the better one that the runs allow:

- **commits**, for a workflow that runs on pushes or pull requests (it has such runs): its
  silence is counted in the commits that reached the repository since its last run, those on
  which the other workflows ran (push and pull-request runs' ``head_sha``) and it did not. It
  is STALE after more such commits than ``stale_factor`` x its usual gap in commits. Pushes
  cluster in working hours: a quiet night has no commit, so it is no silence.
- **hours**, where nothing better is known (schedules, manual runs): silent for longer than
  ``stale_factor`` x the median gap between its runs.

Silence in hours is measured against one reference moment that every caller passes: the newest
run stored for the repository (``store.page_queries.run_span``), not the wall clock. A whole
repository gone silent is a collection problem (the summary's freshness line says so), not a
workflow going stale; and simulated or backfilled data end before today."""

from __future__ import annotations

import numpy as np
import pandas as pd

MIN_GAPS = 3  # fewer gaps between runs than this: no rhythm to miss, no verdict
STALE, OK, NO_VERDICT = "STALE", "OK", "not enough data"
COMMITS, HOURS = "commits", "hours"  # the rule that decided
WORK_EVENTS = ("push", "pull_request")  # runs that say a commit reached the repository
COLUMNS = [
    "last_run_at",
    "usual_gap_hours",
    "gaps",
    "silent_hours",
    "rule",
    "usual_gap_commits",
    "missed_commits",
    "status",
]


def staleness(
    runs: pd.DataFrame,
    by: str,
    reference: pd.Timestamp | None,
    stale_factor: float,
    min_gaps: int = MIN_GAPS,
) -> pd.DataFrame:
    """One row per ``by`` value (workflow_path or lineage) of ``runs`` (with created_at, event
    and head_sha): last_run_at, usual_gap_hours (the median gap between its runs, of any
    outcome), silent_hours (``reference`` minus the last run), ``rule`` (COMMITS or HOURS, see
    the module), usual_gap_commits and missed_commits (the commits rule's, else NaN), gaps (how
    many the rule counted) and ``status``: STALE when silent for longer than ``stale_factor``
    x the usual gap, NO_VERDICT with fewer than ``min_gaps`` gaps or no ``reference``, OK
    otherwise. Pass the runs in scope (default-branch pushes and schedules): a PR-only
    workflow has no rhythm to miss."""
    read = [by, "run_id", "created_at", "event", "head_sha"]  # a sort copies every column kept
    ordered = runs[read].sort_values(["created_at", "run_id"], kind="stable")
    out = _hour_gaps(ordered, by, reference)
    silent = out["silent_hours"]
    commits = _commit_gaps(ordered, by).reindex(out.index)
    by_commits = commits["usual_gap_commits"].notna()
    out["rule"] = np.where(by_commits, COMMITS, HOURS)
    out["usual_gap_commits"] = commits["usual_gap_commits"]
    out["missed_commits"] = commits["missed_commits"]
    out["gaps"] = out["gaps"].where(~by_commits, commits["gaps"]).astype(int)
    longer = np.where(
        by_commits,
        out["missed_commits"] > stale_factor * out["usual_gap_commits"],
        silent > stale_factor * out["usual_gap_hours"],
    )
    out["status"] = np.select(
        [(out["gaps"] < min_gaps).to_numpy() | silent.isna().to_numpy(), longer],
        [NO_VERDICT, STALE],
        default=OK,
    )
    return out[COLUMNS].reset_index()


def usual_gaps(runs: pd.DataFrame, by: str, reference: pd.Timestamp | None) -> pd.DataFrame:
    """The hours rule's measures alone, per ``by`` value of ``runs`` (with run_id and
    created_at): last_run_at, usual_gap_hours, gaps, silent_hours, as ``staleness`` gives them,
    indexed by ``by``: what a lineage's tile shows (its status is its workflows')."""
    ordered = runs[[by, "run_id", "created_at"]].sort_values(
        ["created_at", "run_id"], kind="stable"
    )
    return _hour_gaps(ordered, by, reference)


def _hour_gaps(ordered: pd.DataFrame, by: str, reference: pd.Timestamp | None) -> pd.DataFrame:
    """``usual_gaps`` of runs in order of creation, counted in numpy over each ``by`` value's
    code (a grouping's diff and median cost more than the rest on a few thousand runs)."""
    code, keys = pd.factorize(ordered[by], sort=True)  # -1: no value, in no group
    groups = len(keys)
    created = ordered["created_at"]
    order = np.argsort(code, kind="stable")  # each group's runs together, in creation order
    grouped = code[order]
    delta = created.iloc[order].diff()
    first = np.ones(len(order), dtype=bool)
    first[1:] = grouped[1:] != grouped[:-1]
    hours = (delta.dt.total_seconds() / 3600).to_numpy(dtype=float, copy=True)
    hours[first] = np.nan  # a group's first run has no gap
    usual, gaps = group_medians(grouped, hours, groups)
    valid = (code >= 0) & created.notna().to_numpy()
    last_at = np.full(groups, -1)
    np.maximum.at(last_at, code[valid], np.flatnonzero(valid))  # in order: the newest row
    index = pd.Index(keys, name=by)
    last = created.iloc[np.maximum(last_at, 0)].where(last_at >= 0).set_axis(index)
    out = pd.DataFrame({"last_run_at": last, "usual_gap_hours": usual, "gaps": gaps}, index=index)
    if reference is None or pd.isna(reference):
        out["silent_hours"] = pd.Series(np.nan, index=out.index, dtype=float)
    else:
        out["silent_hours"] = (
            pd.Timestamp(reference) - out["last_run_at"]
        ).dt.total_seconds() / 3600
    return out


def group_medians(
    code: np.ndarray, values: np.ndarray, groups: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per group code 0..``groups``-1, the median of its ``values`` that are not NaN (NaN: none)
    and how many there are, as DataFrame.groupby's median and count give them (the mean of the
    two middle values)."""
    kept = (code >= 0) & ~np.isnan(values)
    mine, value = code[kept], values[kept]
    order = np.lexsort((value, mine))
    value = value[order]
    count = np.bincount(mine, minlength=groups)
    start = np.cumsum(count) - count
    median = np.full(groups, np.nan)
    some = count > 0
    low, high = start[some] + (count[some] - 1) // 2, start[some] + count[some] // 2
    median[some] = (value[low] + value[high]) / 2
    return median, count


def _commit_gaps(ordered: pd.DataFrame, by: str) -> pd.DataFrame:
    """Per ``by`` value that has push or pull-request runs: its gaps counted in commits (the
    ``head_sha`` of push and pull-request runs, in the order they first ran), their median
    (usual_gap_commits), and the commits after the last one it ran on (missed_commits)."""
    # Each commit as a number once (hashing 40-character strings is the cost here).
    codes, shas = pd.factorize(ordered["head_sha"], use_na_sentinel=False)
    work = ordered["event"].isin(WORK_EVENTS).to_numpy()
    order = pd.unique(codes[work])  # by creation: the order commits first ran in
    position = np.full(len(shas), -1)
    position[order] = np.arange(len(order))
    group, keys = pd.factorize(ordered[by], sort=True)  # -1: a missing value, grouped by none
    driven = np.zeros(len(keys) + 1, dtype=bool)
    driven[group[work]] = True
    at = position[codes]
    chosen = driven[group] & (group >= 0) & (at >= 0)
    # Each (by value, commit) once, by commit within its group: one sort of integer pairs
    # (np.unique hashes them first, which costs ten times the sort on thousands of pairs).
    pairs = np.sort(group[chosen].astype(np.int64) * max(len(order), 1) + at[chosen])
    pairs = pairs[np.r_[True, pairs[1:] != pairs[:-1]]] if len(pairs) else pairs
    mine, pos = pairs // max(len(order), 1), pairs % max(len(order), 1)
    gap = np.diff(pos, prepend=0).astype(float)
    gap[np.r_[True, mine[1:] != mine[:-1]] if len(mine) else []] = np.nan
    usual, gaps = group_medians(mine, gap, len(keys))
    last = np.full(len(keys), -1)
    np.maximum.at(last, mine, pos)
    ran = np.flatnonzero(last >= 0)
    out = pd.DataFrame(
        {
            "usual_gap_commits": np.nan_to_num(usual[ran], nan=0.0),  # one commit: no gap yet
            "gaps": gaps[ran],
            "missed_commits": len(order) - 1 - last[ran],
        },
        index=pd.Index(keys.take(ran), name=by),
    )
    return out
