"""fakehub's server reads a request from the request alone: the process's environment is not
copied into it (wsgiref's CGI habit), so a variable there cannot pass for a header."""

from __future__ import annotations

from wsgiref.simple_server import ServerHandler

import pytest
import requests

import fakehub

TOKEN = "server-token"


def test_the_process_environment_is_not_a_request_header(monkeypatch: pytest.MonkeyPatch) -> None:
    # wsgiref read the environment when it was imported: the variable goes where it keeps it
    environment = {**ServerHandler.os_environ, "HTTP_X_GITHUB_API_VERSION": "x"}
    monkeypatch.setattr(ServerHandler, "os_environ", environment)
    with fakehub.running(seed=2, scale=0.02, token=TOKEN) as hub:
        url = f"{hub.base_url}/rate_limit"
        auth = {"Authorization": f"token {TOKEN}"}
        plain = requests.get(url, headers=auth, timeout=10)
        asked = requests.get(
            url, headers={**auth, "X-GitHub-Api-Version": "2026-03-10"}, timeout=10
        )
    assert plain.status_code == asked.status_code == 200
    assert plain.headers["X-GitHub-Api-Version-Selected"] == "2022-11-28"  # the default
    assert asked.headers["X-GitHub-Api-Version-Selected"] == "2026-03-10"
