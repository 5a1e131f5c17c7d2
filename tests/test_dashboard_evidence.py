"""The Failures and Migrations pages say how much of each category mix is known, on the demo
database; every number is recomputed from the store, none is taken from the page's loaders."""

from __future__ import annotations

import re

import pandas as pd
import pytest
from sqlalchemy import func, select
from streamlit.testing.v1 import AppTest

from analytics.config_tables import event_table
from analytics.evidence import KNOWN, LOG_EXPIRED, describe, failure_basis
from analytics.frames import logical_run_frame
from analytics.outcomes import in_scope, scope_terms
from collector.classify.stages import load_stages
from store.engine import make_engine
from store.events import all_events
from store.frame_queries import load_failures
from store.models import Failure, WorkflowRun
from store.page_queries import signature_failures, signature_summary
from store.runfilter import RunFilter
from store.settings import load_config
from tests.test_dashboard import APP, TIMEOUT, _visit

REPO = "verl-project/verl"
KEYS = ["run_id", "run_attempt", "job_id"]
# The page opens on the default branch's runs (the Scope radio's first choice): the numbers it
# shows are those of that scope's failures.
EVENTS, BRANCH = scope_terms("default", load_config().default_branch)
SHOWN = RunFilter(REPO, events=EVENTS, branch=BRANCH)
SENTENCE = re.compile(
    r"(category (from the log \d+%|from annotations \d+%|from job facts \d+%|unknown \d+% \(.+\))"
    r"(, (from annotations|from job facts) \d+%)*(, unknown \d+% \(.+\))?; n=(\d+) failures?"
    r"|no failures)"
)


@pytest.fixture
def app(demo_db: str, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("CIFLAKE_DB_URL", demo_db)
    return AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()


def _n(sentence: str) -> int:
    match = SENTENCE.fullmatch(sentence)
    assert match, sentence
    return int(match[6]) if match[6] else 0


def _stored_bases(db_url: str) -> pd.DataFrame:
    failures = load_failures(make_engine(db_url, read_only=True), SHOWN, detail=())
    return failures.assign(basis=failure_basis(failures))


def test_failures_page_says_how_much_is_known(app: AppTest, demo_db: str) -> None:
    _visit(app, "failures")
    prefix = "How much of this is known: "
    said = [c.value for c in app.caption if c.value.startswith(prefix)]
    assert len(said) == 1
    sentence = said[0].removeprefix(prefix)
    with make_engine(demo_db, read_only=True).connect() as conn:
        count = conn.scalar(
            select(func.count())
            .select_from(Failure)
            .join(WorkflowRun, WorkflowRun.id == Failure.run_id)
            .where(WorkflowRun.repo == REPO)
            .where(WorkflowRun.event.in_(EVENTS), WorkflowRun.head_branch == BRANCH)
        )
    assert _n(sentence) == count > 0  # every failure the chart counts, over the whole range
    bases = _stored_bases(demo_db)
    assert sentence == describe(bases["basis"])
    unknown = bases[~bases["basis"].isin(KNOWN)]
    if len(unknown):
        share = len(unknown) / len(bases)
        assert f"unknown {share:.0%} (" in sentence


def test_failures_page_lists_unknown_failures_by_stage(app: AppTest, demo_db: str) -> None:
    _visit(app, "failures")
    table = app.dataframe[0].value  # right under the categories chart
    assert list(table.columns) == ["stage", "basis", "failures"]
    bases = _stored_bases(demo_db)
    unknown = bases[~bases["basis"].isin(KNOWN)]
    assert table["failures"].sum() == len(unknown) > 0
    stages = {name for name, _ in load_stages()} | {"(no step)"}
    assert set(table["stage"]) <= stages and table["basis"].str.startswith("unknown: ").all()
    assert table["failures"].is_monotonic_decreasing
    expected = unknown.fillna({"stage": "(no step)"}).groupby(["stage", "basis"]).size()
    shown = table.set_index(["stage", "basis"])["failures"]
    assert shown.sort_index().to_dict() == expected.sort_index().to_dict()
    signatures = _visit(app, "failures", "Signatures").dataframe[-1].value  # its own section
    assert {"new", "first_seen", "html_url"} <= set(signatures.columns)


def _unknown_signature(db_url: str) -> tuple[str, str]:
    """A signature whose newest failure is unknown with an expired log and a known stage,
    and what its drill-down must say, spelled out here."""
    engine = make_engine(db_url, read_only=True)
    bases = _stored_bases(db_url).set_index(KEYS)
    for signature in signature_summary(engine, SHOWN)["signature"]:
        newest = signature_failures(engine, signature, SHOWN).iloc[0]
        row = bases.loc[tuple(int(newest[k]) for k in KEYS)]
        if row["basis"] == LOG_EXPIRED and isinstance(row["stage"], str):
            return signature, f"unknown: failed while {row['stage']}, log expired"
    raise AssertionError("no unknown failure with an expired log and a stage in the demo")


def test_drill_down_says_why_a_failure_is_unknown(app: AppTest, demo_db: str) -> None:
    _visit(app, "failures", "Signatures")
    signature, reason = _unknown_signature(demo_db)
    app.selectbox(key="drill_signature").select(signature).run()
    assert not app.exception
    assert reason in [w.value for w in app.warning]


def _red_runs(db_url: str, event: pd.Series, side: str, lineages: list[str]) -> pd.DataFrame:
    """The default-branch red runs of the event's lineages in the window on ``side``."""
    config = load_config(env={}, db_url=db_url)
    runs = logical_run_frame(make_engine(db_url, read_only=True), config.project(), RunFilter(REPO))
    runs = runs[
        in_scope(runs, "default", config.project().default_branch) & runs["lineage"].isin(lineages)
    ]
    window = pd.Timedelta(days=config.project().analysis.window_days)
    start, end = (
        (event["event_date"] - window, event["event_date"])
        if side == "before"
        else (event["event_date"], event["event_date"] + window)
    )
    inside = (runs["created_at"] >= start) & (runs["created_at"] < end)
    return runs[inside & runs["logical_outcome"].isin(["fail", "flaky"])]


def test_migrations_page_says_how_much_of_each_side_is_known(app: AppTest, demo_db: str) -> None:
    _visit(app, "migrations")
    chooser = app.selectbox(key="migration-event")
    for label in chooser.options:  # every event says it, one at a time
        chooser.select(label).run()
        lines = [c.value for c in app.caption if c.value.startswith("Failure causes ")]
        assert [line.split(":")[0] for line in lines] == [
            "Failure causes before",
            "Failure causes after",
        ], label
        for line in lines:
            _n(line.split(": ", 1)[1])
        chooser = app.selectbox(key="migration-event")
    config = load_config(env={}, db_url=demo_db)
    events = event_table(all_events(config.project(), make_engine(demo_db, read_only=True)))
    event = events[events["event_pr"] == 7357].iloc[0]
    lineages = list(
        event["event_lineages"] or sorted({w.lineage for w in config.project().workflows})
    )
    chooser.select(next(label for label in chooser.options if "#7357" in label)).run()
    captions = dict(
        c.value.split(": ", 1) for c in app.caption if c.value.startswith("Failure causes ")
    )
    for side in ("before", "after"):
        red = _red_runs(demo_db, event, side, lineages)
        sentence = captions[f"Failure causes {side}"]
        assert _n(sentence) == len(red), side
        unknown = (~red["failure_basis"].isin(KNOWN)).mean() if len(red) else 0
        if unknown:
            assert f"unknown {unknown:.0%} (" in sentence
        else:
            assert "unknown" not in sentence
