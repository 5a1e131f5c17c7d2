"""A successor's first runs: how the workflows a change event created started out. The one
definition, shared by the dashboard's Migrations page and the nightly summary's strips
(docs/vocabulary.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np
import pandas as pd

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


def first_runs_of_new(
    segments: pd.DataFrame, spans: Sequence[tuple[pd.Timestamp, pd.Timestamp]], first_runs: int
) -> tuple[pd.DataFrame, pd.Series]:
    """(runs, born): the first ``first_runs`` counted runs of each workflow first run in one
    of ``spans`` ([from, to): born_spans), by created_at then run_id, from the runs counted
    per segment (store.migration_counts.segment_tally, which has each workflow's first runs
    of each segment and its groups' first times); and ``born``: workflow_path -> its first
    run, as successor_first_runs takes them."""
    born = segments.groupby("workflow_path")["first_at"].min()
    new = np.zeros(len(born), dtype=bool)
    for start, end in spans:
        new |= ((born >= start) & (born < end)).to_numpy()
    firsts = segments[segments["run_id"].notna() & segments["workflow_path"].isin(born.index[new])]
    firsts = firsts.sort_values(["created_at", "run_id"], kind="stable")
    return firsts.groupby("workflow_path").head(first_runs).reset_index(drop=True), born


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
    workflow's first run (default: the first run in ``runs``).

    Columns: COLUMNS (``order`` counts from 1)."""
    if born is None:
        born = runs.groupby("workflow_path")["created_at"].min()
    counted = runs[runs["logical_outcome"] != "excluded"]
    counted = counted.sort_values(["created_at", "run_id"], kind="stable")
    # every workflow's first runs, once: an event's strips are those of the workflows it made
    first = counted.groupby("workflow_path").head(first_runs)
    first = first.assign(order=first.groupby("workflow_path").cumcount() + 1)
    strips = []
    spans = born_spans(events, window_days)
    for event, (start, end) in zip(events.itertuples(), spans, strict=True):
        new = born[(born >= start) & (born < end)]
        if new.empty:
            continue
        strips.append(
            first[first["workflow_path"].isin(new.index)].assign(
                event_pr=event.event_pr,  # type: ignore[arg-type]  # Int64: an int or pd.NA
                event_title=cast(str, event.event_title),
            )
        )
    if not strips:
        return pd.DataFrame(columns=COLUMNS)
    return pd.concat(strips, ignore_index=True)[COLUMNS]
