"""How fresh a repository's data is, and what of it is not collected yet, in one phrase each for
the pages, ``ciflake export`` and the summary alike."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from sqlalchemy import Engine

from store.backfill import Progress
from store.bookkeeping import LastCollect, stored_workflow_paths, workflow_progress
from store.page_queries import run_span
from store.project import Project


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


def missing(
    engine: Engine, project: Project, since: datetime | None, until: datetime | None, now: datetime
) -> str | None:
    """What the store lacks of [since, until) (None: from the oldest run; to ``now``): "no runs
    collected yet ..." before the first collect, "backfill in progress: ..." while a first
    collect has days of it still to list (the configured workflows', else the collected), None
    when it has them all. Thin data must say so: an empty table is no quiet CI."""
    oldest, _ = run_span(engine, project.repo)
    if oldest is None:
        return f"no runs collected yet for {project.repo}: run `ciflake collect`"
    progress = workflow_progress(engine, project.repo)
    lacking = not_on_github(engine, project)
    paths = collectable(project, lacking) or list(progress)
    end = now if until is None else min(until, now)
    gaps = uncollected(progress, paths, since or oldest, end)
    absent = f"not found on GitHub (check its path): {', '.join(lacking)}" if lacking else None
    if not gaps:
        return absent
    workflows = len({path for path, _, _ in gaps})
    first, last = min(start for _, start, _ in gaps), max(stop for _, _, stop in gaps)
    backfill = (
        f"backfill in progress: {workflows} workflow{'s' * (workflows > 1)} not collected yet "
        f"between {first:%Y-%m-%d} and {last:%Y-%m-%d}, left out until the next collects bring "
        "them"
    )
    return backfill if absent is None else f"{backfill}; {absent}"


def not_on_github(engine: Engine, project: Project) -> list[str]:
    """The configured workflow paths the repository's listed workflows lack (a typo, or a
    successor whose file does not exist yet): no collect can list them, so no backfill waits
    for them. Nothing before a collect has listed the repository's workflows."""
    listed = stored_workflow_paths(engine, project.repo)
    return [w.path for w in project.workflows if listed and w.path not in listed]


def collectable(project: Project, lacking: list[str]) -> list[str]:
    """The configured workflow paths, once each, less those GitHub does not have."""
    return [p for p in dict.fromkeys(w.path for w in project.workflows) if p not in lacking]


def uncollected(
    progress: dict[str, Progress], paths: Iterable[str], start: datetime, now: datetime
) -> tuple[tuple[str, datetime, datetime], ...]:
    """The spans of [start, now] that a backfill still has to list, per workflow path
    (``progress``: its backfill's, by path); a workflow never collected is missing whole."""
    gaps = []
    for path in paths:
        listed = progress.get(path)
        if listed is None:
            gaps.append((path, start, now))
            continue
        listed_to = max((end for _, end in listed.done), default=start)
        # the newest window ends when it was listed: what came after is the next collect's
        gaps += [(path, a, b) for a, b in listed.missing((start, max(start, listed_to)))]
        if not listed.complete and listed_to < now - timedelta(days=1):
            gaps.append((path, listed_to, now))
    return tuple(gaps)
