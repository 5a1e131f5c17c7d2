"""``make screenshots``: a PNG of every dashboard page in docs/screenshots/, from the demo.

Builds the demo's database as ``ciflake demo --no-dashboard`` does (fakehub's simulated verl
history collected into a database in a temporary directory), serves it with ``ciflake
dashboard`` on a free port and opens each page in Debian's Chromium at 1400x1000 (the helpers
of ``bench/browser.py``). Once a page finished, the window grows to the page's whole height
(Streamlit scrolls inside its main container, which a plain full-page capture would cut at the
window) and the page is saved as ``docs/screenshots/<page>.png``; a capture over 1.5 MB keeps
the first 3000 px only. A page opens on its first section (dashboard.sections); SECTIONS names
the other sections also saved. The Failures page's signature table is also saved filtered by
its "Show" control (FILTERS): the known issues and the NEW signatures."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from bench.browser import (
    PAGES,
    VIEWPORT,
    chromium,
    dashboard,
    open_page,
    open_section,
    unavailable,
)
from ciflake.demo import demo_database

OUT = Path(__file__).resolve().parents[1] / "docs" / "screenshots"
MAX_BYTES = 1_500_000
CLIP_HEIGHT = 3000
TALLEST = 12_000  # px: a window taller than this is not a picture anyone reads
# The height of everything a page drew: Streamlit's scrolling containers and the document.
CONTENT_HEIGHT = """() => Math.max(document.documentElement.scrollHeight, ...Array.from(
    document.querySelectorAll('[data-testid="stMain"], [data-testid="stAppViewContainer"], '
        + '[data-testid="stSidebarContent"]')).map(e => e.scrollHeight))"""


# Page -> (picture, section) of its other sections saved too; FILTERS' table is in the last.
SECTIONS = {
    "overview": [("overview_timeline", "Stability timeline")],
    "failures": [("failures_signatures", "Signatures")],
}
# The Failures page's signature table, filtered: the picture's name and the control's label.
FILTERS = {"failures_known": "known (linked to an issue)", "failures_new": "NEW"}


def capture(page, name: str) -> bytes:
    """The whole finished page ``name`` as PNG bytes (its first CLIP_HEIGHT px if too big)."""
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(1_000)  # Plotly draws after its element appears
    height = min(int(page.evaluate(CONTENT_HEIGHT)), TALLEST)
    if height > VIEWPORT["height"]:
        page.set_viewport_size({"width": VIEWPORT["width"], "height": height})
        page.wait_for_timeout(1_000)  # charts re-layout to the new window
    png = page.screenshot(full_page=True)
    if len(png) > MAX_BYTES and height > CLIP_HEIGHT:
        clip = {"x": 0, "y": 0, "width": VIEWPORT["width"], "height": CLIP_HEIGHT}
        png = page.screenshot(clip=clip)
    errors = page.locator('[data-testid="stException"]')
    if errors.count():
        raise RuntimeError(f"{name}: the page shows an error: {errors.first.inner_text()}")
    return png


def filtered(page, label: str) -> bytes:
    """The signature table (the page's last table) once the "Show" control shows ``label``."""
    page.get_by_role("radio", name=label, exact=True).click()
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(2_000)  # the script runs again and the table is redrawn
    return page.locator('[data-testid="stDataFrame"]').last.screenshot()


def save(name: str, png: bytes) -> None:
    target = OUT / f"{name}.png"
    target.write_bytes(png)
    print(f"{target.relative_to(OUT.parents[1])}: {len(png) / 1e3:.0f} kB", flush=True)


def main() -> int:
    reason = unavailable()
    if reason is not None:
        print(f"screenshots: {reason}", file=sys.stderr)
        return 1
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        print("building the demo database (fakehub, collect)...", flush=True)
        url = demo_database(Path(tmp))
        with dashboard(url, quiet=True) as address, chromium() as context:
            for name in PAGES:
                page, _ = open_page(context, address, name)
                save(name, capture(page, name))
                for picture, section in SECTIONS.get(name, []):
                    page.set_viewport_size(VIEWPORT)  # the section measures its own height
                    open_section(page, name, section)
                    save(picture, capture(page, name))
                if name == "failures":
                    for picture, label in FILTERS.items():
                        save(picture, filtered(page, label))
                page.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
