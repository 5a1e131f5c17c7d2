"""``ciflake events``: list and add the dated CI changes every chart draws.

Registered on the ``ciflake`` group through ``ciflake.cli.LAZY_COMMANDS``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

import click

from store.vocabulary import EVENT_KINDS

if TYPE_CHECKING:
    from ciflake.cli import State


@click.group()
def events() -> None:
    """Dated CI changes (migrations, fixes, config and image changes) drawn on every chart."""


REPO_HELP = "A configured repository (default: the only one configured)."


@events.command("list")
@click.option("--repo", metavar="OWNER/NAME", help=REPO_HELP)
@click.pass_obj
def events_list(state: State, repo: str | None) -> None:
    """List a repository's change events: those of the config file and those added or
    detected."""
    from rich.console import Console
    from rich.table import Table

    from store.events import all_events

    rows = all_events(state.config.project(repo), state.engine() if _db_exists(state) else None)
    table = Table("date (UTC)", "PR", "kind", "source", "title", box=None, pad_edge=False)
    for event in rows:
        table.add_row(
            event.date.strftime("%Y-%m-%d %H:%M"),
            f"#{event.pr}" if event.pr else "",
            event.kind,
            event.source,
            event.title,
        )
    Console(width=200).print(table)


@events.command("add")
@click.argument("date")
@click.argument("title")
@click.option("--pr", type=int, help="The pull request that made the change.")
@click.option("--kind", type=click.Choice(EVENT_KINDS), default="config", show_default=True)
@click.option("--repo", metavar="OWNER/NAME", help=REPO_HELP)
@click.pass_obj
def events_add(
    state: State, date: str, title: str, pr: int | None, kind: str, repo: str | None
) -> None:
    """Record a change event on DATE (YYYY-MM-DD or ISO-8601 UTC) with a TITLE."""
    from store.events import add_event
    from store.settings import ConfigError, parse_datetime

    project = state.config.project(repo)
    when = parse_datetime(date, "DATE")
    if when > datetime.now(UTC):
        raise ConfigError(f"DATE {date!r} is in the future")
    created = add_event(state.migrated_engine(), project.repo, when, title, pr, kind)
    click.echo(("added" if created else "already recorded") + f": {when:%Y-%m-%d} {title}")


def _db_exists(state: State) -> bool:
    from sqlalchemy.exc import OperationalError

    from store.engine import DatabaseURLError
    from store.migrate import current_revision

    try:
        return current_revision(state.engine(read_only=True)) is not None
    except (DatabaseURLError, OperationalError):
        return False
