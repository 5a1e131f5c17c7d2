"""Run the Alembic migrations shipped in the ``migrations`` package, from code."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine

import migrations

SCRIPT_LOCATION = str(Path(migrations.__file__).parent)


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


def upgrade(engine: Engine, revision: str = "head") -> None:
    with engine.begin() as conn:
        command.upgrade(alembic_config(conn), revision)


def downgrade(engine: Engine, revision: str) -> None:
    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), revision)


def is_at_head(engine: Engine) -> bool:
    return current_revision(engine) == head_revision()
