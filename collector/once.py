"""One collect from a config: the client and the progress bar around ``collector.sync.collect``."""

from __future__ import annotations

from sqlalchemy import Engine

from collector.client import GitHubClient
from collector.progress import CollectProgress
from collector.sync import collect
from collector.sync_report import CollectOptions, CollectReport
from store.settings import Config


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
