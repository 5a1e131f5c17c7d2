"""Stability of logical jobs from their counts: the flaky-jobs and runner tables, counted as they
are and once (analytics.once), and works elsewhere (analytics.elsewhere), computed from
logical jobs counted per workflow, logical job, ISO week, runner, labels, outcome and incident
(store.job_counts.job_counts; ``counts_of`` gives the same from a frame of logical jobs). The
database does the counting; the rates and intervals work on a few thousand rows."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analytics.elsewhere import NO_RUNNER_NAME, hosts, with_runner_pool
from analytics.incidents import KIND
from analytics.once import INCIDENT, ONCE, stability_once
from analytics.rates import rank_by_lower_bound
from analytics.text import filled
from store.job_counts import COUNT_KEYS
from store.vocabulary import (
    COUNTED_OUTCOMES,
    GREEN_OUTCOMES,
    HOSTED_RUNNERS,
    RED_OUTCOMES,
    short_lived_runners,
)

PLACE_KEYS = ["workflow_path", "logical_job", "week"]  # where works elsewhere looks for a green


def week_of(created_at: pd.Series) -> pd.Series:
    """The Monday (UTC) starting the ISO week of each time, as ``YYYY-MM-DD`` text: the week
    store.job_counts groups by."""
    days = created_at.dt.tz_convert("UTC").dt.tz_localize(None).dt.normalize()
    mondays = days - pd.to_timedelta(days.dt.day_of_week, unit="D")
    return pd.Series(mondays.dt.strftime("%Y-%m-%d"), index=created_at.index)


def job_incident(jobs: pd.DataFrame, members: pd.DataFrame) -> pd.Series:
    """The incident of each red logical job of ``jobs``: its last red shard's, the smallest id
    when several (store.incidents.load_members); NaN for the others."""
    by_job = members.groupby("job_id")["incident_id"].min()
    red = jobs["logical_outcome"].isin(RED_OUTCOMES)
    return jobs["red_job_id"].map(by_job).where(red)


def counts_of(jobs: pd.DataFrame, members: pd.DataFrame) -> pd.DataFrame:
    """store.job_counts.job_counts from a frame of logical jobs (analytics.frames): COUNT_KEYS,
    n, in no particular order."""
    keyed = jobs.assign(week=week_of(jobs["created_at"]), incident_id=job_incident(jobs, members))
    grouped = keyed.groupby(COUNT_KEYS, dropna=False, sort=False).size()
    return grouped.rename("n").reset_index()


def _placed(counts: pd.DataFrame) -> pd.DataFrame:
    """``counts`` with ``runner_pool`` and a ``runner_name`` for every row (analytics.elsewhere
    .with_runner_pool)."""
    return with_runner_pool(counts)


FLAKY_KEYS = ["lineage", "logical_job"]  # a logical job across its lineage's renames


def flaky_table(counts: pd.DataFrame, min_runs: int) -> pd.DataFrame:
    """analytics.once.flaky_table from counts with ``lineage``: logical jobs per lineage
    ranked by the Wilson lower bound of their flake rate, rates counted once beside."""
    table = stability_once(counts, counts[INCIDENT], FLAKY_KEYS, min_runs, weight="n")
    return rank_by_lower_bound(table, "flake_rate")


def elsewhere_flags(counts: pd.DataFrame, where: str) -> pd.DataFrame:
    """Per workflow, logical job, week and ``where`` (runner_pool or runner_name of
    ``_placed``) with a hard failure: ``fail`` (how many) and ``works_elsewhere``: the same
    logical job went green (pass or flaky) that week under another ``where``
    (analytics.elsewhere.failed_elsewhere)."""
    keys = [*PLACE_KEYS, where]
    green = counts["logical_outcome"].isin(GREEN_OUTCOMES)
    places = counts.assign(
        green=green, fail=counts["n"].where(counts["logical_outcome"] == "fail", 0)
    )
    places = places.groupby(keys, sort=False).agg(green=("green", "any"), fail=("fail", "sum"))
    greens = places.groupby(level=PLACE_KEYS, sort=False)["green"].transform("sum")
    places["works_elsewhere"] = (greens - places["green"]) > 0
    return places.loc[places["fail"] > 0, ["fail", "works_elsewhere"]].reset_index()


def runner_table(
    counts: pd.DataFrame, by: str, min_runs: int, incidents: pd.DataFrame
) -> pd.DataFrame:
    """Stability of logical jobs per ``by``
    (runner_pool or runner_name), as they are and counted once, with failed_jobs and
    works_elsewhere, ranked by the Wilson lower bound of the fail rate. Per runner_name, a row
    per host one can rate, the others pooled (runner_rows), with ``runners``: the hosts behind
    each row. Works elsewhere looks at each host: a failure on one works elsewhere when its job
    went green on another runner, another host of its row included. ``incidents``: the runner
    incidents of the range (store.incidents.INCIDENT_COLUMNS)."""
    placed = _placed(counts)
    flags = elsewhere_flags(placed, by)
    if by == "runner_name":
        rows = runner_rows(placed, min_runs, _host_incidents(incidents))
        failed = placed["logical_outcome"] == "fail"
        fails = placed[failed].assign(row=rows[failed])
        fails = fails.groupby([*PLACE_KEYS, by, "row"], sort=False)["n"].sum().reset_index()
        flags = fails.merge(flags.drop(columns="fail"), on=[*PLACE_KEYS, by]).drop(columns=by)
        flags = flags.rename(columns={"row": by, "n": "fail"})
        hosts_of = counts["runner_name"].groupby(rows.to_numpy(), sort=False).nunique()
        placed = placed.assign(runner_name=rows)
    table = stability_once(placed, placed[INCIDENT], [by], min_runs, weight="n")
    weighed = flags.assign(works=flags["fail"] * flags["works_elsewhere"])
    failed_jobs = weighed.groupby(by).agg(failed_jobs=("fail", "sum"), works=("works", "sum"))
    failed_jobs["works_elsewhere"] = failed_jobs.pop("works") / failed_jobs["failed_jobs"]
    table = table.merge(failed_jobs.reset_index(), on=by, how="left")
    table["failed_jobs"] = table["failed_jobs"].fillna(0).astype(int)
    if by == "runner_name":
        table["runners"] = table[by].map(hosts_of).fillna(0).astype(int)
    for end in ("", ONCE):
        table[f"fail_rate{end}"] = 1 - table[f"success_rate{end}"]
        table[f"fail_rate_low{end}"] = 1 - table[f"success_rate_high{end}"]
        table[f"fail_rate_high{end}"] = 1 - table[f"success_rate_low{end}"]
    return rank_by_lower_bound(table, "fail_rate")


def runner_rows(placed: pd.DataFrame, min_runs: int, named: pd.Series) -> pd.Series:
    """The runners-table row of each row of ``placed`` (_placed), aligned on it: its host when
    one can rate it (it ran at least ``min_runs`` counted logical jobs of ``placed``) or a
    runner incident names it (``named``: hosts); HOSTED_RUNNERS for GitHub's hosted VMs and
    "(none)" for the jobs that never ran, whatever their count; else the one row of the
    job's runner pool for its hosts that ran fewer, "(short-lived runners of <pool>)": runners
    that live for a job or a few (one container per job) have no rate of their own."""
    names = hosts(placed["runner_name"])
    counted = placed["n"].where(placed["logical_outcome"].isin(COUNTED_OUTCOMES), 0)
    runs = counted.groupby(names.to_numpy(), sort=False).transform("sum").to_numpy()
    kept = names.isin([*named.unique(), HOSTED_RUNNERS, NO_RUNNER_NAME]).to_numpy(dtype=bool)
    codes, pools = pd.factorize(placed["runner_pool"])
    pooled = np.array([short_lived_runners(pool) for pool in pools], dtype=object)[codes]
    return names.astype(object).where((runs >= min_runs) | kept, pooled)


def works_elsewhere_of(jobs: pd.DataFrame, counts: pd.DataFrame) -> pd.Series:
    """Whether each hard-failed logical job of ``jobs`` (workflow_path, logical_job, week,
    runner_name) works elsewhere by runner, from the ``counts`` of its range; aligned on
    ``jobs``."""
    flags = elsewhere_flags(_placed(counts), "runner_name")
    keyed = jobs[PLACE_KEYS].assign(runner_name=filled(jobs["runner_name"], NO_RUNNER_NAME))
    found = keyed.merge(flags, on=[*PLACE_KEYS, "runner_name"], how="left")
    return pd.Series(found["works_elsewhere"].fillna(False).to_numpy(dtype=bool), jobs.index)


def incidents_per_place(places: pd.Series, incidents: pd.DataFrame) -> pd.Series:
    """How many runner incidents (store.incidents.INCIDENT_COLUMNS) each of ``places`` had: a
    runner name (a host incident on any GitHub-hosted VM counts for their pooled row,
    analytics.elsewhere.hosts), or a runner pool (its labels joined by "+", analytics
    .elsewhere.with_runner_pool) when the incident names one of its labels."""
    counts = _host_incidents(incidents).value_counts().to_dict()
    names = places.astype(str)
    # Only a place named by an incident, or a pool of several labels, can have one: the
    # others (thousands of runners) are 0 without a Python call each.
    maybe = names.isin(list(counts)) | names.str.contains("+", regex=False)
    found = np.zeros(len(names), dtype=int)
    found[maybe.to_numpy(dtype=bool)] = [
        sum(counts.get(part, 0) for part in set(place.split("+"))) for place in names[maybe]
    ]
    return pd.Series(found, index=places.index)


def _host_incidents(incidents: pd.DataFrame) -> pd.Series:
    """The host of each host incident of ``incidents``: its runner's row (hosts)."""
    return hosts(incidents.loc[incidents["kind"] == KIND["host"], "runner"])
