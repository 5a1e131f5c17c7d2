"""How fresh a repository's data is, in one phrase for the pages and the summary alike."""

from __future__ import annotations

from datetime import datetime

from store.bookkeeping import LastCollect


def collected(last: LastCollect | None, now: datetime) -> str:
    """ "last successful collect 2026-12-04 09:12 UTC (1.5 h ago)", or the collect the request
    budget stopped before its end, with why (its data then ends where it stopped)."""
    if last is None:
        return "no successful collect recorded"
    hours = (now - last.at).total_seconds() / 3600
    when = f"{last.at:%Y-%m-%d %H:%M} UTC ({hours:.1f} h ago)"
    if last.stopped is None:
        return f"last successful collect {when}"
    return f"last collect {when}, stopped before its end: {last.stopped}"
