"""The status tiles' read of every run of the range (store.overview_counts.tile_runs) comes
from the runs' scope index alone, its commit included (migration 0014), whatever dates the
range has: SQLite otherwise took the (repo, created_at) index for the range and visited each
run's wide row (plans explained with the parameters the statement ran with)."""

from __future__ import annotations

from alembic import command

from store.engine import make_engine
from store.migrate import alembic_config, upgrade
from store.overview_counts import tile_runs
from tests.support.plans import SCOPE, query_plan, runs_indexes

INDEX = "ix_workflow_runs_scope_reads"
BEFORE = ["head_branch", "repo", "workflow_path", "created_at", "id", "event"]


def test_the_status_tiles_read_a_branch_s_runs_from_the_scope_index_alone(sqlite_engine):
    plan = query_plan(sqlite_engine, lambda: tile_runs(sqlite_engine, SCOPE))
    assert f"workflow_runs USING COVERING INDEX {INDEX} (head_branch=? AND repo=?)" in plan


def test_migration_0014_puts_the_commit_in_the_scope_index_and_takes_it_back(db_url):
    engine = make_engine(db_url)
    upgrade(engine)
    assert runs_indexes(db_url)[INDEX] == [*BEFORE, "head_sha"]
    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "0013")
    assert runs_indexes(db_url)[INDEX] == BEFORE
    upgrade(engine)
    assert runs_indexes(db_url)[INDEX] == [*BEFORE, "head_sha"]
    engine.dispose()
