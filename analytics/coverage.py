"""Coverage diff at a migration: which logical jobs ran before it and have no successor after.

A predecessor's job name is mapped through its lineage's ``job_renames`` (a stem at the start
of the name, e.g. e2e_fully_async_policy_fsdp2 -> e2e_v1_separate_async_fsdp2); a job whose
mapped name does not run in the W days after the event is ``lost``. A lineage with no workflow
running after the event (verl's trtllm workflow after #7357) loses every job.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import pandas as pd

from analytics.before_after import either_side, event_pairs, rows_around

MIGRATION_KINDS = ("migration",)


def successor_names(
    names: pd.Series, lineages: pd.Series, renames: Mapping[str, Mapping[str, str]]
) -> pd.Series:
    """Each job name with its lineage's longest matching stem replaced by the successor stem;
    computed once per distinct (lineage, name)."""
    pairs = pd.DataFrame({"lineage": lineages, "name": names})
    distinct = pairs.drop_duplicates()
    mapped = [
        _rename(name, renames.get(lineage, {}))
        for lineage, name in zip(distinct["lineage"], distinct["name"], strict=True)
    ]
    lookup = distinct.assign(successor=mapped)
    return pairs.merge(lookup, on=["lineage", "name"], how="left")["successor"].set_axis(
        names.index
    )


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
    event_title, lineage, logical_job (as it ran before), successor_job (its name mapped
    through the renames), before_runs, after_runs, last_workflow_path, last_run_at,
    last_run_url (the html_url of its last run before; NaN when ``jobs`` have none), and
    ``status``: kept, lost (ran before, no successor after) or added (new after). ``jobs``:
    logical jobs (non-excluded are counted) with lineage, workflow_path, created_at and
    optionally html_url (of the run); or those jobs counted (store.migration_counts.
    job_segments): per segment of the windows, workflow_path and logical_job one row of ``n``
    counted jobs with created_at the last one's (an after window's runs are then counted per
    job and summed); ``events``: analytics.config_tables.event_table."""
    chosen = events[events["event_kind"].isin(kinds)]
    pairs = event_pairs(chosen, sorted(jobs["lineage"].dropna().unique()))
    ran = jobs if "n" in jobs else jobs[jobs["logical_outcome"] != "excluded"]
    if "html_url" not in ran:
        ran = ran.assign(html_url=pd.Series(pd.NA, index=ran.index, dtype="object"))
    ran = ran.assign(successor_job=successor_names(ran["logical_job"], ran["lineage"], renames))
    around = rows_around(ran, pairs, either_side(window_days))
    before, after = around[around["side"] == "before"], around[around["side"] == "after"]
    # counted jobs (``n``): a row per workflow and job, the runs counted, created_at its last
    column, runs = ("n", "sum") if "n" in ran else ("run_id", "nunique")
    grouped = before.sort_values(["created_at", "run_id"], kind="stable").groupby(
        ["pair", "successor_job", "logical_job"]
    )
    # one "last" over the three columns: a named aggregation per column costs a page 10 ms
    last = grouped[["workflow_path", "created_at", "html_url"]].last()
    seen_before = pd.concat(
        [grouped[column].agg(runs).rename("before_runs"), last.add_prefix("last_")], axis=1
    ).rename(columns={"last_created_at": "last_run_at", "last_html_url": "last_run_url"})
    seen_before = seen_before.reset_index()
    seen_after = after.groupby(["pair", "successor_job"])[column].agg(runs).rename("after_runs")
    diff = seen_before.merge(seen_after.reset_index(), on=["pair", "successor_job"], how="outer")
    diff["logical_job"] = diff["logical_job"].fillna(diff["successor_job"])
    diff[["before_runs", "after_runs"]] = diff[["before_runs", "after_runs"]].fillna(0).astype(int)
    diff["status"] = "kept"
    diff.loc[diff["after_runs"] == 0, "status"] = "lost"
    diff.loc[diff["before_runs"] == 0, "status"] = "added"
    out = pairs.drop(columns="event_kind").merge(diff, on="pair")
    return out.drop(columns="pair").sort_values(["event_date", "lineage", "status", "logical_job"])


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
