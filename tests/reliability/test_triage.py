"""Triage suite: ``ciflake triage --post`` in processes of their own never files a signature's
issue twice. Killed (SIGKILL) right after GitHub created an issue and before the link was
recorded, the next run adopts that issue; two runs that overlap: one holds the lease, the
other stops with one line. Against a fakehub serving the shared collected database's history,
with the canary token."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import fakehub
from ciflake.cli import cli
from fakehub.web import Request, Response
from reports.triage_body import marker
from tests.reliability.harness import CANARY, FULL, leaks, record
from tests.support.collected import DEFAULT, collected_copy
from tests.support.triage import FILED, REPO, hub_issues, triage_config, wrap_route

SUITE = "triage"
# Wide enough that the shared database's signatures recur and never go quiet, whatever today
# is: these processes read the real clock.
YEARS = 3650


def _triage(hub: fakehub.Hub, db_url: str, config: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CIFLAKE_", "GITHUB_"))}
    env |= {"GITHUB_TOKEN": CANARY, "CIFLAKE_API_URL": hub.base_url}
    command = [sys.executable, "-m", "ciflake", "--config", str(config), "--db", db_url]
    return subprocess.Popen(
        [*command, "triage", "--post"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def _hub() -> Any:
    return fakehub.running(**DEFAULT.hub_options(), token=CANARY)


def _kill_at_create(hub: fakehub.Hub, nth: int, victim: list[subprocess.Popen[bytes]]) -> None:
    """The hub's ``nth`` issue creation kills the process in ``victim`` once GitHub has
    created the issue, before its answer leaves: the link is never recorded."""
    made = [0]

    def killing(create: Callable[..., Response]) -> Callable[..., Response]:
        def handler(request: Request) -> Response:
            answer: Response = create(request)
            made[0] += 1
            if made[0] == nth and victim:
                victim[0].send_signal(signal.SIGKILL)
            return answer

        return handler

    wrap_route(hub, "create_issue", killing)


def _one_issue_per_signature(hub: fakehub.Hub) -> bool:
    firsts = [issue["body"].split("\n", 1)[0] for issue in hub_issues(hub).values()]
    return sorted(firsts) == sorted(marker(s) for s in FILED)


@pytest.mark.slow
def test_killed_after_creating_an_issue_the_next_run_adopts_it(tmp_path):
    """About 6 s a kill: the killed run in a process of its own, the next one in this one."""
    kills = mismatches = crashes = leaked = 0
    for nth in (1, 2, 3) if FULL else (2,):
        here = tmp_path / f"kill{nth}"
        here.mkdir()
        url = collected_copy(here)
        config = triage_config(here, window_days=YEARS, quiet_days=YEARS)
        with _hub() as hub:
            victim: list[subprocess.Popen[bytes]] = []
            _kill_at_create(hub, nth, victim)
            victim.append(_triage(hub, url, config))
            out, err = victim[0].communicate(timeout=120)
            assert victim[0].returncode == -signal.SIGKILL, err.decode()
            kills += 1
            assert len(hub_issues(hub)) == nth
            env = {"GITHUB_TOKEN": CANARY, "CIFLAKE_API_URL": hub.base_url}
            args = ["--config", str(config), "--db", url, "triage", "--post"]
            rerun = CliRunner().invoke(cli, args, env=env)
            crashes += rerun.exit_code != 0
            leaked += leaks(out, err, rerun.output)
            lines = rerun.output.splitlines()
            mismatches += not _one_issue_per_signature(hub)
            routes = hub.admin("GET", "counters")["by_route"]
            assert rerun.exit_code == 0, rerun.output
            assert _one_issue_per_signature(hub), lines
            assert routes["create_issue"] == 3, routes  # the killed run's issue is not filed again
            assert len([line for line in lines if line.startswith("adopted #")]) == 1, lines
    record(SUITE, trials=kills, kills=kills, mismatches=mismatches, crashes=crashes, leaks=leaked)
    assert crashes == leaked == 0


@pytest.mark.slow
def test_two_runs_started_at_once_file_one_issue_per_signature(tmp_path):
    """About 6 s: two processes that overlap for sure. The first one's first create waits on
    the hub until the second has ended: the second finds the lease held and stops at once
    with one line; the first files one issue per signature."""
    url = collected_copy(tmp_path)
    config = triage_config(tmp_path, window_days=YEARS, quiet_days=YEARS)
    arrived, go = threading.Event(), threading.Event()

    def holding(create: Callable[..., Response]) -> Callable[..., Response]:
        def handler(request: Request) -> Response:
            arrived.set()
            go.wait(timeout=120)
            return create(request)

        return handler

    with _hub() as hub:
        wrap_route(hub, "create_issue", holding)
        first = _triage(hub, url, config)
        try:
            assert arrived.wait(timeout=120), "the first run never created an issue"
            second = _triage(hub, url, config)
            refused = second.communicate(timeout=120)
        finally:
            go.set()
        held = first.communicate(timeout=120)
        routes = hub.admin("GET", "counters")["by_route"]
        one_each = _one_issue_per_signature(hub)
    leaked = leaks(*held, *refused)
    record(SUITE, trials=1, mismatches=int(not one_each), leaks=leaked)
    assert one_each and routes["create_issue"] == 3, routes
    assert leaked == 0
    assert (first.returncode, second.returncode) == (0, 2), (held, refused)
    assert held[0].decode().count("filed #") == 3, held
    (line,) = refused[1].decode().splitlines()
    assert line.startswith(f"ciflake: error: triage --post for {REPO} is already running (")
    assert line.endswith("); not started") and refused[0] == b""
