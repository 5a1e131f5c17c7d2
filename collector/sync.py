"""``ciflake collect``: an incremental, resumable sync of the tracked workflows.

A workflow's first collect is a backfill: it lists windows of `[collect] window_days`, those
around the configured events first, for every workflow, then the rest newest first
(store.backfill), and records each window once processed. Later collects list runs created
since (watermark - trailing window). Either way, each run listed is compared with what is stored,
and for every new or changed run the jobs of all its attempts and the logs of its failed jobs are
fetched. Runs are processed oldest first in batches; each batch (runs, attempts, jobs, logs,
failures) commits in one transaction, so a killed or budget-stopped collect resumes where it
stopped. ETags are saved once a workflow is complete, so a collect with nothing new costs only
304s.

This module holds the listing loop; a batch's jobs, annotations and logs are
``collector.sync_batch``, the options and the report ``collector.sync_report``. It stays a little
over 350 lines because ``Collector``'s listing, backfill windows and batching are one loop that
shares the watermark and the spans listed so far.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from collector import lazy
from collector.classify.rules import with_own_rules
from collector.client import (
    BudgetSpent,
    CollectError,
    GitHubClient,
    NotFound,
    ResourceError,
    RouteDown,
    ServerError,
)
from collector.logs import LogFetcher
from collector.payloads import parse_time, run_fingerprint
from collector.progress import CollectProgress
from collector.runs import (
    fetch_run,
    fetch_runs,
    fetch_workflow_by_file,
    fetch_workflows,
    save_workflows,
)
from collector.sync_batch import BatchStage
from collector.sync_report import CollectOptions, CollectReport
from collector.sync_state import reopen_backfill, save_state
from collector.triggers import read_triggers
from store import backfill, bookkeeping, retries
from store import derived as derived_rows
from store.models import SyncLog, SyncState
from store.project import Project
from store.settings import Config

BATCH_RUNS = 25
REPO_STATE_ID = 0  # sync_state row of the repository itself: the workflow list's ETags
LISTING_ETAG = "contents"  # and, under this key, the `.github/workflows` listing's ETag
COST_PER_RUN = 4.0  # requests a run costs before any was measured (jobs, annotations, logs)


def default_since(config: Config, project: Project) -> datetime:
    """Far enough back that every before/after window of the configured events is covered."""
    first = min((e.date for e in project.events), default=datetime.now(UTC))
    return first - timedelta(days=config.since_days_before_first_event)


class Collector:
    def __init__(
        self,
        config: Config,
        project: Project,
        engine: Engine,
        client: GitHubClient,
        options: CollectOptions,
        progress: CollectProgress,
    ) -> None:
        self.config = config
        self.project = project
        self.repo = project.repo
        self.engine = engine
        self.client = client
        self.options = options
        self.progress = progress
        self.report = CollectReport()
        self.fetcher = LogFetcher(
            client, project.repo, config.log_workers, with_own_rules(project.rules)
        )
        self.batches = BatchStage(
            project.repo,
            engine,
            client,
            options,
            progress,
            self.report,
            self.fetcher,
            project,
        )
        # what the shared client had sent before this repository's collect (collect_all)
        self._requests_before = (client.stats.requests, client.stats.not_modified)
        self._done: dict[int, list[backfill.Span]] = {}  # spans each backfill has listed
        self._tracked: list[int] = []  # ids of the tracked workflows GitHub knows
        self._repo_floor: datetime | None = None  # where the earliest backfill started

    def _session(self) -> Session:
        return Session(self.engine, expire_on_commit=False)

    # ---- the whole collect ----------------------------------------------------------------

    def run(self) -> CollectReport:
        started = time.monotonic()
        log_id = self._open_sync_log()
        try:
            self._collect()
        except BaseException as exc:
            self._close_sync_log(log_id, started, "error", _reason(exc))
            with contextlib.suppress(Exception):  # what it says matters more; next time then
                if isinstance(exc, (ServerError, RouteDown)):
                    self.batches.forget_server_refusals()
                self.batches.flush_derived()
            raise
        finally:
            self.fetcher.close()
        self.batches.flush_derived()  # the runs the batches left pending
        self.report.retries = dict(retries.counts(retries.listed(self.engine, self.repo)))
        if self.report.stopped:
            self._close_sync_log(log_id, started, bookkeeping.STOPPED, self.report.stopped)
        else:
            self._close_sync_log(log_id, started, "ok", None)
        return self.report

    def _collect(self) -> None:
        # a new database, a new version of ciflake, a new job-name rule or new incident
        # settings: derived tables
        # computed before any batch adds its rows to them
        rule = self.project.analysis.incidents.rule
        strip = self.project.job_name_strip
        current = derived_rows.is_current(
            self.engine, self.repo, derived_rows.VERSION, strip, incident_rule=rule
        )
        if not current:
            lazy.derived().ensure_current(self.engine, self.repo, self.project)
        try:
            with self._session() as session:
                states = bookkeeping.sync_states(session, self.repo)
            workflows = self._resolve_workflows(states.get(REPO_STATE_ID))
            self._tracked = [w["id"] for w in workflows]
            floors = (self._started(states.get(key)) for key in self._tracked)
            self._repo_floor = min((f for f in floors if f is not None), default=None)
            self._extend_backfills(workflows, states)
            with self._session() as session:
                states = bookkeeping.sync_states(session, self.repo)
            now = datetime.now(UTC)
            for workflow in workflows:  # every workflow's event windows before any other
                self._backfill(workflow, states.get(workflow["id"]), now, focus_only=True)
            with self._session() as session:
                states = bookkeeping.sync_states(session, self.repo)
            for workflow in workflows:
                self._collect_workflow(workflow, states.get(workflow["id"]), now)
            if self.options.logs:
                self.batches.retry_failed_logs()
            self._retry_annotations(workflows)
        except BudgetSpent as exc:  # every batch before this one is committed
            self.report.stopped = str(exc)
            self._count_backfill_left()

    def _retry_annotations(self, workflows: list[dict[str, Any]]) -> None:
        """Process again the runs of the jobs whose annotations GitHub refused before, once
        their wait has passed (``store.retries``)."""
        if self.report.annotations_refused:
            return
        with self._session() as session:
            due = retries.due(session, self.repo, "annotations", datetime.now(UTC))
        tracked = {w["id"]: w for w in workflows}
        for run_id, workflow_id in sorted({(row.run_id, row.workflow_id) for row in due}):
            if workflow_id not in tracked:
                continue
            try:
                run, _ = fetch_run(self.client, self.repo, run_id, None)
            except NotFound:  # the run is gone, and its annotations with it
                with self._session() as session, session.begin():
                    retries.clear(
                        session, "annotations", [r.item_id for r in due if r.run_id == run_id]
                    )
                continue
            except ResourceError:  # the run's own route refused it: ask next time
                continue
            if run is not None:
                self.batches.process(tracked[workflow_id], [run], None)

    def _resolve_workflows(self, state: SyncState | None) -> list[dict[str, Any]]:
        """The tracked workflows GitHub knows, and their files' triggers (collector.triggers);
        the ETags of both listings are saved once both are read."""
        etags = {} if (self.options.full or state is None) else dict(state.etags)
        listing_etag = etags.pop(LISTING_ETAG, None)
        listed, new_etags = fetch_workflows(self.client, self.repo, etags)
        with self._session() as session, session.begin():
            if listed is not None:
                save_workflows(session, self.repo, listed)
            stored = {wf.path: wf for wf in bookkeeping.stored_workflows(session, self.repo)}
        tracked = []
        for wf_config in self.project.workflows:
            wf = stored.get(wf_config.path)
            if wf is not None:
                tracked.append({"id": wf.id, "path": wf.path})
                continue
            found = fetch_workflow_by_file(self.client, self.repo, wf_config.path)
            if found is None:
                self.report.missing_workflows.append(wf_config.path)
                continue
            with self._session() as session, session.begin():
                save_workflows(session, self.repo, [found])
            tracked.append({"id": found["id"], "path": found["path"]})
        branch, paths = self.project.default_branch, [w["path"] for w in tracked]
        listing_etag = read_triggers(
            self.engine, self.client, self.repo, branch, paths, listing_etag
        )
        if listing_etag:
            new_etags = {**new_etags, LISTING_ETAG: listing_etag}
        with self._session() as session, session.begin():
            save_state(session, self.repo, REPO_STATE_ID, None, new_etags)
        return tracked

    # ---- one workflow ---------------------------------------------------------------------

    def _collect_workflow(
        self, workflow: dict[str, Any], state: SyncState | None, now: datetime
    ) -> None:
        floor = self._floor(state)
        if self._in_backfill(state):
            complete, watermark = self._backfill(workflow, state, now, focus_only=False)
            if not complete:  # runs left for the next collect: it lists their windows again
                return
            start, etags, backfilled = floor, {}, True
        else:
            backfilled = False
            assert state is not None and state.window_start is not None
            start, etags, watermark = state.window_start, dict(state.etags), state.watermark
            listing_etags = {k: v for k, v in etags.items() if not k.startswith("run:")}
            runs, new_etags = fetch_runs(
                self.client,
                self.repo,
                workflow["id"],
                start,
                now,
                listing_etags,
                capped=self.report.capped_windows,
            )
            changed = self._changed(runs or []) + self._poll_incomplete(
                workflow["id"], start, etags
            )
            watermark, skipped = self._process_runs(workflow, changed, watermark)
            if runs and watermark is None:
                watermark = max(parse_time(r["created_at"]) for r in runs)
            if skipped or runs is None or watermark is None:
                # skipped: list the same window again next time, without an ETag, to retry them
                new_etags = {} if skipped else new_etags
                self._save_listing(workflow["id"], watermark, etags, new_etags, start)
                return
        newest = watermark or now  # a workflow without runs: list the trailing weeks from now
        target = max(floor, _week_start(newest - timedelta(days=self.config.trailing_days)))
        if target != start or backfilled:  # a backfill listed in windows, without ETags
            # Ask once now for the listing the next collects will send, so that they are
            # answered by 304 while nothing changes. Every run in it was just processed.
            _, new_etags = fetch_runs(self.client, self.repo, workflow["id"], target, now, {})
            start = target
        self._save_listing(workflow["id"], watermark, etags, new_etags, start)

    def _save_listing(
        self,
        workflow_id: int,
        watermark: datetime | None,
        etags: dict[str, str],
        listing_etags: dict[str, str],
        start: datetime,
    ) -> None:
        run_etags = {k: v for k, v in etags.items() if k.startswith("run:")}
        with self._session() as session, session.begin():
            save_state(
                session, self.repo, workflow_id, watermark, {**listing_etags, **run_etags}, start
            )

    # ---- a first collect: a backfill ------------------------------------------------------

    def _floor(self, state: SyncState | None) -> datetime:
        """Where the workflow's backfill starts: where it started (``_started``), or earlier at
        --since, so that a later --since never shrinks it; else --since, else default_since."""
        started, since = self._started(state), self.options.since
        if started is None:
            return since or default_since(self.config, self.project)
        return started if since is None else min(started, since)

    def _started(self, state: SyncState | None) -> datetime | None:
        """Where the workflow's backfill started (one not begun yet: where the repository's
        others did), earlier when an event added to the config since then moved default_since
        earlier; None on a first collect and with --full."""
        if self.options.full:
            return None
        stored = None if state is None else backfill.load(state.backfill)[0]
        if state is None or stored is None:
            return self._repo_floor
        default = default_since(self.config, self.project)
        started_under = backfill.default_of(state.backfill)
        return min(stored, default) if started_under and default < started_under else stored

    def _progress(
        self, state: SyncState | None, done: list[backfill.Span]
    ) -> tuple[datetime, list[backfill.Span], datetime]:
        """What ``sync_state.backfill`` keeps: the floor, the spans listed, default_since."""
        return self._floor(state), done, default_since(self.config, self.project)

    def _extend_backfills(
        self, workflows: list[dict[str, Any]], states: dict[int, SyncState]
    ) -> None:
        """--since before where a complete backfill started: reopen it from --since. What it
        listed up to its listing's start stays listed, so it lists only the earlier days and
        the days the incremental listing would have (without their ETags, once). A --since
        that no workflow's backfill starts after adds nothing: the report says so."""
        since = self.options.since
        if since is None or self.options.full:
            return
        covered = []  # the backfills that start at --since or before it
        for workflow in workflows:
            state = states.get(workflow["id"])
            started = self._started(state)
            if started is not None and since >= started:
                covered.append(started)
            if state is None or state.window_start is None:
                continue  # a first collect, or one under way: its floor moves to --since
            progress = backfill.progress_of(state.window_start, state.backfill, state.watermark)
            if progress.floor is None or since >= progress.floor:
                continue
            with self._session() as session, session.begin():
                done = progress.listed(state.window_start)
                reopen_backfill(session, self.repo, workflow["id"], self._progress(state, done))
        if workflows and len(covered) == len(workflows):
            self.report.since_adds_nothing = (
                f"--since {since:%Y-%m-%d} adds nothing: {self.repo} is collected from "
                f"{max(covered):%Y-%m-%d} on"
            )

    def _in_backfill(self, state: SyncState | None) -> bool:
        return self.options.full or state is None or state.window_start is None

    def _backfill_state(self, state: SyncState | None) -> list[backfill.Span]:
        """The spans the workflow's backfill has listed so far (none for ``--full``)."""
        if self.options.full or state is None:
            return []
        return list(backfill.progress_of(None, state.backfill, state.watermark).done)

    def _backfill(
        self, workflow: dict[str, Any], state: SyncState | None, now: datetime, focus_only: bool
    ) -> tuple[bool, datetime | None]:
        """List and process the windows the backfill has not listed yet (only those around
        the events when ``focus_only``), committing after each. Returns (nothing was left for
        the next collect, the watermark)."""
        key = workflow["id"]
        watermark = None if state is None or self.options.full else state.watermark
        if not self._in_backfill(state):
            return True, watermark
        done = self._done.setdefault(key, self._backfill_state(state))
        complete = True
        for window in self._plan(now, done, self._floor(state)):
            if focus_only and not window.focus:
                break
            runs, _ = fetch_runs(
                self.client,
                self.repo,
                key,
                window.start,
                window.end,
                {},
                not window.open,
                self.report.capped_windows,
            )
            watermark, skipped = self._process_runs(workflow, self._changed(runs or []), watermark)
            if skipped:  # not marked listed: the next collect lists this window again
                complete = False
                continue
            done[:] = backfill.merge([*done, (window.start, window.end)])
            with self._session() as session, session.begin():
                progress = self._progress(state, done)
                save_state(session, self.repo, key, watermark, None, progress=progress)
        return complete, watermark

    def _plan(
        self, now: datetime, done: list[backfill.Span], floor: datetime
    ) -> list[backfill.Window]:
        events = (e.date for e in self.project.events)
        focus = backfill.event_spans(events, self.project.analysis.window_days)
        size = timedelta(days=self.config.collect_window_days)
        return backfill.plan(floor, now, done, focus, size)

    def _count_backfill_left(self) -> None:
        """After a stop: how many windows the backfill has left, and how many of them are
        around the configured events (the report says so)."""
        with self._session() as session:
            states = bookkeeping.sync_states(session, self.repo)
        now = datetime.now(UTC)
        for workflow_id in self._tracked:
            state = states.get(workflow_id)
            if not self._in_backfill(state):
                continue
            done = self._done.get(workflow_id) or self._backfill_state(state)
            windows = self._plan(now, done, self._floor(state))
            self.report.backfill_left += len(windows)
            self.report.event_windows_left += sum(w.focus for w in windows)

    def _process_runs(
        self, workflow: dict[str, Any], changed: list[dict[str, Any]], watermark: datetime | None
    ) -> tuple[datetime | None, int]:
        """Process `changed` oldest first in batches that fit the request budget; returns the
        watermark and how many runs were left for the next collect."""
        changed.sort(key=lambda r: (r.get("created_at") or "", r["id"]))
        self.progress.add_runs(len(changed))
        skipped, done = 0, 0
        while done < len(changed):
            batch = changed[done : done + self._batch_size()]
            done += len(batch)  # before batches.process drops runs it leaves for later
            newest = max(parse_time(r["created_at"]) for r in batch)
            watermark = newest if watermark is None else max(watermark, newest)
            skipped += self.batches.process(workflow, batch, watermark)
        return watermark, skipped

    def _batch_size(self) -> int:
        """BATCH_RUNS, or fewer when the request budget would not pay for that many: a batch
        cut short by the budget is lost work, so near the end batches shrink to one run."""
        left = self.client.budget_left()
        if left is None:
            return BATCH_RUNS
        processed = self.report.runs_new + self.report.runs_updated
        per_run = self._counted() / processed if processed > 10 else COST_PER_RUN
        return max(1, min(BATCH_RUNS, int(left / max(per_run, 1.0) / 2)))

    def _counted(self) -> int:
        """Counted requests of this repository's collect (the client may have served others)."""
        before, before_304 = self._requests_before
        return self.client.counted - (before - before_304)

    def _changed(self, runs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        with self._session() as session:
            stored = bookkeeping.run_fingerprints(session, [r["id"] for r in runs])
        changed = []
        for run in runs:
            if run["id"] in self.batches.left_for_next:
                continue
            before = stored.get(run["id"])
            if before is None:
                self.report.runs_new += 1
            elif tuple(before) != run_fingerprint(run) or self.options.full:
                self.report.runs_updated += 1
            else:
                continue
            changed.append(run)
        return changed

    def _poll_incomplete(
        self, workflow_id: int, listed_since: datetime, run_etags: dict[str, str]
    ) -> list[dict[str, Any]]:
        """Runs older than the listing window that had not completed: ask for each by id."""
        with self._session() as session:
            ids = bookkeeping.incomplete_run_ids(session, workflow_id, listed_since)
        changed, gone = [], []
        for run_id in ids:
            key = f"run:{run_id}"
            try:
                run, etag = fetch_run(self.client, self.repo, run_id, run_etags.get(key))
            except NotFound:  # deleted on GitHub: marked, never asked for again
                gone.append(run_id)
                run_etags.pop(key, None)
                continue
            if etag:
                run_etags[key] = etag
            if run is not None and run.get("status") == "completed":
                run_etags.pop(key, None)
            if run is not None:
                self.report.runs_updated += 1
                changed.append(run)
        if gone:
            with self._session() as session, session.begin():
                bookkeeping.mark_runs_deleted(session, gone, datetime.now(UTC))
            self.report.runs_deleted += len(gone)
        return changed

    def _open_sync_log(self) -> int:
        with self._session() as session, session.begin():
            entry = SyncLog(repo=self.repo, started_at=datetime.now(UTC), status="running")
            session.add(entry)
            session.flush()
            return entry.id

    def _close_sync_log(
        self, log_id: int, started: float, status: str, message: str | None
    ) -> None:
        stats = self.client.stats
        self.report.requests = stats.requests - self._requests_before[0]
        self.report.requests_304 = stats.not_modified - self._requests_before[1]
        self.report.rate_limit_remaining = stats.rate_limit_remaining
        self.report.duration_s = time.monotonic() - started
        report = self.report
        with self._session() as session, session.begin():
            entry = session.get(SyncLog, log_id)
            assert entry is not None
            entry.finished_at = datetime.now(UTC)
            entry.status = status
            entry.runs_new, entry.runs_updated = report.runs_new, report.runs_updated
            entry.jobs, entry.logs_fetched = report.jobs, report.logs_fetched
            entry.logs_expired, entry.logs_missing = report.logs_expired, report.logs_missing
            entry.requests, entry.requests_304 = report.requests, report.requests_304
            entry.errors = report.log_errors + (1 if status == "error" else 0)
            entry.rate_limit_remaining = report.rate_limit_remaining
            entry.duration_s = report.duration_s
            entry.message = message


def _week_start(moment: datetime) -> datetime:
    """Monday 00:00 UTC of ``moment``'s week: listing bounds move in whole weeks."""
    day = moment.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return day - timedelta(days=day.weekday())


def _reason(exc: BaseException) -> str:
    if isinstance(exc, CollectError):
        return str(exc)
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    return type(exc).__name__


def collect(
    config: Config,
    project: Project,
    engine: Engine,
    client: GitHubClient,
    options: CollectOptions,
    progress: CollectProgress | None = None,
) -> CollectReport:
    """Run one collect of ``project``'s repository; the database must be migrated. Raises
    ``CollectError`` with a one-line message when it cannot go on (bad token, a wait longer
    than allowed, ...)."""
    progress = progress or CollectProgress(enabled=not options.quiet)
    with progress:
        return Collector(config, project, engine, client, options, progress).run()
