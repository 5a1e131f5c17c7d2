"""Shared fixtures: every test gets its own database and a clean environment."""

from __future__ import annotations

import os

import pytest
from click.testing import CliRunner

from store.engine import make_engine


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


@pytest.fixture
def db_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'ciflake.db'}"


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


def pg_url() -> str | None:
    return os.environ.get("CIFLAKE_TEST_PG_URL")
