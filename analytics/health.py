"""Operational health: time to repair, queue and duration, staleness, the cost of reruns, and
where failures happen (runner, environment version) with PyTorch's "works elsewhere"."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from analytics.rates import stability, with_period

GREEN_OUTCOMES = ("pass", "flaky")
# The device count at the end of a runner label or name: L20x8 -> 8, linux-aarch64-a3-8 -> 8.
DEVICES_PATTERN = r"(?i)(?:(?<=x)|(?<=-))(\d+)(?=-|$)"


def repair_times(
    runs: pd.DataFrame, by: Sequence[str] = ("workflow_path", "head_branch")
) -> pd.DataFrame:
    """One row per red streak of logical runs (ordered by created_at within ``by``): the first
    hard red (``red_run_id``, ``red_at``), the next green (``green_run_id``, ``green_at``; NaT
    while still red) and ``hours`` between them (NaN while still red)."""
    keys = list(by)
    seq = runs[runs["logical_outcome"] != "excluded"].sort_values([*keys, "created_at"])
    red = seq["logical_outcome"] == "fail"
    group = seq.groupby(keys, sort=False, dropna=False)
    starts = red & ~group["logical_outcome"].shift(1).eq("fail")
    # The next green at or after each row: a backward fill of green times within the group.
    green_at = seq["created_at"].where(~red)
    green_id = seq["run_id"].where(~red)
    seq = seq.assign(
        next_green_at=green_at.groupby([seq[k] for k in keys], dropna=False).bfill(),
        next_green_id=green_id.groupby([seq[k] for k in keys], dropna=False).bfill(),
    )
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
            open=("hours", lambda h: int(h.isna().sum())),
        )
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
        quantiles = grouped[column].quantile([0.5, 0.95]).unstack()
        out[f"{column}_p50_min"] = quantiles[0.5]
        out[f"{column}_p95_min"] = quantiles[0.95]
    return out.reset_index()


def stale_workflows(
    runs: pd.DataFrame, now: pd.Timestamp, stale_factor: float = 3.0, min_gaps: int = 3
) -> pd.DataFrame:
    """Per workflow: last_run_at, usual_gap_hours (median gap between runs), silent_hours, and
    ``status``: STALE when silent for longer than stale_factor x the usual gap, OK otherwise,
    "not enough data" with fewer than ``min_gaps`` gaps. Pass the scoped runs (default branch
    pushes and schedules): a PR-only workflow has no rhythm to miss."""
    ordered = runs.sort_values("created_at")
    gaps = ordered.groupby("workflow_path")["created_at"].diff().dt.total_seconds() / 3600
    out = (
        ordered.assign(gap=gaps)
        .groupby("workflow_path")
        .agg(
            last_run_at=("created_at", "max"),
            usual_gap_hours=("gap", "median"),
            gaps=("gap", "count"),
        )
        .reset_index()
    )
    out["silent_hours"] = (now - out["last_run_at"]).dt.total_seconds() / 3600
    out["status"] = np.select(
        [out["gaps"] < min_gaps, out["silent_hours"] > stale_factor * out["usual_gap_hours"]],
        ["not enough data", "STALE"],
        default="OK",
    )
    return out


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


def rates_with_elsewhere(
    jobs: pd.DataFrame, where: str, *, freq: str = "W", min_runs: int = 5
) -> pd.DataFrame:
    """Rates of logical jobs per (logical_job, period, ``where``) (e.g. runner_name), and
    ``works_elsewhere``: the same logical job passed, in the same period (day or week), under
    another value of ``where``. ``jobs``: logical jobs with created_at."""
    table = stability(with_period(jobs, freq), ["logical_job", "period", where], min_runs)
    green = table["pass"] + table["flaky"]
    green_total = green.groupby([table["logical_job"], table["period"]]).transform("sum")
    return table.assign(works_elsewhere=(green_total - green) > 0)


def environment_column(failures: pd.DataFrame, key: str) -> pd.Series:
    """The environment version ``key`` (cann, torch, driver...) of each failure, from its
    ``env`` dict; None where the log did not show it."""
    return failures["env"].map(lambda env: (env or {}).get(key))


def failures_by_environment(failures: pd.DataFrame, jobs: pd.DataFrame, key: str) -> pd.DataFrame:
    """Hard-failed logical jobs per environment version ``key``. The fingerprint comes from
    failed jobs' logs only, so this counts failures, not a rate: failures, logical_jobs,
    runners, first_seen, last_seen, and works_elsewhere_share = the share of those failures
    whose logical job passed in the same week on another run."""
    versions = failures.assign(version=environment_column(failures, key)).dropna(subset="version")
    failed = jobs[jobs["logical_outcome"] == "fail"].merge(
        versions[["job_id", "version"]], left_on="red_job_id", right_on="job_id"
    )
    weekly = with_period(jobs[jobs["logical_outcome"].isin(GREEN_OUTCOMES)], "W")
    greens = weekly.groupby(["logical_job", "period"]).size()
    failed = with_period(failed, "W")
    index = pd.MultiIndex.from_frame(failed[["logical_job", "period"]])
    failed["elsewhere"] = index.map(greens).fillna(0).to_numpy() > 0
    return (
        failed.groupby("version")
        .agg(
            failures=("run_id", "size"),
            logical_jobs=("logical_job", "nunique"),
            runners=("runner_name", "nunique"),
            first_seen=("created_at", "min"),
            last_seen=("created_at", "max"),
            works_elsewhere_share=("elsewhere", "mean"),
        )
        .reset_index()
        .rename(columns={"version": key})
    )
