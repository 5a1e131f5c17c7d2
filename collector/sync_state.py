"""The sync_state row of a workflow: its listing's ETags, its watermark, its backfill progress.

Written by the listing loop (``collector.sync``) and by each batch of runs
(``collector.sync_batch``), which moves only the watermark.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy.orm import Session

from store import backfill
from store.models import SyncState
from store.upsert import upsert


def save_state(
    session: Session,
    repo: str,
    workflow_id: int,
    watermark: datetime | None,
    etags: dict[str, str] | None,
    window_start: datetime | None = None,
    progress: tuple[datetime, list[backfill.Span], datetime] | None = None,
) -> None:
    """Upsert the workflow's state: its listing (with ``etags``), or else only the watermark
    a batch moved and the spans a backfill listed (``progress``)."""
    row: dict[str, Any] = {
        "repo": repo,
        "workflow_id": workflow_id,
        "watermark": watermark,
        "window_start": window_start,
        "updated_at": datetime.now(UTC),
    }
    if etags is not None:
        row["etags"] = etags
        upsert(session, SyncState, [row])
    elif progress is None:  # a batch moves the watermark, keeps the rest of the state
        upsert(session, SyncState, [row | {"etags": {}}], update=["watermark", "updated_at"])
    else:
        row |= {"etags": {}, "backfill": backfill.dump(*progress)}
        upsert(session, SyncState, [row], update=["watermark", "updated_at", "backfill"])


def reopen_backfill(
    session: Session,
    repo: str,
    workflow_id: int,
    progress: tuple[datetime, list[backfill.Span], datetime],
) -> None:
    """Put a workflow whose backfill was complete back into it, from its floor with the spans
    of ``progress`` listed: the next windows list the rest, and its listing starts again once
    they are in."""
    row = {
        "repo": repo,
        "workflow_id": workflow_id,
        "window_start": None,
        "etags": {},
        "backfill": backfill.dump(*progress),
        "updated_at": datetime.now(UTC),
    }
    upsert(session, SyncState, [row], update=["window_start", "backfill", "updated_at"])
