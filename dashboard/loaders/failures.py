"""The Failures page's drill-down: a signature's failures and the log lines around one (its
tables come from the registry, reports.failure_tables)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analytics import evidence
from dashboard.filters import Filters
from dashboard.loaders import shared
from store import page_queries
from store.compression import decompress

EXCERPT_BEFORE, EXCERPT_AFTER = 30, 10  # log lines shown around a matched line


@st.cache_data(ttl=shared.TTL)
def signature_failures(db_url: str, filters: Filters, signature: str) -> pd.DataFrame:
    """The newest failures with ``signature`` (store.page_queries.signature_failures), with their
    basis (analytics.evidence)."""
    found = page_queries.signature_failures(
        shared.engine(db_url), signature, shared.sql_filter(filters)
    )
    return found.assign(basis=evidence.failure_basis(found))


@st.cache_data(ttl=shared.TTL)
def log_excerpt(db_url: str, job_id: int, line_number: float | None) -> tuple[int, str] | None:
    """(first line number, text) of the archived log around the matched line, or None when
    there is no log or no line (the stored format: store.compression)."""
    stored = page_queries.job_log(shared.engine(db_url), job_id) if job_id else None
    if stored is None or line_number is None or pd.isna(line_number):
        return None
    content, compression = stored
    lines = decompress(content, compression).decode("utf-8", errors="replace").splitlines()
    first = max(0, int(line_number) - 1 - EXCERPT_BEFORE)
    return first + 1, "\n".join(lines[first : int(line_number) + EXCERPT_AFTER])
