"""Each fault kind happens when configured, deterministically, and PyGithub sees real errors."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
import requests
from github import Auth, Github, GithubRetry

import fakehub
from fakehub.faults import Faults

TOKEN = "fault-token"
AUTH = {"Authorization": f"token {TOKEN}"}
Get = Callable[[], requests.Response]


@pytest.fixture(scope="module")
def hub() -> Iterator[fakehub.Hub]:
    with fakehub.running(seed=2, scale=0.02, token=TOKEN) as hub:
        yield hub


@pytest.fixture
def get(hub: fakehub.Hub) -> Iterator[Get]:
    def call() -> requests.Response:
        return requests.get(
            f"{hub.base_url}/repos/verl-project/verl/actions/workflows", headers=AUTH, timeout=10
        )

    yield call
    hub.admin("POST", "faults", {"spec": ""})


def arm(hub: fakehub.Hub, spec: str) -> None:
    hub.admin("POST", "faults", {"spec": spec})


@pytest.mark.parametrize("status", ["500", "502", "503"])
def test_server_errors(hub: fakehub.Hub, get: Get, status: str) -> None:
    arm(hub, f"{status}=x1")
    assert get().status_code == int(status)
    assert get().status_code == 200


@pytest.mark.parametrize(
    ("kind", "status", "retry_after"),
    [
        ("secondary", 403, "1"),
        ("secondary_noretry", 403, None),
        ("429", 429, "1"),
        ("429_noretry", 429, None),
    ],
)
def test_rate_limit_faults(
    hub: fakehub.Hub, get: Get, kind: str, status: int, retry_after: str | None
) -> None:
    arm(hub, f"{kind}=x1")
    response = get()
    assert response.status_code == status
    assert "secondary rate limit" in response.json()["message"]
    assert response.headers.get("Retry-After") == retry_after
    assert "X-RateLimit-Remaining" in response.headers


def test_reset_and_truncate(hub: fakehub.Hub, get: Get) -> None:
    arm(hub, "reset=x1")
    with pytest.raises(requests.exceptions.ConnectionError):
        get()
    arm(hub, "truncate=x1")
    with pytest.raises(
        (requests.exceptions.ChunkedEncodingError, requests.exceptions.ConnectionError)
    ):
        get()
    assert get().status_code == 200


def test_slow(hub: fakehub.Hub, get: Get) -> None:
    arm(hub, "slow=x1:0.6")
    start = time.monotonic()
    assert get().status_code == 200
    assert time.monotonic() - start >= 0.6


def test_primary_exhaustion_and_reset(hub: fakehub.Hub, get: Get) -> None:
    arm(hub, "exhaust_after=3:1")
    assert [get().status_code for _ in range(3)] == [200, 200, 200]
    spent = get()
    assert spent.status_code == 403
    assert spent.json()["message"].startswith("API rate limit exceeded")
    assert spent.headers["X-RateLimit-Remaining"] == "0"
    assert int(spent.headers["X-RateLimit-Reset"]) <= time.time() + 2
    time.sleep(1.2)
    assert get().status_code == 200


def test_pygithub_retries_through_502s(hub: fakehub.Hub) -> None:
    arm(hub, "502=x2")
    gh = Github(
        auth=Auth.Token(TOKEN),
        base_url=hub.base_url,
        seconds_between_requests=None,
        retry=GithubRetry(total=3, backoff_factor=0.01),
    )
    assert gh.get_repo("verl-project/verl").get_workflows().totalCount > 0
    assert hub.admin("GET", "faults")["fired"] == {"502": 2}
    arm(hub, "")


def test_probabilities_are_deterministic_and_validated() -> None:
    spec = "500=0.2,502=0.1,reset=0.05,slow=0.1:0.01"
    one, two = Faults.parse(spec, seed=3), Faults.parse(spec, seed=3)
    picks = [[r.kind for r in one.pick(i)] for i in range(200)]
    assert picks == [[r.kind for r in two.pick(i)] for i in range(200)]
    assert 20 < sum("500" in p for p in picks) < 60
    with pytest.raises(ValueError):
        Faults.parse("teapot=0.1")
    with pytest.raises(ValueError):
        Faults.parse("500=2")
