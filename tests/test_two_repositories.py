"""Two repositories in one ciflake, no cross-talk: fakehub serves verl and its recipes
repository, one collect fills both, and each report table, the summary and every dashboard page
answer for the repository selected with its own events and lineages. The strongest form of
"no cross-talk": each repository's answers from the database holding both are, byte for byte,
its answers from a database that holds it alone."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from streamlit.testing.v1 import AppTest

from analytics.spreadsheet import csv_bytes
from ciflake.cli import cli
from ciflake.demo import demo_config, demo_config_path
from ciflake.summary import run_summary
from dashboard import sections
from reports.query import Query
from reports.tables import TABLES, build
from store.derived import repositories
from store.engine import make_engine
from store.events import all_events
from tests.support.collected import DEFAULT, Scenario, collected_copy

VERL, RECIPE = "verl-project/verl", "verl-project/verl-recipe"
BOTH = Scenario(repos=(VERL, RECIPE))
RECIPE_ALONE = Scenario(repos=(RECIPE,))
APP = Path(__file__).resolve().parent.parent / "dashboard" / "app.py"
NOW = datetime(2026, 11, 28, tzinfo=UTC)
# Words of each repository's story that the other's answers must never show.
OWN = {
    VERL: ("e2e_v1_separate_async", "#7357", "#6568"),
    RECIPE: ("recipe_dapo", "e2e_dapo", "#412"),
}


@pytest.fixture(scope="module")
def dbs(tmp_path_factory) -> dict[str, str]:
    """Copies of: both repositories collected by one collect, each of them alone."""
    return {
        "both": collected_copy(tmp_path_factory.mktemp("both"), BOTH),
        VERL: collected_copy(tmp_path_factory.mktemp("verl"), DEFAULT),
        RECIPE: collected_copy(tmp_path_factory.mktemp("recipe"), RECIPE_ALONE),
    }


def test_one_collect_fills_both(dbs):
    assert repositories(make_engine(dbs["both"])) == [VERL, RECIPE]
    assert repositories(make_engine(dbs[RECIPE])) == [RECIPE]


@pytest.mark.parametrize("repo", [VERL, RECIPE])
def test_every_report_table_answers_for_its_own_repository(dbs, repo):
    project = demo_config().project(repo)
    both, alone = make_engine(dbs["both"]), make_engine(dbs[repo])
    nonempty = 0
    for name in TABLES:
        for query in (Query(scope="all"), Query(scope="default")):
            mine = build(both, project, name, query)
            assert csv_bytes(mine) == csv_bytes(build(alone, project, name, query)), name
            nonempty += len(mine) > 0
            if "repo" in mine.columns:
                assert set(mine["repo"]) <= {repo}
    assert nonempty > len(TABLES)  # most tables have rows for both queries: a real comparison


def _summary(db: str, repo: str) -> str:
    config = demo_config(db)
    project = config.project(repo)
    engine = make_engine(db)
    text = run_summary(
        config,
        project,
        engine,
        all_events(project, engine),
        pr=None,
        issue=None,
        since="30d",
        post=False,
        now=NOW,
    )
    # the footer says when this database was collected: the one line that may differ
    return re.sub(r"last successful collect [^)]*\)", "last successful collect ...", text)


@pytest.mark.parametrize(("repo", "pr"), [(VERL, 7357), (RECIPE, 412)])
def test_the_summary_answers_for_its_own_repository(dbs, repo, pr):
    text = _summary(dbs["both"], repo)
    assert text == _summary(dbs[repo], repo)
    assert f"#{pr}" in text
    other = RECIPE if repo == VERL else VERL
    assert not [word for word in OWN[other] if word in text]


def test_commands_need_a_repository_when_two_are_configured(dbs, tmp_path):
    runner = CliRunner()
    base = ["--config", demo_config_path(), "--db", dbs["both"]]
    out = tmp_path / "runs.csv"
    asked = runner.invoke(cli, [*base, "export", "runs", "--out", str(out)])
    assert asked.exit_code == 2 and "choose one with --repo" in asked.output
    given = runner.invoke(cli, [*base, "export", "runs", "--out", str(out), "--repo", RECIPE])
    assert given.exit_code == 0, given.output
    assert {line.split(",")[1] for line in out.read_text().splitlines()[1:]} == {RECIPE}
    summary = runner.invoke(cli, [*base, "summary", "--repo", RECIPE, "--since", "30d"])
    assert summary.exit_code == 0, summary.output
    assert "#412" in summary.output and "#7357" not in summary.output


def _page_text(app: AppTest) -> str:
    """Everything a page shows as text: headings, captions, markdown, tables' cells."""
    parts = [
        e.value
        for kind in ("title", "subheader", "caption", "markdown", "info")
        for e in getattr(app, kind)
    ]
    parts += [frame.value.to_csv() for frame in app.dataframe]
    parts += [str(box.options) for box in app.selectbox]
    return "\n".join(map(str, parts))


@pytest.mark.parametrize("repo", [VERL, RECIPE])
def test_every_page_answers_for_the_repository_selected(dbs, monkeypatch, repo):
    monkeypatch.setenv("CIFLAKE_DB_URL", dbs["both"])
    monkeypatch.setenv("CIFLAKE_CONFIG", demo_config_path())
    app = AppTest.from_file(str(APP), default_timeout=120)
    app.session_state["repo"] = repo
    app.run()
    other = RECIPE if repo == VERL else VERL
    seen = ""
    for page in ("overview", "migrations", "failures", "flaky_jobs", "runners", "export"):
        for section in sections.walked(app, page):  # every section of the page, in turn
            assert not app.exception, (page, [e.value for e in app.exception])
            text = _page_text(section)
            assert not [word for word in OWN[other] if word in text], page
            seen += text
    # and its own story is there: its lineages on the tiles, its event on the Migrations page
    assert [word for word in OWN[repo] if word in seen] == list(OWN[repo])


def test_collect_fills_every_repository_and_repo_narrows_it(tmp_path):
    """`collect` collects each configured repository in turn, one report line each; `--repo`
    collects only the one named."""
    import fakehub
    from tests.support.hubtools import SINCE, TEST_SCALE

    db = f"sqlite:///{tmp_path / 'c.db'}"
    with fakehub.running(seed=3, scale=TEST_SCALE) as hub:
        env = {"GITHUB_TOKEN": hub.token, "CIFLAKE_API_URL": hub.base_url}
        base = ["--config", demo_config_path(), "--db", db, "collect", "--once", "-q"]
        since = ["--since", f"{SINCE:%Y-%m-%d}"]
        runner = CliRunner(env=env)
        narrowed = runner.invoke(cli, [*base, *since, "--repo", RECIPE])
        assert narrowed.exit_code == 0, narrowed.output
        assert repositories(make_engine(db)) == [RECIPE]
        assert narrowed.output.startswith(f"{RECIPE}: ") and VERL + ":" not in narrowed.output
        both = runner.invoke(cli, [*base, *since])
        assert both.exit_code == 0, both.output
    assert repositories(make_engine(db)) == [VERL, RECIPE]
    lines = [line.split(":")[0] for line in both.output.splitlines() if ": runs " in line]
    assert lines == [VERL, RECIPE]


def test_a_repository_github_refuses_stops_no_other(tmp_path):
    """A configured repository GitHub does not know (a typo, a rename, one the token cannot
    see) is reported on its own line and the others are collected; the exit status says."""
    import fakehub
    from tests.support.hubtools import SINCE, TEST_SCALE

    config = tmp_path / "three.toml"
    config.write_text(
        Path(demo_config_path()).read_text()
        + '\n[[repositories]]\nrepo = "verl-project/no-such-repo"\n'
        + '[[repositories.workflows]]\npath = ".github/workflows/ci.yml"\nlineage = "ci"\n'
    )
    db = f"sqlite:///{tmp_path / 'c.db'}"
    with fakehub.running(seed=3, scale=TEST_SCALE, repos=(RECIPE,)) as hub:
        env = {"GITHUB_TOKEN": hub.token, "CIFLAKE_API_URL": hub.base_url}
        args = ["--config", str(config), "--db", db, "collect", "--once", "-q"]
        result = CliRunner(env=env).invoke(cli, [*args, "--since", f"{SINCE:%Y-%m-%d}"])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert any(line.startswith(f"{RECIPE}: runs ") for line in lines), result.output
    # the hub serves the recipes alone: verl is refused as well as the typo
    for repo in (VERL, "verl-project/no-such-repo"):
        assert any(line.startswith(f"{repo}: collect stopped: ") for line in lines), lines
    assert lines[-1].startswith("ciflake: error: collect stopped for ")
    assert repositories(make_engine(db)) == [RECIPE]


def test_a_repository_a_shared_budget_did_not_reach_goes_first_next_time(tmp_path):
    """Under one `--max-requests`, the repository the budget ran out in closes its collect
    "stopped" and says so in its freshness line; the one never reached has no collect to show,
    and goes first the next night."""
    import fakehub
    from collector.once import collect_all
    from collector.sync_report import CollectOptions
    from reports.freshness import collected
    from store.bookkeeping import last_collect
    from tests.support.hubtools import SINCE, TEST_SCALE, hub_config, migrated

    db = f"sqlite:///{tmp_path / 'c.db'}"
    engine = migrated(db)
    options = CollectOptions(since=SINCE, quiet=True, max_requests=30)
    with fakehub.running(seed=3, scale=TEST_SCALE) as hub:
        config = hub_config(hub, db, (VERL, RECIPE))
        first = collect_all(config, engine, options)
        assert [repo for repo, _ in first] == [VERL, RECIPE]  # in the configured order
        assert all(report.stopped for _, report in first)
        assert first[1][1].requests == 0
        assert last_collect(engine, RECIPE) is None
        stopped = last_collect(engine, VERL)
        assert stopped is not None and stopped.stopped == first[0][1].stopped
        line = collected(stopped, datetime.now(UTC))
        assert line.startswith("last collect ") and "stopped before its end: request budget" in line
        second = collect_all(config, engine, options)
    assert [repo for repo, _ in second] == [RECIPE, VERL]
    assert second[0][1].requests > 0
