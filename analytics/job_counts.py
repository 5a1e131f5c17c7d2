"""Stability of logical jobs from their counts: the flaky-jobs and runner tables, counted as they
are and once (analytics.once), and works elsewhere (analytics.elsewhere), computed from
logical jobs counted per workflow, logical job, ISO week, runner, labels, outcome and incident
(store.job_counts.job_counts; ``counts_of`` gives the same from a frame of logical jobs), or,
for the runner tables, aggregated per table row (store.job_counts.runner_counts;
``runner_parts`` gives the same from the counts). The database does the counting; the rates
and intervals work on a few thousand rows."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analytics.elsewhere import hosts, pool_names, with_runner_pool
from analytics.incidents import KIND
from analytics.once import INCIDENT, ONCE, stability_once
from analytics.rates import rank_by_lower_bound
from analytics.text import filled
from store.job_counts import COUNT_KEYS
from store.vocabulary import (
    COUNTED_OUTCOMES,
    GREEN_OUTCOMES,
    HOSTED_RUNNERS,
    NO_RUNNER_NAME,
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


def rated_runners(parts: pd.DataFrame, by: str, min_runs: int) -> pd.DataFrame:
    """Stability of logical jobs per ``by`` (runner_pool or runner_name), as they are and
    counted once, with failed_jobs and works_elsewhere, ranked by the Wilson lower bound of the
    fail rate, from ``parts`` (store.job_counts.runner_counts or runner_parts). Per
    runner_name, a row per host one can rate, the others pooled (runner_rows), with
    ``runners``: the hosts behind each row. Works elsewhere looks at each host: a failure on
    one works elsewhere when its job went green on another runner, another host of its row
    included."""
    part = "pool" if by == "runner_pool" else "runner"
    frame = parts[parts["part"] == part]
    frame = frame.assign(**{by: _row_names(frame, by)})
    table = stability_once(frame, frame[INCIDENT], [by], min_runs, weight="n")
    failed = frame[frame["logical_outcome"] == "fail"]
    # sums mapped onto the rows: a named aggregation and a merge cost 20 ms whatever the size
    sums = failed.groupby(by, sort=False)[["n", "works"]].sum()
    rows = table[by]
    columns = {
        "failed_jobs": rows.map(sums["n"]).fillna(0).astype(int),
        "works_elsewhere": rows.map(sums["works"] / sums["n"]),
    }
    if by == "runner_name":
        hosts_of = parts[parts["part"] == "runners"]
        behind = hosts_of["n"].groupby(_row_names(hosts_of, by).to_numpy(), sort=False).sum()
        columns["runners"] = rows.map(behind).fillna(0).astype(int)
    for end in ("", ONCE):
        columns[f"fail_rate{end}"] = 1 - table[f"success_rate{end}"]
        columns[f"fail_rate_low{end}"] = 1 - table[f"success_rate_high{end}"]
        columns[f"fail_rate_high{end}"] = 1 - table[f"success_rate_low{end}"]
    return rank_by_lower_bound(table.assign(**columns), "fail_rate")


def _row_names(part: pd.DataFrame, by: str) -> pd.Series:
    """The table row of each row of a part of runner_parts: its label set's runner pool
    (analytics.elsewhere.pool_names); per runner_name, its host, else its pool's
    "(short-lived runners of <pool>)"."""
    pools = pool_names(part["labels"])
    if by == "runner_pool":
        return pools
    codes, distinct = pd.factorize(pools)  # a name per pool, not per row (27k rows at 16x)
    pooled = np.array([short_lived_runners(pool) for pool in distinct], dtype=object)[codes]
    return part["runner_name"].astype(object).where(part["runner_name"].notna(), pooled)


def runner_parts(counts: pd.DataFrame, min_runs: int, named: pd.Series) -> pd.DataFrame:
    """store.job_counts.runner_counts from ``counts`` (COUNT_KEYS, n; labels as tuples) and
    ``named`` (the runner incidents' hosts), in no particular order: what the raw path rates
    the runners from."""
    placed = _placed(counts)
    rows = runner_rows(placed, min_runs, named)
    kept = rows.notna().to_numpy(dtype=bool)  # the others: pooled by their labels
    places, pools = (elsewhere_flags(placed, where) for where in ("runner_name", "labels"))
    failed = placed["logical_outcome"] == "fail"

    def works(flags: pd.DataFrame, where: str) -> pd.Series:
        found = placed[[*PLACE_KEYS, where]].merge(flags, on=[*PLACE_KEYS, where], how="left")
        flagged = found["works_elsewhere"].fillna(False).to_numpy(dtype=bool) & failed
        return placed["n"].where(flagged, 0)

    rowed = placed.assign(
        runner_name=rows,
        labels=placed["labels"].where(~kept),
        host=placed["runner_name"].where(counts["runner_name"].notna()),
        works=works(places, "runner_name"),
        pool_works=works(pools, "labels"),
    )
    row, outcome = ["runner_name", "labels"], ["logical_outcome", INCIDENT]
    by_row = rowed.groupby([*row, *outcome], dropna=False, sort=False)
    hosts_of = rowed.groupby(row, dropna=False, sort=False)["host"].nunique()
    pooled = placed.assign(works=rowed["pool_works"])
    pool = pooled.groupby(["labels", *outcome], dropna=False, sort=False)
    flagged = places.rename(columns={"fail": "n", "works_elsewhere": "works"})
    parts = {
        "runner": by_row[["n", "works"]].sum().reset_index(),
        "runners": hosts_of.rename("n").reset_index(),
        "pool": pool[["n", "works"]].sum().reset_index(),
        "place": flagged.assign(works=flagged["works"].astype(int)),
    }
    found: pd.DataFrame = pd.concat(
        [part.assign(part=name) for name, part in parts.items()], ignore_index=True
    )
    return found


def runner_rows(placed: pd.DataFrame, min_runs: int, named: pd.Series) -> pd.Series:
    """The host of each row of ``placed`` (_placed) that keeps a row of its own in the runners
    table, aligned on it, else None: a host one can rate (it ran at least ``min_runs`` counted
    logical jobs of ``placed``) or that a runner incident names (``named``: hosts);
    HOSTED_RUNNERS for GitHub's hosted VMs and "(none)" for the jobs that never ran, whatever
    their count. The others are the one row of the job's runner pool,
    "(short-lived runners of <pool>)": runners that live for a job or a few (one container
    per job) have no rate of their own."""
    names = hosts(placed["runner_name"])
    counted = placed["n"].where(placed["logical_outcome"].isin(COUNTED_OUTCOMES), 0)
    runs = counted.groupby(names.to_numpy(), sort=False).transform("sum").to_numpy()
    kept = names.isin([*named.unique(), HOSTED_RUNNERS, NO_RUNNER_NAME]).to_numpy(dtype=bool)
    return names.astype(object).where((runs >= min_runs) | kept, None)


def works_elsewhere_of(
    jobs: pd.DataFrame, places: pd.DataFrame, before: pd.DataFrame | None
) -> pd.Series:
    """Whether each hard-failed logical job of ``jobs`` (workflow_path, logical_job, week,
    runner_name) of a range works elsewhere by runner, aligned on ``jobs``: its place is
    flagged in ``places`` (runner_parts' part ``place``, of the range), or its job went green
    on another runner in ``before`` (COUNT_KEYS counts of the days of the range's first week
    before the range; None: none)."""
    keyed = jobs[PLACE_KEYS].assign(runner_name=filled(jobs["runner_name"], NO_RUNNER_NAME))
    flags = places[[*PLACE_KEYS, "runner_name", "works"]]
    now = keyed.merge(flags, on=[*PLACE_KEYS, "runner_name"], how="left")["works"] > 0
    if before is None or before.empty:  # the range starts its week, or nothing ran before
        return pd.Series(now.to_numpy(dtype=bool), jobs.index)
    earlier = _placed(before)
    earlier = earlier[earlier["logical_outcome"].isin(GREEN_OUTCOMES)]
    greens = earlier.groupby(PLACE_KEYS)["runner_name"].agg(["min", "max"]).reset_index()
    seen = keyed.merge(greens, on=PLACE_KEYS, how="left")
    own = seen["runner_name"]
    other = seen["min"].notna() & ((seen["min"] != own) | (seen["max"] != own))
    return pd.Series((now | other).to_numpy(dtype=bool), jobs.index)


def incidents_per_place(places: pd.Series, incidents: pd.DataFrame) -> pd.Series:
    """How many runner incidents (store.incidents.INCIDENT_COLUMNS) each of ``places`` had: a
    runner name (a host incident on any GitHub-hosted VM counts for their pooled row,
    analytics.elsewhere.hosts), or a runner pool (its labels joined by "+", analytics
    .elsewhere.with_runner_pool) when the incident names one of its labels."""
    counts = host_incidents(incidents).value_counts().to_dict()
    names = places.astype(str)
    # Only a place named by an incident, or a pool of several labels, can have one: the
    # others (thousands of runners) are 0 without a Python call each.
    maybe = names.isin(list(counts)) | names.str.contains("+", regex=False)
    found = np.zeros(len(names), dtype=int)
    found[maybe.to_numpy(dtype=bool)] = [
        sum(counts.get(part, 0) for part in set(place.split("+"))) for place in names[maybe]
    ]
    return pd.Series(found, index=places.index)


def host_incidents(incidents: pd.DataFrame) -> pd.Series:
    """The host of each host incident of ``incidents`` (store.incidents.INCIDENT_COLUMNS): its
    runner's row (hosts), which keeps its own row in the runners table."""
    return hosts(incidents.loc[incidents["kind"] == KIND["host"], "runner"])
