import re
import tomllib
from dataclasses import replace
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

import pytest

from ciflake.cli import cli
from store import settings
from store.settings import _TABLES, DEFAULTS_NAME, OPTIONAL_SETTINGS, ConfigError, load_config


def test_builtin_defaults_track_verl():
    config = load_config(env={})
    assert config.project().repo == "verl-project/verl"
    paths = {w.path.rsplit("/", 1)[1] for w in config.project().workflows}
    assert {
        "e2e_fully_async_policy.yml",
        "e2e_one_step_off_policy.yml",
        "e2e_v1_separate_async.yml",
        "e2e_v1_separate_async_nightly.yml",
        "e2e_fully_async_policy_opd.yml",
        "e2e_v1_separate_async_opd.yml",
        "e2e_fully_async_policy_trtllm.yml",
        "e2e_fully_async_policy_ascend.yml",
        "e2e_one_step_off_policy_ascend.yml",
        "e2e_v1_separate_async_ascend.yml",
        "e2e_ascend.yml",
    } == paths
    prs = {e.pr for e in config.project().events}
    assert {6568, 6649, 7357, 7127, 5791, 6784, 7041, 6520, 5523} <= prs
    migration = next(e for e in config.project().events if e.pr == 7357)
    assert migration.kind == "migration"
    assert migration.date == datetime(2026, 8, 12, 12, 44, tzinfo=UTC)
    assert config.token is None


def test_precedence_flag_over_env_over_file(tmp_path):
    file = tmp_path / "c.toml"
    file.write_text('[database]\nurl = "sqlite:///file.db"\n[github]\napi_url = "http://f"\n')
    env = {"CIFLAKE_DB_URL": "sqlite:///env.db"}
    assert load_config(file, env=env).database_url == "sqlite:///env.db"
    assert (
        load_config(file, env=env, db_url="sqlite:///flag.db").database_url == "sqlite:///flag.db"
    )
    assert load_config(file, env={}).database_url == "sqlite:///file.db"
    assert load_config(file, env={}).api_url == "http://f"
    # tables merge key by key: the file's [database] keeps the built-in [github] repo
    assert load_config(file, env={}).repos == ("verl-project/verl",)


def test_own_repository_replaces_workflows_and_events(tmp_path):
    file = tmp_path / "c.toml"
    file.write_text(
        '[github]\nrepo = "acme/widgets"\n'
        '[[workflows]]\npath = ".github/workflows/ci.yml"\nlineage = "ci"\n'
        '[[events]]\ndate = 2026-01-02\ntitle = "new runners"\nkind = "config"\n'
    )
    config = load_config(file, env={})
    assert config.project().repo == "acme/widgets"
    assert [w.path for w in config.project().workflows] == [".github/workflows/ci.yml"]
    assert [e.title for e in config.project().events] == ["new runners"]
    assert config.project().events[0].date == datetime(2026, 1, 2, tzinfo=UTC)
    # nothing of verl's story: its lineages, invalid windows and summary PR stay verl's
    project = config.project()
    assert project.lineages == () and project.invalid_windows == () and project.summary_pr is None
    file.write_text('[github]\nrepo = "acme/widgets"\n')
    with pytest.raises(ConfigError, match="'acme/widgets' has no \\[\\[workflows\\]\\]"):
        load_config(file, env={})


def test_token_from_env_or_file_never_in_repr(tmp_path):
    token_file = tmp_path / "tok"
    token_file.write_text("ghp_canary_from_file\n")
    config = load_config(env={"CIFLAKE_TOKEN_FILE": str(token_file)})
    assert config.token == "ghp_canary_from_file"
    assert "canary" not in repr(config)
    config = load_config(env={"GITHUB_TOKEN": "ghp_canary_env"})
    assert config.token == "ghp_canary_env" and config.token_source == "environment GITHUB_TOKEN"


# Two repositories: verl with its built-in workflows and events, and one of its own.
TWO = """
[[repositories]]
repo = "verl-project/verl"

[[repositories]]
repo = "verl-project/verl-recipe"
default_branch = "trunk"
window_days = 7
summary_pr = 412

[[repositories.workflows]]
path = ".github/workflows/recipe_dapo.yml"
tags = ["dapo"]
lineage = "recipe_dapo"

[[repositories.lineages]]
name = "recipe_dapo"
job_renames = { "dapo (old)" = "dapo" }

[[repositories.events]]
date = "2026-07-20"
title = "Recipe CI on the new runners"
pr = 412
"""


def test_two_repositories_each_a_project_of_its_own(tmp_path, runner):
    file = tmp_path / "two.toml"
    file.write_text(TWO)
    config = load_config(file, env={})
    assert config.repos == ("verl-project/verl", "verl-project/verl-recipe")
    verl, recipe = config.projects
    builtin = load_config(env={}).project()
    # the built-in repository named without workflows keeps everything built in
    assert verl == builtin
    assert [w.lineage for w in recipe.workflows] == ["recipe_dapo"]
    assert [e.pr for e in recipe.events] == [412] and recipe.summary_pr == 412
    assert recipe.lineages[0].job_renames == {"dapo (old)": "dapo"}
    assert recipe.default_branch == "trunk"
    # its own window, the other settings from [analytics]
    assert recipe.analysis == replace(builtin.analysis, window_days=7)
    assert config.project("verl-project/verl-recipe") is recipe
    # GitHub ignores case in OWNER/NAME, so --repo does; the configured spelling is kept
    assert config.project("Verl-Project/VERL-recipe") is recipe
    with pytest.raises(ConfigError, match="choose one with --repo"):
        config.project()
    with pytest.raises(ConfigError, match="'x/y' is not configured"):
        config.project("x/y")
    # a repository only collected, not configured: nothing of the others' story
    other = config.project_for("x/y")
    assert other.workflows == () and other.events == () and other.lineages == ()
    shown = runner.invoke(cli, ["--config", str(file), "config", "show"])
    assert shown.exit_code == 0, shown.output
    assert shown.output.count("[[repositories]]") == 2
    assert 'repo = "verl-project/verl-recipe"' in shown.output
    listed = runner.invoke(cli, ["--config", str(file), "events", "list"])
    assert listed.exit_code == 2 and "choose one with --repo" in listed.output
    mine = ["--config", str(file), "events", "list", "--repo", "Verl-Project/verl-recipe"]
    listed = runner.invoke(cli, mine)
    assert listed.exit_code == 0, listed.output
    assert "Recipe CI on the new runners" in listed.output and "#7357" not in listed.output


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("[github\nrepo=1", "not valid TOML"),
        ("[github]\nrepository = 'x/y'\n", "unknown key 'repository'"),
        ("[colect]\n", "unknown key 'colect'"),
        ("[[events]]\ndate = '2026-13-45'\ntitle = 'x'\n", "bad date '2026-13-45'"),
        ("[[events]]\ndate = '2026-01-01'\ntitle = 'x'\nkind = 'party'\n", "kind 'party'"),
        ("[[workflows]]\npath = 'a.yml'\n", "missing key 'lineage'"),
        ("[collect]\ninterval_minutes = 'soon'\n", "'interval_minutes' must be int"),
        ("[collect]\ninterval_minutes = 0\n", "interval_minutes must be positive"),
        ("[database]\nurl = 'mysql://x/y'\n", "unsupported database"),
        ("[database]\nurl = 'not a url'\n", "not a database URL"),
        ("[github]\nrepo = 'no-slash'\n", "OWNER/NAME"),
        ("[summary]\nnightly_at = '25:00'\n", "HH:MM"),
        ("[[repositories]]\nrepo = 'a/b'\n", "missing key 'workflows'"),
        ("[[repositories]]\ndefault_branch = 'main'\n", "missing key 'repo'"),
        ("[[repositories]]\nrepo = 'a/b'\nbranch = 'x'\n", "unknown key 'branch'"),
        ("[[repositories]]\nrepo = 'a/b'\n[[repositories.workflows]]\npath = 'a.yml'\n", "lineage"),
        (TWO + "[[workflows]]\npath = 'a.yml'\nlineage = 'a'\n", "[[workflows]] beside"),
        (TWO + "[[repositories]]\nrepo = 'verl-project/verl'\n", "listed twice"),
        (TWO + "[[repositories]]\nrepo = 'Verl-Project/Verl-Recipe'\nworkflows = []\n", "twice"),
        # an entry of a repository's own array is named by its table path and its repository
        (
            TWO.replace("\npr = 412\n", "\npr = 412\nkind = 'party'\n"),
            "[[repositories.events]] #1 of verl-project/verl-recipe: kind 'party'",
        ),
        (
            TWO.replace('date = "2026-07-20"', 'date = "2026-13-45"'),
            "[[repositories.events]] #1 of verl-project/verl-recipe 'date': bad date",
        ),
        (
            TWO.replace("\npr = 412\n", "\npr = 'x'\n"),
            "[[repositories.events]] #1 of verl-project/verl-recipe: 'pr' must be int",
        ),
        (
            TWO + "[[repositories.workflows]]\npath = '.github/workflows/recipe_dapo.yml'\n"
            "lineage = 'x'\n",
            "[[repositories.workflows]] of verl-project/verl-recipe: path "
            "'.github/workflows/recipe_dapo.yml' is listed twice",
        ),
        (
            TWO + "[[repositories.invalid_windows]]\nworkflow = 'a.yml'\nfrom = 2026-02-02\n"
            "to = 2026-01-01\n",
            "[[repositories.invalid_windows]] #1 of verl-project/verl-recipe: 'to' is before",
        ),
        ("[[repositories]]\nrepo = 'a/b'\nwindow_days = 0\nworkflows = []\n", "positive"),
    ],
)
def test_bad_config_gives_one_clear_line(tmp_path, runner, content, expected):
    file = tmp_path / "bad.toml"
    file.write_text(content)
    with pytest.raises(ConfigError) as info:
        load_config(file, env={})
    assert expected in str(info.value)
    result = runner.invoke(cli, ["--config", str(file), "events", "list"])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ciflake: error:")
    assert expected in lines[0]
    assert "Traceback" not in result.output


def test_an_unreadable_token_file_names_where_it_was_set(tmp_path):
    """CIFLAKE_TOKEN_FILE is named as the culprit, not the config file; [github] token_file
    with the file that sets it."""
    missing = tmp_path / "no-token"
    with pytest.raises(ConfigError) as info:
        load_config(env={"CIFLAKE_TOKEN_FILE": str(missing)})
    assert str(info.value) == (
        f"CIFLAKE_TOKEN_FILE: cannot read token file {missing}: No such file or directory"
    )
    file = tmp_path / "c.toml"
    file.write_text(f'[github]\ntoken_file = "{missing}"\n')
    with pytest.raises(ConfigError) as info:
        load_config(file, env={})
    assert str(info.value) == (
        f"{file}: [github] token_file: cannot read token file {missing}: No such file or directory"
    )


def test_bad_file_names_the_file(tmp_path, runner):
    file = tmp_path / "bad.toml"
    file.write_text("[colect]\n")
    result = runner.invoke(cli, ["--config", str(file), "config", "show"])
    assert result.exit_code == 2 and str(file) in result.output


def test_missing_config_file(runner, tmp_path):
    result = runner.invoke(cli, ["--config", str(tmp_path / "none.toml"), "config", "show"])
    assert result.exit_code == 2
    assert "cannot read config file" in result.output


def test_unusable_database_url(runner, tmp_path):
    for url, expected in [
        (f"sqlite:///{tmp_path}/no/such/dir/x.db", "directory does not exist"),
        ("postgresql+psycopg://nobody:secretpw@127.0.0.1:1/none", "cannot connect to postgresql"),
        ("bogus", "not a database URL"),
        ("mysql://u:secretpw@h/d", "unsupported database mysql://u:***@h/d: use sqlite:///FILE"),
        (
            "postgresql+psycopg2://u:secretpw@h/d",
            "database driver 'psycopg2' of postgresql+psycopg2://u:***@h/d is not installed: "
            "use sqlite:///FILE or postgresql+psycopg://USER@HOST/DB",
        ),
        ("postgresql+nodriver://h/d", "database driver 'nodriver' of"),
    ]:
        result = runner.invoke(cli, ["--db", url, "db", "upgrade"])
        assert result.exit_code == 2, result.output
        assert expected in result.output
        assert "Traceback" not in result.output
        assert "secretpw" not in result.output
        assert len(result.output.strip().splitlines()) == 1


def test_every_setting_has_its_one_default_in_the_built_in_file():
    defaults = tomllib.loads(resources.files("store").joinpath(DEFAULTS_NAME).read_text())
    missing = [
        (table, key)
        for table, keys in _TABLES.items()
        for key in keys
        if key not in defaults.get(table, {}) and (table, key) not in OPTIONAL_SETTINGS
    ]
    assert missing == []
    given = {(t, k) for t in _TABLES for k in defaults.get(t, {})}
    assert not OPTIONAL_SETTINGS & given
    source = Path(settings.__file__).read_text()
    tables = "|".join(_TABLES)
    assert re.findall(rf'\b(?:{tables})\.get\("\w+", ', source) == []  # no inline default


TRIAGE = """
[triage]
min_failures = 5
login = "ci-bot[bot]"

[[repositories]]
repo = "verl-project/verl"

[[repositories]]
repo = "o/other"
triage = { max_new = 0, quiet_days = 30 }
[[repositories.workflows]]
path = ".github/workflows/ci.yml"
lineage = "ci"
"""


def test_triage_settings_from_the_table_and_per_repository(tmp_path):
    file = tmp_path / "c.toml"
    file.write_text(TRIAGE)
    verl, other = load_config(file, env={}).projects
    assert (verl.triage.min_failures, verl.triage.min_runs, verl.triage.max_new) == (5, 2, 3)
    assert verl.triage.login == "ci-bot[bot]"
    assert (other.triage.max_new, other.triage.quiet_days, other.triage.min_failures) == (0, 30, 5)
    assert load_config(env={}).project().triage.login is None
    assert load_config(env={}).project().triage.pause_seconds == 3.0  # GitHub throttles creates


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[triage]\nmin_runs = 0\n", "[triage] min_runs must be positive, got 0"),
        ("[triage]\nmax_new = -1\n", "[triage] max_new must be at least 0, got -1"),
        ("[triage]\nlimit = 1\n", "[triage]: unknown key 'limit'"),
        ("[triage]\npause_seconds = -1\n", "[triage] pause_seconds must be between 0 and 3600"),
        (
            '[[repositories]]\nrepo = "verl-project/verl"\ntriage = { window_days = "7" }\n',
            "[[repositories]] #1: triage: 'window_days' must be int",
        ),
        (
            '[[repositories]]\nrepo = "verl-project/verl"\ntriage = { quiet_days = 0 }\n',
            "[[repositories]] #1 triage quiet_days must be positive",
        ),
    ],
)
def test_triage_settings_mistakes_are_one_line(tmp_path, text, words):
    file = tmp_path / "c.toml"
    file.write_text(text)
    with pytest.raises(ConfigError) as error:
        load_config(file, env={})
    assert words in str(error.value) and "\n" not in str(error.value)


def test_incident_settings_from_analytics_and_per_repository(tmp_path):
    """[analytics] incident_* fill IncidentSettings, a [[repositories]] entry overrides them,
    and a value out of range is one line naming the file and the key."""
    file = tmp_path / "ciflake.toml"
    file.write_text(
        "[analytics]\nincident_window_hours = 3\nincident_min_share = 0.9\n"
        '[[repositories]]\nrepo = "a/b"\nincident_min_jobs = 8\n'
        '[[repositories.workflows]]\npath = ".github/workflows/ci.yml"\nlineage = "ci"\n'
    )
    found = load_config(file, env={}).project().analysis.incidents
    assert (found.window_hours, found.min_share, found.min_jobs) == (3.0, 0.9, 8)
    assert (found.min_runs, found.min_workflows) == (3, 2)  # the built-in defaults
    for line, words in (
        ("incident_min_share = 1.5", "[analytics] incident_min_share must be in (0, 1], got 1.5"),
        ("incident_window_hours = 0", "[analytics] incident_window_hours must be positive"),
        ("incident_min_workflows = 0", "[analytics] incident_min_workflows"),
    ):
        file.write_text(f"[analytics]\n{line}\n")
        with pytest.raises(ConfigError, match=re.escape(words)):
            load_config(file, env={})
