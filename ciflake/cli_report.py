"""``ciflake summary``, ``schedule`` and ``export``: what the stored data is turned into.

The Markdown summary (printed or posted), the long-running schedule that collects and posts it,
and the CSV tables. Registered on the ``ciflake`` group through ``ciflake.cli.LAZY_COMMANDS``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from ciflake.cli import State

REPO_HELP = "A configured repository (default: the only one configured)."


@click.command()
@click.option(
    "--pr",
    type=int,
    metavar="N",
    help="The change event made by PR N (default: the latest migration); post on PR N.",
)
@click.option("--issue", type=int, metavar="N", help="Post on issue N instead of the PR.")
@click.option(
    "--since",
    default="24h",
    show_default=True,
    metavar="24h|7d|DATE",
    help="Runs created since then: 24h or 7d before now, or a date or time (UTC).",
)
@click.option("--post", is_flag=True, help="Create or edit the one summary comment on GitHub.")
@click.option("--repo", metavar="OWNER/NAME", help=REPO_HELP)
@click.pass_obj
def summary(
    state: State, pr: int | None, issue: int | None, since: str, post: bool, repo: str | None
) -> None:
    """Markdown about a migration: successors vs predecessors, their first runs, failures since
    --since (NEW / PERSISTENT / FLAKY / INFRA/ENV), triage (signatures new since the last
    posted summary, known issues, recurring unlinked ones, issues filed, updated, closed or
    reopened since), coverage lost, stale workflows, freshness. Without a migration event (or
    when PR N made none): the runs since --since, their failures, triage and the stale
    workflows of every tracked workflow.

    Prints it; with --post it upserts one comment (hidden marker) on the PR (--pr, else the
    repository's summary PR: its summary_pr, or [summary] pr for the single-repository form;
    else the event's PR) or on --issue. While a first collect (a backfill) goes on, the summary
    says how far it has come and what it leaves out, and is posted all the same.
    """
    from ciflake.summary import run_summary
    from store.events import all_events
    from store.settings import ConfigError

    if pr is not None and issue is not None:
        raise ConfigError("give --pr or --issue, not both")
    config, engine = state.config, state.migrated_engine()
    project = config.project(repo)
    events = all_events(project, engine)
    click.echo(
        run_summary(config, project, engine, events, pr=pr, issue=issue, since=since, post=post)
    )


@click.command()
@click.pass_obj
def schedule(state: State) -> None:
    """Long-running: collect every configured repository now and every [collect]
    interval_minutes, and each repository's summary daily at [summary] nightly_at UTC (posted
    on its summary PR with a token, else printed); one repository's failure is logged and the
    others go on.

    SIGTERM or Ctrl-C lets the running job finish, then exits 0. Logs go to stderr.
    """
    from ciflake.schedule import run_schedule
    from collector import lazy
    from store.events import all_events

    lazy.lean_pandas()  # collects and summaries: no dashboard in this process
    config, engine = state.config, state.migrated_engine()
    run_schedule(config, engine, lambda project: all_events(project, engine))


# ---- export ---------------------------------------------------------------------------------


@click.command()
@click.argument("table", metavar="TABLE")
@click.option("--out", "out_path", required=True, metavar="FILE.csv", help="File to write.")
@click.option("--since", metavar="DATE", help="Runs (or events) from this date, UTC.")
@click.option("--until", metavar="DATE", help="Runs (or events) before this date, UTC.")
@click.option(
    "--workflow",
    "workflows",
    multiple=True,
    metavar="PATH",
    help="Only this configured workflow: its path, or its file name when one configured path "
    "has it (e2e_ascend.yml); repeat for several. Anything else is refused.",
)
@click.option(
    "--scope",
    type=click.Choice(["default", "pr", "all"]),
    default="default",
    show_default=True,
    help="Default-branch runs, pull-request runs, or both (the dashboard's Scope).",
)
@click.option(
    "--category",
    metavar="C",
    help="runs, jobs, failures, categories, signatures, known-issues, "
    "incidents, verdicts, category-shift, incident-lineages: only this "
    "failure category (oom, ...).",
)
@click.option("--repo", metavar="OWNER/NAME", help=REPO_HELP)
@click.pass_obj
def export(
    state: State,
    table: str,
    out_path: str,
    since: str | None,
    until: str | None,
    workflows: tuple[str, ...],
    scope: str,
    category: str | None,
    repo: str | None,
) -> None:
    """Write TABLE as CSV with a fixed column order, the file the dashboard's Export page
    downloads for the same filters (docs/commands.md, "ciflake export").

    \b
    TABLE: runs, jobs, failures, categories, unknown-stages, failure-bases, signatures,
    known-issues, incidents, flaky-jobs, verdicts, runner-pools, runners, environments,
    repair, health, before-after, migration-answers, category-shift, basis-mix, first-runs,
    coverage-lost, status, stability, incident-lineages, job-days, changepoints,
    night-headline, night-runs, night-health, night-failures, stale, silent.

    Prints the rows written, and what the database lacks of those dates: no runs collected
    yet, or a backfill still in progress.
    """
    from datetime import UTC, datetime

    from analytics.spreadsheet import csv_bytes
    from reports.freshness import missing
    from reports.query import Query, workflow_paths
    from reports.tables import build, check_table, parse_range, write_csv

    check_table(table, category)
    start, end = parse_range(since, until)
    project = state.config.project(repo)
    query = Query(start, end, workflow_paths(project, workflows), scope, category)
    engine = state.engine(read_only=True)
    frame = build(engine, project, table, query)
    write_csv(csv_bytes(frame), out_path)
    lacking = missing(engine, project, start, end, datetime.now(UTC))
    click.echo(f"{out_path}: {len(frame)} rows" + (f"; {lacking}" if lacking else ""))
    if frame.empty:
        click.echo(f"ciflake: 0 rows: {project.repo} has none for {query.describe()}", err=True)
