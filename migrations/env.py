"""Alembic environment: migrations run on a connection handed in by ``store.migrate``, or on the
URL of our config when Alembic's own command line is used."""

from typing import Any

from alembic import context
from sqlalchemy import Connection, Index

from store.models import Base

target_metadata = Base.metadata


def _on_this_dialect(dialect: str):
    """Leave out of the comparison the model indexes made only on other dialects
    (``info["dialects"]``, e.g. store.models.JOB_OUTCOME_READS)."""

    def include(obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any) -> bool:
        dialects = obj.info.get("dialects") if isinstance(obj, Index) else None
        return reflected or dialects is None or dialect in dialects

    return include


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        include_object=_on_this_dialect(connection.dialect.name),
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        transaction_per_migration=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def _run_from_config() -> None:
    from store.engine import make_engine
    from store.settings import load_config

    engine = make_engine(load_config().database_url)
    with engine.begin() as connection:
        _run(connection)


connection = context.config.attributes.get("connection")
if connection is not None:
    _run(connection)
else:
    _run_from_config()
