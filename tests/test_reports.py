"""One home for report tables (reports.tables): ``ciflake export`` and the dashboard's Export
page write the same bytes for the same filters, table by table."""

from __future__ import annotations

from datetime import date

import pytest
from click.testing import CliRunner

from ciflake.cli import cli
from dashboard.filters import Filters
from dashboard.loaders import export, shared
from reports.tables import TABLES
from tests.support.collected import collected_copy

REPO = "verl-project/verl"


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> str:
    return collected_copy(tmp_path_factory.mktemp("reports"))


@pytest.mark.parametrize(
    ("scope", "tags"), [("default", ()), ("pr", ("ascend",)), ("all", ("fully_async",))]
)
def test_the_export_page_and_the_command_write_the_same_bytes(
    db, tmp_path, monkeypatch, scope, tags
):
    """August 2026 (around #7357), in each scope, with and without a tag: the page's file for
    each table is the command's, given the same repository, dates, workflows and scope."""
    monkeypatch.setenv("CIFLAKE_DB_URL", db)
    filters = Filters(REPO, date(2026, 8, 1), date(2026, 8, 31), tags, scope)
    paths = shared.query(filters).paths
    assert bool(paths) == bool(tags)
    options = ["--since", "2026-08-01", "--until", "2026-09-01", "--scope", scope]
    options += [flag for path in paths for flag in ("--workflow", path)]
    runner = CliRunner()
    nonempty = 0
    for name in TABLES:
        out = tmp_path / f"{name}.csv"
        command = ["--db", db, "export", name, "--out", str(out), "--repo", REPO, *options]
        result = runner.invoke(cli, command)
        assert result.exit_code == 0, result.output
        page = export.table_csv(db, filters, name)
        assert page == out.read_bytes(), name
        nonempty += page.count(b"\n") > 1
    assert nonempty > len(TABLES) / 2  # most tables have rows then: the bytes compare rows
