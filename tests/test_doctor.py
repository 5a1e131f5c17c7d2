"""``ciflake doctor`` against fakehub: each injected problem turns its own line to warn or fail
and leaves the others ok (or skip, when the problem leaves nothing to check them with)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from click.testing import CliRunner

import fakehub
from ciflake.cli import cli
from collector.doctor.checks import token_kind, url_check
from collector.doctor.estimate import left_share, wall_seconds
from store.settings import load_config
from tests.support.collected import DEFAULT
from tests.support.hubtools import collect

SCALE = 0.05
# Newer than fakehub's history end (2026-11-28) minus the 90-day log retention: no log of the
# runs since then has expired, so the old-logs line is ok unless a test asks for older runs.
RECENT = "2026-10-01"
CHECKS = ("api url", "network", "token", "rate budget", "repository", "workflow")
TRACKED = len(load_config(env={}).project().workflows)


@pytest.fixture
def hub() -> Iterator[fakehub.Hub]:
    with fakehub.running(seed=7, scale=SCALE) as running:
        yield running


def doctor(runner, hub, *args: str, url: str | None = None, since: str | None = RECENT, env=None):
    """(exit code, [(status, name, detail)], output) of `ciflake doctor` against the hub."""
    options = ["--since", since] if since else []
    result = runner.invoke(
        cli,
        ["doctor", "--api-url", url or hub.base_url, *options, *args],
        env={"GITHUB_TOKEN": hub.token, **(env or {})},
    )
    assert not isinstance(result.exception, Exception) or isinstance(
        result.exception, SystemExit
    ), result.output
    lines = [
        (line[:4].strip(), line[6:17].strip(), line[19:])
        for line in result.output.splitlines()
        if line[:4].strip() in ("ok", "warn", "fail", "skip")
    ]
    return result.exit_code, lines, result.output


def others(lines, name: str, detail: str | None = None) -> set[str]:
    """The statuses of every line but the one named (and, for workflows, with this detail)."""
    return {status for status, n, d in lines if not (n == name and (detail is None or detail in d))}


def only(lines, name: str, detail: str | None = None) -> list[tuple[str, str, str]]:
    return [line for line in lines if line[1] == name and (detail is None or detail in line[2])]


def test_clean_hub_every_check_ok_in_about_20_requests(runner, hub):
    code, lines, output = doctor(runner, hub)
    assert code == 0, output
    assert {status for status, _, _ in lines} == {"ok"}, output
    names = [name for _, name, _ in lines]
    for name in (*CHECKS, "annotations", "log", "old logs"):
        assert name in names, output
    assert names.count("workflow") == TRACKED
    used = int(re.search(r"(\d+) API requests used", output).group(1))
    assert used == hub.admin("GET", "counters")["total"]
    assert used <= 25
    assert "user token (5,000/h)" in only(lines, "token")[0][2]
    assert re.search(r"estimate: first backfill since 2026-10-01: [\d,]+ requests", output)
    assert "h of budget at 5,000/h" in output


def test_bad_token_fails_its_line_and_skips_what_needs_it(runner, hub):
    hub.admin("POST", "token", {"token": "rotated"})
    code, lines, output = doctor(runner, hub)
    assert code == 1
    [(status, _, detail)] = only(lines, "token")
    assert status == "fail" and "401" in detail and "GITHUB_TOKEN" in detail
    assert {s for s, n, _ in lines if n in ("api url", "network")} == {"ok"}
    assert others(lines, "token") - {"ok"} == {"skip"}, output


def test_workflow_token_budget_warns_and_estimates_hours(runner, hub):
    hub.admin("POST", "rate_limit", {"limit": 1000})
    code, lines, output = doctor(runner, hub)
    assert code == 0, output
    assert "workflow's GITHUB_TOKEN (1,000/h" in only(lines, "token")[0][2]
    [(status, _, detail)] = only(lines, "rate budget")
    assert status == "warn" and "user token" in detail and "--max-requests" in detail
    assert others(lines, "rate budget") == {"ok"}, output
    assert re.search(r"estimate: [\d.]+ h of budget at 1,000/h", output)


def test_deleted_workflow_fails_only_its_line(runner, hub):
    hub.admin("POST", "delete_workflow", {"workflow": "e2e_ascend.yml"})
    code, lines, output = doctor(runner, hub)
    assert code == 1
    [(status, _, detail)] = only(lines, "workflow", "e2e_ascend.yml")
    assert status == "fail" and "not found" in detail and "[[workflows]]" in detail
    assert others(lines, "workflow", "e2e_ascend.yml") == {"ok"}, output


def test_url_without_api_v3_for_another_host_is_named(runner, hub):
    port = hub.base_url.rsplit(":", 1)[1]
    code, lines, output = doctor(runner, hub, url=f"http://localhost:{port}")
    assert code == 0, output
    [(status, _, detail)] = only(lines, "api url")
    assert status == "warn" and f"http://localhost:{port}/api/v3" in detail
    assert others(lines, "api url") == {"ok"}, output


def test_url_without_api_v3_that_does_not_answer_fails(runner, hub):
    port = hub.base_url.rsplit(":", 1)[1]
    code, lines, output = doctor(runner, hub, url=f"http://localhost:{port}/ghes")
    assert code == 1
    [(status, _, detail)] = only(lines, "api url")
    assert status == "fail" and "/ghes/api/v3" in detail and "mistake" in detail
    assert only(lines, "network")[0][0] == "ok"
    assert others(lines, "api url") - {"ok"} == {"skip"}, output


def test_expired_logs_warn_on_their_line(runner, hub):
    code, lines, output = doctor(runner, hub, since=None)  # the config's start: a year back
    assert code == 0, output
    [(status, _, detail)] = only(lines, "old logs")
    assert status == "warn" and "410" in detail and "expected" in detail
    assert others(lines, "old logs") == {"ok"}, output


def test_unreadable_annotations_warn_on_their_line(runner, hub):
    hub.admin("POST", "permissions", {"checks": False})
    code, lines, output = doctor(runner, hub)
    assert code == 0
    [(status, _, detail)] = only(lines, "annotations")
    assert status == "warn" and "checks: read" in detail
    assert others(lines, "annotations") == {"ok"}, output


def test_missing_ca_bundle_fails_the_network_line(runner, hub, tmp_path):
    missing = str(tmp_path / "corp-ca.pem")
    code, lines, output = doctor(runner, hub, env={"REQUESTS_CA_BUNDLE": missing})
    assert code == 1
    [(status, _, detail)] = only(lines, "network")
    assert status == "fail" and f"REQUESTS_CA_BUNDLE={missing}" in detail
    assert others(lines, "network") == {"ok"}, output


def test_tls_error_names_requests_ca_bundle(runner, hub):
    port = hub.base_url.rsplit(":", 1)[1]  # fakehub speaks plain HTTP: TLS fails
    code, lines, output = doctor(runner, hub, url=f"https://127.0.0.1:{port}")
    assert code == 1
    [(status, _, detail)] = only(lines, "network")
    assert status == "fail" and "SSLError" in detail and "REQUESTS_CA_BUNDLE" in detail
    assert others(lines, "network") - {"ok"} == {"skip"}, output


def test_estimate_is_close_to_what_a_collect_costs(runner, hub, db_url):
    _, _, output = doctor(runner, hub)
    estimated = int(re.search(r"([\d,]+) requests for", output).group(1).replace(",", ""))
    hub.admin("POST", "counters/reset")
    collect(hub, db_url, since=datetime(2026, 10, 1, tzinfo=UTC))
    spent = hub.admin("GET", "counters")["counted"]
    assert 0.8 * spent <= estimated <= 1.25 * spent, (estimated, spent)


def test_help_explains(runner):
    result = runner.invoke(cli, ["doctor", "--help"])
    assert result.exit_code == 0
    for words in ("about 20 requests", "/api/v3", "REQUESTS_CA_BUNDLE", "GITHUB_TOKEN", "410"):
        assert words in result.output


# ---- decisions without a server ------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "answer", "status", "words"),
    [
        ("https://api.github.com", "api", "ok", "github.com"),
        ("https://github.com", "api", "fail", "https://api.github.com"),
        ("https://ghes.example.com/api/v3", "api", "ok", "Enterprise Server"),
        ("https://ghes.example.com", "other", "fail", "https://ghes.example.com/api/v3"),
        ("https://ghes.example.com/", "none", "warn", "https://ghes.example.com/api/v3"),
        ("http://127.0.0.1:8765", "api", "ok", "fakehub"),
        ("https://api.octo.ghe.com", "api", "ok", "GHE.com"),
        ("ghes.example.com", "none", "fail", "not a URL"),
    ],
)
def test_url_check(url, answer, status, words):
    check = url_check(url, answer)
    assert check.status == status and words in check.detail


def test_token_kind_from_the_rate_limit():
    assert "GITHUB_TOKEN" in token_kind(1000)
    assert "user token" in token_kind(5000)
    assert "no token" in token_kind(60)


def test_wall_time_waits_for_each_reset():
    assert wall_seconds(500, 0.1, 1000, 900, 1200) == pytest.approx(50)
    # 2,600 requests with 600 left for 20 more minutes: 2 more budgets, the last one partly
    assert wall_seconds(2600, 0.1, 1000, 600, 1200) == pytest.approx(1200 + 3600 + 1000 * 0.1)


def test_the_estimate_starts_where_a_first_collect_does(monkeypatch):
    """doctor's default start is the collect's own (collector.sync.default_since), not a copy."""
    import collector.sync

    class Asked(Exception):
        pass

    def ask(config, project):
        raise Asked

    monkeypatch.setattr(collector.sync, "default_since", ask)
    result = CliRunner().invoke(cli, ["doctor", "--api-url", "http://127.0.0.1:9"])
    assert isinstance(result.exception, Asked)


def test_no_token_fails_the_token_line(runner, hub):
    result = runner.invoke(cli, ["doctor", "--since", RECENT, "--api-url", hub.base_url])
    assert result.exit_code == 1
    assert re.search(r"^fail  token +no token set", result.output, re.MULTILINE), result.output


def test_spent_budget_warns_and_skips_what_would_spend_it(runner, hub):
    hub.admin("POST", "rate_limit", {"limit": 5000, "used": 4990})
    code, lines, output = doctor(runner, hub)
    assert code == 0
    [(status, _, detail)] = only(lines, "rate budget")
    assert status == "warn" and "10 of 5,000/h left" in detail and "after the reset" in detail
    assert {s for s, n, _ in lines if n in ("api url", "network", "token")} == {"ok"}
    assert others(lines, "rate budget") - {"ok"} == {"skip"}, output
    assert hub.admin("GET", "counters")["counted"] == 0  # only GET /rate_limit, which is free


def test_after_a_complete_collect_the_estimate_is_the_next_collect(runner, collected_db):
    """#46: doctor reads the backfill the database holds: complete, it estimates the next
    collect (the runs since the last), not a first backfill of the whole history."""
    url = collected_db(DEFAULT).url  # the scenario most tests share: built once per worker
    with DEFAULT.hub() as hub:
        result = runner.invoke(
            cli,
            ["--db", url, "doctor", "--api-url", hub.base_url],
            env={"GITHUB_TOKEN": hub.token},
        )
    assert result.exit_code == 0, result.output
    assert "first backfill" not in result.output
    found = re.search(
        r"^estimate: backfill complete; the next collect, for the runs since [\d-]+ [\d:]+: "
        r"([\d,]+) requests for 0 runs",
        result.output,
        re.MULTILINE,
    )
    assert found, result.output
    assert int(found.group(1)) <= 2 * TRACKED + 1


def test_what_is_left_is_a_share_of_the_sampled_period_at_most_all_of_it():
    """A backfill that began before the sampled period (its floor earlier than --since): only
    the days left within the period count, so the estimate is never above a first backfill's."""
    since, now = datetime(2026, 10, 1, tzinfo=UTC), datetime(2026, 12, 1, tzinfo=UTC)
    earlier = datetime(2026, 6, 1, tzinfo=UTC)
    assert left_share([(earlier, now)], since, now) == 1.0
    assert left_share([(earlier, since)], since, now) == 0.0
    half = datetime(2026, 10, 31, 12, tzinfo=UTC)
    assert left_share([(earlier, half)], since, now) == pytest.approx(0.5)
