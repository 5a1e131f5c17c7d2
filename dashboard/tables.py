"""Tables as the pages draw them: a page of rows at a time, the whole table one click away.

Streamlit sends a table's every row to the browser on each run of the page; a signature or
verdict table of a year holds thousands. So a page shows PAGE_ROWS rows, a pager when there
are more, and a download of the whole table written only when it is clicked. A table with no
rows shows the page's words for what is missing instead (an empty grid says nothing of why)."""

from __future__ import annotations

from functools import partial
from typing import Any

import pandas as pd
import streamlit as st

from analytics.spreadsheet import csv_bytes

PAGE_ROWS = 50


def show(frame: pd.DataFrame, name: str, *, missing: str, **dataframe_args: Any) -> None:
    """``frame`` through ``st.dataframe(**dataframe_args)``, PAGE_ROWS rows at a time;
    ``name``: the table's widget keys and download file name (unique on its page);
    ``missing``: what the page says instead when ``frame`` has no rows."""
    if frame.empty:
        st.info(missing, icon=":material/info:")
        return
    pages = max(1, -(-len(frame) // PAGE_ROWS))
    if pages == 1:
        st.dataframe(frame, **dataframe_args)
        return
    page = st.number_input(
        f"Page of {pages} ({len(frame)} rows)",
        1,
        pages,
        1,
        key=f"page-{name}",
        width=200,
        persist_state="page",  # kept while its page's other sections are open
    )
    start = (int(page) - 1) * PAGE_ROWS
    st.dataframe(frame.iloc[start : start + PAGE_ROWS], **dataframe_args)
    st.download_button(
        f"{name}.csv: all {len(frame)} rows",
        data=partial(csv_bytes, frame),
        file_name=f"{name}.csv",
        mime="text/csv",
        on_click="ignore",
        key=f"download-{name}",
    )
