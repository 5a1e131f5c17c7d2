"""store.page_queries.signature_summary and the signatures report table (from one counts
statement, store.failure_counts, or from the raw rows) on both backends: the counts of each
signature and its newest failure (line, job, runner, link), worked out by hand."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest
from sqlalchemy.orm import Session

from analytics.evidence import failure_basis
from reports import failure_tables, tables
from reports.failure_tables import raw_failure_counts, signature_rows
from reports.query import Query
from reports.table_inputs import forget_counts
from store import failure_counts as failure_counts_module
from store.engine import make_engine
from store.failure_counts import failure_counts
from store.models import Failure, Job, RunAttempt, Workflow, WorkflowRun
from store.page_queries import signature_summary
from store.runfilter import RunFilter
from store.settings import load_config
from store.upsert import upsert

REPO = "verl-project/verl"
WORKFLOW = ".github/workflows/e2e.yml"
START = datetime(2026, 6, 1, 8, tzinfo=UTC)


def _run(run_id: int, created_at: datetime, attempts: int = 1, repo: str = REPO) -> dict:
    """A red push run on main of WORKFLOW, ``attempts`` attempts, linked to its own page."""
    return {
        "id": run_id,
        "repo": repo,
        "workflow_id": 1,
        "workflow_path": WORKFLOW,
        "event": "push",
        "head_branch": "main",
        "head_sha": f"{run_id:040x}",
        "run_number": run_id,
        "run_attempt": attempts,
        "status": "completed",
        "conclusion": "failure",
        "created_at": created_at,
        "html_url": f"https://github.com/{repo}/actions/runs/{run_id}",
    }


def _failure(
    run_id: int, attempt: int, job_id: int, signature: str, category: str, line: str | None = None
) -> dict:
    """A classified failure (job 0: the run itself); its line names its key unless given."""
    return {
        "run_id": run_id,
        "run_attempt": attempt,
        "job_id": job_id,
        "category": category,
        "rule": f"rule-{category}",
        "signature": signature,
        "line": line or f"line of {run_id}/{attempt}/{job_id}",
        "classifier_version": "test",
        "classified_at": START,
        "classifier_category": category,
        "classifier_evidence": "none",
    }


def _seed(engine) -> None:
    """Run 1 (day 0, two attempts), run 2 (day 1) and run 3 (day 2, in another repository).
    Signature "oom" fails in run 1 twice (jobs 11 and 12 of attempt 1) and in run 2 (job 21);
    "net" fails run 1's attempt 2 (job 0: the run itself) and attempt 1 (job 13); "far" only in
    the other repository, whose newer "oom" must not speak for this one."""
    runs = [
        _run(run_id, START + timedelta(days=day), attempts, repo)
        for run_id, day, attempts, repo in [(1, 0, 2, REPO), (2, 1, 1, REPO), (3, 2, 1, "o/r")]
    ]
    jobs = [
        {
            "id": job_id,
            "run_id": job_id // 10,
            "run_attempt": 1,
            "name": f"job{job_id}",
            "conclusion": "failure",
            "runner_name": f"runner-{job_id}",
            "html_url": f"https://github.com/{REPO}/actions/runs/{job_id // 10}/job/{job_id}",
            "labels": [],
            "steps": [],
        }
        for job_id in (11, 12, 13, 21, 31)
    ]
    failures = [
        _failure(run_id, attempt, job_id, signature, category)
        for run_id, attempt, job_id, signature, category in [
            (1, 1, 11, "oom", "oom"),
            (1, 1, 12, "oom", "oom"),
            (2, 1, 21, "oom", "oom"),
            (1, 1, 13, "net", "network"),
            (1, 2, 0, "net", "network"),
            (3, 1, 31, "oom", "oom"),
            (3, 1, 0, "far", "unknown"),
        ]
    ]
    with Session(engine) as session, session.begin():
        upsert(
            session,
            Workflow,
            [{"id": 1, "repo": REPO, "path": WORKFLOW, "name": "e2e", "state": "active"}],
        )
        upsert(session, WorkflowRun, runs)
        upsert(
            session,
            RunAttempt,
            [{"run_id": r["id"], "attempt": a + 1} for r in runs for a in range(r["run_attempt"])],
        )
        upsert(session, Job, jobs)
        upsert(session, Failure, failures)


def _from_counts(engine, where: RunFilter) -> pd.DataFrame:
    """reports.failure_tables' signatures from the one counts statement, as signature_summary
    names its columns."""
    rows = signature_rows(engine, where, failure_counts(engine, where))
    return rows.rename(
        columns={"first_seen_in_range": "first_seen_here", "last_seen_in_range": "last_seen"}
    )


def _from_raw_rows(engine, where: RunFilter) -> pd.DataFrame:
    rows = signature_rows(engine, where, raw_failure_counts(engine, where))
    return rows.rename(
        columns={"first_seen_in_range": "first_seen_here", "last_seen_in_range": "last_seen"}
    )


SUMMARIES = pytest.mark.parametrize(
    "signature_summary", [signature_summary, _from_counts, _from_raw_rows]
)


@SUMMARIES
def test_each_signature_counts_and_its_newest_failure(engine, signature_summary):
    _seed(engine)
    table = signature_summary(engine, RunFilter(repo=REPO)).set_index("signature")
    assert sorted(table.index) == ["net", "oom"] and table.index.is_unique
    oom, net = table.loc["oom"], table.loc["net"]
    assert (oom["failures"], oom["jobs"]) == (3, 3)
    assert (oom["first_seen_here"], oom["last_seen"]) == (START, START + timedelta(days=1))
    # The newest: run 2 (a day later than run 1), its job 21, with that job's runner and link.
    assert (oom["job_id"], oom["line"], oom["runner_name"]) == (21, "line of 2/1/21", "runner-21")
    assert oom["html_url"].endswith("/runs/2/job/21")
    assert (oom["category"], oom["rule"]) == ("oom", "rule-oom")
    # Within one run the higher job id first: job 13 (attempt 1) over the run's own failure
    # (job 0, attempt 2), with the job's link.
    assert (net["job_id"], net["line"]) == (13, "line of 1/1/13")
    assert net["html_url"].endswith("/runs/1/job/13")
    # Dates narrow the selection, not the whole history's first_seen.
    later = signature_summary(
        engine, RunFilter(repo=REPO, since=START + timedelta(hours=12))
    ).set_index("signature")
    assert list(later.index) == ["oom"]
    assert (later.loc["oom", "failures"], later.loc["oom", "job_id"]) == (1, 21)
    assert later.loc["oom", "first_seen"] == START
    # Before run 2: run 1's newest oom is its higher job, 12.
    earlier = signature_summary(
        engine, RunFilter(repo=REPO, until=START + timedelta(hours=12))
    ).set_index("signature")
    assert (earlier.loc["oom", "failures"], earlier.loc["oom", "job_id"]) == (2, 12)
    assert earlier.loc["oom", "line"] == "line of 1/1/12"


@SUMMARIES
def test_ties_are_broken_by_attempt_then_run(engine, signature_summary):
    """Run 1's own failures in attempts 1 and 2 share its time and job id 0: the later attempt
    speaks for "tie". Run 4, created in the same second as run 1, and run 1 both fail on their
    own with "twin": the higher run id. Each example links to its run."""
    _seed(engine)
    with Session(engine) as session, session.begin():
        upsert(session, WorkflowRun, [_run(4, START)])
        upsert(session, RunAttempt, [{"run_id": 4, "attempt": 1}])
        upsert(
            session,
            Failure,
            [
                _failure(1, 1, 0, "tie", "network", "attempt 1"),
                _failure(1, 2, 0, "tie", "network", "attempt 2"),
                _failure(4, 1, 0, "twin", "network", "run 4"),
                _failure(1, 1, 0, "twin", "network", "run 1"),
            ],
        )
    table = signature_summary(engine, RunFilter(repo=REPO)).set_index("signature")
    assert table.index.is_unique
    assert table.loc["tie", "line"] == "attempt 2"
    assert table.loc["tie", "html_url"] == f"https://github.com/{REPO}/actions/runs/1"
    assert table.loc["twin", "line"] == "run 4"
    assert table.loc["twin", "html_url"] == f"https://github.com/{REPO}/actions/runs/4"


@pytest.mark.parametrize("counted", [failure_counts, raw_failure_counts])
def test_failures_are_counted_in_the_range_and_signed_over_the_whole_history(engine, counted):
    """store.failure_counts (one statement) and its raw-row twin: the range's failures per
    day, category, evidence, stage and log status; the repository's others per signature
    only, for first sightings; another repository's none."""
    _seed(engine)
    counts = counted(engine, RunFilter(repo=REPO, since=START + timedelta(hours=12)))
    rows = {
        (
            r.chosen,
            r.signature,
            r.category if pd.notna(r.category) else None,
            r.failures,
            r.run_failures,
            r.first_at,
        )
        for r in counts.itertuples()
    }
    assert rows == {
        (True, "oom", "oom", 1, 0, START + timedelta(days=1)),  # run 2, day 1
        (False, "oom", None, 2, 0, START),  # run 1's two jobs
        (False, "net", None, 2, 1, START),  # run 1's job 13 and its own failure
    }
    chosen = counts[counts["chosen"]]
    assert chosen["day"].tolist() == [START.replace(hour=0) + timedelta(days=1)]
    assert chosen["evidence"].tolist() == ["none"] and chosen["log_status"].isna().all()
    assert counts.loc[~counts["chosen"], ["day", "evidence", "stage"]].isna().all().all()


def test_the_failure_counts_reach_pandas_as_integers_and_text(engine, monkeypatch):
    """The counts statement gives its sums as integers and its times and days as UTC text,
    on both backends: PostgreSQL's numeric sums (Decimals), dates and zoned datetimes cost
    pandas 8 ms more to take in at scale 1 than these (#49); the frame is the same."""
    _seed(engine)
    fetched: list[tuple] = []
    real = failure_counts_module.raw_frame

    def kept(bind, stmt, times=()):  # type: ignore[no-untyped-def]
        with bind.connect() as conn:
            fetched.extend(conn.execute(stmt).cursor.fetchall())
        return real(bind, stmt, times)

    monkeypatch.setattr(failure_counts_module, "raw_frame", kept)
    counts = failure_counts(engine, RunFilter(repo=REPO, since=START + timedelta(hours=12)))
    chosen = [row for row in fetched if row[0] == 1]
    assert chosen and all(type(row[2]) is str and len(row[2]) == 10 for row in chosen)
    assert {tuple(type(value) for value in row[-4:]) for row in fetched} == {(int, int, str, str)}
    assert counts["first_at"].min() == START and str(counts["day"].dt.tz) == "UTC"


def test_the_failures_pages_tables_classify_the_querys_failures_once(demo_db, monkeypatch):
    """The categories, bases, unknown stages and signatures of one query share one counts
    frame and its basis: each failure group is classified once, not once per table."""
    engine = make_engine(demo_db, read_only=True)
    project = load_config(env={}, db_url=demo_db).project()
    classified: list[int] = []

    def basis(counts: pd.DataFrame) -> pd.Series:
        classified.append(len(counts))
        return failure_basis(counts)

    monkeypatch.setattr(failure_tables, "failure_basis", basis)
    forget_counts()
    names = ("categories", "failure-bases", "unknown-stages", "signatures")
    built = {name: tables.build(engine, project, name, Query()) for name in names}
    assert len(classified) == 1 and classified[0] > 0
    assert built["failure-bases"]["failures"].sum() == built["categories"]["failures"].sum()
