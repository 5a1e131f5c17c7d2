"""The dashboard under Streamlit's AppTest: every page against the demo database (fakehub's
simulated verl history collected as `ciflake demo` does), the filters, and the messages for a
database not ready."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import select
from streamlit.testing.v1 import AppTest

from analytics import elsewhere, overview_counts
from dashboard import charts, sections
from dashboard.context import freshness_line
from dashboard.shaping import CHARTED_RUNNERS
from reports import tables
from store.bookkeeping import LastCollect
from store.engine import make_engine
from store.models import Failure, JobLog, WorkflowRun
from store.vocabulary import HOSTED_RUNNER_PREFIX, HOSTED_RUNNERS, short_lived_runners
from tests.support.pg import wrong_password_url

APP = Path(__file__).resolve().parent.parent / "dashboard" / "app.py"
PAGES = ("overview", "migrations", "failures", "flaky_jobs", "runners", "export")
TIMEOUT = 120


@pytest.fixture
def history_db(demo_db: str) -> str:
    return demo_db


@pytest.fixture
def app(history_db: str, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("CIFLAKE_DB_URL", history_db)
    return AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()


def _visit(app: AppTest, page: str, section: str | None = None) -> AppTest:
    """``app`` on ``page``, on its ``section`` (None: the first, which a page opens on)."""
    sections.opened(app, page, section)
    assert not app.exception, [e.value for e in app.exception]
    return app


def _plotted(app: AppTest) -> list[dict]:
    """The Plotly figures of the page, as the JSON Streamlit sends to the browser."""
    import json

    return [json.loads(chart.proto.spec) for chart in app.get("plotly_chart")]


def test_every_section_of_every_page_renders_without_exception(app: AppTest) -> None:
    opened = 0
    for page in PAGES:
        for section in sections.walked(app, page):
            assert not section.exception, (page, [e.value for e in section.exception])
            opened += 1
    assert opened == 4 + 4 + 3 + 3 + 4 + 1  # PAGES' sections; the export page has one


def test_simulated_banner_and_freshness_line(app: AppTest) -> None:
    assert any("Simulated data" in info.value for info in app.info)
    assert any("Last successful collect" in caption.value for caption in app.caption)


def test_overview_tiles_timeline_and_grid(app: AppTest) -> None:
    badges = _tiles(app)
    assert any("e2e_v1_separate_async" in b for b in badges)
    # deleted by #7357, on purpose: RETIRED (it was STALE before #19), not STALE
    assert any("[RETIRED]" in b and "trtllm" in b for b in badges)
    assert not any("[STALE]" in b and "trtllm" in b for b in badges)
    assert not _plotted(app)  # the tiles' section alone: its charts wait for their tabs
    assert [tab.label for tab in app.tabs] == [
        "Status",
        "Stability timeline",
        "Changepoints",
        "Job x day",
    ]
    (timeline,) = _plotted(_visit(app, "overview", "Stability timeline"))
    (grid,) = _plotted(_visit(app, "overview", "Job x day"))
    for figure in (timeline, grid):
        assert any(len(trace.get("x", [])) for trace in figure["data"])
    # the timeline's event markers are numbered; the table under it names them
    _visit(app, "overview", "Stability timeline")
    legend = next(f.value for f in app.dataframe if "pr" in f.value.columns)
    assert {6568, 7357} <= set(legend["pr"].dropna())
    labels = {a["text"] for a in timeline["layout"]["annotations"]}
    assert {str(n) for n in legend["number"]} <= labels
    changepoints = _visit(app, "overview", "Changepoints")
    shown = [f.value for f in changepoints.dataframe] or [i.value for i in changepoints.info]
    assert shown and not _plotted(changepoints)


def test_a_page_computes_its_open_section_alone(
    history_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No query that the visible part of a page does not need: the Overview's first view
    builds its tiles' table, and its other sections' tables wait for their tabs."""
    import streamlit as st

    built: list[str] = []
    build = tables.build

    def recorded(engine, project, name, query):
        built.append(name)
        return build(engine, project, name, query)

    monkeypatch.setattr(tables, "build", recorded)
    monkeypatch.setenv("CIFLAKE_DB_URL", history_db)
    st.cache_data.clear()
    app = AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()
    later = {"stability", "incident-lineages", "changepoints", "job-days"}
    assert "status" in built and not later & set(built), built
    built.clear()
    _visit(app, "overview", "Changepoints")
    assert "changepoints" in built and not {"stability", "job-days"} & set(built), built


def test_a_rerun_of_the_overview_draws_its_figures_without_building_them(
    app: AppTest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A click back to a page (a rerun, its tables cached) draws the figures built before
    (dashboard.figures): the same JSON, no build."""
    from dashboard import charts, figures

    built: list[str] = []

    def counted(builder):
        def build(*args, **kwargs):
            built.append(builder.__name__)
            return builder(*args, **kwargs)

        return build

    for name in ("stability_timeline", "job_day_heatmap"):
        monkeypatch.setattr(charts, name, counted(getattr(charts, name)))
    figures._built.clear()
    for section, builder in (
        ("Stability timeline", "stability_timeline"),
        ("Job x day", "job_day_heatmap"),
    ):
        built.clear()
        drawn = _plotted(_visit(app, "overview", section))
        assert built == [builder]
        assert _plotted(app.run()) == drawn and len(built) == 1


def test_a_sections_choices_stay_while_another_section_of_its_page_is_open(app: AppTest) -> None:
    """Streamlit forgets the value of a widget a run does not draw: a section's choices are
    kept (persist_state="page") while another section of the page is open."""

    def reopen(page: str, away: str, back: str) -> None:
        for label in (away, back):
            sections.reopened(app, page, label)
            assert not app.exception, [e.value for e in app.exception]

    _visit(app, "failures", "Signatures").segmented_control(key="fail_show").set_value("new").run()
    reopen("failures", "Categories", "Signatures")
    assert app.segmented_control(key="fail_show").value == "new"
    _visit(app, "flaky_jobs", "Time to repair and reruns").toggle(key="health_jobs").set_value(
        True
    ).run()
    reopen("flaky_jobs", "Ranking", "Time to repair and reruns")
    assert app.toggle(key="health_jobs").value is True
    assert "rerun_jobs" in app.dataframe[-1].value.columns
    _visit(app, "overview", "Job x day").slider(key="grid_days").set_value(14).run()
    reopen("overview", "Status", "Job x day")
    assert app.slider(key="grid_days").value == 14


def test_overview_grid_is_the_job_days_table(app: AppTest, history_db: str) -> None:
    """The grid draws the registry's job-days table (what ``ciflake export job-days`` writes)
    for the chosen workflow, from the 28 days before its last run in the range."""
    from dataclasses import replace

    from dashboard.filters import Filters
    from dashboard.loaders import shared

    repo = "verl-project/verl"
    filters = Filters(repo, *shared.day_span(history_db, repo), (), "default")
    workflow = _visit(app, "overview", "Job x day").selectbox(key="grid_workflow").value
    tiles = shared.table(history_db, filters, "status")
    last_run = tiles.loc[tiles["name"] == workflow, "last_run"].iloc[0]
    since = last_run.floor("D") - pd.Timedelta(days=27)
    asked = replace(shared.query(filters), paths=(workflow,), since=since.to_pydatetime())
    cells = tables.build(shared.engine(history_db), shared.project(repo), "job-days", asked)
    grid = _plotted(app)[0]["data"][0]
    assert sorted(grid["y"]) == sorted(cells["logical_job"].unique())
    assert len(grid["x"]) == (cells["day"].max() - cells["day"].min()).days + 1


def test_each_overview_tile_is_one_element(app: AppTest) -> None:
    """A tile's status, window, sparkline and last run are one Markdown element, with its
    tooltip: five elements a tile made the tiles most of the Overview's drawing in a browser."""
    tiles = [m for m in app.markdown if "-badge[" in m.value]
    assert len(tiles) >= 10
    window = re.compile(r":gray\[:small\[last \d+ days: .+; counted once: .+\]\]")
    for tile in tiles:
        lines = tile.value.split("  \n")
        assert any(window.fullmatch(line) for line in lines), tile.value
        assert any(re.fullmatch(r"`[^`]+`", line) for line in lines), tile.value
        assert "Fisher exact" in tile.help
    assert sum("last run [" in tile.value for tile in tiles) >= len(tiles) - 2
    assert not [t for t in app.text if t.value and set(t.value) <= set(" ▁▂▃▄▅▆▇█")]


def _tiles(app: AppTest) -> set[str]:
    return {m.value for m in app.markdown if "-badge[" in m.value}


def test_tag_filter_changes_the_tiles(app: AppTest, history_db: str) -> None:
    # AppTest drops the entrypoint's sidebar from its tree on reruns of an st.navigation app
    # (the widget state still applies), so the filter is set before a fresh first run.
    ascend_app = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    ascend_app.session_state["tags-verl-project/verl"] = ["ascend"]
    ascend_app.run()
    assert ascend_app.sidebar.multiselect(key="tags-verl-project/verl").value == ["ascend"]
    ascend = _tiles(ascend_app)
    assert ascend and ascend < _tiles(app)
    assert all("ascend" in tile for tile in ascend)


def _choose_event(app: AppTest, pr: str) -> AppTest:
    """The Migrations page on the change event of PR ``pr`` ("#7357")."""
    chooser = app.selectbox(key="migration-event")
    (index,) = [i for i, label in enumerate(chooser.options) if pr in label]
    chooser.select(chooser.options[index]).run()
    assert not app.exception, [e.value for e in app.exception]
    return app


def test_migrations_show_one_event_at_a_time_the_newest_migration_first(app: AppTest) -> None:
    _visit(app, "migrations")
    assert not app.expander  # one event drawn, not every event's tables and charts
    chooser = app.selectbox(key="migration-event")
    assert any("#6568" in t for t in chooser.options) and "#7357" in chooser.value
    migrations = [t for t in chooser.options if t.endswith("(migration)")]
    assert chooser.value == migrations[0]  # newest first: the default is the newest migration
    dates = [t.split()[0] for t in chooser.options]
    assert dates == sorted(dates, reverse=True)
    answers = [m.value for m in app.markdown if m.value.startswith("#")]
    assert len(answers) == 1 and answers[0].startswith("#7357")
    _choose_event(app, "#6568")
    answers = [m.value for m in app.markdown if m.value.startswith("#")]
    assert len(answers) == 1 and answers[0].startswith("#6568"), answers


def test_migrations_show_7357_with_successor_strip(app: AppTest) -> None:
    _choose_event(_visit(app, "migrations"), "#7357")
    assert [tab.label for tab in app.tabs] == [
        "Before and after",
        "First runs",
        "Coverage lost",
        "Failure causes",
    ]
    assert len(app.dataframe) == 1 and len(app.dataframe[0].value) and not _plotted(app)
    first = next(
        e for e in app.main if e.type == "markdown" and str(e.value).startswith("#")
    )  # the answer leads, above the sections
    assert first.value.startswith("#7357") and " vs predecessors " in first.value
    assert len(re.findall(r" n=\d+ in the \d+ days (?:after|before)", first.value)) == 2
    assert re.search(
        r"; (no significant change|significant change, (better|worse)) \(p", first.value
    )
    _visit(app, "migrations", "First runs")  # the event chosen stays chosen
    axes = [f["layout"].get("xaxis", {}).get("title", {}).get("text") for f in _plotted(app)]
    assert axes == ["run after the event"], "no first-runs strip for the workflows #7357 created"
    (lost,) = [frame.value for frame in _visit(app, "migrations", "Coverage lost").dataframe]
    assert "successor_job" not in lost.columns
    assert {"last_workflow_path", "before_runs", "last_run_url", "successor"} <= set(lost.columns)
    assert "trtllm_async_unit_tests" in set(lost["logical_job"])
    assert (lost["successor"].str.startswith("no successor")).all()
    assert lost["last_run_url"].str.contains("/actions/runs/").all()
    _visit(app, "migrations", "Failure causes")
    known = [c.value for c in app.caption if c.value.startswith("How much of this mix")]
    assert known and all(" n=" in line or "no failures" in line for line in known)
    assert len(_plotted(app)) == 1


def _signature_with_archived_log(db_url: str) -> str:
    """A signature whose newest failure has its log archived (most logs expired on GitHub)."""
    with make_engine(db_url, read_only=True).connect() as conn:
        rows = conn.execute(
            select(Failure.signature)
            .join(JobLog, JobLog.job_id == Failure.job_id)
            .where(JobLog.status == "ok")
        ).scalars()
        return next(iter(rows))


def test_failures_drill_down_shows_log_text(app: AppTest, history_db: str) -> None:
    _visit(app, "failures", "Signatures")
    signatures = app.dataframe[-1].value
    assert len(signatures) and {"new", "first_seen", "html_url"} <= set(signatures.columns)
    app.selectbox(key="drill_signature").select(_signature_with_archived_log(history_db)).run()
    assert not app.exception
    assert app.code and app.code[0].value.strip()
    assert any("Archived log" in caption.value for caption in app.caption)


def test_flaky_and_runner_pages_have_rows(app: AppTest) -> None:
    _visit(app, "flaky_jobs")
    assert len(app.dataframe[0].value) and "flake_rate_low" in app.dataframe[0].value
    _visit(app, "runners")
    pools = app.dataframe[0].value
    shares = pools["works_elsewhere"].dropna()  # undefined where a pool had no failure
    assert len(shares) and shares.between(0, 1).all()


def test_the_runner_chart_shows_the_runners_with_the_most_failures(app: AppTest) -> None:
    _visit(app, "runners", "Runners")
    runners = next(f.value for f in app.dataframe if "runner_name" in f.value.columns)
    assert HOSTED_RUNNERS in set(runners["runner_name"])
    assert not runners["runner_name"].str.startswith(HOSTED_RUNNER_PREFIX).any()
    (bars,) = [f["data"][0] for f in _plotted(app) if HOSTED_RUNNERS in f["data"][0]["y"]]
    charted = runners.sort_values("fail", ascending=False, kind="stable").head(CHARTED_RUNNERS)
    assert bars["y"][::-1] == charted["runner_name"].tolist()
    assert any(f"the {CHARTED_RUNNERS} rows with the most hard" in c.value for c in app.caption)
    assert any(short_lived_runners("<pool>") in c.value for c in app.caption)
    assert runners.loc[runners["runners"] != 1, "runner_name"].str.startswith("(").all()


def test_repair_time_first_and_the_job_costs_on_request(app: AppTest) -> None:
    _visit(app, "flaky_jobs", "Time to repair and reruns")
    repair = app.dataframe[-1].value
    assert "median_repair_hours" in repair and "rerun_jobs" not in repair and len(repair)
    app.toggle(key="health_jobs").set_value(True).run()
    costs = app.dataframe[-1].value
    assert {"rerun_jobs", "accelerator_hours", "duration_p95_min"} <= set(costs.columns)
    assert costs["median_repair_hours"].tolist() == repair["median_repair_hours"].tolist()


def test_export_offers_a_csv_per_table(app: AppTest) -> None:
    """The page lists the report tables of `ciflake export --help`, by the same names."""
    from click.testing import CliRunner

    from ciflake.cli import cli
    from reports.tables import TABLES

    _visit(app, "export")
    labels = [button.proto.label for button in app.get("download_button")]
    assert labels == [f"{name}.csv" for name in TABLES]
    helped = CliRunner().invoke(cli, ["export", "--help"]).output
    listed = re.search(r"TABLE: ([a-z, -]+)\.", " ".join(helped.split()))
    assert listed is not None, helped
    assert [name.strip() for name in listed.group(1).split(",")] == list(TABLES)


def test_the_export_command_shown_writes_the_page_file(
    history_db: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The command under the Export page's caption, pasted with a table's name, writes the
    file the page downloads: the config and database, --out, the repository, tags and dates."""
    import shlex

    from click.testing import CliRunner

    from ciflake.cli import cli
    from ciflake.demo import demo_config_path
    from dashboard.loaders import export

    monkeypatch.setenv("CIFLAKE_DB_URL", history_db)
    monkeypatch.setenv("CIFLAKE_CONFIG", demo_config_path())
    app = AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()
    app.sidebar.selectbox(key="repo").select("verl-project/verl-recipe").run()
    app.sidebar.multiselect(key="tags-verl-project/verl-recipe").select("dapo").run()
    _visit(app, "export")
    shown = app.code[0].value
    assert "--workflow .github/workflows/recipe_dapo.yml" in shown, shown
    words = shlex.split(shown.replace("TABLE", "runs"))
    monkeypatch.delenv("CIFLAKE_DB_URL")
    monkeypatch.delenv("CIFLAKE_CONFIG")
    result = CliRunner().invoke(cli, words[1:])
    assert result.exit_code == 0, result.output
    written = (tmp_path / "runs.csv").read_bytes()
    monkeypatch.setenv("CIFLAKE_DB_URL", history_db)
    monkeypatch.setenv("CIFLAKE_CONFIG", demo_config_path())
    assert written == export.table_csv(history_db, app.session_state["view"].filters, "runs")
    assert len(written.splitlines()) > 1


def test_a_repository_the_config_does_not_track_is_named(
    app: AppTest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Started with the database URL only (the built-in verl config), the dashboard says which
    repositories of the database its config does not track, and what to do; with the config
    that collected them, nothing."""
    from ciflake.demo import demo_config_path

    (shown,) = [w.value for w in app.sidebar.warning]
    assert shown.startswith(
        "This database also holds verl-project/verl-recipe, which this configuration (built-in "
        "verl defaults) does not track"
    ), shown
    assert "Start the dashboard with the ciflake.toml that collected it" in shown
    monkeypatch.setenv("CIFLAKE_CONFIG", demo_config_path())
    tracked = AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()
    assert not tracked.exception and not tracked.sidebar.warning


def test_empty_database_gets_the_command_to_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    make_engine(url).dispose()
    (tmp_path / "empty.db").touch()
    monkeypatch.setenv("CIFLAKE_DB_URL", url)
    app = AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()
    assert not app.exception
    assert "ciflake db upgrade" in app.error[0].value


def test_missing_database_gets_the_command_to_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CIFLAKE_DB_URL", f"sqlite:///{tmp_path / 'absent.db'}")
    app = AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()
    assert not app.exception
    assert "ciflake collect" in app.error[0].value


def test_a_wrong_password_is_no_missing_database(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CIFLAKE_DB_URL", wrong_password_url("canary-pw"))
    app = AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()
    assert not app.exception
    shown = app.error[0].value
    assert shown.startswith("Cannot connect to postgresql+psycopg://"), shown
    assert "password authentication failed" in shown
    assert "collect" not in shown and "canary-pw" not in shown


@pytest.mark.parametrize(
    "url", ["postgresql+psycopg2://u:canary-pw@127.0.0.1/d", "mysql://u:canary-pw@127.0.0.1/d"]
)
def test_an_unusable_url_is_no_missing_database(monkeypatch: pytest.MonkeyPatch, url) -> None:
    """Only a SQLite file that does not exist yet is fixed by a collect; a URL ciflake cannot
    use is the URL's fault, and the page says so in one line, not a traceback."""
    monkeypatch.setenv("CIFLAKE_DB_URL", url)
    app = AppTest.from_file(str(APP), default_timeout=TIMEOUT).run()
    assert not app.exception
    shown = app.error[0].value
    assert shown.startswith("Configuration: database URL: "), shown
    assert shown.endswith("use sqlite:///FILE or postgresql+psycopg://USER@HOST/DB"), shown
    assert "collect" not in shown and "canary-pw" not in shown


def test_freshness_warns_after_two_intervals() -> None:
    now = pd.Timestamp("2026-08-01T12:00Z").to_pydatetime()
    assert freshness_line(LastCollect(now - pd.Timedelta(minutes=90)), 60, now)[0] is False
    assert freshness_line(LastCollect(now - pd.Timedelta(minutes=150)), 60, now)[0] is True
    assert freshness_line(None, 60, now)[0] is True
    stopped = LastCollect(now - pd.Timedelta(minutes=30), "request budget spent (500 of 500)")
    stale, text = freshness_line(stopped, 60, now)
    assert not stale and text == (
        "Last collect 2026-08-01 11:30 UTC (0.5 h ago), stopped before its end: request "
        "budget spent (500 of 500)."
    )


def test_grid_cells_pick_the_worst_state_per_day() -> None:
    """From the counts (store.overview_counts.job_day_counts): a red run's category beats
    retry-green, the latest red run's when there are two, and a red run in an invalid
    window is ci_config."""
    day = pd.Timestamp("2026-08-01", tz="UTC")
    at = [day + pd.Timedelta(hours=h) for h in (8, 10, 9, 8, 8, 9)]
    counts = pd.DataFrame(
        {
            "logical_job": ["a", "a", "a", "b", "c", "c"],
            "day": day,
            "logical_outcome": ["pass", "fail", "fail", "flaky", "fail", "pass"],
            "category": [None, "oom", "network", None, "network", None],
            "invalid": [0, 0, 0, 0, 1, 0],
            "runs": [2, 1, 3, 1, 1, 4],
            "last_at": at,
        }
    )
    cells = overview_counts.job_day_cells(counts).set_index("logical_job")
    assert cells.at["a", "state"] == "oom" and cells.at["a", "runs"] == 6
    assert cells.at["b", "state"] == "retry-green"
    assert cells.at["c", "state"] == "ci_config" and cells.at["c", "runs"] == 5
    assert charts.job_day_heatmap(cells.reset_index()).data[0].z.shape == (3, 1)


def test_grid_cells_group_in_numpy_by_job_then_day(monkeypatch) -> None:
    """The cells come by job, then day, without a pandas sort, grouping or merge (#49: they
    cost the grid 10 ms); of two red runs as late, the one counted last speaks."""
    day = pd.Timestamp("2026-08-01", tz="UTC")
    counts = pd.DataFrame(
        {
            "logical_job": ["b", "a", "a", "a"],
            "day": [day, day + pd.Timedelta(days=1), day, day],
            "logical_outcome": ["pass", "pass", "fail", "fail"],
            "category": [None, None, "oom", "network"],
            "invalid": 0,
            "runs": [2, 1, 3, 1],
            "last_at": day + pd.Timedelta(hours=8),
        }
    )
    for owner, method in [
        (pd.DataFrame, "merge"),
        (pd.DataFrame, "groupby"),
        (pd.Series, "groupby"),
    ]:
        monkeypatch.setattr(owner, method, None)
    for owner in (pd.DataFrame, pd.Series):
        monkeypatch.setattr(owner, "sort_values", None)
    cells = overview_counts.job_day_cells(counts)
    assert cells.values.tolist() == [
        ["a", day, "network", 4],
        ["a", day + pd.Timedelta(days=1), "green", 1],
        ["b", day, "green", 2],
    ]


def test_runner_pools_from_stored_labels() -> None:
    jobs = pd.DataFrame(
        {
            "labels": [("linux", "gpu-8"), (), None, ("linux", "gpu-8"), ("npu",)],
            "runner_name": ["r1", None, None, "r2", "n1"],
        }
    )
    pooled = elsewhere.with_runner_pool(jobs)
    assert list(pooled["runner_pool"]) == [
        "linux+gpu-8",
        "(no runner)",
        "(no runner)",
        "linux+gpu-8",
        "npu",
    ]
    assert list(pooled["runner_name"]) == ["r1", "(none)", "(none)", "r2", "n1"]


def test_failures_page_shows_linked_issues_and_new_and_filters(
    demo_db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A linked signature shows its issue and state; the filter keeps new, known or unlinked
    signatures only. On a copy of the demo's database, which the other tests only read."""
    import shutil

    import streamlit as st
    from sqlalchemy.orm import Session

    from store.triage import link

    source = Path(make_engine(demo_db).url.database or "")
    copy = tmp_path / "demo.db"
    shutil.copy(source, copy)
    url = f"sqlite:///{copy}"
    monkeypatch.setenv("CIFLAKE_DB_URL", url)
    app = _visit(
        AppTest.from_file(str(APP), default_timeout=TIMEOUT).run(), "failures", "Signatures"
    )
    before = app.dataframe[-1].value
    known_before = set(before.loc[before["issue_url"].notna(), "signature"])  # the demo's own
    signature = before.loc[before["issue_url"].isna(), "signature"].iloc[0]  # one unlinked
    issue = "https://github.com/verl-project/verl/issues/77"
    engine = make_engine(url)
    with Session(engine) as session, session.begin():
        repo = session.execute(select(WorkflowRun.repo).limit(1)).scalar_one()
        link(session, repo, signature, issue, note="tracked", set_by="alice")
    st.cache_data.clear()
    app.run()
    every = app.dataframe[-1].value
    linked = every[every["signature"] == signature]
    assert list(linked["issue_url"]) == [issue] and {"new", "first_seen", "last_seen"} <= set(
        every.columns
    )
    counts = {}
    for show in ("known", "unlinked", "new"):
        app.segmented_control(key="fail_show").set_value(show).run()
        assert not app.exception
        shown = app.dataframe[-1].value
        counts[show] = len(shown)
        if show == "known":
            assert set(shown["signature"]) == known_before | {signature}
        elif show == "unlinked":
            assert signature not in set(shown["signature"]) and shown["issue_url"].isna().all()
        else:
            assert shown["new"].all()
    assert counts["known"] == len(known_before) + 1 and counts["unlinked"] > 0 and counts["new"] > 0
