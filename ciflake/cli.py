"""The ``ciflake`` command line: one click group, thin commands that delegate to the layers.

Heavy modules (SQLAlchemy, rich, fakehub) are imported by the commands that use them, so a
command such as ``ciflake classify`` starts in a fraction of the time (bench.classifier).
"""

from __future__ import annotations

import importlib
import sys
from datetime import UTC, datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any

import click

from store.vocabulary import EVENT_KINDS

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from ciflake.config import Config

EXIT_USAGE = 2
# Commands defined in other packages, imported only when named (or listed by --help).
LAZY_COMMANDS = {
    "classify": ("collector.classify.command", "classify_command"),
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
        from ciflake.config import load_config

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
        sys.modules.get(m) for m in ("ciflake.config", "store.engine", "sqlalchemy.exc")
    )
    if (config and isinstance(exc, config.ConfigError)) or (
        engine and isinstance(exc, engine.DatabaseURLError)
    ):
        return str(exc)
    if sa is not None and isinstance(exc, sa.OperationalError):
        from store.engine import safe_url

        url = ctx.obj.config.database_url if ctx.obj else "?"
        reason = str(exc.orig).splitlines()[0] if exc.orig else "cannot connect"
        return f"database {safe_url(url)}: {reason}"
    if sa is not None and isinstance(exc, sa.SQLAlchemyError):
        return f"database error: {type(exc).__name__}: {str(exc).splitlines()[0]}"
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


# ---- db -------------------------------------------------------------------------------------


@cli.group()
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

    from store.queries import table_counts

    engine = state.engine(read_only=True)
    table = Table("table", "rows", box=None, pad_edge=False)
    for name, count in table_counts(engine).items():
        table.add_row(name, str(count))
    Console().print(table)


# ---- config ---------------------------------------------------------------------------------


@cli.group("config")
def config_group() -> None:
    """Inspect the effective configuration."""


@config_group.command("show")
@click.pass_obj
def config_show(state: State) -> None:
    """Print the effective configuration (the token only as set/unset)."""
    from ciflake.config_view import render_config

    click.echo(render_config(state.config))


# ---- events ---------------------------------------------------------------------------------


@cli.group()
def events() -> None:
    """Dated CI changes (migrations, fixes, config and image changes) drawn on every chart."""


@events.command("list")
@click.pass_obj
def events_list(state: State) -> None:
    """List the change events: those of the config file and those added or detected."""
    from rich.console import Console
    from rich.table import Table

    from ciflake.events import all_events

    rows = all_events(state.config, state.engine() if _db_exists(state) else None)
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
@click.pass_obj
def events_add(state: State, date: str, title: str, pr: int | None, kind: str) -> None:
    """Record a change event on DATE (YYYY-MM-DD or ISO-8601 UTC) with a TITLE."""
    from ciflake.config import ConfigError, parse_datetime
    from ciflake.events import add_event

    when = parse_datetime(date, "DATE")
    if when > datetime.now(UTC):
        raise ConfigError(f"DATE {date!r} is in the future")
    created = add_event(state.migrated_engine(), state.config.repo, when, title, pr, kind)
    click.echo(("added" if created else "already recorded") + f": {when:%Y-%m-%d} {title}")


# ---- collect --------------------------------------------------------------------------------


def _service_options(command: Any) -> Any:
    """--repo and --api-url, for the commands that talk to GitHub."""
    command = click.option(
        "--api-url",
        metavar="URL",
        help="GitHub API URL (default: $CIFLAKE_API_URL, else https://api.github.com; GitHub "
        "Enterprise Server: https://HOST/api/v3); a fakehub URL works the same.",
    )(command)
    return click.option("--repo", metavar="OWNER/NAME", help="Repository (default: the config's).")(
        command
    )


@cli.command()
@click.option("--once", is_flag=True, help="Collect once and exit (for cron and tests).")
@click.option(
    "--since",
    metavar="DATE",
    help="First sync (or --full) from DATE (default: 30 days before the earliest "
    "configured event).",
)
@click.option(
    "--full",
    is_flag=True,
    help="Ignore watermarks and ETags: list and re-fetch "
    "every run and its jobs (archived logs are kept).",
)
@_service_options
@click.option("--no-logs", is_flag=True, help="Do not download logs of failed jobs.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar: only the one-line report.")
@click.option(
    "--max-requests",
    type=click.IntRange(min=1),
    metavar="N",
    help="Send at most N requests that count against the rate limit, then stop cleanly with "
    "everything so far committed; the next collect goes on from there. [collect] reserve "
    "also keeps that many of the token's budget for others.",
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
) -> None:
    """Fetch new and changed runs, jobs, annotations and failed-job logs, and classify each
    failure.

    Each failure is classified from the best evidence GitHub still keeps: the log (90 days),
    else the check-run annotations and the job's steps (400 days), else it stays unknown. A
    job GitHub calls cancelled that hit its time limit counts red (timeout). Incremental: a
    second collect with nothing new costs no rate limit (ETags). Without --once it collects
    again every [collect] interval_minutes until interrupted.
    """
    from ciflake.config import parse_datetime
    from collector.command import run_collect

    state.overrides = {k: v for k, v in {"repo": repo, "api_url": api_url}.items() if v}
    options_since = parse_datetime(since, "--since") if since else None
    run_collect(
        state.config,
        state.migrated_engine(),
        since=options_since,
        full=full,
        logs=not no_logs,
        quiet=quiet,
        once=once,
        max_requests=max_requests,
    )


@cli.command()
@click.pass_obj
def reclassify(state: State) -> None:
    """Re-run the classification rules over the archived logs and the stored annotations (no
    download needed)."""
    from collector.reclassify import reclassify_all

    changed, total, version = reclassify_all(state.migrated_engine())
    click.echo(f"reclassified {total} failures with rules {version}: {changed} changed")


@cli.command()
@click.option(
    "--since",
    metavar="DATE",
    help="Estimate the first backfill from DATE (default: as collect, 30 days before the "
    "earliest configured event).",
)
@_service_options
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
    the budget found, from the listings' total_count. Exit status 1 when a check fails.
    """
    from ciflake.config import parse_datetime
    from collector.doctor import run_doctor
    from collector.sync import default_since

    state.overrides = {k: v for k, v in {"repo": repo, "api_url": api_url}.items() if v}
    start = parse_datetime(since, "--since") if since else default_since(state.config)
    sys.exit(run_doctor(state.config, start, click.echo))


# ---- summary and schedule -------------------------------------------------------------------


@cli.command()
@click.option("--pr", type=int, metavar="N", help="The migration made by PR N (default: latest).")
@click.option("--issue", type=int, metavar="N", help="Post on issue N instead of the PR.")
@click.option(
    "--since",
    default="24h",
    show_default=True,
    metavar="24h|7d|DATE",
    help="Failures of runs created since then (UTC).",
)
@click.option("--post", is_flag=True, help="Create or edit the one summary comment on GitHub.")
@click.pass_obj
def summary(state: State, pr: int | None, issue: int | None, since: str, post: bool) -> None:
    """Markdown about a migration: successors vs predecessors, their first runs, failures since
    --since (NEW / PERSISTENT / FLAKY / INFRA/ENV), coverage lost, stale workflows, freshness.

    Prints it; with --post it upserts one comment (hidden marker) on the PR (--pr, else the
    config's [summary] pr, else the event's PR) or on --issue. While a first collect (a
    backfill) has not yet listed the days the summary reads, --post posts nothing and says
    what is missing; the printed Markdown says it too.
    """
    from ciflake.config import ConfigError
    from ciflake.events import all_events
    from collector.summary import run_summary

    if pr is not None and issue is not None:
        raise ConfigError("give --pr or --issue, not both")
    engine = state.migrated_engine()
    events = all_events(state.config, engine)
    click.echo(
        run_summary(state.config, engine, events, pr=pr, issue=issue, since=since, post=post)
    )


@cli.command()
@click.pass_obj
def schedule(state: State) -> None:
    """Long-running: collect now and every [collect] interval_minutes, and the summary daily at
    [summary] nightly_at UTC (posted on [summary] pr with a token, else printed).

    SIGTERM or Ctrl-C lets the running job finish, then exits 0. Logs go to stderr.
    """
    from ciflake.events import all_events
    from collector.schedule import run_schedule

    config, engine = state.config, state.migrated_engine()
    run_schedule(config, engine, lambda: all_events(config, engine))


# ---- export ---------------------------------------------------------------------------------


@cli.command()
@click.argument("table", metavar="TABLE")
@click.option("--out", "out_path", required=True, metavar="FILE.csv", help="File to write.")
@click.option("--since", metavar="DATE", help="Runs (or events) from this date, UTC.")
@click.option("--until", metavar="DATE", help="Runs (or events) before this date, UTC.")
@click.option(
    "--workflow", "workflows", multiple=True, metavar="PATH", help="Only this workflow file."
)
@click.option(
    "--scope",
    type=click.Choice(["default", "pr", "all"]),
    default="default",
    show_default=True,
    help="flaky, before-after: default-branch runs, pull-request runs, or both.",
)
@click.option(
    "--category",
    metavar="C",
    help="runs, jobs, failures, signatures: only this failure category (oom, npu_env, ...).",
)
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
) -> None:
    """Write TABLE (runs, jobs, failures, signatures, flaky, before-after) as CSV with a fixed
    column order (README: "ciflake export")."""
    from ciflake.export import check_table, export_table, parse_range, write_csv
    from store.queries import RunFilter

    check_table(table, category)
    start, end = parse_range(since, until)
    where = RunFilter(state.config.repo, start, end, workflows)
    engine = state.engine(read_only=True)
    frame = export_table(engine, state.config, table, where, scope, category)
    write_csv(frame, out_path)
    click.echo(f"{out_path}: {len(frame)} rows")


@cli.command()
@click.option("--host", metavar="H", help="Address to listen on (default: [dashboard] host).")
@click.option("--port", type=int, metavar="N", help="Port (default: [dashboard] port).")
@click.pass_obj
def dashboard(state: State, host: str | None, port: int | None) -> None:
    """Serve the Streamlit dashboard until interrupted; it only reads the database."""
    config = state.config
    _serve_dashboard(
        config.database_url,
        host or config.dashboard_host,
        port or config.dashboard_port,
        state.config_path,
    )


def _serve_dashboard(db_url: str, host: str, port: int, config_path: str | None) -> None:
    from ciflake.config import ConfigError
    from dashboard.launch import (
        DashboardError,
        serve_until_stopped,
        start_dashboard,
        stop_dashboard,
        wait_until_ready,
    )

    process, url = start_dashboard(db_url=db_url, host=host, port=port, config_path=config_path)
    try:
        wait_until_ready(url, process)
    except DashboardError as exc:
        stop_dashboard(process)
        raise ConfigError(str(exc)) from None
    click.echo(f"dashboard: {url}  (Ctrl-C to stop)")
    serve_until_stopped(process)


@cli.command()
@click.option("--port", type=int, metavar="N", help="Dashboard port (default: [dashboard] port).")
@click.option("--no-dashboard", is_flag=True, help="Stop after the collect.")
@click.pass_obj
def demo(state: State, port: int | None, no_dashboard: bool) -> None:
    """Start fakehub (a local GitHub replica with a simulated verl history), collect it into
    a demo database (default sqlite:///ciflake-demo.db, or --db), then serve the dashboard.

    No token and no network needed. Running it again is incremental.
    """
    from ciflake.demo import DEMO_DB_URL, DEMO_SEED, collect_demo
    from store.engine import safe_url

    db_url = state.db_url or DEMO_DB_URL
    state.db_url = db_url
    with collect_demo(state.config, state.migrated_engine()) as (hub, report):
        click.echo(f"fakehub: {hub.base_url} (simulated verl history, seed {DEMO_SEED})")
        click.echo(f"collect: {report.line()}")
        click.echo(f"database: {safe_url(db_url)}")
        if no_dashboard:
            return
        config = state.config
        _serve_dashboard(db_url, config.dashboard_host, port or config.dashboard_port, None)


def _db_exists(state: State) -> bool:
    from sqlalchemy.exc import OperationalError

    from store.engine import DatabaseURLError
    from store.migrate import current_revision

    try:
        return current_revision(state.engine(read_only=True)) is not None
    except (DatabaseURLError, OperationalError):
        return False


def main() -> None:
    cli(prog_name="ciflake")
