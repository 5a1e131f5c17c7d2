"""One fakehub history collected once per test session, copied for each test that needs it."""

from __future__ import annotations

import functools
import sqlite3
import tempfile
from pathlib import Path

import fakehub
from tests.support.hubtools import TEST_SCALE, collect

SEED = 11


@functools.cache
def _collected() -> Path:
    path = Path(tempfile.mkdtemp(prefix="ciflake-collected-")) / "collected.db"
    with fakehub.running(seed=SEED, scale=TEST_SCALE) as hub:
        collect(hub, f"sqlite:///{path}")
    return path


def collected_copy(directory: Path) -> str:
    """The URL of a fresh copy of the collected database in ``directory`` (SQLite's backup
    API, so the pages still in the write-ahead log come along)."""
    target = directory / "collected.db"
    with sqlite3.connect(_collected()) as source, sqlite3.connect(target) as copy:
        source.backup(copy)
    return f"sqlite:///{target}"
