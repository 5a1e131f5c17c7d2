"""Store read queries and ``ciflake export`` on a small database built with the upsert helper;
the before-after CSV is recomputed from the runs CSV alone."""

from __future__ import annotations

import csv
import math
from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest
from scipy.stats import fisher_exact
from sqlalchemy.orm import Session

from analytics.rates import wilson_interval
from analytics.spreadsheet import csv_bytes, for_spreadsheets
from ciflake.cli import cli
from reports.migration_tables import BEFORE_AFTER_COLUMNS
from reports.run_tables import RUNS_COLUMNS
from store import rollups
from store.engine import make_engine
from store.failure_counts import failure_counts
from store.frame_queries import load_attempts, load_failures, load_jobs, load_runs
from store.models import Failure, Job, RunAttempt, Workflow, WorkflowRun
from store.page_queries import daily_job_presence, daily_run_counts
from store.runfilter import RunFilter
from store.upsert import upsert

REPO = "verl-project/verl"
OLD = ".github/workflows/e2e_fully_async_policy.yml"
NEW = ".github/workflows/e2e_v1_separate_async.yml"
MIGRATION = datetime(2026, 8, 12, 12, 44, tzinfo=UTC)  # #7357 in the built-in config

# (offset days from #7357, workflow, event, attempts' conclusions, category of the red attempt)
HISTORY = [
    (-10, OLD, "push", ["failure", "success"], "oom"),
    (-9, OLD, "push", ["failure"], "oom"),
    (-8, OLD, "schedule", ["success"], None),
    (-7, OLD, "push", ["failure", "failure"], "=cmd|' /C calc'!A0"),
    (-6, OLD, "push", ["cancelled"], None),
    (-5, OLD, "pull_request", ["failure"], "oom"),
    (-4, OLD, "push", ["success"], None),
    (1, NEW, "push", ["success"], None),
    (2, NEW, "push", ["success"], None),
    (3, NEW, "schedule", ["failure", "success"], "network"),
    (4, NEW, "push", ["success"], None),
    (5, NEW, "push", ["failure"], "timeout"),
    (40, NEW, "push", ["success"], None),
]
# The evidence that decided each category (the rest: none) and the stage the job stopped in.
EVIDENCE = {"oom": "annotations", "network": "job", "timeout": "annotations"}
STAGES = {"oom": "testing", "network": "installing"}


def _build(engine) -> None:
    workflows = [
        {"id": i, "repo": REPO, "path": p, "name": p.rsplit("/", 1)[1][:-4], "state": "active"}
        for i, p in ((1, OLD), (2, NEW))
    ]
    runs, attempts, jobs, failures = [], [], [], []
    for n, (offset, path, event, conclusions, category) in enumerate(HISTORY, start=1):
        created = MIGRATION + timedelta(days=offset)
        runs.append(
            {
                "id": n,
                "repo": REPO,
                "workflow_id": 1 if path == OLD else 2,
                "workflow_path": path,
                "name": "-name",
                "event": event,
                "head_branch": "feature" if event == "pull_request" else "main",
                "head_sha": f"{n:040x}",
                "run_number": n,
                "run_attempt": len(conclusions),
                "status": "completed",
                "conclusion": conclusions[-1],
                "created_at": created,
                "html_url": f"https://github.com/{REPO}/actions/runs/{n}",
            }
        )
        for attempt, conclusion in enumerate(conclusions, start=1):
            attempts.append(
                {"run_id": n, "attempt": attempt, "status": "completed", "conclusion": conclusion}
            )
            job_id = n * 10 + attempt
            jobs.append(
                {
                    "id": job_id,
                    "run_id": n,
                    "run_attempt": attempt,
                    "name": "e2e (fsdp2)",
                    "status": "completed",
                    "conclusion": conclusion,
                    "created_at": created,
                    "started_at": created + timedelta(minutes=2),
                    "completed_at": created + timedelta(minutes=30),
                    "runner_name": "vemlp-l20x8-abcde-runner",
                    "labels": ["L20x8"],
                }
            )
            if conclusion == "failure":
                failures.append(
                    {
                        "run_id": n,
                        "run_attempt": attempt,
                        "job_id": job_id,
                        "category": category,
                        "evidence": EVIDENCE.get(category, "none"),
                        "stage": STAGES.get(category),
                        "rule": "r",
                        "signature": "s",
                        "env": {"torch": "2.9"},
                        "classifier_version": "1",
                        "classified_at": created,
                        "classifier_category": category,
                        "classifier_evidence": EVIDENCE.get(category, "none"),
                    }
                )
    with Session(engine) as session, session.begin():
        upsert(session, Workflow, workflows)
        upsert(session, WorkflowRun, runs)
        upsert(session, RunAttempt, attempts)
        upsert(session, Job, jobs)
        upsert(session, Failure, failures)


@pytest.fixture
def filled(engine):
    _build(engine)
    return engine


def test_queries_load_and_filter_in_sql(filled):
    runs = load_runs(filled)
    assert len(runs) == len(HISTORY)
    assert runs["workflow_name"].iloc[0] == "e2e_fully_async_policy"
    assert str(runs["created_at"].dt.tz) == "UTC"
    where = RunFilter(REPO, MIGRATION, MIGRATION + timedelta(days=30), (NEW,))
    assert load_runs(filled, where)["run_id"].tolist() == [8, 9, 10, 11, 12]
    assert set(load_attempts(filled, where)["run_id"]) == {8, 9, 10, 11, 12}
    jobs = load_jobs(filled, where)
    assert jobs["labels"].iloc[0] == ("L20x8",) and len(jobs) == 6
    failures = load_failures(filled, where)
    assert failures["category"].tolist() == ["network", "timeout"]
    assert failures["env"].iloc[0] == {"torch": "2.9"}
    assert load_runs(filled, RunFilter(repo="other/repo")).empty
    daily = daily_run_counts(filled, where)
    assert daily["runs"].sum() == 5 and str(daily["day"].dt.tz) == "UTC"


def test_days_are_utc_days_whatever_the_session_time_zone(filled, db_url, monkeypatch):
    # Every run here is created at 12:44Z, 02:44 the next day in Kiritimati (UTC+14): a
    # PostgreSQL session there (PGTZ, or the server's own zone) still counts each on its UTC day.
    monkeypatch.setenv("PGTZ", "Pacific/Kiritimati")
    far_east = make_engine(db_url)
    runs_per_day = load_runs(far_east)["created_at"].dt.floor("D").value_counts().sort_index()
    with far_east.begin() as conn:  # the rollups counted there too (the job names: raw jobs)
        rollups.rebuild(conn, REPO)
    rolled = daily_job_presence(far_east, rolled=True)
    for daily in (daily_run_counts(far_east), daily_job_presence(far_east), rolled):
        assert daily.groupby("day")["runs"].sum().to_dict() == runs_per_day.to_dict()
    failures = failure_counts(far_east, RunFilter())
    assert set(failures["day"]) <= set(runs_per_day.index) and failures["failures"].sum() == 7
    far_east.dispose()


def _export(runner, db_url, tmp_path, *args):
    out = tmp_path / f"{args[0]}.csv"
    result = runner.invoke(cli, ["--db", db_url, "export", *args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def test_export_runs_csv(filled, db_url, runner, tmp_path):
    out = _export(runner, db_url, tmp_path, "runs")
    with out.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0].keys()) == RUNS_COLUMNS
    first = rows[0]
    assert first["logical_outcome"] == "flaky" and first["first_attempt_conclusion"] == "failure"
    assert first["lineage"] == "e2e_v1_separate_async" and first["tags"] == "fully_async"
    assert first["created_at"] == "2026-08-02T12:44:00Z"
    assert first["failure_category"] == "oom"
    assert rows[3]["failure_category"] == "'=cmd|' /C calc'!A0"  # never a formula
    assert rows[4]["logical_outcome"] == "excluded"
    assert rows[0]["workflow_name"] == "e2e_fully_async_policy"


def test_formula_escaping_only_touches_text_cells():
    frame = pd.DataFrame({"t": ["=1+1", "+x", "-y", "@z", "ok", None], "n": [-1, 2, 3, 4, 5, 6]})
    out = for_spreadsheets(frame)
    assert out["t"].tolist()[:5] == ["'=1+1", "'+x", "'-y", "'@z", "ok"]
    assert out["n"].tolist() == [-1, 2, 3, 4, 5, 6]


def _recompute(runs: pd.DataFrame, event_date: datetime, lineage: str, days: int) -> dict:
    """Before/after from the runs CSV alone, by DESIGN.md's definitions."""
    scoped = runs[
        runs["event"].isin(["push", "schedule", "workflow_dispatch"])
        & (runs["head_branch"] == "main")
        & (runs["lineage"] == lineage)
    ]
    created = pd.to_datetime(scoped["created_at"], utc=True)
    at = pd.Timestamp(event_date)
    window = pd.Timedelta(days=days)
    sides = {
        "before": scoped[(created >= at - window) & (created < at)],
        "after": scoped[(created >= at) & (created < at + window)],
    }
    row: dict = {}
    for side, frame in sides.items():
        counts = frame["logical_outcome"].value_counts()
        p, f, x = (int(counts.get(k, 0)) for k in ("pass", "flaky", "fail"))
        n = p + f + x
        low, high = wilson_interval(p, n)
        row |= {
            f"{side}_runs": n,
            f"{side}_pass": p,
            f"{side}_flaky": f,
            f"{side}_fail": x,
            f"{side}_success_rate": p / n if n else math.nan,
            f"{side}_ci_low": float(low),
            f"{side}_ci_high": float(high),
        }
    b, a = row["before_pass"], row["after_pass"]
    if row["before_runs"] and row["after_runs"]:
        table = [[b, row["before_runs"] - b], [a, row["after_runs"] - a]]
        row["p_value"] = fisher_exact(table).pvalue
    else:
        row["p_value"] = math.nan
    return row


def test_before_after_csv_recomputed_from_runs_csv(filled, db_url, runner, tmp_path):
    runs = pd.read_csv(_export(runner, db_url, tmp_path, "runs"))
    table = pd.read_csv(_export(runner, db_url, tmp_path, "before-after"))
    assert list(table.columns) == BEFORE_AFTER_COLUMNS
    assert len(table) > 0
    checked = 0
    for record in table.to_dict("records"):
        expected = _recompute(runs, record["event_date"], record["lineage"], record["window_days"])
        for column, value in expected.items():
            if isinstance(value, float) and math.isnan(value):
                assert math.isnan(record[column]), column
            else:
                assert record[column] == pytest.approx(value), (record["event_pr"], column)
        checked += 1
    migration = table[(table["event_pr"] == 7357) & (table["lineage"] == "e2e_v1_separate_async")]
    row = migration.iloc[0]
    assert (row["before_runs"], row["before_pass"], row["before_flaky"], row["before_fail"]) == (
        5,
        2,
        1,
        2,
    )
    assert (row["after_runs"], row["after_pass"], row["after_flaky"], row["after_fail"]) == (
        5,
        3,
        1,
        1,
    )
    assert row["event_date"] == "2026-08-12T12:44:00Z" and row["scope"] == "default"
    assert checked == len(table)
    # before: flaky (oom), fail (oom), fail (a category no evidence decided, no log)
    assert row["before_known"] == pytest.approx(2 / 3)
    assert row["before_basis"] == (
        "category from annotations 67%, unknown 33% (no log 33%); n=3 failures"
    )
    # after: flaky (network), fail (timeout)
    assert row["after_known"] == 1.0
    assert row["after_basis"] == "category from annotations 50%, from job facts 50%; n=2 failures"
    quiet = table[table["after_runs"] + table["before_runs"] == 0]
    assert quiet["before_known"].isna().all() and (quiet["before_basis"] == "no failures").all()


def test_export_failures_and_jobs_carry_evidence(filled, db_url, runner, tmp_path):
    failures = pd.read_csv(
        _export(runner, db_url, tmp_path, "failures", "--scope", "all"), keep_default_na=False
    )
    categories = [c for _, _, _, conclusions, c in HISTORY for x in conclusions if x == "failure"]
    assert len(failures) == len(categories)
    assert list(failures["evidence"]) == [EVIDENCE.get(c, "none") for c in categories]
    assert list(failures["stage"]) == [STAGES.get(c, "") for c in categories]
    jobs = pd.read_csv(
        _export(runner, db_url, tmp_path, "jobs", "--scope", "all"), keep_default_na=False
    )
    evidence = dict(zip(failures["job_id"], failures["evidence"], strict=True))
    assert list(jobs["evidence"]) == [evidence.get(job, "") for job in jobs["job_id"]]


def test_export_filters_and_errors(filled, db_url, runner, tmp_path):
    out = tmp_path / "new.csv"
    args = ["--db", db_url, "export", "runs", "--out", str(out), "--workflow", NEW]
    assert (
        runner.invoke(cli, [*args, "--since", "2026-08-13", "--until", "2026-08-16"]).exit_code == 0
    )
    assert pd.read_csv(out)["run_id"].tolist() == [8, 9, 10]
    cases = {
        "bad date": ["export", "runs", "--out", str(out), "--since", "yesterday"],
        "reversed": [
            "export",
            "runs",
            "--out",
            str(out),
            "--since",
            "2026-08-02",
            "--until",
            "2026-08-01",
        ],
        "unknown table": ["export", "bogus", "--out", str(out)],
        "category without one": ["export", "flaky-jobs", "--out", str(out), "--category", "oom"],
        "unknown category": ["export", "runs", "--out", str(out), "--category", "bogus"],
        "unwritable": ["export", "runs", "--out", str(tmp_path / "no" / "such" / "x.csv")],
    }
    for name, command in cases.items():
        result = runner.invoke(cli, ["--db", db_url, *command])
        assert result.exit_code == 2, name
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("ciflake: error: "), (name, result.output)


def test_export_workflow_by_file_name_or_refused_keeping_out(filled, db_url, runner, tmp_path):
    """#46: a bare file name is the configured path that ends with it; a name no configured
    path has is refused in one line with the nearest paths, and --out is left as it was."""
    out = tmp_path / "new.csv"
    export = ["--db", db_url, "export", "runs", "--out", str(out), "--workflow"]
    by_name = runner.invoke(cli, [*export, NEW.rsplit("/", 1)[1]])
    assert by_name.exit_code == 0, by_name.output
    assert pd.read_csv(out)["run_id"].tolist() == [8, 9, 10, 11, 12, 13]
    out.write_text("kept\n")
    for typo in ("e2e_v1_separate_asnyc.yml", ".github/workflows/e2e_v1_separate_async.yaml"):
        result = runner.invoke(cli, [*export, typo])
        assert result.exit_code == 2, result.output
        [line] = result.output.strip().splitlines()
        assert line.startswith(
            f"ciflake: error: --workflow {typo!r} is not a configured workflow of {REPO}; "
            f"did you mean {NEW} or "
        ), line
    assert out.read_text() == "kept\n"


def test_export_matching_nothing_says_why_and_exits_0(filled, db_url, runner, tmp_path):
    out = tmp_path / "none.csv"
    range_ = ["--since", "2026-12-01", "--until", "2026-12-02", "--workflow", NEW]
    result = runner.invoke(cli, ["--db", db_url, "export", "runs", "--out", str(out), *range_])
    assert result.exit_code == 0
    # this hand-built database has no collect's bookkeeping: its workflows count as not
    # collected yet, which stdout says after the row count
    assert result.stdout.startswith(f"{out}: 0 rows; backfill in progress"), result.stdout
    assert result.stderr == (
        f"ciflake: 0 rows: {REPO} has none for default-scope runs of {NEW}, "
        "from 2026-12-01 00:00, before 2026-12-02 00:00\n"
    )
    assert pd.read_csv(out).empty


def test_export_without_database_is_one_line(runner, tmp_path):
    url = f"sqlite:///{tmp_path / 'missing.db'}"
    result = runner.invoke(cli, ["--db", url, "export", "runs", "--out", str(tmp_path / "x.csv")])
    assert result.exit_code == 2
    assert result.output.startswith("ciflake: error: ")


def test_dashboard_downloads_are_neutralised_like_exports():
    """The dashboard's CSV bytes go through the same neutralisation as ``ciflake export``."""
    frame = pd.DataFrame({"line": ['=HYPERLINK("x")', "ok"], "labels": [["L20x8", "gpu"], []]})
    text = csv_bytes(frame).decode("utf-8").splitlines()
    assert text[0] == "line,labels"
    assert text[1].startswith("\"'=HYPERLINK(")
    assert text[1].endswith(",L20x8;gpu")
    assert text[2] == "ok,"
