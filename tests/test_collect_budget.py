"""Collects that fit a request budget (#17): stop cleanly, go on next time, waste nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import fakehub
from tests.hubtools import TEST_SCALE, collect, snapshot
from tests.hubtools import migrated as migrated_engine

BUDGET = 150


@pytest.fixture()
def hub() -> Iterator[fakehub.Hub]:
    with fakehub.running(seed=11, scale=TEST_SCALE) as running:
        yield running


def _counted(report) -> int:
    return report.requests - report.requests_304


def test_budgeted_collects_finish_the_backfill_and_equal_one_full_collect(hub, db_url, tmp_path):
    full = collect(hub, db_url)
    assert not full.stopped
    expected = snapshot(migrated_engine(db_url))
    budgeted_url = f"sqlite:///{tmp_path / 'budgeted.db'}"
    reports = []
    while not reports or reports[-1].stopped:
        reports.append(collect(hub, budgeted_url, max_requests=BUDGET))
        assert len(reports) < 100, "the backfill does not progress"
    assert len(reports) > 3  # the budget did cut the backfill
    assert all(_counted(r) <= BUDGET for r in reports)
    assert all("collect again to go on" in r.line() for r in reports[:-1])
    assert snapshot(migrated_engine(budgeted_url)) == expected
    spent = sum(_counted(r) for r in reports)
    assert spent <= 1.05 * _counted(full), (spent, _counted(full))


def test_the_reserve_is_left_to_other_users_of_the_token(hub, db_url):
    hub.admin("POST", "rate_limit", {"limit": 400})
    report = collect_with_reserve(hub, db_url, reserve=300)
    assert report.stopped and "reserve" in report.stopped
    assert report.rate_limit_remaining is not None and report.rate_limit_remaining >= 299


def collect_with_reserve(hub, db_url, reserve):
    from collector.command import collect_once
    from collector.sync import CollectOptions
    from tests.hubtools import SINCE, hub_config

    config = hub_config(hub, db_url).with_overrides(collect_reserve=reserve)
    options = CollectOptions(since=SINCE, quiet=True)
    return collect_once(config, migrated_engine(db_url), options)


def test_a_slow_big_page_is_asked_again_smaller_and_the_collect_completes(hub, db_url, tmp_path):
    clean = collect(hub, db_url)
    expected = snapshot(migrated_engine(db_url))
    hub.admin("POST", "faults", {"spec": "big_page=10"})  # pages at this scale are small
    other = f"sqlite:///{tmp_path / 'slow.db'}"
    report = collect(hub, other)
    assert not report.stopped and clean
    assert snapshot(migrated_engine(other)) == expected
    assert hub.admin("GET", "faults")["fired"]["big_page"] > 0


def test_the_progress_bar_shows_the_budget(hub, db_url):
    from collector.client import GitHubClient
    from collector.progress import CollectProgress
    from collector.sync import CollectOptions, collect
    from tests.hubtools import SINCE, hub_config

    config = hub_config(hub, db_url)
    client = GitHubClient(config.api_url, config.token, max_requests=BUDGET)
    progress = CollectProgress(enabled=False)
    report = collect(config, migrated_engine(db_url), client, CollectOptions(since=SINCE), progress)
    assert report.stopped
    spent, budget = progress.budget_shown
    assert budget == BUDGET and 0 < spent <= BUDGET


def test_a_run_whose_jobs_were_archived_keeps_what_was_stored(hub, db_url, monkeypatch):
    """GitHub deletes a run's jobs 400 days on: a re-collect must not make it ci_config."""
    import collector.sync

    collect(hub, db_url)
    before = snapshot(migrated_engine(db_url))
    assert before["jobs"] and before["failures"]
    monkeypatch.setattr(collector.sync, "fetch_jobs", lambda client, repo, run_id: [])
    report = collect(hub, db_url, full=True)
    assert not report.stopped and report.runs_updated > 0
    after = snapshot(migrated_engine(db_url))
    assert after["jobs"] == before["jobs"]
    assert after["failures"] == before["failures"]  # no run became a failure without jobs
