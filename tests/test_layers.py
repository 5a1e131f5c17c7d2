"""The import contract (tests/support/layers.py) holds on the tree, and catches what it is for.

A deliberately added upward import fails it. For example, this line added to
``analytics/rates.py``::

    from dashboard.filters import Filters

makes ``python -m tests.support.layers`` (and so ``make lint`` and this file) report
``analytics/rates.py:N: analytics imports dashboard.filters (upward or sideways)``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support import layers


def test_the_tree_keeps_the_layers() -> None:
    assert [str(b) for b in layers.breaches()] == []


def test_the_summary_before_49_computed_its_tables_and_is_caught(tmp_path: Path) -> None:
    """The summary as it was (#48): its headline from frames, in reports/summary_tables.py."""
    shutil.copytree(layers.ROOT / "reports", tmp_path / "reports")
    tables = tmp_path / "reports" / "summary_tables.py"
    tables.write_text(tables.read_text() + "\nfrom analytics.once import stability_once  # noqa\n")
    found = [(b.path, b.what) for b in layers.breaches(tmp_path)]
    assert found == [
        (
            "reports/summary_tables.py",
            "a table computed outside reports.tables: analytics.once.stability_once",
        )
    ]


def test_the_summary_may_no_longer_read_frames_for_its_strips(tmp_path: Path) -> None:
    """What the summary was allowed while #49's tables moved (its successors' strips, runs
    and environment versions from frames) is now caught like any other table it computes."""
    shutil.copytree(layers.ROOT / "reports", tmp_path / "reports")
    summary = tmp_path / "reports" / "summary.py"
    pending = [
        "from analytics.frames import logical_job_frame",
        "from analytics.successors import successor_first_runs",
        "from analytics.elsewhere import failed_elsewhere",
        "from analytics.environments import environment_failures",
        "from store.frame_queries import load_failures",
        "from store.page_queries import daily_run_counts",
    ]
    summary.write_text(summary.read_text() + "".join(f"\n{line}  # noqa" for line in pending))
    found = [b.what.rsplit(": ", 1)[-1] for b in layers.breaches(tmp_path)]
    assert found == [line.split()[1] + "." + line.split()[3] for line in pending]


def test_an_upward_import_added_to_a_copy_of_the_tree_is_caught(tmp_path: Path) -> None:
    for package in layers.OURS:
        shutil.copytree(layers.ROOT / package, tmp_path / package)
    rates = tmp_path / "analytics" / "rates.py"
    rates.write_text(rates.read_text() + "\nfrom dashboard.filters import Filters  # noqa\n")
    found = layers.breaches(tmp_path)
    assert [(b.path, b.what) for b in found] == [
        ("analytics/rates.py", "analytics imports dashboard.filters (upward or sideways)")
    ]


@pytest.mark.parametrize(
    ("package", "source", "what"),
    [
        ("store", "import analytics.rates", "store imports analytics.rates"),
        ("collector", "from ciflake import cli", "collector imports ciflake"),
        ("dashboard", "from collector.logs import LogResult", "dashboard imports collector.logs"),
        ("migrations", "from reports.tables import TABLES", "migrations imports reports.tables"),
        ("fakehub", "from store.models import Run", "fakehub imports store.models"),
        ("fakehub", "from store import vocabulary, models", "fakehub imports store.models"),
        ("collector", "import click", "click outside"),
        ("dashboard", "from sqlalchemy import select", "SQL outside store"),
        ("collector", "from sqlalchemy.sql import text", "SQL outside store"),
        ("dashboard", "import zlib", "zlib outside store"),
        # one path per table (#49): a page or the summary computes no table itself
        ("dashboard", "from analytics.once import flaky_table", "analytics.once.flaky_table"),
        ("dashboard", "from store import page_queries; page_queries.signature_summary", "summary"),
        ("dashboard", "from reports.job_tables import verdicts_table", "reports.job_tables"),
        ("reports/summary", "from analytics.frames import logical_run_frame", "outside reports"),
        ("reports/summary", "from store.incidents import load_members", "store.incidents"),
        ("reports/summary", "from reports.table_inputs import logical_jobs_of", "outside"),
    ],
)
def test_each_rule_catches_its_breach(package: str, source: str, what: str) -> None:
    def inside_a_function(line: str) -> str:  # imports deferred into a body count too
        return f"def f():\n    {line}\n"

    path = f"{package}_x.py" if "/" in package else f"{package}/x.py"
    package = package.split("/")[0]
    for text in (source, inside_a_function(source)):
        found = layers.module_breaches(package, path, text)
        assert len(found) == 1 and what in found[0].what, found


@pytest.mark.parametrize(
    ("package", "source"),
    [
        ("collector", "from sqlalchemy.orm import Session"),
        ("dashboard", "from sqlalchemy import Engine\nfrom sqlalchemy.exc import SQLAlchemyError"),
        ("fakehub", "from store.vocabulary import CATEGORIES"),
        ("ciflake", "import click\nfrom collector.sync import collect"),
        ("store", "import zlib\nfrom sqlalchemy import select"),
        ("dashboard", "from analytics.evidence import PHRASES\nfrom reports import tables"),
        ("dashboard", "from store import page_queries\npage_queries.run_span"),
        ("dashboard", "from reports.job_tables import FLAKY_COLUMNS"),
    ],
)
def test_what_the_layers_allow_passes(package: str, source: str) -> None:
    assert layers.module_breaches(package, f"{package}/x.py", source) == []
