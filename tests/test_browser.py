"""A real browser on a running ``ciflake dashboard``: every page opens with no error element and
charts that carry data, the Migrations page says how much of each side's failure mix is known;
a screenshot per page lands in tests/artifacts/ for a human to look at."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from dashboard.launch import stop_dashboard, wait_until_ready

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
# Page title -> an element that appears only once the page has computed everything.
PAGES = {
    "overview": ("Overview", ".js-plotly-plot >> visible=true"),
    "migrations": ("Migrations", ".js-plotly-plot >> visible=true"),
    "failures": ("Failures", '[data-testid="stDataFrame"]'),
    "flaky_jobs": ("Flaky jobs", '[data-testid="stDataFrame"] >> nth=2'),
    "runners": ("Runners and environments", '[data-testid="stDataFrame"] >> nth=2'),
    "export": ("Export", '[data-testid="stDownloadButton"]'),
}
# Plotly.js keeps each drawn chart's decoded traces on its graph div; ``_length`` is a trace's
# point count (a heatmap counts its rows). Count the points of each chart on the page.
CHART_POINTS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(
    div => (div._fullData || []).reduce(
        (n, t) => n + (t._length || (t.z ? t.z.length : 0) || 0), 0))"""

# The Migrations page's line per side of an event (analytics.evidence.describe after the label).
EVIDENCE_LABEL = re.compile(r"^Failure causes (before|after): ")
EVIDENCE_LINE = re.compile(
    r"Failure causes (before|after): (category (from|unknown) .+; n=\d+ failures?|no failures)"
)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} not installed (apt chromium)"),
]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def dashboard_url(demo_db: str) -> Iterator[str]:
    """``ciflake dashboard`` on a free port over the demo database."""
    url = demo_db
    port = _free_port()
    ciflake = Path(sys.executable).with_name("ciflake")
    process = subprocess.Popen([ciflake, "--db", url, "dashboard", "--port", str(port)])
    address = f"http://127.0.0.1:{port}"
    try:
        wait_until_ready(address, process, timeout=120)
        yield address
    finally:
        stop_dashboard(process)


def test_every_page_in_chromium(dashboard_url: str) -> None:
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1100})
        page.goto(dashboard_url, wait_until="networkidle")
        for name, (title, ready) in PAGES.items():
            page.get_by_role("link", name=title).first.click()
            page.get_by_role("heading", name=title).first.wait_for(timeout=180_000)
            page.locator(ready).first.wait_for(timeout=180_000)
            page.wait_for_load_state("networkidle")
            page.wait_for_timeout(1_000)  # Plotly draws after the element appears
            page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
            errors = page.locator('[data-testid="stException"]')
            assert errors.count() == 0, f"{name}: {errors.first.inner_text()}"
            points = page.evaluate(CHART_POINTS)
            assert all(n > 0 for n in points), f"{name}: empty chart ({json.dumps(points)})"
            assert points or name == "export", f"{name}: no chart"
            if name == "migrations":
                _check_evidence_lines(page)
        browser.close()


def _check_evidence_lines(page) -> None:
    """Every open event says, before and after it, how much of its failure mix is known."""
    found = page.get_by_text(EVIDENCE_LABEL)
    lines = [item.inner_text().strip() for item in found.all() if item.is_visible()]
    assert lines, "migrations: no evidence line"
    assert all(EVIDENCE_LINE.fullmatch(line) for line in lines), lines
    sides = [EVIDENCE_LINE.fullmatch(line)[1] for line in lines]
    assert sides == ["before", "after"] * (len(sides) // 2) and len(sides) % 2 == 0, lines
