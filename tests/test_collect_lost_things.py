"""Collects that meet what github.com does to a client, and complete with nothing lost: a run
deleted mid-history, a log URL that expired before its download, invalid-workflow windows in
both forms GitHub has shown, annotations asked for once."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

import collector.sync_batch
import fakehub
from collector.client import ROUTE_DOWN, GitHubClient, NotFound
from fakehub.blob import BLOB_TTL
from store.models import Failure, Job, JobAnnotations, JobLog, WorkflowRun
from tests.support.collected import SEVEN
from tests.support.hubtools import collect, migrated


@pytest.fixture
def hub() -> Iterator[fakehub.Hub]:
    """fakehub serving the history that ``collected_db(SEVEN)`` collected."""
    with SEVEN.hub() as running:
        yield running


def _stored_runs(db_url: str) -> dict[int, object]:
    with Session(migrated(db_url)) as s:
        return {r.id: r.deleted_at for r in s.scalars(select(WorkflowRun))}


def test_a_run_deleted_between_listing_and_its_jobs_is_marked_and_the_rest_kept(
    hub, db_url, monkeypatch
):
    history = hub.history()
    doomed = history.runs[len(history.runs) // 2].id
    real = collector.sync_batch.fetch_jobs

    def delete_first(client, repo, run_id):
        if run_id == doomed and doomed in history.run_by_id:
            hub.admin("POST", "delete_run", {"run_id": doomed})
        return real(client, repo, run_id)

    monkeypatch.setattr(collector.sync_batch, "fetch_jobs", delete_first)
    report = collect(hub, db_url)
    stored = _stored_runs(db_url)
    assert report.runs_deleted == 1 and stored[doomed] is not None
    alive = {r.id for r in history.runs}
    assert set(stored) == alive | {doomed}
    assert all(stored[r] is None for r in alive)
    with Session(migrated(db_url)) as s:
        assert (
            s.scalar(select(func.count()).select_from(Job)) == hub.admin("GET", "inventory")["jobs"]
        )


def test_an_unfinished_run_deleted_later_is_asked_for_no_more(hub, collected_db):
    history = hub.history()
    db_url = collected_db(SEVEN).url
    old = history.runs[3].id  # far older than the trailing window the listing covers
    engine = migrated(db_url)
    with Session(engine) as s, s.begin():  # as stored by a collect that saw it running
        s.execute(
            WorkflowRun.__table__.update()
            .where(WorkflowRun.id == old)
            .values(status="in_progress", conclusion=None)
        )
    hub.admin("POST", "delete_run", {"run_id": old})
    report = collect(hub, db_url)
    assert report.runs_deleted == 1 and _stored_runs(db_url)[old] is not None
    hub.admin("POST", "counters/reset")
    collect(hub, db_url)
    counters = hub.admin("GET", "counters")
    assert counters["counted"] == 0 and "404" not in counters["by_status"]


def test_a_log_url_that_expired_is_asked_for_again(hub, db_url, monkeypatch):
    real, seen, first_downloads = GitHubClient.download, Counter(), threading.Lock()

    def late_first_time(self, url, *args, **kwargs):
        key = url.split("?")[0]
        seen[key] += 1
        if seen[key] > 1:
            return real(self, url, *args, **kwargs)
        # every URL handed out is past its time, as after a long wait in a download queue;
        # one first download at a time, so that none meets a TTL another one restored
        with first_downloads:
            hub.admin("POST", "blob_ttl", {"seconds": -1})
            try:
                return real(self, url, *args, **kwargs)
            finally:
                hub.admin("POST", "blob_ttl", {"seconds": BLOB_TTL})

    monkeypatch.setattr(GitHubClient, "download", late_first_time)
    report = collect(hub, db_url)
    inventory = hub.admin("GET", "inventory")
    failed = {f["job_id"] for f in hub.admin("GET", "truth")["failures"]}
    served = set(inventory["logs"]["ok"]["job_ids"]) & failed
    with Session(migrated(db_url)) as s:
        ok = set(s.scalars(select(JobLog.job_id).where(JobLog.status == "ok")))
    assert served and ok == served and report.log_errors == 0
    assert all(count >= 2 for count in seen.values())  # refused once, then asked again
    counters = hub.admin("GET", "counters")["by_route"]
    expired = set(inventory["logs"]["expired"]["job_ids"]) & failed
    assert counters["job_logs"] == sum(seen.values()) + len(expired)


def test_invalid_workflow_windows_in_both_forms_are_ci_config(hub, collected_db):
    db_url = collected_db(SEVEN).url
    invalid = set(hub.admin("GET", "truth")["invalid_runs"])
    with Session(migrated(db_url)) as s:
        forms = dict(
            s.execute(
                select(WorkflowRun.id, WorkflowRun.conclusion).where(WorkflowRun.id.in_(invalid))
            ).all()
        )
        run_level = {
            f.run_id: (f.category, f.evidence)
            for f in s.scalars(select(Failure).where(Failure.job_id == 0))
        }
    assert set(forms.values()) == {"failure", "startup_failure"}
    assert {run_level[r] for r in invalid} == {("ci_config", "job")}


def test_annotations_are_asked_for_once_per_job(hub, collected_db):
    first = collected_db(SEVEN)
    db_url = first.url
    with Session(migrated(db_url)) as s:
        noted = s.scalar(select(func.count()).select_from(JobAnnotations))
    assert noted > 0 and first.counters["by_route"]["check_run_annotations"] == noted
    hub.admin("POST", "counters/reset")
    collect(hub, db_url, full=True)  # every run and its jobs again
    routes = hub.admin("GET", "counters")["by_route"]
    assert routes.get("run_jobs", 0) > 0 and routes.get("check_run_annotations", 0) == 0


def test_a_token_without_checks_read_still_completes_the_collect(hub, db_url):
    hub.admin("POST", "permissions", {"checks": False})
    report = collect(hub, db_url)
    assert "checks: read" in report.line() and "Resource not accessible" in report.line()
    with Session(migrated(db_url)) as s:
        assert s.scalar(select(func.count()).select_from(JobAnnotations)) == 0
        failures = s.scalar(select(func.count()).select_from(Failure).where(Failure.job_id != 0))
    # every one, time limits included: the workflow file shows which cancelled job ran its
    # whole `timeout-minutes` (tests/test_time_limits.py)
    assert failures == len(hub.admin("GET", "truth")["failures"])
    # asked until ROUTE_DOWN different jobs were refused in a row (the route's fault, not one
    # job's: none is recorded for a later try), then no more
    assert hub.admin("GET", "counters")["by_status"]["403"] == ROUTE_DOWN
    assert report.refused == 0 and not report.retries
    hub.admin("POST", "permissions", {"checks": True})
    collect(hub, db_url, full=True)
    with Session(migrated(db_url)) as s:
        assert s.scalar(select(func.count()).select_from(JobAnnotations)) > 0


def test_a_passing_404_on_a_runs_jobs_leaves_it_for_the_next_collect(hub, db_url, monkeypatch):
    history = hub.history()
    flaky = history.runs[-1].id  # the newest: inside the window every collect lists again
    real, calls = collector.sync_batch.fetch_jobs, Counter()

    def not_found_once(client, repo, run_id):
        calls[run_id] += 1
        if run_id == flaky and calls[run_id] == 1:
            raise NotFound(f"GET /repos/{repo}/actions/runs/{run_id}/jobs: 404 not found")
        return real(client, repo, run_id)

    monkeypatch.setattr(collector.sync_batch, "fetch_jobs", not_found_once)
    first = collect(hub, db_url)
    assert first.runs_deleted == 0 and flaky not in _stored_runs(db_url)
    collect(hub, db_url)
    assert _stored_runs(db_url)[flaky] is None
    with Session(migrated(db_url)) as s:
        jobs = s.scalar(select(func.count()).select_from(Job).where(Job.run_id == flaky))
    assert jobs == sum(len(a.jobs) for a in history.run_by_id[flaky].attempts)
