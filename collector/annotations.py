"""Check-run annotations of the jobs that went wrong, and the time limits they reveal.

GitHub keeps a job's annotations (its id is its check run's id) for 400 days, long after the
log has expired: "Process completed with exit code 137.", "...has exceeded the maximum
execution time of N minutes.", "...lost communication with the server", a step's `::error::`
lines. They are fetched once per job that failed, timed out, or was cancelled after it started,
and never asked for again (docs/github-behaviour.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.orm import Session

from collector.client import GitHubClient, NotFound
from collector.payloads import FAILED_CONCLUSIONS, parse_time, ran
from store.models import JobAnnotations
from store.upsert import upsert

# What the runner writes when a job reaches its `timeout-minutes` (GitHub then reports the job,
# and its run when nothing else failed, `cancelled`: paiml/aprender#3293).
TIME_LIMIT = re.compile(r"has exceeded the maximum execution time of [0-9]+ minutes")
# GitHub's default `timeout-minutes` (workflow-syntax docs): a cancelled job that ran this long
# hit it, whatever its annotations say.
DEFAULT_LIMIT_MINUTES = 360
# What GitHub writes on a job cancelled for another reason than its time limit: a newer run of
# its concurrency group (fakehub.annotations quotes it), or a person.
OTHER_CANCEL = re.compile(r"Canceling since a higher priority waiting request|was canceled by")
# The fact a stored job that hit a time limit carries into a reclassification.
TIME_LIMIT_REACHED = "ran to its time limit"


def says_time_limit(messages: Sequence[str]) -> bool:
    """Whether annotation messages name the time limit (the runner's own words)."""
    return any(TIME_LIMIT.search(m) for m in messages)


def time_limit_fact(
    job: dict[str, Any], timed_out: bool, reached: dict[int, str] | None = None
) -> str | None:
    """What the classifier is told of a job's time limit: how it ran its whole limit
    (``reached``, from the workflow file), or that it hit one; None when it did not, or when
    its annotations name the limit themselves (they decide then)."""
    if says_time_limit(job.get("annotations") or ()):
        return None
    how = (reached or {}).get(job["id"])
    return how or (TIME_LIMIT_REACHED if timed_out else None)


def explained(job: dict[str, Any], notes: Sequence[dict[str, Any]] | None) -> bool:
    """Whether a job's annotations say why it stopped: a failed job's, when there are any to
    read; a cancelled job's, when they name the time limit or another cause."""
    if notes is None:
        return False
    if job.get("conclusion") != "cancelled":
        return True
    said = [n.get("message") or "" for n in notes]
    return says_time_limit(said) or any(OTHER_CANCEL.search(m) for m in said)


def needs_annotations(job: dict[str, Any]) -> bool:
    """A job that failed or timed out, or was cancelled after it started."""
    conclusion = job.get("conclusion")
    if conclusion in FAILED_CONCLUSIONS:
        return True
    return conclusion == "cancelled" and ran(job)


def fetch_annotations(client: GitHubClient, repo: str, job_id: int) -> list[dict[str, Any]]:
    """Every annotation of one job's check run: one request per 100 (a job has a few). A job
    GitHub no longer has answers 404: it has none to give."""
    notes: list[dict[str, Any]] = []
    path = f"/repos/{repo}/check-runs/{job_id}/annotations"
    try:
        for _url, page in client.pages(path, {"per_page": 100}, {}):
            notes += [
                {
                    "level": note.get("annotation_level"),
                    "title": note.get("title") or "",
                    "message": note.get("message") or "",
                }
                for note in page.body or []
            ]
    except NotFound:
        return []
    return notes


def save_annotations(session: Session, fetched: dict[int, list[dict[str, Any]]]) -> None:
    now = datetime.now(UTC)
    rows = [{"job_id": j, "annotations": n, "fetched_at": now} for j, n in fetched.items()]
    upsert(session, JobAnnotations, rows)


def messages(notes: Sequence[dict[str, Any]] | None) -> list[str]:
    """The failure-level messages, which the classifier reads like log lines."""
    return [n["message"] for n in notes or () if n.get("level") == "failure" and n.get("message")]


def hit_time_limit(job: dict[str, Any], notes: Sequence[dict[str, Any]] | None) -> bool:
    """True for a job that reached its time limit: GitHub's own `timed_out`, or `cancelled`
    with the runner's time-limit annotation, or cancelled after running the default limit."""
    conclusion = job.get("conclusion")
    if conclusion == "timed_out":
        return True
    if conclusion != "cancelled":
        return False
    if any(TIME_LIMIT.search(n.get("message") or "") for n in notes or ()):
        return True
    started, completed = parse_time(job.get("started_at")), parse_time(job.get("completed_at"))
    if started is None or completed is None or not ran(job):
        return False
    return (completed - started).total_seconds() >= DEFAULT_LIMIT_MINUTES * 60
