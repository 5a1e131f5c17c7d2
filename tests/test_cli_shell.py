from ciflake.cli import cli


def test_db_upgrade_twice(runner, tmp_path):
    url = f"sqlite:///{tmp_path / 'x.db'}"
    first = runner.invoke(cli, ["--db", url, "db", "upgrade"])
    assert first.exit_code == 0 and "migrated empty" in first.output
    second = runner.invoke(cli, ["--db", url, "db", "upgrade"])
    assert second.exit_code == 0 and "already at" in second.output


def test_events_list_prints_verl_events(runner):
    result = runner.invoke(cli, ["events", "list"])
    assert result.exit_code == 0
    assert "2026-06-03 07:51" in result.output and "#6568" in result.output
    assert "2026-08-12 12:44" in result.output and "#7357" in result.output


def test_events_add_is_idempotent_and_listed(runner, db_url):
    args = [
        "--db",
        db_url,
        "events",
        "add",
        "2026-09-01",
        "new CANN image",
        "--pr",
        "7500",
        "--kind",
        "image",
    ]
    assert "added" in runner.invoke(cli, args).output
    assert "already recorded" in runner.invoke(cli, args).output
    listed = runner.invoke(cli, ["--db", db_url, "events", "list"]).output
    assert listed.count("new CANN image") == 1 and "#7500" in listed


def test_events_add_rejects_bad_date(runner, db_url):
    result = runner.invoke(cli, ["--db", db_url, "events", "add", "yesterday", "x"])
    assert result.exit_code == 2 and "bad date 'yesterday'" in result.output


def test_config_show_hides_token(runner, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_canary_0123456789")
    result = runner.invoke(cli, ["config", "show"])
    assert result.exit_code == 0
    assert "ghp_canary" not in result.output
    assert 'token = "set"' in result.output
    assert "e2e_v1_separate_async.yml" in result.output


def test_db_stats_counts_tables(runner, engine, db_url):
    result = runner.invoke(cli, ["--db", db_url, "db", "stats"])
    assert result.exit_code == 0 and "workflow_runs" in result.output


def test_db_stats_runs_prints_only_the_number_of_stored_runs(runner, thin_db):
    """The nightly action writes this number into its run's summary, before and after."""
    for kind, runs in (("empty", "0"), ("one run", "1")):
        result = runner.invoke(cli, ["--db", thin_db(kind), "db", "stats", "--runs"])
        assert result.exit_code == 0 and result.output == f"{runs}\n", (kind, result.output)
