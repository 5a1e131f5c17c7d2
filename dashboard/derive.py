"""Pure derivations the pages need and ``analytics`` does not offer: tile statuses, grid cells,
successor strips, NEW signatures, runner attribution. DataFrames in and out,
no Streamlit, so they are tested like the analytics."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analytics import rates
from analytics.evidence import KNOWN

RECENT_RUNS = 10  # TestGrid's num_columns_recent: the runs a tile status looks at
NEW_DAYS = 21  # Treeherder: a failure line unseen for 21 days is new
STATUSES = ("PASSING", "FLAKY", "FAILING", "STALE", "NO DATA")
JOB_KEYS = ["workflow_path", "logical_job"]


def tile_statuses(
    runs: pd.DataFrame, by: str, reference: pd.Timestamp | None, stale_factor: float, min_runs: int
) -> pd.DataFrame:
    """One row per ``by`` value: status, runs, success rate with interval, last run.

    STALE: no run for ``stale_factor`` times its usual (median) gap before ``reference`` (the
    repository's newest run); FAILING: its two latest counted runs failed; PASSING: its last
    RECENT_RUNS counted runs all passed on the first attempt; NO DATA: nothing counted;
    FLAKY otherwise."""
    table = rates.stability(runs, [by], min_runs).set_index(by)
    ordered = runs.sort_values(["created_at", "run_id"], kind="stable")
    gaps = ordered["created_at"] - ordered.groupby(by)["created_at"].shift()
    usual_gap = gaps.groupby(ordered[by]).median()
    last_run = ordered.groupby(by)["created_at"].max()
    counted = ordered[ordered["logical_outcome"] != "excluded"]
    recent = counted.groupby(by).tail(RECENT_RUNS)
    not_pass = (recent["logical_outcome"] != "pass").groupby(recent[by]).sum()
    latest_two = counted.groupby(by).tail(2)
    fails = (latest_two["logical_outcome"] == "fail").groupby(latest_two[by]).sum()
    table = table.assign(last_run=last_run, usual_gap=usual_gap)
    idle = (reference - table["last_run"]) if reference is not None else pd.NaT
    stale = (idle > stale_factor * table["usual_gap"]).fillna(False)
    table["status"] = np.select(
        [
            stale.to_numpy(dtype=bool),
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


def successor_first_runs(
    runs: pd.DataFrame, events: pd.DataFrame, first_runs: int, window_days: int
) -> pd.DataFrame:
    """The first ``first_runs`` counted runs of each workflow that first ran around an event
    (from a day before it to ``window_days`` after): the new workflows a migration created.

    Columns: event_pr, event_title, workflow_path, order, logical_outcome, failure_category,
    created_at, html_url."""
    born = runs.groupby("workflow_path")["created_at"].min()
    counted = runs[runs["logical_outcome"] != "excluded"]
    counted = counted.sort_values(["created_at", "run_id"], kind="stable")
    strips = []
    for event in events.itertuples():
        start = event.event_date - pd.Timedelta(days=1)
        new = born[(born >= start) & (born < event.event_date + pd.Timedelta(days=window_days))]
        if new.empty:
            continue
        first = (
            counted[counted["workflow_path"].isin(new.index)]
            .groupby("workflow_path")
            .head(first_runs)
        )
        strips.append(
            first.assign(
                event_pr=event.event_pr,
                event_title=event.event_title,
                order=first.groupby("workflow_path").cumcount() + 1,
            )
        )
    columns = [
        "event_pr",
        "event_title",
        "workflow_path",
        "order",
        "logical_outcome",
        "failure_category",
        "created_at",
        "html_url",
    ]
    return (
        pd.concat(strips, ignore_index=True)[columns] if strips else pd.DataFrame(columns=columns)
    )


NO_STEP = "(no step)"


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


def mark_new(signatures: pd.DataFrame, reference: pd.Timestamp) -> pd.DataFrame:
    """``new``: the signature was first seen (in the whole history) within NEW_DAYS of
    ``reference``, the end of the selected range."""
    start = reference - pd.Timedelta(days=NEW_DAYS)
    return signatures.assign(new=signatures["first_seen"] >= start)


def with_runner_pool(jobs: pd.DataFrame) -> pd.DataFrame:
    """``runner_pool``: the job's runner labels (``labels`` as stored JSON text) joined by
    "+"; "(no runner)" when it never ran. Computed once per distinct label set."""
    distinct = pd.Series(jobs["labels"].dropna().unique(), dtype="object")
    names = distinct.str.replace(r'[\[\]"\s]', "", regex=True).str.replace(",", "+")
    pools = jobs["labels"].map(dict(zip(distinct, names.where(names.str.len() > 0), strict=True)))
    return jobs.assign(
        runner_pool=pools.fillna("(no runner)"), runner_name=jobs["runner_name"].fillna("(none)")
    )


def works_elsewhere(jobs: pd.DataFrame, by: str) -> pd.DataFrame:
    """Per ``by`` value (runner or pool): of its failed logical jobs, the share whose job
    passed on another ``by`` value in the selection (PyTorch HUD's "works elsewhere").

    Columns: ``by``, failed_jobs, works_elsewhere."""
    passed = jobs.loc[jobs["logical_outcome"] == "pass", [*JOB_KEYS, by]].drop_duplicates()
    where_passed = passed.groupby(JOB_KEYS).size().rename("passed_on")
    failed = jobs[jobs["logical_outcome"] == "fail"][[*JOB_KEYS, by]]
    failed = failed.merge(where_passed.reset_index(), on=JOB_KEYS, how="left").merge(
        passed.assign(passed_here=1), on=[*JOB_KEYS, by], how="left"
    )
    elsewhere = failed["passed_on"].fillna(0) - failed["passed_here"].fillna(0) > 0
    return (
        failed.assign(elsewhere=elsewhere)
        .groupby(by)
        .agg(failed_jobs=("elsewhere", "size"), works_elsewhere=("elsewhere", "mean"))
        .reset_index()
    )


def environment_failures(failures: pd.DataFrame, jobs: pd.DataFrame) -> pd.DataFrame:
    """Failures per environment fact and version found in their logs, with the categories,
    logical jobs and runner pools they hit.

    Columns: fact, version, failures, jobs, pools, categories."""
    facts = failures[["job_id", "category", "env"]].assign(
        env=failures["env"].map(lambda env: list((env or {}).items()))
    )
    facts = facts.explode("env").dropna(subset=["env"])
    if facts.empty:
        return pd.DataFrame(columns=["fact", "version", "failures", "jobs", "pools", "categories"])
    facts[["fact", "version"]] = pd.DataFrame(facts.pop("env").tolist(), index=facts.index)
    failed = jobs[jobs["red_job_id"].isin(facts["job_id"])]
    located = with_runner_pool(failed)[["red_job_id", "logical_job", "runner_pool"]]
    facts = facts.merge(located, left_on="job_id", right_on="red_job_id", how="left")
    grouped = facts.groupby(["fact", "version"])
    table = grouped.agg(
        failures=("job_id", "size"),
        jobs=("logical_job", "nunique"),
        pools=("runner_pool", lambda p: ", ".join(sorted(p.dropna().unique()))),
    )
    table["categories"] = grouped["category"].agg(
        lambda c: ", ".join(f"{k} {v}" for k, v in c.value_counts().items())
    )
    return table.reset_index().sort_values(["fact", "failures"], ascending=[True, False])
