"""Rates with their sample size and a 95% Wilson interval, grouped by any key.

DESIGN.md: success = pass / (pass + flaky + fail); eventual success = (pass + flaky) / (same);
flake rate = flaky / (pass + flaky). Excluded runs count in no denominator. Under ``min_runs``
a group gets no verdict ("not enough data"); ranking uses the Wilson lower bound, so a group
with 1 failure in 2 runs does not outrank one with 30 in 100 (PyTorch's flakiness ranking).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from store.vocabulary import COUNTED_OUTCOMES, GREEN_OUTCOMES, LOGICAL_OUTCOMES

Z_95 = 1.959963984540054
OUTCOMES = list(LOGICAL_OUTCOMES)
NOT_ENOUGH_DATA = "not enough data"

# rate name -> (numerator outcomes, denominator outcomes)
RATES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "success_rate": (("pass",), COUNTED_OUTCOMES),
    "eventual_success": (GREEN_OUTCOMES, COUNTED_OUTCOMES),
    "flake_rate": (("flaky",), GREEN_OUTCOMES),  # among the green: which needed a rerun
}


def wilson_interval(
    successes: np.ndarray | pd.Series | float, n: np.ndarray | pd.Series | float, z: float = Z_95
) -> tuple[np.ndarray, np.ndarray]:
    """The Wilson score interval (low, high) for ``successes`` out of ``n``; NaN where n = 0."""
    k = np.asarray(successes, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / n
        denom = 1 + z**2 / n
        centre = (p + z**2 / (2 * n)) / denom
        half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / denom
    low = np.where(n > 0, np.clip(centre - half, 0.0, 1.0), np.nan)
    high = np.where(n > 0, np.clip(centre + half, 0.0, 1.0), np.nan)
    # At p = 0 or 1 the bound equals the estimate; rounding must not put it outside.
    return np.minimum(low, np.nan_to_num(p, nan=1.0)), np.maximum(high, np.nan_to_num(p))


def outcome_counts(
    frame: pd.DataFrame,
    by: Sequence[str],
    outcome: str = "logical_outcome",
    weight: str | None = None,
) -> pd.DataFrame:
    """Counts of pass, flaky, fail and excluded per group, plus ``runs`` = pass + flaky + fail.
    ``weight``: a column of counts (rows aggregated already, as SQL gives them), summed
    rather than the rows counted. An empty frame gives an empty table with these columns."""
    if len(frame):
        grouped = frame.groupby([*by, outcome])
        sizes = grouped.size() if weight is None else grouped[weight].sum()
        counts = sizes.unstack(outcome, fill_value=0)
    else:
        counts = pd.DataFrame(columns=OUTCOMES, index=pd.MultiIndex.from_tuples([], names=list(by)))
    counts = counts.reindex(columns=OUTCOMES, fill_value=0).astype(int)
    counts.columns.name = None
    counts.insert(0, "runs", counts["pass"] + counts["flaky"] + counts["fail"])
    return counts.reset_index()


def add_rates(counts: pd.DataFrame, min_runs: int) -> pd.DataFrame:
    """``counts`` (outcome_counts) with every rate, its Wilson interval (``<rate>_low``,
    ``<rate>_high``), and ``enough_data`` (runs >= min_runs); rates are NaN when undefined."""
    # Numpy columns, joined once: row sums, column inserts and column lists of a frame cost
    # half a millisecond to a millisecond each, and every page computes rates.
    values = counts[list(COUNTED_OUTCOMES)].to_numpy(dtype=float)
    columns: dict[str, np.ndarray] = {}
    for name, (numerator, denominator) in RATES.items():
        k = values[:, [COUNTED_OUTCOMES.index(o) for o in numerator]].sum(axis=1)
        n = values[:, [COUNTED_OUTCOMES.index(o) for o in denominator]].sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            columns[name] = np.where(n > 0, k / n, np.nan)
        columns[f"{name}_low"], columns[f"{name}_high"] = wilson_interval(k, n)
    columns["enough_data"] = (counts["runs"] >= min_runs).to_numpy()
    return pd.concat([counts, pd.DataFrame(columns, index=counts.index)], axis=1)


def stability(
    frame: pd.DataFrame, by: Sequence[str], min_runs: int, weight: str | None = None
) -> pd.DataFrame:
    """Counts and rates of logical runs (or logical jobs) per group of ``by`` columns;
    ``weight`` as outcome_counts'."""
    return add_rates(outcome_counts(frame, by, weight=weight), min_runs)


def with_period(frame: pd.DataFrame, freq: str = "D", column: str = "created_at") -> pd.DataFrame:
    """``frame`` with ``period``: the UTC day (``"D"``) or ISO week starting Monday (``"W"``)
    of ``column``, for grouping by day or week."""
    times = frame[column].dt.tz_convert("UTC").dt.tz_localize(None)
    starts = times.dt.to_period("W-SUN" if freq == "W" else freq).dt.start_time
    return frame.assign(period=starts.dt.tz_localize("UTC"))


def rank_by_lower_bound(table: pd.DataFrame, rate: str = "flake_rate") -> pd.DataFrame:
    """Groups with enough data first, by the Wilson lower bound of ``rate``, highest first: the
    groups surely the most flaky (or successful) lead, small samples sink. Ties: more runs first."""
    return (
        table.assign(_short=~table["enough_data"], _bound=-table[f"{rate}_low"], _n=-table["runs"])
        .sort_values(["_short", "_bound", "_n"], na_position="last", kind="stable")
        .drop(columns=["_short", "_bound", "_n"])
        .reset_index(drop=True)
    )


def verdict_label(table: pd.DataFrame, rate: str = "success_rate") -> pd.Series:
    """``"0.83 [0.61, 0.94] n=24"``, or ``"not enough data (n=3)"`` under min_runs. Formatted
    in plain Python: a dozen rows of text cost less than one pandas string operation."""
    runs = [str(n) for n in table["runs"].tolist()]
    enough = np.asarray(table["enough_data"], dtype=bool)
    values = zip(
        *(table[column].tolist() for column in (rate, f"{rate}_low", f"{rate}_high")),
        runs,
        enough,
        strict=True,
    )
    labels = [
        f"{value:.2f} [{low:.2f}, {high:.2f}] n={n}" if full else f"{NOT_ENOUGH_DATA} (n={n})"
        for value, low, high, n, full in values
    ]
    return pd.Series(labels, index=table.index, dtype="str")


def short_of_data(table: pd.DataFrame, min_runs: int) -> str | None:
    """What a table of rates lacks when none of its rows has ``min_runs`` runs (a first
    night, a single run): ``"not enough data (n=1): ..."``; None when a row has enough or there
    is no row at all."""
    if table.empty or table["enough_data"].any():
        return None
    return (
        f"{NOT_ENOUGH_DATA} (n={int(table['runs'].max())}): no row has the {min_runs} counted "
        "runs a verdict needs, so the rates below are no ranking yet."
    )
