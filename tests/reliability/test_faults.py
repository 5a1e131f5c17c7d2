"""Fault suite: every fault kind fakehub can inject, alone and together, while a collect runs.

Each collect through ``ciflake collect`` either finishes with the database of a fault-free
collect, or stops with one clear line (exit status 2, no traceback, no token) after which a
collect without faults resumes to that same database. Faults that a collect must survive are
armed from the start. Faults that must stop it (a revoked token, an outage where every answer
is a 502, a rate-limit reset beyond ``max_wait``) are armed halfway through the clean collect's
requests, so that the stop leaves work half done. A burst that outlives the retries on one
resource is not a stop: it is the "refused" scenarios (recorded, asked again a night later).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

import fakehub
from ciflake.cli import cli
from tests.reliability.harness import (
    CANARY,
    SIZE,
    a_night_later,
    canary_hub,
    fast_collect,
    frozen,
    leaks,
    mismatched_tables,
    one_line_failure,
    record,
)
from tests.support.hubtools import SINCE, migrated

SUITE = "faults"
Arm = Callable[[fakehub.Hub], None]


def faults(spec: str) -> Arm:
    return lambda hub: hub.admin("POST", "faults", {"spec": spec})


def revoke_token(hub: fakehub.Hub) -> None:
    hub.admin("POST", "token", {"token": "ghp_the_rotated_token"})


def stuck(status: int, message: str, path: Callable[[fakehub.Hub], str]) -> Arm:
    """One resource that answers ``status`` every time (fakehub's ``/_admin/stuck``)."""
    return lambda hub: hub.admin(
        "POST", "stuck", {"path": path(hub), "status": status, "message": message}
    )


def a_log(hub: fakehub.Hub) -> str:
    job = hub.admin("GET", "truth?log_status=ok")["failures"][0]
    return f"/repos/{hub.repos[0]}/actions/jobs/{job['job_id']}/logs"


def annotations(hub: fakehub.Hub) -> str:
    job = next(f for f in hub.admin("GET", "truth")["failures"] if f["annotations"])
    return f"/repos/{hub.repos[0]}/check-runs/{job['job_id']}/annotations"


def a_runs_jobs(hub: fakehub.Hub) -> str:
    run = hub.admin("GET", "truth")["failures"][0]["run_id"]
    return f"/repos/{hub.repos[0]}/actions/runs/{run}/jobs"


@dataclass(frozen=True)
class Scenario:
    name: str
    arm: Arm
    stops: bool = False  # armed halfway; the collect must stop with one line
    # one resource refused: the collect goes on, and once GitHub answers again a later collect
    # (after the refusal's wait) fills in the clean database
    refused: bool = False

    def __str__(self) -> str:
        return self.name


SCENARIOS = [
    Scenario("5xx", faults("500=0.04,502=0.04,503=0.03")),
    Scenario("5xx burst within retries", faults("502=x4,503=0.01")),
    Scenario("connection resets", faults("reset=0.05")),
    Scenario("slow answers", faults("slow=0.05:0.4")),
    Scenario("truncated bodies", faults("truncate=0.05")),
    Scenario("secondary limit, Retry-After", faults("secondary=0.02:1")),
    Scenario("secondary limit, no Retry-After", faults("secondary_noretry=0.02")),
    Scenario("429, Retry-After", faults("429=0.02:1")),
    Scenario("429, no Retry-After", faults("429_noretry=0.02")),
    Scenario("primary limit exhausted, short reset", faults("exhaust_after=40:2")),
    Scenario(
        "everything at once",
        faults(
            "500=0.05,502=0.03,reset=0.02,truncate=0.02,slow=0.02:0.5,secondary=0.02:1,"
            "secondary_noretry=0.01,429=0.02:1,429_noretry=0.01,exhaust_after=150:2"
        ),
    ),
    Scenario(
        "one log refused (500, every time)",
        stuck(500, "Failed to generate URL to download logs", a_log),
        refused=True,
    ),
    Scenario(
        "one log refused (403)",
        stuck(403, "Resource not accessible by integration", a_log),
        refused=True,
    ),
    Scenario(
        "one job's annotations refused (422)",
        stuck(422, "Unprocessable", annotations),
        refused=True,
    ),
    Scenario(
        "one run's jobs refused (502 at every page size)",
        stuck(502, "Bad Gateway", a_runs_jobs),
        refused=True,
    ),
    Scenario("token revoked mid-collect", revoke_token, stops=True),
    Scenario("5xx outage from halfway", faults("502=1.0"), stops=True),
    Scenario("primary limit reset beyond max_wait", faults("exhaust_after=1:7200"), stops=True),
]


@pytest.fixture(scope="module", params=SIZE.fault_seeds, ids=lambda seed: f"seed{seed}")
def clean(request, tmp_path_factory) -> Iterator[tuple[fakehub.Hub, dict, int]]:
    """A hub, the database of a fault-free collect, and how many requests that collect made."""
    with canary_hub(seed=request.param) as hub:
        url = f"sqlite:///{tmp_path_factory.mktemp('clean') / 'clean.db'}"
        hub.admin("POST", "counters/reset")
        fast_collect(hub, url)
        requests = hub.admin("GET", "counters")["total"]
        yield hub, frozen(migrated(url)), requests


def _arm_after(hub: fakehub.Hub, requests: int, arm: Arm) -> threading.Thread:
    def watch() -> None:
        while hub.admin("GET", "counters")["total"] < requests:
            time.sleep(0.02)
        arm(hub)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def _fired(hub: fakehub.Hub) -> dict[str, int]:
    fired = dict(hub.admin("GET", "faults")["fired"])
    by_status = hub.admin("GET", "counters")["by_status"]
    for kind, status in (("exhaust_after", "403"), ("revoked token", "401")):
        if by_status.get(status):
            fired[kind] = by_status[status]
    for refused in hub.admin("GET", "stuck").values():
        if refused["hits"]:
            fired[f"refused {refused['status']}"] = refused["hits"]
    return fired


def _reset(hub: fakehub.Hub) -> None:
    hub.admin("POST", "faults", {"spec": ""})
    for path in hub.admin("GET", "stuck"):
        hub.admin("POST", "stuck", {"path": path, "status": None})
    hub.admin("POST", "token", {"token": CANARY})
    hub.admin("POST", "rate_limit", {"limit": 10**9, "used": 0})
    hub.admin("POST", "counters/reset")


@pytest.mark.slow
@pytest.mark.parametrize("scenario", SCENARIOS, ids=str)
def test_collect_under_faults_ends_with_the_clean_database(
    scenario: Scenario, clean, tmp_path, runner, fast_cli, monkeypatch
):
    """Over 20 s where answers are slow on fakehub's side (0.4 s for one request in 20), and
    for "everything at once", which meets every fault in one collect (about 25 s). The client's
    own waits run on the harness's compressed clock; tests/test_client_waits.py checks them."""
    hub, expected, clean_requests = clean
    _reset(hub)
    monkeypatch.setenv("GITHUB_TOKEN", CANARY)
    url = f"sqlite:///{tmp_path / 'faulty.db'}"
    if scenario.stops:
        watcher = _arm_after(hub, clean_requests // 2, scenario.arm)
    else:
        scenario.arm(hub)
    args = ["--db", url, "collect", "--once", "-q", "--since", SINCE.date().isoformat()]
    args += ["--api-url", hub.base_url]
    result = runner.invoke(cli, args)
    if scenario.stops:
        watcher.join(timeout=60)
    fired = _fired(hub)
    _reset(hub)
    stopped = result.exit_code != 0
    problem = one_line_failure(result) if stopped else None
    crashed = problem is not None
    if stopped and not crashed:
        fast_collect(hub, url)  # the re-run, faults off
    if scenario.refused and not stopped:
        a_night_later(url)  # the refusal's wait has passed
        fast_collect(hub, url)
    wrong = mismatched_tables(expected, frozen(migrated(url)))
    leaked = leaks(result.output)
    record(
        "faults",
        trials=1,
        faults=fired,
        mismatches=len(wrong),
        crashes=int(crashed),
        leaks=leaked,
    )
    assert not crashed, problem
    assert stopped == scenario.stops, result.output
    assert sum(fired.values()) > 0, "no fault fired: the scenario tested nothing"
    assert not wrong, f"tables differ from a clean collect: {wrong}"
    assert not leaked, result.output
