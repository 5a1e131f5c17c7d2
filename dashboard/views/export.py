"""Export: every report table (reports.tables) for the current filters, as CSV for
retrospectives: the same file `ciflake export TABLE` writes for the same repository, dates,
workflows and scope."""

from functools import partial

import streamlit as st

from dashboard.context import current_view
from dashboard.loaders import export
from reports.tables import TABLES

view = current_view()
url, filters = view.db_url, view.filters
first, last = filters.first_day, filters.last_day

st.title("Export")
st.caption(
    f"{filters.repo}, runs of {first:%Y-%m-%d} to {last:%Y-%m-%d}, scope {filters.scope}. "
    "Each file is built when clicked; times in ISO-8601 UTC, rates in [0, 1]. The same "
    "file from the command line, TABLE being its name:"
)
st.code(export.command(url, filters), language="bash", wrap_lines=True)
for table in TABLES.values():
    st.download_button(
        f"{table.name}.csv",
        data=partial(export.table_csv, url, filters, table.name),
        on_click="ignore",
        file_name=f"{filters.repo.replace('/', '_')}-{table.name}.csv",
        mime="text/csv",
        help=f"One row per {table.row}.",
        key=f"export-{table.name}",
    )
