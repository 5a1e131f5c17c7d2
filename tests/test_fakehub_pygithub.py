"""Unpatched PyGithub cannot tell fakehub from GitHub: lists, attempts, jobs, logs, comments."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests
from github import Auth, Github, GithubException, UnknownObjectException

import fakehub
from tests.support.hubtools import served_runs

TOKEN = "test-token"


@pytest.fixture(scope="module")
def hub() -> Iterator[fakehub.Hub]:
    with fakehub.running(seed=5, scale=0.1, token=TOKEN) as hub:
        yield hub


@pytest.fixture(scope="module")
def inventory(hub: fakehub.Hub) -> dict[str, Any]:
    return hub.admin("GET", "inventory")


@pytest.fixture
def gh(hub: fakehub.Hub) -> Github:
    return Github(
        auth=Auth.Token(TOKEN),
        base_url=hub.base_url,
        per_page=100,
        seconds_between_requests=None,
        seconds_between_writes=None,
        retry=None,
    )


def test_workflows_and_every_page_of_runs(gh: Github, inventory: dict[str, Any]) -> None:
    repo = gh.get_repo("verl-project/verl")
    names = {w.name for w in repo.get_workflows()}
    assert {"e2e_fully_async_policy", "e2e_v1_separate_async", "e2e_ascend"} <= names
    assert repo.get_workflow("e2e_v1_separate_async.yml").name == "e2e_v1_separate_async"
    runs = repo.get_workflow_runs()
    listed = list(runs)
    assert runs.totalCount == inventory["runs"] == len(listed)
    assert {r.id for r in listed} == set(inventory["run_ids"])
    created = [r.created_at for r in listed]
    assert created == sorted(created, reverse=True)


def test_attempts_and_jobs_of_every_attempt(gh: Github, hub: fakehub.Hub) -> None:
    history = hub.history()
    run_id = next(r.id for r in served_runs(hub) if len(r.attempts) == 3 and r.latest.jobs)
    run = gh.get_repo("verl-project/verl").get_workflow_run(run_id)
    assert run.run_attempt == 3
    jobs = list(run.jobs("all"))
    assert sorted({j.run_attempt for j in jobs}) == [1, 2, 3]
    assert len(jobs) == sum(len(a.jobs) for a in history.run_by_id[run_id].attempts)
    first = run.get_attempt(1)
    assert first.run_attempt == 1 and first.url == run.url
    assert first.jobs_url.endswith("/attempts/1/jobs")
    assert {j.run_attempt for j in first.jobs()} == {1}
    assert first.created_at == run.created_at


def test_job_log_through_the_redirect(gh: Github, hub: fakehub.Hub) -> None:
    truth = hub.admin("GET", "truth")
    failure = next(f for f in truth["failures"] if f["log_status"] == "ok")
    job = gh.get_repo("verl-project/verl").get_workflow_job(failure["job_id"])
    location = job.logs_url()
    assert location.startswith(hub.blob_url)
    assert requests.get(location, headers={"Authorization": f"token {TOKEN}"}).status_code == 400
    response = requests.get(location, timeout=10)
    assert response.status_code == 200
    lines = response.content.decode("utf-8-sig").splitlines()
    assert lines[failure["line_number"] - 1] == failure["line"]
    assert any("##[group]" in line for line in lines)
    assert all(line[:4] == "20" + line[2:4] and line[27] == "Z" for line in lines)


def test_expired_and_missing_logs(gh: Github, hub: fakehub.Hub, inventory: dict[str, Any]) -> None:
    repo = gh.get_repo("verl-project/verl")
    expired = repo.get_workflow_job(inventory["logs"]["expired"]["job_ids"][0])
    with pytest.raises(GithubException) as gone:
        expired.logs_url()
    assert gone.value.status == 410
    missing = repo.get_workflow_job(inventory["logs"]["missing"]["job_ids"][-1])
    response = requests.get(missing.logs_url(), timeout=10)
    assert response.status_code == 404 and b"BlobNotFound" in response.content
    with pytest.raises(UnknownObjectException):
        repo.get_workflow_job(1)


def test_comment_create_and_edit(gh: Github) -> None:
    issue = gh.get_repo("verl-project/verl").get_issue(7357)
    comment = issue.create_comment("<!-- ciflake -->\nfirst")
    comment.edit("<!-- ciflake -->\nsecond")
    bodies = [c.body for c in issue.get_comments()]
    assert bodies[-1] == "<!-- ciflake -->\nsecond"


def test_etag_304_spends_no_budget(hub: fakehub.Hub) -> None:
    url = f"{hub.base_url}/repos/verl-project/verl/actions/workflows"
    auth = {"Authorization": f"token {TOKEN}"}
    first = requests.get(url, headers=auth, timeout=10)
    remaining = int(first.headers["X-RateLimit-Remaining"])
    before = hub.admin("GET", "counters")
    again = requests.get(url, headers={**auth, "If-None-Match": first.headers["ETag"]}, timeout=10)
    assert again.status_code == 304 and again.content == b""
    assert int(again.headers["X-RateLimit-Remaining"]) == remaining
    after = hub.admin("GET", "counters")
    assert after["not_modified"] == before["not_modified"] + 1
    assert after["counted"] == before["counted"]
    for header in (
        "X-RateLimit-Limit",
        "X-RateLimit-Used",
        "X-RateLimit-Reset",
        "X-RateLimit-Resource",
        "ETag",
    ):
        assert header in again.headers


def test_bad_token_is_401(hub: fakehub.Hub) -> None:
    bad = Github(auth=Auth.Token("nope"), base_url=hub.base_url, retry=None)
    with pytest.raises(GithubException) as denied:
        bad.get_repo("verl-project/verl").get_workflows().totalCount  # noqa: B018
    assert denied.value.status == 401 and denied.value.data["message"] == "Bad credentials"
    assert requests.get(f"{hub.base_url}/rate_limit", timeout=10).status_code == 401


def test_created_filters_and_the_1000_cap(hub: fakehub.Hub) -> None:
    url = f"{hub.base_url}/repos/verl-project/verl/actions/runs"
    auth = {"Authorization": f"token {TOKEN}"}
    history = hub.history()
    everything = requests.get(
        url, params={"created": "2025-01-01..*", "per_page": 100}, headers=auth, timeout=10
    )
    total = everything.json()["total_count"]
    assert total == len(history.runs) > 1000
    assert (
        'rel="last"' in everything.headers["Link"]
        and "created=2025-01-01..%2A" in (everything.headers["Link"])
    )
    beyond = requests.get(
        url,
        params={"created": "2025-01-01..*", "per_page": 100, "page": 11},
        headers=auth,
        timeout=10,
    ).json()
    assert beyond["total_count"] == total and beyond["workflow_runs"] == []
    window = requests.get(
        url,
        params={"created": ">=2026-08-12", "branch": "main", "event": "push"},
        headers=auth,
        timeout=10,
    ).json()
    expected = [
        r
        for r in history.runs
        if r.created_at.isoformat() >= "2026-08-12" and r.branch == "main" and r.event == "push"
    ]
    assert window["total_count"] == len(expected)
    day = requests.get(
        url, params={"created": "2026-06-04", "status": "failure"}, headers=auth, timeout=10
    ).json()
    assert all(
        r["created_at"].startswith("2026-06-04") and r["conclusion"] == "failure"
        for r in day["workflow_runs"]
    )


def test_admin_rerun_and_new_runs(gh: Github, hub: fakehub.Hub) -> None:
    repo = gh.get_repo("verl-project/verl")
    run_id = next(r.id for r in hub.history().runs[::-1] if len(r.attempts) == 1 and not r.invalid)
    before = repo.get_workflow_run(run_id)
    after = hub.admin("POST", "rerun", {"run_id": run_id, "conclusion": "success"})
    assert after["run_attempt"] == 2 and after["conclusion"] == "success"
    fresh = repo.get_workflow_run(run_id)
    assert fresh.created_at == before.created_at and fresh.updated_at > before.updated_at
    added = hub.admin("POST", "new_runs", {"workflow": "e2e_v1_separate_async.yml", "count": 2})
    newest = list(repo.get_workflow("e2e_v1_separate_async.yml").get_runs()[:2])
    assert [r.id for r in newest] == added["run_ids"][::-1]


def test_same_seed_same_bytes() -> None:
    def sample(hub: fakehub.Hub) -> list[bytes]:
        auth = {"Authorization": f"token {TOKEN}"}
        api = f"{hub.base_url}/repos/verl-project/verl/actions"
        run = hub.history().runs[-40]
        bodies = [
            requests.get(f"{api}/runs", params={"per_page": 50}, headers=auth, timeout=10).content,
            requests.get(f"{api}/runs/{run.id}/jobs?filter=all", headers=auth, timeout=10).content,
        ]
        job = next(j for j in run.latest.jobs if j.ran)
        log = requests.get(f"{api}/jobs/{job.id}/logs", headers=auth, timeout=10)
        bodies.append(log.content)
        return [b.replace(hub.base_url.encode(), b"BASE") for b in bodies]

    with fakehub.running(seed=9, scale=0.02, token=TOKEN) as one:
        first = sample(one)
    with fakehub.running(seed=9, scale=0.02, token=TOKEN) as two:
        second = sample(two)
    assert first == second
    assert len(first[2]) > 1000
