"""The doctor's decisions without requests: each check's verdict from what was asked already.

Pure functions of a URL, an environment, a rate limit or a workflow's listing, each returning a
``Check`` line (``ok`` / ``warn`` / ``fail`` / ``skip`` and what to do), so that every wording
and threshold is tested without a server; ``collector.doctor`` makes the requests and calls them.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import requests

OK, WARN, FAIL, SKIP = "ok", "warn", "fail", "skip"
MIN_BUDGET = 30  # fewer requests left than this: the remaining checks are skipped
RESULT_CAP = 1000  # GitHub returns at most this many results of a filtered listing
WORKFLOW_TOKEN_LIMIT = 1000
UNAUTHENTICATED_LIMIT = 60
CA_VARIABLES = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")


@dataclass(frozen=True)
class Check:
    status: str  # ok, warn, fail or skip
    name: str
    detail: str

    def line(self) -> str:
        return f"{self.status:<4}  {self.name:<11}  {self.detail}"


def url_check(api_url: str, answer: str, enterprise_version: str | None = None) -> Check:
    """Whether ``api_url`` looks like GitHub's API. ``answer``: "api" (it answered like the
    API), "other" (it answered, but not like the API) or "none" (no connection)."""
    parts = urlsplit(api_url)
    host, path = (parts.hostname or "").lower(), parts.path.rstrip("/")
    base = f"{parts.scheme}://{parts.netloc}"
    if not host or parts.scheme not in ("http", "https"):
        return Check(
            FAIL,
            "api url",
            f"{api_url!r} is not a URL: use https://api.github.com, or "
            "https://HOST/api/v3 for GitHub Enterprise Server",
        )
    if host == "api.github.com":
        if path:
            return Check(FAIL, "api url", f"{api_url}: drop the path, use https://api.github.com")
        return Check(OK, "api url", f"{api_url} (github.com)")
    if host in ("github.com", "www.github.com"):
        return Check(FAIL, "api url", f"{api_url} is the web site: use https://api.github.com")
    if host.endswith(".ghe.com"):  # GitHub Enterprise Cloud with data residency
        if host.startswith("api."):
            return Check(OK, "api url", f"{api_url} (GHE.com)")
        return Check(FAIL, "api url", f"{api_url} is the web site: use https://api.{host}")
    if path.endswith("/api/v3"):
        if answer == "other":
            return Check(
                FAIL,
                "api url",
                f"{api_url} does not answer like GitHub's API: check the host name",
            )
        version = f", version {enterprise_version}" if enterprise_version else ""
        return Check(OK, "api url", f"{api_url} (GitHub Enterprise Server{version})")
    if _loopback(host) and not path:
        return Check(OK, "api url", f"{api_url} (a local server: fakehub)")
    suggestion = f"{base}{path}/api/v3"
    mistake = (
        f"{host} is not api.github.com and the URL has no /api/v3, the usual mistake: "
        f"GitHub Enterprise Server's API is at {suggestion}"
    )
    if answer == "api":
        return Check(
            WARN,
            "api url",
            f"{host} is not api.github.com and the URL has no /api/v3; it answers like the "
            f"API (a proxy or a replica?), but for GitHub Enterprise Server use {suggestion}",
        )
    return Check(FAIL if answer == "other" else WARN, "api url", mistake)


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _ca_bundle(env: Mapping[str, str]) -> tuple[str, str] | None:
    """(variable, path) of the CA bundle requests will use instead of its own, if any."""
    return next(((name, env[name]) for name in CA_VARIABLES if env.get(name)), None)


def _proxy(url: str) -> str | None:
    """The proxy requests will use for ``url`` (HTTPS_PROXY, ALL_PROXY, NO_PROXY), without
    any user name or password it carries."""
    proxies = requests.utils.get_environ_proxies(url)
    proxy = proxies.get(urlsplit(url).scheme) or proxies.get("all")
    if not proxy:
        return None
    parts = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname}{port}"


def transport_error(exc: BaseException) -> str | None:
    """The name of the requests error behind a ``CollectError`` (SSLError, ProxyError,
    ConnectionError, ...), None when it was not a transport failure."""
    cause = exc.__context__
    if isinstance(cause, requests.exceptions.RequestException):
        return type(cause).__name__
    text = str(exc)
    for name in ("SSLError", "ProxyError", "ConnectTimeout", "ConnectionError", "ReadTimeout"):
        if text.endswith(name):
            return name
    return None


def network_check(
    api_url: str, env: Mapping[str, str], error: str | None, where: str | None = None
) -> Check:
    """Proxy and CA bundle: what is set, and what a transport ``error`` (a requests error
    name, on ``where``) says is needed."""
    host = where or urlsplit(api_url).hostname or api_url
    proxy, bundle = _proxy(api_url), _ca_bundle(env)
    via = f"via proxy {proxy}" if proxy else "directly (no HTTPS_PROXY)"
    ca = f"CA bundle {bundle[0]}={bundle[1]}" if bundle else "the default CA bundle"
    if bundle and not os.path.isfile(bundle[1]):
        return Check(
            FAIL,
            "network",
            f"{bundle[0]}={bundle[1]} does not exist: point it at your CA bundle (PEM) or unset it",
        )
    if error == "SSLError":
        now = f" (now {bundle[0]}={bundle[1]})" if bundle else ""
        return Check(
            FAIL,
            "network",
            f"TLS verification of {host} failed (SSLError){now}: behind a TLS-inspecting proxy "
            "or with a private CA, set REQUESTS_CA_BUNDLE to that CA's PEM file",
        )
    if error == "ProxyError":
        return Check(
            FAIL,
            "network",
            f"the proxy {proxy} failed (ProxyError): check HTTPS_PROXY and NO_PROXY",
        )
    if error is not None:
        hint = (
            f"check the proxy {proxy} (HTTPS_PROXY, NO_PROXY)"
            if proxy
            else "check the URL; if your network needs a proxy, set HTTPS_PROXY"
        )
        return Check(FAIL, "network", f"cannot reach {host} ({error}): {hint}")
    return Check(OK, "network", f"reached {host} {via}, with {ca}")


def token_kind(limit: int) -> str:
    """The kind of token a primary rate limit tells."""
    if limit <= UNAUTHENTICATED_LIMIT:
        return f"no token ({limit:,}/h unauthenticated)"
    if limit == WORKFLOW_TOKEN_LIMIT:
        return f"a workflow's GITHUB_TOKEN ({limit:,}/h per repository)"
    if limit == 5000:
        return f"a user token ({limit:,}/h)"
    if limit == 15000:
        return f"an Enterprise Cloud token ({limit:,}/h)"
    return f"a token with {limit:,} requests/h"


def budget_check(limit: int, remaining: int, reset: int | None, has_token: bool) -> Check:
    at = (
        datetime.fromtimestamp(reset, UTC).strftime("resets %H:%M UTC")
        if reset
        else "reset unknown"
    )
    left = f"{remaining:,} of {limit:,}/h left, {at}"
    if remaining < MIN_BUDGET:
        return Check(
            WARN,
            "rate budget",
            f"{left}: the checks that need requests are skipped; run doctor after the reset",
        )
    if not has_token or limit <= UNAUTHENTICATED_LIMIT:
        return Check(WARN, "rate budget", f"{left}: set GITHUB_TOKEN or CIFLAKE_TOKEN_FILE")
    if limit <= WORKFLOW_TOKEN_LIMIT:
        return Check(
            WARN,
            "rate budget",
            f"{left}, shared by every workflow of the repository: run the first backfill once "
            "with a user token (5,000/h) and hand the database to the workflow, or give each "
            "nightly collect --max-requests",
        )
    return Check(OK, "rate budget", left)


def workflow_check(
    path: str, workflow: dict[str, Any] | None, by_file: bool, runs: int | None, since: datetime
) -> Check:
    """One tracked workflow: found (in the list, or by file name), its state, its runs."""
    if workflow is None:
        return Check(
            FAIL,
            "workflow",
            f"{path}: not found on GitHub (a wrong path, or the file is deleted and its runs "
            "are gone): fix or remove this [[workflows]] entry; collect skips it",
        )
    state = workflow.get("state") or "unknown"
    found = ", found by file name (not in the workflows list)" if by_file else ""
    counted = "" if runs is None else f", {runs:,} runs since {since:%Y-%m-%d}"
    capped = " (GitHub's result cap: maybe more)" if runs == RESULT_CAP else ""
    text = f"{path}: {state}{counted}{capped}{found}"
    if state == "active":
        return Check(OK, "workflow", text)
    if state == "deleted":
        advice = "its file is gone and no new runs will come; the past runs are still collected"
    elif state.startswith("disabled"):
        advice = "no new runs until someone enables it (Actions tab, '...' menu)"
    else:
        advice = "GitHub reports an unusual state"
    return Check(WARN, "workflow", f"{text}: {advice}")
