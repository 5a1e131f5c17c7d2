"""A real browser on a running ``ciflake dashboard``: every section of every page opens with no
error element and charts that carry data, the Migrations page says how much of each side's
failure mix is known; a screenshot per section lands in tests/artifacts/ for a human to look
at."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

# The page table (title and ready element per page), Chromium and its arguments: shared with
# the browser bench and the screenshots.
from bench.browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    PAGES,
    _watch,
    click_to,
    dashboard,
    open_page,
    open_section,
    page_url,
    sections_of,
    wait_finished,
)

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
# Plotly.js keeps each drawn chart's decoded traces on its graph div; ``_length`` is a trace's
# point count (a heatmap counts its rows). Count the points of each chart on the page.
CHART_POINTS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(
    div => (div._fullData || []).reduce(
        (n, t) => n + (t._length || (t.z ? t.z.length : 0) || 0), 0))"""

# Every chart on the page has been drawn: Plotly.js sets ``_fullData`` when it has.
CHARTS_DRAWN = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).every(
    div => Array.isArray(div._fullData))"""

# The Migrations page's line per side of an event (analytics.evidence.describe after the label).
EVIDENCE_LABEL = re.compile(r"^Failure causes (before|after): ")
EVIDENCE_LINE = re.compile(
    r"Failure causes (before|after): (category (from|unknown) .+; n=\d+ failures?|no failures)"
)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.xdist_group("browser"),  # one worker, so one dashboard server for them all
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"{CHROMIUM} not installed (apt chromium)"),
]


@pytest.fixture(scope="module")
def dashboard_url(demo_db: str) -> Iterator[str]:
    """``ciflake dashboard`` on a free port over the demo database."""
    with dashboard(demo_db) as address:
        yield address


def test_every_page_in_chromium(dashboard_url: str) -> None:
    """About 40 s: every section of every page drawn in Chromium. The first browser test also
    waits for the demo's collect (about 30 s, made once for the session) and the dashboard's
    start."""
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = _watch(browser.new_page(viewport={"width": 1500, "height": 1100}))
        started = time.perf_counter()
        page.goto(page_url(dashboard_url, "export"))  # then click away from it
        wait_finished(page, "export", started, 0)
        for name in PAGES:
            click_to(page, name)  # its script run ended, its heading and first section shown
            charted = 0
            labels = sections_of(page)
            for number, label in enumerate(labels or [""]):
                if number:
                    open_section(page, name, label)
                page.wait_for_load_state("networkidle")
                page.wait_for_function(CHARTS_DRAWN)  # Plotly draws after the element appears
                shot = f"{name}-{number}" if labels else name
                page.screenshot(path=str(ARTIFACTS / f"{shot}.png"), full_page=True)
                errors = page.locator('[data-testid="stException"]')
                assert errors.count() == 0, f"{shot}: {errors.first.inner_text()}"
                points = page.evaluate(CHART_POINTS)
                assert all(n > 0 for n in points), f"{shot}: empty chart ({json.dumps(points)})"
                charted += len(points)
                if name == "migrations":
                    _check_evidence_lines(page)
            assert charted or name == "export", f"{name}: no chart in any section"
        browser.close()


def _check_evidence_lines(page) -> None:
    """Every open event says, before and after it, how much of its failure mix is known."""
    found = page.get_by_text(EVIDENCE_LABEL)
    lines = [item.inner_text().strip() for item in found.all() if item.is_visible()]
    assert lines, "migrations: no evidence line"
    assert all(EVIDENCE_LINE.fullmatch(line) for line in lines), lines
    sides = [EVIDENCE_LINE.fullmatch(line)[1] for line in lines]
    assert sides == ["before", "after"] * (len(sides) // 2) and len(sides) % 2 == 0, lines


# The workflows #7357 migrated to v1 separate_async (or deleted, trtllm): RETIRED, not STALE.
PREDECESSORS_7357 = {
    "e2e_fully_async_policy.yml",
    "e2e_one_step_off_policy.yml",
    "e2e_fully_async_policy_opd.yml",
    "e2e_fully_async_policy_ascend.yml",
    "e2e_one_step_off_policy_ascend.yml",
    "e2e_fully_async_policy_trtllm.yml",
}
TILE = re.compile(r"(PASSING|FLAKY|FAILING|STALE|NO DATA|RETIRED)\s+(\S+\.yml)")


def _fresh_workflows(db_url: str, hours: int) -> set[str]:
    """The workflow files (names) with a default-branch push or schedule run (the runs STALE
    reads) in the last ``hours`` hours before the newest stored run."""
    from sqlalchemy import text

    from store.engine import make_engine

    engine = make_engine(db_url, read_only=True)
    with engine.connect() as conn:
        newest = conn.execute(text("SELECT max(created_at) FROM workflow_runs")).scalar_one()
        rows = conn.execute(
            text(
                "SELECT DISTINCT workflow_path FROM workflow_runs WHERE created_at >= "
                "datetime(:newest, :back) AND event IN ('push', 'schedule') "
                "AND head_branch = 'main'"
            ),
            {"newest": newest, "back": f"-{hours} hours"},
        ).scalars()
        recent = {path.rsplit("/", 1)[-1] for path in rows}
    engine.dispose()
    return recent


def test_the_overview_tiles_answer_now(dashboard_url: str, demo_db: str) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1500, "height": 1100})
        page.goto(dashboard_url, wait_until="networkidle")
        page.get_by_role("heading", name="Workflows").first.wait_for(timeout=180_000)
        page.locator(PAGES["overview"][1]).first.wait_for(timeout=180_000)
        text = page.locator('[data-testid="stMain"]').inner_text()
        browser.close()
    tiles = {name: status for status, name in TILE.findall(text)}
    assert set(tiles) >= PREDECESSORS_7357, sorted(tiles)
    assert {tiles[name] for name in PREDECESSORS_7357} == {"RETIRED"}, tiles
    # Silent for less than an hour before the newest stored run, the reference STALE measures
    # from: never three of its usual gaps. (A workflow that ran hours ago may be STALE if it
    # usually runs every hour; measured from the wall clock, every one would be.)
    fresh = _fresh_workflows(demo_db, 1) & set(tiles)
    assert fresh and all(tiles[name] != "STALE" for name in fresh), tiles


MAIN_LINEAGES = {
    "e2e_v1_separate_async",
    "e2e_v1_separate_async_ascend",
    "e2e_v1_separate_async_opd",
    "e2e_ascend",
}
HEADLINE_N = re.compile(r"n=(\d+) in the 14 days after, vs predecessors .* n=(\d+) in the 14")


def test_the_demo_tells_the_migrations_story(dashboard_url: str, demo_db: str) -> None:
    """On the demo: each main lineage holds 30 or more runs on either side of #6568 and #7357,
    and the Overview lists June's shift. The pages' tables are drawn on a canvas, so the counts
    and dates come from the loaders those tables show (the same database and filters); the
    browser checks what it can read: the #7357 sentence and a changepoint table, not the
    "no shift" line."""
    from playwright.sync_api import sync_playwright

    from dashboard.filters import Filters
    from dashboard.loaders import shared

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1500, "height": 1100})
        overview, _ = open_page(context, dashboard_url, "overview")
        open_section(overview, "overview", "Changepoints")
        overview.wait_for_load_state("networkidle")  # the grids' code arrives after the text
        overview.wait_for_function(CHARTS_DRAWN)
        overview_text = overview.locator('[data-testid="stMain"]').inner_text()
        tables = overview.locator('[data-testid="stDataFrame"]').count()
        # what the page was filtered on, to read when it fails
        shown = overview.locator('[data-testid="stSidebar"] input').evaluate_all(
            "inputs => inputs.map(input => input.value)"
        )
        if "No shift in the range" in overview_text or tables < 1:
            ARTIFACTS.mkdir(exist_ok=True)
            overview.screenshot(path=str(ARTIFACTS / "story-overview.png"), full_page=True)
        page, _ = open_page(context, dashboard_url, "migrations")
        sentences = page.locator('[data-testid="stMain"]').inner_text().splitlines()
        browser.close()
    changepoints = overview_text[overview_text.find("Changepoints") :]
    assert "No shift in the range" not in overview_text and tables >= 1, (
        shown,
        tables,
        changepoints[:600],
    )
    sentence = next(line for line in sentences if line.startswith("#7357"))
    after, before = map(int, HEADLINE_N.search(sentence).groups())
    assert after >= 30 and before >= 30, sentence

    first, last = shared.day_span(demo_db, "verl-project/verl")
    filters = Filters("verl-project/verl", first, last, (), "default")
    table = shared.table(demo_db, filters, "before-after", since=None, until=None)
    for pr in (6568, 7357):
        rows = table[(table["event_pr"] == pr) & table["lineage"].isin(MAIN_LINEAGES)]
        assert set(rows["lineage"]) == MAIN_LINEAGES, (pr, sorted(rows["lineage"]))
        assert (rows["before_runs"] >= 30).all() and (rows["after_runs"] >= 30).all(), rows
    found = shared.table(demo_db, filters, "changepoints")
    v1 = found[found["lineage"] == "e2e_v1_separate_async"].set_index("date")
    june = v1[(v1.index >= "2026-06-01") & (v1.index < "2026-07-01")]
    drops = june[june["after_rate"] < june["before_rate"]]
    rises = june[june["after_rate"] > june["before_rate"]]
    # the README's story: up when #6551's images broke nine workflows, down with #6823
    assert len(drops) >= 1 and len(rises) >= 1, found[["lineage", "date", "before_rate"]]
    assert rises.index.min() < drops.index.max()


def test_the_frame_floor_is_the_dashboards_frame_with_a_chart_and_a_table(
    demo_db: str, tmp_path: Path
) -> None:
    """The browser bench's frame floor serves the dashboard's own app.py (its sidebar and
    status lines) with, as its page, one chart and one table: what it says it measures."""
    from bench.browser import FRAME, chromium, framed

    with framed(tmp_path, demo_db) as address, chromium() as context:
        page, _ = open_page(context, address, FRAME)
        sidebar = page.locator('[data-testid="stSidebar"]')
        assert sidebar.get_by_role("radio", name="Pull requests").count() == 1
        assert sidebar.get_by_role("link", name="Flaky jobs").count() == 1
        assert "Simulated data" in page.locator('[data-testid="stMain"]').inner_text()
        assert page.locator('[data-testid="stPlotlyChart"]').count() == 1
        assert page.locator('[data-testid="stDataFrame"]').count() == 1
