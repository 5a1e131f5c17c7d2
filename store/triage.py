"""Triage's writes and reads in the store: what maintainers and ``triage --post`` decided
about failure signatures (store.models ``KnownIssue``, ``Correction``, ``TriageLog``)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from sqlalchemy import Select, case, func, select, update
from sqlalchemy.orm import Session

from store.derived import CHUNK
from store.models import Correction, Failure, KnownIssue, PostedComment, TriageLog, WorkflowRun
from store.runfilter import Bind, RunFilter, as_frame, filtered, utc
from store.settings import ConfigError
from store.vocabulary import CATEGORIES

if TYPE_CHECKING:  # pandas is imported where it is used: a collect never needs it
    import pandas as pd


# What a TriageLog row records: a person's link or correction, and triage --post's writes.
ACTIONS: tuple[str, ...] = (
    "linked",
    "unlinked",
    "corrected",
    "uncorrected",
    "filed",
    "adopted",
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


# ---- known issues: a person's link from a signature to the issue that tracks it -------------

# A GitHub issue's web address, on github.com or an Enterprise Server host.
_ISSUE_URL = re.compile(r"https?://[^/\s]+/([^/\s]+/[^/\s]+)/issues/(\d+)/?")


def parse_issue_url(url: str) -> tuple[str | None, int | None]:
    """(owner/name, number) of a GitHub issue URL; (None, None) for any other http(s) URL,
    kept as it is. Anything else is a ConfigError line."""
    found = _ISSUE_URL.fullmatch(url)
    if found:
        return found[1], int(found[2])
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or any(c.isspace() for c in url):
        raise ConfigError(f"not an http(s) URL: {url!r}")
    return None, None


def link(
    session: Session,
    repo: str,
    signature: str,
    url: str,
    *,
    note: str | None,
    set_by: str,
    now: datetime | None = None,
) -> KnownIssue:
    """Link ``signature`` to ``url`` (a person's link, replacing any earlier one: GitHub's
    state of the earlier issue no longer applies), and log it."""
    issue_repo, number = parse_issue_url(url)
    now = now or datetime.now(UTC)
    row = session.get(KnownIssue, (repo, signature)) or KnownIssue(repo=repo, signature=signature)
    row.url, row.issue_repo, row.issue_number = url, issue_repo, number
    row.source, row.note, row.set_by, row.set_at = "person", note, set_by, now
    row.state = row.state_reason = row.closed_at = row.closed_by = None
    row.checked_at = row.body_sha256 = None
    session.add(row)
    log_action(session, repo, signature, "linked", set_by, issue_number=number, detail=url, at=now)
    return row


def unlink(session: Session, repo: str, signature: str, actor: str) -> KnownIssue | None:
    """Remove ``signature``'s link and log it; the link removed, or None when there was none."""
    row = session.get(KnownIssue, (repo, signature))
    if row is None:
        return None
    session.delete(row)
    log_action(session, repo, signature, "unlinked", actor, issue_number=row.issue_number)
    return row


def signature_seen(session: Session, repo: str, signature: str) -> bool:
    """Whether ``signature`` names a failure of ``repo``'s stored runs."""
    stmt = (
        select(Failure.run_id)
        .join(WorkflowRun, WorkflowRun.id == Failure.run_id)
        .where(WorkflowRun.repo == repo, Failure.signature == signature)
        .limit(1)
    )
    return session.scalar(stmt) is not None


# ---- corrections: a maintainer's category for every failure of a signature ------------------


def _corrected(column: Any) -> Any:
    """The correction's ``column`` for the failure of the UPDATE (correlated on its run's
    repository and its signature)."""
    return (
        select(column)
        .join(WorkflowRun, WorkflowRun.repo == Correction.repo)
        .where(WorkflowRun.id == Failure.run_id, Correction.signature == Failure.signature)
        .scalar_subquery()
    )


def _apply(session: Session, where: Any) -> None:
    """The failures ``where`` selects take their correction's category with evidence
    "maintainer", or the classifier's answer back when they have none: one UPDATE, the same
    on SQLite and PostgreSQL."""
    stmt = (
        update(Failure)
        .where(where)
        .values(
            category=func.coalesce(_corrected(Correction.category), Failure.classifier_category),
            evidence=case(
                (_corrected(Correction.signature).is_not(None), "maintainer"),
                else_=Failure.classifier_evidence,
            ),
        )
        .execution_options(synchronize_session=False)
    )
    session.execute(stmt)


def apply_corrections(session: Session, run_ids: Iterable[int]) -> None:
    """Apply the corrections to the failures of ``run_ids``, just written: call it in the
    transaction that writes failures, before their runs' derived rows are refreshed."""
    ids = sorted(set(run_ids))
    for start in range(0, len(ids), CHUNK):
        _apply(session, Failure.run_id.in_(ids[start : start + CHUNK]))


def _signature_runs(session: Session, repo: str, signature: str) -> list[int]:
    """The runs of ``repo`` with a failure of ``signature``, after applying its correction
    (or its absence) to every one of those failures."""
    runs = select(WorkflowRun.id).where(WorkflowRun.repo == repo)
    _apply(session, (Failure.signature == signature) & Failure.run_id.in_(runs))
    stmt = (
        select(Failure.run_id)
        .distinct()
        .where(Failure.signature == signature, Failure.run_id.in_(runs))
        .order_by(Failure.run_id)
    )
    return list(session.scalars(stmt))


def correct(
    session: Session,
    repo: str,
    signature: str,
    category: str,
    *,
    note: str,
    set_by: str,
    now: datetime | None = None,
) -> list[int]:
    """Set a maintainer's ``category`` for every failure of ``signature``, past and future, and
    log it; returns the runs whose derived rows the caller refreshes in this transaction."""
    if category not in CATEGORIES:
        raise ConfigError(f"unknown category {category!r} (choose from: {', '.join(CATEGORIES)})")
    if not note.strip():
        raise ConfigError("--note must say why the category is corrected")
    now = now or datetime.now(UTC)
    row = session.get(Correction, (repo, signature)) or Correction(repo=repo, signature=signature)
    row.category, row.note, row.set_by, row.set_at = category, note, set_by, now
    session.add(row)
    session.flush()
    log_action(session, repo, signature, "corrected", set_by, detail=f"{category}: {note}", at=now)
    return _signature_runs(session, repo, signature)


def uncorrect(session: Session, repo: str, signature: str, actor: str) -> list[int] | None:
    """Take back ``signature``'s correction: its failures get the classifier's answer again.
    Returns the runs to refresh, or None when there was no correction."""
    row = session.get(Correction, (repo, signature))
    if row is None:
        return None
    session.delete(row)
    session.flush()
    log_action(session, repo, signature, "uncorrected", actor, detail=row.category)
    return _signature_runs(session, repo, signature)


# ---- reads: what was decided, with the failures behind it -----------------------------------

TRIAGE_COLUMNS = (
    "signature",
    "category",
    "failures",
    "first_seen",
    "last_seen",
    "url",
    "issue_number",
    "state",
    "closed_at",
    "source",
    "note",
    "set_by",
    "set_at",
    "corrected_to",
    "correction_note",
    "corrected_by",
    "corrected_at",
)


def decisions(repo: str | None) -> Select[Any]:
    """Each signature of ``repo`` that is linked or corrected, with its link's and its
    correction's columns (``TRIAGE_COLUMNS`` from url on; None where there is none)."""
    issue, fix = KnownIssue, Correction
    decided = (
        select(issue.signature)
        .where(issue.repo == repo)
        .union(select(fix.signature).where(fix.repo == repo))
        .subquery()
    )
    return (
        select(
            decided.c.signature,
            issue.url,
            issue.issue_number,
            issue.state,
            issue.closed_at,
            issue.source,
            issue.note,
            issue.set_by,
            issue.set_at,
            fix.category.label("corrected_to"),
            fix.note.label("correction_note"),
            fix.set_by.label("corrected_by"),
            fix.set_at.label("corrected_at"),
        )
        .select_from(decided)
        .outerjoin(issue, (issue.repo == repo) & (issue.signature == decided.c.signature))
        .outerjoin(fix, (fix.repo == repo) & (fix.signature == decided.c.signature))
    )


def triage_signatures(bind: Bind, where: RunFilter) -> pd.DataFrame:
    """One row per signature of ``where.repo`` that is linked to an issue or corrected, with
    its failures in the runs ``where`` selects (0 when none), oldest link first.

    Columns: ``TRIAGE_COLUMNS``: category (the corrected one, else its failures' in the runs
    selected, else its failures' in the whole history), failures, first_seen and last_seen (of
    those failures); the link's url, issue_number, GitHub's state and closed_at as last read,
    source (person | ciflake), note, set_by, set_at; the correction's category (corrected_to),
    note, set_by and set_at."""
    import pandas as pd

    decided = decisions(where.repo).subquery()
    counted = filtered(
        select(
            Failure.signature,
            func.count().label("failures"),
            func.max(Failure.category).label("seen_category"),
            func.min(WorkflowRun.created_at).label("first_seen"),
            func.max(WorkflowRun.created_at).label("last_seen"),
        )
        .join(WorkflowRun, WorkflowRun.id == Failure.run_id)
        .where(Failure.signature.in_(select(decided.c.signature)))
        .group_by(Failure.signature),
        where,
    ).subquery()
    ever = (  # the category of a signature with no failure in the runs selected
        select(Failure.signature, func.max(Failure.category).label("category"))
        .join(WorkflowRun, WorkflowRun.id == Failure.run_id)
        .where(Failure.signature.in_(select(decided.c.signature)))
        .where(*([WorkflowRun.repo == where.repo] if where.repo else []))
        .group_by(Failure.signature)
        .subquery()
    )
    stmt = (
        select(
            decided.c.signature,
            func.coalesce(decided.c.corrected_to, counted.c.seen_category, ever.c.category).label(
                "category"
            ),
            func.coalesce(counted.c.failures, 0).label("failures"),
            counted.c.first_seen,
            counted.c.last_seen,
            *(c for c in decided.c if c.name != "signature"),
        )
        .select_from(decided)
        .outerjoin(counted, counted.c.signature == decided.c.signature)
        .outerjoin(ever, ever.c.signature == decided.c.signature)
        .order_by(func.coalesce(decided.c.set_at, decided.c.corrected_at), decided.c.signature)
    )
    times = ("first_seen", "last_seen", "closed_at", "set_at", "corrected_at")
    frame = as_frame(bind, stmt)
    for column in times:
        frame[column] = pd.to_datetime(frame[column], utc=True, format="ISO8601")
    frame["issue_number"] = frame["issue_number"].astype("Int64")
    return frame[list(TRIAGE_COLUMNS)]


# ---- the nightly summary's reads -------------------------------------------------------------

# What triage --post did on GitHub, as the summary lists it: "adopted" is an issue it had
# filed already (a run killed before recording it, a lost link) and found again.
POSTED_ACTIONS = ("filed", "adopted", "updated", "closed", "reopened")


def last_summary_at(bind: Bind, repo: str) -> datetime | None:
    """When ``repo``'s summary comment was last posted (created or edited), None when never:
    the summary's "new since the last summary" counts from it."""
    stmt = select(func.max(PostedComment.updated_at)).where(PostedComment.repo == repo)
    with Session(bind) as session:
        return utc(session.scalar(stmt))


def posted_actions(bind: Bind, repo: str, since: datetime) -> pd.DataFrame:
    """What triage --post did for ``repo`` from ``since`` on (``POSTED_ACTIONS``), oldest
    first, with the link's url where the signature is still linked. Columns: at, action,
    signature, issue_number, actor, detail, url."""
    log, issue = TriageLog, KnownIssue
    stmt = (
        select(
            log.at, log.action, log.signature, log.issue_number, log.actor, log.detail, issue.url
        )
        .outerjoin(issue, (issue.repo == log.repo) & (issue.signature == log.signature))
        .where(log.repo == repo, log.at >= since, log.action.in_(POSTED_ACTIONS))
        .order_by(log.at, log.id)
    )
    frame = as_frame(bind, stmt, ("at",))
    frame["issue_number"] = frame["issue_number"].astype("Int64")
    return frame
