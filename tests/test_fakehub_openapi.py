"""Every JSON body fakehub emits validates against GitHub's own OpenAPI response schemas."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import requests

import fakehub
from tests.support.hubtools import served_jobs, served_runs

SUBSET = json.loads((Path(fakehub.__file__).parent / "openapi" / "github_subset.json").read_text())
TOKEN = "schema-token"


@pytest.fixture(scope="module")
def samples() -> Iterator[dict[str, list[tuple[int, Any]]]]:
    """operationId -> [(status, body)] gathered from a live hub, several per route."""
    with fakehub.running(seed=8, scale=0.05, token=TOKEN) as hub:
        auth = {"Authorization": f"token {TOKEN}"}
        repo = f"{hub.base_url}/repos/verl-project/verl"
        runs, jobs = served_runs(hub), served_jobs(hub)  # checks data not archived
        rerun = next(r for r in runs if len(r.attempts) > 1 and r.latest.jobs)
        pr_run = next(r for r in runs if r.pr is not None)
        invalid = next(r for r in runs if r.invalid)
        live = runs[-1]
        failed = next(j for j in jobs if j.category)
        skipped = next(j for j in jobs if not j.ran)
        timed_out = next(j for j in jobs if j.cause == "job_time_limit")

        def get(path: str, **params: Any) -> tuple[int, Any]:
            response = requests.get(repo + path, params=params, headers=auth, timeout=10)
            return response.status_code, response.json()

        posted = requests.post(f"{repo}/issues/12/comments", json={"body": "x"}, headers=auth)
        comment = posted.json()["id"]
        patched = requests.patch(
            f"{repo}/issues/comments/{comment}", json={"body": "y"}, headers=auth
        )
        label = requests.post(
            f"{repo}/labels", json={"name": "ciflake", "color": "0e8a16"}, headers=auth
        )
        filed = requests.post(
            f"{repo}/issues", json={"title": "t", "body": "b", "labels": ["ciflake"]}, headers=auth
        )
        issue = filed.json()["number"]
        closed = requests.patch(
            f"{repo}/issues/{issue}",
            json={"state": "closed", "state_reason": "not_planned"},
            headers=auth,
        )
        added = requests.post(f"{repo}/issues/{issue}/labels", json=["oom"], headers=auth)
        rate = requests.get(f"{hub.base_url}/rate_limit", headers=auth, timeout=10)
        user = requests.get(f"{hub.base_url}/user", headers=auth, timeout=10)
        yield {
            "repos/get": [get("")],
            "actions/list-repo-workflows": [get("/actions/workflows", per_page=3)],
            "actions/get-workflow": [get("/actions/workflows/e2e_ascend.yml")],
            "actions/list-workflow-runs": [
                get("/actions/workflows/e2e_fully_async_policy.yml/runs", status="failure")
            ],
            "actions/list-workflow-runs-for-repo": [
                get("/actions/runs", per_page=100),
                get("/actions/runs", event="pull_request"),
            ],
            "actions/get-workflow-run": [
                get(f"/actions/runs/{r.id}") for r in (rerun, pr_run, invalid, live)
            ],
            "actions/get-workflow-run-attempt": [get(f"/actions/runs/{rerun.id}/attempts/1")],
            "actions/list-jobs-for-workflow-run": [
                get(f"/actions/runs/{rerun.id}/jobs", filter="all"),
                get(f"/actions/runs/{live.id}/jobs"),
            ],
            "actions/list-jobs-for-workflow-run-attempt": [
                get(f"/actions/runs/{rerun.id}/attempts/2/jobs")
            ],
            "actions/get-job-for-workflow-run": [
                get(f"/actions/jobs/{j.id}") for j in (failed, skipped)
            ],
            "checks/get": [get(f"/check-runs/{j.id}") for j in (failed, skipped, timed_out)],
            "checks/list-annotations": [
                get(f"/check-runs/{j.id}/annotations") for j in (failed, skipped, timed_out)
            ]
            + [get(f"/check-runs/{timed_out.id}/annotations", per_page=1, page=2)],
            "rate-limit/get": [(rate.status_code, rate.json())],
            "users/get-authenticated": [(user.status_code, user.json())],
            "issues/get": [get("/issues/12"), get(f"/issues/{issue}")],
            "issues/create": [(filed.status_code, filed.json())],
            "issues/update": [(closed.status_code, closed.json())],
            "issues/list-for-repo": [get("/issues", state="all", per_page=100)],
            "issues/list-events": [get(f"/issues/{issue}/events")],
            "issues/create-label": [(label.status_code, label.json())],
            "issues/get-label": [get("/labels/ciflake"), get("/labels/oom")],
            "issues/add-labels": [(added.status_code, added.json())],
            "issues/create-comment": [(posted.status_code, posted.json())],
            "issues/update-comment": [(patched.status_code, patched.json())],
            "issues/get-comment": [get(f"/issues/comments/{comment}")],
            "issues/list-comments": [get("/issues/12/comments")],
        }


@pytest.mark.parametrize("operation", sorted(SUBSET["operations"]))
def test_bodies_match_github_schema(
    samples: dict[str, list[tuple[int, Any]]], operation: str
) -> None:
    spec = SUBSET["operations"][operation]
    schema = {"$defs": SUBSET["$defs"], **spec["schema"]}
    validator = jsonschema.Draft202012Validator(schema)
    for status, body in samples[operation]:
        assert status == spec["status"], body
        errors = sorted(validator.iter_errors(body), key=lambda e: list(e.path))
        assert not errors, "\n".join(f"{list(e.path)}: {e.message[:200]}" for e in errors[:5])


def test_errors_match_basic_error() -> None:
    schema = {"$defs": SUBSET["$defs"], "$ref": "#/$defs/basic-error"}
    with fakehub.running(seed=8, scale=0.01, token=TOKEN) as hub:
        missing = requests.get(
            f"{hub.base_url}/repos/verl-project/verl/actions/runs/1",
            headers={"Authorization": f"token {TOKEN}"},
            timeout=10,
        )
        denied = requests.get(f"{hub.base_url}/repos/verl-project/verl", timeout=10)
    for response in (missing, denied):
        jsonschema.validate(response.json(), schema)
