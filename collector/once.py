"""Collects from a config: the client and the progress bar around ``collector.sync.collect``,
for one repository or for every configured one in turn under one request budget."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import Engine

from collector.client import BadCredentials, BudgetSpent, CollectError, GitHubClient
from collector.progress import CollectProgress
from collector.sync import collect
from collector.sync_report import CollectOptions, CollectReport
from store import bookkeeping
from store.project import Project
from store.settings import Config

# Whatever repository it comes from, these say the shared client cannot go on: the next
# repositories would only meet them again.
SHARED_STOPS = (BadCredentials, BudgetSpent)


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
    """One collect of ``project`` (default: the only configured repository); a CollectError
    stops it."""
    progress = CollectProgress(enabled=not options.quiet)
    client = make_client(config, progress, options.max_requests)
    return collect(config, project or config.project(), engine, client, options, progress)


Outcome = CollectReport | CollectError


def collect_all(
    config: Config,
    engine: Engine,
    options: CollectOptions,
    projects: tuple[Project, ...] | None = None,
) -> list[tuple[str, Outcome]]:
    """One collect of each of ``projects`` (default: every configured repository) through one
    client, so ``--max-requests`` and ``[collect] reserve`` bound them together: the one whose
    last collect is oldest first, so that a budget one repository's backfill spends every
    night does not starve the others. A repository GitHub refuses (a name it does not know, a
    repository the token cannot see) gets its error as its outcome and the others go on; an
    error of the shared client (bad credentials, the budget spent) ends the ones left too."""
    chosen = config.projects if projects is None else projects
    progress = CollectProgress(enabled=not options.quiet)
    client = make_client(config, progress, options.max_requests)
    outcomes: list[tuple[str, Outcome]] = []
    for project in sorted(chosen, key=lambda p: _last_collected(engine, p.repo)):
        try:
            report = collect(config, project, engine, client, options, progress)
            outcomes.append((project.repo, report))
        except SHARED_STOPS as exc:
            left = [p.repo for p in chosen if p.repo not in {r for r, _ in outcomes}]
            outcomes += [(repo, exc) for repo in left]
            break
        except CollectError as exc:
            outcomes.append((project.repo, exc))
    return outcomes


def _last_collected(engine: Engine, repo: str) -> datetime:
    last = bookkeeping.last_collect(engine, repo)
    return datetime.min.replace(tzinfo=UTC) if last is None else last.at
