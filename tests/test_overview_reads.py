"""The Overview's two biggest reads come from indexes alone. The status tiles' read of every
run of the range (store.overview_counts.tile_runs) reads the runs' scope index, their commit
included (migration 0014), whatever dates the range has: SQLite otherwise took the
(repo, created_at) index for the range and visited each run's wide row (plans explained with
the parameters the statement ran with). The per-day presence of job names reads the names
from an index on PostgreSQL too (migration 0015; SQLite's ix_jobs_outcome_reads holds them).
Every page's list of repositories looks each up in an index."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from alembic import command
from sqlalchemy import inspect

from store.derived import repositories
from store.engine import make_engine
from store.migrate import alembic_config, upgrade
from store.overview_counts import COMPOUND_PATHS, latest_counted, tile_runs
from tests.support.plans import SCOPE, query_plan, runs_indexes

INDEX = "ix_workflow_runs_scope_reads"
BEFORE = ["head_branch", "repo", "workflow_path", "created_at", "id", "event"]


def test_the_status_tiles_read_a_branch_s_runs_from_the_scope_index_alone(sqlite_engine):
    """... and the logical runs only for the outcomes of the tiles' windows, each by its key
    (a join looked up every run's: 0.30 -> 0.15 s at 16x)."""
    cut = datetime(2026, 11, 1, tzinfo=UTC)
    plan = query_plan(sqlite_engine, lambda: tile_runs(sqlite_engine, SCOPE, cut))
    assert f"workflow_runs USING COVERING INDEX {INDEX} (head_branch=? AND repo=?)" in plan
    assert "CORRELATED SCALAR SUBQUERY" in plan, plan
    assert "SEARCH logical_runs USING INDEX sqlite_autoindex_logical_runs_1 (run_id=?)" in plan


def test_the_status_tiles_read_the_runs_of_a_scope_without_a_branch_from_an_index(sqlite_engine):
    """The pull-request and both-branches scopes read the runs from the repository's runs in
    time order alone (migration 0017), where SQLite visited each wide row (0.49 -> 0.32 s for
    every pull-request run at 16x)."""
    cut = datetime(2026, 11, 1, tzinfo=UTC)
    for events in (("pull_request",), ()):
        scope = replace(SCOPE, branch=None, events=events)
        plan = query_plan(sqlite_engine, lambda s=scope: tile_runs(sqlite_engine, s, cut))
        assert "USING COVERING INDEX ix_workflow_runs_repo_created_at (repo=? AND" in plan, plan


def test_the_latest_counted_runs_of_many_workflows_are_asked_in_statements_sqlite_takes(
    sqlite_engine,
):
    """SQLite refuses a UNION ALL of more than 500 terms ("too many terms in compound SELECT")."""
    paths = [f".github/workflows/w{i}.yml" for i in range(COMPOUND_PATHS * 2 + 1)]
    found = latest_counted(sqlite_engine, SCOPE, paths, 2)
    assert list(found.columns) == ["run_id", "logical_outcome"] and found.empty


def test_a_workflows_latest_counted_runs_are_an_index_walk_each(sqlite_engine):
    paths = [".github/workflows/a.yml", ".github/workflows/b.yml"]
    plan = query_plan(sqlite_engine, lambda: latest_counted(sqlite_engine, SCOPE, paths, 2))
    walk = f"SEARCH workflow_runs USING COVERING INDEX {INDEX} (head_branch=? AND repo=? AND "
    assert plan.count(walk + "workflow_path=?") == 2, plan
    assert "SCAN workflow_runs" not in plan and "TEMP B-TREE" not in plan, plan


def test_the_repositories_are_found_by_one_index_look_each(sqlite_engine):
    """Every page asks which repositories have runs: each is found from the last by a look in
    the index, where a DISTINCT walked every run's entry of it (0.06 s at 16x)."""
    plan = query_plan(sqlite_engine, lambda: repositories(sqlite_engine))
    assert "SCAN workflow_runs" not in plan, plan
    assert "USING COVERING INDEX ix_workflow_runs_repo (repo>?)" in plan, plan


def _migrate(db_url: str, down_to: str | None = None) -> None:
    """Upgrade to the head, or downgrade to ``down_to``."""
    engine = make_engine(db_url)
    if down_to is None:
        upgrade(engine)
    else:
        with engine.begin() as conn:
            command.downgrade(alembic_config(conn), down_to)
    engine.dispose()


def test_migration_0014_puts_the_commit_in_the_scope_index_and_takes_it_back(db_url):
    _migrate(db_url)
    assert runs_indexes(db_url)[INDEX] == [*BEFORE, "head_sha"]
    _migrate(db_url, "0013")
    assert runs_indexes(db_url)[INDEX] == BEFORE
    _migrate(db_url)
    assert runs_indexes(db_url)[INDEX] == [*BEFORE, "head_sha"]


def _jobs_indexes(db_url: str) -> dict[str, list[str | None]]:
    engine = make_engine(db_url)
    found = {str(ix["name"]): ix["column_names"] for ix in inspect(engine).get_indexes("jobs")}
    engine.dispose()
    return found


def test_migration_0015_puts_the_name_in_the_postgresql_jobs_index_and_takes_it_back(db_url):
    names = "ix_jobs_run_id_run_attempt_name"
    _migrate(db_url)
    postgresql = db_url.startswith("postgresql")
    wide = {names: ["run_id", "run_attempt", "name"]} if postgresql else {}
    assert {k: v for k, v in _jobs_indexes(db_url).items() if k != "ix_jobs_outcome_reads"} == wide
    _migrate(db_url, "0014")
    plain = {"ix_jobs_run_id_run_attempt": ["run_id", "run_attempt"]} if postgresql else {}
    assert {k: v for k, v in _jobs_indexes(db_url).items() if k != "ix_jobs_outcome_reads"} == plain
    _migrate(db_url)
    assert {k: v for k, v in _jobs_indexes(db_url).items() if k != "ix_jobs_outcome_reads"} == wide
