"""Collected databases shared by a test session: one collect per fakehub scenario.

A scenario is what fakehub serves (seed, scale, end, rate limit...) and what the collect asks
for (since). The first test that needs a scenario's database collects it; every pytest-xdist
worker of the session sees the same build, under a file lock in the session's shared folder
(``SHARED_ENV``, made by ``tests/conftest.py``). Each test then gets a fresh copy that it may
change freely: SQLite's backup API for SQLite, ``CREATE DATABASE ... TEMPLATE`` for PostgreSQL.
The report of the one collect comes along, so tests still assert what it said.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import pickle
import shutil
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

import fakehub
from collector.sync_report import CollectReport
from fakehub.child import ChildHub, spawned
from fakehub.history import DEFAULT_END, History
from store.engine import make_engine
from tests.support.hubtools import SINCE, TEST_SCALE, collect, collect_repos
from tests.support.pg import UNSYNCED, drop_pg_database

SHARED_ENV = "CIFLAKE_TEST_SHARED"
TEMPLATES = "pg-templates.txt"  # the PostgreSQL templates made, dropped when the session ends
SEED = 11
# Where the scenarios' html_url point: one address for every hub of the session, so that a test's
# own hub serves what the shared collect stored, links included (a hub's port changes).
WEB_URL = "http://fakehub.invalid"


@dataclass(frozen=True)
class Scenario:
    """One simulated history and the collect of it that tests share."""

    seed: int = SEED
    scale: float = TEST_SCALE
    end: datetime = DEFAULT_END
    rate_limit: int = 5000
    since: datetime | None = SINCE  # None: the collector's own first window (the nightly's)
    # Collected in nights of at most this many counted requests, until the backfill is done
    # (None: one full collect), or until ``nights`` of them have run.
    max_requests: int | None = None
    nights: int | None = None
    # Every run created after this one is deleted from the hub before the collect, and the
    # collect starts at its creation: a database that holds this one run.
    only_run: int | None = None
    # The repositories collected, as the demo's config tracks them (None: the built-in config,
    # verl alone). One full collect each, in turn.
    repos: tuple[str, ...] | None = None
    window_days: int | None = None  # the backfill's listing windows (None: the config's)

    @property
    def key(self) -> str:
        described = repr(sorted(asdict(self).items())).encode()
        return f"seed{self.seed}-scale{self.scale}-{hashlib.sha1(described).hexdigest()[:8]}"

    def hub_options(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "scale": self.scale,
            "end": self.end,
            "rate_limit": self.rate_limit,
            "web_url": WEB_URL,
        }

    @contextmanager
    def hub(self) -> Iterator[fakehub.Hub]:
        """A fresh fakehub serving this scenario, for the test's own requests."""
        with fakehub.running(**self.hub_options()) as running:
            yield running


DEFAULT = Scenario()
SEVEN = Scenario(seed=7)  # the collector tests' history
# verl's volume: the evidence acceptance of #15 (seed 1) and the budgeted nights of #17 share it.
# (Putting their tests in one xdist group, so that none waits for the other worker's collect,
# made make test 13m41s instead of 12m33s-13m02s: one worker then ran 9 minutes of them alone.)
AT_SCALE_1 = Scenario(seed=1, scale=1.0, rate_limit=1_000_000)
# The acceptance run of #17: the same history in nights of 500 requests. Built on PostgreSQL
# when the session has it (the ``collected_elsewhere`` fixture), so that scale 1 is collected
# on both backends without a second full collect.
NIGHTS_OF_500 = Scenario(seed=1, scale=1.0, rate_limit=1_000_000, max_requests=500)
# The tests that read one of these two builds run on the worker that builds it, after it: one
# dispatched to another worker slept there on the build's lock for minutes (the nights take the
# longest, 6-7 minutes in make test), and the build's worker, holding three tests or two, is not
# given a second build to run after its own (pytest-xdist queues more behind a worker's last two).
NIGHTS_OF_500_GROUP = pytest.mark.xdist_group("nights-of-500")
AT_SCALE_1_GROUP = pytest.mark.xdist_group("scale-1-seed-1")
# Thin data, for the reports, pages and summary that must say so rather than fail (#46).
# The nightly example's first night on verl's volume: the hour's 1,000 requests, at most 700 of
# them, collected from the collector's own first window; the backfill is far from done.
FIRST_NIGHT = Scenario(seed=1, scale=1.0, rate_limit=1000, since=None, max_requests=700, nights=1)
# One run: the newest default-branch failure of the default history (an OOM in the v1
# separate_async job of 2026-11-06), alone in the database.
ONE_RUN = Scenario(only_run=17623536655)


@dataclass(frozen=True)
class Collected:
    """A test's own copy of a scenario's collected database, the report of the collect that
    made it and fakehub's request counters after it (``GET /_admin/counters``)."""

    url: str
    reports: tuple[CollectReport, ...]  # one per collect (night) that made it, in order
    counters: dict[str, Any]

    @property
    def report(self) -> CollectReport:
        """The last collect's report (the only one's, for a full collect)."""
        return self.reports[-1]


Built = tuple[tuple[CollectReport, ...], dict[str, Any]]


def _collect_and_count(scenario: Scenario, url: str) -> Built:
    """The scenario's collect into ``url``, fakehub served by a child process: the collect
    then has a core of its own when one is free (a scale-1 collect takes a third less)."""
    reports: list[CollectReport] = []
    with spawned(**scenario.hub_options()) as hub:
        if scenario.repos is not None:
            return collect_repos(hub, url, scenario.repos, since=scenario.since), hub.admin(
                "GET", "counters"
            )
        since = scenario.since if scenario.only_run is None else _keep_until(scenario, hub)
        while not reports or (scenario.max_requests is not None and reports[-1].stopped):
            assert len(reports) < 200, "the backfill does not progress"
            if scenario.nights is not None and len(reports) == scenario.nights:
                break
            reports.append(
                collect(
                    hub,
                    url,
                    scenario.window_days,
                    since=since,
                    max_requests=scenario.max_requests,
                )
            )
        return tuple(reports), hub.admin("GET", "counters")


def _keep_until(scenario: Scenario, hub: ChildHub) -> datetime:
    """Delete every run the hub created after ``scenario.only_run``; that run's creation."""
    history = History(scenario.seed, scenario.scale, scenario.end)
    kept = next(run for run in history.runs if run.id == scenario.only_run)
    for run in history.runs:
        if (run.created_at, run.id) > (kept.created_at, kept.id):
            hub.admin("POST", "delete_run", {"run_id": run.id})
    return kept.created_at


def shared_dir() -> Path:
    """The session's folder shared by its workers (a private one outside pytest)."""
    path = os.environ.get(SHARED_ENV)
    if not path:
        path = tempfile.mkdtemp(prefix="ciflake-shared-")
        os.environ[SHARED_ENV] = path
    return Path(path)


@contextmanager
def _locked(name: str) -> Iterator[Path]:
    root = shared_dir()
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield root
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def built_once(name: str, build: Callable[[Path], Any]) -> tuple[Path, Any]:
    """``build(path)`` run once per session for ``name`` whichever worker asks first; the path
    of what it made and what it returned (pickled beside it for the other workers). A build
    that failed is started again from nothing by the next test that asks."""
    with _locked(name) as root:
        path, result = root / name, root / f"{name}.result"
        if not result.exists():
            _remove(path, root / f"{name}-wal", root / f"{name}-shm")  # a failed build's
            value = build(path)
            result.write_bytes(pickle.dumps(value))
        return path, pickle.loads(result.read_bytes())


def _remove(*paths: Path) -> None:
    for path in paths:
        if path.is_dir():
            shutil.rmtree(path)
        path.unlink(missing_ok=True)


def _sqlite_build(scenario: Scenario) -> Callable[[Path], Built]:
    return lambda path: _collect_and_count(scenario, f"sqlite:///{path}")


def collected(scenario: Scenario, directory: Path) -> Collected:
    """A fresh SQLite copy of ``scenario``'s collected database in ``directory``."""
    source, (reports, counters) = built_once(f"{scenario.key}.db", _sqlite_build(scenario))
    target = directory / f"{scenario.key}.db"
    with sqlite3.connect(source) as original, sqlite3.connect(target) as copy:
        original.backup(copy)  # the pages still in the write-ahead log come along
    return Collected(f"sqlite:///{target}", reports, counters)


def collected_copy(directory: Path, scenario: Scenario = DEFAULT) -> str:
    """The URL of a fresh copy of ``scenario``'s collected database in ``directory``."""
    return collected(scenario, directory).url


def _pg_build(scenario: Scenario, server: str) -> Callable[[Path], tuple[str, Any, Any]]:
    def build(path: Path) -> tuple[str, tuple[CollectReport, ...], dict[str, Any]]:
        name = f"ciflake_tmpl_{uuid.uuid4().hex[:12]}"
        with (shared_dir() / TEMPLATES).open("a") as made:
            made.write(name + "\n")
        _admin_sql(server, f'CREATE DATABASE "{name}"')
        _admin_sql(server, UNSYNCED.format(name=name))
        url = make_url(server).set(database=name).render_as_string(hide_password=False)
        reports, counters = _collect_and_count(scenario, url)
        _admin_sql(server, f'ALTER DATABASE "{name}" WITH IS_TEMPLATE true ALLOW_CONNECTIONS false')
        return name, reports, counters

    return build


def collected_pg(scenario: Scenario, server: str) -> Iterator[Collected]:
    """A database of its own on ``server`` made from ``scenario``'s collected template; dropped
    afterwards (a generator, as ``tests.support.pg.fresh_pg_database``)."""
    _, (template, reports, counters) = built_once(f"{scenario.key}.pg", _pg_build(scenario, server))
    name = f"ciflake_test_{uuid.uuid4().hex[:12]}"
    _create_from(server, name, template)
    _admin_sql(server, UNSYNCED.format(name=name))
    admin = make_engine(server).execution_options(isolation_level="AUTOCOMMIT")
    try:
        url = make_url(server).set(database=name).render_as_string(hide_password=False)
        yield Collected(url, reports, counters)
    finally:
        drop_pg_database(admin, name)
        admin.dispose()


def drop_templates(server: str | None) -> None:
    """Drop the session's PostgreSQL templates (run once, when every worker is done)."""
    listed = shared_dir() / TEMPLATES
    if not server or not listed.exists():
        return
    admin = make_engine(server).execution_options(isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            made = set(conn.scalars(text("SELECT datname FROM pg_database")))
        for name in set(listed.read_text().split()) & made:  # a failed build made none
            _admin_sql(server, f'ALTER DATABASE "{name}" WITH IS_TEMPLATE false')
            drop_pg_database(admin, name)
    finally:
        admin.dispose()


def _create_from(server: str, name: str, template: str, tries: int = 50) -> None:
    """``CREATE DATABASE name TEMPLATE template``, asked again while another backend is briefly
    on the template (PostgreSQL refuses the copy then: "source database ... is being accessed by
    other users"; its docs, Template Databases). Connections to the template are off, so only a
    concurrent copy's or autovacuum's short visit can be in the way."""
    for attempt in range(tries):
        try:
            _admin_sql(server, f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
            return
        except OperationalError as error:
            if "being accessed by other users" not in str(error) or attempt == tries - 1:
                raise
            time.sleep(0.1)


def _admin_sql(server: str, statement: str) -> None:
    admin = make_engine(server).execution_options(isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(statement))
    finally:
        admin.dispose()
