"""A simulated CI history (verl's, or another catalog's): runs, attempts and jobs, generated
deterministically from a seed.

Main-branch commits and pull-request pushes arrive as Poisson processes (scaled by `scale`, see
`fakehub.traffic`); each one triggers the workflows whose files are active at that moment, with
the share of commits their path filters let through. Jobs follow the real job lists, `needs` edges
and runner pools of the catalog; failures come from `failures.FailureModel`; failed runs are
sometimes re-run (reruns keep `created_at`). Logs and step lists are not stored: `steps` and `logs`
rebuild them from `Job.seed`. The records it is made of (`Run`, `Attempt`, `Job`) are in
`fakehub.records`.

verl's history draws from `Random(seed)`; another repository's from its catalog's own stream,
`Random("<stream>:<seed>")` (`History.key`), and its ids start at its catalog's bases, so that
it shares neither draws nor ids with verl's.
"""

from __future__ import annotations

import bisect
import hashlib
from datetime import UTC, datetime, timedelta
from random import Random

from fakehub import schedule, traffic
from fakehub.catalog import ACTIVE, DEFAULT_IDS, Catalog, IncidentSpec, JobSpec, WorkflowSpec, load
from fakehub.failures import FailureModel, failure_cause
from fakehub.records import Attempt, Job, Run
from fakehub.steps import OTHER_STEPS_SHARE
from fakehub.traffic import Trigger
from fakehub.workflow_files import step_limit

# The fixed "now" that tests and benchmarks pin, so that their histories never change; the demo
# and `ciflake fakehub` simulate up to today instead (``today``).
DEFAULT_END = datetime(2026, 11, 28, tzinfo=UTC)


def today() -> datetime:
    """The start of the current hour (UTC): the simulation's "now" for the demo and the command
    line, so that a demo started late in the day still has the day's runs. A history is
    deterministic for a given seed, scale (and pr_scale) and end."""
    return datetime.now(UTC).replace(minute=0, second=0, microsecond=0)


RUN_ID_BASE = DEFAULT_IDS["run"]  # verl's; another catalog gives its own (`Catalog.ids`)
JOB_ID_BASE = DEFAULT_IDS["job"]


class History:
    """All runs of one repository plus the indexes the routes need; grows via admin calls."""

    def __init__(
        self,
        seed: int,
        scale: float,
        end: datetime,
        catalog: Catalog | None = None,
        pr_scale: float | None = None,
    ):
        self.seed, self.scale, self.now = seed, scale, end
        self.catalog = catalog or load()
        self.workflows = self.catalog.workflows
        self.failures = FailureModel(self.catalog)
        self.runs: list[Run] = []
        self.run_by_id: dict[int, Run] = {}
        self.job_by_id: dict[int, Job] = {}
        self._run_numbers: dict[int, int] = {}
        self._next_run_id = self.catalog.ids["run"]
        self._next_job_id = self.catalog.ids["job"]
        self._admin_calls = 0
        # verl: the seed itself, as always; another repository: a stream of its own
        stream = self.catalog.stream
        self.key: int | str = seed if stream is None else f"{stream}:{seed}"
        rng = Random(self.key)
        pushes = traffic.triggers(rng, self.catalog, self.key, self.scale, self.now, pr_scale)
        for trigger in pushes:
            for workflow in self.workflows:
                share = workflow.push_share if trigger.event == "push" else workflow.pr_share
                if workflow.runs_on(trigger.event, trigger.at) and rng.random() < share:
                    self._add_run(rng, workflow, trigger, forced=None)
        # scheduled runs and incidents draw from streams of their own: the runs above stay
        # as they were before fakehub simulated either
        heads = [t for t in pushes if t.event == "push"]
        for workflow in self.workflows:
            self._add_scheduled_runs(workflow, heads)
        for run in self.runs:
            for attempt in run.attempts:
                self._apply_incidents(run, attempt)
        self._reindex()

    def _add_scheduled_runs(self, workflow: WorkflowSpec, heads: list[Trigger]) -> None:
        """The runs its cron lines start: on the default branch's latest commit, late by
        GitHub's queueing delay, while its file is there, it is enabled and GitHub fires it."""
        if "schedule" not in workflow.events:
            return
        rng = Random(f"{self.key}:schedule:{workflow.id}")
        until = min(self.now, workflow.schedule_until)
        slots = sorted(
            at
            for entry in workflow.schedule
            for at in schedule.fire_times(entry, self.catalog.start, until)
            if workflow.active(at) and workflow.state(at) == ACTIVE
        )
        times = [head.at for head in heads]
        actor = self.catalog.traffic.get("actors", traffic.ACTORS)[0]  # who last edited the cron
        for slot in slots:
            at = slot + schedule.delay(rng)
            head = heads[bisect.bisect_right(times, at) - 1] if times and times[0] <= at else None
            sha = head.sha if head else f"{workflow.id:040x}"[-40:]
            trigger = Trigger(at, "schedule", "main", sha, workflow.name, None, actor)
            if at < self.now:
                self._add_run(rng, workflow, trigger, forced=None)

    def _apply_incidents(self, run: Run, attempt: Attempt) -> None:
        """Fail every job of the attempt that an incident hits (seeded per job, so no draw of
        the history's stream moves); the jobs that need a failed one are skipped instead."""
        if attempt.superseded or attempt.cancel_requested:
            return
        failed: set[str] = set()
        at = run.created_at
        specs = run.workflow.jobs_at(at)
        for job in attempt.jobs:
            needs = self._needs(job.spec, specs, at)
            if needs in failed:
                job.conclusion, job.category, job.status = "skipped", None, "completed"
                job.started_at, job.runner_name, job.runner_id = None, None, None
                job.completed_at = job.created_at
                continue
            incident = self._incident(run.workflow, job)
            if incident is None:
                continue
            hit = Random(job.seed ^ 0x1C1DE)
            job.incident, job.category, job.conclusion = incident, incident.category, "failure"
            job.completed_at = job.started_at + timedelta(minutes=hit.uniform(0.5, 6))
            if incident.runner_name is not None:
                job.runner_name, job.runner_id = incident.runner_name, _runner_id(incident)
            failed.add(job.spec.id)
        if failed:
            self._finish(attempt, cancelled=False)

    def _incident(self, workflow: WorkflowSpec, job: Job) -> IncidentSpec | None:
        """The incident that fails this job, if any: it ran (and finished) in one's span and
        scope and, for a host incident, the pool sent it to that host."""
        if job.started_at is None or job.status != "completed" or job.runner_name is None:
            return None
        for incident in self.catalog.incidents:
            if incident.scope(workflow, job.spec, job.runner_label, job.started_at) and (
                Random(job.seed ^ 0x4057).random() < incident.share
            ):
                return incident
        return None

    # ---- runs and attempts ----------------------------------------------------------------

    def _add_run(
        self, rng: Random, workflow: WorkflowSpec, trigger: Trigger, forced: str | None
    ) -> Run:
        self._next_run_id += rng.randint(2_000, 90_000)
        number = self._run_numbers.get(workflow.id, 0) + 1
        self._run_numbers[workflow.id] = number
        created = trigger.at + timedelta(seconds=rng.randint(2, 25))
        run = Run(
            id=self._next_run_id,
            number=number,
            workflow=workflow,
            event=trigger.event,
            branch=trigger.branch,
            sha=trigger.sha,
            title=trigger.title,
            pr=trigger.pr,
            actor=trigger.actor,
            created_at=created,
            invalid=workflow.invalid_at(created),
        )
        if run.invalid:
            end = created + timedelta(seconds=rng.randint(1, 4))
            form = workflow.invalid_form(created)
            run.attempts.append(Attempt(1, created, end, "completed", form))
        else:
            cancel = (
                trigger.event == "pull_request"
                and rng.random() < self.catalog.reruns["pr_cancelled"]
            )
            imposed = None if forced == "drawn" else forced
            self._add_attempt(rng, run, created, previous=None, forced=imposed, cancel=cancel)
            if forced is None:
                self._maybe_rerun(rng, run)
        self.runs.append(run)
        self.run_by_id[run.id] = run
        return run

    def _maybe_rerun(self, rng: Random, run: Run) -> None:
        policy = self.catalog.reruns
        while (
            run.latest.red
            and not run.latest.cancel_requested
            and len(run.attempts) < policy["max_attempt"]
            and rng.random() < policy.get(run.event, policy["push"])  # a nightly as a push
        ):
            at = run.latest.updated_at + timedelta(minutes=rng.randint(8, 20 * 60))
            if at >= self.now:
                return
            self._add_attempt(rng, run, at, previous=run.latest, forced=None, cancel=False)

    def _add_attempt(
        self,
        rng: Random,
        run: Run,
        created: datetime,
        previous: Attempt | None,
        forced: str | None,
        cancel: bool,
    ) -> Attempt:
        attempt = Attempt(len(run.attempts) + 1, created, created, "completed", None)
        before = {job.spec.id: job.category for job in previous.jobs} if previous else {}
        specs = run.workflow.jobs_at(run.created_at)
        has_setup = any(spec.kind == "setup" for spec in specs)
        cancel_at = created + timedelta(minutes=rng.uniform(2, 15)) if cancel else None
        done: dict[str, Job] = {}
        for spec in specs:
            ready = created
            if spec.kind != "setup" and has_setup:
                ready = done["setup"].completed_at or created
            needs = self._needs(spec, specs, run.created_at)
            if needs and needs in done:
                ready = max(ready, done[needs].completed_at or ready)
            if spec.kind == "cleanup":
                ready = max((j.completed_at or ready) for j in done.values())
            blocked = spec.kind != "cleanup" and (
                (has_setup and spec.kind != "setup" and done["setup"].conclusion != "success")
                or (needs in done and done[needs].conclusion != "success")
            )
            category = self._category(rng, run, spec, created, before, forced)
            job = self._job(rng, run, attempt.number, spec, ready, category, blocked, cancel_at)
            done[spec.id] = job
            attempt.jobs.append(job)
        self._finish(attempt, cancel)
        run.attempts.append(attempt)
        for job in attempt.jobs:
            self.job_by_id[job.id] = job
        return attempt

    @staticmethod
    def _needs(spec: JobSpec, specs: list[JobSpec], at: datetime) -> str | None:
        """The fsdp2 job a Megatron job waits for (after #7066), if any."""
        if at < spec.needs_from:
            return None
        return next((s.id for s in specs if "fsdp2" in s.tags and s.kind == spec.kind), None)

    def _category(
        self,
        rng: Random,
        run: Run,
        spec: JobSpec,
        at: datetime,
        before: dict[str, str | None],
        forced: str | None,
    ) -> str | None:
        if forced is not None:
            test_job = spec.kind in ("gpu_test", "npu_test")
            return forced if test_job and forced != "success" else None
        if run.workflow.broken_step(spec.id, run.created_at):
            return "ci_config"
        if before.get(spec.id):
            return self.failures.redraw_after_rerun(rng, before[spec.id])  # type: ignore[arg-type]
        return self.failures.draw(rng, spec, at)

    def _job(
        self,
        rng: Random,
        run: Run,
        attempt: int,
        spec: JobSpec,
        ready: datetime,
        category: str | None,
        blocked: bool,
        cancel_at: datetime | None,
    ) -> Job:
        self._next_job_id += rng.randint(3, 4_000)
        label = spec.runner_label(ready)
        seed = rng.getrandbits(32)
        job = Job(
            id=self._next_job_id,
            run_id=run.id,
            attempt=attempt,
            spec=spec,
            status="completed",
            conclusion="skipped",
            created_at=ready,
            started_at=None,
            completed_at=ready,
            runner_label=label,
            runner_name=None,
            runner_id=None,
            category=None,
            seed=seed,
        )
        if blocked:
            return job
        queue = rng.uniform(3, 40) if spec.kind in ("setup", "cleanup") else rng.uniform(15, 240)
        if spec.kind == "npu_test":
            queue += rng.expovariate(1 / 240)
        start = ready + timedelta(seconds=queue)
        if cancel_at is not None and start >= cancel_at:
            job.conclusion = "cancelled"
            return job
        minutes = rng.uniform(*spec.minutes)
        # the limits of the workflow file at the run's commit: a rerun keeps its run's version
        limit = job.limit_minutes = spec.timeout_minutes(run.created_at)
        cause = failure_cause(seed, spec.kind, category)
        if category == "timeout":
            over = rng.uniform(0.05, 0.4)
            # A job limit cancels just past the limit; a step limit fires when the test step
            # has run its own limit (the other steps took a twentieth of the job's); an inner
            # timeout (NCCL watchdog, pytest-timeout) fires earlier and fails the job.
            minutes = limit + over if cause == "job_time_limit" else limit * (0.5 + over)
            step = step_limit(spec, run.created_at)
            if cause == "step_time_limit" and step is not None:
                minutes = limit * OTHER_STEPS_SHARE + step + over
        elif category is not None:
            minutes *= rng.uniform(0.15, 0.9)
        else:
            minutes = min(minutes, limit - 0.3)
        end = start + timedelta(minutes=minutes)
        job.started_at, job.completed_at = start, end
        job.runner_name, job.runner_id = _runner(rng, label)
        job.category = category
        job.conclusion = "success" if category is None else "failure"
        if cause == "job_time_limit":  # GitHub cancels the job (workflow-syntax docs)
            job.conclusion = "cancelled"
        elif cause == "no_runner":  # queued until GitHub gives up on it a day later
            job.started_at, job.runner_name, job.runner_id = None, None, None
            job.completed_at = ready + timedelta(days=1, seconds=queue)
        if cancel_at is not None and (job.completed_at or end) > cancel_at:
            job.completed_at, job.conclusion, job.category = cancel_at, "cancelled", None
        return job

    def _finish(self, attempt: Attempt, cancelled: bool) -> None:
        """Derive the attempt's status/conclusion; jobs still running at `now` become live."""
        for job in attempt.jobs:
            if job.completed_at is not None and job.completed_at > self.now:
                job.conclusion, job.completed_at, job.category = None, None, None
                job.status = (
                    "in_progress" if job.started_at and job.started_at <= self.now else ("queued")
                )
                if job.status == "queued":
                    job.started_at, job.runner_name, job.runner_id = None, None, None
        ends = [job.completed_at for job in attempt.jobs if job.completed_at]
        attempt.updated_at = max([attempt.created_at, *ends])
        jobs = attempt.jobs
        live = [job for job in jobs if job.status != "completed"]
        conclusions = {job.conclusion for job in jobs}
        attempt.cancel_requested = cancelled and "cancelled" in conclusions
        if live:
            started = any(job.started_at for job in attempt.jobs)
            attempt.status, attempt.conclusion = ("in_progress" if started else "queued"), None
        elif cancelled and any(j.conclusion == "cancelled" and j.cause is None for j in jobs):
            attempt.conclusion, attempt.superseded = "cancelled", True
        elif "failure" in conclusions:
            attempt.conclusion = "failure"
        elif "cancelled" in conclusions:  # only time limits cancel jobs here: GitHub says so too
            attempt.conclusion = "cancelled"
        else:
            attempt.conclusion = "success"

    # ---- indexes and admin growth ---------------------------------------------------------

    def _reindex(self) -> None:
        self.runs.sort(key=lambda r: (r.created_at, r.id))
        self.keys = [r.created_at for r in self.runs]
        self.by_workflow: dict[int, list[Run]] = {w.id: [] for w in self.workflows}
        for run in self.runs:
            self.by_workflow[run.workflow.id].append(run)
        self.workflow_keys = {
            wid: [r.created_at for r in runs] for wid, runs in self.by_workflow.items()
        }

    def between(
        self, workflow_id: int | None, lo: datetime | None, hi: datetime | None
    ) -> list[Run]:
        """Runs created in [lo, hi], oldest first, for one workflow or all."""
        runs = self.runs if workflow_id is None else self.by_workflow[workflow_id]
        keys = self.keys if workflow_id is None else self.workflow_keys[workflow_id]
        start = 0 if lo is None else bisect.bisect_left(keys, lo)
        stop = len(runs) if hi is None else bisect.bisect_right(keys, hi)
        return runs[start:stop]

    def _admin_rng(self) -> Random:
        self._admin_calls += 1
        return Random(f"{self.key}:admin:{self._admin_calls}")

    def delete_run(self, run_id: int) -> None:
        """Forget a run, as a maintainer's or retention's deletion does: it answers 404."""
        run = self.run_by_id.pop(run_id)
        self.runs.remove(run)
        for attempt in run.attempts:
            for job in attempt.jobs:
                self.job_by_id.pop(job.id, None)
        self._reindex()

    def tick(self, minutes: float = 5.0) -> datetime:
        """Advance the simulation clock (admin calls happen 'now')."""
        self.now += timedelta(minutes=minutes)
        return self.now

    def rerun(self, run_id: int, conclusion: str | None, category: str | None = None) -> Run:
        """Append a completed attempt to a run; conclusion 'success', 'failure' or None (drawn)."""
        run = self.run_by_id[run_id]
        failed = next((j.category for j in run.latest.jobs if j.category), "test_failure")
        forced = _forced(conclusion, category or failed)
        at = max(self.tick(), run.latest.updated_at + timedelta(minutes=1))
        self.now = at + timedelta(hours=3)  # the attempt completes before anyone looks
        self._add_attempt(self._admin_rng(), run, at, run.latest, forced, cancel=False)
        return run

    def add_runs(
        self,
        workflow: WorkflowSpec,
        count: int,
        event: str = "push",
        conclusion: str | None = None,
        category: str | None = None,
        minutes_apart: float = 2.0,
    ) -> list[Run]:
        """`count` completed runs created at the advancing clock, `minutes_apart`, without
        automatic reruns."""
        rng = self._admin_rng()
        times = [self.tick(minutes_apart) for _ in range(count)]
        self.now += timedelta(hours=3)
        forced = _forced(conclusion, category or "test_failure")
        runs = [
            self._add_run(
                rng,
                workflow,
                traffic.trigger(rng, self.catalog, self.key, event, at),
                forced or "drawn",
            )
            for at in times
        ]
        self._reindex()
        return runs


def _forced(conclusion: str | None, category: str) -> str | None:
    """The category admin calls impose on test jobs: None (draw), 'success' or a category."""
    if conclusion is None:
        return None
    return "success" if conclusion == "success" else category


def _runner_id(incident: IncidentSpec) -> int:
    """The fixed id of the one host a host incident hits (in the style of its pool's ids)."""
    return 100 + int(hashlib.sha1(str(incident.runner_name).encode()).hexdigest(), 16) % 9_900


def _runner(rng: Random, label: str) -> tuple[str, int]:
    """A runner name and id in the style of each pool."""
    if label.startswith("ubuntu"):
        return f"GitHub Actions {rng.randint(1, 999_999)}", rng.randint(1_000_000, 9_999_999)
    tag = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(5))
    if label == "L20x8":
        return f"vemlp-l20x8-{tag}-runner", rng.randint(10_000, 99_999)
    return f"{label}-{tag}-runner-{rng.randint(10, 99)}", rng.randint(100, 9_999)
