"""What a person feels, in headless Chromium, with ONE browser context for the whole run (its
cache warm, as a maintainer's browser is), at scale 1 and on ten copies of it
(``python -m bench.run browser``): every page opened in a new tab, every page reached from
another through the sidebar in the same tab, and a filter change (the scope) on a page already
shown. Each is timed from the navigation, click or change until the script run it started has
ended, every chart's SVG is drawn and no lazy placeholder (``stSkeleton``) is left. Beside
them, in the same run and timed alike, their floors: a Streamlit page that only writes a title
and the same page with one two-point Plotly chart, each in a new tab; the dashboard's own frame
(app.py: its sidebar and status lines) with a page of one such chart and a small table, in a
new tab (``framed``); a click between two blank pages of one app; a change of a radio on a
blank page. #49's targets: a page in a new tab at
most 1.25x the one-chart floor at scale 1 and 1.5x at 10x; through the sidebar at most 0.4 s
and 0.8 s; a filter change at most 0.3 s and 0.6 s. ``CIFLAKE_BENCH_REPEATS=N`` sets the
timings per figure (default 5). ``python -m bench.browser [FLOOR...]`` measures only the floors
named (blank, one_chart, click, change; all four by default) and prints them, RESULTS.md
untouched: a minute, where the whole run takes six.

The server is warm: every page is opened once before the timed navigations, so Streamlit's
caches hold each page's data for the default filters (a filter change to a scope the page has
not shown yet computes it: its own row). The page table, the Chromium arguments and the "start
the dashboard, open a page, wait until it finished" helpers here are shared with
``bench/screenshots.py``, ``bench/dashboard.py`` (its memory row) and ``tests/test_browser.py``."""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dashboard.filters import SCOPES
from dashboard.launch import start_dashboard, stop_dashboard, wait_until_ready

if TYPE_CHECKING:
    from playwright.sync_api import BrowserContext, Page

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
# Page (its file in dashboard/views and its URL path) -> (title, an element of the section it
# opens on (dashboard.sections) that appears only once that section has computed everything).
PAGES = {
    "overview": ("Overview", '[data-testid="stColumn"] [data-testid="stMarkdown"]'),
    "migrations": ("Migrations", '[data-testid="stDataFrame"]'),
    "failures": ("Failures", ".js-plotly-plot >> visible=true"),
    "flaky_jobs": ("Flaky jobs", '[data-testid="stDataFrame"]'),
    "runners": ("Runners and environments", '[data-testid="stDataFrame"]'),
    "export": ("Export", '[data-testid="stDownloadButton"]'),
}
# The tab of the section opened, selected (the page's sections have no one element in common):
# waited for with the script run its click caused, ended, and every chart drawn.
SECTION_READY = '[data-testid="stTab"][aria-selected="true"] >> text={label}'
DEFAULT_PAGE = "overview"  # served at the root (st.Page(default=True))
TIMEOUT_MS = 180_000
# The script runs the server reported ended on each tab (a ForwardMsg ``script_finished`` on
# its websocket, not one cut short by a rerun): the frontend's status widget shows only after
# 500 ms, too late to tell a short run, and its state attribute may skip a short run.
RUNS_ENDED: dict[Page, int] = {}
SMALL_FRAME = 512  # bytes: a script_finished message is a few; data frames are not parsed
# No script running, no lazy placeholder left, and every Plotly chart drawn (Plotly.js sets
# _fullData and draws its SVG).
DRAWN = """() => document.querySelector('[data-testid="stApp"]')
    ?.getAttribute('data-test-script-state') === 'notRunning'
  && !document.querySelector('[data-testid="stSkeleton"]')
  && Array.from(document.querySelectorAll('[data-testid="stPlotlyChart"]')).every(chart => {
    const plot = chart.querySelector('.js-plotly-plot');
    return plot && Array.isArray(plot._fullData) && plot.querySelector('svg.main-svg');
  })"""
# DRAWN, a heading with ``title`` (lower case) in its text and an element matching ``css``
# (the CSS part of the page's ready selector): checked in the page, so the locators after it
# find their elements at their first try.
SHOWN = f"""([title, css]) => ({DRAWN})()
  && Array.from(document.querySelectorAll('h1, h2, h3, h4, h5, h6'))
    .some(heading => heading.textContent.toLowerCase().includes(title))
  && document.querySelector(css) !== null"""

COMMAND = "python -m bench.run browser"
REPEATS = int(os.environ.get("CIFLAKE_BENCH_REPEATS", "5"))
# label -> (copies of scale 1, most ratio to the one-chart floor in a new tab, most seconds
# through the sidebar, most seconds for a filter change)
DATABASES: dict[str, tuple[int, float, float, float]] = {
    "scale 1": (1, 1.25, 0.4, 0.3),
    "10x": (10, 1.5, 0.8, 0.6),
}
BLANK_TITLE = "Blank"
BLANK_SCRIPT = f"import streamlit as st\n\nst.title({BLANK_TITLE!r})\n"
# The floors of a page in a new tab, served and timed as the dashboard is: the blank page, and
# the blank page with one two-point Plotly chart (Streamlit then loads plotly.js, 4.6 MB, and
# runs it: what every page with a chart pays first).
FLOORS = {
    "blank": BLANK_SCRIPT,
    "one_chart": BLANK_SCRIPT
    + "import plotly.graph_objects as go\n\n"
    + "st.plotly_chart(go.Figure(go.Scatter(x=[1, 2], y=[1, 2])))\n",
}
FLOOR_NAMES = (*FLOORS, "click", "change")
# The floor of a page whose first section holds a chart and a table: the dashboard's own
# app.py (its sidebar and status lines, on the database measured) serving, as each of its
# pages, a title, one two-point Plotly chart and a table of 32 rows and 12 columns.
FRAME = "frame"
FRAME_PAGE = """import pandas as pd
import plotly.graph_objects as go
import streamlit as st

st.title({title!r})
st.plotly_chart(go.Figure(go.Scatter(x=[1, 2], y=[1, 2])))
st.dataframe(pd.DataFrame({{f"column {{i}}": range(32) for i in range(12)}}), hide_index=True)
"""
# Two blank pages of one app (st.navigation, as the dashboard) under a sidebar radio of the
# dashboard's scopes: a click between them is the least a click in the sidebar costs, a change
# of the radio the least a filter change costs.
BLANK_PAGES_SCRIPT = f"""import streamlit as st

st.sidebar.radio("Scope", {list(SCOPES.values())!r}, key="scope", horizontal=True)


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
    FRAME: (PAGES[DEFAULT_PAGE][0], '[data-testid="stDataFrame"]'),
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def page_url(address: str, name: str) -> str:
    """The address of the dashboard's page ``name``; a floor's page is its server's root."""
    return f"{address}/{name}" if name in PAGES and name != DEFAULT_PAGE else address + "/"


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
def chromium() -> Iterator[BrowserContext]:
    """Debian's Chromium, headless, driven by Playwright: the one browser context of a run,
    its cache kept from page to page. A profile on disk (a temporary one), as a maintainer's
    browser has, not an incognito-like context (Playwright's ``new_context``): Chromium keeps
    V8's compiled code of a script only on disk, so every tab of an incognito context compiles
    Streamlit's bundle and plotly.js again, which no person's browser does."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as profile, sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            profile, executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, viewport=VIEWPORT
        )
        try:
            yield context
        finally:
            context.close()


def unavailable() -> str | None:
    """Why no browser can be driven here, or None."""
    if not CHROMIUM.exists():
        return f"{CHROMIUM} not installed (apt install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright Python package is not installed"
    return None


def _watch(page: Page) -> Page:
    """Count the script runs that end on ``page`` into RUNS_ENDED."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    RUNS_ENDED[page] = 0

    def frame(payload: bytes | str) -> None:
        if isinstance(payload, bytes) and len(payload) < SMALL_FRAME:
            message = ForwardMsg.FromString(payload)
            if (
                message.WhichOneof("type") == "script_finished"
                and message.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN
            ):
                RUNS_ENDED[page] += 1

    page.on("websocket", lambda socket: socket.on("framereceived", frame))
    return page


def wait_finished(
    page: Page, name: str, started: float, runs: int, ready: str | None = None
) -> float:
    """Seconds from ``started`` until a script run ended on ``page`` after the ``runs`` it had
    ended before, and it shows the page ``name`` (its heading and ready element) all drawn
    (DRAWN); an error element on it is an error here. The page itself watches for that state
    on every animation frame (SHOWN) before the locators check it: a locator's wait_for retries
    at 20, 50, 100, 100, then every 500 ms, so waiting on it alone added a median 0.36 s after a
    one-chart page was drawn (up to 0.56 s), time no person waits. ``ready``: another element
    to wait for than the page's own (SECTION_READY after a click on a section's tab)."""
    title, ready = WAIT_FOR[name][0], ready or WAIT_FOR[name][1]
    deadline = started + TIMEOUT_MS / 1000
    while RUNS_ENDED[page] <= runs:
        if time.perf_counter() > deadline:
            raise TimeoutError(f"{name}: no script run ended in {TIMEOUT_MS / 1000:.0f} s")
        page.wait_for_timeout(5)
    shown = [title.lower(), ready.split(" >> ")[0]]
    page.wait_for_function(SHOWN, arg=shown, polling="raf", timeout=TIMEOUT_MS)
    page.get_by_role("heading", name=title).first.wait_for(timeout=TIMEOUT_MS)
    page.locator(ready).first.wait_for(timeout=TIMEOUT_MS)
    page.wait_for_function(DRAWN, timeout=TIMEOUT_MS)
    seconds = time.perf_counter() - started
    errors = page.locator('[data-testid="stException"]')
    if errors.count():
        raise RuntimeError(f"{name}: the page shows an error: {errors.first.inner_text()}")
    return seconds


def open_page(context: BrowserContext, address: str, name: str) -> tuple[Page, float]:
    """A new tab on the page ``name``, once it finished, and how long that took."""
    page = _watch(context.new_page())
    started = time.perf_counter()
    page.goto(page_url(address, name), timeout=TIMEOUT_MS)
    return page, wait_finished(page, name, started, 0)


def click_to(page: Page, name: str) -> float:
    """Click the sidebar link to the page ``name`` and wait until that page finished."""
    runs, started = RUNS_ENDED[page], time.perf_counter()
    page.get_by_role("link", name=WAIT_FOR[name][0]).first.click()
    return wait_finished(page, name, started, runs)


def choose_scope(page: Page, name: str, scope: str) -> float:
    """Choose ``scope`` (its label) in the sidebar of the page ``name``, shown, and wait until
    the page finished again."""
    runs, started = RUNS_ENDED[page], time.perf_counter()
    sidebar = page.locator('[data-testid="stSidebar"]')
    sidebar.get_by_role("radio", name=scope, exact=True).click(force=True)
    return wait_finished(page, name, started, runs)


def sections_of(page: Page) -> list[str]:
    """The labels of the sections (dashboard.sections) of the page shown, in order."""
    return [tab.inner_text().strip() for tab in page.locator('[data-testid="stTab"]').all()]


def open_section(page: Page, name: str, label: str) -> float:
    """Click the tab of the section ``label`` of the page ``name``, shown, and wait until the
    page finished again with that section open."""
    runs, started = RUNS_ENDED[page], time.perf_counter()
    page.get_by_role("tab", name=label, exact=True).click()
    return wait_finished(page, name, started, runs, SECTION_READY.format(label=json.dumps(label)))


@contextmanager
def served(tmp: Path, name: str, source: str) -> Iterator[str]:
    """A Streamlit script (``source``) served as the dashboard is (dashboard.launch); yields
    its address."""
    script = tmp / f"{name}.py"
    script.write_text(source)
    with _serving(script, "") as address:
        yield address


@contextmanager
def _serving(app: Path, db_url: str) -> Iterator[str]:
    """The Streamlit script ``app`` served on ``db_url`` as the dashboard is (dashboard.launch),
    on a free port, until the block ends; yields its address."""
    process, address = start_dashboard(db_url=db_url, host="127.0.0.1", port=free_port(), app=app)
    try:
        wait_until_ready(address, process, timeout=120)
        yield address
    finally:
        stop_dashboard(process)


@contextmanager
def framed(tmp: Path, db_url: str) -> Iterator[str]:
    """The dashboard's app.py, copied with a views folder beside it in which every page is
    FRAME_PAGE, served on ``db_url`` as the dashboard is; yields its address."""
    from dashboard.launch import APP

    (tmp / FRAME).mkdir(exist_ok=True)
    views = tmp / FRAME / "views"
    views.mkdir(exist_ok=True)
    for name, (title, _) in PAGES.items():
        (views / f"{name}.py").write_text(FRAME_PAGE.format(title=title))
    app = tmp / FRAME / "app.py"
    app.write_text(APP.read_text(encoding="utf-8"))
    with _serving(app, db_url) as address:
        yield address


def _new_tab_times(context: BrowserContext, address: str, name: str) -> list[float]:
    """REPEATS navigations to ``name``, each in a new tab, after one to warm it."""
    times = []
    for _ in range(REPEATS + 1):
        page, seconds = open_page(context, address, name)
        page.close()
        times.append(seconds)
    return times[1:]


def _floors(
    context: BrowserContext, tmp: Path, names: Collection[str] = FLOOR_NAMES
) -> dict[str, float]:
    """The median of each floor in ``names``: a blank page and the one-chart page in a new
    tab, a click between two blank pages, a change of a radio on a blank page (each after two
    to warm)."""
    floors = {}
    for name, source in FLOORS.items():
        if name in names:
            with served(tmp, name, source) as address:
                floors[name] = statistics.median(_new_tab_times(context, address, name))
    if not {"click", "change"} & set(names):
        return floors
    with served(tmp, "blank_pages", BLANK_PAGES_SCRIPT) as address:
        page, _ = open_page(context, address, "blank")
        if "click" in names:
            targets = ["blank_too", "blank"] * (REPEATS // 2 + 2)
            floors["click"] = statistics.median([click_to(page, t) for t in targets][2:])
        if "change" in names:
            scopes = [*list(SCOPES.values())[1:], list(SCOPES.values())[0]] * (REPEATS // 3 + 2)
            changes = [choose_scope(page, "blank", s) for s in scopes][2:]
            floors["change"] = statistics.median(changes)
        page.close()
    return floors


def _page_times(context: BrowserContext, db_url: str) -> dict[str, dict[str, list[float]]]:
    """kind -> page -> seconds: REPEATS navigations per page, each a new tab ("tab"), after
    every page was opened once; then in one tab, REPEATS rounds of clicks through the sidebar,
    page after page ("click"); then on each page in turn, the scope changed to each other one
    and back, REPEATS // 3 + 1 rounds: the first round's two changes ("new") compute the
    page for a scope it has not shown, every other ("seen") reads what was computed; then,
    back on the first scope, each other section of the page opened in turn and the first
    again, REPEATS // 3 + 1 rounds: the first round's opens of the other sections
    ("section_new") compute them, every other ("section_seen") reads them again."""
    kinds = ("tab", "click", "new", "seen", "section_new", "section_seen")
    times: dict[str, dict[str, list[float]]] = {
        kind: {name: [] for name in PAGES} for kind in kinds
    }
    scopes = list(SCOPES.values())
    with dashboard(db_url, quiet=True) as address:
        for name in PAGES:  # warm: fill Streamlit's caches (and the browser's)
            open_page(context, address, name)[0].close()
        for _ in range(REPEATS):
            for name in PAGES:
                page, seconds = open_page(context, address, name)
                page.close()
                times["tab"][name].append(seconds)
        page, _ = open_page(context, address, list(PAGES)[-1])  # then click to the first
        for _ in range(REPEATS):
            for name in PAGES:
                times["click"][name].append(click_to(page, name))
        for name in PAGES:
            click_to(page, name)
            for round_ in range(REPEATS // 3 + 1):
                for number, scope in enumerate([*scopes[1:], scopes[0]]):
                    kind = "new" if round_ == 0 and number < 2 else "seen"
                    times[kind][name].append(choose_scope(page, name, scope))
            labels = sections_of(page)
            for round_ in range(REPEATS // 3 + 1) if len(labels) > 1 else ():
                for label in [*labels[1:], labels[0]]:
                    kind = "section_new" if round_ == 0 and label != labels[0] else "section_seen"
                    times[kind][name].append(open_section(page, name, label))
        page.close()
    return times


def _row(figure: str, value: str, target: str, met: bool | None, note: str) -> dict[str, Any]:
    return {
        "figure": figure,
        "value": value,
        "target": target,
        "met": met,
        "command": COMMAND,
        "note": note,
    }


def _floor_rows(label: str, floors: dict[str, float]) -> list[dict[str, Any]]:
    timed = f"median of {REPEATS} after warming it, in the run's one browser context"
    one_chart, blank = floors["one_chart"], floors["blank"]
    return [
        _row(
            f"Browser floor, blank Streamlit page in a new tab, {label} run",
            f"{blank:.2f} s",
            "-",
            None,
            f"a script that only writes a title, served as the dashboard is; {timed}",
        ),
        _row(
            f"Browser floor, one-Plotly-chart page in a new tab, {label} run",
            f"{one_chart:.2f} s ({one_chart / blank:.2f}x blank)",
            "-",
            None,
            "the blank page with one two-point Plotly chart, drawn: what every page with a "
            f"chart pays before drawing its own (Streamlit loads and runs plotly.js); {timed}",
        ),
        _row(
            f"Browser floor, the dashboard's frame with one chart and one table in a new tab, "
            f"{label} run",
            f"{floors[FRAME]:.2f} s ({floors[FRAME] / one_chart:.2f}x the one-chart floor)",
            "-",
            None,
            "the dashboard's app.py (its sidebar and status lines, on the database measured) "
            "with, as its page, a title, one two-point Plotly chart and a table of 32 rows and "
            "12 columns: what a page whose first section holds a chart and a table pays before "
            f"its own; {timed}",
        ),
        _row(
            f"Browser floor, sidebar click between two blank pages, {label} run",
            f"{floors['click']:.2f} s",
            "-",
            None,
            f"a click in the sidebar of an app of two blank pages; {timed}",
        ),
        _row(
            f"Browser floor, filter change on a blank page, {label} run",
            f"{floors['change']:.2f} s",
            "-",
            None,
            f"a change of a sidebar radio of the dashboard's scopes on a blank page; {timed}",
        ),
    ]


def _measure_database(context: BrowserContext, tmp: Path, label: str) -> list[dict[str, Any]]:
    from bench.databases import job_count, sqlite_database

    copies, most_ratio, most_click, most_change = DATABASES[label]
    with sqlite_database(copies, tmp) as path:
        url = f"sqlite:///{path}"
        jobs, times = job_count(url), _page_times(context, url)
        with framed(tmp, url) as address:
            frame = statistics.median(_new_tab_times(context, address, FRAME))
    floors = _floors(context, tmp) | {FRAME: frame}
    shared = f"{jobs:,} jobs; headless Chromium at {VIEWPORT['width']}x{VIEWPORT['height']}"
    rows = _floor_rows(label, floors)
    for name in PAGES:
        seconds = statistics.median(times["tab"][name])
        ratio = seconds / floors["one_chart"]
        rows.append(
            _row(
                f"Browser, {name} page in a new tab, {label}",
                f"{ratio:.2f}x the one-chart floor ({seconds:.2f} s vs "
                f"{floors['one_chart']:.2f} s; frame floor {floors[FRAME]:.2f} s)",
                f"<= {most_ratio:g}x the floor",
                ratio <= most_ratio,
                f"{shared}, from page.goto until the page's script run ended and every chart "
                f"was drawn; median of {REPEATS}, each in a new tab of the run's one browser "
                "context, after every page was opened once (the browser's and Streamlit's "
                "caches warm)",
            )
        )
    changes = {
        "new": ("to a scope not shown yet", "computes the open (first) section's tables for it"),
        "seen": ("to a scope shown before", "reads what the first change computed"),
    }
    for name in PAGES:
        seconds = statistics.median(times["click"][name])
        rows.append(
            _row(
                f"Browser, {name} page through the sidebar, {label}",
                f"{seconds:.2f} s (floor {floors['click']:.2f} s)",
                f"<= {most_click:g} s",
                seconds <= most_click,
                f"{shared}, from a click on the page's link in the sidebar (from the page "
                f"before it in the menu) until the page finished, in one tab; median of "
                f"{REPEATS}",
            )
        )
        for kind, (what, why) in changes.items():
            seconds = statistics.median(times[kind][name])
            rows.append(
                _row(
                    f"Browser, filter change {what}, {name} page, {label}",
                    f"{seconds:.2f} s (floor {floors['change']:.2f} s)",
                    f"<= {most_change:g} s",
                    seconds <= most_change,
                    f"{shared}, from a click on a scope in the sidebar of the page, shown, "
                    f"until it finished again; it {why}; median of {len(times[kind][name])}",
                )
            )
        rows += _section_rows(name, label, times, floors["change"], most_change, shared)
    return rows


def _section_rows(
    name: str,
    label: str,
    times: dict[str, dict[str, list[float]]],
    floor: float,
    most: float,
    shared: str,
) -> list[dict[str, Any]]:
    """A page's section opened (a click on its tab), not shown yet and shown before: the
    slowest of the page's sections the first time, held to a filter change's target, the
    rerun that computes tables it also is; no row for a page of one section."""
    rows = []
    for kind, what, why in (
        ("section_new", "not shown yet", "computes its tables; the slowest of the page's"),
        ("section_seen", "shown before", "reads what the first open computed; the median"),
    ):
        seconds = times[kind][name]
        if not seconds:
            continue
        value = max(seconds) if kind == "section_new" else statistics.median(seconds)
        rows.append(
            _row(
                f"Browser, a section {what}, {name} page, {label}",
                f"{value:.2f} s (floor {floor:.2f} s)",
                f"<= {most:g} s",
                value <= most,
                f"{shared}, from a click on a section's tab until the page finished again; it "
                f"{why} {len(seconds)} opens (median {statistics.median(seconds):.2f} s; a "
                "table another page computed before, as the incidents, is read from the "
                "cache); floor: the filter change on a blank page, the same rerun",
            )
        )
    return rows


def _not_measured(reason: str) -> list[dict[str, Any]]:
    return [
        _row(f"Browser, {name} page in a new tab, {label}", "not measured", "-", None, reason)
        for label in DATABASES
        for name in PAGES
    ]


def measure() -> list[dict[str, Any]]:
    reason = unavailable()
    if reason is not None:
        return _not_measured(reason)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, chromium() as context:
        for label in DATABASES:
            rows += _measure_database(context, Path(tmp), label)
    return rows


def main(names: list[str]) -> None:
    """Print the floors named (all by default), in a browser context of their own; RESULTS.md
    is left as it is."""
    unknown = sorted(set(names) - set(FLOOR_NAMES))
    reason = f"no floor {', '.join(unknown)}: choose from {', '.join(FLOOR_NAMES)}"
    if not unknown:
        reason = unavailable() or ""
    if reason:
        sys.exit(f"bench.browser: {reason}")
    with tempfile.TemporaryDirectory() as tmp, chromium() as context:
        floors = _floors(context, Path(tmp), names or FLOOR_NAMES)
    for name, seconds in floors.items():
        print(f"{name}: {seconds:.2f} s (median of {REPEATS})")


if __name__ == "__main__":
    main(sys.argv[1:])
