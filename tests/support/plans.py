"""The query plan of a statement as a page runs it (SQLite's EXPLAIN QUERY PLAN), the scope
the plan tests read, and the round trip of a migration that adds an index on the runs."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from alembic import command
from sqlalchemy import Engine, event, inspect

from store.engine import make_engine
from store.migrate import alembic_config, upgrade
from store.runfilter import RunFilter

SCOPE = RunFilter(
    "o/r",
    datetime(2026, 1, 1, tzinfo=UTC),
    datetime(2026, 2, 1, tzinfo=UTC),
    events=("push", "schedule"),
    branch="main",
)


def query_plan(engine: Engine, read: Callable[[], object]) -> str:
    """The query plan of the one statement ``read()`` runs on ``engine`` (SQLite), explained
    with the parameters it ran with, one line per step."""
    ran: list[tuple[str, object]] = []

    def keep(conn: object, cursor: object, statement: str, parameters: object, *_: object) -> None:
        ran.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", keep)
    try:
        read()
    finally:
        event.remove(engine, "before_cursor_execute", keep)
    [(statement, parameters)] = ran
    with engine.connect() as conn:
        rows = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters).all()
    return "\n".join(row[-1] for row in rows)


def reads(plan: str) -> list[str]:
    """The plan's steps without the lines that only open a subquery (its co-routine or its
    materialization): the first is then the statement's first read."""
    return [
        step for step in plan.splitlines() if not step.startswith(("CO-ROUTINE", "MATERIALIZE"))
    ]


def assert_starts_from(plan: str, table: str) -> None:
    """The plan scans ``table`` first and reads the runs it joins only by their id: no walk
    over the runs through an index on their time."""
    steps = reads(plan)
    assert steps[0].startswith(f"SCAN {table}"), plan
    runs = [step for step in steps if "workflow_runs" in step]
    assert runs and all("sqlite_autoindex_workflow_runs_1 (id=?)" in step for step in runs), plan


def runs_indexes(url: str) -> dict[str, list[str | None]]:
    """The indexes of workflow_runs: name -> columns."""
    engine = make_engine(url)
    found = {ix["name"]: ix["column_names"] for ix in inspect(engine).get_indexes("workflow_runs")}
    engine.dispose()
    return {str(name): columns for name, columns in found.items()}


def index_round_trip(db_url: str, index: str, columns: list[str], before: str, kept: str) -> None:
    """Upgrade adds ``index`` on ``columns``; a downgrade to revision ``before`` takes it back
    and keeps ``kept`` (the index before it); upgrading again adds it again."""
    engine = make_engine(db_url)
    upgrade(engine)
    assert runs_indexes(db_url)[index] == columns
    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), before)
    down = runs_indexes(db_url)
    assert index not in down and kept in down
    upgrade(engine)
    assert runs_indexes(db_url)[index] == columns
    engine.dispose()
