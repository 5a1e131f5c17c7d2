"""Page-shaping helpers: what a page needs laid out that is no concept of its own (those live
in ``analytics``): the chosen signatures, a runner's incidents. DataFrames in and
out, no Streamlit, so they are tested like the analytics."""

from __future__ import annotations

import pandas as pd

# The Failures page's choice of signatures: every one, the NEW ones (analytics.newness), those
# linked to a known issue, and those not linked.
SIGNATURE_SHOWS = ("all", "new", "known", "unlinked")


def chosen_signatures(signatures: pd.DataFrame, show: str) -> pd.DataFrame:
    """The rows of the signature table (``new`` and ``issue_url`` columns) that ``show``, one
    of ``SIGNATURE_SHOWS``, asks for."""
    linked = signatures["issue_url"].notna()
    keep = {"all": linked | ~linked, "new": signatures["new"], "known": linked, "unlinked": ~linked}
    return signatures[keep[show]].reset_index(drop=True)


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


# The Runners page charts the runners with the most hard failures, at most this many: a chart
# of thousands of bars reads as nothing; the table below it holds every runner.
CHARTED_RUNNERS = 30


def most_failed(runners: pd.DataFrame, limit: int = CHARTED_RUNNERS) -> pd.DataFrame:
    """The ``limit`` rows of the runners table with the most hard failures (``fail``), most
    first; ties keep the table's order (surest fail rate first)."""
    return runners.sort_values("fail", ascending=False, kind="stable").head(limit)
