"""Named read queries. Every SQL statement the upper layers need lives here."""

from __future__ import annotations

from sqlalchemy import Engine, func, select

from store.models import Base


def table_counts(engine: Engine) -> dict[str, int]:
    with engine.connect() as conn:
        return {
            name: conn.scalar(select(func.count()).select_from(table)) or 0
            for name, table in sorted(Base.metadata.tables.items())
        }
