"""``ciflake triage`` link/unlink/list/correct/uncorrect (store.triage): a correction reaches
every reader (page queries, derived tables, export tables, the summary), survives
``reclassify`` and every write of failures, and ``uncorrect`` restores the classifier's answer.
One collected database per test, on SQLite and PostgreSQL."""

from __future__ import annotations

import csv
from datetime import datetime, timedelta

import pandas as pd
import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from analytics import derived
from analytics.frames import logical_job_frame, logical_run_frame
from ciflake.cli import cli
from collector.logs import LogResult, job_payload, save_logs_and_failures, save_run_failure
from reports.query import Query
from reports.summary_render import render_summary
from reports.tables import TABLES, build
from store import page_queries
from store.compression import decompress
from store.engine import make_engine
from store.models import Failure, Job, JobLog, KnownIssue, TriageLog, WorkflowRun
from store.runfilter import RunFilter
from store.settings import load_config
from store.triage import correct
from tests.support.summaries import summary_data
from tests.support.triage import columns

REPO = "verl-project/verl"
NOTE = "host reboot, not an OOM"


def _cli(runner, db_url: str, *args: str):
    return runner.invoke(cli, ["--db", db_url, "triage", *args], env={"CIFLAKE_USER": "alice"})


def _newest_default_branch_signature(engine) -> tuple[str, str, datetime]:
    """(signature, category, run's creation) of the newest default-branch failure with a log
    line: the summary's failures since an hour before it include it."""
    stmt = (
        select(Failure.signature, Failure.category, WorkflowRun.created_at)
        .join(WorkflowRun, WorkflowRun.id == Failure.run_id)
        .where(
            WorkflowRun.head_branch == "main",
            WorkflowRun.event != "pull_request",
            Failure.line.is_not(None),
            Failure.job_id != 0,
        )
        .order_by(WorkflowRun.created_at.desc())
        .limit(1)
    )
    with engine.connect() as conn:
        signature, category, created = conn.execute(stmt).one()
    return signature, category, created


def test_link_unlink_list_round_trip(collected_db, runner, tmp_path):
    db_url = collected_db().url
    engine = make_engine(db_url)
    signature, category, newest = _newest_default_branch_signature(engine)
    url = "https://github.com/verl-project/verl/issues/1234"
    linked = _cli(runner, db_url, "link", signature, url, "--note", "HCCL socket", "--by", "bob")
    assert linked.exit_code == 0 and f"linked {signature} to {url}" in linked.output
    listed = _cli(runner, db_url, "list")
    row = next(line for line in listed.output.splitlines() if line.startswith(signature))
    for word in (category, url, "not read", "HCCL socket", "bob"):
        assert word in row, (word, row)
    with Session(engine) as session:
        issue = session.get(KnownIssue, (REPO, signature))
        assert issue is not None
        assert (issue.issue_repo, issue.issue_number, issue.source) == (REPO, 1234, "person")
    out = tmp_path / "known.csv"
    exported = runner.invoke(cli, ["--db", db_url, "export", "known-issues", "--out", str(out)])
    assert exported.exit_code == 0, exported.output
    with out.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert [(r["signature"], r["url"], r["issue_number"], r["note"]) for r in rows] == [
        (signature, url, "1234", "HCCL socket")
    ]
    assert int(rows[0]["failures"]) > 0
    # a range without its failures: none counted, and still its category (not empty)
    later = tmp_path / "later.csv"
    args = ["export", "known-issues", "--out", str(later), "--since", "2099-01-01"]
    assert runner.invoke(cli, ["--db", db_url, *args]).exit_code == 0
    with later.open(encoding="utf-8") as f:
        assert [(r["failures"], r["category"]) for r in csv.DictReader(f)] == [("0", category)]
    # any other http(s) URL is kept as it is, without an issue number; a new link replaces
    other = "https://jira.example.org/browse/CI-7"
    assert _cli(runner, db_url, "link", signature, other).exit_code == 0
    with Session(engine) as session:
        issue = session.get(KnownIssue, (REPO, signature))
        assert issue is not None
        assert (issue.url, issue.issue_number, issue.set_by) == (other, None, "alice")
    unlinked = _cli(runner, db_url, "unlink", signature)
    assert unlinked.exit_code == 0 and f"unlinked {signature} from {other}" in unlinked.output
    assert "no linked or corrected signature" in _cli(runner, db_url, "list").output
    with engine.connect() as conn:
        actions = conn.execute(select(TriageLog.action).order_by(TriageLog.id)).scalars().all()
    assert actions == ["linked", "linked", "unlinked"]
    engine.dispose()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("link", "{sig}", "ftp://example.org/x"), "not an http(s) URL: 'ftp://example.org/x'"),
        (("link", "{sig}", "#1234"), "not an http(s) URL: '#1234'"),
        (("link", "0123456789ab", "https://x.org/1"), "no failure of verl-project/verl has"),
        (("correct", "{sig}", "gremlins", "--note", "n"), "unknown category 'gremlins'"),
        (("correct", "0123456789ab", "infra", "--note", "n"), "no failure of verl-project/verl"),
        (("correct", "{sig}", "infra", "--note", " "), "--note must say why"),
        (("uncorrect", "0123456789ab"), "no failure of verl-project/verl has"),
        (("unlink", "0123456789ab"), "no failure of verl-project/verl has"),
    ],
)
def test_mistakes_are_refused_in_one_line(thin_db, runner, args, words):
    db_url = thin_db("one run")
    engine = make_engine(db_url)
    with engine.connect() as conn:
        signature = conn.scalar(select(Failure.signature))
    result = _cli(runner, db_url, *(a.format(sig=signature) for a in args))
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1 and words in result.output, result.output
    with engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(TriageLog)) == 0
    engine.dispose()


def _readers(engine, db_url: str, signature: str) -> dict[str, set[tuple[str, str]]]:
    """(category, evidence or "") of ``signature``'s failures as each reader gives them: the
    page queries and frames the pages load, every export table of failures, jobs, runs or
    signatures that has a category. Not the incidents: a row is a burst of one cause (its
    ``signature`` set only for a signature's burst), and the caller's ``derived.differences``
    checks them recomputed with the correction; nor the categories, a row of which counts
    failures of every signature."""
    project = load_config(env={}, db_url=db_url).project()
    where = RunFilter(repo=REPO)
    details = page_queries.failure_details(engine, where, signature=signature)
    jobs = set(details["job_id"])
    # the runs whose every failure has the signature: a run's category is one failure's
    everything = page_queries.failure_details(
        engine, RunFilter(repo=REPO, run_ids=tuple(set(details["run_id"])))
    )
    others = set(everything.loc[everything["signature"] != signature, "run_id"])
    runs = set(details["run_id"]) - others
    logical_runs = logical_run_frame(engine, project, where)
    logical_jobs = logical_job_frame(engine, project, where, logical_runs)
    summary = page_queries.signature_summary(engine, where)
    seen = {
        "failure_details": set(zip(details["category"], details["evidence"], strict=True)),
        "signature_summary": {
            (c, "") for c in summary.loc[summary["signature"] == signature, "category"]
        },
        "logical_runs": {
            (c, "") for c in logical_runs.loc[logical_runs["run_id"].isin(runs), "failure_category"]
        },
        "logical_jobs": {
            (c, "") for c in logical_jobs.loc[logical_jobs["red_job_id"].isin(jobs), "category"]
        },
    }
    query = Query(scope="all")
    for name, table in TABLES.items():
        # tables of counts (per period, event, lineage): no row of one run, job or signature
        counts = ("known-issues", "incidents", "categories", "category-shift", "incident-lineages")
        if table.category_column is None or name in counts:
            continue
        frame = build(engine, project, name, query)
        key = "signature" if "signature" in frame else ("job_id" if "job_id" in frame else None)
        if key == "signature":
            chosen = frame[frame["signature"] == signature]
        elif key == "job_id":
            chosen = frame[frame["job_id"].isin(jobs)]
        else:
            chosen = frame[frame["run_id"].isin(runs)]
        evidence = (
            chosen["evidence"] if name in ("failures", "jobs") else pd.Series("", chosen.index)
        )
        seen[f"export {name}"] = set(zip(chosen[table.category_column], evidence, strict=True))
    return seen


def test_a_correction_reaches_every_reader_survives_reclassify_and_is_taken_back(
    collected_db, runner
):
    db_url = collected_db().url
    engine = make_engine(db_url)
    signature, category, newest = _newest_default_branch_signature(engine)
    corrected = "infra" if category != "infra" else "network"
    before = _readers(engine, db_url, signature)
    assert all({c for c, _ in values} == {category} for values in before.values()), before

    result = _cli(runner, db_url, "correct", signature, corrected, "--note", NOTE)
    assert result.exit_code == 0 and f"corrected {signature} to {corrected}" in result.output
    after = _readers(engine, db_url, signature)
    for reader, values in after.items():
        assert {c for c, _ in values} == {corrected}, reader
        assert {e for _, e in values} <= {"maintainer", ""}, reader
    assert {e for _, e in after["failure_details"]} == {"maintainer"}
    details = page_queries.failure_details(engine, RunFilter(repo=REPO), signature=signature)
    assert set(details["classifier_category"]) == {category}
    assert set(details["correction_note"]) == {NOTE}
    project = load_config(env={}, db_url=db_url).project()
    assert derived.differences(engine, REPO, project) == {}  # derived rows refreshed with it

    hour = timedelta(hours=1)
    text = render_summary(summary_data(db_url, newest - hour, newest + hour))
    assert f"`{corrected}` (a maintainer's correction: {NOTE})" in text

    assert runner.invoke(cli, ["--db", db_url, "reclassify"]).exit_code == 0
    again = page_queries.failure_details(engine, RunFilter(repo=REPO), signature=signature)
    assert set(
        zip(again["category"], again["evidence"], again["correction_note"], strict=True)
    ) == {(corrected, "maintainer", NOTE)}

    assert _cli(runner, db_url, "uncorrect", signature).exit_code == 0
    assert _readers(engine, db_url, signature) == before
    assert derived.differences(engine, REPO, project) == {}
    text = render_summary(summary_data(db_url, newest - hour, newest + hour))
    assert "a maintainer's correction" not in text
    engine.dispose()


def test_a_collect_applies_the_correction_to_the_failures_it_writes(collected_db, runner):
    """What a collect writes (a job's failure from its log, a run's without jobs) takes the
    signature's correction in the same transaction."""
    db_url = collected_db().url
    engine = make_engine(db_url)
    with Session(engine) as session:
        job, log = session.execute(
            select(Job, JobLog)
            .join(JobLog, JobLog.job_id == Job.id)
            .join(Failure, Failure.job_id == Job.id)
            .where(JobLog.status == "ok", Failure.line.is_not(None))
            .limit(1)
        ).one()
        signature = session.scalar(select(Failure.signature).where(Failure.job_id == job.id))
        no_jobs = session.execute(
            select(Failure.run_id, Failure.signature).where(Failure.job_id == 0).limit(1)
        ).one()
        content = decompress(log.content or b"", log.compression)
        payload = job_payload(job, [])
    for sig in (signature, no_jobs.signature):
        assert _cli(runner, db_url, "correct", sig, "timeout", "--note", NOTE).exit_code == 0
    with Session(engine) as session, session.begin():  # the classifier's answer, written again
        save_logs_and_failures(session, [LogResult(payload, "ok", content=content)])
        save_run_failure(session, {"id": no_jobs.run_id, "run_attempt": 1}, None)
    with Session(engine) as session:
        for run_id, job_id in ((job.run_id, job.id), (no_jobs.run_id, 0)):
            written = session.scalars(
                select(Failure).where(Failure.run_id == run_id, Failure.job_id == job_id)
            ).first()
            assert written is not None
            assert (written.category, written.evidence) == ("timeout", "maintainer")
            assert written.classifier_category != "timeout"
    engine.dispose()


def test_a_correction_in_one_repository_leaves_anothers_same_signature_alone(thin_db):
    """Corrections are per repository: another repository's failures with the same signature
    keep the classifier's answer."""
    engine = make_engine(thin_db("one run"))
    with Session(engine) as session, session.begin():
        failure = session.scalars(select(Failure).limit(1)).one()
        run = session.get(WorkflowRun, failure.run_id)
        other = int(session.scalar(select(func.max(WorkflowRun.id))) or 0) + 1
        session.add(WorkflowRun(**{**columns(run), "id": other, "repo": "other/repo"}))
        session.flush()
        session.add(Failure(**{**columns(failure), "run_id": other}))
        signature, category, evidence = failure.signature, failure.category, failure.evidence
        mine = failure.run_id
    target = "infra" if category != "infra" else "network"
    with Session(engine) as session, session.begin():
        runs = correct(session, REPO, signature, target, note=NOTE, set_by="alice")
    with Session(engine) as session:
        theirs = session.scalars(select(Failure).where(Failure.run_id == other)).one()
        ours = session.scalars(
            select(Failure.category)
            .join(WorkflowRun, WorkflowRun.id == Failure.run_id)
            .where(WorkflowRun.repo == REPO, Failure.signature == signature)
        ).all()
    engine.dispose()
    assert runs == [mine]
    assert (theirs.category, theirs.evidence) == (category, evidence)
    assert set(ours) == {target}
