"""``ciflake collect``'s loop: collect, print the report line, sleep the interval, again."""

from __future__ import annotations

import time
from datetime import datetime

import click
from sqlalchemy import Engine

from collector.client import CollectError
from collector.once import collect_all
from collector.sync_report import CollectOptions
from store.project import Project
from store.settings import Config, ConfigError


def run_collect(
    config: Config,
    engine: Engine,
    *,
    since: datetime | None,
    full: bool,
    logs: bool,
    quiet: bool,
    once: bool,
    max_requests: int | None = None,
    projects: tuple[Project, ...] | None = None,
) -> None:
    """Collect ``projects`` (default: every configured repository) and print one line each."""
    if config.token is None and "api.github.com" in config.api_url:
        click.echo("warning: no token (GITHUB_TOKEN); GitHub allows 60 requests an hour", err=True)
    options = CollectOptions(
        since=since, full=full, logs=logs, quiet=quiet, max_requests=max_requests
    )
    while True:
        outcomes = collect_all(config, engine, options, projects)
        stopped = [(repo, o) for repo, o in outcomes if isinstance(o, CollectError)]
        if len(outcomes) == 1 and stopped:  # one repository: its error is the one line
            raise ConfigError(f"collect stopped: {stopped[0][1]}")
        for repo, outcome in outcomes:
            if isinstance(outcome, CollectError):
                click.echo(f"{repo}: collect stopped: {outcome}")
            else:
                click.echo(f"{repo}: {outcome.line()}")
        if stopped:
            names = ", ".join(repo for repo, _ in stopped)
            raise ConfigError(f"collect stopped for {names} (the others collected; see above)")
        if once:
            return
        time.sleep(config.interval_minutes * 60)
        options = CollectOptions(logs=logs, quiet=quiet, max_requests=max_requests)
