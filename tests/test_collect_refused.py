"""One resource that GitHub keeps refusing is that resource's fault, not the night's (#35): the
collect records it, goes on, asks again on later collects after a wait, and gives up after a
limit. Only a bad token, the budget or a whole route refused stops a collect.

The tests that compare a collect of their own (into SQLite) with a clean one read the shared
SQLite collect of the same history: on PostgreSQL they repeated the very same collect."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

import fakehub
import store.retries
from ciflake.cli import cli
from collector.client import ROUTE_DOWN, RouteDown, ServerError
from store.models import Failure, FetchRetry, Job, JobLog, WorkflowRun
from store.retries import MAX_TRIES
from tests.support.collected import DEFAULT, collected
from tests.support.hubtools import SINCE, collect_without_waits, migrated, snapshot

GENERATE_URL = "Failed to generate URL to download logs"
NOT_ACCESSIBLE = "Resource not accessible by integration"


@pytest.fixture()
def hub() -> Iterator[fakehub.Hub]:
    """fakehub serving the history that ``collected_db()`` collected."""
    with DEFAULT.hub() as running:
        yield running


def _failed_job(hub) -> dict[str, Any]:
    """A failed job whose log GitHub serves."""
    return hub.admin("GET", "truth?log_status=ok")["failures"][0]


def _retries(url: str) -> dict[tuple[str, int], FetchRetry]:
    with Session(migrated(url)) as session:
        return {(r.kind, r.item_id): r for r in session.scalars(select(FetchRetry))}


def _log_status(url: str, job_id: int) -> str | None:
    with Session(migrated(url)) as session:
        return session.scalar(select(JobLog.status).where(JobLog.job_id == job_id))


def _a_night_later(url: str) -> None:
    """Every recorded refusal tried a day (or a few) earlier: the wait before the next try has
    passed, as it has by the next night."""
    with Session(migrated(url)) as session, session.begin():
        for row in session.scalars(select(FetchRetry)):
            row.last_tried_at -= timedelta(days=4)


def _without(tables: dict[str, list[tuple]], job_id: int) -> dict[str, list[tuple]]:
    """A snapshot without the rows that say what the job's log was."""
    out = dict(tables)
    out["job_logs"] = [row for row in tables["job_logs"] if row[0] != job_id]
    out["failures"] = [row for row in tables["failures"] if row[2] != job_id]
    return out


@pytest.mark.parametrize(
    ("status", "message", "asked"), [(500, GENERATE_URL, 6), (403, NOT_ACCESSIBLE, 1)]
)
def test_a_log_refused_every_time_stops_no_collect(
    hub, runner, monkeypatch, tmp_path, status, message, asked
):
    """`ciflake collect` twice with one log route answering 500 (or 403) every time: both exit
    0 and store what a clean collect stores; the job's failure is stored, its log pending.
    urllib3 asks the 500 again five times, its backoff compressed (the reliability harness's
    client)."""
    import collector.once
    from tests.reliability.harness import fast_client

    monkeypatch.setattr(collector.once, "make_client", fast_client)
    clean = snapshot(migrated(collected(DEFAULT, tmp_path).url))
    job = _failed_job(hub)
    path = f"/repos/{hub.repos[0]}/actions/jobs/{job['job_id']}/logs"
    hub.admin("POST", "stuck", {"path": path, "status": status, "message": message})
    url = f"sqlite:///{tmp_path / 'refused.db'}"
    monkeypatch.setenv("GITHUB_TOKEN", hub.token)
    command = ["--db", url, "collect", "--once", "-q", "--api-url", hub.base_url]
    for _ in range(2):
        result = runner.invoke(cli, [*command, "--since", SINCE.date().isoformat()])
        assert result.exit_code == 0, result.output
        assert "refused by GitHub: 1 log pending" in result.output
    stored = snapshot(migrated(url))
    assert _without(stored, job["job_id"]) == _without(clean, job["job_id"])
    assert _log_status(url, job["job_id"]) == "error"
    assert any(row[2] == job["job_id"] for row in stored["failures"])  # the failure is there
    retry = _retries(url)[("log", job["job_id"])]
    assert (retry.status, retry.tries, retry.given_up) == (status, 1, False)  # the 2nd waited
    assert message in retry.error
    assert hub.admin("GET", "stuck")[path]["hits"] == asked  # one try (urllib3 retries a 500)


def test_a_log_refused_403_is_asked_again_each_night_then_given_up(hub, tmp_path):
    """A 403 on one log ("Resource not accessible by integration"): recorded, asked again once
    its wait has passed, given up after MAX_TRIES; then never asked again, and the log is
    served again it is not asked for."""
    clean = snapshot(migrated(collected(DEFAULT, tmp_path).url))
    job = _failed_job(hub)
    path = f"/repos/{hub.repos[0]}/actions/jobs/{job['job_id']}/logs"
    hub.admin("POST", "stuck", {"path": path, "status": 403, "message": NOT_ACCESSIBLE})
    url = f"sqlite:///{tmp_path / 'refused.db'}"
    reports = [collect_without_waits(hub, url)]
    assert not reports[0].stopped
    assert _without(snapshot(migrated(url)), job["job_id"]) == _without(clean, job["job_id"])
    reports.append(collect_without_waits(hub, url))  # within the wait: not asked
    assert hub.admin("GET", "stuck")[path]["hits"] == 1
    for tries in range(2, MAX_TRIES + 1):
        _a_night_later(url)
        reports.append(collect_without_waits(hub, url))
        retry = _retries(url)[("log", job["job_id"])]
        assert retry.tries == tries and retry.given_up == (tries == MAX_TRIES)
    assert not any(r.stopped for r in reports)
    assert _log_status(url, job["job_id"]) == "given_up"
    _a_night_later(url)
    collect_without_waits(hub, url)
    assert hub.admin("GET", "stuck")[path]["hits"] == MAX_TRIES


def test_a_log_served_again_clears_its_refusal(hub, tmp_path):
    job = _failed_job(hub)
    path = f"/repos/{hub.repos[0]}/actions/jobs/{job['job_id']}/logs"
    hub.admin("POST", "stuck", {"path": path, "status": 422, "message": "Unprocessable Entity"})
    url = f"sqlite:///{tmp_path / 'refused.db'}"
    collect_without_waits(hub, url)
    assert _retries(url)[("log", job["job_id"])].status == 422
    hub.admin("POST", "stuck", {"path": path, "status": None})
    _a_night_later(url)
    collect_without_waits(hub, url)
    assert _log_status(url, job["job_id"]) == "ok"
    assert ("log", job["job_id"]) not in _retries(url)
    with Session(migrated(url)) as session:
        failure = session.scalar(select(Failure).where(Failure.job_id == job["job_id"]))
    assert failure is not None and failure.category == job["category"]


def test_a_run_whose_jobs_page_answers_502_at_every_size_stops_nothing_else(hub, tmp_path):
    """GitHub's answer to a page too slow to serve, at every page size, for one run: every
    other run is stored; the run is asked again on later collects, then stored without jobs
    (not as a run whose workflow file was invalid)."""
    clean = snapshot(migrated(collected(DEFAULT, tmp_path).url))
    run_id = next(row[0] for row in clean["workflow_runs"])
    path = f"/repos/{hub.repos[0]}/actions/runs/{run_id}/jobs"
    hub.admin("POST", "stuck", {"path": path, "status": 502, "message": "Bad Gateway"})
    url = f"sqlite:///{tmp_path / 'refused.db'}"
    report = collect_without_waits(hub, url)
    assert not report.stopped and report.refused == 1
    stored = snapshot(migrated(url))
    assert {r[0] for r in stored["workflow_runs"]} == {r[0] for r in clean["workflow_runs"]} - {
        run_id
    }
    assert _retries(url)[("jobs", run_id)].status == 502
    for _ in range(2, MAX_TRIES + 1):
        _a_night_later(url)
        assert not collect_without_waits(hub, url).stopped
    assert _retries(url)[("jobs", run_id)].given_up
    with Session(migrated(url)) as session:
        assert session.get(WorkflowRun, run_id) is not None
        assert session.scalar(select(Failure).where(Failure.run_id == run_id)) is None


def _stopped_by_an_outage_after_the_first_refusal(hub, url: str, monkeypatch) -> None:
    """Collect into ``url`` until a refusal is recorded, then answer every request 502: the
    collect stops on the outage (``monkeypatch.undo()`` and fakehub's faults reset end it)."""
    real = store.retries.record

    def then_an_outage(*args: Any) -> set[int]:
        given_up = real(*args)
        hub.admin("POST", "faults", {"spec": "502=1.0"})
        return given_up

    monkeypatch.setattr(store.retries, "record", then_an_outage)
    with pytest.raises((ServerError, RouteDown), match="502"):
        collect_without_waits(hub, url)


def test_a_refusal_just_before_an_outage_stops_the_collect_is_asked_again_at_once(
    hub, tmp_path, monkeypatch
):
    """A run's jobs answer 502, the refusal is recorded, then every answer is a 502 and the
    collect stops: the outage, not the run, refused them, so nothing waits a night for it and
    the next collect, GitHub answering again, stores the run and every job."""
    run_id = hub.admin("GET", "truth")["failures"][0]["run_id"]
    jobs = f"/repos/{hub.repos[0]}/actions/runs/{run_id}/jobs"
    hub.admin("POST", "stuck", {"path": jobs, "status": 502, "message": "Bad Gateway"})
    url = f"sqlite:///{tmp_path / 'outage.db'}"
    _stopped_by_an_outage_after_the_first_refusal(hub, url, monkeypatch)
    assert hub.admin("GET", "stuck")[jobs]["hits"] > 0
    # the outage's refusals: none waits (annotations keep their row, due at once)
    kept = _retries(url)
    assert all(kind == "annotations" and row.tries == 0 for (kind, _), row in kept.items())
    monkeypatch.undo()
    hub.admin("POST", "faults", {"spec": ""})
    hub.admin("POST", "stuck", {"path": jobs, "status": None})
    assert not collect_without_waits(hub, url).stopped
    assert not _retries(url)
    with Session(migrated(url)) as session:
        assert session.get(WorkflowRun, run_id) is not None
        stored_jobs = session.scalar(select(func.count()).select_from(Job))
    assert stored_jobs == hub.admin("GET", "inventory")["jobs"]


def test_a_whole_route_refused_stops_the_collect(hub, tmp_path):
    """Many different logs refused in a row is GitHub's log route down: the collect stops
    (a later one goes on), instead of spending its budget on a route that answers nothing."""
    path = f"/repos/{hub.repos[0]}/actions/jobs/{{id}}/logs"
    hub.admin("POST", "stuck", {"path": path, "status": 403, "message": NOT_ACCESSIBLE})
    url = f"sqlite:///{tmp_path / 'refused.db'}"
    with pytest.raises(RouteDown, match="refused 5 different"):
        collect_without_waits(hub, url)
    assert hub.admin("GET", "stuck")[path]["hits"] == ROUTE_DOWN


def test_an_outage_of_the_annotations_route_stops_the_collect_and_loses_nothing(hub, tmp_path):
    """Annotations answering 502 for job after job is GitHub down, not a token without
    ``checks: read`` (a 403): the collect stops before the batch is saved, instead of storing
    its failures without their annotations for good; the next collect equals a clean one."""
    clean = snapshot(migrated(collected(DEFAULT, tmp_path).url))
    path = f"/repos/{hub.repos[0]}/check-runs/{{id}}/annotations"
    hub.admin("POST", "stuck", {"path": path, "status": 502, "message": "Bad Gateway"})
    url = f"sqlite:///{tmp_path / 'outage.db'}"
    with pytest.raises(RouteDown, match="502"):
        collect_without_waits(hub, url)
    hub.admin("POST", "stuck", {"path": path, "status": None})
    assert not collect_without_waits(hub, url).stopped
    assert snapshot(migrated(url)) == clean


def test_annotations_refused_just_before_an_outage_are_asked_again_at_once(
    hub, tmp_path, monkeypatch
):
    """One job's annotations refused (500) and recorded, then an outage stops the collect: the
    refusal was the outage's, and its row is all that says to ask them again, so it stays, due
    at once: the next collect, GitHub answering, equals a clean one."""
    clean = snapshot(migrated(collected(DEFAULT, tmp_path).url))
    job = next(f for f in hub.admin("GET", "truth")["failures"] if f["annotations"])
    path = f"/repos/{hub.repos[0]}/check-runs/{job['job_id']}/annotations"
    hub.admin("POST", "stuck", {"path": path, "status": 500, "message": "Server Error"})
    url = f"sqlite:///{tmp_path / 'outage.db'}"
    _stopped_by_an_outage_after_the_first_refusal(hub, url, monkeypatch)
    kept = _retries(url)[("annotations", job["job_id"])]
    assert kept.tries == 0 and not kept.given_up
    monkeypatch.undo()
    hub.admin("POST", "faults", {"spec": ""})
    hub.admin("POST", "stuck", {"path": path, "status": None})
    assert not collect_without_waits(hub, url).stopped
    assert not _retries(url)
    assert snapshot(migrated(url)) == clean


def test_annotations_refused_for_one_job_are_asked_again_with_its_run(hub, tmp_path):
    """One job's annotations answering 500: the job and its failure are stored; once GitHub
    answers, a later collect processes the run again and the database equals a clean one."""
    clean = snapshot(migrated(collected(DEFAULT, tmp_path).url))
    job = next(f for f in hub.admin("GET", "truth")["failures"] if f["annotations"])
    path = f"/repos/{hub.repos[0]}/check-runs/{job['job_id']}/annotations"
    hub.admin("POST", "stuck", {"path": path, "status": 500, "message": "Server Error"})
    url = f"sqlite:///{tmp_path / 'refused.db'}"
    report = collect_without_waits(hub, url)
    assert not report.stopped and report.refused == 1 and not report.annotations_refused
    assert _retries(url)[("annotations", job["job_id"])].status == 500
    stored = snapshot(migrated(url))
    assert {r[0] for r in stored["jobs"]} == {r[0] for r in clean["jobs"]}
    hub.admin("POST", "stuck", {"path": path, "status": None})
    _a_night_later(url)
    assert not collect_without_waits(hub, url).stopped
    assert not _retries(url)
    assert snapshot(migrated(url)) == clean


def test_db_stats_doctor_and_the_report_name_what_github_refused(hub, tmp_path, runner):
    job = _failed_job(hub)
    path = f"/repos/{hub.repos[0]}/actions/jobs/{job['job_id']}/logs"
    hub.admin("POST", "stuck", {"path": path, "status": 403, "message": NOT_ACCESSIBLE})
    url = f"sqlite:///{tmp_path / 'refused.db'}"
    report = collect_without_waits(hub, url)
    assert "refused by GitHub: 1 log pending (asked again on a later collect)" in report.line()
    named = f"log of job {job['job_id']} (run {job['run_id']}): GET {path}: 403 {NOT_ACCESSIBLE}"
    stats = runner.invoke(cli, ["--db", url, "db", "stats"])
    assert stats.exit_code == 0 and named in stats.output and "1 try," in stats.output
    env = {"GITHUB_TOKEN": hub.token}
    doctor = runner.invoke(cli, ["--db", url, "doctor", "--api-url", hub.base_url], env=env)
    assert f"refused by GitHub: {named}" in doctor.output, doctor.output


def _run_ids(url: str) -> set[int]:
    with Session(migrated(url)) as session:
        return set(session.scalars(select(WorkflowRun.id)))


def test_a_listing_capped_below_what_the_collector_assumes_loses_no_run(hub, tmp_path):
    """fakehub serving at most 5 results of a filtered listing, not GitHub's 1,000: windows
    whose listing ends short of its total_count are split until each is complete."""
    clean = collected(DEFAULT, tmp_path)
    hub.admin("POST", "result_cap", {"cap": 5})
    url = f"sqlite:///{tmp_path / 'capped.db'}"
    report = collect_without_waits(hub, url)
    assert not report.stopped and not report.capped_windows
    assert _run_ids(url) == _run_ids(clean.url)
    assert snapshot(migrated(url)) == snapshot(migrated(clean.url))


def test_a_one_minute_window_still_capped_keeps_what_it_listed_and_says_so(
    hub, collected_db, tmp_path
):
    url = collected_db().url
    workflow = hub.admin("GET", "truth")["workflows"][0]["path"]
    three = {"workflow": workflow, "count": 3, "minutes_apart": 0.1}  # in one minute
    new = set(hub.admin("POST", "new_runs", three)["run_ids"])
    hub.admin("POST", "result_cap", {"cap": 1})
    report = collect_without_waits(hub, url)
    assert not report.stopped and report.capped_windows
    assert "one-minute windows still capped by GitHub" in report.line()
    shown = [re.search(r": 1 of ([0-9]+) runs$", window) for window in report.capped_windows]
    assert all(shown)
    lost = sum(int(match.group(1)) - 1 for match in shown if match)
    assert lost >= 1 and len(new & _run_ids(url)) == 3 - lost  # kept what was listed


def test_a_log_route_404_for_a_job_that_ran_is_asked_once_more(hub, tmp_path):
    """Whether GitHub answers 404 for a log briefly after its job completes is undocumented:
    the log is asked once more, by a later collect, before it counts as missing."""
    job = _failed_job(hub)
    path = f"/repos/{hub.repos[0]}/actions/jobs/{job['job_id']}/logs"
    hub.admin("POST", "stuck", {"path": path, "status": 404, "message": "Not Found"})
    url = f"sqlite:///{tmp_path / 'refused.db'}"
    first = collect_without_waits(hub, url)
    assert first.logs_missing == 0 and _log_status(url, job["job_id"]) == "error"
    _a_night_later(url)
    second = collect_without_waits(hub, url)
    assert second.logs_missing == 1 and _log_status(url, job["job_id"]) == "missing"
    assert not _retries(url) and hub.admin("GET", "stuck")[path]["hits"] == 2
