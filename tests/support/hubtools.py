"""Helpers for tests that collect from a running fakehub."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from collector.once import collect_all, collect_once
from collector.sync_report import CollectOptions, CollectReport
from fakehub import Hub
from fakehub.child import ChildHub
from store.engine import make_engine
from store.migrate import upgrade
from store.models import (
    Failure,
    Job,
    JobLog,
    LogicalJob,
    LogicalRun,
    RunAttempt,
    Workflow,
    WorkflowRun,
)
from store.settings import Config, load_config

TEST_SCALE = 0.03
SINCE = datetime(2025, 10, 1, tzinfo=UTC)  # the start of fakehub's history: collect it all

# Columns that say when we fetched or classified something, not what GitHub holds.
VOLATILE = {"fetched_at", "classified_at"}


def hub_config(hub: Hub | ChildHub, db_url: str, repos: tuple[str, ...] | None = None) -> Config:
    """The built-in config (verl) against ``hub``; with ``repos``, the demo's config of both
    simulated repositories, keeping only those of ``repos``."""
    env = {"GITHUB_TOKEN": hub.token}
    if repos is None:
        return load_config(env=env, api_url=hub.base_url, db_url=db_url)
    from ciflake.demo import demo_config_path

    config = load_config(demo_config_path(), env=env, api_url=hub.base_url, db_url=db_url)
    return config.with_overrides(projects=tuple(config.project(repo) for repo in repos))


def migrated(db_url: str) -> Engine:
    engine = make_engine(db_url)
    upgrade(engine)
    return engine


def collect(
    hub: Hub | ChildHub, db_url: str, window_days: int | None = None, **options: Any
) -> CollectReport:
    """One collect of the built-in config against ``hub``; ``window_days``: its backfill's
    listing windows, when not the config's."""
    options.setdefault("since", SINCE)
    options.setdefault("quiet", True)
    config = hub_config(hub, db_url)
    if window_days is not None:
        config = config.with_overrides(collect_window_days=window_days)
    engine = migrated(db_url)
    try:
        return collect_once(config, engine, CollectOptions(**options))
    finally:
        engine.dispose()  # no connection left behind: a PostgreSQL template must have none


def collect_repos(
    hub: Hub | ChildHub, db_url: str, repos: tuple[str, ...], **options: Any
) -> tuple[CollectReport, ...]:
    """One collect of each of ``repos`` (the demo config's), in turn: one report each."""
    options.setdefault("since", SINCE)
    options.setdefault("quiet", True)
    engine = migrated(db_url)
    try:
        config = hub_config(hub, db_url, repos)
        outcomes = collect_all(config, engine, CollectOptions(**options))
        reports = tuple(o for _, o in outcomes if isinstance(o, CollectReport))
        assert len(reports) == len(outcomes), outcomes  # fakehub refused nothing
        return reports
    finally:
        engine.dispose()


def collect_without_waits(hub: Hub | ChildHub, db_url: str) -> CollectReport:
    """One collect whose urllib3 retries do not sleep: a resource fakehub refuses every time
    costs no backoff."""
    from collector.client import GitHubClient
    from collector.progress import CollectProgress
    from collector.sync import collect as sync_collect

    config = hub_config(hub, db_url)
    client = GitHubClient(config.api_url, config.token, backoff_factor=0.0)
    options = CollectOptions(since=SINCE, quiet=True)
    engine = migrated(db_url)
    try:
        return sync_collect(
            config, config.project(), engine, client, options, CollectProgress(enabled=False)
        )
    finally:
        engine.dispose()


def snapshot(engine: Engine) -> dict[str, list[tuple]]:
    """Everything the collect stored about GitHub's data, and the derived tables it kept, in a
    comparable form."""
    out: dict[str, list[tuple]] = {}
    with Session(engine) as session:
        for model in (
            Workflow,
            WorkflowRun,
            RunAttempt,
            Job,
            JobLog,
            Failure,
            LogicalRun,
            LogicalJob,
        ):
            columns = [c for c in model.__table__.columns if c.name not in VOLATILE]
            keys = list(model.__table__.primary_key.columns)
            rows = session.execute(select(*columns).order_by(*keys)).all()
            out[model.__tablename__] = [tuple(row) for row in rows]
    return out


def served_runs(hub: Hub, repo: str | None = None) -> list[Any]:
    """fakehub's runs whose checks data (jobs, annotations) it still serves: GitHub archives
    that of runs older than 400 days."""
    api = hub.app.repos[(repo or hub.repos[0]).lower()]
    return [run for run in api.history.runs if not api.archived(run)]


def served_jobs(hub: Hub, repo: str | None = None) -> list[Any]:
    """The jobs of served_runs, every attempt's."""
    return [job for run in served_runs(hub, repo) for a in run.attempts for job in a.jobs]
