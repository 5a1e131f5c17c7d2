"""``ciflake db`` and ``ciflake config``: the database schema and the effective configuration.

Housekeeping groups, registered on the ``ciflake`` group through ``ciflake.cli.LAZY_COMMANDS``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from ciflake.cli import State


@click.group()
def db() -> None:
    """Database schema management."""


@db.command("upgrade")
@click.pass_obj
def db_upgrade(state: State) -> None:
    """Migrate the database to the newest schema (safe to run again: then it does nothing)."""
    from store.engine import safe_url
    from store.migrate import current_revision, head_revision, upgrade

    engine = state.engine()
    before = current_revision(engine)
    upgrade(engine)
    head = head_revision()
    where = safe_url(state.config.database_url)
    if before == head:
        click.echo(f"{where}: already at {head}")
    else:
        click.echo(f"{where}: migrated {before or 'empty'} -> {head}")


@db.command("stats")
@click.pass_obj
def db_stats(state: State) -> None:
    """Print how many rows each table holds and the last collect."""
    from rich.console import Console
    from rich.table import Table

    from store.page_queries import table_counts

    engine = state.engine(read_only=True)
    table = Table("table", "rows", box=None, pad_edge=False)
    for name, count in table_counts(engine).items():
        table.add_row(name, str(count))
    Console().print(table)


# ---- config ---------------------------------------------------------------------------------


@click.group("config")
def config_group() -> None:
    """Inspect the effective configuration."""


@config_group.command("show")
@click.pass_obj
def config_show(state: State) -> None:
    """Print the effective configuration (the token only as set/unset)."""
    from ciflake.config_view import render_config

    click.echo(render_config(state.config))
