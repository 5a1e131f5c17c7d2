"""NEW: a failure signature nobody had seen before. The one definition, shared by the
dashboard's signature table and the nightly summary's NEW group (docs/vocabulary.md).

Mozilla Treeherder's rule: a failure line unseen for 21 days is new. A signature is NEW for a
reported period when its first sighting in the repository's whole stored history (every branch,
every workflow: ``store.page_queries.signature_summary``'s ``first_seen``) falls within the NEW_DAYS
days that end where the period ends."""

from __future__ import annotations

import pandas as pd

NEW_DAYS = 21  # Treeherder: a failure line unseen for 21 days is new


def new_since(end: pd.Timestamp) -> pd.Timestamp:
    """The earliest first sighting that still makes a signature NEW in a period ending at
    ``end`` (exclusive)."""
    return pd.Timestamp(end) - pd.Timedelta(days=NEW_DAYS)


def is_new(first_seen: pd.Series, end: pd.Timestamp) -> pd.Series:
    """Per signature, whether its first sighting ``first_seen`` (whole history) is within the
    NEW_DAYS days before ``end``, the (exclusive) end of the period being reported. A missing
    first sighting is not NEW."""
    return (first_seen >= new_since(end)).fillna(False).astype(bool)
