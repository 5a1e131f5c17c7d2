"""STALE: a workflow (or lineage) that stopped running. The one definition, shared by the
dashboard's tiles, the nightly summary and anything else that says STALE (docs/vocabulary.md).

Silence is measured against one reference moment that every caller passes: the newest run
stored for the repository (``store.page_queries.run_span``), not the wall clock. A whole repository
gone silent is a collection problem (the summary's freshness line says so), not a workflow
going stale; and simulated or backfilled data end before today."""

from __future__ import annotations

import numpy as np
import pandas as pd

MIN_GAPS = 3  # fewer gaps between runs than this: no rhythm to miss, no verdict
STALE, OK, NO_VERDICT = "STALE", "OK", "not enough data"
COLUMNS = ["last_run_at", "usual_gap_hours", "gaps", "silent_hours", "status"]


def staleness(
    runs: pd.DataFrame,
    by: str,
    reference: pd.Timestamp | None,
    stale_factor: float,
    min_gaps: int = MIN_GAPS,
) -> pd.DataFrame:
    """One row per ``by`` value (workflow_path or lineage) of ``runs``: last_run_at,
    usual_gap_hours (the median gap between its runs, of any outcome), gaps (how many),
    silent_hours (``reference`` minus the last run) and ``status``: STALE when silent for
    longer than ``stale_factor`` x the usual gap, NO_VERDICT with fewer than ``min_gaps`` gaps
    or no ``reference``, OK otherwise. Pass the runs in scope (default-branch pushes and
    schedules): a PR-only workflow has no rhythm to miss."""
    ordered = runs.sort_values(["created_at", "run_id"], kind="stable")
    gaps = ordered.groupby(by)["created_at"].diff().dt.total_seconds() / 3600
    out = (
        ordered.assign(gap=gaps)
        .groupby(by)
        .agg(
            last_run_at=("created_at", "max"),
            usual_gap_hours=("gap", "median"),
            gaps=("gap", "count"),
        )
    )
    if reference is None or pd.isna(reference):
        silent = pd.Series(np.nan, index=out.index, dtype=float)
    else:
        silent = (pd.Timestamp(reference) - out["last_run_at"]).dt.total_seconds() / 3600
    out["silent_hours"] = silent
    out["status"] = np.select(
        [
            (out["gaps"] < min_gaps).to_numpy() | silent.isna().to_numpy(),
            (silent > stale_factor * out["usual_gap_hours"]).to_numpy(),
        ],
        [NO_VERDICT, STALE],
        default=OK,
    )
    return out[COLUMNS].reset_index()
