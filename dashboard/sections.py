"""A page's sections as tabs of which only the open one runs (Streamlit's tabs with
``on_change="rerun"``): a page shows its first section, and computes and draws nothing of the
others until a maintainer opens one. A page's every section drawn at once made the browser lay
out every chart and table of the page before it was usable; the queries of the sections not
open are not run either.

Streamlit forgets a widget's value in a run that does not draw it: every widget inside a
section is given ``persist_state="page"``, so its choice stays while its page is open."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING

import streamlit as st

if TYPE_CHECKING:
    from streamlit.testing.v1 import AppTest


def key(page: str) -> str:
    """The session-state key that holds the open section of ``page`` (its file's name in
    dashboard/views): one per page, so a label two pages share opens on neither by chance."""
    return f"{page}_section"


def show(page: str, sections: Mapping[str, Callable[[], None]]) -> None:
    """Tabs labelled with ``sections``' keys (the first open on a page's first view), and the
    open one's function run inside its tab."""
    tabs = st.tabs(list(sections), key=key(page), on_change="rerun")
    for draw, tab in zip(sections.values(), tabs, strict=True):
        if tab.open:
            with tab:
                draw()


def opened(app: AppTest, page: str, label: str | None = None) -> AppTest:
    """``app`` (an AppTest) run on ``page`` (its file's name in dashboard/views), then on its
    section ``label`` (None: the first)."""
    app.switch_page(f"views/{page}.py").run()
    return app if label is None else reopened(app, page, label)


def reopened(app: AppTest, page: str, label: str) -> AppTest:
    """``app``, on ``page`` already, run again on its section ``label``, as a click on its tab
    reruns it."""
    app.session_state[key(page)] = label
    return app.run()


def walked(app: AppTest, page: str) -> Iterator[AppTest]:
    """``app`` on ``page``, then on each of its other sections in turn (``opened``): how the
    bench times a page's every section and a test reads them all."""
    labels = [tab.label for tab in opened(app, page).tabs]
    yield app
    for label in labels[1:]:
        yield reopened(app, page, label)
