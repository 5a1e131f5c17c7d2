"""Operational health: time to repair (MTTR), queue time and duration percentiles, and the cost
of reruns (retry tax). Staleness, works-elsewhere and environment failures have their own
modules (analytics.staleness, analytics.elsewhere, analytics.environments)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from analytics import sequences

# The device count at the end of a runner label or name: L20x8 -> 8, linux-aarch64-a3-8 -> 8.
DEVICES_PATTERN = r"(?i)(?:(?<=x)|(?<=-))(\d+)(?=-|$)"


def repair_times(
    runs: pd.DataFrame, by: Sequence[str] = ("workflow_path", "head_branch")
) -> pd.DataFrame:
    """One row per red streak of logical runs (ordered by created_at within ``by``): the first
    hard red (``red_run_id``, ``red_at``), the next green (``green_run_id``, ``green_at``; NaT
    while still red) and ``hours`` between them (NaN while still red)."""
    keys = list(by)
    outcome = runs["logical_outcome"].to_numpy()
    kept = np.flatnonzero(outcome != "excluded")
    rows, group = sequences.ordered(runs, keys, kept, ["created_at"])
    red = outcome[rows] == "fail"
    previous, _ = sequences.neighbours(group)
    starts = np.flatnonzero(red & ~((previous >= 0) & red[previous]))
    # The next green at or after each row: a running minimum of green positions, from the end.
    positions = np.where(red, len(rows), np.arange(len(rows)))
    next_green = np.minimum.accumulate(positions[::-1])[::-1][starts]
    repaired = next_green < len(rows)
    repaired[repaired] = group[next_green[repaired]] == group[starts[repaired]]
    red_rows, green_rows = rows[starts], rows[np.where(repaired, next_green, 0)]

    def at(column: str, where: np.ndarray) -> pd.Series:
        return runs[column].iloc[where].reset_index(drop=True)

    red_at, green_at = at("created_at", red_rows), at("created_at", green_rows).where(repaired)
    return pd.DataFrame(
        {
            **{k: at(k, red_rows) for k in keys},
            "red_run_id": at("run_id", red_rows),
            "red_at": red_at,
            "green_run_id": at("run_id", green_rows).astype("Int64").where(repaired),
            "green_at": green_at,
            "hours": hours_between(red_at, green_at),
        }
    )


def hours_between(red_at: pd.Series, green_at: pd.Series) -> pd.Series:
    """Hours from each streak's first hard red to its repair (NaN while still red)."""
    return (green_at - red_at).dt.total_seconds() / 3600


def streaks_of_turns(turns: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """repair_times from where the runs turn red or green (store.job_counts.red_turns, with
    ``keys``, which include workflow_path and head_branch): each turn to red paired with the
    turn to green after it in its sequence, in repair_times' order (keys in value order,
    missing last, then time), so that mttr adds them alike: ``keys``, red_run_id, red_at,
    green_at, hours. Ordered on numpy positions (analytics.sequences), as repair_times is: a
    sort of the frame on its text keys cost more than the rest together."""
    by = list(keys)
    rows, group = sequences.ordered(turns, by, np.arange(len(turns)), ["created_at", "run_id"])
    _, following = sequences.neighbours(group)
    red = np.flatnonzero(turns["red"].to_numpy()[rows] == 1)
    repaired = following[red] >= 0  # turns alternate: a red turn's next is its repair
    red_rows, green_rows = rows[red], rows[following[red]]
    streaks = turns[[*by, "run_id", "created_at"]].iloc[red_rows].reset_index(drop=True)
    streaks.columns = [*by, "red_run_id", "red_at"]
    green_at = turns["created_at"].iloc[green_rows].reset_index(drop=True).where(repaired)
    streaks["green_at"] = green_at
    return streaks.assign(hours=hours_between(streaks["red_at"], green_at))


def mttr(streaks: pd.DataFrame, by: Sequence[str] = ("workflow_path",)) -> pd.DataFrame:
    """Mean and median time to repair (hours) over repaired streaks, with the repaired and
    still-open streak counts, per ``by``, in key order (missing last)."""
    keys = list(by)
    # One column's built-in aggregations: named aggregations cost ten times as much here; the
    # frame made from the result's arrays, not renamed and reset: a third of the time again.
    table = streaks.groupby(keys, dropna=False)["hours"].agg(["mean", "median", "count", "size"])
    repaired = table["count"].to_numpy()
    return pd.DataFrame(
        {
            **{key: table.index.get_level_values(key) for key in keys},
            "mttr_hours": table["mean"].to_numpy(),
            "median_hours": table["median"].to_numpy(),
            "repaired": repaired,
            "open": table["size"].to_numpy() - repaired,
        }
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
    streaks = repair_times(runs, streak_keys(keys))
    if attempts is not None:
        context = runs.drop_duplicates("run_id").set_index("run_id")[keys]
        attempts = attempts.drop(columns=keys, errors="ignore")
        attempts = attempts.join(context, on="run_id", how="inner")
    return streak_health(streaks, attempts, keys)


def streak_keys(by: Sequence[str]) -> list[str]:
    """What a streak is walked within: ``by``, and each workflow and branch apart."""
    return list(dict.fromkeys([*by, "workflow_path", "head_branch"]))


def streak_health(
    streaks: pd.DataFrame, attempts: pd.DataFrame | None, by: Sequence[str]
) -> pd.DataFrame:
    """health_table from the red streaks (repair_times' rows, or in_streak_order's, with
    ``by``) and the job ``attempts`` each with its run's ``by`` (None: REPAIR_COLUMNS only)."""
    keys = list(by)
    repair = mttr(streaks, keys).rename(columns={"median_hours": "median_repair_hours"})
    if attempts is None:  # mttr's rows: in key order, every count given
        return repair[[*keys, *REPAIR_COLUMNS]]
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
