"""The client reads the proxy and CA-bundle variables once per host, and still goes where they
say: through HTTP_PROXY, straight to a host NO_PROXY names, verifying with REQUESTS_CA_BUNDLE."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from unittest import mock

import pytest
import requests.utils

from collector.client import EnvironmentOnce, GitHubClient

API = "http://api.example.invalid"  # never resolved: only a proxy can reach it


class _Recorder(BaseHTTPRequestHandler):
    """Answers every GET with ``{}`` and records its request line: a proxy's names the whole
    URL, a direct request's only the path."""

    protocol_version = "HTTP/1.1"
    lines: list[str]

    def do_GET(self) -> None:
        self.lines.append(self.requestline)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""


@pytest.fixture
def server() -> Iterator[tuple[str, list[str]]]:
    """A local HTTP server (proxy or target alike): its URL and the request lines it saw."""
    lines: list[str] = []
    handler = type("Handler", (_Recorder,), {"lines": lines})
    with ThreadingHTTPServer(("127.0.0.1", 0), handler) as httpd:
        serving = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
        serving.start()
        yield f"http://127.0.0.1:{httpd.server_port}", lines
        httpd.shutdown()


def test_api_requests_and_log_downloads_go_through_the_proxy(server, monkeypatch):
    proxy, lines = server
    monkeypatch.setenv("HTTP_PROXY", proxy)
    client = GitHubClient(API, "a-token")
    assert [client.get("/rate_limit")[0] for _ in range(3)] == [200, 200, 200]
    assert client.download("http://blob.example.invalid/log") == b"{}"
    assert lines == [f"GET {API}:80/rate_limit HTTP/1.1"] * 3 + [
        "GET http://blob.example.invalid/log HTTP/1.1"
    ]


def test_a_host_no_proxy_names_is_asked_directly(server, monkeypatch):
    target, lines = server
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    client = GitHubClient(target, "a-token", backoff_factor=0)
    assert client.get("/rate_limit")[0] == 200
    assert lines == ["GET /rate_limit HTTP/1.1"]


def test_the_environment_is_read_once_per_host_not_per_request(server, monkeypatch):
    """requests reads every environment variable twice a request to find the proxies: a tenth
    of a collect's CPU."""
    proxy, _ = server
    monkeypatch.setenv("HTTP_PROXY", proxy)
    read = mock.Mock(wraps=requests.utils.should_bypass_proxies)
    monkeypatch.setattr(requests.utils, "should_bypass_proxies", read)
    client = GitHubClient(API, "a-token")
    for _ in range(5):
        client.get("/rate_limit")
    for _ in range(2):
        client.download("http://blob.example.invalid/log")
    assert read.call_count == 2  # the API host, the blob host


def test_the_ca_bundle_variables_still_apply(monkeypatch):
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.setenv("CURL_CA_BUNDLE", "/etc/our-ca.pem")
    merged = EnvironmentOnce().merge_environment_settings(
        "https://h.invalid/", {}, None, True, None
    )
    assert merged["verify"] == "/etc/our-ca.pem"
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", "/etc/requests-ca.pem")
    merged = EnvironmentOnce().merge_environment_settings(
        "https://h.invalid/", {}, None, None, None
    )
    assert merged["verify"] == "/etc/requests-ca.pem"
    explicit = EnvironmentOnce().merge_environment_settings(
        "https://h.invalid/", {}, None, False, None
    )
    assert explicit["verify"] is False


def test_plain_http_gets_no_ca_bundle(monkeypatch):
    """No certificate to verify: requests would otherwise stat the bundle's path every request."""
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", "/etc/requests-ca.pem")
    merged = EnvironmentOnce().merge_environment_settings("http://h.invalid/", {}, None, None, None)
    assert merged["verify"] is True
    merged = EnvironmentOnce().merge_environment_settings(
        "https://h.invalid/", {}, None, None, None
    )
    assert merged["verify"] == "/etc/requests-ca.pem"
