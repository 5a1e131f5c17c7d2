"""Choosing what the summary is about: which change event (``--pr`` or the latest migration),
failures since when (``--since``), and where the comment goes (``--issue``, ``--pr``, the
config's ``[summary] pr``, else the event's PR)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import pandas as pd

from store.project import Project
from store.settings import ConfigError, parse_datetime

SINCE_PATTERN = re.compile(r"(\d+)\s*([hd])")
HISTORY_DAYS = 21  # runs read before --since: the neighbours that failure verdicts compare with


def parse_since(text: str, now: datetime) -> datetime:
    """``24h``, ``7d`` (before ``now``) or a date / ISO time (UTC)."""
    match = SINCE_PATTERN.fullmatch(text.strip())
    if match is None:
        return parse_datetime(text, "--since")
    amount, unit = int(match[1]), match[2]
    return now - (timedelta(hours=amount) if unit == "h" else timedelta(days=amount))


def pick_event(events: pd.DataFrame, pr: int | None) -> pd.Series:
    """The change event made by PR ``pr``, or the latest migration event."""
    if pr is not None:
        chosen = events[events["event_pr"] == pr]
        if chosen.empty:
            raise ConfigError(f"no change event for PR #{pr} (see: ciflake events list)")
    else:
        chosen = events[events["event_kind"] == "migration"]
        if chosen.empty:
            raise ConfigError("no migration event in the config (or use --pr N)")
    return chosen.iloc[-1]


def target_number(project: Project, event: pd.Series, pr: int | None, issue: int | None) -> int:
    """Where to post: --issue, --pr, the repository's summary PR, else the event's PR."""
    for number in (issue, pr, project.summary_pr, event["event_pr"]):
        if number is not None and not pd.isna(number):
            return int(number)
    raise ConfigError(
        f"nowhere to post for {project.repo}: give --pr N or --issue N, or set its summary_pr "
        "([summary] pr in the single-repository form)"
    )
