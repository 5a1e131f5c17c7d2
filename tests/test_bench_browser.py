"""``python -m bench.browser [FLOOR...]`` measures only the floors named, and refuses a name it
does not know in one line (no browser is started in these tests)."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path

import pytest

from bench import browser


def test_only_the_floors_named_are_measured(monkeypatch, capsys):
    measured: list = []

    def floors(context: object, tmp: Path, names: tuple[str, ...]) -> dict[str, float]:
        measured.extend(names)
        return {name: 1.234 for name in names}

    monkeypatch.setattr(browser, "chromium", lambda: nullcontext("a context"))
    monkeypatch.setattr(browser, "_floors", floors)
    browser.main(["one_chart", "change"])
    assert measured == ["one_chart", "change"]
    assert capsys.readouterr().out.splitlines() == [
        f"one_chart: 1.23 s (median of {browser.REPEATS})",
        f"change: 1.23 s (median of {browser.REPEATS})",
    ]


def test_an_unknown_floor_is_one_line(monkeypatch):
    monkeypatch.setattr(browser, "chromium", lambda: pytest.fail("no browser for a bad name"))
    with pytest.raises(SystemExit) as stopped:
        browser.main(["blank", "two_charts"])
    assert stopped.value.code == (
        "bench.browser: no floor two_charts: choose from blank, one_chart, click, change"
    )
