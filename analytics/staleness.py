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
    """``usual_gaps`` of runs in order of creation."""
    gaps = ordered.groupby(by)["created_at"].diff().dt.total_seconds() / 3600
    out = (
        ordered.assign(gap=gaps)
        .groupby(by)
        .agg(
            last_run_at=("created_at", "max"),
            usual_gap_hours=("gap", "median"),
            gaps=("gap", "count"),
        )
    )
    if reference is None or pd.isna(reference):
        out["silent_hours"] = pd.Series(np.nan, index=out.index, dtype=float)
    else:
        out["silent_hours"] = (
            pd.Timestamp(reference) - out["last_run_at"]
        ).dt.total_seconds() / 3600
    return out


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
    driven = ordered.loc[work, by].unique()
    at = position[codes]
    chosen = ordered[by].isin(driven).to_numpy() & (at >= 0)
    keys, pos = ordered[by][chosen], at[chosen]
    # Each (by value, commit) once, by commit within its group: one sort of integer pairs.
    group = pd.factorize(keys)[0].astype(np.int64)  # a missing value (-1): grouped by none
    _, first = np.unique(group * len(order) + pos, return_index=True)
    ran = pd.DataFrame({by: keys.iloc[first].to_numpy(), "pos": pos[first]})
    out = (
        ran.assign(gap=ran.groupby(by)["pos"].diff())
        .groupby(by)
        .agg(usual_gap_commits=("gap", "median"), gaps=("gap", "count"), last=("pos", "max"))
    )
    out["usual_gap_commits"] = out["usual_gap_commits"].fillna(0.0)  # one commit: no gap yet
    out["missed_commits"] = len(order) - 1 - out.pop("last")
    return out
