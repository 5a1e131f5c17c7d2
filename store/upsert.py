"""One upsert helper for SQLite and PostgreSQL: insert rows, or update them where the key exists.

SQLAlchemy has no backend-neutral upsert; both dialects offer ``ON CONFLICT DO UPDATE`` with the
same shape, so one function covers both.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, Insert, Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from store.models import Base

BATCH_SIZE = 5_000


def _batches(rows: Sequence[Mapping[str, Any]], size: int) -> Iterable[Sequence[Mapping[str, Any]]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def upsert(
    bind: Session | Connection,
    model: type[Base],
    rows: Sequence[Mapping[str, Any]],
    *,
    update: Sequence[str] | None = None,
) -> int:
    """Insert ``rows`` into ``model``'s table keyed by its primary key; existing rows get the
    columns in ``update`` (default: every non-key column given) overwritten. Returns the row
    count. Every row must carry the same keys."""
    if not rows:
        return 0
    table = model.__table__
    keys = tuple(c.name for c in table.primary_key.columns)
    given = rows[0].keys()
    columns = tuple(c for c in (update if update is not None else given) if c not in keys)
    # Core on the session's connection: the ORM's bulk layer adds nothing here but time
    connection = bind.connection() if isinstance(bind, Session) else bind
    stmt = _statement(connection.dialect.name, table, keys, columns)
    for batch in _batches(rows, BATCH_SIZE):
        connection.execute(stmt, list(batch))  # one prepared statement, executemany
    return len(rows)


@functools.cache
def _statement(
    dialect: str, table: Table, keys: tuple[str, ...], columns: tuple[str, ...]
) -> Insert:
    """The upsert of ``columns`` into ``table``, built once per shape: a collect runs the same
    few thousands of times."""
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    stmt = insert(table)
    if not columns:
        return stmt.on_conflict_do_nothing(index_elements=list(keys))
    return stmt.on_conflict_do_update(
        index_elements=list(keys), set_={c: stmt.excluded[c] for c in columns}
    )
