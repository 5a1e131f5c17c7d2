"""Where incidents are shown (#48): the Overview's timeline draws them as bands on the rows of
the lineages they hit, the Failures page lists them, the Runners page gives a runner its host
incidents, and the nightly summary names those since the last summary. The incidents are
written with store.incidents.replace into a copy of the shared collected history (their
detection is tested with analytics.incidents); the pages and the summary only read them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import delete, insert
from streamlit.testing.v1 import AppTest

from analytics import overview_counts
from analytics.job_counts import incidents_per_place
from dashboard import charts, sections, shaping
from dashboard.loaders import shared
from reports.markdown import md_text
from reports.summary_render import render_summary
from store import incidents
from store.engine import make_engine
from store.models import PostedComment
from store.page_queries import failure_details
from store.runfilter import RunFilter
from tests.support.collected import collected_copy
from tests.support.summaries import summary_data

REPO = "verl-project/verl"
APP = Path(__file__).resolve().parent.parent / "dashboard" / "app.py"
SINCE = datetime(2026, 9, 20, tzinfo=UTC)  # the summary's --since, as in test_summary
NOW = datetime(2026, 11, 28, tzinfo=UTC)
LABELS = {
    "old": "ModuleNotFoundError on the GPU image (test)",
    "host": "npu_env on one Ascend host (test)",
    "hub": "HF Hub 503 (test)",
}


def _incident(key: str, failures: pd.DataFrame, **cause: str | None) -> tuple[dict, list[dict]]:
    """An incident row named ``key`` over ``failures`` (store.page_queries.failure_details
    rows), and its members."""
    row = {
        "id": f"test-{key}",
        "repo": REPO,
        "kind": "runner" if cause.get("runner") else "signature",
        "category": str(failures["category"].iloc[0]),
        "signature": cause.get("signature"),
        "runner": cause.get("runner"),
        "label": LABELS[key],
        "started_at": failures["created_at"].min().to_pydatetime(),
        "ended_at": (failures["created_at"].max() + timedelta(hours=1)).to_pydatetime(),
        "jobs": failures["job_id"].nunique(),
        "runs": failures["run_id"].nunique(),
        "workflows": failures["workflow_path"].nunique(),
    }
    members = failures[["run_id", "run_attempt", "job_id"]].assign(incident_id=row["id"])
    return row, members.to_dict("records")


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> Iterator[tuple[str, dict[str, dict]]]:
    """The collected history with three incidents: "old", before the summary's --since; "host",
    one runner's failure in the newest default-branch run the summary shows; "hub", three
    such failures in earlier runs."""
    url = collected_copy(tmp_path_factory.mktemp("incidents"))
    engine = make_engine(url)
    shown = summary_data(url, SINCE, NOW).failures  # the summary's failures, without incidents
    details = failure_details(engine, RunFilter(REPO)).sort_values("created_at", kind="stable")
    recent = details[details["html_url"].isin(shown["html_url"])]
    host = recent.tail(1)  # the newest: a job that was not rerun, so the runner table has it
    hub = recent[recent["created_at"] < host["created_at"].iloc[0]].head(3)
    made = [
        _incident("old", details[details["created_at"] < SINCE - timedelta(days=60)].head(3)),
        _incident("host", host, runner=str(host["runner_name"].iloc[0])),
        _incident("hub", hub, signature=str(hub["signature"].iloc[0])),
    ]
    with engine.begin() as conn:
        incidents.replace(conn, REPO, [row for row, _ in made], [m for _, ms in made for m in ms])
    engine.dispose()
    yield url, {row["label"]: row for row, _ in made}


@pytest.fixture(scope="module")
def started(history) -> Iterator[AppTest]:
    """One app for the module's pages: a first run costs seconds."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CIFLAKE_DB_URL", history[0])
        yield AppTest.from_file(str(APP), default_timeout=120).run()


@pytest.fixture
def app(started, history, monkeypatch) -> AppTest:
    monkeypatch.setenv("CIFLAKE_DB_URL", history[0])  # each test's environment starts clean
    return started


def _visit(app: AppTest, page: str, section: str | None = None) -> AppTest:
    sections.opened(app, page, section)
    assert not app.exception, [e.value for e in app.exception]
    return app


def test_the_overview_draws_each_incident_as_a_band_on_the_lineages_it_hit(app, history):
    _visit(app, "overview", "Stability timeline")
    made = history[1]
    timeline = json.loads(app.get("plotly_chart")[0].proto.spec)
    bands = [s for s in timeline["layout"]["shapes"] if s["type"] == "rect"]
    starts = {pd.Timestamp(s["x0"]) for s in bands}
    assert starts == {pd.Timestamp(row["started_at"]) for row in made.values()}
    markers = [t for t in timeline["data"] if t["name"].endswith(" incidents")]
    hovered = " ".join(text for t in markers for text in t["text"])
    assert all(label in hovered for label in LABELS.values()), hovered
    assert any("Red bands, a ▲ at their start: 3 incidents" in c.value for c in app.caption)


def test_the_failures_page_lists_the_incidents(app, history):
    _visit(app, "failures", "Incidents")
    (listed,) = [f.value for f in app.dataframe if "label" in f.value.columns]
    assert listed["label"].tolist() == [LABELS[key] for key in ("old", "hub", "host")]
    hub = listed.set_index("label").loc[LABELS["hub"]]
    made = history[1][LABELS["hub"]]
    assert (hub["jobs"], hub["runs"], hub["kind"]) == (3, made["runs"], "signature")
    assert hub["signature"] == made["signature"]
    assert pd.Timestamp(hub["ended_at"]) == pd.Timestamp(made["ended_at"])


def test_the_runners_page_gives_the_host_incident_to_its_runner(app, history):
    _visit(app, "runners", "Runner incidents")
    host = history[1][LABELS["host"]]["runner"]
    (listed,) = [f.value for f in app.dataframe if "label" in f.value.columns]
    assert listed[["runner", "label"]].values.tolist() == [[host, LABELS["host"]]]
    # the runner table's column (its page shows the first 50 of many runners); a host name is
    # no pool's label, so no pool gets it
    filters = app.session_state["view"].filters
    by_name = shared.table(history[0], filters, "runners").set_index("runner_name")
    assert by_name.at[host, "incidents"] == 1 and by_name["incidents"].sum() == 1
    assert shared.table(history[0], filters, "runner-pools")["incidents"].sum() == 0


def test_the_summary_names_the_incidents_since_the_last_summary(history):
    url, made = history
    text = render_summary(summary_data(url, SINCE, NOW))
    assert "### Incidents since the last summary: 2\n" in text
    assert "after 2026-09-20 00:00 UTC, the start of this summary" in text
    section = text.split("### Incidents since the last summary")[1].split("\n### ")[0]
    assert md_text(LABELS["old"]) not in section  # before --since, no summary since: not named
    hub = made[LABELS["hub"]]
    assert f"**{md_text(LABELS['hub'])}** · `{hub['category']}`" in section
    assert f"signature `{hub['signature']}`" in section and "3 jobs in" in section
    assert f"runner {md_text(made[LABELS['host']]['runner'])}" in section
    # a summary posted after the hub incident's runs: only the host incident is new since
    posted = hub["ended_at"] - timedelta(hours=1) + timedelta(seconds=1)
    engine = make_engine(url)
    row = {"id": 1, "repo": REPO, "issue_number": 7357, "body_sha256": "0" * 64}
    with engine.begin() as conn:
        conn.execute(insert(PostedComment), {**row, "created_at": posted, "updated_at": posted})
    try:
        later = render_summary(summary_data(url, SINCE, NOW))
    finally:
        with engine.begin() as conn:
            conn.execute(delete(PostedComment))
        engine.dispose()
    assert "### Incidents since the last summary: 1\n" in later
    assert "the last summary's post" in later and md_text(LABELS["host"]) in later
    assert md_text(LABELS["hub"]) not in later


def test_incidents_hitting_follows_dates_workflows_and_branch(thin_db):
    """The one run's failure in an incident: found by its run's filter, on either backend, and
    not by a filter that leaves the run out."""
    engine = make_engine(thin_db("one run"))
    try:
        (failure,) = failure_details(engine, RunFilter(REPO)).itertuples()
        row = {
            "id": "one",
            "repo": REPO,
            "kind": "runner",
            "category": failure.category,
            "signature": None,
            "runner": failure.runner_name,
            "label": "one host",
            "started_at": failure.created_at.to_pydatetime(),
            "ended_at": failure.created_at.to_pydatetime(),
            "jobs": 1,
            "runs": 1,
            "workflows": 1,
        }
        member = {"run_id": failure.run_id, "run_attempt": failure.run_attempt}
        with engine.begin() as conn:
            incidents.replace(
                conn, REPO, [row], [{**member, "job_id": failure.job_id, "incident_id": "one"}]
            )
        day = failure.created_at.to_pydatetime()
        hit = [
            RunFilter(REPO),
            RunFilter(REPO, day - timedelta(days=1), day + timedelta(days=1)),
            RunFilter(REPO, paths=(failure.workflow_path,), branch="main"),
        ]
        missed = [
            RunFilter("someone/else"),
            RunFilter(REPO, day + timedelta(seconds=1)),
            RunFilter(REPO, paths=(".github/workflows/other.yml",)),
            RunFilter(REPO, branch="a-branch"),
        ]
        assert [incidents.incidents_hitting(engine, w)["id"].tolist() for w in hit] == [["one"]] * 3
        assert all(incidents.incidents_hitting(engine, w).empty for w in missed)
    finally:
        engine.dispose()


BANDS = pd.DataFrame(
    {
        "id": ["a", "b"],
        "kind": ["runner", "signature"],
        "runner": ["linux-aarch64-a3-8", None],
        "category": ["npu_env", "network"],
        "label": ["a3 host", "HF Hub"],
        "started_at": pd.to_datetime(["2026-05-05 02:00", "2026-05-20 13:00"], utc=True),
        "ended_at": pd.to_datetime(["2026-05-06 02:00", "2026-05-20 18:00"], utc=True),
        "jobs": [50, 23],
        "runs": [40, 20],
        "workflows": [3, 4],
    }
)


def test_bands_go_on_the_rows_of_the_lineages_hit():
    hits = pd.DataFrame({"incident_id": ["a", "b", "b", "b"], "lineage": ["x", "x", "x", "y"]})
    bands = overview_counts.incident_lineages(BANDS, hits)
    assert bands[["id", "lineage"]].values.tolist() == [["a", "x"], ["b", "x"], ["b", "y"]]
    table = pd.DataFrame(
        {
            "lineage": ["x", "y", "z"],
            "period": pd.to_datetime(["2026-05-04"] * 3, utc=True),
            "runs": 5,
            "success_rate": 0.5,
            "success_rate_low": 0.2,
            "success_rate_high": 0.8,
            "runs_once": 5,
            "success_rate_once": 0.5,
        }
    )
    events = pd.DataFrame(
        columns=["event_date", "event_pr", "event_title", "event_kind", "event_lineages"]
    )
    figure = charts.stability_timeline(table, events, bands)
    rects = [(s.yref, pd.Timestamp(s.x0)) for s in figure.layout.shapes if s.type == "rect"]
    assert sorted(rects) == sorted(
        [
            ("y domain", BANDS["started_at"][0]),
            ("y domain", BANDS["started_at"][1]),
            ("y2 domain", BANDS["started_at"][1]),
        ]
    )
    markers = {t.name: list(t.text) for t in figure.data if t.name.endswith(" incidents")}
    assert set(markers) == {"x incidents", "y incidents"}  # none on z, which nothing hit
    assert markers["y incidents"] == [
        "incident: HF Hub (network)<br>2026-05-20 13:00 – 2026-05-20 18:00 UTC, 23 jobs"
    ]


def test_runner_incidents_count_on_their_runner_and_on_pools_holding_their_label():
    assert shaping.runner_incidents(BANDS)["runner"].tolist() == ["linux-aarch64-a3-8"]
    places = pd.Series(["linux-aarch64-a3-8+self-hosted", "linux-aarch64-a3-8", "gpu+l20x8"])
    assert incidents_per_place(places, BANDS).tolist() == [1, 1, 0]
    assert incidents_per_place(places, BANDS.iloc[1:]).tolist() == [0, 0, 0]


def test_the_export_pages_incidents_file_is_ciflake_export_incidents(app, history, tmp_path):
    """The Export page offers incidents.csv, and its bytes are those of the command the page
    shows, run with the table's name."""
    import shlex

    from click.testing import CliRunner

    from ciflake.cli import cli
    from dashboard.loaders import export

    _visit(app, "export")
    assert "incidents.csv" in [button.proto.label for button in app.get("download_button")]
    words = shlex.split(app.code[0].value.replace("TABLE", "incidents"))
    result = CliRunner().invoke(cli, words[1:])
    assert result.exit_code == 0, result.output
    written = (tmp_path / "incidents.csv").read_bytes()
    assert written == export.table_csv(history[0], app.session_state["view"].filters, "incidents")
    assert [line.split(b",")[0] for line in written.splitlines()[1:]] == [
        b"test-old",
        b"test-hub",
        b"test-host",
    ]
