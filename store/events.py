"""Change events: those of the config file, plus those stored by ``events add`` or detection."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from store.models import ChangeEvent
from store.project import Project
from store.upsert import upsert


@dataclass(frozen=True)
class Event:
    date: datetime
    title: str
    pr: int | None
    kind: str
    source: str
    lineages: tuple[str, ...] | None


def all_events(project: Project, engine: Engine | None) -> list[Event]:
    """Every event of ``project``'s repository, oldest first: the config file's, then those
    stored in the database; a stored one that repeats one of the file (same date and title)
    is shown once."""
    events = [Event(e.date, e.title, e.pr, e.kind, "config", e.lineages) for e in project.events]
    seen = {(e.date, e.title) for e in events}
    if engine is not None:
        with Session(engine) as session:
            rows = session.scalars(select(ChangeEvent).where(ChangeEvent.repo == project.repo))
            for row in rows:
                if (row.occurred_at, row.title) not in seen:
                    events.append(
                        Event(row.occurred_at, row.title, row.pr, row.kind, row.source, None)
                    )
    return sorted(events, key=lambda e: (e.date, e.title))


def add_event(
    engine: Engine, repo: str, when: datetime, title: str, pr: int | None, kind: str
) -> bool:
    """Store an event; returns False when the same one was already there."""
    with Session(engine) as session, session.begin():
        existing = session.scalar(
            select(ChangeEvent.id).where(
                ChangeEvent.repo == repo,
                ChangeEvent.occurred_at == when,
                ChangeEvent.title == title,
            )
        )
        if existing is not None:
            return False
        row = {
            "repo": repo,
            "occurred_at": when,
            "title": title,
            "pr": pr,
            "kind": kind,
            "source": "cli",
        }
        upsert(session, ChangeEvent, [row])
    return True
