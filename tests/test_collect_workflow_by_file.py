"""A tracked workflow that GitHub's workflow list leaves out is asked for by its file name."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import collector.sync
import fakehub
from tests.support.collected import DEFAULT, collected
from tests.support.hubtools import collect, hub_config, migrated, snapshot


@pytest.fixture()
def hub() -> Iterator[fakehub.Hub]:
    """fakehub serving the history that ``collected_db()`` collected."""
    with DEFAULT.hub() as running:
        yield running


def test_a_workflow_missing_from_the_list_is_found_by_file_name(hub, monkeypatch, tmp_path):
    """Its collect goes to SQLite, compared with the shared SQLite collect (on PostgreSQL it
    repeated the very same collect)."""
    db_url = collected(DEFAULT, tmp_path).url
    expected = snapshot(migrated(db_url))
    dropped = hub_config(hub, db_url).project().workflows[0].path
    real = collector.sync.fetch_workflows

    def without_one(client, repo, etags):
        listed, new_etags = real(client, repo, etags)
        return [w for w in listed or [] if w["path"] != dropped], new_etags

    monkeypatch.setattr(collector.sync, "fetch_workflows", without_one)
    other = f"sqlite:///{tmp_path / 'other.db'}"
    report = collect(hub, other)
    assert dropped not in report.missing_workflows
    got = snapshot(migrated(other))
    assert got["workflow_runs"] == expected["workflow_runs"]
    assert got["jobs"] == expected["jobs"]
