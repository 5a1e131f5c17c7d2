"""Collects from a config: the client and the progress bar around ``collector.sync.collect``,
for one repository or for every configured one in turn under one request budget."""

from __future__ import annotations

from sqlalchemy import Engine

from collector.client import GitHubClient
from collector.progress import CollectProgress
from collector.sync import collect
from collector.sync_report import CollectOptions, CollectReport
from store.project import Project
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


def collect_once(
    config: Config, engine: Engine, options: CollectOptions, project: Project | None = None
) -> CollectReport:
    """One collect of ``project`` (default: the only configured repository)."""
    return collect_all(config, engine, options, (project or config.project(),))[0][1]


def collect_all(
    config: Config,
    engine: Engine,
    options: CollectOptions,
    projects: tuple[Project, ...] | None = None,
) -> list[tuple[str, CollectReport]]:
    """One collect of each of ``projects`` (default: every configured repository), in turn,
    through one client, so ``--max-requests`` and ``[collect] reserve`` bound them together. A
    repository the budget did not reach stops at once with the budget line in its report; the
    next collect goes on from there (what is unchanged costs nothing under ETags)."""
    progress = CollectProgress(enabled=not options.quiet)
    client = make_client(config, progress, options.max_requests)
    return [
        (project.repo, collect(config, project, engine, client, options, progress))
        for project in (config.projects if projects is None else projects)
    ]
