"""What the Migrations page's tables read (#49): a table's build asks whether the derived tables
are current and reads the data stamp once (reports.table_inputs.one_state), and the change
events are read once for the page's six tables (their memo is keyed on the data stamp, which
counts the stored events), not again by each table."""

from __future__ import annotations

import re
from typing import Any

import pytest
from sqlalchemy import event

from reports import table_inputs
from reports.query import Query
from reports.tables import build
from store.engine import make_engine
from store.settings import load_config

PAGE = (
    "before-after",
    "migration-answers",
    "basis-mix",
    "first-runs",
    "coverage-lost",
    "category-shift",
)


def _reads(statements: list[str], start: str) -> int:
    """The statements that begin with ``start`` (the stamp's reads other tables too)."""
    return sum(bool(re.match(re.escape(start), s.strip())) for s in statements)


def test_the_pages_tables_read_the_state_once_each_and_the_events_once(
    demo_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = make_engine(demo_db, read_only=True)
    project = load_config(env={}, db_url=demo_db).project()
    monkeypatch.setattr(table_inputs, "_COUNTS", {})
    statements: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        statements.append(statement)

    event.listen(engine, "before_cursor_execute", seen)
    built = {name: build(engine, project, name, Query()) for name in PAGE}
    event.remove(engine, "before_cursor_execute", seen)
    assert len(built["before-after"]) and len(built["migration-answers"])
    assert _reads(statements, "SELECT change_events.id") == 1
    # one state and one data stamp (its first scalar: the last collect) per table's build
    assert _reads(statements, "SELECT derived_state.repo") == len(PAGE)
    assert _reads(statements, "SELECT (SELECT max(sync_log.id)") == len(PAGE)
    again = {name: build(engine, project, name, Query()) for name in PAGE}
    for name in PAGE:  # the memo's frames give the same tables
        assert built[name].equals(again[name])
    engine.dispose()
