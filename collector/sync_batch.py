"""The job stage of a collect: a batch of runs' jobs, annotations and logs, in one transaction.

``collector.sync`` lists the runs and hands them over in batches; ``BatchStage`` asks for every
attempt's jobs, the annotations of the jobs that need them and the logs of the failed ones,
classifies them and saves the batch, so that a stop between batches loses nothing committed.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from collector import lazy, time_limits
from collector.annotations import (
    explained,
    fetch_annotations,
    hit_time_limit,
    messages,
    needs_annotations,
    save_annotations,
    time_limit_fact,
)
from collector.client import GitHubClient, NotFound, ResourceError, RouteDown
from collector.jobs import attempt_rows, failed_jobs, fetch_jobs, save_jobs
from collector.logs import (
    LogFetcher,
    LogResult,
    job_payload,
    save_failures,
    save_logs_and_failures,
    save_run_failure,
)
from collector.payloads import parse_time
from collector.progress import CollectProgress
from collector.runs import fetch_run, save_runs
from collector.sync_report import CollectOptions, CollectReport
from collector.sync_state import save_state
from store import bookkeeping, retries
from store import derived as derived_rows
from store.compression import decompress
from store.project import Project
from store.retries import Refusal

CHECKS_RETENTION = timedelta(days=400)  # GitHub archives checks data (jobs) after that


class BatchStage:
    """Processes the batches of one collect; ``left_for_next`` holds the runs a passing 404 on
    their jobs left for the next collect (the listing skips them)."""

    def __init__(
        self,
        repo: str,
        engine: Engine,
        client: GitHubClient,
        options: CollectOptions,
        progress: CollectProgress,
        report: CollectReport,
        fetcher: LogFetcher,
        project: Project,
    ) -> None:
        self.repo = repo
        self.project = project
        self.engine = engine
        self.client = client
        self.options = options
        self.progress = progress
        self.report = report
        self.fetcher = fetcher
        self.left_for_next: set[int] = set()
        self._refused_annotations: list[int] = []  # jobs recorded so by this collect
        self._any_refused: bool | None = None  # whether fetch_retries has rows for the repo
        self._server_refused: list[Refusal] = []  # 5xx refusals recorded by this collect

    def _session(self) -> Session:
        return Session(self.engine, expire_on_commit=False)

    def _refusals(self, session: Session) -> bool:
        """Whether any refusal is recorded for the repository (asked once, then kept up to
        date): without one, no batch reads or clears ``fetch_retries``."""
        if self._any_refused is None:
            self._any_refused = retries.exist(session, self.repo)
        return self._any_refused

    def _record(self, session: Session, refused: Sequence[Refusal], now: datetime) -> set[int]:
        if not refused:
            return set()
        self._any_refused = True
        self._server_refused += [r for r in refused if r.status is not None and r.status >= 500]
        return retries.record(session, self.repo, refused, now)

    def forget_server_refusals(self) -> None:
        """After an outage stopped the collect: the 5xx refusals it recorded were the outage's,
        not their resources', so the next collect asks them at once rather than a wait later.
        A log or a run's jobs is found again from what is stored (a job whose log failed, a
        run left for the next collect): forgotten; annotations are asked again only through
        their row: kept, due at once."""
        with self._session() as session, session.begin():
            for refusal in self._server_refused:
                forget = retries.forgive if refusal.kind == "annotations" else retries.clear
                forget(session, refusal.kind, [refusal.item_id])
        self._server_refused = []

    def _waiting(
        self, session: Session, kind: str, item_ids: Sequence[int], now: datetime
    ) -> set[int]:
        if not self._refusals(session):
            return set()
        return retries.waiting(session, kind, item_ids, now)

    def _clear(self, session: Session, kind: str, item_ids: Sequence[int]) -> None:
        if self._refusals(session):
            retries.clear(session, kind, item_ids)

    def process(
        self, workflow: dict[str, Any], runs: list[dict[str, Any]], watermark: datetime | None
    ) -> int:
        """Fetch, classify and save one batch of runs in one transaction; returns how many runs
        it left for the next collect (a 404 on their jobs that GitHub did not confirm, jobs
        GitHub refused). ``watermark``: the workflow's, moved with the batch (None: kept)."""
        jobs_by_run: dict[int, list[dict[str, Any]]] = {}
        deleted: dict[int, datetime] = {}
        refused: list[Refusal] = []
        listed = len(runs)
        now = datetime.now(UTC)
        with self._session() as session:
            waiting = self._waiting(session, "jobs", [r["id"] for r in runs], now)
        for run in list(runs):
            if run["id"] in waiting:  # refused before and not due yet: the next collect asks
                runs.remove(run)
                self.left_for_next.add(run["id"])
                continue
            try:
                jobs_by_run[run["id"]] = fetch_jobs(self.client, self.repo, run["id"])
            except ResourceError as exc:
                refused.append(_refusal("jobs", run["id"], workflow, run["id"], exc))
                jobs_by_run[run["id"]] = []
            except NotFound:
                if self._still_there(run["id"]):  # a passing 404: the next collect retries it
                    runs.remove(run)
                    self.left_for_next.add(run["id"])
                else:  # deleted since it was listed: keep what is known, ask no more
                    deleted[run["id"]] = datetime.now(UTC)
                    jobs_by_run[run["id"]] = []
            self.progress.advance_runs()
        given_up: set[int] = set()
        if refused:  # a try counts even if the batch dies
            with self._session() as session, session.begin():
                given_up = self._record(session, refused, now)
        for run in list(runs):  # refused, not given up: left for the next collect to ask again
            if any(r.item_id == run["id"] for r in refused) and run["id"] not in given_up:
                runs.remove(run)
                jobs_by_run.pop(run["id"])
                self.left_for_next.add(run["id"])
            elif run["id"] in given_up:
                run["checks_archived"] = True  # stored without jobs, not as a run without any
        self.report.refused += len(refused)
        kept = self._keep_archived(runs, jobs_by_run, deleted)
        all_jobs = [job for jobs in jobs_by_run.values() for job in jobs]
        self.progress.add_jobs(len(all_jobs))
        notes, fetched = self._annotations(workflow, all_jobs, now)
        timed_out = {job["id"] for job in all_jobs if hit_time_limit(job, notes.get(job["id"]))}
        limited = self._limits_reached(workflow, runs, all_jobs, notes, timed_out)
        timed_out |= limited.keys()
        attempts = [
            row
            for run in runs
            if run["id"] not in deleted
            for row in attempt_rows(run, jobs_by_run[run["id"]], timed_out)
        ]
        latest = {(r["id"], r.get("run_attempt") or 1) for r in runs}
        timed_out_runs = {
            a["run_id"]
            for a in attempts
            if a["timed_out"] and (a["run_id"], a["attempt"]) in latest
        }
        failed = failed_jobs(all_jobs, timed_out)
        for job in failed:
            job["annotations"] = messages(notes.get(job["id"]))
            job["time_limit"] = time_limit_fact(job, job["id"] in timed_out, limited)
        results = []
        if self.options.logs and failed:
            ids = [j["id"] for j in failed]
            with self._session() as session:
                settled = bookkeeping.settled_log_job_ids(session, ids)
                settled |= self._waiting(session, "log", ids, now)
            todo = [job for job in failed if job["id"] not in settled]
            self.progress.add_logs(len(todo))
            results = self.fetcher.fetch(todo, self.progress.advance_logs)
        with self._session() as session, session.begin():
            self._settle_logs(session, dict.fromkeys(jobs_by_run, workflow["id"]), results, now)
            paths = {workflow["id"]: workflow["path"]}
            save_runs(session, self.repo, paths, runs, timed_out_runs, deleted)
            self.report.jobs += save_jobs(session, attempts, all_jobs, timed_out)
            save_annotations(session, fetched)
            if results:
                save_logs_and_failures(session, results)
            asked = {result.job["id"] for result in results}
            late = [j for j in failed if j["id"] in fetched and j["id"] not in asked]
            if late:
                self._classify_again(session, late)
            for run in runs:
                no_jobs = (
                    run.get("conclusion") == "failure"
                    and not jobs_by_run[run["id"]]
                    and not run.get("checks_archived")
                )
                startup = run.get("conclusion") == "startup_failure"
                if run["id"] not in deleted and (no_jobs or startup):
                    save_run_failure(session, run, self.fetcher.rules)
            self._derive(session, [run["id"] for run in runs])
            self._clear(session, "jobs", [r["id"] for r in runs if r["id"] not in given_up])
            self._clear(session, "annotations", list(fetched))
            if watermark is not None:
                save_state(session, self.repo, workflow["id"], watermark, None)
        self.progress.spent(self.client.counted, self.client.max_requests)
        self.report.runs_deleted += len(deleted)
        self._count_logs(results)
        return listed - len(runs) - kept

    def _keep_archived(
        self,
        runs: list[dict[str, Any]],
        jobs_by_run: dict[int, list[dict[str, Any]]],
        deleted: dict[int, datetime],
    ) -> int:
        """GitHub archives, then deletes, a run's checks data after 400 days: a run that comes
        back without jobs it had, or that is that old, is not a run that failed without jobs.
        Such runs are left as stored (or, never stored, without a failure of their own)."""
        empty = [r["id"] for r in runs if not jobs_by_run[r["id"]] and r["id"] not in deleted]
        if not empty:
            return 0
        with self._session() as session:
            had_jobs = bookkeeping.runs_with_jobs(session, empty)
        cutoff = datetime.now(UTC) - CHECKS_RETENTION
        for run in list(runs):
            if run["id"] in had_jobs:
                runs.remove(run)
                jobs_by_run.pop(run["id"], None)
            elif run["id"] in empty and parse_time(run["created_at"]) < cutoff:
                run["checks_archived"] = True
        return len(had_jobs)

    def _still_there(self, run_id: int) -> bool:
        try:
            fetch_run(self.client, self.repo, run_id, None)
        except NotFound:
            return False
        except ResourceError:  # no answer either way: ask again next time
            return True
        return True

    def _annotations(
        self, workflow: dict[str, Any], jobs: Sequence[dict[str, Any]], now: datetime
    ) -> tuple[dict[int, list[dict[str, Any]]], dict[int, list[dict[str, Any]]]]:
        """(annotations of every job that needs them, those fetched now): stored ones are
        read back, the rest asked for, one request each. One job's refused annotations are
        recorded and asked again later; a refused route (a token without ``checks: read``)
        stops asking for this collect."""
        wanted = [job["id"] for job in jobs if needs_annotations(job)]
        if not wanted:
            return {}, {}
        with self._session() as session:
            known = bookkeeping.stored_annotations(session, wanted)
            waiting = self._waiting(session, "annotations", wanted, now)
        run_of = {job["id"]: job["run_id"] for job in jobs}
        fetched: dict[int, list[dict[str, Any]]] = {}
        refused: list[Refusal] = []
        for job_id in wanted:
            if job_id in known or job_id in waiting or self.report.annotations_refused:
                continue
            try:
                fetched[job_id] = fetch_annotations(self.client, self.repo, job_id)
            except ResourceError as exc:
                refused.append(_refusal("annotations", job_id, workflow, run_of[job_id], exc))
            except RouteDown as exc:  # nothing stored: `collect --full` fills them in later
                if exc.status >= 500:  # GitHub is down, not the token short of a permission:
                    raise  # the collect stops before this batch is saved, and asks it again
                self.report.annotations_refused = str(exc)
                refused = []  # the route's fault, not these jobs': forget their refusals
                with self._session() as session, session.begin():
                    self._clear(session, "annotations", self._refused_annotations)
                self.report.refused -= len(self._refused_annotations)
        if refused:
            with self._session() as session, session.begin():
                self._record(session, refused, now)
            self.report.refused += len(refused)
            self._refused_annotations += [r.item_id for r in refused]
        self.report.annotations_fetched += len(fetched)
        return {**known, **fetched}, fetched

    def _limits_reached(
        self,
        workflow: dict[str, Any],
        runs: Sequence[dict[str, Any]],
        jobs: Sequence[dict[str, Any]],
        notes: dict[int, list[dict[str, Any]]],
        timed_out: set[int],
    ) -> dict[int, str]:
        """The jobs whose annotations do not say why they stopped and whose workflow file, at
        their run's commit, shows they ran their whole time limit (collector.time_limits):
        job id -> how. The file is asked for only for such jobs, once per commit."""
        unexplained = [
            job
            for job in jobs
            if needs_annotations(job)
            and job["id"] not in timed_out
            and not explained(job, notes.get(job["id"]))
        ]
        if not unexplained:
            return {}
        sha_of = {run["id"]: run.get("head_sha") for run in runs}
        found: dict[int, str] = {}
        with self._session() as session, session.begin():
            for job in unexplained:
                sha = sha_of.get(job["run_id"])
                try:
                    limits = sha and time_limits.file_limits(
                        session, self.client, self.repo, workflow["path"], sha
                    )
                except ResourceError:  # asked again when the run is processed again
                    continue
                if limits and (how := time_limits.reached(job, limits)):
                    found[job["id"]] = how
        return found

    def _settle_logs(
        self,
        session: Session,
        workflows: dict[int, int],
        results: Sequence[LogResult],
        now: datetime,
    ) -> None:
        """Record the logs GitHub refused (given up after the limit: ``given_up``) and forget
        the earlier refusals of those it served, in the transaction that saves them.
        ``workflows``: each run's workflow id."""
        refused = [
            Refusal(
                "log",
                r.job["id"],
                workflows[r.job["run_id"]],
                r.job["run_id"],
                r.http_status,
                r.error or "",
                retries.NOT_FOUND_TRIES if r.http_status == 404 else retries.MAX_TRIES,
            )
            for r in results
            if r.status == "error"
        ]
        given_up = self._record(session, refused, now)
        for result in results:
            if result.job["id"] in given_up:  # a second 404: the job left no log after all
                result.status = "missing" if result.http_status == 404 else "given_up"
        answered = [r.job["id"] for r in results if r.status in ("ok", "expired", "missing")]
        self._clear(session, "log", answered)

    def _classify_again(self, session: Session, jobs: Sequence[dict[str, Any]]) -> None:
        """Failed jobs whose annotations came after their log was settled (archived, expired,
        missing; annotations refused on an earlier collect): classified again from the stored
        log and the new annotations, as ``reclassify`` would, so they say what a collect that
        got both at once says. A job with no log row yet is classified when its log comes."""
        logs = bookkeeping.stored_logs(session, [job["id"] for job in jobs])
        results = [
            LogResult(
                job,
                log.status,
                content=decompress(log.content or b"", log.compression)
                if log.status == "ok"
                else None,
                rules=self.fetcher.rules,
            )
            for job in jobs
            if (log := logs.get(job["id"])) is not None and log.status != "error"
        ]
        save_failures(session, results, datetime.now(UTC))

    def retry_failed_logs(self) -> None:
        """Ask again for the logs that failed (this collect or earlier) and whose wait has
        passed."""
        now = datetime.now(UTC)
        with self._session() as session:
            jobs = bookkeeping.jobs_with_log_errors(session, self.repo)
            waiting = self._waiting(session, "log", [j.id for j in jobs], now)
            jobs = [job for job in jobs if job.id not in waiting]
            notes = bookkeeping.stored_annotations(session, [j.id for j in jobs])
            workflows = bookkeeping.workflow_of_runs(session, sorted({j.run_id for j in jobs}))
        if not jobs:
            return
        payloads = [job_payload(j, messages(notes.get(j.id))) for j in jobs]
        self.progress.add_logs(len(payloads))
        results = self.fetcher.fetch(payloads, self.progress.advance_logs)
        with self._session() as session, session.begin():
            self._settle_logs(session, workflows, results, now)
            save_logs_and_failures(session, results)
            self._derive(session, sorted({job.run_id for job in jobs}))
        self._count_logs(results)

    def _derive(self, session: Session, run_ids: list[int]) -> None:
        """``run_ids`` marked pending in the transaction that stored their raw rows, and every
        pending run recomputed there once enough are (the incidents wait for the end)."""
        session.flush()
        conn = session.connection()
        if (
            run_ids
            and derived_rows.mark_pending(conn, self.repo, run_ids) >= derived_rows.FLUSH_RUNS
        ):
            lazy.derived().flush(conn, self.repo, self.project, incidents=False)

    def flush_derived(self) -> None:
        """Recompute the runs still pending and the incidents the batches left waiting: the
        collect's last act."""
        with self._session() as session, session.begin():
            conn = session.connection()
            if derived_rows.pending(conn, self.repo) or derived_rows.incidents_waiting(
                conn, self.repo
            ):
                lazy.derived().flush(conn, self.repo, self.project)

    def _count_logs(self, results: Sequence[Any]) -> None:
        for result in results:
            if result.status == "ok":
                self.report.logs_fetched += 1
            elif result.status == "expired":
                self.report.logs_expired += 1
            elif result.status == "missing":
                self.report.logs_missing += 1
            else:
                self.report.log_errors += 1


def _refusal(
    kind: str, item_id: int, workflow: dict[str, Any], run_id: int, exc: ResourceError
) -> Refusal:
    return Refusal(kind, item_id, workflow["id"], run_id, exc.status, str(exc))
