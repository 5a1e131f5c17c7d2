"""The dashboard answers what the sidebar and the configuration say: every loader of the
Failures page honours the Scope (its filter comes from the one builder, loaders.shared
.sql_filter, which needs the repository's default branch; the page used to count every run
whatever the Scope), and the Migrations table is the before-after export for the same
configuration."""

from __future__ import annotations

import io
from collections import Counter
from dataclasses import replace

import pandas as pd
import pytest

from dashboard.filters import SCOPES, Filters
from dashboard.loaders import failures, shared
from reports.migration_tables import BEFORE_AFTER_COLUMNS, before_after_table
from reports.query import Query
from store.engine import make_engine
from store.project import WorkflowConfig
from store.settings import load_config
from tests.support.collected import collected_copy

REPO = "verl-project/verl"


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> str:
    return collected_copy(tmp_path_factory.mktemp("scope"))


def _filters(db: str, scope: str) -> Filters:
    return Filters(REPO, *shared.day_span(db, REPO), (), scope)


def test_the_failures_page_counts_follow_the_scope(db, monkeypatch):
    """The simulated history's pull-request runs fail otherwise than the default branch's: each
    loader's totals and category mix differ by scope, and the default branch and the pull
    requests together are within Both (which also holds pushes to other branches)."""
    monkeypatch.setenv("CIFLAKE_DB_URL", db)
    periods, bases, signed = {}, {}, {}
    for scope in SCOPES:
        filters = _filters(db, scope)
        weekly = shared.table(db, filters, "categories")
        periods[scope] = Counter(weekly.groupby("category")["failures"].sum().to_dict())
        bases[scope] = Counter(
            shared.table(db, filters, "failure-bases").set_index("basis")["failures"].to_dict()
        )
        signed[scope] = int(shared.table(db, filters, "signatures")["failures"].sum())
    for counts in (periods, bases):
        assert counts["default"].total() > 0 and counts["pr"].total() > 0
        assert counts["default"].total() + counts["pr"].total() <= counts["all"].total()
        shares = {
            scope: {c: n / counts[scope].total() for c, n in counts[scope].items()}
            for scope in ("default", "pr")
        }
        assert shares["default"] != shares["pr"]
    # the chart and its evidence line count the same failures
    assert {s: c.total() for s, c in periods.items()} == {s: c.total() for s, c in bases.items()}
    assert 0 < signed["default"] < signed["all"] and 0 < signed["pr"] < signed["all"]


def test_a_signatures_drill_down_follows_the_scope(db, monkeypatch):
    monkeypatch.setenv("CIFLAKE_DB_URL", db)
    table = shared.table(db, _filters(db, "all"), "signatures")
    signature = table.sort_values("failures", ascending=False)["signature"].iloc[0]
    shown = {
        scope: set(failures.signature_failures(db, _filters(db, scope), signature)["run_id"])
        for scope in SCOPES
    }
    assert shown["default"] and shown["pr"] and shown["default"].isdisjoint(shown["pr"])
    for scope in ("default", "pr"):  # the newest 50 of the scope's own runs, none of another's
        own = set(shared.table(db, _filters(db, scope), "runs")["run_id"])
        assert shown[scope] <= own


def test_no_run_filter_without_the_repository_project():
    """The builder's signature: a page cannot ask for runs without the repository's Project,
    which says its default branch."""
    filters = Filters(REPO, *(shared.date.today(),) * 2, (), "default")
    query = filters.query(())
    with pytest.raises(TypeError):
        query.where()  # type: ignore[call-arg]
    where = query.where(load_config(env={}).project(REPO))
    assert where.branch == "main" and where.events and where.since is not None
    assert where.repo == REPO


def test_the_migrations_table_is_the_before_after_export(db, monkeypatch):
    """The page says its table is `ciflake export before-after`: the same rows for the same
    configuration, even for a configured lineage with no runs yet (a workflow just added),
    which both list for every event that names no lineage (analytics.config_tables
    .config_lineages; the export used to list only the lineages with runs)."""
    monkeypatch.setenv("CIFLAKE_DB_URL", db)
    base = load_config(db_url=db)
    ghost = WorkflowConfig(".github/workflows/e2e_new.yml", (), "gpu", "new_lineage")
    project = base.project()
    config = replace(base, projects=(replace(project, workflows=(*project.workflows, ghost)),))
    monkeypatch.setattr(shared, "current_config", lambda: config)
    page = shared.table(db, _filters(db, "default"), "before-after", since=None, until=None)
    shown = page[BEFORE_AFTER_COLUMNS]
    engine = make_engine(db, read_only=True)
    exported = before_after_table(engine, config.project(), Query())
    engine.dispose()
    assert (shown["lineage"] == "new_lineage").any()
    pd.testing.assert_frame_equal(shown, exported.reset_index(drop=True))


def _by_scope(load) -> dict[str, int]:
    return {scope: load(scope) for scope in SCOPES}


def _differ(counts: dict[str, int]) -> None:
    """Default-branch and pull-request runs are different runs: neither count is empty, they
    differ, and Both holds at least their sum."""
    assert counts["default"] > 0 and counts["pr"] > 0, counts
    assert counts["default"] != counts["pr"], counts
    assert counts["default"] + counts["pr"] <= counts["all"], counts


def test_the_overview_follows_the_scope(db, monkeypatch):

    monkeypatch.setenv("CIFLAKE_DB_URL", db)

    def tiles(scope: str) -> int:
        table = shared.table(db, _filters(db, scope), "status")
        return int(table.loc[table["level"] == "workflow", "runs"].fillna(0).sum())

    _differ(_by_scope(tiles))
    _differ(_by_scope(lambda s: int(shared.table(db, _filters(db, s), "stability")["runs"].sum())))


def test_the_migrations_page_follows_the_scope(db, monkeypatch):
    monkeypatch.setenv("CIFLAKE_DB_URL", db)

    def windows(scope: str) -> int:
        table = shared.table(db, _filters(db, scope), "before-after", since=None, until=None)
        return int((table["before_runs"] + table["after_runs"]).sum())

    _differ(_by_scope(windows))


def test_the_flaky_jobs_page_follows_the_scope(db, monkeypatch):
    monkeypatch.setenv("CIFLAKE_DB_URL", db)
    ranked = lambda s: shared.table(db, _filters(db, s), "flaky-jobs")  # noqa: E731
    _differ(_by_scope(lambda s: int(ranked(s)["runs"].sum())))
    _differ(_by_scope(lambda s: len(shared.table(db, _filters(db, s), "verdicts"))))


def test_the_runners_page_follows_the_scope(db, monkeypatch):
    monkeypatch.setenv("CIFLAKE_DB_URL", db)

    def pooled(scope: str) -> int:
        return int(shared.table(db, _filters(db, scope), "runner-pools")["runs"].sum())

    _differ(_by_scope(pooled))


def test_the_export_page_follows_the_scope(db, monkeypatch):
    from dashboard.loaders import export

    monkeypatch.setenv("CIFLAKE_DB_URL", db)
    for table in ("runs", "failures", "verdicts"):

        def rows(scope: str, table: str = table) -> int:
            return len(pd.read_csv(io.BytesIO(export.table_csv(db, _filters(db, scope), table))))

        _differ(_by_scope(rows))
