"""Choosing what the summary is about: which change event (``--pr`` or the latest migration;
none when there is no such event), failures since when (``--since``), and where the comment
goes (``--issue``, ``--pr``, the config's ``[summary] pr``, else the event's PR)."""

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
    if match is not None:
        amount, unit = int(match[1]), match[2]
        return now - (timedelta(hours=amount) if unit == "h" else timedelta(days=amount))
    try:
        datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(
            f"--since: {text!r} is none of its forms: 24h (hours before now), 7d (days before "
            "now), YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ (UTC)"
        ) from None
    return parse_datetime(text, "--since")


def pick_event(events: pd.DataFrame, pr: int | None) -> pd.Series | None:
    """The change event made by PR ``pr``, else (no ``pr``) the latest migration event; None
    when there is no such event: the summary then says what happened since --since."""
    if pr is not None:
        chosen = events[events["event_pr"] == pr]
    else:
        chosen = events[events["event_kind"] == "migration"]
    return None if chosen.empty else chosen.iloc[-1]


def target_number(
    project: Project, event: pd.Series | None, pr: int | None, issue: int | None
) -> int:
    """Where to post: --issue, --pr, the repository's summary PR, else the event's PR."""
    event_pr = None if event is None else event["event_pr"]
    for number in (issue, pr, project.summary_pr, event_pr):
        if number is not None and not pd.isna(number):
            return int(number)
    raise ConfigError(
        f"nowhere to post for {project.repo}: give --pr N or --issue N, or set its summary_pr "
        "([summary] pr in the single-repository form)"
    )
