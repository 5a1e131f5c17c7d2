"""fakehub behaves like github.com where a replica is easy to get wrong: check-run annotations
that outlive the logs, time limits GitHub calls `cancelled`, log URLs that expire, deleted runs,
404s that cost budget (docs/github-behaviour.md)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests

import fakehub
from fakehub.annotations import NO_RUNNER
from fakehub.api import RETENTION
from fakehub.history import History
from fakehub.records import Job
from tests.support.hubtools import served_jobs, served_runs

TOKEN = "checks-token"
REPO = "/repos/verl-project/verl"


@pytest.fixture(scope="module")
def hub() -> Iterator[fakehub.Hub]:
    with fakehub.running(seed=2, scale=0.1, token=TOKEN) as running:
        yield running


def _get(hub: fakehub.Hub, path: str, **params) -> requests.Response:
    return requests.get(
        hub.base_url + REPO + path,
        params=params,
        headers={"Authorization": f"token {TOKEN}"},
        timeout=30,
        allow_redirects=False,
    )


def _jobs(hub: fakehub.Hub, test) -> list[Job]:
    return [job for job in served_jobs(hub) if test(job)]


def _messages(hub: fakehub.Hub, job: Job) -> list[str]:
    response = _get(hub, f"/check-runs/{job.id}/annotations", per_page=100)
    assert response.status_code == 200
    return [note["message"] for note in response.json()]


def _expired(history: History, job: Job) -> bool:
    return job.completed_at is not None and job.completed_at < history.now - RETENTION


def test_a_time_limit_is_written_in_annotations_that_outlive_the_log(hub):
    history = hub.history()
    job = next(j for j in _jobs(hub, lambda j: j.cause == "job_time_limit") if _expired(history, j))
    assert _get(hub, f"/actions/jobs/{job.id}/logs").status_code == 410
    check = _get(hub, f"/check-runs/{job.id}").json()
    assert check["conclusion"] == "cancelled" and check["id"] == job.id
    messages = _messages(hub, job)
    limit = job.spec.timeout_minutes(job.created_at)
    assert any(f"exceeded the maximum execution time of {limit} minutes" in m for m in messages)
    assert check["output"]["annotations_count"] == len(messages)


def test_exit_codes_fit_the_cause(hub):

    killed = _jobs(hub, lambda j: j.category == "oom" and j.ran)
    codes = {m for job in killed[:60] for m in _messages(hub, job) if "exit code" in m}
    assert "Process completed with exit code 137." in codes  # the kernel's OOM kill
    assert "Process completed with exit code 1." in codes  # a Python OutOfMemoryError
    python = _jobs(hub, lambda j: j.category == "test_failure" and j.ran)[:20]
    assert all("Process completed with exit code 137." not in _messages(hub, j) for j in python)


def test_runner_messages_and_no_runner_online(hub):

    never = _jobs(hub, lambda j: j.cause == "no_runner" and j.status == "completed")
    assert never and all(j.conclusion == "failure" and not j.ran for j in never)
    assert _messages(hub, never[0]) == [NO_RUNNER]
    infra = _jobs(hub, lambda j: j.category == "infra" and j.ran)
    said = {m.split(":")[0] for job in infra for m in _messages(hub, job)}
    assert "The self-hosted runner" in said or any("shutdown signal" in m for m in said)


def test_error_lines_of_a_step_become_at_most_ten_annotations(hub):

    checks = [
        job
        for job in _jobs(hub, lambda j: j.category == "missing_dependency" and j.ran)
        if sum("No module named" in m for m in _messages(hub, job)) >= 10
    ]
    assert checks, "the import-check form prints 12 ::error:: lines"
    assert all(sum("No module named" in m for m in _messages(hub, j)) == 10 for j in checks)


def test_concurrency_cancels_say_so(hub):

    run = next(r for r in served_runs(hub) for a in r.attempts if a.superseded and r.pr)
    job = next(j for a in run.attempts if a.superseded for j in a.jobs if j.ran)
    if job.conclusion != "cancelled":
        job = next(j for a in run.attempts for j in a.jobs if j.conclusion == "cancelled")
    messages = _messages(hub, job)
    assert messages[0].startswith("Canceling since a higher priority waiting request for '")
    assert f"refs/pull/{run.pr}/merge" in messages[0]


def test_annotations_paginate_with_a_link_header(hub):

    job = next(j for j in _jobs(hub, lambda j: j.cause == "job_time_limit"))
    first = _get(hub, f"/check-runs/{job.id}/annotations", per_page=1)
    assert len(first.json()) == 1 and 'rel="next"' in first.headers["Link"]
    assert first.headers["Link"].startswith("<" + hub.base_url)


def test_log_urls_expire_and_a_404_costs_budget(hub):
    history = hub.history()
    job = next(j for j in _jobs(hub, lambda j: j.category and j.ran and not _expired(history, j)))
    location = _get(hub, f"/actions/jobs/{job.id}/logs").headers["Location"]
    assert requests.get(location, timeout=30).status_code == 200
    hub.admin("POST", "blob_ttl", {"seconds": 0})
    try:
        refused = requests.get(location, timeout=30)
    finally:
        hub.admin("POST", "blob_ttl", {"seconds": 60})
    assert refused.status_code == 403 and b"AuthenticationFailed" in refused.content
    before = int(_get(hub, "/actions/runs/1").headers["X-RateLimit-Remaining"])
    after = int(_get(hub, "/actions/runs/2").headers["X-RateLimit-Remaining"])
    assert after == before - 1


def test_a_deleted_run_answers_404():
    with fakehub.running(seed=3, scale=0.02, token=TOKEN) as hub:
        run = served_runs(hub)[5]
        job = run.latest.jobs[0] if run.latest.jobs else None
        hub.admin("POST", "delete_run", {"run_id": run.id})
        assert _get(hub, f"/actions/runs/{run.id}").status_code == 404
        assert _get(hub, f"/actions/runs/{run.id}/jobs").status_code == 404
        if job is not None:
            assert _get(hub, f"/check-runs/{job.id}/annotations").status_code == 404
        day = run.created_at.strftime("%Y-%m-%d")
        listed = _get(hub, "/actions/runs", created=day, per_page=100).json()["workflow_runs"]
        assert listed and run.id not in {r["id"] for r in listed}


def test_truth_says_what_survives_without_the_log(hub):
    truth = hub.admin("GET", "truth")["failures"]
    by_cause = {f["cause"]: f for f in truth if f["cause"]}
    assert by_cause["job_time_limit"]["determined_by"] == "annotations"
    assert by_cause["no_runner"]["determined_by"] == "annotations"
    npu = [f for f in truth if f["failed_step_kind"] == "npu_info"]
    assert npu and all(f["determined_by"] == "job" and f["category"] == "npu_env" for f in npu)
    plain = [f for f in truth if f["category"] == "distributed"]
    assert plain and all(f["determined_by"] is None for f in plain)
