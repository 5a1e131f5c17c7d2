"""Run the Alembic migrations shipped in the ``migrations`` package, from code."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine

# The ``migrations`` package is Alembic's script directory, found without importing it: it
# imports ``store`` (the models), and ``store`` imports nothing above itself.
_MIGRATIONS = importlib.util.find_spec("migrations")
if _MIGRATIONS is None or _MIGRATIONS.origin is None:
    raise ImportError("the migrations package is not installed next to store")
SCRIPT_LOCATION = str(Path(_MIGRATIONS.origin).parent)


def alembic_config(connection: Connection | None = None) -> Config:
    """An Alembic config that needs no ini file, so an installed package can migrate."""
    cfg = Config()
    cfg.set_main_option("script_location", SCRIPT_LOCATION)
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def head_revision() -> str:
    heads = ScriptDirectory.from_config(alembic_config()).get_heads()
    return heads[0]


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


@contextmanager
def _transaction(engine: Engine) -> Iterator[Connection]:
    """A connection in one transaction that holds the DDL too. Python's sqlite3 (before 3.12)
    opens transactions only for INSERT, UPDATE and DELETE and runs each CREATE or ALTER on its
    own, so a collect killed while migrating left half a schema without its version row, and
    every later upgrade failed on "table already exists". On SQLite the driver's implicit
    transactions are turned off for the migration and one BEGIN covers it all."""
    with engine.connect() as conn:
        if engine.dialect.name != "sqlite":
            with conn.begin():
                yield conn
            return
        raw = conn.connection.dbapi_connection
        if raw is None:
            raise RuntimeError("a checked-out connection without its DBAPI connection")
        implicit = raw.isolation_level
        raw.isolation_level = None
        try:
            with conn.begin():
                conn.exec_driver_sql("BEGIN")
                yield conn
        finally:
            raw.isolation_level = implicit


def upgrade(engine: Engine, revision: str = "head") -> None:
    with _transaction(engine) as conn:
        command.upgrade(alembic_config(conn), revision)


def downgrade(engine: Engine, revision: str) -> None:
    with _transaction(engine) as conn:
        command.downgrade(alembic_config(conn), revision)
