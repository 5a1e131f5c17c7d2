"""Coverage diff at a migration: which logical jobs ran before it and have no successor after.

A predecessor's job name is mapped through its lineage's ``job_renames`` (a stem at the start
of the name, e.g. e2e_fully_async_policy_fsdp2 -> e2e_v1_separate_async_fsdp2); a job whose
mapped name does not run in the W days after the event is ``lost``. A lineage with no workflow
running after the event (verl's trtllm workflow after #7357) loses every job.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np
import pandas as pd

from analytics.before_after import either_side, event_pairs, rows_around

MIGRATION_KINDS = ("migration",)


def successor_names(
    names: pd.Series, lineages: pd.Series, renames: Mapping[str, Mapping[str, str]]
) -> pd.Series:
    """Each job name with its lineage's longest matching stem replaced by the successor stem;
    computed once per distinct (lineage, name), in a dict: a merge cost the page 5 ms."""
    mapped: dict[tuple[object, str], str] = {}
    successors = []
    for lineage, name in zip(lineages.tolist(), names.tolist(), strict=True):
        if (lineage, name) not in mapped:
            mapped[lineage, name] = _rename(name, renames.get(lineage, {}))
        successors.append(mapped[lineage, name])
    return pd.Series(successors, index=names.index, dtype="str", name="successor")


def _rename(name: str, stems: Mapping[str, str]) -> str:
    for stem in sorted(stems, key=len, reverse=True):
        if re.match(re.escape(stem) + r"(?![A-Za-z0-9])", name):
            return stems[stem] + name[len(stem) :]
    return name


def coverage_diff(
    jobs: pd.DataFrame,
    events: pd.DataFrame,
    renames: Mapping[str, Mapping[str, str]],
    *,
    window_days: int,
    kinds: tuple[str, ...] = MIGRATION_KINDS,
) -> pd.DataFrame:
    """One row per (event, lineage, job) for the events of ``kinds``: event_date, event_pr,
    event_title, lineage, successor_job (its name mapped through the renames), logical_job
    (as it ran before), before_runs, last_workflow_path, last_run_at, last_run_url (the
    html_url of its last run before; NaN when ``jobs`` have none), after_runs and ``status``:
    kept, lost (ran before, no successor after) or added (new after). ``jobs``: logical jobs
    (non-excluded are counted) with lineage, workflow_path, created_at and optionally html_url
    (of the run); or those jobs counted (store.migration_counts.job_segments): per segment of
    the windows, workflow_path and logical_job one row of ``n`` counted jobs with created_at
    the last one's (an after window's runs are then counted per job and summed); ``events``:
    analytics.config_tables.event_table. Grouped in numpy over the rows' codes, where pandas'
    sorts, groupbys and merges cost the Migrations page 40 ms for a few hundred rows."""
    chosen = events[events["event_kind"].isin(kinds)]
    pairs = event_pairs(chosen, sorted(jobs["lineage"].dropna().unique()))
    ran = jobs if "n" in jobs else jobs[jobs["logical_outcome"] != "excluded"]
    if "html_url" not in ran:
        ran = ran.assign(html_url=None)
    rows, pair, side = rows_around(ran, pairs, either_side(window_days))
    successor = successor_names(ran["logical_job"], ran["lineage"], renames).iloc[rows]
    name, names = pd.factorize(successor, sort=True)
    job, job_names = pd.factorize(ran["logical_job"].iloc[rows], sort=True)
    # before: a group per (pair, successor, job); after: per (pair, successor)
    named = pair * len(names) + name
    before, after = np.flatnonzero(side == 0), np.flatnonzero(side == 1)
    keys, group = np.unique(named[before] * len(job_names) + job[before], return_inverse=True)
    before_runs = _runs(ran, rows[before], group, len(keys))
    after_keys, after_group = np.unique(named[after], return_inverse=True)
    after_runs = _runs(ran, rows[after], after_group, len(after_keys))
    # the last run before of each group, by time then run id; its last known address
    at = rows[before]
    by_time = np.lexsort((_run_ids(ran)[at], ran["created_at"].array.asi8[at]))
    last = _last_of(group[by_time], len(keys), by_time)
    linked = by_time[ran["html_url"].notna().to_numpy()[at[by_time]]]
    last_url = _last_of(group[linked], len(keys), linked)  # none known: the last row's null
    # one row per before group, then one per successor that ran only after (added)
    seen = keys // len(job_names)
    added = np.setdiff1d(after_keys, seen)
    named_of = np.concatenate([seen, added])
    job_of = np.concatenate([keys % len(job_names), np.full(len(added), -1)])
    order = np.lexsort((job_of, named_of))  # an outer merge's order: by pair, successor, job
    named_of, job_of = named_of[order], job_of[order]
    row_of = np.concatenate([at[last], np.full(len(added), -1)])[order]
    url_of = np.concatenate([at[np.where(last_url >= 0, last_url, last)], np.full(len(added), -1)])
    url_of = url_of[order]
    runs_before = np.concatenate([before_runs, np.zeros(len(added), dtype=np.int64)])[order]
    runs_after = np.zeros(len(named_of), dtype=np.int64)
    found = np.searchsorted(after_keys, named_of)
    hit = found < len(after_keys)
    hit[hit] = after_keys[found[hit]] == named_of[hit]
    runs_after[hit] = after_runs[found[hit]]
    at_pair = named_of // len(names)
    successor_job = names.to_numpy(dtype=object)[named_of % len(names)]
    logical_job = np.where(
        job_of >= 0, job_names.to_numpy(dtype=object)[np.maximum(job_of, 0)], successor_job
    )
    status = np.where(runs_before == 0, "added", np.where(runs_after == 0, "lost", "kept"))
    # sort_values(["event_date", "lineage", "status", "logical_job"]) of the rows in that order
    order = np.lexsort(
        (
            np.unique(logical_job, return_inverse=True)[1],
            np.unique(status, return_inverse=True)[1],
            pd.factorize(pairs["lineage"], sort=True)[0][at_pair],
            pairs["event_date"].array.asi8[at_pair],
        )
    )
    shown = pairs.columns.drop(["pair", "event_kind"])
    columns = {column: pairs[column].array.take(at_pair[order]) for column in shown}
    return pd.DataFrame(
        {
            **columns,
            "successor_job": successor_job[order],
            "logical_job": logical_job[order],
            "before_runs": runs_before[order],
            "last_workflow_path": ran["workflow_path"].array.take(row_of[order], allow_fill=True),
            "last_run_at": ran["created_at"].array.take(row_of[order], allow_fill=True),
            "last_run_url": ran["html_url"].array.take(url_of[order], allow_fill=True),
            "after_runs": runs_after[order],
            "status": status[order],
        },
        index=order,
    )


def _run_ids(ran: pd.DataFrame) -> np.ndarray:
    """The rows' run ids as floats (NaN on counted rows), to order equal times as pandas."""
    return ran["run_id"].to_numpy(dtype=np.float64, na_value=np.nan)


def _runs(ran: pd.DataFrame, rows: np.ndarray, group: np.ndarray, groups: int) -> np.ndarray:
    """The runs of each of ``groups`` (``group``: each of ``rows``'): the counted jobs' ``n``
    summed, or the distinct run ids of the rows."""
    if "n" in ran:
        return np.bincount(group, ran["n"].to_numpy(dtype=np.int64)[rows], groups).astype(np.int64)
    run, ids = pd.factorize(ran["run_id"].iloc[rows])
    distinct = np.unique(group[run >= 0] * (len(ids) + 1) + run[run >= 0]) // (len(ids) + 1)
    return np.bincount(distinct, minlength=groups).astype(np.int64)


def _last_of(group: np.ndarray, groups: int, positions: np.ndarray) -> np.ndarray:
    """Of ``positions`` in order (``group``: each one's), the last of each of ``groups``; -1
    for a group without one."""
    place = np.full(groups, -1, dtype=np.int64)
    np.maximum.at(place, group, np.arange(len(group)))
    last: np.ndarray = np.append(positions, -1)[place]
    return last


NO_SUCCESSOR = "no successor"
LOST_COLUMNS = [
    "event_date",
    "event_pr",
    "event_title",
    "lineage",
    "logical_job",
    "last_workflow_path",
    "before_runs",
    "last_run_at",
    "last_run_url",
    "successor",
]


def lost_jobs(diff: pd.DataFrame) -> pd.DataFrame:
    """The jobs of a coverage diff that ran before and have no successor after: the event
    columns, lineage, logical_job, last_workflow_path (its workflow), before_runs, last_run_at,
    last_run_url and ``successor``: "no successor", or "no successor (<name> did not run)" when
    the lineage's renames name one that never ran. A lost job's successor_job is its own name
    unless renamed, so it is not a column here."""
    lost = diff[diff["status"] == "lost"].reset_index(drop=True)
    renamed = lost["successor_job"] != lost["logical_job"]
    named = NO_SUCCESSOR + " (" + lost["successor_job"].astype(str) + " did not run)"
    lost["successor"] = named.where(renamed, NO_SUCCESSOR)
    return lost[LOST_COLUMNS]
