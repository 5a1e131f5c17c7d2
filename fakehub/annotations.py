"""Check-run annotations of a simulated job: what GitHub keeps about a failure after its log.

Actions writes an annotation for every `##[error]`/`##[warning]` line a step's log shows (the
runner's own messages and a step's `::error::` commands), at most 10 of each level per step,
plus the messages of jobs that never ran a step (no runner online) or were cancelled.
Source: docs/github-behaviour.md (annotations are checks data, kept 400 days; logs 90).
"""

from __future__ import annotations

from dataclasses import dataclass

from fakehub.logs import Rendered, log_notes
from fakehub.records import Job, Run


@dataclass(frozen=True)
class Note:
    """One annotation as `checks/list-annotations` shows it (`path` is `.github` for the
    runner's own messages)."""

    level: str  # failure | warning | notice
    message: str
    title: str = ""
    path: str = ".github"
    start_line: int = 1
    end_line: int = 1


# The runner's and the service's messages, as github-real-behaviour.md quotes them.
NO_RUNNER = (
    "This request was automatically failed because there were no enabled runners online to "
    "process the request for more than 1 days."
)
CONCURRENCY = "Canceling since a higher priority waiting request for '{group}' exists"
CANCELED = "The operation was canceled."


def concurrency_group(run: Run) -> str:
    """verl's `concurrency.group`: the workflow and the ref (`${{ github.workflow }}-${{
    github.ref }}`)."""
    ref = f"refs/pull/{run.pr}/merge" if run.pr is not None else f"refs/heads/{run.branch}"
    return f"{run.workflow.name}-{ref}"


def job_notes(job: Job, run: Run, repo: str, rendered: Rendered | None = None) -> list[Note]:
    """Every annotation of one job's check run, oldest first; ``rendered``: the job's log
    when the caller has it already (``render(job, run, repo)``), else only its notes are
    made (``log_notes``)."""
    if job.cause == "no_runner" and job.status == "completed":
        return [Note("failure", NO_RUNNER)]
    if job.conclusion == "cancelled" and job.category is None:
        cancel = Note("failure", CONCURRENCY.format(group=concurrency_group(run)))
        return [cancel, Note("failure", CANCELED)] if job.ran else [cancel]
    if not job.ran or job.status != "completed":
        return []
    notes = rendered.notes if rendered is not None else log_notes(job, run, repo)
    return [Note(level, message) for level, message in notes]
