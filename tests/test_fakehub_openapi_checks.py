"""The check-run and annotation bodies fakehub builds validate against GitHub's OpenAPI schemas.

The routes (`checks/get`, `checks/list-annotations`) are validated through HTTP elsewhere; this
file checks the payload builders directly, for jobs in every state a check run can show.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import fakehub
from fakehub.annotations import Note
from fakehub.history import DEFAULT_END, History
from fakehub.payloads import Shapes
from fakehub.records import Job

SUBSET = json.loads((Path(fakehub.__file__).parent / "openapi" / "github_subset.json").read_text())
EXIT = Note(level="failure", message="Process completed with exit code 1.")
WARNING = Note(level="warning", message="x", path="tests/test_a.py", start_line=3, end_line=3)


def validator(operation: str) -> jsonschema.Draft202012Validator:
    spec = SUBSET["operations"][operation]
    return jsonschema.Draft202012Validator({"$defs": SUBSET["$defs"], **spec["schema"]})


def problems(operation: str, body: Any) -> list[str]:
    errors = sorted(validator(operation).iter_errors(body), key=lambda e: list(e.path))
    return [f"{list(e.path)}: {e.message[:200]}" for e in errors]


@pytest.fixture(scope="module")
def history() -> History:
    return History(seed=8, scale=0.05, end=DEFAULT_END)


@pytest.fixture(scope="module")
def shapes() -> Shapes:
    return Shapes("http://127.0.0.1:1", "verl-project", "verl", 1, "2024-10-01T00:00:00Z")


def _live(history: History, status: str) -> Job:
    """A job of the last run with `status`, or one made live the way `History._finish` does."""
    jobs = history.runs[-1].latest.jobs
    found = next((j for j in jobs if j.status == status), None)
    if found is not None:
        return found
    job = next(j for j in jobs if j.ran)
    if status == "queued":
        job = dataclasses.replace(job, started_at=None, runner_name=None, runner_id=None)
    live = {"status": status, "conclusion": None, "completed_at": None, "category": None}
    return dataclasses.replace(job, **live)


def _first(predicate: Callable[[Job], bool]) -> Callable[[History], Job]:
    return lambda h: next(j for j in h.job_by_id.values() if predicate(j))


JOBS: dict[str, Callable[[History], Job]] = {
    "failed": _first(lambda j: j.category is not None),
    "success": _first(lambda j: j.conclusion == "success"),
    "skipped": _first(lambda j: not j.ran),
    "cancelled": _first(lambda j: j.conclusion == "cancelled" and j.ran),
    "cancelled-before-start": _first(lambda j: j.conclusion == "cancelled" and not j.ran),
    "rerun-first-attempt": lambda h: (
        next(r for r in h.runs if len(r.attempts) > 1 and r.attempts[0].jobs).attempts[0].jobs[0]
    ),
    "in-progress": lambda h: _live(h, "in_progress"),
    "queued": lambda h: _live(h, "queued"),
}
NOTES: dict[str, list[Note]] = {
    "none": [],
    "exit-code": [EXIT],
    "warning": [WARNING],
    "both": [EXIT, WARNING],
    "titled": [dataclasses.replace(WARNING, title="flaky", level="notice")],
}


@pytest.mark.parametrize("case", sorted(JOBS))
def test_check_run_matches_github_schema(history: History, shapes: Shapes, case: str) -> None:
    job = JOBS[case](history)
    body = shapes.check_run(job, history.run_by_id[job.run_id], annotations_count=2)
    errors = problems("checks/get", body)
    assert not errors, "\n".join(errors[:5])


@pytest.mark.parametrize("case", sorted(JOBS))
def test_check_run_agrees_with_its_job(history: History, shapes: Shapes, case: str) -> None:
    job = JOBS[case](history)
    run = history.run_by_id[job.run_id]
    check, payload = shapes.check_run(job, run, annotations_count=1), shapes.job(job, run)
    same = ("id", "node_id", "head_sha", "status", "conclusion", "started_at", "completed_at")
    assert {k: check[k] for k in same} == {k: payload[k] for k in same}
    assert check["name"] == payload["name"]
    assert check["url"] == payload["check_run_url"]
    assert check["html_url"] == check["details_url"] == payload["html_url"]
    assert check["output"]["annotations_url"] == f"{check['url']}/annotations"
    assert check["output"]["annotations_count"] == 1
    assert check["check_suite"] == {"id": shapes.run(run, run.latest)["check_suite_id"]}
    assert check["app"]["id"] == 15368 and check["app"]["slug"] == "github-actions"
    assert check["external_id"] == shapes.check_run(job, run, 0)["external_id"]


@pytest.mark.parametrize("case", sorted(NOTES))
def test_annotations_match_github_schema(history: History, shapes: Shapes, case: str) -> None:
    run = JOBS["failed"](history)
    body = [shapes.annotation(note, history.run_by_id[run.run_id]) for note in NOTES[case]]
    errors = problems("checks/list-annotations", body)
    assert not errors, "\n".join(errors[:5])


def test_annotation_fields(history: History, shapes: Shapes) -> None:
    run = history.runs[0]
    body = shapes.annotation(WARNING, run)
    assert (
        body["blob_href"] == f"http://127.0.0.1:1/verl-project/verl/blob/{run.sha}/tests/test_a.py"
    )
    assert (body["path"], body["start_line"], body["end_line"]) == ("tests/test_a.py", 3, 3)
    assert (body["start_column"], body["end_column"], body["raw_details"]) == (None, None, "")
    assert (body["annotation_level"], body["title"], body["message"]) == ("warning", "", "x")


REQUIRED = [("checks/get", name) for name in SUBSET["$defs"]["check-run"]["required"]] + [
    ("checks/list-annotations", name) for name in SUBSET["$defs"]["check-annotation"]["required"]
]


@pytest.mark.parametrize(("operation", "field"), REQUIRED, ids=[f"{o}:{f}" for o, f in REQUIRED])
def test_schema_catches_a_missing_field(
    history: History, shapes: Shapes, operation: str, field: str
) -> None:
    """The validation above can fail: dropping any required field is reported."""
    job = JOBS["failed"](history)
    run = history.run_by_id[job.run_id]
    if operation == "checks/get":
        body: Any = shapes.check_run(job, run, annotations_count=1)
        del body[field]
    else:
        note = shapes.annotation(EXIT, run)
        del note[field]
        body = [note]
    assert problems(operation, body)
