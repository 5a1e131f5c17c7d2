"""Page-shaping helpers: what a page needs laid out that is no concept of its own (those live
in ``analytics``): the job x day grid cells, unknown failures by stage. DataFrames in and
out, no Streamlit, so they are tested like the analytics."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analytics.evidence import KNOWN
from analytics.text import filled


def job_day_cells(jobs: pd.DataFrame, days: int) -> pd.DataFrame:
    """The worst state per logical job and day over the last ``days`` days of ``jobs``: a red
    run's category beats retry-green, which beats green; excluded runs leave a cell missing.

    Columns: logical_job, day, state, runs."""
    counted = jobs[jobs["logical_outcome"] != "excluded"]
    if counted.empty:
        return pd.DataFrame(columns=["logical_job", "day", "state", "runs"])
    day = counted["created_at"].dt.floor("D")
    counted = counted.assign(day=day)[day > day.max() - pd.Timedelta(days=days)]
    state = np.select(
        [counted["logical_outcome"] == "fail", counted["logical_outcome"] == "flaky"],
        [filled(counted["category"], "unknown"), "retry-green"],
        default="green",
    )
    rank = np.select([counted["logical_outcome"] == "fail", state == "retry-green"], [2, 1], 0)
    cells = counted.assign(state=state, rank=rank).sort_values(["rank", "created_at"])
    grouped = cells.groupby(["logical_job", "day"])
    return grouped.tail(1)[["logical_job", "day", "state"]].merge(
        grouped.size().rename("runs").reset_index(), on=["logical_job", "day"]
    )


NO_STEP = "(no step)"


def unknown_by_stage(failures: pd.DataFrame) -> pd.DataFrame:
    """The unknown failures (``basis`` not in analytics.evidence.KNOWN) per stage and basis,
    most first; stage NO_STEP where the job stopped in no known step. Columns: stage, basis,
    failures."""
    unknown = failures[failures["basis"].notna() & ~failures["basis"].isin(KNOWN)]
    table = (
        unknown.assign(stage=filled(unknown["stage"], NO_STEP))
        .groupby(["stage", "basis"])
        .size()
        .rename("failures")
        .reset_index()
    )
    order = table.sort_values(["failures", "stage", "basis"], ascending=[False, True, True])
    return order.reset_index(drop=True)


# The Failures page's choice of signatures: every one, the NEW ones (analytics.newness), those
# linked to a known issue, and those not linked.
SIGNATURE_SHOWS = ("all", "new", "known", "unlinked")


def chosen_signatures(signatures: pd.DataFrame, show: str) -> pd.DataFrame:
    """The rows of the signature table (``new`` and ``issue_url`` columns) that ``show``, one
    of ``SIGNATURE_SHOWS``, asks for."""
    linked = signatures["issue_url"].notna()
    keep = {"all": linked | ~linked, "new": signatures["new"], "known": linked, "unlinked": ~linked}
    return signatures[keep[show]].reset_index(drop=True)


def incident_bands(
    incidents: pd.DataFrame, members: pd.DataFrame, runs: pd.DataFrame
) -> pd.DataFrame:
    """The Overview timeline's bands: a row per incident (store.incidents.INCIDENT_COLUMNS)
    and lineage it hit, a lineage being hit when one of the incident's ``members`` failed in a
    run of it among ``runs`` (logical runs with run_id and lineage). Columns: the incident's,
    then lineage."""
    lineages = runs[["run_id", "lineage"]].drop_duplicates()
    hit = members[["run_id", "incident_id"]].merge(lineages, on="run_id")
    hit = hit[["incident_id", "lineage"]].drop_duplicates()
    bands = incidents.merge(hit, left_on="id", right_on="incident_id")
    return bands.drop(columns="incident_id").sort_values(["started_at", "lineage"], kind="stable")


# An incident's cause (store.models.Incident.kind) that names a runner: its host or label.
RUNNER_KIND = "runner"


RUNNER_INCIDENT_COLUMNS = [
    "runner",
    "started_at",
    "ended_at",
    "category",
    "label",
    "jobs",
    "runs",
    "workflows",
]


def runner_incidents(incidents: pd.DataFrame) -> pd.DataFrame:
    """The incidents of one runner (a host name or a runner label), by runner, then start.
    Columns: runner, started_at, ended_at, category, label, jobs, runs, workflows."""
    hosts = incidents[incidents["kind"] == RUNNER_KIND]
    table = hosts.sort_values(["runner", "started_at"], kind="stable")[RUNNER_INCIDENT_COLUMNS]
    return table.reset_index(drop=True)
