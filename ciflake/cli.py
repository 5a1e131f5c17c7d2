"""The ``ciflake`` command line: one click group, thin commands that delegate to the layers.

This module holds the group, its per-invocation ``State`` and the handling of the errors a user
can cause; the commands live in ``ciflake.cli_*`` (and ``ciflake.classify_command``,
``fakehub.cli``), loaded through ``LAZY_COMMANDS`` when named. Heavy modules (SQLAlchemy, rich,
fakehub) are imported by the commands that use them, so a command such as ``ciflake classify``
starts in a fraction of the time (bench.classifier).
"""

from __future__ import annotations

import importlib
import sys
from functools import cached_property
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from store.settings import Config

EXIT_USAGE = 2
# Every command, in the module that defines it, imported only when named (or listed by --help).
LAZY_COMMANDS = {
    "db": ("ciflake.cli_db", "db"),
    "config": ("ciflake.cli_db", "config_group"),
    "events": ("ciflake.cli_events", "events"),
    "collect": ("ciflake.cli_collect", "collect"),
    "reclassify": ("ciflake.cli_collect", "reclassify"),
    "doctor": ("ciflake.cli_collect", "doctor"),
    "summary": ("ciflake.cli_report", "summary"),
    "schedule": ("ciflake.cli_report", "schedule"),
    "export": ("ciflake.cli_report", "export"),
    "triage": ("ciflake.cli_triage", "triage"),
    "dashboard": ("ciflake.cli_dashboard", "dashboard"),
    "demo": ("ciflake.cli_dashboard", "demo"),
    "classify": ("ciflake.classify_command", "classify_command"),
    "fakehub": ("fakehub.cli", "fakehub_command"),
}


class State:
    """Per-invocation state: the config and the engine, built only when a command needs them."""

    def __init__(self, config_path: str | None, db_url: str | None) -> None:
        self.config_path = config_path
        self.db_url = db_url
        self.overrides: dict[str, Any] = {}

    @cached_property
    def config(self) -> Config:
        from store.settings import load_config

        return load_config(self.config_path, db_url=self.db_url, **self.overrides)

    def engine(self, *, read_only: bool = False) -> Engine:
        from store.engine import make_engine

        return make_engine(self.config.database_url, read_only=read_only)

    def migrated_engine(self) -> Engine:
        from store.migrate import upgrade

        engine = self.engine()
        upgrade(engine)
        return engine


class CiflakeGroup(click.Group):
    """Turns the errors a user can cause into one line and exit status 2, never a traceback;
    loads the LAZY_COMMANDS when they are asked for."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except Exception as exc:
            message = _user_error(ctx, exc)
            if message is None:
                raise
            _fail(message)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *LAZY_COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in LAZY_COMMANDS and cmd_name not in self.commands:
            module, name = LAZY_COMMANDS[cmd_name]
            self.add_command(getattr(importlib.import_module(module), name), cmd_name)
        return super().get_command(ctx, cmd_name)


def _user_error(ctx: click.Context, exc: Exception) -> str | None:
    """The one line for an error the user caused (bad config, database URL or database), else
    None. An exception's class was imported before it was raised, so this imports nothing: a
    command that never loaded SQLAlchemy cannot have raised its errors."""
    config, engine, sa = (
        sys.modules.get(m) for m in ("store.settings", "store.engine", "sqlalchemy.exc")
    )
    if (config and isinstance(exc, config.ConfigError)) or (
        engine and isinstance(exc, engine.DatabaseURLError)
    ):
        return str(exc)
    if sa is not None and isinstance(exc, sa.SQLAlchemyError):
        from store.engine import database_error

        return database_error(ctx.obj.config.database_url if ctx.obj else "?", exc)
    return None


def _fail(message: str) -> None:
    click.echo(f"ciflake: error: {message}", err=True)
    sys.exit(EXIT_USAGE)


@click.group(cls=CiflakeGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--config",
    "config_path",
    metavar="FILE",
    help="Config file (default: $CIFLAKE_CONFIG, else ./ciflake.toml, else the built-in "
    "verl defaults).",
)
@click.option(
    "--db",
    "db_url",
    metavar="URL",
    help="Database URL, e.g. sqlite:///ciflake.db or postgresql+psycopg://user@host/db "
    "(default: $CIFLAKE_DB_URL, else the config's [database] url).",
)
@click.version_option(package_name="ciflake")
@click.pass_context
def cli(ctx: click.Context, config_path: str | None, db_url: str | None) -> None:
    """ciflake: CI flakiness analytics for GitHub Actions.

    Collects every run, attempt, job and failed-job log of the tracked workflows, classifies
    each failure, and shows stability before and after each CI change.
    """
    ctx.obj = State(config_path, db_url)


def main() -> None:
    cli(prog_name="ciflake")
