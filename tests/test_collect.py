"""The collector against fakehub, through PyGithub's real HTTP stack."""

from __future__ import annotations

from collections import Counter

import pandas as pd
import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from analytics.outcomes import logical_runs
from ciflake.cli import cli
from store.frame_queries import load_attempts, load_runs
from store.models import Failure, Job, JobLog, LogicalRun, RunAttempt, WorkflowRun
from store.runfilter import RunFilter
from tests.support.collected import SEVEN
from tests.support.hubtools import collect, migrated


@pytest.fixture
def hub():
    """fakehub serving the history that ``collected_db(SEVEN)`` collected."""
    with SEVEN.hub() as running:
        yield running


def test_full_collect_stores_exactly_what_fakehub_serves(hub, collected_db):
    first = collected_db(SEVEN)
    report, db_url = first.report, first.url
    inventory = hub.admin("GET", "inventory")
    failed = {f["job_id"] for f in hub.admin("GET", "truth")["failures"]}
    engine = migrated(db_url)
    with Session(engine) as s:
        run_ids = set(s.scalars(select(WorkflowRun.id)))
        attempts = s.scalar(select(func.count()).select_from(RunAttempt))
        jobs = s.scalar(select(func.count()).select_from(Job))
        logs = dict(s.execute(select(JobLog.status, func.count()).group_by(JobLog.status)).all())
        log_ids = {
            status: set(s.scalars(select(JobLog.job_id).where(JobLog.status == status)))
            for status in ("ok", "expired", "missing")
        }
    assert run_ids == set(inventory["run_ids"])
    assert attempts == inventory["attempts"]
    assert jobs == inventory["jobs"]
    for status in ("ok", "expired", "missing"):
        served = set(inventory["logs"][status]["job_ids"]) & failed
        assert log_ids[status] == served, status
    # every failed job has its log recorded, whatever became of it
    assert sum(logs.values()) == inventory["failed_jobs"] == len(failed)
    assert report.runs_new == len(run_ids) and report.jobs == jobs
    assert report.logs_fetched == logs.get("ok", 0)


def test_second_collect_adds_nothing_and_spends_no_rate_limit(hub, db_url):
    """Its own first collect: the listings' ETags hold the address of the hub that served them."""
    collect(hub, db_url)
    hub.admin("POST", "counters/reset")
    report = collect(hub, db_url)
    counters = hub.admin("GET", "counters")
    assert counters["counted"] == 0, counters
    assert counters["total"] == counters["not_modified"] > 0
    assert (report.runs_new, report.runs_updated, report.jobs) == (0, 0, 0)
    assert report.requests_304 == report.requests


def test_rerun_of_a_ten_day_old_run_is_picked_up_and_becomes_flaky(hub, collected_db):
    db_url = collected_db(SEVEN).url
    engine = migrated(db_url)
    now = pd.Timestamp(hub.admin("GET", "inventory")["now"])
    with Session(engine) as s:
        run = s.scalars(
            select(WorkflowRun)
            .where(
                WorkflowRun.conclusion == "failure",
                WorkflowRun.run_attempt == 1,
                WorkflowRun.created_at <= now - pd.Timedelta(days=9),
            )
            .order_by(WorkflowRun.created_at.desc())
        ).first()
    assert run is not None
    age = (now - pd.Timestamp(run.created_at)).days
    assert 9 <= age <= 30
    hub.admin("POST", "rerun", {"run_id": run.id, "conclusion": "success"})
    report = collect(hub, db_url)
    assert report.runs_updated == 1 and report.runs_new == 0
    where = RunFilter(paths=(run.workflow_path,))
    runs, attempts = load_runs(engine, where), load_attempts(engine, where)
    mine = attempts[attempts.run_id == run.id].sort_values("attempt")
    assert list(mine.conclusion) == ["failure", "success"]
    outcome = logical_runs(runs, attempts).set_index("run_id")
    assert outcome.loc[run.id, "logical_outcome"] == "flaky"
    with Session(engine) as s:  # the derived row, updated in place by the re-collect
        derived = s.get(LogicalRun, run.id)
    assert derived is not None
    assert (derived.logical_outcome, derived.red_attempts) == ("flaky", 1)


def test_expired_and_missing_logs_are_recorded_and_not_asked_again(hub, collected_db):
    db_url = collected_db(SEVEN).url
    engine = migrated(db_url)
    with Session(engine) as s:
        statuses = Counter(s.scalars(select(JobLog.status)))
    assert statuses["expired"] > 0 and statuses["ok"] > 0
    hub.admin("POST", "counters/reset")
    collect(hub, db_url, full=True)  # lists and re-fetches every run and its jobs
    counters = hub.admin("GET", "counters")
    assert counters["by_route"].get("run_jobs", 0) > 0
    assert counters["by_route"].get("job_logs", 0) == 0, counters["by_route"]


def test_runs_with_no_jobs_are_ci_config(hub, collected_db):
    db_url = collected_db(SEVEN).url
    truth = hub.admin("GET", "truth")
    engine = migrated(db_url)
    with Session(engine) as s:
        run_level = dict(
            s.execute(select(Failure.run_id, Failure.category).where(Failure.job_id == 0)).all()
        )
    invalid = set(truth["invalid_runs"])
    assert invalid, "the simulated history has invalid-workflow windows"
    assert invalid <= set(run_level)
    assert {run_level[r] for r in invalid} == {"ci_config"}


def test_classifier_agreement_with_fakehub_ground_truth(hub, collected_db, capsys):
    db_url = collected_db(SEVEN).url
    truth = {f["job_id"]: f for f in hub.admin("GET", "truth")["failures"]}
    engine = migrated(db_url)
    with Session(engine) as s:
        ours = dict(s.execute(select(Failure.job_id, Failure.category)).all())
    with_log = [j for j, f in truth.items() if f["log_status"] == "ok"]
    agree = Counter()
    total = Counter()
    for job_id in with_log:
        category = truth[job_id]["category"]
        total[category] += 1
        agree[category] += ours.get(job_id) == category
    overall = sum(agree.values()) / sum(total.values())
    with capsys.disabled():
        print(
            f"\nclassifier vs fakehub ground truth on {sum(total.values())} archived logs: "
            f"{overall:.1%}"
        )
        for category in sorted(total):
            print(
                f"  {category:<20} {agree[category]:>4}/{total[category]:<4}"
                f" {agree[category] / total[category]:.0%}"
            )
    assert overall >= 0.9


def test_bad_token_stops_with_one_line(hub, db_url, runner, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_wrong_canary_token")
    result = runner.invoke(
        cli, ["--db", db_url, "collect", "--once", "-q", "--api-url", hub.base_url]
    )
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "401 Bad credentials" in lines[0]
    assert "ghp_wrong_canary_token" not in result.output


def test_no_token_401_says_no_token_is_set(hub, tmp_path, runner):
    """#46: the anonymous request is sent (github.com answers it for public repositories);
    the 401 it gets is worded as doctor words it, not as a rejected token."""
    db = f"sqlite:///{tmp_path / 'anonymous.db'}"
    result = runner.invoke(cli, ["--db", db, "collect", "--once", "-q", "--api-url", hub.base_url])
    assert result.exit_code == 2
    assert result.output == (
        "ciflake: error: collect stopped: no token set and the server requires one (401): "
        "set GITHUB_TOKEN or CIFLAKE_TOKEN_FILE\n"
    )
