"""A successor's first runs: how the workflows a change event created started out. The one
definition, shared by the dashboard's Migrations page and the nightly summary's strips
(docs/vocabulary.md)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from analytics.before_after import group_ranks

BORN_BEFORE = pd.Timedelta(days=1)  # a workflow first run up to a day before its event is its own
COLUMNS = [
    "event_pr",
    "event_title",
    "workflow_path",
    "order",
    "logical_outcome",
    "failure_category",
    "created_at",
    "html_url",
]


def born_spans(events: pd.DataFrame, window_days: int) -> list[tuple[pd.Timestamp, pd.Timestamp]]:
    """Per event, [from, to): a workflow first run then is one the event created."""
    window = pd.Timedelta(days=window_days)
    return [(date - BORN_BEFORE, date + window) for date in events["event_date"]]


def _born_within(born: pd.Series, spans: Sequence[tuple[pd.Timestamp, pd.Timestamp]]) -> np.ndarray:
    """A row per span ([from, to), UTC), a column per workflow of ``born`` (workflow_path ->
    its first run, UTC): whether it was first run within the span. Compared in numpy at
    once, where two pandas comparisons per event cost first-runs 3 ms."""
    if not len(spans) or not len(born):
        return np.zeros((len(spans), len(born)), dtype=bool)
    at = born.dt.tz_convert("UTC").dt.tz_localize(None).to_numpy(dtype="datetime64[ns]")
    bounds = pd.DatetimeIndex([moment for span in spans for moment in span], tz="UTC")
    start, end = bounds.tz_localize(None).to_numpy(dtype="datetime64[ns]").reshape(-1, 2).T
    within: np.ndarray = (at >= start[:, None]) & (at < end[:, None])
    return within


def first_runs_of_new(
    segments: pd.DataFrame, spans: Sequence[tuple[pd.Timestamp, pd.Timestamp]], first_runs: int
) -> tuple[pd.DataFrame, pd.Series]:
    """(runs, born): the first ``first_runs`` counted runs of each workflow first run in one
    of ``spans`` ([from, to): born_spans), by created_at then run_id, from the runs counted
    per segment (store.migration_counts.segment_tally, which has each workflow's first runs
    of each segment and its groups' first times); and ``born``: workflow_path -> its first
    run, as successor_first_runs takes them."""
    born = segments.groupby("workflow_path")["first_at"].min()
    new = np.any(_born_within(born, spans), axis=0).astype(bool)
    firsts = np.flatnonzero(
        segments["run_id"].notna().to_numpy()
        & segments["workflow_path"].isin(born.index[new]).to_numpy()
    )
    times = segments["created_at"].array.asi8[firsts]
    firsts = firsts[np.lexsort((segments["run_id"].to_numpy()[firsts], times))]
    path = pd.factorize(segments["workflow_path"].to_numpy()[firsts])[0]
    kept = firsts[group_ranks(path) < first_runs]
    return segments.iloc[kept].reset_index(drop=True), born


def successor_first_runs(
    runs: pd.DataFrame,
    events: pd.DataFrame,
    first_runs: int,
    window_days: int,
    born: pd.Series | None = None,
) -> pd.DataFrame:
    """Per event (analytics.config_tables.event_table rows), the first ``first_runs`` counted
    (not excluded) logical runs of each workflow whose first run in ``runs`` falls from a day
    before the event to ``window_days`` after it: the workflows the event created. A workflow
    that already ran before is not a successor, however its lineage changed. ``born``:
    workflow_path -> its first run in scope ever, for a frame that does not start with every
    workflow's first run (default: the first run in ``runs``). Picked by position in numpy,
    where a sort, a groupby and a filtered copy per event cost the page 15 ms.

    Columns: COLUMNS (``order`` counts from 1)."""
    if born is None:
        born = runs.groupby("workflow_path")["created_at"].min()
    counted = runs[runs["logical_outcome"] != "excluded"]
    by_time = np.lexsort((counted["run_id"].to_numpy(), counted["created_at"].array.asi8))
    # every workflow's first runs, once: an event's strips are those of the workflows it made
    path = pd.Index(born.index).get_indexer(counted["workflow_path"].to_numpy()[by_time])
    order = group_ranks(path) + 1
    first = np.flatnonzero(order <= first_runs)
    rows, made = [np.empty(0, dtype=np.int64)], [np.empty(0, dtype=np.int64)]
    within = _born_within(born, born_spans(events, window_days))
    for event, born_then in enumerate(within):
        new = np.append(born_then, False)  # -1: never born
        rows.append(first[new[path[first]]])
        made.append(np.full(len(rows[-1]), event))
    row, event_of = np.concatenate(rows), np.concatenate(made)
    if not len(row):
        return pd.DataFrame(columns=COLUMNS)
    # the pull request as one event's rows had it: an int, or an object column with a missing
    pr = events["event_pr"].array.take(event_of)
    strips = counted.iloc[by_time[row]].reset_index(drop=True)
    return strips.assign(
        event_pr=pr.astype(object) if pr.isna().any() else pr.astype(np.int64),
        event_title=events["event_title"].array.take(event_of),
        order=order[row],
    )[COLUMNS]
