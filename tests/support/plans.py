"""The query plan of a statement as a page runs it (SQLite's EXPLAIN QUERY PLAN)."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Engine, event


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
