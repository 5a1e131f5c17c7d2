"""What a person feels: the time from navigation to a finished page (Streamlit's status widget
gone and the page's own last element drawn) in headless Chromium, for every dashboard page, on
the scale-1 history and on ten copies of it (``python -m bench.run browser``), beside the same
time for a Streamlit page that only writes a title, served the same way in the same run: the
part no page of ours can go below. Targets: at scale 1 at most 2.0 times that blank page and
1.5 s; at 10x at most 3 times. The server is warm: every page is opened once before the timed
navigations, so Streamlit's caches hold each page's data and the figure is not a first view.

The page table, the Chromium arguments and the "start the dashboard, open a page, wait until it
finished" helpers here are shared with ``bench/screenshots.py`` and ``tests/test_browser.py``."""

from __future__ import annotations

import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dashboard.launch import start_dashboard, stop_dashboard, wait_until_ready

if TYPE_CHECKING:
    from playwright.sync_api import Browser, BrowserContext, Page

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
VIEWPORT = {"width": 1400, "height": 1000}
# Page (its file in dashboard/views and its URL path) -> (title, an element that appears only
# once the page has computed everything).
PAGES = {
    "overview": ("Overview", ".js-plotly-plot >> visible=true"),
    "migrations": ("Migrations", ".js-plotly-plot >> visible=true"),
    "failures": ("Failures", '[data-testid="stDataFrame"]'),
    "flaky_jobs": ("Flaky jobs", '[data-testid="stDataFrame"] >> nth=2'),
    "runners": ("Runners and environments", '[data-testid="stDataFrame"] >> nth=2'),
    "export": ("Export", '[data-testid="stDownloadButton"]'),
}
DEFAULT_PAGE = "overview"  # served at the root (st.Page(default=True))
# Shown while a script run is under way, removed when it ends.
STATUS_WIDGET = '[data-testid="stStatusWidget"]'
TIMEOUT_MS = 180_000

COMMAND = "python -m bench.run browser"
REPEATS = 5
# label -> (copies of scale 1, target ratio to the blank page, target seconds or None)
DATABASES: dict[str, tuple[int, float, float | None]] = {
    "scale 1": (1, 2.0, 1.5),
    "10x": (10, 3.0, None),
}
BLANK_TITLE = "Blank"
BLANK_SCRIPT = f"import streamlit as st\n\nst.title({BLANK_TITLE!r})\n"
# The floors no page of ours can go below, served and timed as the dashboard is: the blank
# page, and the blank page with one two-point Plotly chart (Streamlit then loads plotly.js,
# 4.6 MB, and runs it: what every page with a chart pays first). The same chart in Vega-Lite
# (st.altair_chart, Streamlit's own charts) is timed beside it: the floor a page would have
# without Plotly (docs/decisions/chart-library.md). Script names are module names: no
# "altair".
FLOORS = {
    "blank": BLANK_SCRIPT,
    "one_chart": BLANK_SCRIPT
    + "import plotly.graph_objects as go\n\n"
    + "st.plotly_chart(go.Figure(go.Scatter(x=[1, 2], y=[1, 2])))\n",
    "one_vega_chart": BLANK_SCRIPT
    + "import altair as alt\nimport pandas as pd\n\n"
    + "points = pd.DataFrame({'x': [1, 2], 'y': [1, 2]})\n"
    + "st.altair_chart(alt.Chart(points).mark_line().encode(x='x', y='y'))\n",
}
# Two blank pages of one app (st.navigation, as the dashboard): a click between them is the
# least a click in the sidebar costs.
BLANK_PAGES_SCRIPT = f"""import streamlit as st


def first():
    st.title({BLANK_TITLE!r})


def second():
    st.title("Blank too")


st.navigation([st.Page(first, default=True), st.Page(second, title="Blank too")]).run()
"""
# Every page timed: (its title, an element that shows once it has computed everything).
WAIT_FOR = {
    **PAGES,
    "blank": (BLANK_TITLE, "h1"),
    "blank_too": ("Blank too", "h1"),
    "one_chart": (BLANK_TITLE, ".js-plotly-plot >> visible=true"),
    "one_vega_chart": (BLANK_TITLE, ".vega-embed >> visible=true"),
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def page_url(address: str, name: str) -> str:
    return address + "/" if name == DEFAULT_PAGE else f"{address}/{name}"


@contextmanager
def dashboard(db_url: str, *, quiet: bool = False) -> Iterator[str]:
    """``ciflake --db URL dashboard`` on a free port; yields its address, stops it after."""
    port = free_port()
    ciflake = Path(sys.executable).with_name("ciflake")
    output = subprocess.DEVNULL if quiet else None
    process = subprocess.Popen(
        [ciflake, "--db", db_url, "dashboard", "--port", str(port)], stdout=output
    )
    address = f"http://127.0.0.1:{port}"
    try:
        wait_until_ready(address, process, timeout=120)
        yield address
    finally:
        stop_dashboard(process)


@contextmanager
def chromium() -> Iterator[Browser]:
    """Debian's Chromium, headless, driven by Playwright."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def unavailable() -> str | None:
    """Why no browser can be driven here, or None."""
    if not CHROMIUM.exists():
        return f"{CHROMIUM} not installed (apt install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright Python package is not installed"
    return None


@dataclass(frozen=True)
class Timing:
    """Seconds from the start of navigation until: the page's heading showed (the frontend
    loaded, the session started, app.py drew the sidebar and status lines), its ready element
    showed, and the status widget was gone (the script run ended)."""

    heading: float
    ready: float
    finished: float


def wait_finished(page: Page, name: str, started: float | None = None) -> Timing:
    """Wait until ``page`` shows the page ``name`` finished: its heading, its ready element,
    then no status widget."""
    started = time.perf_counter() if started is None else started
    title, ready = WAIT_FOR[name]
    page.get_by_role("heading", name=title).first.wait_for(timeout=TIMEOUT_MS)
    heading = time.perf_counter() - started
    page.locator(ready).first.wait_for(timeout=TIMEOUT_MS)
    shown = time.perf_counter() - started
    page.locator(STATUS_WIDGET).first.wait_for(state="hidden", timeout=TIMEOUT_MS)
    return Timing(heading, shown, time.perf_counter() - started)


def open_page(context: BrowserContext, address: str, name: str) -> tuple[Page, Timing]:
    """A new tab on the page ``name``, once it finished, and how long that took."""
    page = context.new_page()
    started = time.perf_counter()
    page.goto(page_url(address, name), timeout=TIMEOUT_MS)
    return page, wait_finished(page, name, started)


@contextmanager
def served(tmp: Path, name: str, source: str) -> Iterator[str]:
    """A Streamlit script (``source``) served as the dashboard is (dashboard.launch); yields
    its address."""
    script = tmp / f"{name}.py"
    script.write_text(source)
    process, address = start_dashboard(db_url="", host="127.0.0.1", port=free_port(), app=script)
    try:
        wait_until_ready(address, process, timeout=120)
        yield address
    finally:
        stop_dashboard(process)


def _floor_times(browser: Browser, tmp: Path, name: str) -> list[Timing]:
    """REPEATS warm navigations to the floor page ``name``, after one to warm it."""
    with served(tmp, name, FLOORS[name]) as address:
        context = browser.new_context(viewport=VIEWPORT)
        try:
            timings = []
            for _ in range(REPEATS + 1):
                page = context.new_page()
                started = time.perf_counter()
                page.goto(address + "/", timeout=TIMEOUT_MS)
                timings.append(wait_finished(page, name, started))
                page.close()
            return timings[1:]
        finally:
            context.close()


def click_to(page: Page, name: str) -> Timing:
    """Click the sidebar link to the page ``name`` and wait until that page finished."""
    started = time.perf_counter()
    page.get_by_role("link", name=WAIT_FOR[name][0]).first.click()
    return wait_finished(page, name, started)


def _blank_click_times(browser: Browser, tmp: Path) -> list[Timing]:
    """REPEATS clicks between two blank pages of one app, after two to warm them."""
    with served(tmp, "blank_pages", BLANK_PAGES_SCRIPT) as address:
        page = browser.new_page(viewport=VIEWPORT)
        try:
            page.goto(address + "/", timeout=TIMEOUT_MS)
            wait_finished(page, "blank")
            targets = (["blank_too", "blank"] * REPEATS)[: REPEATS + 2]
            return [click_to(page, name) for name in targets][2:]
        finally:
            page.close()


def _database(copies: int, tmp: Path) -> Path:
    from bench.dashboard import _copies, scale1_ready

    scale1 = scale1_ready()
    if copies == 1:
        return scale1
    path = tmp / f"copies-{copies}.db"
    _copies(scale1, path, copies)
    return path


def _page_times(
    browser: Browser, db_url: str
) -> tuple[dict[str, list[Timing]], dict[str, list[Timing]]]:
    """REPEATS warm navigations per page (each a new tab, page.goto), then REPEATS clicks
    per page in the sidebar of one tab, page after page: after every page was opened once."""
    with dashboard(db_url, quiet=True) as address:
        context = browser.new_context(viewport=VIEWPORT)
        try:
            for name in PAGES:  # warm: fill Streamlit's caches (and the browser's)
                page, _ = open_page(context, address, name)
                page.close()
            loads: dict[str, list[Timing]] = {name: [] for name in PAGES}
            for _ in range(REPEATS):
                for name in PAGES:
                    page, timing = open_page(context, address, name)
                    page.close()
                    loads[name].append(timing)
            clicks: dict[str, list[Timing]] = {name: [] for name in PAGES}
            page, _ = open_page(context, address, list(PAGES)[-1])  # then click to the first
            for _ in range(REPEATS):
                for name in PAGES:
                    clicks[name].append(click_to(page, name))
            return loads, clicks
        finally:
            context.close()


def _why_slow(timings: list[Timing]) -> str:
    """Which part of the median navigation dominates: until the page's heading (frontend,
    session, app.py's sidebar and status lines) or after it (the page's own work)."""
    middle = sorted(timings, key=lambda t: t.finished)[len(timings) // 2]
    shell, work = middle.heading, middle.finished - middle.heading
    where = (
        "until the heading: app.py's sidebar and status lines (and, for a page load, loading "
        "the frontend and starting the session)"
        if shell >= work
        else "after the heading: the page's own loaders and drawing its charts and tables"
    )
    return (
        f"of the median navigation's {middle.finished:.2f} s, {shell:.2f} s pass until the "
        f"page's heading shows and {work:.2f} s after it, so most of it is {where}"
    )


def _target(ratio: float, seconds: float | None) -> str:
    return f"<= {ratio:g}x blank" + (f" and <= {seconds:g} s" if seconds is not None else "")


def _not_measured(reason: str) -> list[dict]:
    return [
        {
            "figure": f"Browser {kind} time, {name} page, {label} (warm server)",
            "value": "not measured",
            "target": _target(ratio, seconds),
            "met": None,
            "command": COMMAND,
            "note": reason,
        }
        for label, (_, ratio, seconds) in DATABASES.items()
        for kind in ("page", "click")
        for name in PAGES
    ]


def _median(timings: list[Timing]) -> float:
    return statistics.median(t.finished for t in timings)


def _floor_row(figure: str, value: str, note: str) -> dict[str, Any]:
    return {
        "figure": figure,
        "value": value,
        "target": "-",
        "met": None,
        "command": COMMAND,
        "note": note,
    }


def _page_row(
    figure: str, timings: list[Timing], floor: tuple[str, float], label: str, note: str
) -> dict[str, Any]:
    """A page's row against ``floor`` (its name, its seconds) and ``label``'s targets."""
    _, most_ratio, most_seconds = DATABASES[label]
    (floor_name, floor_seconds), seconds = floor, _median(timings)
    ratio = seconds / floor_seconds
    met = ratio <= most_ratio and (most_seconds is None or seconds <= most_seconds)
    return {
        "figure": figure,
        "value": f"{ratio:.2f}x {floor_name} ({seconds:.2f} s vs {floor_seconds:.2f} s)",
        "target": _target(most_ratio, most_seconds),
        "met": met,
        "command": COMMAND,
        "note": note if met else f"{note}; {_why_slow(timings)}",
    }


def _measure_database(browser: Browser, tmp: Path, label: str) -> list[dict]:
    from bench.dashboard import _job_count

    path = _database(DATABASES[label][0], tmp)
    jobs = _job_count(path)
    loads, clicks = _page_times(browser, f"sqlite:///{path}")
    blank = _median(_floor_times(browser, tmp, "blank"))
    one_chart = _median(_floor_times(browser, tmp, "one_chart"))
    one_vega_chart = _median(_floor_times(browser, tmp, "one_vega_chart"))
    blank_click = _median(_blank_click_times(browser, tmp))
    if path.parent == tmp:
        path.unlink()
    shared = f"{jobs:,} jobs; headless Chromium at {VIEWPORT['width']}x{VIEWPORT['height']}"
    rows = [
        _floor_row(
            f"Browser page time, blank Streamlit page, {label} run",
            f"{blank:.2f} s",
            "a script that only writes a title, served as the dashboard is; median of "
            f"{REPEATS} warm navigations, measured in the same run",
        ),
        _floor_row(
            f"Browser page time, one-chart Streamlit page, {label} run",
            f"{one_chart / blank:.2f}x blank ({one_chart:.2f} s)",
            "the blank page with one two-point Plotly chart, timed as the blank page: what "
            "every page with a chart pays before drawing its own (Streamlit loads and runs "
            "plotly.js, 4.6 MB); a page with a chart cannot be under this ratio here",
        ),
        _floor_row(
            f"Browser page time, one-chart Vega-Lite page, {label} run",
            f"{one_vega_chart / blank:.2f}x blank ({one_vega_chart:.2f} s)",
            "the same two-point chart drawn by st.altair_chart (Vega-Lite, Streamlit's own "
            "charts), timed as the blank page: the floor of a page with charts without Plotly",
        ),
        _floor_row(
            f"Browser click time, blank page to blank page, {label} run",
            f"{blank_click:.2f} s",
            "a click in the sidebar of an app of two blank pages until the other page "
            f"finished; median of {REPEATS}, measured in the same run",
        ),
    ]
    for name in PAGES:
        rows.append(
            _page_row(
                f"Browser page time, {name} page, {label} (warm server)",
                loads[name],
                ("blank", blank),
                label,
                f"{shared}, from page.goto to the page's last element shown and Streamlit's "
                f"status widget gone; median of {REPEATS} navigations, each in a new tab of one "
                "browser context, after every page was opened once: the warm time "
                "(Streamlit's caches and the browser's cache filled), not a first view",
            )
        )
    for name in PAGES:
        rows.append(
            _page_row(
                f"Browser click time, {name} page, {label} (warm server)",
                clicks[name],
                ("a blank click", blank_click),
                label,
                f"{shared}, from a click on the page's link in the sidebar (from the page "
                "before it in the menu) to the page finished, as a person moves between "
                f"pages; median of {REPEATS}",
            )
        )
    return rows


def measure() -> list[dict]:
    reason = unavailable()
    if reason is not None:
        return _not_measured(reason)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, chromium() as browser:
        for label in DATABASES:
            rows += _measure_database(browser, Path(tmp), label)
    return rows
