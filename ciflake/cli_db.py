"""``ciflake db`` and ``ciflake config``: the database schema and the effective configuration.

Housekeeping groups, registered on the ``ciflake`` group through ``ciflake.cli.LAZY_COMMANDS``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from ciflake.cli import State


@click.group()
def db() -> None:
    """Database schema management."""


@db.command("upgrade")
@click.pass_obj
def db_upgrade(state: State) -> None:
    """Migrate the database to the newest schema, then fill the derived tables of any
    repository whose tables are missing or were made by another version or job-name rule
    (safe to run again: then it does nothing)."""
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
    _rebuild(state, engine, only_stale=True)


@db.command("rebuild")
@click.option(
    "--check",
    is_flag=True,
    help="Compare the derived tables with a fresh computation (and the rollups with a count "
    "of the stored rows) and change nothing; exit status 1 when they differ.",
)
@click.pass_obj
def db_rebuild(state: State, check: bool) -> None:
    """Recompute the derived tables (logical runs and jobs, incidents, the rollups) from the
    stored runs, jobs and failures, then check them against a fresh computation. The collector
    keeps them
    current; run this after editing a repository's `job_name_strip` (the dashboard reads the
    raw rows, more slowly, until then) or its `incident_*` settings, or to verify a database."""
    from analytics import derived
    from store.migrate import current_revision, head_revision

    engine = state.engine() if check else state.migrated_engine()
    if check and (at := current_revision(engine)) != head_revision():
        raise click.ClickException(
            f"the schema is at {at or 'nothing'}, this version needs {head_revision()}: "
            "run `ciflake db upgrade` first"
        )
    if not check:
        _rebuild(state, engine, only_stale=False)
    found = {
        repo: derived.differences(engine, repo, state.config.project_for(repo))
        for repo in _repositories(engine)
    }
    bad = {repo: diff for repo, diff in found.items() if diff}
    for repo, diff in bad.items():
        rows = ", ".join(f"{table} {count} rows" for table, count in diff.items())
        click.echo(f"{repo}: derived tables differ from a fresh computation: {rows}")
    if bad:
        raise SystemExit(1)
    click.echo(f"derived tables match a fresh computation ({len(found)} repositories)")


def _repositories(engine: Engine) -> list[str]:
    from store.derived import repositories

    return repositories(engine)


def _rebuild(state: State, engine: Engine, *, only_stale: bool) -> None:
    """Rebuild each repository's derived tables (``only_stale``: those not current), with a
    progress bar over its runs."""
    from functools import partial

    from rich.progress import Progress

    from analytics import derived
    from store.derived import run_ids

    for repo in _repositories(engine):
        project = state.config.project_for(repo)
        if only_stale and derived.is_whole(engine, repo, project):
            continue
        total = len(run_ids(engine, repo))
        with Progress(transient=True) as progress:
            task = progress.add_task(f"derived tables of {repo}", total=total)
            runs = derived.rebuild(engine, repo, project, partial(progress.advance, task))
        click.echo(f"{repo}: derived tables rebuilt from {runs} runs")


@db.command("stats")
@click.option(
    "--runs",
    "runs_only",
    is_flag=True,
    help="Print only how many workflow runs the database holds (one number, for scripts).",
)
@click.pass_obj
def db_stats(state: State, runs_only: bool) -> None:
    """Print how many rows each table holds, then every resource GitHub refused that later
    collects ask for again (pending) or no longer ask for (given up)."""
    from rich.console import Console
    from rich.table import Table

    from collector.sync_report import describe_refusal
    from store import retries
    from store.page_queries import stored_runs, table_counts

    engine = state.engine(read_only=True)
    if runs_only:
        click.echo(stored_runs(engine))
        return
    table = Table("table", "rows", box=None, pad_edge=False)
    for name, count in table_counts(engine).items():
        table.add_row(name, str(count))
    Console().print(table)
    refused = retries.listed(engine)
    click.echo(f"refused by GitHub: {len(refused) or 'nothing'}")
    for row in refused:
        click.echo(f"  {row.repo}: {describe_refusal(row)}")


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
