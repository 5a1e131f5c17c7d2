"""One upsert helper for SQLite and PostgreSQL: insert rows, or update them where the key exists.

SQLAlchemy has no backend-neutral upsert; both dialects offer ``ON CONFLICT DO UPDATE`` with the
same shape, so one function covers both.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection
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
    keys = [c.name for c in table.primary_key.columns]
    given = list(rows[0].keys())
    columns = [c for c in (update if update is not None else given) if c not in keys]
    # Core on the session's connection: the ORM's bulk layer adds nothing here but time
    connection = bind.connection() if isinstance(bind, Session) else bind
    dialect = connection.dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    stmt = insert(table)
    if columns:
        stmt = stmt.on_conflict_do_update(
            index_elements=keys, set_={c: stmt.excluded[c] for c in columns}
        )
    else:
        stmt = stmt.on_conflict_do_nothing(index_elements=keys)
    for batch in _batches(rows, BATCH_SIZE):
        connection.execute(stmt, list(batch))  # one prepared statement, executemany
    return len(rows)
