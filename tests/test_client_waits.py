"""The client waits as long as GitHub asks, no shorter: the fault suite runs on a compressed
clock (tests/reliability/harness.py), so the waits themselves are checked here."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

import fakehub
from collector.client import GitHubClient

TOKEN = "waits-token"
ROUTE = "/repos/verl-project/verl/actions/workflows"


@pytest.fixture(scope="module")
def hub() -> Iterator[fakehub.Hub]:
    with fakehub.running(seed=2, scale=0.02, token=TOKEN) as hub:
        yield hub


def _waits_for(hub: fakehub.Hub, spec: str, requests: int = 1) -> list[float]:
    """The waits a client asked for in ``requests`` requests with ``spec`` armed; it really
    sleeps them."""
    asked: list[float] = []

    def sleep(seconds: float) -> None:
        asked.append(seconds)
        time.sleep(seconds)

    hub.admin("POST", "faults", {"spec": spec})
    try:
        client = GitHubClient(hub.base_url, TOKEN, sleep=sleep, secondary_wait=0.25)
        answers = [client.request("GET", ROUTE) for _ in range(requests)]
    finally:
        hub.admin("POST", "faults", {"spec": ""})
    assert all(status == 200 and body["total_count"] > 0 for status, _, body in answers)
    return asked


@pytest.mark.parametrize("kind", ["secondary", "429"])
def test_retry_after_is_waited_in_full(hub: fakehub.Hub, kind: str) -> None:
    assert _waits_for(hub, f"{kind}=x1:2") == [2.0]


@pytest.mark.parametrize("kind", ["secondary_noretry", "429_noretry"])
def test_without_retry_after_the_backoff_doubles(hub: fakehub.Hub, kind: str) -> None:
    assert _waits_for(hub, f"{kind}=x2") == [0.25, 0.5]


def test_a_spent_primary_limit_is_waited_until_its_reset(hub: fakehub.Hub) -> None:
    hub.admin("POST", "counters/reset")
    started = time.time()
    waits = _waits_for(hub, "exhaust_after=1:1", requests=2)
    assert len(waits) == 1 and waits[0] >= 1.0
    assert time.time() - started >= 1.0
    assert hub.admin("GET", "counters")["by_status"].get("403") == 1
