"""What ``ciflake collect`` does around a collect: the client, the loop, the report line."""

from __future__ import annotations

import time
from datetime import datetime

import click
from sqlalchemy import Engine

from ciflake.config import Config, ConfigError
from collector.client import CollectError, GitHubClient
from collector.progress import CollectProgress
from collector.sync import CollectOptions, CollectReport, collect


def make_client(
    config: Config, progress: CollectProgress, max_requests: int | None = None
) -> GitHubClient:
    return GitHubClient(
        config.api_url,
        config.token,
        on_wait=progress.note,
        max_requests=max_requests,
        reserve=config.collect_reserve,
    )


def collect_once(config: Config, engine: Engine, options: CollectOptions) -> CollectReport:
    progress = CollectProgress(enabled=not options.quiet)
    client = make_client(config, progress, options.max_requests)
    return collect(config, engine, client, options, progress)


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
) -> None:
    if config.token is None and "api.github.com" in config.api_url:
        click.echo("warning: no token (GITHUB_TOKEN); GitHub allows 60 requests an hour", err=True)
    options = CollectOptions(
        since=since, full=full, logs=logs, quiet=quiet, max_requests=max_requests
    )
    while True:
        try:
            report = collect_once(config, engine, options)
        except CollectError as exc:
            raise ConfigError(f"collect stopped: {exc}") from None
        click.echo(f"{config.repo}: {report.line()}")
        if once:
            return
        time.sleep(config.interval_minutes * 60)
        options = CollectOptions(logs=logs, quiet=quiet, max_requests=max_requests)
