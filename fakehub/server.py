"""Serving fakehub: two threaded wsgiref servers (API host, blob host) and a Python API.

Both speak HTTP/1.1 and keep connections alive between requests, as github.com does: a client's
connection pool then reuses one connection instead of opening one (and fakehub a thread) for
every request.

    with fakehub.running(seed=7, scale=0.1, token="t") as hub:
        hub.base_url, hub.token, hub.admin("GET", "inventory")

`web_url` is where every `html_url` points, as github.com's pages are on another host than
api.github.com: by default fakehub's own address, which serves them; a fixed one makes the
stored links of one hub's collect equal to another's.

It serves verl (`verl-project/verl`) and verl's recipes (`verl-project/verl-recipe`), each
from its own catalog (`fakehub.catalog.CATALOGS`); `repos=` picks some of them (the first is
the admin routes' default). Both take `seed`, `scale` and `pr_scale`; the recipes repository
draws from a random stream of its own, so verl's history is the same with or without it. Any
other repository answers 404, as GitHub does for one that does not exist (or is private).

`users={"token2": "mallory"}` accepts more tokens, each writing as its login; the login
"github-actions[bot]" makes a token a workflow's GITHUB_TOKEN. `hub.app.users` changes them later.

Port 0 picks a free port. The servers run in daemon threads; `stop()` shuts both down.
"""

from __future__ import annotations

import io
import itertools
import secrets
import socketserver
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any
from wsgiref.simple_server import ServerHandler, WSGIRequestHandler, WSGIServer, make_server

import requests

from fakehub.admin import Admin
from fakehub.api import CHECKS_RETENTION_DAYS, COMMENT_ID_BASE, RepoApi
from fakehub.app import ApiApp, DropConnection
from fakehub.blob import BlobApp
from fakehub.catalog import CATALOGS, load
from fakehub.faults import Faults
from fakehub.history import DEFAULT_END, History
from fakehub.payloads import Shapes
from fakehub.ratelimit import ContentLimit, RateLimit

DEFAULT_SCALE = 0.1  # a small history that collects in seconds: the tests' and the CLI's
DEFAULT_TOKEN = "fakehub-token"
DEFAULT_REPOS = tuple(CATALOGS)  # verl, then verl's recipes
IDLE_SECONDS = 60  # a kept-alive connection with no request for this long is closed


class _Server(socketserver.ThreadingMixIn, WSGIServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Dropped connections are on purpose (faults) or the client's business."""


class _Http11(ServerHandler):
    """wsgiref's response writer, answering HTTP/1.1. A response of known length leaves the
    connection open for the next request, as github.com's do; one without (a streamed log) or
    one the client asked to end closes it."""

    http_version = "1.1"
    # wsgiref starts each request's environ from a copy of the process's environment (CGI's
    # way): a cost on every request, and a variable such as HTTP_PROXY there would read as a
    # header the client never sent. The request's own variables are all the app reads.
    os_environ: dict[str, str] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._pending: list[bytes] = []

    def _write(self, data: bytes) -> None:
        """Held until ``_flush``: wsgiref writes the status line, two headers, the rest of the
        headers and the body apart, each one send (and one wake-up of the client) of its own."""
        self._pending.append(data)

    def _flush(self) -> None:
        """What ``_write`` held, in one send: a whole response, or one chunk of a stream."""
        if self._pending:
            data, self._pending = b"".join(self._pending), []
            self.stdout.write(data)

    def finish_content(self) -> None:
        """A response without a body is sent here, where wsgiref does not flush."""
        super().finish_content()
        self._flush()

    def cleanup_headers(self) -> None:
        super().cleanup_headers()
        if "Content-Length" not in self.headers:
            self.request_handler.close_connection = True
        if self.request_handler.close_connection:
            self.headers["Connection"] = "close"

    def close(self) -> None:
        """A body cut short (the truncate fault) ends the connection, as a proxy's cut does:
        the client then sees the short read instead of waiting for the rest."""
        length = self.headers.get("Content-Length") if self.headers is not None else None
        if length is not None and int(length) != self.bytes_sent:
            self.request_handler.close_connection = True
        super().close()


class _Handler(WSGIRequestHandler):
    """Serves requests one after another on a kept-alive connection (wsgiref serves one)."""

    protocol_version = "HTTP/1.1"
    timeout = IDLE_SECONDS
    # Headers and body go out in separate writes: with Nagle's algorithm on, the body of every
    # response on a kept-alive connection would wait for the client's delayed ACK (~40 ms).
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib signature)
        """Quiet: tests and the demo keep their output."""

    def get_environ(self) -> dict[str, Any]:
        environ = super().get_environ()
        environ["fakehub.socket"] = self.connection
        return environ

    def handle(self) -> None:
        self.close_connection = True
        try:
            self._one_request()
            while not self.close_connection:
                self._one_request()
        except (DropConnection, ConnectionError, OSError):
            self.close_connection = True

    def _one_request(self) -> None:
        self.close_connection = True
        self.raw_requestline = self.rfile.readline(65537)
        if not self.raw_requestline:
            return  # the client closed the connection
        if len(self.raw_requestline) > 65536:
            self.requestline = self.request_version = self.command = ""
            self.send_error(414)
            return
        if not self.parse_request():  # an error was sent; parse_request decided on closing
            return
        # The whole body is read first, so what the app leaves unread cannot pass for the next
        # request on this connection.
        body = io.BytesIO(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        handler = _Http11(body, self.wfile, self.get_stderr(), self.get_environ())
        handler.request_handler = self
        handler.run(self.server.get_app())


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
        catalogs = [load(full) for full in dict.fromkeys(r.lower() for r in repos)]
        histories = [History(seed, scale, end, catalog, pr_scale) for catalog in catalogs]
        _check_disjoint(histories)
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
        comment_ids = itertools.count(COMMENT_ID_BASE + 1)  # global on GitHub: one counter
        content = ContentLimit()  # per user on GitHub, whichever repository is written to
        for catalog, history in zip(catalogs, histories, strict=True):
            facts = catalog.repository
            shapes = Shapes(
                self.base_url,
                facts["owner"],
                facts["name"],
                facts["id"],
                facts["created_at"],
                web_url,
                catalog.description,
                catalog.ids,
            )
            api = RepoApi(history, shapes, self.blob_url, secret, comment_ids, content)
            api.checks_retention = timedelta(days=checks_retention_days)
            self.app.repos[catalog.full_name.lower()] = api
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
        return admin_call(self.base_url, method, name, body, repo)


def _check_disjoint(histories: list[History]) -> None:
    """GitHub's run and job (check-run) ids are global: no two repositories may share one. The
    catalogs' id bases keep them apart up to a scale far above any used (verl's run ids would
    reach the recipes' base near scale 16); past it, say so."""
    runs: set[int] = set()
    jobs: set[int] = set()
    for history in histories:
        if not runs.isdisjoint(history.run_by_id) or not jobs.isdisjoint(history.job_by_id):
            raise ValueError(
                f"{history.catalog.full_name}'s run or job ids meet another repository's at "
                f"scale {history.scale}: serve fewer repositories (repos=) or a smaller scale"
            )
        runs.update(history.run_by_id)
        jobs.update(history.job_by_id)


def admin_call(
    base_url: str,
    method: str,
    name: str,
    body: dict[str, Any] | None = None,
    repo: str | None = None,
) -> Any:
    """Call the hub's `/_admin/<name>` over HTTP and return the decoded JSON."""
    params = {"repo": repo} if repo else None
    response = requests.request(
        method, f"{base_url}/_admin/{name}", json=body, params=params, timeout=120
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
