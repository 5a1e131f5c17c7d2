"""Operational health: time to repair (MTTR), queue time and duration percentiles, and the cost
of reruns (retry tax). Staleness, works-elsewhere and environment failures have their own
modules (analytics.staleness, analytics.elsewhere, analytics.environments)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

# The device count at the end of a runner label or name: L20x8 -> 8, linux-aarch64-a3-8 -> 8.
DEVICES_PATTERN = r"(?i)(?:(?<=x)|(?<=-))(\d+)(?=-|$)"


def repair_times(
    runs: pd.DataFrame, by: Sequence[str] = ("workflow_path", "head_branch")
) -> pd.DataFrame:
    """One row per red streak of logical runs (ordered by created_at within ``by``): the first
    hard red (``red_run_id``, ``red_at``), the next green (``green_run_id``, ``green_at``; NaT
    while still red) and ``hours`` between them (NaN while still red)."""
    keys = list(by)
    # Sorted on a narrow frame: sorting every column of the runs costs more than the rest.
    columns = list(dict.fromkeys([*keys, "created_at", "run_id", "logical_outcome"]))
    seq = runs.loc[runs["logical_outcome"] != "excluded", columns]
    seq = seq.sort_values([*keys, "created_at"])
    red = seq["logical_outcome"] == "fail"
    group = seq.groupby(keys, sort=False, dropna=False).ngroup()
    starts = red & ~(red.shift(1, fill_value=False) & group.eq(group.shift(1)))
    # The next green at or after each row: a backward fill of green times within the group.
    greens = seq[["created_at", "run_id"]].where(~red, axis=0)
    filled = greens.groupby(group, sort=False).bfill()
    seq = seq.assign(next_green_at=filled["created_at"], next_green_id=filled["run_id"])
    streaks = seq[starts]
    return pd.DataFrame(
        {
            **{k: streaks[k] for k in keys},
            "red_run_id": streaks["run_id"],
            "red_at": streaks["created_at"],
            "green_run_id": streaks["next_green_id"].astype("Int64"),
            "green_at": streaks["next_green_at"],
            "hours": (streaks["next_green_at"] - streaks["created_at"]).dt.total_seconds() / 3600,
        }
    ).reset_index(drop=True)


def mttr(streaks: pd.DataFrame, by: Sequence[str] = ("workflow_path",)) -> pd.DataFrame:
    """Mean and median time to repair (hours) over repaired streaks, with the repaired and
    still-open streak counts, per ``by``."""
    return (
        streaks.groupby(list(by), dropna=False)
        .agg(
            mttr_hours=("hours", "mean"),
            median_hours=("hours", "median"),
            repaired=("hours", "count"),
            streaks=("hours", "size"),
        )
        .assign(open=lambda t: t.pop("streaks") - t["repaired"])
        .reset_index()
    )


def timing(jobs: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """Queue time (created -> started) and duration (started -> completed) in minutes per
    ``by``: p50 and p95 of each, and the jobs counted."""
    frame = jobs.assign(
        queue=(jobs["started_at"] - jobs["created_at"]).dt.total_seconds() / 60,
        duration=(jobs["completed_at"] - jobs["started_at"]).dt.total_seconds() / 60,
    )
    grouped = frame.groupby(list(by), dropna=False)
    out = grouped.agg(jobs=("queue", "size"))
    for column in ("queue", "duration"):
        # pandas takes any list-like q; the stubs want an array
        quantiles = grouped[column].quantile([0.5, 0.95]).unstack()  # type: ignore[arg-type]
        quantiles = quantiles.reindex(columns=[0.5, 0.95])  # no jobs: no columns at all
        out[f"{column}_p50_min"] = quantiles[0.5]
        out[f"{column}_p95_min"] = quantiles[0.95]
    return out.reset_index()


def devices(jobs: pd.DataFrame) -> pd.Series:
    """Accelerators of each job's runner: the largest count in its labels, else in its runner
    name (L20x8 -> 8, linux-aarch64-a3-8 -> 8); 0 for hosted runners such as ubuntu-latest."""
    labels = jobs["labels"].explode()
    from_labels = labels.str.extract(DEVICES_PATTERN, expand=False).astype(float)
    from_labels = from_labels.groupby(level=0).max()
    from_name = jobs["runner_name"].str.extract(DEVICES_PATTERN, expand=False).astype(float)
    return from_labels.reindex(jobs.index).fillna(from_name).fillna(0).astype(int)


def retry_tax(jobs: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """What reruns cost per ``by``: rerun_jobs (jobs of attempts after the first that ran),
    rerun_minutes, and accelerator_hours = rerun minutes x devices of the runner / 60."""
    reruns = jobs[(jobs["run_attempt"] > 1) & jobs["started_at"].notna()]
    minutes = (reruns["completed_at"] - reruns["started_at"]).dt.total_seconds() / 60
    frame = reruns.assign(minutes=minutes, device_minutes=minutes * devices(reruns))
    out = frame.groupby(list(by), dropna=False).agg(
        rerun_jobs=("minutes", "size"),
        rerun_minutes=("minutes", "sum"),
        device_minutes=("device_minutes", "sum"),
    )
    out["accelerator_hours"] = out.pop("device_minutes") / 60
    return out.reset_index()


REPAIR_COLUMNS = ["median_repair_hours", "mttr_hours", "repaired", "open"]
HEALTH_COLUMNS = [
    *REPAIR_COLUMNS,
    "rerun_jobs",
    "accelerator_hours",
    "jobs",
    "duration_p50_min",
    "duration_p95_min",
    "queue_p50_min",
    "queue_p95_min",
]


def health_table(
    runs: pd.DataFrame, attempts: pd.DataFrame | None, by: Sequence[str]
) -> pd.DataFrame:
    """Per ``by`` (columns of both frames): time to repair (``mttr``, streaks within each
    workflow and branch), retry tax (``retry_tax``) and job duration and queue percentiles
    (``timing``), as the dashboard, the summary and the export show them. ``runs``: logical
    runs with the ``by`` columns; ``attempts``: every job of every attempt
    (store.frame_queries.load_jobs), of these runs or more: each takes its run's ``by``;
    None: only the time to repair, which the runs alone give.

    Columns: ``by``, HEALTH_COLUMNS (median_repair_hours: the median of ``mttr``), or with no
    ``attempts`` ``by`` and REPAIR_COLUMNS."""
    keys = list(by)
    streak_keys = list(dict.fromkeys([*keys, "workflow_path", "head_branch"]))
    repair = mttr(repair_times(runs, streak_keys), keys).rename(
        columns={"median_hours": "median_repair_hours"}
    )
    if attempts is None:
        repair[["repaired", "open"]] = repair[["repaired", "open"]].fillna(0).astype(int)
        return repair[[*keys, *REPAIR_COLUMNS]].sort_values(keys).reset_index(drop=True)
    context = runs.drop_duplicates("run_id").set_index("run_id")[keys]
    attempts = attempts.drop(columns=keys, errors="ignore").join(context, on="run_id", how="inner")
    ran = attempts[attempts["started_at"].notna()]
    table = (
        repair.merge(retry_tax(attempts, keys), on=keys, how="outer")
        .merge(timing(ran, keys), on=keys, how="outer")
        .drop(columns=["rerun_minutes"])
    )
    counts = ["repaired", "open", "rerun_jobs", "jobs"]
    table[counts] = table[counts].fillna(0).astype(int)
    table["accelerator_hours"] = table["accelerator_hours"].fillna(0.0)
    return table[[*keys, *HEALTH_COLUMNS]].sort_values(keys).reset_index(drop=True)
