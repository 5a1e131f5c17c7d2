"""Triage's writes and reads in the store: what maintainers and ``triage --post`` decided
about failure signatures (store.models ``KnownIssue``, ``Correction``, ``TriageLog``)."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy.orm import Session

from store.models import TriageLog

# What a TriageLog row records: a person's link or correction, and triage --post's writes.
ACTIONS: tuple[str, ...] = (
    "linked",
    "unlinked",
    "corrected",
    "uncorrected",
    "filed",
    "updated",
    "closed",
    "reopened",
)


def log_action(
    session: Session,
    repo: str,
    signature: str,
    action: str,
    actor: str,
    *,
    issue_number: int | None = None,
    detail: str | None = None,
    at: datetime | None = None,
) -> None:
    """Record one triage action in the caller's transaction."""
    if action not in ACTIONS:
        raise ValueError(f"unknown triage action {action!r}")
    session.add(
        TriageLog(
            repo=repo,
            signature=signature,
            action=action,
            issue_number=issue_number,
            actor=actor,
            at=at or datetime.now(UTC),
            detail=detail,
        )
    )
