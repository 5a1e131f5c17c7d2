"""Score a collect against fakehub's ground truth: time limits, concurrency cancels, and the
categories given to failures whose log is gone (used by the acceptance tests; prints a report).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

import fakehub
from analytics.evidence import LOG_EXPIRED, NO_LOG, describe, failure_basis
from analytics.outcomes import logical_runs
from collector.classify import classify_job
from store.frame_queries import load_attempts, load_failures, load_runs
from store.models import Job


@dataclass(frozen=True)
class Score:
    limits: int  # simulated jobs that hit their job-level time limit
    limits_found: int  # of those, stored red (timed_out) with category timeout
    superseded: int  # latest attempts cancelled by concurrency with no time limit hit
    superseded_excluded: int  # of those, runs whose logical outcome is excluded
    determinable: int  # failures without a log whose surviving evidence determines the category
    determined: int  # of those, given the right category
    assigned: int  # failures without a log given a category other than unknown
    assigned_right: int  # of those, right
    shares_now: str  # evidence shares of failures without a log, as stored
    shares_before: str  # the same, classified as before annotations were read

    @property
    def recall(self) -> float:
        return self.limits_found / self.limits

    @property
    def coverage(self) -> float:
        return self.determined / self.determinable

    @property
    def precision(self) -> float:
        return self.assigned_right / self.assigned

    def report(self, label: str) -> str:
        return (
            f"{label}: time limits {self.limits_found}/{self.limits} recorded timeout "
            f"({self.recall:.1%}); concurrency cancels {self.superseded_excluded}/"
            f"{self.superseded} excluded; without a log, evidence determines {self.determinable}"
            f", right {self.determined} ({self.coverage:.1%}); categories assigned "
            f"{self.assigned}, right {self.assigned_right} ({self.precision:.1%})\n"
            f"  evidence now:    {self.shares_now}\n  evidence before: {self.shares_before}"
        )


def score(hub: fakehub.Hub, engine: Engine) -> Score:
    history = hub.history()
    truth = pd.DataFrame(hub.admin("GET", "truth")["failures"])
    with Session(engine) as session:
        rows = session.execute(select(Job.id, Job.timed_out, Job.name, Job.steps)).all()
    stored_jobs = {row.id: row for row in rows}
    failures = load_failures(engine).query("job_id != 0").set_index("job_id")
    limits = truth[truth["cause"] == "job_time_limit"]
    found = sum(
        bool(stored_jobs[j].timed_out) and failures.at[j, "category"] == "timeout"
        for j in limits["job_id"]
        if j in stored_jobs and j in failures.index
    )
    runs = logical_runs(load_runs(engine), load_attempts(engine)).set_index("run_id")
    superseded = [r.id for r in history.runs if r.latest.superseded and not r.latest.red]
    excluded = sum(
        runs.at[r, "logical_outcome"] == "excluded" for r in superseded if r in runs.index
    )
    gone = truth[truth["log_status"] != "ok"].set_index("job_id")
    stored = failures.reindex(gone.index)
    given = stored["category"].fillna("unknown")
    decided = gone["determined_by"].notna()
    assigned = given != "unknown"
    before = [
        _old_basis(stored_jobs[job_id], status)
        for job_id, status in gone["log_status"].items()
        if job_id in stored_jobs
    ]
    return Score(
        limits=len(limits),
        limits_found=int(found),
        superseded=len(superseded),
        superseded_excluded=int(excluded),
        determinable=int(decided.sum()),
        determined=int((given[decided] == gone.loc[decided, "category"]).sum()),
        assigned=int(assigned.sum()),
        assigned_right=int((given[assigned] == gone.loc[assigned, "category"]).sum()),
        shares_now=describe(failure_basis(stored.dropna(subset=["category"]))),
        shares_before=describe(pd.Series(before, dtype="object")),
    )


def _old_basis(job, log_status: str) -> str:
    """The basis a failure without its log had before annotations were read: job facts (job
    name, failed steps) alone, else unknown."""
    steps = [s.get("name") or "" for s in job.steps if s.get("conclusion") == "failure"]
    if classify_job(job_name=job.name, failed_steps=steps).category != "unknown":
        return "job"
    return LOG_EXPIRED if log_status == "expired" else NO_LOG
