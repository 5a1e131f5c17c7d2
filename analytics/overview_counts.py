"""The Overview's counts as store.overview_counts' statements give them, computed here from the
frames of raw rows when the derived tables are not current (the same frame either way), and
what the Overview's tables make of them: the job x day grid's cells, the incidents' lineages."""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pandas as pd

from analytics import sequences
from analytics.once import INCIDENT, run_incidents
from analytics.text import filled
from store.overview_counts import JOB_DAY_KEYS, RUN_COUNT_KEYS
from store.vocabulary import RED_OUTCOMES

GRID_KEYS = ["logical_job", "day"]
CELL_COLUMNS = [*GRID_KEYS, "state", "runs"]


def canonical(counts: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """``counts`` sorted by ``keys``, text as strings (NaN: missing), days (and ``last_at``)
    as UTC microseconds and flags as integers, as the frames of logical runs and jobs hold
    them: SQL's counts and pandas' are then the same frame."""
    text = [c for c in keys if c not in ("day", "in_range", "invalid")]
    flags = [c for c in ("runs", "in_range", "invalid") if c in counts]
    out = counts.astype({**dict.fromkeys(text, "str"), **dict.fromkeys(flags, "int64")})
    for column in ("day", "last_at"):
        if column in out:
            out[column] = pd.to_datetime(out[column], utc=True).astype("datetime64[us, UTC]")
    return out.sort_values(keys, na_position="first", kind="stable").reset_index(drop=True)


def run_counts(
    runs: pd.DataFrame, members: pd.DataFrame, since: datetime | None, until: datetime | None
) -> pd.DataFrame:
    """store.overview_counts.run_counts from logical runs (every date) and ``members``
    (store.incidents.load_members)."""
    created = runs["created_at"]
    inside = pd.Series(True, index=runs.index)
    if since is not None:
        inside &= created >= since
    if until is not None:
        inside &= created < until
    keyed = runs.assign(
        day=created.dt.floor("D"),
        **{INCIDENT: run_incidents(runs, members)},
        in_range=inside.astype("int64"),
    )
    counts = keyed.groupby(RUN_COUNT_KEYS, dropna=False).size().rename("runs").reset_index()
    return canonical(counts, RUN_COUNT_KEYS)


def _utc(moment: datetime) -> pd.Timestamp:
    return pd.Timestamp(moment).tz_convert("UTC")


def off_midnight(moment: datetime | None) -> datetime | None:
    """``moment`` when it falls inside a UTC day, which counts per day cannot cut (their
    statement marks it: ``in_range``); None at a midnight or when open."""
    if moment is None or _utc(moment) == _utc(moment).floor("D"):
        return None
    return moment


def in_dates(counts: pd.DataFrame, since: datetime | None, until: datetime | None) -> pd.DataFrame:
    """``counts`` (run_counts, ``in_range`` marking only the bounds off midnight) with
    ``in_range`` 1 for the days of [since, until) only: the counts of every date, read once,
    serve every date range of whole days."""
    inside = counts["in_range"].eq(1)
    if since is not None:
        inside &= counts["day"] >= _utc(since).floor("D")
    if until is not None:
        inside &= counts["day"] < _utc(until).ceil("D")
    return counts.assign(in_range=inside.astype("int64"))


def job_day_counts(jobs: pd.DataFrame) -> pd.DataFrame:
    """store.overview_counts.job_day_counts from logical jobs whose invalid windows are marked
    already (analytics.outcomes.mark_invalid_windows): ``invalid`` is 0."""
    counted = jobs[jobs["logical_outcome"] != "excluded"]
    keyed = counted.assign(day=counted["created_at"].dt.floor("D"), invalid=0)
    counts = (
        keyed.groupby(JOB_DAY_KEYS, dropna=False)
        .agg(runs=("created_at", "size"), last_at=("created_at", "max"))
        .reset_index()
    )
    return canonical(counts, JOB_DAY_KEYS)


def job_day_cells(counts: pd.DataFrame) -> pd.DataFrame:
    """The worst state per logical job and day of ``counts`` (job_day_counts): a red run's
    category (``ci_config`` in an invalid window, "unknown" when none) beats retry-green,
    which beats green; between red runs, the latest's.
    Columns CELL_COLUMNS. Over the keys' codes in numpy: a sort, a grouping's tail, a sum
    and a merge cost the grid 10 ms more."""
    if counts.empty:
        return pd.DataFrame(columns=CELL_COLUMNS)
    outcome = counts["logical_outcome"]
    marked = outcome.isin(RED_OUTCOMES) & counts["invalid"].eq(1)
    category = filled(counts["category"].mask(marked, "ci_config"), "unknown")
    fail, flaky = (outcome == "fail").to_numpy(), (outcome == "flaky").to_numpy()
    state = np.select(
        [fail, flaky], [category.to_numpy(dtype=object), "retry-green"], default="green"
    )
    # each cell's rows by rank, then time (a missing one last): its last is its worst
    keyed = np.flatnonzero(counts[GRID_KEYS].notna().all(axis=1).to_numpy())
    ranked = counts.assign(rank=np.select([fail, flaky], [2, 1], 0))
    rows, group = sequences.ordered(ranked, GRID_KEYS, keyed, ["rank", "last_at"])
    worst = rows[sequences.neighbours(group)[1] < 0]
    cells = sequences.Pairs.of(counts["logical_job"], counts["day"], counts["runs"].to_numpy())
    return pd.DataFrame(
        {
            "logical_job": cells.firsts.take(cells.cells // cells.width),
            "day": cells.seconds.take(cells.cells % cells.width),
            "state": pd.Series(state[worst], dtype="str"),
            "runs": cells.sums[0].astype(np.int64),  # counted runs: canonical's integers
        }
    )


def incident_lineages(incidents: pd.DataFrame, hits: pd.DataFrame) -> pd.DataFrame:
    """A row per incident (store.incidents.INCIDENT_COLUMNS) and lineage it hit: ``hits``,
    incident_id and lineage (of the workflows it failed a run of). Columns: the incident's,
    then lineage; by start, then lineage."""
    hit = hits[[INCIDENT, "lineage"]].drop_duplicates()
    bands = incidents.merge(hit, left_on="id", right_on=INCIDENT)
    bands = bands.drop(columns=INCIDENT).sort_values(["started_at", "lineage"], kind="stable")
    return bands.reset_index(drop=True)
