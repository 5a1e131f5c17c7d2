"""The derived tables change no answer: every dashboard loader, every export table and the
summary's Markdown are the same whether the logical runs and jobs come from the derived tables
the collector keeps or, as before them, from the raw rows (analytics.frames takes the raw rows
when ``analytics.derived.is_current`` says no; here it is made to say no)."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import streamlit as st
from click.testing import CliRunner

from analytics import derived
from ciflake.cli import cli
from ciflake.summary import run_summary
from dashboard.filters import Filters
from dashboard.loaders import failures, shared
from reports import migration_tables
from reports.tables import TABLES
from store.engine import make_engine
from store.events import all_events
from store.settings import Config, load_config
from tests.support.collected import (
    AT_SCALE_1,
    AT_SCALE_1_GROUP,
    NIGHTS_OF_500,
    NIGHTS_OF_500_GROUP,
    collected,
)

REPO = "verl-project/verl"
Answers = dict[str, Any]


def _loaders(db_url: str) -> dict[str, Callable[[Filters], Any]]:
    """Every loader of every page, on the filters given; the loaders that take more than the
    filters get what their page passes."""
    runs = shared.table(db_url, _filters(db_url), "runs")
    workflow = runs["workflow_path"].mode()[0]
    since = runs["created_at"].max() - pd.Timedelta(days=28)
    signature = lambda f: shared.table(db_url, f, "signatures")["signature"].iloc[0]  # noqa: E731
    job = lambda f: shared.table(db_url, f, "flaky-jobs")["logical_job"].iloc[0]  # noqa: E731
    return {
        "status": lambda f: shared.table(db_url, f, "status"),
        "stability": lambda f: shared.table(db_url, f, "stability"),
        "stability daily": lambda f: shared.table(db_url, f, "stability", period="D"),
        "incident-lineages": lambda f: shared.table(db_url, f, "incident-lineages"),
        "job-days": lambda f: shared.table(db_url, f, "job-days", paths=(workflow,), since=since),
        "changepoints table": lambda f: shared.table(db_url, f, "changepoints"),
        **{
            name: lambda f, name=name: shared.table(db_url, f, name, since=None, until=None)
            for name in MIGRATIONS
        },
        "categories": lambda f: shared.table(db_url, f, "categories", period="D"),
        "unknown_stages": lambda f: shared.table(db_url, f, "unknown-stages"),
        "failure_bases": lambda f: shared.table(db_url, f, "failure-bases"),
        "signatures": lambda f: shared.table(db_url, f, "signatures"),
        "incidents": lambda f: shared.table(db_url, f, "incidents"),
        "signature_failures": lambda f: failures.signature_failures(db_url, f, signature(f)),
        "verdicts of a job": lambda f: shared.table(db_url, f, "verdicts", logical_job=job(f)),
        **{
            name: lambda f, name=name: shared.table(db_url, f, name)
            for name in ("flaky-jobs", "verdicts", "repair", "health")
            + ("runner-pools", "runners", "environments")
        },
    }


# The Migrations page's registry tables, as the page asks for them (every event).
MIGRATIONS = [table.name for table in migration_tables.TABLES]


def _filters(db_url: str, scope: str = "default") -> Filters:
    first, last = shared.day_span(db_url, REPO)
    return Filters(REPO, first, last, (), scope)


def _answers(
    db_url: str, tmp: Path, config: Config, now: datetime, *, with_loaders: bool
) -> Answers:
    """What a maintainer sees: the loaders' frames (``with_loaders``) for two scopes, every
    export table as CSV bytes, the summary's Markdown."""
    st.cache_data.clear()
    st.cache_resource.clear()
    answers: Answers = {}
    if with_loaders:
        for scope in ("default", "all"):
            filters = _filters(db_url, scope)
            for name, load in _loaders(db_url).items():
                answers[f"{name}[{scope}]"] = load(filters)
    runner = CliRunner()
    for table in TABLES:
        out = tmp / f"{table}.csv"
        result = runner.invoke(cli, ["--db", db_url, "export", table, "--out", str(out)])
        assert result.exit_code == 0, result.output
        answers[f"export {table}"] = out.read_bytes()
    # Both readings on one clock: the footer says when the summary was generated and how
    # long ago the last collect was (30 days: scale 1's history ends a few days back).
    engine = make_engine(db_url, read_only=True)
    events = all_events(config.project(), engine)
    answers["summary"] = run_summary(
        config,
        config.project(),
        engine,
        events,
        pr=7357,
        issue=None,
        since="30d",
        post=False,
        now=now,
    )
    engine.dispose()
    return answers


def _same(before: Answers, after: Answers) -> list[str]:
    """The names of the answers that differ."""
    differ = []
    for name, old in before.items():
        new = after[name]
        if isinstance(old, pd.DataFrame):
            try:
                pd.testing.assert_frame_equal(old, new)
            except AssertionError:
                differ.append(name)
        elif old != new:
            differ.append(name)
    return differ


def _diff(before: Answers, after: Answers, names: list[str]) -> str:
    """The differing text answers, line by line, so a failure shows what changed."""
    lines: list[str] = []
    for name in names:
        old, new = before[name], after[name]
        if isinstance(old, bytes):
            old, new = old.decode(), new.decode()
        if isinstance(old, str):
            lines += difflib.unified_diff(
                old.splitlines(),
                new.splitlines(),
                f"{name} (raw)",
                f"{name} (derived)",
                lineterm="",
            )
    return "\n".join(lines[:200])


def _compare(db_url: str, tmp: Path, monkeypatch, *, with_loaders: bool) -> None:
    monkeypatch.setenv("CIFLAKE_DB_URL", db_url)
    monkeypatch.delenv("CIFLAKE_CONFIG", raising=False)
    engine = make_engine(db_url, read_only=True)
    config = load_config(env={}, db_url=db_url)
    strip = config.project().job_name_strip
    assert derived.is_current(engine, REPO, strip), "the collector left the tables stale"
    assert derived.differences(engine, REPO, config.project()) == {}
    engine.dispose()
    now = datetime.now(UTC)
    after = _answers(db_url, tmp, config, now, with_loaders=with_loaders)
    with monkeypatch.context() as raw:
        raw.setattr(derived, "is_current", lambda *args, **kwargs: False)
        before = _answers(db_url, tmp, config, now, with_loaders=with_loaders)
    assert sorted(before) == sorted(after)
    differ = _same(before, after)
    assert differ == [], _diff(before, after, differ)


@pytest.fixture
def demo_url(demo_db: str) -> Iterator[str]:
    yield demo_db
    st.cache_data.clear()
    st.cache_resource.clear()


def test_the_demo_answers_the_same(demo_url: str, tmp_path: Path, monkeypatch) -> None:
    _compare(demo_url, tmp_path, monkeypatch, with_loaders=True)


@pytest.mark.slow
@AT_SCALE_1_GROUP
def test_scale_1_answers_the_same(tmp_path: Path, monkeypatch) -> None:
    """About 30 s: every answer twice over a year of verl's CI at scale 1, collected in one go
    on SQLite (the collect is shared with the evidence acceptance)."""
    db = collected(AT_SCALE_1, tmp_path)
    _compare(db.url, tmp_path, monkeypatch, with_loaders=True)


@pytest.mark.slow
@NIGHTS_OF_500_GROUP
def test_scale_1_nights_answer_the_same(collected_elsewhere, tmp_path: Path, monkeypatch) -> None:
    """About 25 s: the exports and the summary, which read the same frames as the pages, over
    the same year collected in nights of 500 requests (tests/test_collect_budget.py), on
    PostgreSQL when the session has it: derived tables kept across some twenty collects that
    each stopped at their budget."""
    db = collected_elsewhere(NIGHTS_OF_500)
    _compare(db.url, tmp_path, monkeypatch, with_loaders=False)
