"""``ciflake collect``, ``reclassify`` and ``doctor``: the commands that gather and classify.

``collect`` and ``doctor`` talk to GitHub and share the ``--repo`` and ``--api-url`` options;
``reclassify`` re-runs the rules over what a collect archived. Registered on the ``ciflake``
group through ``ciflake.cli.LAZY_COMMANDS``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from datetime import datetime

    from sqlalchemy import Engine

    from ciflake.cli import State
    from collector.doctor.estimate import Collected

T = TypeVar("T")


def _service_options(repo_help: str) -> Any:
    """--repo and --api-url, for the commands that talk to GitHub."""

    def add(command: Any) -> Any:
        command = click.option("--api-url", metavar="URL", help=API_URL_HELP)(command)
        return click.option("--repo", metavar="OWNER/NAME", help=repo_help)(command)

    return add


API_URL_HELP = (
    "GitHub API URL (default: $CIFLAKE_API_URL, else https://api.github.com; GitHub "
    "Enterprise Server: https://HOST/api/v3); a fakehub URL works the same."
)


@click.command()
@click.option("--once", is_flag=True, help="Collect once and exit (for cron and tests).")
@click.option(
    "--since",
    metavar="DATE",
    help="Backfill from DATE (default: 30 days before the earliest configured event; the "
    "last 30 days when none is configured). Later, an earlier DATE extends the backfill down "
    "to it; a later one changes nothing (the report line says so).",
)
@click.option(
    "--full",
    is_flag=True,
    help="Ignore watermarks and ETags: list and re-fetch "
    "every run and its jobs (archived logs are kept).",
)
@_service_options("Only this configured repository (default: every one, in turn).")
@click.option("--no-logs", is_flag=True, help="Do not download logs of failed jobs.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar: only the one-line report.")
@click.option(
    "--max-requests",
    type=click.IntRange(min=1),
    metavar="N",
    help="Send at most N requests that count against the rate limit, then stop cleanly with "
    "everything so far committed; the next collect goes on from there.",
)
@click.option(
    "--reserve",
    type=click.IntRange(min=0),
    metavar="N",
    help="Leave N of the token's hourly rate budget to its other users: stop cleanly when "
    "GitHub says only N are left (default: [collect] reserve, 0).",
)
@click.pass_obj
def collect(
    state: State,
    once: bool,
    since: str | None,
    full: bool,
    repo: str | None,
    api_url: str | None,
    no_logs: bool,
    quiet: bool,
    max_requests: int | None,
    reserve: int | None,
) -> None:
    """Fetch new and changed runs, jobs, annotations and failed-job logs, and classify each
    failure.

    Each failure is classified from the best evidence GitHub still keeps: the log (90 days),
    else the check-run annotations and the job's steps (400 days), else it stays unknown. A
    job GitHub calls cancelled that hit its time limit counts red (timeout). Incremental: a
    second collect with nothing new, with the same token, costs no rate limit (ETags; under a
    workflow's new GITHUB_TOKEN it costs its listings). A log, annotations or jobs page GitHub
    keeps refusing is recorded and asked again by later collects (ciflake db stats lists
    them). Without --once it collects again every [collect] interval_minutes until
    interrupted.
    """
    from ciflake.collect_loop import run_collect
    from collector import lazy
    from store.settings import parse_datetime

    lazy.lean_pandas()  # this process only collects

    state.overrides = {"api_url": api_url} if api_url else {}
    options_since = parse_datetime(since, "--since") if since else None
    config = state.config
    if reserve is not None:
        config = config.with_overrides(collect_reserve=reserve)
    run_collect(
        config,
        state.migrated_engine(),
        since=options_since,
        full=full,
        logs=not no_logs,
        quiet=quiet,
        once=once,
        max_requests=max_requests,
        projects=config.select(repo),
    )


@click.command()
@click.pass_obj
def reclassify(state: State) -> None:
    """Re-run the classification rules over the archived logs and the stored annotations (no
    download needed), each repository's own [[rules]] of the config file first."""
    from collector.reclassify import reclassify_all

    engine = state.migrated_engine()
    changed, total, versions = reclassify_all(engine, state.config.project_for)
    rules = ", ".join(versions)
    click.echo(f"reclassified {total} failures with rules {rules}: {changed} changed")


@click.command()
@click.option(
    "--since",
    metavar="DATE",
    help="Estimate the backfill from DATE (default: as collect, 30 days before the "
    "earliest configured event).",
)
@_service_options("A configured repository (default: the only one configured).")
@click.pass_obj
def doctor(state: State, since: str | None, repo: str | None, api_url: str | None) -> None:
    """Check ciflake against GitHub with about 20 requests (the count is printed), and estimate
    the first backfill.

    One line per check, ok / warn / fail with what to do: the API URL (a GitHub Enterprise
    Server URL without /api/v3 is the usual mistake), the network (HTTPS_PROXY,
    REQUESTS_CA_BUNDLE), the token and its kind (1,000/h: a workflow's GITHUB_TOKEN; 5,000/h:
    a user token), the rate budget left, the repository, each tracked workflow (by path, with
    its state and runs), one recent failed job's annotations and log, and a log older than the
    90-day retention (410: expected). Then the requests and hours of the first backfill at
    the budget found, from the listings' total_count (with a database that holds collects:
    what is left of it, or the next collect's), and what GitHub refused to earlier
    collects (each log, annotations or jobs page asked again later, or given up), and the
    tracked workflows that are SILENT in the database (disabled, their file gone, or their
    schedule not firing: docs/vocabulary.md). Exit status 1 when a check fails.
    """
    from analytics.silence import describe_silence, silent_workflows
    from collector.doctor import run_doctor
    from collector.sync import default_since
    from collector.sync_report import describe_refusal
    from store import retries
    from store.settings import parse_datetime

    state.overrides = {"api_url": api_url} if api_url else {}
    project = state.config.project(repo)
    given = parse_datetime(since, "--since") if since else None
    start = given or default_since(state.config, project)
    collected = _stored(state, lambda engine: _collected(engine, project.repo, given, start))
    status = run_doctor(state.config, project, start, click.echo, collected=collected or {})
    for row in _stored(state, lambda engine: retries.listed(engine, project.repo)) or []:
        click.echo(f"refused by GitHub: {describe_refusal(row)}")
    silent = _stored(state, lambda engine: silent_workflows(engine, project))
    for path, detail, since in (
        []
        if silent is None
        else silent[["workflow_path", "detail", "since"]].itertuples(index=False)
    ):
        click.echo(f"SILENT {path}: {describe_silence(detail, since)}")
    sys.exit(status)


def _stored(state: State, read: Callable[[Engine], T]) -> T | None:
    """What ``read`` finds in the database; None when there is none yet, or it is from
    before ciflake kept that."""
    from sqlalchemy.exc import SQLAlchemyError

    from store.engine import DatabaseURLError

    try:
        return read(state.engine(read_only=True))
    except (SQLAlchemyError, DatabaseURLError):
        return None


def _collected(
    engine: Engine, repo: str, since: datetime | None, default: datetime
) -> dict[str, Collected]:
    """Per workflow path, what earlier collects listed: a collect starts at --since, else
    where the workflow's backfill started."""
    from datetime import UTC, datetime

    from collector.doctor.estimate import Collected
    from store.backfill import progress_of
    from store.bookkeeping import workflow_sync_states

    now = datetime.now(UTC)
    found = {}
    for path, row in workflow_sync_states(engine, repo).items():
        progress = progress_of(row.window_start, row.backfill, row.watermark)
        start = since or progress.floor or default
        found[path] = Collected.of(progress, start, row.updated_at, now)
    return found
