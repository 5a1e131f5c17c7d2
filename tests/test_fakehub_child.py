"""fakehub served by a child process (the demo's): it answers like the in-process one, and a
child that cannot start says why."""

from __future__ import annotations

import pytest
import requests

from fakehub.child import spawned
from fakehub.history import DEFAULT_END


def test_a_child_serves_the_history_and_stops_with_the_context() -> None:
    with spawned(seed=3, scale=0.05, pr_scale=0.01, end=DEFAULT_END, rate_limit=99) as hub:
        headers = {"Authorization": f"Bearer {hub.token}"}
        answer = requests.get(
            f"{hub.base_url}/repos/verl-project/verl/actions/runs?per_page=1",
            headers=headers,
            timeout=30,
        )
        assert answer.status_code == 200 and answer.json()["total_count"] > 0
        assert answer.headers["x-ratelimit-limit"] == "99"
        base = hub.base_url
    with pytest.raises(requests.ConnectionError):
        requests.get(base, timeout=5)


def test_a_child_that_cannot_start_says_why() -> None:
    with (
        pytest.raises(RuntimeError, match="fakehub did not start: .*scale"),
        spawned(
            seed=1,
            scale="lots",
            end=DEFAULT_END,  # type: ignore[arg-type]
        ),
    ):
        pass
