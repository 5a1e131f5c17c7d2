"""Serving fakehub: two threaded wsgiref servers (API host, blob host) and a Python API.

    with fakehub.running(seed=7, scale=0.1, token="t") as hub:
        hub.base_url, hub.token, hub.admin("GET", "inventory")

`web_url` is where every `html_url` points, as github.com's pages are on another host than
api.github.com: by default fakehub's own address, which serves them; a fixed one makes the
stored links of one hub's collect equal to another's.

`users={"token2": "mallory"}` accepts more tokens, each writing as its login; the login
"github-actions[bot]" makes a token a workflow's GITHUB_TOKEN. `hub.app.users` changes them later.

Port 0 picks a free port. The servers run in daemon threads; `stop()` shuts both down.
"""

from __future__ import annotations

import secrets
import socketserver
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import requests

from fakehub.admin import Admin
from fakehub.api import CHECKS_RETENTION_DAYS, RepoApi
from fakehub.app import ApiApp, DropConnection
from fakehub.blob import BlobApp
from fakehub.catalog import load
from fakehub.faults import Faults
from fakehub.history import DEFAULT_END, History
from fakehub.payloads import Shapes
from fakehub.ratelimit import RateLimit

DEFAULT_SCALE = 0.1  # a small history that collects in seconds: the tests' and the CLI's
DEFAULT_TOKEN = "fakehub-token"
DEFAULT_REPOS = ("verl-project/verl",)


class _Server(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Dropped connections are on purpose (faults) or the client's business."""


class _Handler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib signature)
        """Quiet: tests and the demo keep their output."""

    def get_environ(self) -> dict[str, Any]:
        environ = super().get_environ()
        environ["fakehub.socket"] = self.connection
        return environ

    def handle(self) -> None:
        try:
            super().handle()
        except (DropConnection, ConnectionError, OSError):
            self.close_connection = True


class Hub:
    """A running fakehub: its addresses, token and an admin client."""

    def __init__(
        self,
        seed: int = 1,
        scale: float = DEFAULT_SCALE,
        pr_scale: float | None = None,
        token: str = DEFAULT_TOKEN,
        faults: str = "",
        end: datetime = DEFAULT_END,
        host: str = "127.0.0.1",
        port: int = 0,
        blob_port: int = 0,
        rate_limit: int = 5000,
        repos: tuple[str, ...] = DEFAULT_REPOS,
        users: dict[str, str] | None = None,
        checks_retention_days: int = CHECKS_RETENTION_DAYS,
        web_url: str | None = None,
    ) -> None:
        self.token = token
        secret = secrets.token_hex(8)
        self.app = ApiApp(token, Faults.parse(faults, seed), RateLimit(limit=rate_limit))
        self.app.users.update(users or {})  # more tokens, each with its user's login
        self.app.set_faults(self.app.faults)
        self.blob = BlobApp(lambda: self.app.repos.values(), secret)
        self.app.admin = Admin(self.app, self.blob)
        self._api_server = make_server(host, port, self.app, _Server, _Handler)
        self._blob_server = make_server(host, blob_port, self.blob, _Server, _Handler)
        self.base_url = f"http://{host}:{self._api_server.server_port}"
        self.blob_url = f"http://{host}:{self._blob_server.server_port}"
        catalog = load()
        for index, full in enumerate(repos):
            owner, name = full.split("/")
            history = History(seed + index, scale, end, catalog, pr_scale)
            shapes = Shapes(
                self.base_url,
                owner,
                name,
                catalog.repository["id"] + index,
                catalog.repository["created_at"],
                web_url,
            )
            api = RepoApi(history, shapes, self.blob_url, secret)
            api.checks_retention = timedelta(days=checks_retention_days)
            self.app.repos[full.lower()] = api
        self._threads: list[threading.Thread] = []

    @property
    def repos(self) -> list[str]:
        return [api.shapes.full for api in self.app.repos.values()]

    def history(self, repo: str | None = None) -> History:
        return self.app.repos[(repo or self.repos[0]).lower()].history

    def start(self) -> Hub:
        for server in (self._api_server, self._blob_server):
            thread = threading.Thread(
                target=server.serve_forever, daemon=True, kwargs={"poll_interval": 0.1}
            )
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        for server in (self._api_server, self._blob_server):
            server.shutdown()
            server.server_close()
        for thread in self._threads:
            thread.join(timeout=5)

    def admin(
        self, method: str, name: str, body: dict[str, Any] | None = None, repo: str | None = None
    ) -> Any:
        """Call `/_admin/<name>` over HTTP and return the decoded JSON."""
        params = {"repo": repo} if repo else None
        response = requests.request(
            method, f"{self.base_url}/_admin/{name}", json=body, params=params, timeout=120
        )
        response.raise_for_status()
        return response.json()


@contextmanager
def running(**options: Any) -> Iterator[Hub]:
    """Start a Hub (options as for `Hub`) in background threads; stop it on exit."""
    hub = Hub(**options).start()
    try:
        yield hub
    finally:
        hub.stop()
