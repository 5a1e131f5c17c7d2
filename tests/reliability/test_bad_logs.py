"""Bad-input suite, data: hostile job logs (through ``ciflake classify`` and through a collect
from fakehub, which serves them with ``POST /_admin/log``) and API payloads with missing or null
fields fed to the collector's save path. Each is stored or classified gracefully, and nothing
stored before is lost."""

from __future__ import annotations

import base64
import json
import random
from collections.abc import Iterator

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

import fakehub
from ciflake.cli import cli
from collector.jobs import attempt_rows, failed_jobs, save_jobs
from collector.logs import LogResult, save_logs_and_failures
from collector.runs import save_runs
from store.compression import decompress
from store.models import Failure, JobLog, Workflow
from store.upsert import upsert
from tests.reliability.harness import FULL, canary_hub, fast_collect, frozen, record
from tests.support.hubtools import TEST_SCALE, migrated
from tests.test_store import _wf

SUITE = "bad_inputs"
BIG_LINE = 200 * 1024 * 1024
REPO = "verl-project/verl"


def _ansi_heavy() -> bytes:
    line = "\x1b[1;31m\x1b[2K\x1b]8;;http://x\x1b\\Error\x1b]8;;\x1b\\: \x1b[0m\x1b[?25l" * 40
    return ("\n".join([line] * 2000) + "\nRuntimeError: CUDA out of memory\x1b[0m\n").encode()


LOGS: dict[str, bytes] = {
    "empty": b"",
    "binary": random.Random(9).randbytes(1 << 20),
    "invalid UTF-8": b"\xff\xfe\xc3\x28 Traceback \xa0\xa1\nModuleNotFoundError: \xe2\x28\xa1\n",
    "NUL bytes": b"\x00" * 10_000 + b"\nAssertionError\x00\n",
    "ANSI-heavy": _ansi_heavy(),
    "carriage returns only": b"progress 1%\r" * 100_000 + b"Killed\r",
    "markup": b"<script>alert(1)</script> @everyone [x](javascript:alert(1)) =cmd|'/c calc'!A1\n",
}


def _classify(runner, path) -> None:
    result = runner.invoke(cli, ["classify", "--json", str(path)])
    crashed = result.exit_code != 0 or "Traceback" in result.output
    record(SUITE, bad_inputs=1, crashes=int(crashed))
    assert not crashed, result.output
    assert json.loads(result.output)["category"]


@pytest.mark.parametrize("name", LOGS)
def test_classify_hostile_log(name, runner, tmp_path):
    path = tmp_path / "job.log"
    path.write_bytes(LOGS[name])
    _classify(runner, path)


@pytest.mark.slow
def test_classify_a_single_200_mb_line(runner, tmp_path):
    path = tmp_path / "one-line.log"
    with path.open("wb") as out:
        out.write(b"x" * (BIG_LINE - 40) + b" RuntimeError: CUDA out of memory\n")
    _classify(runner, path)


@pytest.fixture(scope="module")
def hub() -> Iterator[fakehub.Hub]:
    with canary_hub(seed=5, scale=TEST_SCALE) as running:
        yield running


@pytest.mark.slow
def test_hostile_logs_through_a_collect(hub, tmp_path):
    clean_url = f"sqlite:///{tmp_path / 'clean.db'}"
    fast_collect(hub, clean_url)
    clean = frozen(migrated(clean_url))
    jobs = [f["job_id"] for f in hub.admin("GET", "truth?log_status=ok")["failures"]]
    logs = dict(LOGS, **({"a single 200 MB line": b"y" * BIG_LINE} if FULL else {}))
    assert len(jobs) >= len(logs), "the hub has too few archived failed-job logs"
    hostile = dict(zip(jobs, logs.values(), strict=False))
    for job_id, content in hostile.items():
        hub.admin(
            "POST", "log", {"job_id": job_id, "content_b64": base64.b64encode(content).decode()}
        )
    url = f"sqlite:///{tmp_path / 'hostile.db'}"
    fast_collect(hub, url)
    engine = migrated(url)
    with Session(engine) as session:
        stored = {
            row.job_id: decompress(row.content, row.compression)
            for row in session.scalars(select(JobLog).where(JobLog.job_id.in_(hostile)))
        }
        classified = set(session.scalars(select(Failure.job_id).where(Failure.job_id.in_(hostile))))
    got = frozen(engine)
    lost = [t for t in ("workflows", "workflow_runs", "run_attempts", "jobs") if got[t] != clean[t]]
    kept = [job_id for job_id, content in hostile.items() if stored.get(job_id) == content]
    record(SUITE, bad_inputs=len(hostile), mismatches=len(lost) + len(hostile) - len(kept))
    assert not lost
    assert kept == list(hostile), "a hostile log was not archived byte for byte"
    assert classified == set(hostile)


RUN = {
    "id": 900001,
    "workflow_id": 1,
    "name": "e2e",
    "display_title": "title",
    "event": "push",
    "head_branch": "main",
    "head_sha": "abc",
    "run_number": 1,
    "run_attempt": 1,
    "status": "completed",
    "conclusion": "failure",
    "created_at": "2026-06-01T00:00:00Z",
    "updated_at": "2026-06-01T01:00:00Z",
    "run_started_at": "2026-06-01T00:00:00Z",
    "html_url": "https://github.com/o/r/actions/runs/900001",
}
JOB = {
    "id": 800001,
    "run_id": 900001,
    "run_attempt": 1,
    "name": "e2e (fsdp2, 8)",
    "status": "completed",
    "conclusion": "failure",
    "created_at": "2026-06-01T00:00:00Z",
    "started_at": "2026-06-01T00:01:00Z",
    "completed_at": "2026-06-01T00:59:00Z",
    "runner_name": "gpu-1",
    "runner_group_name": "gpu",
    "labels": ["self-hosted"],
    "steps": [{"number": 1, "name": "Run tests", "status": "completed", "conclusion": "failure"}],
    "html_url": "https://github.com/o/r/actions/runs/900001/job/800001",
}
NULLABLE_RUN = (
    "head_branch",
    "conclusion",
    "status",
    "name",
    "display_title",
    "run_started_at",
    "updated_at",
    "html_url",
    "head_sha",
    "run_attempt",
    "event",
    "run_number",
)
NULLABLE_JOB = (
    "steps",
    "runner_name",
    "labels",
    "started_at",
    "completed_at",
    "name",
    "conclusion",
    "status",
    "runner_group_name",
    "html_url",
    "run_attempt",
)
PAYLOADS = (
    [("run", field, how) for field in NULLABLE_RUN for how in ("null", "missing")]
    + [("job", field, how) for field in NULLABLE_JOB for how in ("null", "missing")]
    + [("job", "steps", "steps with null fields")]
)


def _mutated(payload: dict, field: str, how: str) -> dict:
    if how == "missing":
        return {k: v for k, v in payload.items() if k != field}
    if how == "steps with null fields":
        return payload | {"steps": [dict.fromkeys(payload["steps"][0])]}
    return payload | {field: None}


@pytest.mark.parametrize(("kind", "field", "how"), PAYLOADS, ids=lambda v: str(v))
def test_payload_with_missing_or_null_field(kind, field, how, engine):
    with Session(engine) as session, session.begin():
        upsert(session, Workflow, [_wf(1)])
    before = frozen(engine)
    run = _mutated(RUN, field, how) if kind == "run" else RUN
    job = _mutated(JOB, field, how) if kind == "job" else JOB
    with Session(engine) as session, session.begin():
        save_runs(session, REPO, {1: ".github/workflows/1.yml"}, [run])
        attempts = attempt_rows(run, [job], set())
        save_jobs(session, attempts, [job], set())
        failed = failed_jobs([job], set())
        save_logs_and_failures(session, [LogResult(j, "missing") for j in failed])
    after = frozen(engine)
    record(SUITE, bad_inputs=1, mismatches=int(after["workflows"] != before["workflows"]))
    assert after["workflows"] == before["workflows"]
    assert [r[0] for r in after["workflow_runs"]] == [RUN["id"]]
    assert [r[0] for r in after["jobs"]] == [JOB["id"]]
