"""What a report table is: a name, what one row is, its header, its builder."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd
from sqlalchemy import Engine

from reports.query import Query
from store.project import Project


@dataclass(frozen=True)
class ReportTable:
    """A named table: what one row is, and the column a --category filter reads (None: the
    table has no single category)."""

    name: str
    row: str
    columns: list[str]
    build: Callable[[Engine, Project, Query], pd.DataFrame]
    category_column: str | None = None
