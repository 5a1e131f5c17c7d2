"""The rollups (store.rollups): the counts a page reads per scope key and day. Each reader that
uses them answers what it answers from the logical jobs and runs themselves, row for row, on
both backends; a collect and an incident change keep them equal to a GROUP BY of the stored
rows, and ``differences`` notices when they are not; a time inside a day reads the derived
tables; migration 0016 makes and drops them."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

import pandas as pd
from alembic import command
from sqlalchemy import event, func, insert, inspect, select, update

from analytics import derived
from ciflake.cli import cli
from store import incidents, rollups
from store.engine import make_engine
from store.job_counts import job_counts, runner_counts
from store.migrate import alembic_config, head_revision, upgrade
from store.migration_counts import job_segments
from store.models import RollupJob, RollupRun, WorkflowRun
from store.overview_counts import run_counts
from store.page_queries import daily_job_presence, failure_details
from store.runfilter import RunFilter
from store.settings import load_config

REPO = "verl-project/verl"
SINCE, UNTIL = datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 9, 1, tzinfo=UTC)
# a cut inside a day, one at a midnight, one inside the last day
CUTS = [
    datetime(2026, 2, 10, 5, 30, tzinfo=UTC),
    datetime(2026, 6, 3, 12, tzinfo=UTC),
    datetime(2026, 8, 12, tzinfo=UTC),
    datetime(2026, 10, 1, 23, 59, tzinfo=UTC),
]
PER_JOB = ["workflow_path", "logical_job", "logical_outcome", "incident_id"]
TABLES = ("rollup_jobs", "rollup_job_outcomes", "rollup_runs", "rollup_job_names")


def _filters(engine) -> list[RunFilter]:
    with engine.connect() as conn:
        path = conn.scalar(select(WorkflowRun.workflow_path).order_by(WorkflowRun.id).limit(1))
    return [
        RunFilter(REPO),
        RunFilter(REPO, SINCE, UNTIL, events=("push", "schedule"), branch="main"),
        RunFilter(REPO, since=SINCE, paths=(path,)),
    ]


# each reader, and the rollup it reads for whole days
READERS = {
    "job counts": (lambda engine, where: job_counts(engine, where), "rollup_jobs"),
    "per job": (lambda engine, where: job_counts(engine, where, PER_JOB), "rollup_job_outcomes"),
    "runner counts": (lambda engine, where: runner_counts(engine, where, 3, []), "rollup_jobs"),
    "run counts": (
        lambda engine, where: run_counts(
            engine, RunFilter(REPO, branch=where.branch), SINCE, UNTIL
        ),
        "rollup_runs",
    ),
    "presence": (
        lambda engine, where: daily_job_presence(engine, where, rolled=True),
        "rollup_job_names",
    ),
    "job segments": (
        lambda engine, where: job_segments(engine, replace(where, since=None, until=None), CUTS),
        "rollup_job_outcomes",
    ),
}


def _reads(engine, where: RunFilter, seen: list[str]) -> dict[str, tuple[pd.DataFrame, str]]:
    """Each reader's answer for ``where`` and the text of the statements it ran."""
    found = {}
    for name, (read, _) in READERS.items():
        seen.clear()
        found[name] = (read(engine, where), " ".join(seen))
    return found


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    keys = [str(column) for column in frame.columns]
    text = frame.astype(str)
    return frame.loc[text.sort_values(keys).index].reset_index(drop=True)


def _statements(engine) -> list[str]:
    seen: list[str] = []
    event.listen(engine, "before_cursor_execute", lambda *args: seen.append(args[2]))
    return seen


def test_each_reader_answers_from_the_rollups_what_the_derived_tables_answer(
    collected_db, monkeypatch
):
    engine = make_engine(collected_db().url)
    seen = _statements(engine)
    for where in _filters(engine):
        rolled = _reads(engine, where, seen)
        with monkeypatch.context() as patch:
            patch.setattr(rollups, "covers", lambda _where: False)
            derived = _reads(engine, where, seen)
        for name, (frame, statements) in rolled.items():
            assert READERS[name][1] in statements, name
            assert not any(table in derived[name][1] for table in TABLES), name
            assert len(frame), name
            pd.testing.assert_frame_equal(_sorted(frame), _sorted(derived[name][0]), obj=name)


def test_a_time_inside_a_day_or_a_list_of_runs_reads_the_derived_tables():
    assert rollups.covers(RunFilter(REPO, SINCE, UNTIL))
    assert rollups.covers(RunFilter(REPO))
    assert not rollups.covers(RunFilter(REPO, datetime(2026, 3, 1, 12, tzinfo=UTC)))
    assert not rollups.covers(RunFilter(REPO, until=datetime(2026, 3, 1, 0, 0, 1, tzinfo=UTC)))
    assert not rollups.covers(RunFilter(REPO, run_ids=(1, 2)))
    assert rollups.covers(RunFilter(REPO, datetime(2026, 3, 1)))  # naive: UTC, as stored
    far_east = timezone(timedelta(hours=8))
    assert not rollups.covers(RunFilter(REPO, datetime(2026, 3, 1, tzinfo=far_east)))
    assert rollups.covers(RunFilter(REPO, datetime(2026, 3, 1, 8, tzinfo=far_east)))


def test_a_collect_keeps_the_rollups_equal_to_a_group_by_of_the_stored_rows(collected_db):
    engine = make_engine(collected_db().url)
    with engine.connect() as conn:
        assert all(conn.scalar(select(model.id).limit(1)) for model in (RollupJob, RollupRun))
    assert rollups.differences(engine, REPO) == {}
    with engine.begin() as conn:  # a count gone wrong shows
        first = conn.scalar(select(RollupRun.id).limit(1))
        conn.execute(update(RollupRun).where(RollupRun.id == first).values(runs=RollupRun.runs + 1))
    assert rollups.differences(engine, REPO) == {"rollup_runs": 2}
    with engine.begin() as conn:
        rollups.rebuild(conn, REPO)
    assert rollups.differences(engine, REPO) == {}
    with engine.begin() as conn:  # and so does a row counted twice
        columns = [c for c in RollupJob.__table__.columns if c.name != "id"]
        twice = select(*columns).where(RollupJob.id == conn.scalar(select(RollupJob.id).limit(1)))
        conn.execute(insert(RollupJob).from_select([c.name for c in columns], twice))
    assert rollups.differences(engine, REPO) == {"rollup_jobs": 1}


def test_replacing_the_incidents_counts_their_runs_days_again(collected_db):
    engine = make_engine(collected_db().url)
    failed = failure_details(engine, RunFilter(REPO)).sort_values("created_at").head(6)
    row = {
        "id": "test-hub",
        "repo": REPO,
        "kind": "signature",
        "category": str(failed["category"].iloc[0]),
        "signature": None,
        "runner": None,
        "label": "HF Hub 503 (test)",
        "started_at": failed["created_at"].min().to_pydatetime(),
        "ended_at": failed["created_at"].max().to_pydatetime(),
        "jobs": len(failed),
        "runs": failed["run_id"].nunique(),
        "workflows": failed["workflow_path"].nunique(),
    }
    members = failed[["run_id", "run_attempt", "job_id"]].assign(incident_id=row["id"])
    held = select(func.count()).where(RollupRun.incident_id == row["id"])
    with engine.begin() as conn:
        incidents.replace(conn, REPO, [row], members.to_dict("records"))
    assert rollups.differences(engine, REPO) == {}
    with engine.connect() as conn:
        assert conn.scalar(held) >= 1  # the red runs of the incident count under it
    with engine.begin() as conn:
        incidents.replace(conn, REPO, [], [])  # every incident of the repository gone
    assert rollups.differences(engine, REPO) == {}
    with engine.connect() as conn:
        assert conn.scalar(held) == 0


def _tables(db_url: str) -> set[str]:
    engine = make_engine(db_url)
    found = set(inspect(engine).get_table_names())
    engine.dispose()
    return found & set(TABLES)


def test_migration_0016_makes_the_rollups_and_takes_them_back(collected_db):
    """Made again empty under derived tables of this version, they are not current: readers
    use the raw rows until a rebuild fills them."""
    db_url = collected_db().url
    engine = make_engine(db_url)
    strip = load_config(env={}, db_url=db_url).project().job_name_strip
    assert derived.is_current(engine, REPO, strip)
    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "0015")
    assert _tables(db_url) == set()
    upgrade(engine)
    assert _tables(db_url) == set(TABLES)
    assert not derived.is_current(engine, REPO, strip)
    engine.dispose()


def test_checking_a_database_of_an_older_schema_asks_for_the_upgrade(db_url, runner):
    engine = make_engine(db_url)
    with engine.begin() as conn:
        command.upgrade(alembic_config(conn), "0015")
    engine.dispose()
    result = runner.invoke(cli, ["--db", db_url, "db", "rebuild", "--check"])
    assert result.exit_code == 1
    assert f"the schema is at 0015, this version needs {head_revision()}" in result.output
    assert "ciflake db upgrade" in result.output
