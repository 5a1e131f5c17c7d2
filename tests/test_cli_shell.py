from ciflake.cli import cli
from tests.support.pg import wrong_password_url


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


def test_dashboard_on_a_busy_port_says_so_and_claims_no_url(runner):
    """Another server on the port: one line naming the port and what to do, a failing exit,
    and no URL (before, the health check reached the other server and its URL was printed)."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Healthy(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    with ThreadingHTTPServer(("127.0.0.1", 0), Healthy) as other:
        threading.Thread(target=other.serve_forever, daemon=True).start()
        port = other.server_address[1]
        result = runner.invoke(cli, ["--db", "sqlite:///x.db", "dashboard", "--port", str(port)])
        other.shutdown()
    assert result.exit_code == 2, result.output
    assert result.output.strip() == (
        f"ciflake: error: port {port} on 127.0.0.1 is in use by another process: choose "
        "another with --port N, or set [dashboard] port in ciflake.toml"
    )


def test_a_wrong_password_is_a_connection_failure_not_a_missing_database(runner):
    result = runner.invoke(cli, ["--db", wrong_password_url("canary-pw"), "db", "stats"])
    assert result.exit_code == 2, result.output
    line = result.output.strip()
    assert line.startswith("ciflake: error: cannot connect to postgresql+psycopg://"), line
    assert line.endswith(': password authentication failed for user "ciflake"'), line
    assert "canary-pw" not in line and "\n" not in line
