"""Changepoints in each lineage's daily failure series: when did the failure rate shift?

Binary segmentation with a binomial likelihood, in numpy: a day series of (red runs, runs) is
split where the log-likelihood gain of two rates over one is largest, if the gain beats a
penalty (BIC-like, ``penalty_factor`` x log of the runs), and each side is searched again.
Each changepoint comes with an interval for its date: the split days whose gain is within
``LIKELIHOOD_DROP`` (chi-square(1) 95% / 2) of the best, the likelihood-ratio interval LUCI
Analysis approximates. Red = flaky or fail (first attempt red), over non-excluded runs.
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


def _split_gains(k: np.ndarray, n: np.ndarray, min_runs: int) -> np.ndarray:
    """The gain of splitting before each day i (1..len-1); -inf where a side has < min_runs."""
    ck, cn = np.cumsum(k), np.cumsum(n)
    left_k, left_n = ck[:-1], cn[:-1]
    right_k, right_n = ck[-1] - left_k, cn[-1] - left_n
    gain = _loglik(left_k, left_n) + _loglik(right_k, right_n) - _loglik(ck[-1:], cn[-1:])
    return np.where((left_n >= min_runs) & (right_n >= min_runs), gain, -np.inf)


def _segment(
    k: np.ndarray, n: np.ndarray, start: int, penalty: float, min_runs: int
) -> list[tuple[int, int, int, float]]:
    """(split index, interval low index, interval high index, gain), absolute positions."""
    if len(k) < 2:
        return []
    gains = _split_gains(k, n, min_runs)
    best = int(np.argmax(gains))
    if not np.isfinite(gains[best]) or gains[best] <= penalty:
        return []
    near = np.flatnonzero(gains >= gains[best] - LIKELIHOOD_DROP)
    split = best + 1
    found = (start + split, start + int(near.min()) + 1, start + int(near.max()) + 1, gains[best])
    return [
        *_segment(k[:split], n[:split], start, penalty, min_runs),
        found,
        *_segment(k[split:], n[split:], start + split, penalty, min_runs),
    ]


def changepoints(
    daily: pd.DataFrame,
    by: str = "lineage",
    *,
    penalty_factor: float = 1.5,
    min_runs: int = 10,
) -> pd.DataFrame:
    """The changepoints of each group's daily series (daily_failures): ``by``, date (the first
    day of the new regime), date_low, date_high, before_rate/after_rate and before_runs/
    after_runs (the adjacent segments), gain (log-likelihood units). A segment shorter than
    ``min_runs`` runs on either side of a split is not split."""
    rows = []
    for key, series in daily.sort_values("day").groupby(by, sort=True):
        k, n = series["red"].to_numpy(float), series["runs"].to_numpy(float)
        days = series["day"].to_numpy()
        penalty = penalty_factor * np.log(max(n.sum(), 2.0))
        found = sorted(_segment(k, n, 0, penalty, min_runs))
        bounds = [0, *(f[0] for f in found), len(k)]
        for i, (split, low, high, gain) in enumerate(found):
            before = slice(bounds[i], split)
            after = slice(split, bounds[i + 2])
            rows.append(
                {
                    by: key,
                    "date": days[split],
                    "date_low": days[low],
                    "date_high": days[high],
                    "before_rate": k[before].sum() / n[before].sum(),
                    "after_rate": k[after].sum() / n[after].sum(),
                    "before_runs": int(n[before].sum()),
                    "after_runs": int(n[after].sum()),
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
