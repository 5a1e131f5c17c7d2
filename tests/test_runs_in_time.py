"""Migration 0012's index on a repository's runs in time order: the loaders every page calls
read the two ends of the history from it, and the statements that count failures or incident
members start from those rows and look each run up by its key, so that the index cannot lead
SQLite to walk every run of the repository (plans explained with the parameters each
statement ran with, on an empty database: SQLite plans without statistics there as on the
benchmark's)."""

from __future__ import annotations

from datetime import UTC, datetime

from alembic import command

from store.engine import make_engine
from store.failure_counts import failure_counts, failures_at
from store.migrate import alembic_config, upgrade
from store.overview_counts import incident_workflows
from store.page_queries import latest_run_url, run_span
from tests.support.plans import (
    SCOPE,
    assert_starts_from,
    index_round_trip,
    query_plan,
    reads,
    runs_indexes,
)

INDEX = "ix_workflow_runs_repo_created_at"


def test_the_history_s_ends_are_read_from_the_index(sqlite_engine):
    span = query_plan(sqlite_engine, lambda: run_span(sqlite_engine, "o/r"))
    latest = query_plan(sqlite_engine, lambda: latest_run_url(sqlite_engine, "o/r"))
    assert f"SEARCH workflow_runs USING COVERING INDEX {INDEX} (repo=?)" in span
    assert f"SEARCH workflow_runs USING INDEX {INDEX} (repo=?)" in latest
    assert "TEMP B-TREE" not in latest  # the newest run is the index's last, not sorted for


def test_the_failure_counts_start_from_the_failures(sqlite_engine):
    plan = query_plan(sqlite_engine, lambda: failure_counts(sqlite_engine, SCOPE))
    assert_starts_from(plan, "failures")
    assert reads(plan)[0] == "SCAN failures"


def test_the_failure_counts_group_the_stored_keys_first(sqlite_engine):
    """The failures are grouped by their keys as stored (the range tested once per failure),
    and the keys outside the range blanked on those groups only: blanked per failure, the
    range was tested six times a failure (0.5 s of CPU on the 16x benchmark, 0.4 grouped)."""
    plan = query_plan(sqlite_engine, lambda: failure_counts(sqlite_engine, SCOPE)).splitlines()
    assert plan[0] == "CO-ROUTINE stored", plan
    assert plan[-2:] == ["SCAN stored", "USE TEMP B-TREE FOR GROUP BY"], plan


def test_the_signatures_newest_failures_are_found_by_their_time_alone(sqlite_engine):
    """Each signature's newest failure is looked up by its run's time (a few index searches):
    the scope is one term no index serves, where its branch led SQLite to walk every run of
    the branch (3 -> 0.5 ms at scale 1, 16 times that at 16x)."""
    times = [datetime(2026, 1, 2, tzinfo=UTC), datetime(2026, 1, 9, tzinfo=UTC)]
    plan = query_plan(sqlite_engine, lambda: failures_at(sqlite_engine, SCOPE, times))
    runs = [step for step in reads(plan) if "workflow_runs" in step]
    assert runs == ["SEARCH workflow_runs USING INDEX ix_workflow_runs_created_at (created_at=?)"]


def test_the_incidents_lineages_start_from_the_incident_members(sqlite_engine):
    plan = query_plan(sqlite_engine, lambda: incident_workflows(sqlite_engine, SCOPE))
    assert_starts_from(plan, "incident_failures")


NARROW = ["repo", "created_at"]  # migration 0012's
WIDE = [*NARROW, "id", "event", "workflow_path", "head_branch", "head_sha"]  # 0017's


def test_migration_0012_adds_the_index_and_takes_it_back(db_url):
    index_round_trip(db_url, INDEX, WIDE, "0011", "ix_workflow_runs_scope_reads")


def test_migration_0017_widens_the_index_and_narrows_it_back(db_url):
    engine = make_engine(db_url)
    upgrade(engine)
    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "0016")
    assert runs_indexes(db_url)[INDEX] == NARROW
    upgrade(engine)
    assert runs_indexes(db_url)[INDEX] == WIDE
    engine.dispose()
