"""The derived tables' commands and staleness: ``ciflake db rebuild [--check]``, a changed
job-name rule, ``ciflake db upgrade`` on a database whose tables were never filled, and
``ciflake reclassify`` (analytics.derived)."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from sqlalchemy import delete, event, func, insert, select, update
from sqlalchemy.orm import Session

from analytics import derived
from analytics.frames import logical_job_frame, logical_run_frame
from ciflake.cli import cli
from collector import lazy
from store import derived as store_derived
from store.engine import make_engine
from store.incidents import load_incidents
from store.models import DerivedPending, DerivedState, Failure, LogicalJob, LogicalRun
from store.project import Project
from store.runfilter import RunFilter
from store.settings import load_config
from tests.support.collected import collected_copy

REPO = "verl-project/verl"
ROOT = Path(__file__).resolve().parent.parent


def _project(db_url: str) -> Project:
    return load_config(env={}, db_url=db_url).project()


def _strip(db_url: str) -> str:
    return _project(db_url).job_name_strip


def test_rebuild_check_finds_a_changed_row_and_rebuild_mends_it(collected_db, runner):
    db_url = collected_db().url
    engine = make_engine(db_url)
    check = ["--db", db_url, "db", "rebuild", "--check"]
    ok = runner.invoke(cli, check)
    assert ok.exit_code == 0 and "match a fresh computation" in ok.output, ok.output
    with Session(engine) as session, session.begin():
        run_id = session.scalars(  # a red run with jobs
            select(LogicalJob.run_id).where(LogicalJob.logical_outcome == "fail")
        ).first()
        session.execute(
            update(LogicalRun).where(LogicalRun.run_id == run_id).values(logical_outcome="pass")
        )
        session.execute(delete(LogicalJob).where(LogicalJob.run_id == run_id))
    bad = runner.invoke(cli, check)
    assert bad.exit_code == 1, bad.output
    assert "logical_runs 2 rows" in bad.output and "logical_jobs" in bad.output
    rebuilt = runner.invoke(cli, ["--db", db_url, "db", "rebuild"])
    assert rebuilt.exit_code == 0, rebuilt.output
    assert f"{REPO}: derived tables rebuilt from " in rebuilt.output
    assert "match a fresh computation" in rebuilt.output
    assert derived.differences(engine, REPO, _project(db_url)) == {}
    engine.dispose()


def test_another_job_name_rule_makes_readers_take_the_raw_rows(collected_db, monkeypatch):
    db_url = collected_db().url
    engine = make_engine(db_url)
    config = load_config(env={}, db_url=db_url)
    assert derived.is_current(engine, REPO, config.project().job_name_strip)
    merged = replace(config.project(), job_name_strip=r"_.*$")  # e2e_fsdp2, e2e_megatron: one
    assert not derived.is_current(engine, REPO, merged.job_name_strip)
    runs = logical_run_frame(engine, merged, RunFilter(REPO), lean=True)
    jobs = logical_job_frame(engine, merged, RunFilter(REPO), runs, lean=True)
    with monkeypatch.context() as raw:  # what the raw rows say under the new rule
        raw.setattr(derived, "is_current", lambda *args, **kwargs: False)
        expected = logical_job_frame(engine, merged, RunFilter(REPO), runs, lean=True)
    assert sorted(jobs["logical_job"].unique()) == sorted(expected["logical_job"].unique())
    with engine.connect() as conn:
        stored = conn.scalar(select(func.count(func.distinct(LogicalJob.logical_job))))
    assert jobs["logical_job"].nunique() != stored  # the new rule merges jobs it kept apart
    assert derived.ensure_current(engine, REPO, merged)
    assert derived.differences(engine, REPO, merged) == {}
    engine.dispose()


def test_upgrade_fills_tables_that_were_never_filled(collected_db, runner):
    db_url = collected_db().url
    engine = make_engine(db_url)
    with Session(engine) as session, session.begin():
        for model in (LogicalJob, LogicalRun, DerivedState):
            session.execute(delete(model))
    assert not derived.is_current(engine, REPO, _strip(db_url))
    result = runner.invoke(cli, ["--db", db_url, "db", "upgrade"])
    assert result.exit_code == 0, result.output
    assert f"{REPO}: derived tables rebuilt from " in result.output
    assert derived.is_current(engine, REPO, _strip(db_url))
    assert derived.differences(engine, REPO, _project(db_url)) == {}
    again = runner.invoke(cli, ["--db", db_url, "db", "upgrade"])
    assert "rebuilt" not in again.output  # current: nothing to do
    engine.dispose()


def test_reclassify_keeps_the_derived_tables_in_step(collected_db, runner):
    db_url = collected_db().url
    engine = make_engine(db_url)
    with_failed_jobs = select(Failure.run_id).where(Failure.job_id != 0)
    with Session(engine) as session, session.begin():  # as if the rules had said otherwise
        session.execute(
            update(LogicalRun)
            .where(LogicalRun.run_id.in_(with_failed_jobs))
            .values(failure_category="unknown")
        )
        session.execute(
            update(LogicalJob).where(LogicalJob.category.is_not(None)).values(category="unknown")
        )
    assert derived.differences(engine, REPO, _project(db_url))  # the edit shows
    result = runner.invoke(cli, ["--db", db_url, "reclassify"])
    assert result.exit_code == 0, result.output
    assert derived.differences(engine, REPO, _project(db_url)) == {}
    engine.dispose()


def test_frames_from_the_tables_equal_frames_from_the_raw_rows(collected_db, monkeypatch):
    db_url = collected_db().url
    engine = make_engine(db_url, read_only=True)
    config = load_config(env={}, db_url=db_url)
    for lean in (True, False):
        runs = logical_run_frame(engine, config.project(), RunFilter(REPO), lean=lean)
        jobs = logical_job_frame(engine, config.project(), RunFilter(REPO), runs, lean=lean)
        with monkeypatch.context() as raw:
            raw.setattr(derived, "is_current", lambda *args, **kwargs: False)
            raw_runs = logical_run_frame(engine, config.project(), RunFilter(REPO), lean=lean)
            raw_jobs = logical_job_frame(
                engine, config.project(), RunFilter(REPO), raw_runs, lean=lean
            )
        for got, expected, keys in (
            (runs, raw_runs, ["run_id"]),
            (jobs, raw_jobs, ["run_id", "logical_job"]),
        ):
            assert list(got.columns) == list(expected.columns)
            got = got.sort_values(keys).reset_index(drop=True)
            expected = expected.sort_values(keys).reset_index(drop=True)
            assert got.equals(expected) or got.compare(expected).empty
    engine.dispose()


def test_a_fresh_collect_leaves_nothing_to_rebuild(collected_db):
    db_url = collected_db().url
    engine = make_engine(db_url, read_only=True)
    assert derived.is_current(engine, REPO, _strip(db_url))
    assert derived.differences(engine, REPO, _project(db_url)) == {}
    with engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(LogicalRun)) > 0
    engine.dispose()


def test_whether_the_tables_are_current_is_one_statement(collected_db):
    """Every report table asks it (reports.table_inputs.shared_counts): the states and
    whether a run of the repository is pending come in one statement, one round trip on
    PostgreSQL; a pending run still makes the tables not current."""
    db_url = collected_db().url
    engine = make_engine(db_url)
    statements: list[str] = []
    event.listen(engine, "before_cursor_execute", lambda *args: statements.append(args[2]))
    assert derived.is_current(engine, REPO, _strip(db_url))
    assert len(statements) == 1
    with engine.begin() as conn:
        run_id = conn.scalar(select(LogicalRun.run_id).limit(1))
        conn.execute(insert(DerivedPending).values(run_id=run_id, repo=REPO))
    assert not derived.is_current(engine, REPO, _strip(db_url))
    made = store_derived.is_current(
        engine, REPO, derived.VERSION, _strip(db_url), ignore_pending=True
    )
    assert made, "made by this version: only the pending run stands in the way"
    engine.dispose()


def test_rebuild_check_exits_1_without_writing(collected_db):
    db_url = collected_db().url
    engine = make_engine(db_url)
    with Session(engine) as session, session.begin():
        session.execute(delete(LogicalJob))
    result = CliRunner().invoke(cli, ["--db", db_url, "db", "rebuild", "--check"])
    assert result.exit_code == 1 and "logical_jobs" in result.output
    with engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(LogicalJob)) == 0
    engine.dispose()


def test_the_collector_loads_pandas_only_to_recompute() -> None:
    """A collect that stores nothing new keeps its memory small: pandas (about 80 MB) is loaded
    only to recompute derived rows (collector.sync_batch), never by importing the collector."""
    probe = "import sys, collector.once, collector.sync; print('pandas' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False", done.stderr


LEAN_PROBE = """
import json, sys
from collector import lazy
from store.engine import make_engine
from store.incidents import load_incidents
lazy.lean_pandas()  # as ciflake collect does
derived = lazy.derived()
engine = make_engine(sys.argv[1], read_only=True)
ids = derived.derived.run_ids(engine, "verl-project/verl")
runs, jobs = derived.compute(engine, ids, sys.argv[2])
print(json.dumps([derived._records(runs), derived._records(jobs)], default=str))
print("pyarrow" in sys.modules and sys.modules["pyarrow"] is not None)
"""


def test_the_collector_computes_without_pyarrow_the_same_rows(tmp_path) -> None:
    """The collector's pandas leaves pyarrow out (collector.lazy, 34 MB of a nightly's peak):
    the derived rows it computes so are those a process with pyarrow computes."""
    url = collected_copy(tmp_path)
    strip = load_config(env={}, db_url=url).job_name_strip
    done = subprocess.run(
        [sys.executable, "-c", LEAN_PROBE, url, strip],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    rows, loaded = done.stdout.strip().rsplit("\n", 1)
    assert loaded == "False", "the collector's pandas loaded pyarrow"
    engine = make_engine(url, read_only=True)
    runs, jobs = derived.compute(engine, derived.derived.run_ids(engine, REPO), strip)
    engine.dispose()
    expected = [derived._records(runs), derived._records(jobs)]
    assert len(expected[1]) > 100
    assert json.loads(rows) == json.loads(json.dumps(expected, default=str))


def test_a_process_that_has_pyarrow_keeps_it() -> None:
    probe = "import pandas, sys; from collector import lazy; lazy.lean_pandas(); import pyarrow"
    subprocess.run([sys.executable, "-c", probe], cwd=ROOT, check=True)


def test_a_collect_called_as_a_library_leaves_pyarrow_importable() -> None:
    """The demo and the tests collect in a process that draws a dashboard later: only the
    collect-only commands make pandas lean."""
    probe = "from collector import lazy; lazy.derived(); import streamlit, pyarrow"
    subprocess.run([sys.executable, "-c", probe], cwd=ROOT, check=True)


@pytest.mark.parametrize("command", [["collect", "--once"], ["schedule"]])
def test_the_collect_only_commands_make_pandas_lean(command, tmp_path, monkeypatch) -> None:
    asked: list[str] = []
    monkeypatch.setattr(lazy, "lean_pandas", lambda: asked.append("lean"))
    monkeypatch.setattr("ciflake.collect_loop.run_collect", lambda *a, **k: asked.append("run"))
    monkeypatch.setattr("ciflake.schedule.run_schedule", lambda *a, **k: asked.append("run"))
    url = f"sqlite:///{tmp_path / 'ciflake.db'}"
    result = CliRunner().invoke(cli, ["--db", url, *command])
    assert result.exit_code == 0, result.output
    assert asked == ["lean", "run"]


def _made_up_incident(conn) -> None:
    """``REPO``'s incidents become one that no detection finds, holding one stored failure."""
    from datetime import UTC, datetime

    from store import incidents

    failure = conn.execute(select(Failure.run_id, Failure.run_attempt, Failure.job_id)).first()
    assert failure is not None
    at = datetime(2026, 8, 14, 13, tzinfo=UTC)
    row = {
        "id": "x" * 32,
        "repo": REPO,
        "kind": "signature",
        "category": "network",
        "signature": "s",
        "runner": None,
        "label": "made up",
        "started_at": at,
        "ended_at": at,
        "jobs": 1,
        "runs": 1,
        "workflows": 1,
    }
    incidents.replace(conn, REPO, [row], [dict(failure._mapping, incident_id=row["id"])])


def test_rebuild_check_compares_the_incidents_and_rebuild_mends_them(collected_db, runner):
    """A stored incident that a fresh detection does not find (and its failure) shows in
    ``db rebuild --check``; ``db rebuild`` puts back what the detection finds."""
    from store import incidents

    db_url = collected_db().url
    engine = make_engine(db_url)
    fresh = derived.incidents(engine, REPO, _project(db_url).analysis.incidents)
    with engine.begin() as conn:
        _made_up_incident(conn)
    check = ["--db", db_url, "db", "rebuild", "--check"]
    bad = runner.invoke(cli, check)
    assert bad.exit_code == 1, bad.output
    assert "incidents 1 rows" in bad.output and "incident_failures 1 rows" in bad.output
    assert runner.invoke(cli, ["--db", db_url, "db", "rebuild"]).exit_code == 0
    assert derived.differences(engine, REPO, _project(db_url)) == {}
    assert len(incidents.load_incidents(engine, REPO)) == len(fresh[0])
    engine.dispose()


def test_other_incident_settings_find_the_incidents_again_without_a_rebuild(collected_db):
    """The incidents follow the configured settings: a collect (``ensure_current``) finds
    them again under new ones, and leaves the logical tables as they are."""
    db_url = collected_db().url
    engine = make_engine(db_url)
    project = _project(db_url)
    assert derived.is_whole(engine, REPO, project)
    loose = replace(
        project.analysis.incidents, min_jobs=2, min_runs=2, min_workflows=1, min_share=0.0
    )
    looser = replace(project, analysis=replace(project.analysis, incidents=loose))
    assert not derived.is_whole(engine, REPO, looser)
    assert derived.is_current(engine, REPO, looser.job_name_strip)  # readers keep the tables
    before = len(load_incidents(engine, REPO))
    assert derived.ensure_current(engine, REPO, looser) is False  # no rebuild
    assert derived.is_whole(engine, REPO, looser) and not derived.is_whole(engine, REPO, project)
    assert len(load_incidents(engine, REPO)) > before
    assert derived.differences(engine, REPO, looser) == {}
    engine.dispose()


def _noting_incident_finds(monkeypatch, events: list[str]) -> None:
    """ "incidents" added to ``events`` each time ``analytics.derived`` finds them."""
    refresh = derived.refresh_incidents

    def noted(conn, repo, settings, run_ids=None):
        events.append("incidents")
        refresh(conn, repo, settings, run_ids)

    monkeypatch.setattr(derived, "refresh_incidents", noted)


def test_a_batch_flush_leaves_the_incidents_waiting_and_the_next_start_finds_them(
    collected_db, monkeypatch
):
    """A collect's batch recomputes its pending runs without the incidents, which read every
    failure of the repository: it marks them waiting, in the same transaction. Killed there,
    the database says so (``db rebuild --check`` leaves them out, the collector's next start
    finds them); readers keep the logical tables meanwhile."""
    from store import derived as derived_rows

    db_url = collected_db().url
    engine = make_engine(db_url)
    project = _project(db_url)
    ids = derived_rows.run_ids(engine, REPO)[:50]
    found: list[str] = []
    _noting_incident_finds(monkeypatch, found)
    with engine.begin() as conn:
        derived_rows.mark_pending(conn, REPO, ids)
        assert derived.flush(conn, REPO, project, incidents=False) == len(ids)
        _made_up_incident(conn)  # as if the batch's runs had changed the incidents
    assert found == []
    assert derived_rows.incidents_waiting(engine, REPO)
    assert derived.is_current(engine, REPO, project.job_name_strip)
    assert not derived.is_whole(engine, REPO, project)
    assert derived.differences(engine, REPO, project) == {}  # the incidents are left out
    assert derived.ensure_current(engine, REPO, project) is False  # the next collect's start
    assert found == ["incidents"]
    assert derived.is_whole(engine, REPO, project)
    assert "made up" not in set(load_incidents(engine, REPO)["label"])
    assert derived.differences(engine, REPO, project) == {}
    engine.dispose()


def test_a_collect_finds_the_incidents_once_at_its_end(db_url, monkeypatch):
    """Every batch that brings ``FLUSH_RUNS`` pending runs recomputes them; the incidents are
    found once, by the collect's last flush, which leaves nothing waiting (and once before, by
    the rebuild that starts a new database's first collect)."""
    from datetime import UTC, datetime

    from store import derived as derived_rows
    from tests.support.collected import DEFAULT
    from tests.support.hubtools import collect

    monkeypatch.setattr(derived_rows, "FLUSH_RUNS", 5)
    events: list[str] = []
    flush = derived.flush

    def flushed(conn, repo, project, *, incidents=True):
        events.append("last flush" if incidents else "batch flush")
        return flush(conn, repo, project, incidents=incidents)

    monkeypatch.setattr(derived, "flush", flushed)
    _noting_incident_finds(monkeypatch, events)
    with DEFAULT.hub() as hub:
        report = collect(hub, db_url, since=datetime(2026, 11, 9, tzinfo=UTC))
    assert report.runs_new > 10 and not report.stopped
    batches = events.count("batch flush")
    assert batches > 1
    assert events == ["incidents", *["batch flush"] * batches, "last flush", "incidents"]
    engine = make_engine(db_url)
    assert derived.is_whole(engine, REPO, _project(db_url))
    assert derived.differences(engine, REPO, _project(db_url)) == {}
    engine.dispose()


def test_a_collect_finds_again_only_the_incidents_its_runs_can_change(
    demo_db, tmp_path, monkeypatch
):
    """The collect's last flush finds the incidents again only in the spans its pending runs
    can change (analytics.incidents.affected_spans): an incident whose failures go, then come
    back, goes and comes back, and what is stored is a detection over every failure (the demo's
    incidents and their failures), from a tenth of the failures at most."""
    import sqlite3

    from sqlalchemy import insert

    from store import derived as derived_rows
    from store import incidents as incident_rows
    from store.models import IncidentFailure

    url = f"sqlite:///{tmp_path / 'demo.db'}"
    with (
        sqlite3.connect(demo_db.removeprefix("sqlite:///")) as source,
        sqlite3.connect(tmp_path / "demo.db") as copy,
    ):
        source.backup(copy)
    engine = make_engine(url)
    project = load_config(env={}, db_url=url).project(REPO)
    before = load_incidents(engine, REPO)
    read: list[int] = []
    failures = incident_rows.incident_failures
    monkeypatch.setattr(
        incident_rows,
        "incident_failures",
        lambda *a: read.append(len(frame := failures(*a))) or frame,
    )
    incident = before.iloc[len(before) // 2]["id"]
    with engine.connect() as conn:
        runs = sorted(
            set(
                conn.scalars(
                    select(IncidentFailure.run_id).where(IncidentFailure.incident_id == incident)
                )
            )
        )
        rows = [
            dict(r._mapping) for r in conn.execute(select(Failure).where(Failure.run_id.in_(runs)))
        ]

    everything = len(incident_rows.failure_starts(engine, REPO))

    def collected(change) -> pd.DataFrame:
        with engine.begin() as conn:
            change(conn)
            derived_rows.mark_pending(conn, REPO, runs)
            read.clear()
            assert derived.flush(conn, REPO, project) == len(runs)
        assert read and max(read) < everything / 10, (read, everything)
        fresh, members = derived.incidents(engine, REPO, project.analysis.incidents)
        stored = load_incidents(engine, REPO)
        pd.testing.assert_frame_equal(stored, fresh, check_dtype=False)
        kept = incident_rows.load_members(engine, RunFilter(repo=REPO))
        assert derived._rows(kept) == derived._rows(members)
        return stored

    gone = collected(lambda conn: conn.execute(delete(Failure).where(Failure.run_id.in_(runs))))
    assert incident not in set(gone["id"]) and len(gone) >= len(before) - 1
    back = collected(lambda conn: conn.execute(insert(Failure), rows))
    pd.testing.assert_frame_equal(back, before)
    engine.dispose()
