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
        try:
            reports = collect_all(config, engine, options, projects)
        except CollectError as exc:
            raise ConfigError(f"collect stopped: {exc}") from None
        for repo, report in reports:
            click.echo(f"{repo}: {report.line()}")
        if once:
            return
        time.sleep(config.interval_minutes * 60)
        options = CollectOptions(logs=logs, quiet=quiet, max_requests=max_requests)
