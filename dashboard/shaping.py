"""Page-shaping helpers: what a page needs laid out that is no concept of its own (those live
in ``analytics``): tile statuses (STALE from analytics.staleness), the job x day grid cells,
unknown failures by stage, runner pools from stored labels. DataFrames in and out, no
Streamlit, so they are tested like the analytics."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analytics import rates
from analytics.evidence import KNOWN
from analytics.staleness import STALE, staleness

RECENT_RUNS = 10  # TestGrid's num_columns_recent: the runs a tile status looks at


def tile_statuses(
    runs: pd.DataFrame, by: str, reference: pd.Timestamp | None, stale_factor: float, min_runs: int
) -> pd.DataFrame:
    """One row per ``by`` value: status, runs, success rate with interval, last run.

    STALE: analytics.staleness against ``reference`` (the repository's newest run); FAILING:
    its two latest counted runs failed; PASSING: its last RECENT_RUNS counted runs all passed
    on the first attempt; NO DATA: nothing counted; FLAKY otherwise."""
    table = rates.stability(runs, [by], min_runs).set_index(by)
    silence = staleness(runs, by, reference, stale_factor).set_index(by).reindex(table.index)
    ordered = runs.sort_values(["created_at", "run_id"], kind="stable")
    counted = ordered[ordered["logical_outcome"] != "excluded"]
    recent = counted.groupby(by).tail(RECENT_RUNS)
    not_pass = (recent["logical_outcome"] != "pass").groupby(recent[by]).sum()
    latest_two = counted.groupby(by).tail(2)
    fails = (latest_two["logical_outcome"] == "fail").groupby(latest_two[by]).sum()
    table = table.assign(
        last_run=silence["last_run_at"],
        usual_gap_hours=silence["usual_gap_hours"],
        silent_hours=silence["silent_hours"],
    )
    table["status"] = np.select(
        [
            silence["status"].eq(STALE).to_numpy(),
            table["runs"].eq(0).to_numpy(),
            fails.reindex(table.index).fillna(0).ge(2).to_numpy(),
            not_pass.reindex(table.index).fillna(1).eq(0).to_numpy(),
        ],
        ["STALE", "NO DATA", "FAILING", "PASSING"],
        default="FLAKY",
    )
    table["label"] = rates.verdict_label(table.reset_index()).to_numpy()
    return table.reset_index().rename(columns={by: "name"})


def job_day_cells(jobs: pd.DataFrame, days: int) -> pd.DataFrame:
    """The worst state per logical job and day over the last ``days`` days of ``jobs``: a red
    run's category beats retry-green, which beats green; excluded runs leave a cell missing.

    Columns: logical_job, day, state, runs."""
    counted = jobs[jobs["logical_outcome"] != "excluded"]
    if counted.empty:
        return pd.DataFrame(columns=["logical_job", "day", "state", "runs"])
    day = counted["created_at"].dt.floor("D")
    counted = counted.assign(day=day)[day > day.max() - pd.Timedelta(days=days)]
    state = np.select(
        [counted["logical_outcome"] == "fail", counted["logical_outcome"] == "flaky"],
        [counted["category"].fillna("unknown").astype(str), "retry-green"],
        default="green",
    )
    rank = np.select([counted["logical_outcome"] == "fail", state == "retry-green"], [2, 1], 0)
    cells = counted.assign(state=state, rank=rank).sort_values(["rank", "created_at"])
    grouped = cells.groupby(["logical_job", "day"])
    return grouped.tail(1)[["logical_job", "day", "state"]].merge(
        grouped.size().rename("runs").reset_index(), on=["logical_job", "day"]
    )


NO_STEP = "(no step)"
NO_RUNNER = "(no runner)"


def unknown_by_stage(failures: pd.DataFrame) -> pd.DataFrame:
    """The unknown failures (``basis`` not in analytics.evidence.KNOWN) per stage and basis,
    most first; stage NO_STEP where the job stopped in no known step. Columns: stage, basis,
    failures."""
    unknown = failures[failures["basis"].notna() & ~failures["basis"].isin(KNOWN)]
    table = (
        unknown.assign(stage=unknown["stage"].fillna(NO_STEP))
        .groupby(["stage", "basis"])
        .size()
        .rename("failures")
        .reset_index()
    )
    order = table.sort_values(["failures", "stage", "basis"], ascending=[False, True, True])
    return order.reset_index(drop=True)


def with_runner_pool(jobs: pd.DataFrame) -> pd.DataFrame:
    """``runner_pool``: the job's runner labels (a tuple, store.frame_queries) joined by "+"; "(no
    runner)" when it never ran. Computed once per distinct label set."""
    codes, distinct = pd.factorize(jobs["labels"])
    names = np.array([*("+".join(labels) or NO_RUNNER for labels in distinct), NO_RUNNER])
    return jobs.assign(
        runner_pool=names[codes],  # code -1 (no labels) picks the last name
        runner_name=jobs["runner_name"].fillna("(none)"),
    )
