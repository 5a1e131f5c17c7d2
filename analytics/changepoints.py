"""Changepoints in each lineage's daily failure series: when did the failure rate shift?

Exact optimal partitioning (Jackson et al. 2005; the search PELT speeds up, Killick et al. 2012)
with a binomial likelihood, in numpy: a day series of (red runs, runs) is cut into segments of
constant red rate so that the log-likelihood minus a penalty per changepoint (BIC-like,
``penalty_factor`` x log of the runs) is the largest over every partition whose segments hold at
least ``min_runs`` runs. Exact rather than binary segmentation, which splits once at the best
single cut and searches each side again: two nearby steps (a short high segment between two
lower ones) can look like no step or one from the whole series, so its first cut is missing or
lands between them and the true dates are never tried again. The series are short (a day per
point, ~420 days), so the O(days^2) search needs no pruning.

The default ``penalty_factor`` is 2.5 where binary segmentation had 1.5: the exact search fits
every partition, so at 1.5 it spent changepoints on weak steps of fakehub's history (decaying
bursts, small job changes) and lost its big June shift on 3 of 16 seeds; 2.5 kept it on all 16
(3.0 lost it on 2).

Each changepoint comes with an interval for its date: the days where it can move, its
neighbouring changepoints fixed, losing at most ``LIKELIHOOD_DROP`` (chi-square(1) 95% / 2) of
log-likelihood, the profile-likelihood interval LUCI Analysis approximates. Red = flaky or fail
(first attempt red), over non-excluded runs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

LIKELIHOOD_DROP = 1.92
RED_OUTCOMES = ("fail", "flaky")


def daily_failures(runs: pd.DataFrame, by: str = "lineage") -> pd.DataFrame:
    """Per ``by`` and UTC day: ``runs`` (non-excluded) and ``red`` (flaky or fail), with the
    days without runs left out (they carry no evidence)."""
    counted = runs[runs["logical_outcome"] != "excluded"]
    counted = counted.assign(
        day=counted["created_at"].dt.floor("D"),
        red=counted["logical_outcome"].isin(RED_OUTCOMES),
    )
    return (
        counted.groupby([by, "day"]).agg(runs=("run_id", "size"), red=("red", "sum")).reset_index()
    )


def _loglik(k: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Binomial log-likelihood (without the constant) of k reds in n at the MLE rate."""
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(n > 0, k / n, 0.0)
        a = np.where(k > 0, k * np.log(np.where(p > 0, p, 1.0)), 0.0)
        b = np.where(n - k > 0, (n - k) * np.log(np.where(p < 1, 1 - p, 1.0)), 0.0)
    return a + b


def _cumulative(x: np.ndarray) -> np.ndarray:
    """Cumulative sums with a leading 0: the sum of x[s:t] is out[t] - out[s]."""
    return np.concatenate([[0.0], np.cumsum(x)])


def _segment_loglik(ck: np.ndarray, cn: np.ndarray, s, t) -> np.ndarray:
    """Log-likelihood of the segments [s, t) from the cumulative sums (_cumulative), so that
    any segment costs O(1)."""
    return _loglik(ck[t] - ck[s], cn[t] - cn[s])


def _partition(k: np.ndarray, n: np.ndarray, penalty: float, min_runs: int) -> list[int]:
    """The changepoints (indices of the first day of each new segment) of the partition that
    maximises log-likelihood - penalty x changepoints, segments of >= min_runs runs.

    best[t] is the best score of days [0, t); the last segment of that partition starts at
    last[t], the s maximising best[s] - penalty + loglik(s, t) over the admissible s."""
    size = len(k)
    ck, cn = _cumulative(k), _cumulative(n)
    best = np.full(size + 1, -np.inf)
    best[0] = penalty  # the first segment pays no changepoint
    last = np.zeros(size + 1, dtype=int)
    for t in range(1, size + 1):
        s = np.arange(t)
        score = best[:t] - penalty + _segment_loglik(ck, cn, s, t)
        score[cn[t] - cn[:t] < min_runs] = -np.inf
        last[t] = int(np.argmax(score))
        best[t] = score[last[t]]
    if not np.isfinite(best[size]):  # fewer than min_runs runs in all: one segment
        return []
    cuts, t = [], size
    while last[t] > 0:
        t = last[t]
        cuts.append(t)
    return cuts[::-1]


def _profile(
    ck: np.ndarray, cn: np.ndarray, lo: int, cut: int, hi: int, min_runs: int
) -> tuple[int, int, float]:
    """The interval (first and last admissible day index) of the changepoint ``cut`` between its
    neighbours ``lo`` and ``hi``, fixed: the cuts whose log-likelihood is within LIKELIHOOD_DROP
    of the best; and the gain of the cut over no cut between lo and hi."""
    u = np.arange(lo + 1, hi)
    profile = _segment_loglik(ck, cn, lo, u) + _segment_loglik(ck, cn, u, hi)
    admissible = (cn[u] - cn[lo] >= min_runs) & (cn[hi] - cn[u] >= min_runs)
    profile = np.where(admissible, profile, -np.inf)
    at_cut = profile[cut - lo - 1]
    near = u[profile >= at_cut - LIKELIHOOD_DROP]
    gain = at_cut - float(_segment_loglik(ck, cn, lo, hi))
    return int(near.min()), int(near.max()), gain


def changepoints(
    daily: pd.DataFrame,
    by: str = "lineage",
    *,
    penalty_factor: float = 2.5,
    min_runs: int = 10,
) -> pd.DataFrame:
    """The changepoints of each group's daily series (daily_failures): ``by``, date (the first
    day of the new regime), date_low, date_high, before_rate/after_rate and before_runs/
    after_runs (the adjacent segments), gain (the log-likelihood the changepoint adds over
    joining its two segments, in log-likelihood units). Every segment holds at least
    ``min_runs`` runs; each changepoint costs ``penalty_factor`` x log(runs) of gain."""
    rows = []
    for key, series in daily.sort_values("day").groupby(by, sort=True):
        k, n = series["red"].to_numpy(float), series["runs"].to_numpy(float)
        days = series["day"].to_numpy()
        penalty = penalty_factor * np.log(max(n.sum(), 2.0))
        cuts = _partition(k, n, penalty, min_runs)
        ck, cn = _cumulative(k), _cumulative(n)
        bounds = [0, *cuts, len(k)]
        for lo, cut, hi in zip(bounds, bounds[1:], bounds[2:], strict=False):
            low, high, gain = _profile(ck, cn, lo, cut, hi, min_runs)
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
                }
            )
    columns = [by, "date", "date_low", "date_high", "before_rate", "after_rate"]
    out = pd.DataFrame(rows, columns=[*columns, "before_runs", "after_runs", "gain"])
    for column in ("date", "date_low", "date_high"):
        out[column] = pd.to_datetime(out[column], utc=True)
    return out


def nearest_events(found: pd.DataFrame, events: pd.DataFrame, by: str = "lineage") -> pd.DataFrame:
    """``found`` (changepoints) with the nearest event that touches its lineage (or every
    lineage): event_date, event_pr, event_title, and distance_days = changepoint - event."""
    pairs = found.reset_index(names="cp").merge(events, how="cross")
    touches = [
        lineages is None or lineage in lineages
        for lineage, lineages in zip(pairs[by], pairs["event_lineages"], strict=True)
    ]
    pairs = pairs[np.array(touches, dtype=bool)]
    distance = (pairs["date"] - pairs["event_date"]).dt.total_seconds() / 86400
    pairs = pairs.assign(distance_days=distance.astype(float))
    nearest = pairs.loc[pairs["distance_days"].abs().groupby(pairs["cp"]).idxmin()]
    nearest = nearest.set_index("cp")[["event_date", "event_pr", "event_title", "distance_days"]]
    return found.join(nearest)
