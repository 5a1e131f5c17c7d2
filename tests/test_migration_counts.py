"""The Migrations page's statements (store.migration_counts) by hand on a few runs, on SQLite
and PostgreSQL: the segments of the window tables and the first runs of new workflows."""

from __future__ import annotations

from bisect import bisect_right
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import insert, literal, select

from analytics.successors import first_runs_of_new
from store.engine import make_engine
from store.migration_counts import (
    job_segments,
    last_runs,
    segment_of,
    segment_tally,
)
from store.models import LogicalJob, LogicalRun, Workflow, WorkflowRun
from store.runfilter import RunFilter
from tests.support.pg import pg_url

REPO = "o/r"
T0 = datetime(2026, 6, 1, tzinfo=UTC)


def _runs(engine, rows: list[tuple[int, str, int, str, str | None]]) -> None:
    """Runs of REPO on main: (id, workflow path, hours after T0, logical outcome, category)."""
    paths = sorted({row[1] for row in rows})
    with engine.begin() as conn:
        conn.execute(
            insert(Workflow),
            [
                {"id": i, "repo": REPO, "path": p, "name": p, "state": "active"}
                for i, p in enumerate(paths)
            ],
        )
        conn.execute(
            insert(WorkflowRun),
            [
                {
                    "id": run_id,
                    "repo": REPO,
                    "workflow_id": paths.index(path),
                    "workflow_path": path,
                    "event": "push",
                    "head_branch": "main",
                    "head_sha": "0" * 40,
                    "run_number": run_id,
                    "run_attempt": 1,
                    "created_at": T0 + timedelta(hours=hours),
                    "html_url": f"https://example.org/runs/{run_id}",
                }
                for run_id, path, hours, _, _ in rows
            ],
        )
        conn.execute(
            insert(LogicalRun),
            [
                {
                    "run_id": run_id,
                    "red_attempts": 0,
                    "logical_outcome": outcome,
                    "failure_category": category,
                    "failure_basis": "log" if category else None,
                }
                for run_id, _, _, outcome, category in rows
            ],
        )


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_the_halving_case_finds_each_time_its_segment(dialect):
    """No table is read: the server's own database (PostgreSQL) or one in memory."""
    url = "sqlite://" if dialect == "sqlite" else pg_url()
    if url is None:
        pytest.skip("no PostgreSQL server (CIFLAKE_TEST_PG_URL)")
    engine = make_engine(url)
    cuts = [T0 + timedelta(hours=h) for h in (0, 3, 4, 10, 11, 12, 20)]
    times = [T0 + timedelta(hours=h, minutes=m) for h in range(-1, 22) for m in (0, 30)]
    with engine.connect() as conn:
        found = [conn.execute(select(segment_of(literal(t), cuts))).scalar() for t in times]
    engine.dispose()
    assert found == [bisect_right(cuts, t) for t in times]


def test_segments_count_every_run_and_keep_each_workflows_first_runs(engine):
    _runs(
        engine,
        [
            (1, "a.yml", -5, "pass", None),  # before the first cut: segment 0
            (2, "a.yml", 1, "fail", "oom"),
            (3, "a.yml", 2, "excluded", None),  # not a first run, but counted
            (4, "a.yml", 3, "pass", None),
            (5, "a.yml", 4, "flaky", "network"),
            (6, "b.yml", 5, "pass", None),
            (7, "a.yml", 30, "pass", None),  # in the open segment: a first run only
            (8, "a.yml", 31, "pass", None),
            (9, "a.yml", 40, "fail", "oom"),  # the open segment's third run of a.yml
        ],
    )
    cuts = [T0, T0 + timedelta(hours=10)]
    where = RunFilter(repo=REPO, events=("push",), branch="main")
    window = [(("a.yml", T0, T0 + timedelta(hours=4)))]  # invalid: run 2 only (5 is at its end)
    segments = segment_tally(engine, where, cuts, 2, window, "config")
    counted = segments.groupby(["segment", "workflow_path", "logical_outcome"])["n"].sum()
    assert counted.to_dict() == {
        (0, "a.yml", "pass"): 1,
        (1, "a.yml", "excluded"): 1,
        (1, "a.yml", "fail"): 1,
        (1, "a.yml", "flaky"): 1,
        (1, "a.yml", "pass"): 1,
        (1, "b.yml", "pass"): 1,
        (2, "a.yml", "pass"): 2,
    }
    first = segments[segments["run_id"].notna()]
    assert sorted(zip(first["segment"], first["run_id"].astype(int), strict=True)) == [
        (0, 1),
        (1, 2),
        (1, 4),
        (1, 6),
        (2, 7),
        (2, 8),
    ]
    assert set(first["html_url"]) == {f"https://example.org/runs/{i}" for i in (1, 2, 4, 6, 7, 8)}
    # each workflow's first run, excluded or not, and counted or not in the last segment
    assert segments.groupby("workflow_path")["first_at"].min().to_dict() == {
        "a.yml": T0 - timedelta(hours=5),
        "b.yml": T0 + timedelta(hours=5),
    }
    red = segments[segments["logical_outcome"].isin(["fail", "flaky"])].set_index("logical_outcome")
    assert red.loc["fail", ["failure_category", "failure_basis"]].tolist() == [
        "ci_config",
        "config",
    ]
    assert red.loc["flaky", ["failure_category", "failure_basis"]].tolist() == ["network", "log"]


def test_first_runs_only_of_the_workflows_first_run_in_a_span(engine):
    _runs(
        engine,
        [
            (1, "old.yml", 0, "pass", None),  # born before the span: not new
            (2, "old.yml", 50, "pass", None),
            (3, "new.yml", 48, "excluded", None),  # born in the span, but not counted
            (4, "new.yml", 49, "fail", "oom"),
            (5, "new.yml", 60, "pass", None),
            (6, "new.yml", 70, "pass", None),  # the third counted run: not among 2
            (7, "late.yml", 200, "pass", None),  # born after the span
        ],
    )
    where = RunFilter(repo=REPO, events=("push",), branch="main")
    span = (T0 + timedelta(hours=24), T0 + timedelta(hours=100))
    segments = segment_tally(engine, where, [*span], 2, [], "config")
    found, born = first_runs_of_new(segments, [span], 2)
    assert found["run_id"].astype(int).tolist() == [4, 5]
    assert set(found["workflow_path"]) == {"new.yml"}
    assert born.to_dict() == {
        "late.yml": T0 + timedelta(hours=200),
        "new.yml": T0 + timedelta(hours=48),
        "old.yml": T0,
    }
    assert found["html_url"].tolist() == [f"https://example.org/runs/{i}" for i in (4, 5)]
    assert first_runs_of_new(segments, [], 2)[0].empty


def test_jobs_counted_per_segment_with_their_last_time_and_the_last_run_found_again(engine):
    _runs(
        engine,
        [
            (1, "a.yml", 1, "pass", None),
            (2, "a.yml", 2, "pass", None),
            (3, "a.yml", 12, "pass", None),
            (4, "b.yml", 2, "pass", None),
            (5, "a.yml", 30, "pass", None),  # after the last cut: not read
        ],
    )
    jobs = [(1, "x", "pass"), (1, "y", "pass"), (2, "x", "excluded"), (2, "y", "fail")]
    jobs += [(3, "x", "pass"), (4, "x", "pass"), (5, "x", "pass")]
    with engine.begin() as conn:
        conn.execute(
            insert(LogicalJob),
            [
                {
                    "run_id": run_id,
                    "logical_job": name,
                    "attempts": 1,
                    "last_attempt": 1,
                    "first_conclusion": "success",
                    "conclusion": "success",
                    "logical_outcome": outcome,
                    "red_attempts": 0,
                }
                for run_id, name, outcome in jobs
            ],
        )
    where = RunFilter(repo=REPO, events=("push",), branch="main")
    cuts = [T0, T0 + timedelta(hours=10), T0 + timedelta(hours=20)]
    found = job_segments(engine, where, cuts)
    rows = {
        (r.segment, r.workflow_path, r.logical_job): (r.n, r.created_at.hour)
        for r in found.itertuples()
    }
    # x of run 2 is excluded: a.yml's x ran once in the first segment, last at 01:00
    assert rows == {
        (1, "a.yml", "x"): (1, 1),
        (1, "a.yml", "y"): (2, 2),
        (1, "b.yml", "x"): (1, 2),
        (2, "a.yml", "x"): (1, 12),
    }
    at = T0 + timedelta(hours=2)
    runs = last_runs(engine, where, [("a.yml", "y", at), ("a.yml", "x", at)])
    assert runs[["workflow_path", "logical_job", "run_id"]].values.tolist() == [["a.yml", "y", 2]]
    assert runs["html_url"].tolist() == ["https://example.org/runs/2"]
    assert last_runs(engine, where, []).empty
