"""Shared fixtures: every test gets its own database and a clean environment.

Tests that take ``db_url`` (or ``engine``) run on SQLite and, when ``CIFLAKE_TEST_PG_URL`` names
a PostgreSQL server (a role that may create databases), on PostgreSQL too, each in a database
of its own. On CI (``CI=true``) the PostgreSQL variant fails instead of vanishing when the URL
is unset. ``@pytest.mark.sqlite_only`` keeps a test that checks SQLite itself to SQLite.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from store.engine import make_engine
from tests.support.pg import fresh_pg_database, pg_url, required_pg_url


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
    if "db_url" in metafunc.fixturenames:
        sqlite_only = metafunc.definition.get_closest_marker("sqlite_only") is not None
        metafunc.parametrize("backend", ["sqlite"] if sqlite_only else backends())


@pytest.fixture
def db_url(backend: str, tmp_path) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'ciflake.db'}"
        return
    yield from fresh_pg_database(required_pg_url())


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
HUB_WORDS = ("fakehub", "hubtools", "demo_db", "collected import")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    seen: dict[str, bool] = {}
    for item in items:
        path = str(item.path)
        if path not in seen:
            source = item.path.read_text(encoding="utf-8")
            seen[path] = any(word in source for word in HUB_WORDS)
        if seen[path]:
            item.add_marker(pytest.mark.hub)


@pytest.fixture(scope="session")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The demo's database, made as ``ciflake demo`` makes it: fakehub's simulated verl history
    (seed 1, demo scale) collected through PyGithub. Shared by the dashboard tests."""
    from ciflake.demo import demo_database

    return demo_database(tmp_path_factory.mktemp("demo"))
