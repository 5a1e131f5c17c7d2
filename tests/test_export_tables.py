"""``ciflake export`` of every table on a collected fakehub history: the header is exactly the
one documented in the README, the rows match the database, formula-like cells are escaped."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from ciflake.cli import cli
from reports.tables import TABLES
from store.engine import make_engine
from store.models import Failure, Job, WorkflowRun
from store.runfilter import conclusion
from tests.support.collected import collected_copy

README = Path(__file__).resolve().parents[1] / "docs" / "commands.md"
COLUMNS = {table.name: table.columns for table in TABLES.values()}
FORMULA = '=HYPERLINK("http://example.invalid","click")'
NEW = ".github/workflows/e2e_v1_separate_async.yml"


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> str:
    """The collected history with one failure line that a spreadsheet would run."""
    url = collected_copy(tmp_path_factory.mktemp("export"))
    with Session(make_engine(url)) as session, session.begin():
        first = session.execute(select(Failure.run_id, Failure.job_id).limit(1)).one()
        session.execute(
            update(Failure)
            .where(Failure.run_id == first.run_id, Failure.job_id == first.job_id)
            .values(line=FORMULA)
        )
    return url


def _export(runner, db_url: str, tmp_path: Path, table: str, *args: str) -> list[dict]:
    out = tmp_path / f"{table}.csv"
    result = runner.invoke(cli, ["--db", db_url, "export", table, "--out", str(out), *args])
    assert result.exit_code == 0, result.output
    with out.open(encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        assert reader.fieldnames == COLUMNS[table]
        return list(reader)


def _documented() -> dict[str, list[str]]:
    """The column lists of the README's export section: "- `table` (...): `a, b, ...`"."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("### `ciflake export") :]
    section = section[: section.index("\n### ", 1)]
    found = re.findall(r"^- `([\w-]+)`(?: \([^()]*\))?: `([^`]+)`", section, re.MULTILINE)
    return {table: [c.strip() for c in columns.split(",")] for table, columns in found}


def test_readme_documents_every_header():
    assert _documented() == COLUMNS
    assert set(COLUMNS) == set(TABLES)


def _scalar(db_url: str, stmt):
    with Session(make_engine(db_url)) as session:
        return session.scalar(stmt)


def test_runs_jobs_failures_match_the_database(db, runner, tmp_path):
    runs = _export(runner, db, tmp_path, "runs", "--scope", "all")
    assert len(runs) == _scalar(db, select(func.count()).select_from(WorkflowRun))
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", r["created_at"]) for r in runs)
    jobs = _export(runner, db, tmp_path, "jobs", "--scope", "all")
    with Session(make_engine(db)) as session:
        stored = dict(session.execute(select(Job.id, conclusion(Job))).all())
        failures_db = session.execute(
            select(Failure.run_id, Failure.run_attempt, Failure.job_id, Failure.category)
        ).all()
    assert {int(j["job_id"]): j["conclusion"] for j in jobs} == {
        k: v or "" for k, v in stored.items()
    }
    failures = _export(runner, db, tmp_path, "failures", "--scope", "all")
    rows = {
        (int(f["run_id"]), int(f["run_attempt"]), int(f["job_id"]), f["category"]) for f in failures
    }
    assert rows == {tuple(row) for row in failures_db} and len(failures) == len(failures_db)
    assert [f["line"] for f in failures if "HYPERLINK" in f["line"]] == ["'" + FORMULA]


def test_failures_and_jobs_carry_the_stored_evidence(db, runner, tmp_path):
    with Session(make_engine(db)) as session:
        stored = {
            (run_id, attempt, job_id): (evidence, stage or "")
            for run_id, attempt, job_id, evidence, stage in session.execute(
                select(
                    Failure.run_id,
                    Failure.run_attempt,
                    Failure.job_id,
                    Failure.evidence,
                    Failure.stage,
                )
            )
        }
    failures = _export(runner, db, tmp_path, "failures", "--scope", "all")
    exported = {
        (int(f["run_id"]), int(f["run_attempt"]), int(f["job_id"])): (f["evidence"], f["stage"])
        for f in failures
    }
    assert exported == stored
    assert {e for e, _ in stored.values()} >= {"log", "none"}
    by_job = {job_id: evidence for (_, _, job_id), (evidence, _) in stored.items() if job_id}
    jobs = _export(runner, db, tmp_path, "jobs", "--scope", "all")
    assert {int(j["job_id"]): j["evidence"] for j in jobs if j["evidence"]} == by_job


def test_before_after_says_how_much_is_known(db, runner, tmp_path):
    """Each side's known share and sentence are of its red runs (flaky + fail), none else."""
    table = pd.DataFrame(_export(runner, db, tmp_path, "before-after"))
    for side in ("before", "after"):
        red = table[f"{side}_flaky"].astype(int) + table[f"{side}_fail"].astype(int)
        known, basis = table[f"{side}_known"], table[f"{side}_basis"]
        assert ((known == "") == (red == 0)).all()
        assert ((basis == "no failures") == (red == 0)).all()
        said = basis[red > 0].str.extract(r"; n=(\d+) failures?$")[0].astype(int)
        assert (said == red[red > 0]).all() and len(said)
        assert known[red > 0].astype(float).between(0, 1).all()


def test_signatures_and_flaky_match_the_database(db, runner, tmp_path):
    signatures = _export(runner, db, tmp_path, "signatures", "--scope", "all")
    with Session(make_engine(db)) as session:
        counts = dict(
            session.execute(
                select(Failure.signature, func.count()).group_by(Failure.signature)
            ).all()
        )
    assert {s["signature"]: int(s["failures"]) for s in signatures} == counts
    flaky = pd.DataFrame(_export(runner, db, tmp_path, "flaky-jobs"))
    numbers = flaky[["runs", "pass", "flaky", "fail"]].astype(int)
    assert (numbers["runs"] == numbers["pass"] + numbers["flaky"] + numbers["fail"]).all()
    rated = flaky[flaky["flake_rate"] != ""]
    expected = rated["flaky"].astype(int) / (rated["pass"].astype(int) + rated["flaky"].astype(int))
    assert (rated["flake_rate"].astype(float) - expected).abs().max() < 1e-9
    assert set(flaky["scope"]) == {"default"}


def test_filters(db, runner, tmp_path):
    oom = _export(runner, db, tmp_path, "failures", "--category", "oom", "--scope", "all")
    count = _scalar(db, select(func.count()).select_from(Failure).where(Failure.category == "oom"))
    assert len(oom) == count > 0 and {f["category"] for f in oom} == {"oom"}
    window = ["--since", "2026-09-01", "--until", "2026-10-01", "--workflow", NEW]
    runs = _export(runner, db, tmp_path, "runs", *window)
    assert runs and {r["workflow_path"] for r in runs} == {NEW}
    assert all("2026-09-01" <= r["created_at"] < "2026-10-01" for r in runs)
    jobs = _export(runner, db, tmp_path, "jobs", *window)
    assert {j["run_id"] for j in jobs} == {r["run_id"] for r in runs}


def test_health_counts_the_reruns_and_jobs_of_the_scope(db, runner, tmp_path):
    health = pd.DataFrame(_export(runner, db, tmp_path, "health"))
    assert set(health["scope"]) == {"default"} and health["workflow_path"].is_unique
    with Session(make_engine(db)) as session:
        default = (
            select(WorkflowRun.workflow_path, Job.run_attempt)
            .join(Job, Job.run_id == WorkflowRun.id)
            .where(
                WorkflowRun.head_branch == "main",
                WorkflowRun.event.in_(["push", "schedule", "workflow_dispatch"]),
                Job.started_at.is_not(None),
            )
        )
        rows = pd.DataFrame(session.execute(default).all(), columns=["workflow_path", "attempt"])
    ran = rows.groupby("workflow_path").size()
    reruns = rows[rows["attempt"] > 1].groupby("workflow_path").size()
    got = health.set_index("workflow_path")
    assert got["jobs"].astype(int).to_dict() == ran.to_dict()
    assert (got["rerun_jobs"].astype(int) == reruns.reindex(got.index, fill_value=0)).all()
    assert reruns.sum() > 0 and (got["accelerator_hours"].astype(float) >= 0).all()
