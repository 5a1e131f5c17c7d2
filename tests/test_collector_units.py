"""Collector pieces that need no server: payload mapping, attempts from jobs, Link parsing."""

from datetime import UTC, datetime

from collector.annotations import hit_time_limit, messages, needs_annotations
from collector.client import _next_link
from collector.jobs import attempt_rows
from collector.payloads import attempt_conclusion, failed_steps, job_row, run_fingerprint
from collector.sync_report import CollectReport


def _job(attempt: int, conclusion: str | None, **extra) -> dict:
    return {
        "id": attempt * 10 + len(extra),
        "run_id": 7,
        "run_attempt": attempt,
        "name": "e2e_fsdp2",
        "conclusion": conclusion,
        "status": "completed",
        "started_at": f"2026-06-0{attempt}T10:00:00Z",
        "completed_at": f"2026-06-0{attempt}T10:30:00Z",
        **extra,
    }


def test_attempt_conclusion_from_jobs():
    assert attempt_conclusion([_job(1, "success"), _job(1, "failure")]) == "failure"
    assert attempt_conclusion([_job(1, "success"), _job(1, "timed_out")]) == "failure"
    assert attempt_conclusion([_job(1, "success"), _job(1, "cancelled")]) == "cancelled"
    assert attempt_conclusion([_job(1, "success"), _job(1, "skipped")]) == "success"
    assert attempt_conclusion([_job(1, None)]) is None


def test_attempt_rows_latest_from_run_earlier_from_jobs():
    run = {
        "id": 7,
        "run_attempt": 2,
        "status": "completed",
        "conclusion": "success",
        "run_started_at": "2026-06-02T10:00:00Z",
        "updated_at": "2026-06-02T10:31:00Z",
    }
    rows = attempt_rows(run, [_job(1, "failure"), _job(2, "success")], set())
    assert [(r["attempt"], r["conclusion"], r["job_count"]) for r in rows] == [
        (1, "failure", 1),
        (2, "success", 1),
    ]
    assert rows[0]["updated_at"] == datetime(2026, 6, 1, 10, 30, tzinfo=UTC)


def test_attempt_rows_for_run_with_no_jobs():
    run = {
        "id": 7,
        "run_attempt": 1,
        "status": "completed",
        "conclusion": "failure",
        "run_started_at": None,
        "updated_at": "2026-06-04T00:00:00Z",
    }
    rows = attempt_rows(run, [], set())
    assert rows == [
        {
            "run_id": 7,
            "attempt": 1,
            "status": "completed",
            "conclusion": "failure",
            "run_started_at": None,
            "updated_at": datetime(2026, 6, 4, tzinfo=UTC),
            "job_count": 0,
            "timed_out": False,
        }
    ]


def test_an_attempt_github_calls_cancelled_is_timed_out_when_a_job_hit_its_limit():
    run = {"id": 7, "run_attempt": 2, "status": "completed", "conclusion": "cancelled"}
    jobs = [_job(1, "cancelled"), _job(2, "cancelled", x=1)]
    rows = attempt_rows(run, jobs, timed_out={jobs[0]["id"]})
    assert [(r["conclusion"], r["timed_out"]) for r in rows] == [
        ("cancelled", True),
        ("cancelled", False),
    ]


TIME_LIMIT_NOTE = {
    "level": "failure",
    "title": "",
    "message": "The job running on runner vemlp-1 has exceeded the maximum execution time of "
    "20 minutes.",
}
CONCURRENCY_NOTE = {
    "level": "failure",
    "title": "",
    "message": "Canceling since a higher priority waiting request for 'e2e-refs/heads/main' exists",
}


def test_time_limit_told_by_annotation_not_by_cancelled_alone():
    cancelled = _job(1, "cancelled", runner_name="r")
    assert hit_time_limit(cancelled, [TIME_LIMIT_NOTE])
    assert not hit_time_limit(cancelled, [CONCURRENCY_NOTE])
    assert not hit_time_limit(cancelled, [])
    assert hit_time_limit(_job(1, "timed_out"), [])
    assert not hit_time_limit(_job(1, "failure"), [TIME_LIMIT_NOTE])


def test_time_limit_told_by_duration_at_the_default_limit():
    long = _job(1, "cancelled", runner_name="r") | {
        "started_at": "2026-06-01T00:00:00Z",
        "completed_at": "2026-06-01T06:00:30Z",
    }
    short = long | {"completed_at": "2026-06-01T05:59:00Z"}
    assert hit_time_limit(long, [])
    assert not hit_time_limit(short, [])


def test_which_jobs_need_annotations():
    assert needs_annotations(_job(1, "failure"))
    assert needs_annotations(_job(1, "timed_out"))
    assert needs_annotations(_job(1, "cancelled", runner_name="r"))
    assert not needs_annotations(_job(1, "cancelled"))  # cancelled before a runner took it
    assert not needs_annotations(_job(1, "success", runner_name="r"))
    assert not needs_annotations(_job(1, "skipped"))
    assert messages([TIME_LIMIT_NOTE, {"level": "warning", "message": "w"}]) == [
        TIME_LIMIT_NOTE["message"]
    ]


def test_job_row_keeps_steps_runner_and_labels_and_tolerates_nulls():
    job = _job(
        1,
        "failure",
        runner_name="L20x8-3",
        labels=["L20x8"],
        steps=[
            {
                "number": 1,
                "name": "Check npu and CANN info",
                "status": "completed",
                "conclusion": "failure",
                "started_at": None,
                "completed_at": None,
            }
        ],
    )
    row = job_row(job)
    assert row["runner_name"] == "L20x8-3" and row["labels"] == ["L20x8"]
    assert row["steps"][0]["name"] == "Check npu and CANN info"
    assert failed_steps(job) == ["Check npu and CANN info"]
    sparse = job_row({"id": 1, "run_id": 2, "steps": None, "labels": None})
    assert sparse["steps"] == [] and sparse["labels"] == [] and sparse["run_attempt"] == 1


def test_run_fingerprint_changes_on_rerun():
    run = {
        "run_attempt": 1,
        "status": "completed",
        "conclusion": "failure",
        "updated_at": "2026-06-01T00:00:00Z",
    }
    rerun = run | {"run_attempt": 2, "updated_at": "2026-06-11T00:00:00Z"}
    assert run_fingerprint(run) != run_fingerprint(rerun)
    assert run_fingerprint(run) == run_fingerprint(dict(run))


def test_next_link():
    link = (
        '<http://h/x?created=%3E%3D2026&per_page=100&page=2>; rel="next", '
        '<http://h/x?created=%3E%3D2026&per_page=100&page=5>; rel="last"'
    )
    assert _next_link(link) == "http://h/x?created=%3E%3D2026&per_page=100&page=2"
    assert _next_link('<http://h/x?page=1>; rel="prev"') is None
    assert _next_link(None) is None


def test_report_line_names_every_count():
    report = CollectReport(
        runs_new=3,
        runs_updated=1,
        jobs=12,
        logs_fetched=2,
        logs_expired=1,
        logs_missing=0,
        requests=9,
        requests_304=4,
        rate_limit_remaining=4990,
        duration_s=1.25,
    )
    line = report.line()
    for part in (
        "3 new",
        "1 updated",
        "jobs 12",
        "2 fetched",
        "1 expired",
        "0 missing",
        "requests 9",
        "4 not modified",
        "left 4990",
        "1.2s",
    ):
        assert part in line
