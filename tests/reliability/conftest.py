"""Fixtures of the reliability suites, and a tally of tests that died of an exception."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from collector import once
from tests.reliability.harness import fast_client, record


@pytest.fixture
def fast_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    """``ciflake collect`` as shipped, but with the fast client's short waits."""
    monkeypatch.setattr(once, "make_client", fast_client)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    """A test that ended in an exception other than a failed check is a crash."""
    yield
    expected = (AssertionError, pytest.fail.Exception, pytest.skip.Exception)
    if call.excinfo is not None and not call.excinfo.errisinstance(expected):
        record(getattr(item.module, "SUITE", item.module.__name__), crashes=1)
