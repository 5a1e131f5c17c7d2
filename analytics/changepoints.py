"""Changepoints in each lineage's daily failure series: when did the failure rate shift?

Exact optimal partitioning (Jackson et al. 2005; the search PELT speeds up, Killick et al. 2012)
with a binomial likelihood, in numpy: a day series of (red runs, runs) is cut into segments of
constant red rate so that the log-likelihood minus a penalty per changepoint (BIC-like,
``penalty_factor`` x log of the runs) is the largest over every partition whose segments hold
at least ``min_segment_runs`` runs. Exact rather than binary segmentation, which splits once at
the best single cut and searches each side again: two nearby steps (a short high segment
between two lower ones) can look like no step or one from the whole series, so its first cut
is missing or lands between them and the true dates are never tried again. The series are
short (a day per point, ~420 days), so the O(days^2) search needs no pruning.

``penalty_factor`` (2.5) and ``KNOWN_SHARE`` (0.5) were chosen by seed sweeps on fakehub's
history; why, and what the other values did: docs/decisions/changepoint-tuning.md.

A cut on a day the lineage's job set changed (``job_set_changes``: a workflow starts or stops,
a job joins or leaves) pays ``KNOWN_SHARE`` of the penalty: a prior that a run's red rate moves
when its job set does (one more job, one more chance to fail) and that the data say when the
set changed, while a free cut must find its date among all days.

Each changepoint comes with an interval for its date, its neighbouring changepoints fixed: the
days where a cut fits the data at least as well as on its date, less ``LIKELIHOOD_DROP``
(chi-square(1) 95% / 2): for a free cut, the profile-likelihood interval LUCI Analysis
approximates; for a cut on a known day, also every day the data would prefer, so that the
discount never narrows it. Red = flaky or fail (first attempt red), over non-excluded runs.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from itertools import groupby
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import xlogy

from analytics.sequences import Pairs
from store.vocabulary import RED_OUTCOMES

LIKELIHOOD_DROP = 1.92
KNOWN_SHARE = 0.5
_ROWS = 128  # ends of segments whose fits _partition computes at once (memory: this x days)


def daily_failures(runs: pd.DataFrame, by: str = "lineage") -> pd.DataFrame:
    """Per ``by`` and UTC day: ``runs`` (non-excluded) and ``red`` (flaky or fail), with the
    days without runs left out (they carry no evidence)."""
    return daily_red(day_outcomes(runs, [by]), by)


def day_outcomes(runs: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Logical runs per ``keys``, UTC ``day`` and logical_outcome: ``runs`` (the counts the
    Overview's statement gives, store.overview_counts)."""
    day = runs["created_at"].dt.floor("D").rename("day")
    grouped = runs.groupby([*(runs[k] for k in keys), day, runs["logical_outcome"]])
    return grouped.size().rename("runs").reset_index()


def daily_red(counts: pd.DataFrame, by: str = "lineage") -> pd.DataFrame:
    """daily_failures from ``counts`` (``by``, day, logical_outcome, runs)."""
    counted = counts[counts["logical_outcome"] != "excluded"]
    runs = counted["runs"].to_numpy()
    red = np.where(counted["logical_outcome"].isin(RED_OUTCOMES).to_numpy(), runs, 0)
    pairs = Pairs.of(counted[by], counted["day"], runs, red)
    return pd.DataFrame(
        {
            by: pairs.firsts.take(pairs.cells // pairs.width),
            "day": pairs.seconds.take(pairs.cells % pairs.width),
            "runs": pairs.sums[0].astype(runs.dtype),
            "red": pairs.sums[1].astype(runs.dtype),
        }
    )


@dataclass(frozen=True)
class _Sums:
    """A day series' cumulative red runs ``ck`` and runs ``cn`` with a leading 0 (days [s, t)
    hold ck[t] - ck[s] red runs), and x log x of every count up to its runs, so that any
    segment's log-likelihood costs three lookups: the exact search reads O(days^2) of them."""

    ck: np.ndarray
    cn: np.ndarray
    xlogx: np.ndarray

    @classmethod
    def of(cls, k: np.ndarray, n: np.ndarray) -> _Sums:
        """The sums of red runs ``k`` and runs ``n`` per day (counts)."""
        ck, cn = (np.concatenate([[0], np.cumsum(x)]) for x in (k, n))
        counts = np.arange(cn[-1] + 1)
        return cls(ck, cn, xlogy(counts, counts))

    def loglik(self, s: int | np.ndarray, t: int | np.ndarray) -> np.ndarray:
        """Binomial log-likelihood (without the constant) of the segments [s, t) at their MLE
        rate: k log(k/n) + (n-k) log((n-k)/n), with 0 log 0 = 0."""
        k, n = self.ck[t] - self.ck[s], self.cn[t] - self.cn[s]
        loglik: np.ndarray = self.xlogx[k] + self.xlogx[n - k] - self.xlogx[n]
        return loglik


def _partition(sums: _Sums, penalty: np.ndarray, min_segment_runs: int) -> list[int]:
    """The changepoints (indices of the first day of each new segment) of the partition that
    maximises log-likelihood - the penalties of its cuts (``penalty[t]``: a cut before day t),
    segments of >= min_segment_runs runs.

    best[t] is the best score of days [0, t); the last segment of that partition starts at
    last[t], the s maximising best[s] - penalty[s] + loglik(s, t) over the admissible s."""
    size, cn = len(sums.cn) - 1, sums.cn
    paid = np.concatenate([[0.0], penalty[1:]])  # the first segment pays no changepoint
    best = np.full(size + 1, -np.inf)
    best[0] = 0.0
    base = best - paid  # best[s] - paid[s], as each best[s] is known
    last = np.zeros(size + 1, dtype=int)
    for first in range(1, size + 1, _ROWS):
        ends = np.arange(first, min(first + _ROWS, size + 1))[:, None]
        s = np.minimum(np.arange(ends[-1, 0]), ends)  # [s, t), s < t (s >= t: never read)
        fits = sums.loglik(s, ends)
        fits[cn[ends] - cn[s] < min_segment_runs] = -np.inf
        for t, fit in zip(ends[:, 0].tolist(), fits, strict=True):
            score = base[:t] + fit[:t]
            last[t] = score.argmax()
            best[t] = score[last[t]]
            base[t] = best[t] - paid[t]
    if not np.isfinite(best[size]):  # fewer than min_segment_runs runs in all: one segment
        return []
    cuts, t = [], size
    while last[t] > 0:
        t = last[t]
        cuts.append(t)
    return cuts[::-1]


def _profile(
    sums: _Sums, bounds: tuple[int, int, int], min_segment_runs: int
) -> tuple[int, int, float]:
    """The interval (first and last day index) of the changepoint ``cut`` between its
    neighbours ``lo`` and ``hi`` (``bounds``), fixed: from the first to the last day where a
    cut fits the data at least as well as on its date, less LIKELIHOOD_DROP; and the gain of
    the cut over no cut between lo and hi. For a free cut (the data's best day) this is the
    profile-likelihood interval; a cut on a known day may fit worse than the data's best, and
    then its interval takes those days in: wide, it says the data alone do not date the step."""
    lo, cut, hi = bounds
    u, cn = np.arange(lo + 1, hi), sums.cn
    fit = sums.loglik(lo, u) + sums.loglik(u, hi)
    admissible = (cn[u] - cn[lo] >= min_segment_runs) & (cn[hi] - cn[u] >= min_segment_runs)
    near = u[admissible & (fit >= fit[cut - lo - 1] - LIKELIHOOD_DROP)]
    gain = float(fit[cut - lo - 1] - sums.loglik(lo, hi))
    return int(near.min()), int(near.max()), gain


def job_set_changes(
    presence: pd.DataFrame,
    run_days: pd.DataFrame,
    lineage_of: Mapping[str, str] | pd.Series,
    *,
    hold: int = 3,
) -> pd.DataFrame:
    """The days each lineage's job set changed, from the data alone: a workflow's first day with
    runs and the day after its last, and the day a job starts (or stops) being in at least half
    of its workflow's runs, the new state holding for at least ``hold`` days with runs (a job
    skipped for a day or two, a file broken for one push, is not a new job set). Jobs go by
    their name as GitHub shows it, so a matrix that gains a leg changes the set. A change needs
    ``hold`` days with runs of its lineage on either side: a workflow whose first stored run
    comes a day after its lineage's (a backfill's edge) did not start then. A workflow's job
    set is known from its first day with a stored job: GitHub archives the jobs of runs older
    than 400 days, so its oldest runs may come without any (github-real-behaviour.md).

    ``presence``: workflow_path, day, name, runs (runs whose first attempt has a job of that
    name, store.page_queries.daily_job_presence); ``run_days``: workflow_path, day, runs
    (day_outcomes; other columns are summed away); ``lineage_of``: workflow_path -> lineage
    (workflows left out are dropped). Columns: lineage, day, what ("path: +job, -job"), the
    ``known`` of changepoints(by="lineage"). In numpy over one grid of (workflow, day) x job
    name, not pandas per workflow and job: the Overview reads it for every lineage."""
    totals = Pairs.of(run_days["workflow_path"], run_days["day"], run_days["runs"].to_numpy())
    workflows, codes = totals.firsts, totals.cells // totals.width
    days = totals.seconds.take(totals.cells % totals.width)
    bounds = np.searchsorted(codes, np.arange(len(workflows) + 1))  # each workflow's days
    row = totals.at(presence["workflow_path"], presence["day"])
    present, jobs_of, names = _presence(presence, row, totals.sums[0], workflows)
    rows: list[tuple[str, pd.Timestamp, str]] = []
    days_of: dict[str, pd.Index] = {}
    for code, path in enumerate(workflows):
        start, end = bounds[code], bounds[code + 1]
        days_of[path] = days[start:end]
        rows += [(path, days[start], "first run"), (path, days[end - 1] + _DAY, "stopped")]
        if code not in jobs_of:
            continue
        first_job, jobs = jobs_of[code]
        known = days[start:end] >= first_job  # before: jobs archived by GitHub, not a job set
        states, known_days = present[start:end][known], days[start:end][known]
        for job in jobs:
            rows += [
                (path, known_days[at], f"{'+' if now else '-'}{names[job]}")
                for at, now in _held_flips(states[:, job], hold)
            ]
    return _per_lineage_day(rows, dict(lineage_of.items()), days_of, hold)


def _presence(
    presence: pd.DataFrame, row: np.ndarray, totals: np.ndarray, workflows: pd.Index
) -> tuple[np.ndarray, dict[int, tuple[pd.Timestamp, list[int]]], np.ndarray]:
    """Whether each job name is in at least half of the runs of each (workflow, day) of
    ``totals`` (a grid: its rows x ``names``, sorted; ``row``: each presence row's, -1 for
    none); per workflow of ``workflows`` with a stored job: its first day with one, and its
    jobs' columns by their first day, then name (by name when it has every name); the names."""
    column, names = pd.factorize(presence["name"], sort=True)
    grid = np.zeros((len(totals), len(names)))
    np.add.at(grid, (row[row >= 0], column[row >= 0]), presence["runs"].to_numpy()[row >= 0])
    workflow = workflows.get_indexer(pd.Index(presence["workflow_path"]))
    day = pd.DatetimeIndex(presence["day"])
    order = np.lexsort((column, day.asi8, workflow))
    order = order[workflow[order] >= 0]
    _, first = np.unique(workflow[order], return_index=True)
    jobs_of: dict[int, tuple[pd.Timestamp, list[int]]] = {
        int(workflow[at]): (day[at], []) for at in order[first]
    }
    for pair in pd.unique(workflow[order] * len(names) + column[order]):  # by first day
        jobs_of[int(pair) // len(names)][1].append(int(pair) % len(names))
    for _, jobs in jobs_of.values():
        if len(jobs) == len(names):  # the order of the text as pandas' unstack wrote it
            jobs.sort()
    return grid >= 0.5 * totals[:, None], jobs_of, names.to_numpy(dtype=object)


_DAY = pd.Timedelta(days=1)


def _per_lineage_day(
    rows: list[tuple[str, pd.Timestamp, str]],
    lineage: dict[Hashable, Hashable],
    days_of: dict[str, pd.Index],
    hold: int,
) -> pd.DataFrame:
    """job_set_changes' frame of its ``rows`` (workflow_path, day, what): those of a lineage
    with ``hold`` days of runs (``days_of`` each workflow) on either side, joined per lineage
    and day ("path: what, what; path: what"), by lineage, day and path."""
    day_lists: dict[Hashable, list[pd.Index]] = {}
    for path, days in days_of.items():
        if path in lineage:
            day_lists.setdefault(lineage[path], []).append(days)
    lineage_days = {
        name: pd.DatetimeIndex(found[0].append(found[1:])).unique().sort_values()
        for name, found in day_lists.items()
    }
    kept = sorted(
        (
            (lineage[path], day, path, what)
            for path, day, what in rows
            if path in lineage and _held_around(lineage_days.get(lineage[path]), day, hold)
        ),
        key=lambda kept: kept[:3],
    )
    joined: dict[tuple[Any, Any], list[str]] = {}
    for (name, day, path), group in groupby(kept, key=lambda kept: kept[:3]):
        joined.setdefault((name, day), []).append(f"{path}: {', '.join(g[3] for g in group)}")
    out = pd.DataFrame(
        [(name, day, "; ".join(parts)) for (name, day), parts in joined.items()],
        columns=["lineage", "day", "what"],
    )
    if out.empty:
        return out.astype({"lineage": "str", "day": "datetime64[us, UTC]", "what": "str"})
    return out.astype({"day": next(iter(days_of.values())).dtype})


def _held_around(days: pd.DatetimeIndex | None, day: pd.Timestamp, hold: int) -> bool:
    """Whether ``days`` (a lineage's days with runs, sorted) hold at least ``hold`` days before
    ``day`` and ``hold`` from it on."""
    if days is None:
        return False
    before = int(days.searchsorted(day))
    return before >= hold and len(days) - before >= hold


def lineage_changepoints(
    runs: pd.DataFrame, every_run: pd.DataFrame, presence: pd.DataFrame, **search: Any
) -> pd.DataFrame:
    """changepoints of each lineage's daily series (``runs``: logical runs with lineage), the
    job set changes (job_set_changes) of ``every_run`` (the same runs over every date, so that
    the first run in a date range is not taken for a workflow's first) and ``presence`` as
    known days."""
    keys = ["lineage", "workflow_path"]
    return counted_changepoints(
        day_outcomes(runs, keys), day_outcomes(every_run, keys), presence, **search
    )


def counted_changepoints(
    counts: pd.DataFrame, every: pd.DataFrame, presence: pd.DataFrame, **search: Any
) -> pd.DataFrame:
    """lineage_changepoints from counts (day_outcomes by lineage and workflow_path) of the
    range's runs and of ``every`` date's."""
    lineage_of = every.drop_duplicates("workflow_path").set_index("workflow_path")["lineage"]
    known = job_set_changes(presence, every, lineage_of)
    return changepoints(daily_red(counts), known=known, **search)


def _held_flips(present: np.ndarray, hold: int) -> list[tuple[int, bool]]:
    """(index, new state) where ``present`` changes between two stretches of at least ``hold``
    equal values: the first index after the old stretch, so that a straggler of the old state
    among the first days of the new one does not date the change late."""
    edges = np.flatnonzero(np.diff(present.astype(np.int8))) + 1
    starts = np.concatenate([[0], edges]).astype(int)
    ends = np.concatenate([edges, [len(present)]]).astype(int)
    held = [(int(a), int(b)) for a, b in zip(starts, ends, strict=True) if b - a >= hold]
    pairs = zip(held, held[1:], strict=False)
    return [
        (old_end, bool(present[new_start]))
        for (old_start, old_end), (new_start, _) in pairs
        if present[old_start] != present[new_start]
    ]


def changepoints(
    daily: pd.DataFrame,
    by: str = "lineage",
    *,
    known: pd.DataFrame | None = None,
    known_share: float = KNOWN_SHARE,
    penalty_factor: float = 2.5,
    min_segment_runs: int = 10,
) -> pd.DataFrame:
    """The changepoints of each group's daily series (daily_failures): ``by``, date (the first
    day of the new regime), date_low, date_high, before_rate/after_rate and before_runs/
    after_runs (the adjacent segments), gain (the log-likelihood the changepoint adds over
    joining its two segments, in log-likelihood units) and known_change (what changed in the
    job set that day, "" if nothing did). Every segment holds at least ``min_segment_runs``
    runs (the search's own floor, not [analytics] min_runs); each changepoint costs
    ``penalty_factor`` x log(runs) of gain, ``known_share`` of that on a day of ``known``
    (``by``, day, what, e.g. job_set_changes for by="lineage"; a day between two days with runs
    counts for the next)."""
    known = pd.DataFrame(columns=[by, "day", "what"]) if known is None else known
    # Each group's series as a slice of one sort (days as UTC nanoseconds), its known changes
    # by code: pandas per group (a grouping, a filter, an index) cost more than the search.
    group, names = pd.factorize(daily[by], sort=True)
    every_day = pd.DatetimeIndex(daily["day"])
    order = np.lexsort((every_day.as_unit("ns").asi8, group))
    order = order[group[order] >= 0]
    slices = np.searchsorted(group[order], np.arange(len(names) + 1))
    every_day, moments = every_day[order], every_day[order].as_unit("ns").asi8
    red, runs = (daily[column].to_numpy(int)[order] for column in ("red", "runs"))
    known_group = pd.Index(names).get_indexer(pd.Index(known[by]))
    known_at = pd.DatetimeIndex(pd.to_datetime(known["day"], utc=True)).as_unit("ns").asi8
    known_what = known["what"].tolist()
    rows = []
    for code, key in enumerate(names):
        start, end = slices[code], slices[code + 1]
        sums = _Sums.of(red[start:end], runs[start:end])
        ck, cn, days = sums.ck, sums.cn, every_day[start:end]
        mine = np.flatnonzero(known_group == code)
        at = np.searchsorted(moments[start:end], known_at[mine])
        changes = _known_days(at, known_what, mine)
        penalty = np.full(len(days) + 1, penalty_factor * np.log(max(cn[-1], 2.0)))
        penalty[list(changes)] *= known_share
        cuts = _partition(sums, penalty, min_segment_runs)
        bounds = [0, *cuts, len(days)]
        for lo, cut, hi in zip(bounds, bounds[1:], bounds[2:], strict=False):
            low, high, gain = _profile(sums, (lo, cut, hi), min_segment_runs)
            rows.append(
                {
                    by: key,
                    "date": days[cut],
                    "date_low": days[low],
                    "date_high": days[high],
                    "before_rate": (ck[cut] - ck[lo]) / (cn[cut] - cn[lo]),
                    "after_rate": (ck[hi] - ck[cut]) / (cn[hi] - cn[cut]),
                    "before_runs": int(cn[cut] - cn[lo]),
                    "after_runs": int(cn[hi] - cn[cut]),
                    "gain": gain,
                    "known_change": changes.get(cut, ""),
                }
            )
    columns = [by, "date", "date_low", "date_high", "before_rate", "after_rate"]
    out = pd.DataFrame(
        rows, columns=[*columns, "before_runs", "after_runs", "gain", "known_change"]
    )
    for column in ("date", "date_low", "date_high"):
        out[column] = pd.to_datetime(out[column], utc=True)
    return out


def _known_days(at: np.ndarray, what: list[str], rows: np.ndarray) -> dict[int, str]:
    """Index of the series day each known change (``rows`` of ``what``) falls on, ``at`` (the
    first day with runs on or after it, len(days) after the last) -> what changed. Index 0
    and len(days) can never be cuts."""
    out: dict[int, str] = {}
    for index, row in zip(at.tolist(), rows.tolist(), strict=True):
        out[index] = f"{out[index]}; {what[row]}" if index in out else what[row]
    return out


def nearest_events(found: pd.DataFrame, events: pd.DataFrame, by: str = "lineage") -> pd.DataFrame:
    """``found`` (changepoints) with the nearest event that touches its lineage (or every
    lineage): event_date, event_pr, event_title, and distance_days = changepoint - event."""
    event_dates = pd.DatetimeIndex(events["event_date"])
    touches = np.array(
        [
            [lineages is None or lineage in lineages for lineages in events["event_lineages"]]
            for lineage in found[by]
        ],
        dtype=bool,
    ).reshape(len(found), len(events))
    pairs = pd.DatetimeIndex(found["date"]).repeat(len(events))
    days = (pairs - event_dates[np.tile(np.arange(len(events)), len(found))]).total_seconds()
    distance = (days / 86400).to_numpy().reshape(len(found), len(events))
    hit = touches.any(axis=1)
    closest = np.where(touches, np.abs(distance), np.inf)
    nearest = closest.argmin(axis=1) if len(events) else np.zeros(len(found), dtype=int)
    chosen = events.iloc[nearest[hit]][["event_date", "event_pr", "event_title"]]
    chosen = chosen.assign(distance_days=distance[hit, nearest[hit]].astype(float))
    return found.join(chosen.set_axis(found.index[np.flatnonzero(hit)]))
