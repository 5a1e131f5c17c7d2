"""What the store lacks, in one phrase for pages, export and summary: a configured workflow that
GitHub does not have is named, and no backfill waits for it."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from reports.freshness import missing
from reports.summary import backfill_progress
from store.engine import make_engine
from store.project import WorkflowConfig
from store.settings import load_config
from tests.support.collected import DEFAULT

TYPO = ".github/workflows/e2e_v1_separate_asnyc.yml"


def test_a_workflow_github_lacks_is_named_and_no_backfill_waits_for_it(collected_db):
    """A complete collect, then a config that also names a path no collect can list (a typo,
    or a successor whose file does not exist yet): "not found on GitHub", not a backfill in
    progress forever."""
    engine = make_engine(collected_db(DEFAULT).url)
    project = load_config(env={}).project()
    now = datetime(2026, 11, 28, tzinfo=UTC)
    assert missing(engine, project, None, None, now) is None
    assert backfill_progress(engine, project, [w.path for w in project.workflows], now, now) is None
    typo = WorkflowConfig(TYPO, (), "gpu", "e2e_v1_separate_async")
    with_typo = dataclasses.replace(project, workflows=(*project.workflows, typo))
    said = missing(engine, with_typo, None, None, now)
    assert said == f"not found on GitHub (check its path): {TYPO}", said
    paths = [w.path for w in with_typo.workflows]
    assert backfill_progress(engine, with_typo, paths, now, now) is None
    engine.dispose()
