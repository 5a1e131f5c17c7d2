"""Shared fixtures: every test gets its own database and a clean environment.

Tests that take ``db_url``, ``engine`` or ``collected_db`` run on SQLite and, when
``CIFLAKE_TEST_PG_URL`` names a PostgreSQL server (a role that may create databases), on
PostgreSQL too, each in a database of its own. On CI (``CI=true``) the PostgreSQL variant fails
instead of vanishing when the URL is unset. ``@pytest.mark.sqlite_only`` keeps a test that checks
SQLite itself to SQLite.

``make test`` runs on every core with pytest-xdist. What a collect makes is built once per session
and shared by the workers (``tests/support/collected.py``), and the tests that take longest
start first, so that no worker is left alone with a long test at the end.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager

import pytest
from click.testing import CliRunner
from hypothesis import settings
from sqlalchemy import Engine

from store.engine import make_engine
from tests.support.collected import (
    DEFAULT,
    FIRST_NIGHT,
    ONE_RUN,
    SHARED_ENV,
    Collected,
    Scenario,
    built_once,
    collected,
    collected_pg,
    drop_templates,
)
from tests.support.pg import fresh_pg_database, pg_url, required_pg_url

# Hypothesis checks properties, not speed: its default 200 ms deadline per example failed a
# property test once on a loaded machine (make test runs a worker more than there are cores).
# Speed is measured by bench/.
settings.register_profile("ciflake", deadline=None)
settings.load_profile("ciflake")


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_configure(config: pytest.Config) -> None:
    """The controller makes the session's shared folder; its workers inherit the variable."""
    if not _is_worker(config):
        os.environ[SHARED_ENV] = tempfile.mkdtemp(prefix="ciflake-shared-")


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Once every worker is done: drop the PostgreSQL templates, remove the shared folder."""
    if _is_worker(session.config) or SHARED_ENV not in os.environ:
        return
    try:
        drop_templates(pg_url())
    finally:
        shutil.rmtree(os.environ.pop(SHARED_ENV), ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def _own_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Compiled rule databases go to a cache of the session's, not the developer's ~/.cache."""
    before = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("cache"))
    yield
    if before is None:
        os.environ.pop("XDG_CACHE_HOME")
    else:
        os.environ["XDG_CACHE_HOME"] = before


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """No test reads the developer's token, config or database by accident."""
    for name in (
        "GITHUB_TOKEN",
        "CIFLAKE_CONFIG",
        "CIFLAKE_DB_URL",
        "CIFLAKE_API_URL",
        "CIFLAKE_TOKEN_FILE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


def backends() -> list[str]:
    on_ci = os.environ.get("CI") == "true"
    return ["sqlite", "postgresql"] if (pg_url() or on_ci) else ["sqlite"]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if {"db_url", "collected_db", "thin_db"} & set(metafunc.fixturenames):
        sqlite_only = metafunc.definition.get_closest_marker("sqlite_only") is not None
        metafunc.parametrize("backend", ["sqlite"] if sqlite_only else backends())


@pytest.fixture
def db_url(backend: str, tmp_path) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'ciflake.db'}"
        return
    yield from fresh_pg_database(required_pg_url())


def _copies(backend: str, tmp_path) -> Iterator[Callable[..., Collected]]:
    with ExitStack() as stack:

        def copy(scenario: Scenario = DEFAULT) -> Collected:
            if backend == "sqlite":
                return collected(scenario, tmp_path)
            server = required_pg_url()
            return stack.enter_context(contextmanager(collected_pg)(scenario, server))

        yield copy


@pytest.fixture
def collected_db(backend: str, tmp_path) -> Iterator[Callable[..., Collected]]:
    """``collected_db(scenario)``: the test's own copy of the scenario's collected database on
    the test's backend, and the reports of the collects that made it."""
    yield from _copies(backend, tmp_path)


THIN_DATA = ("empty", "one run", "first night")


@pytest.fixture
def thin_db(backend: str, tmp_path) -> Iterator[Callable[[str], str]]:
    """``thin_db(kind)``: the URL of the test's own database on its backend, holding one of
    ``THIN_DATA``: "empty" (migrated, nothing collected), "one run" (``ONE_RUN``: one failed
    default-branch run) or "first night" (``FIRST_NIGHT``: the nightly example's first,
    budget-stopped collect of verl's volume)."""
    with ExitStack() as stack:
        copy = stack.enter_context(contextmanager(_copies)(backend, tmp_path))

        def make(kind: str) -> str:
            if kind == "one run":
                return copy(ONE_RUN).url
            if kind == "first night":
                return copy(FIRST_NIGHT).url
            assert kind == "empty", kind
            if backend == "sqlite":
                url = f"sqlite:///{tmp_path / 'empty.db'}"
            else:
                url = stack.enter_context(contextmanager(fresh_pg_database)(required_pg_url()))
            from store.migrate import upgrade

            engine = make_engine(url)
            upgrade(engine)
            engine.dispose()
            return url

        yield make


@pytest.fixture
def collected_elsewhere(tmp_path) -> Iterator[Callable[..., Collected]]:
    """``collected_elsewhere(scenario)``: as ``collected_db``, on PostgreSQL when the session
    runs it (on CI it must), else on SQLite. For a build so long that one backend is all the
    suite can afford: the scale-1 nights stand for PostgreSQL beside a full collect on SQLite."""
    yield from _copies(backends()[-1], tmp_path)


@pytest.fixture(scope="module")
def sqlite_engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    """An empty SQLite database at the head schema, shared by a module: for query plans
    (tests.support.plans)."""
    from store.migrate import upgrade

    engine = make_engine(f"sqlite:///{tmp_path_factory.mktemp('plans') / 'plans.db'}")
    upgrade(engine)
    return engine


@pytest.fixture
def engine(db_url):
    from store.migrate import upgrade

    eng = make_engine(db_url)
    upgrade(eng)
    yield eng
    eng.dispose()


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


# A test module that names one of these starts fakehub (or shares the demo's collect): its
# tests are marked ``hub`` and left out of ``make test-fast``, which keeps the rest under 90 s.
HUB_WORDS = ("fakehub", "hubtools", "demo_db", "collected import", "collected_db", "thin_db")


# What takes longest runs first, in this order (a test's "file::name" starts with an entry),
# then every other module with a slow test, so that the workers finish together rather than one
# alone on a long test at the end. First the scale-1 acceptances, each a collect of verl's whole
# volume (minutes): the 500-request nights (built on PostgreSQL when the session has it) and
# the evidence of seeds 1-3, so that these builds start at once. pytest-xdist hands out the
# largest xdist group first and then keeps two tests queued on each worker: the nights with the
# two tests that read them (one group), the browser tests (one group, they build the demo's
# database), seed 1's full collect with the test that reads it alone (one group; the nights'
# test reads it too, later), then seeds 2 and 3, the one queued behind seed 1's group, the
# other taken by the browser worker, so that no worker runs two of the longest builds in a row
# after the nights. Then these modules' other tests; a module's tests otherwise stay together:
# its module-scoped fixtures are made once.
LONGEST_FIRST = (
    "test_collect_budget.py::test_500_request_nights_at_scale_1_keep_their_budget",
    "test_evidence_acceptance.py::test_evidence_at_scale_1",
    "test_collect_budget.py",
    "test_evidence_acceptance.py",
    "test_analytics_acceptance.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    slow_modules = {item.path for item in items if item.get_closest_marker("slow")}

    def weight(item: pytest.Item) -> int:
        name = f"{item.path.name}::{item.name}"
        first = [rank for rank, start in enumerate(LONGEST_FIRST) if name.startswith(start)]
        if first:
            return first[0] - len(LONGEST_FIRST) - 1
        return -1 if item.path in slow_modules else 0

    items.sort(key=weight)  # stable: the order within each weight is kept
    seen: dict[str, bool] = {}
    for item in items:
        path = str(item.path)
        if path not in seen:
            source = item.path.read_text(encoding="utf-8")
            seen[path] = any(word in source for word in HUB_WORDS)
        if seen[path]:
            item.add_marker(pytest.mark.hub)


@pytest.fixture(scope="session")
def demo_db() -> str:
    """The demo's database, made as ``ciflake demo`` makes it: fakehub's simulated verl history
    (seed 1, demo scale) collected through PyGithub, once per session for every worker. Shared
    by the dashboard tests, which only read it. It ends on a fixed day, not today: a history
    that moves with the date gave a test a different story on some days."""
    from ciflake.demo import demo_database
    from fakehub.history import DEFAULT_END

    def build(path):
        path.mkdir()
        return demo_database(path, end=DEFAULT_END)  # the same data whatever the date

    return built_once("demo", build)[1]
