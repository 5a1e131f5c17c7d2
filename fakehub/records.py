"""The records of fakehub's simulated history: a run, its attempts and their jobs.

``fakehub.history`` generates them; the routes (``fakehub.api``, ``fakehub.payloads``), the
logs and the annotations read them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from fakehub.catalog import IncidentSpec, JobSpec, WorkflowSpec
from fakehub.failures import failure_cause


@dataclass(slots=True)
class Job:
    """One job of one attempt. `started_at` is None when no runner ever took it."""

    id: int
    run_id: int
    attempt: int
    spec: JobSpec
    status: str
    conclusion: str | None
    created_at: datetime
    started_at: datetime | None
    completed_at: datetime | None
    runner_label: str
    runner_name: str | None
    runner_id: int | None
    category: str | None
    seed: int
    # `timeout-minutes` in the workflow file of the job's run (its commit's version)
    limit_minutes: int = 360
    incident: IncidentSpec | None = None  # the simulated incident that failed it

    @property
    def ran(self) -> bool:
        return self.started_at is not None and self.runner_name is not None

    @property
    def cause(self) -> str | None:
        """How the failure shows beyond the log (fakehub.failures.failure_cause)."""
        return failure_cause(self.seed, self.spec.kind, self.category)


@dataclass(slots=True)
class Attempt:
    number: int
    created_at: datetime
    updated_at: datetime
    status: str
    conclusion: str | None
    jobs: list[Job] = field(default_factory=list)
    superseded: bool = False  # jobs stopped by concurrency: a newer push to the same ref
    cancel_requested: bool = False  # that push came while the attempt ran: no one re-runs it

    @property
    def red(self) -> bool:
        """A job failed or hit its time limit (GitHub may still call the attempt cancelled)."""
        return self.conclusion == "failure" or any(
            job.conclusion == "cancelled" and job.cause == "job_time_limit" for job in self.jobs
        )


@dataclass(slots=True)
class Run:
    """A workflow run; `attempts[-1]` is what the runs list shows."""

    id: int
    number: int
    workflow: WorkflowSpec
    event: str
    branch: str
    sha: str
    title: str
    pr: int | None
    actor: str
    created_at: datetime
    invalid: bool
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def latest(self) -> Attempt:
        return self.attempts[-1]
