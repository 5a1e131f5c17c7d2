"""The GitHub client: PyGithub's HTTP stack with conditional requests, pagination that keeps
ETags, rate-limit waits that say what they wait for, and errors worded for the user.

PyGithub's ``PaginatedList`` cannot send ``If-None-Match``, so list endpoints go through
``Requester.requestJson`` (PyGithub's own connection, retries and auth) page by page.

Over 350 lines on purpose: ``GitHubClient`` is one request path (auth, ETags, pagination,
rate-limit waits, the request budget, log downloads) whose parts share its counters and budget,
and the errors and sinks above it are the words that path speaks in.
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlencode, urlsplit

import requests
from github import Auth, Github
from github.Requester import HTTPRequestsConnectionClass, HTTPSRequestsConnectionClass
from requests.sessions import merge_setting
from requests.utils import get_environ_proxies
from urllib3.util.retry import Retry

# Transient failures retried inside urllib3: connection errors, 500 and 503. Rate limits
# (403/429) are handled here instead, so that every wait is announced and bounded, and so are
# 502/504, GitHub's answer to a request too slow to serve: a list page is asked again smaller.
TRANSIENT_STATUS = (500, 503)
SLOW_STATUS = (502, 504)
MIN_PER_PAGE = 10
BAD_BODY_RETRIES = 4
SECONDARY_MESSAGE = re.compile(r"secondary rate limit|abuse", re.IGNORECASE)
# Different resources of one route refused in a row, with no answer between them: the route
# itself is down, or the token cannot read it; one refused resource is that resource's fault.
ROUTE_DOWN = 5
_ID_SEGMENT = re.compile(r"/[0-9]+(?=/|$)")


class CollectError(RuntimeError):
    """A problem that stops a collect; the message is one line for the user, token-free."""


class BadCredentials(CollectError):
    pass


class NotFound(CollectError):
    pass


class ResourceError(CollectError):
    """GitHub answered one resource with an error that outlived the retries (a 5xx, a 403 that
    is not a rate limit, a 422): ``status`` says which. One such answer is about that resource,
    not the collect: callers record it and go on (collector.retries)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class Forbidden(ResourceError):
    """403 that is not a rate limit: the token lacks a permission (e.g. ``checks: read``), or
    GitHub refuses this one resource ("Resource not accessible by integration")."""

    def __init__(self, message: str, status: int = 403) -> None:
        super().__init__(message, status)


class RouteDown(CollectError):
    """``ROUTE_DOWN`` different resources of one route refused in a row: not one resource's
    fault but the route's, which stops a collect (or, for annotations refused by a token
    without ``checks: read``, stops asking them). ``status``: the last refusal's."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class BlobGone(CollectError):
    """The log blob does not exist (404 ``BlobNotFound``): the job produced no log."""


class BlobExpired(CollectError):
    """The blob host refused the signed log URL (403): GitHub's expire after one minute."""


class ServerError(ResourceError):
    """A 5xx that outlived the retries; `status` says which (502/504: the page was too slow)."""


class BudgetSpent(CollectError):
    """The request budget of this collect (`--max-requests`, `[collect] reserve`) is used up:
    the collect stops cleanly, and the next one goes on from there."""


@dataclass
class RequestStats:
    """What a collect cost, from our side of the wire."""

    requests: int = 0
    not_modified: int = 0  # answered 304: GitHub does not count them against the rate limit
    rate_limit_remaining: int | None = None
    rate_limit_reset: int | None = None
    waits: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count(self, status: int, headers: dict[str, str]) -> None:
        with self.lock:
            self.requests += 1
            if status == 304:
                self.not_modified += 1
            remaining = headers.get("x-ratelimit-remaining")
            if remaining is not None and remaining.isdigit():
                self.rate_limit_remaining = int(remaining)
            reset = headers.get("x-ratelimit-reset")
            if reset is not None and reset.isdigit():
                self.rate_limit_reset = int(reset)


@dataclass(frozen=True)
class Page:
    status: int  # 200 or 304
    body: Any
    etag: str | None
    next_url: str | None


def _next_link(link: str | None) -> str | None:
    if not link:
        return None
    for part in link.split(", "):
        url, _, rel = part.partition("; ")
        if rel.strip() == 'rel="next"':
            return url.strip()[1:-1]
    return None


class EnvironmentOnce(requests.Session):
    """A session that reads the environment's proxy and CA-bundle variables once per host.

    requests reads them on every request, going over every environment variable twice for the
    proxies: a tenth of a collect's CPU. Here the first request to a host (scheme and address)
    reads them as requests would and later ones reuse that: HTTP(S)_PROXY, ALL_PROXY and
    NO_PROXY, REQUESTS_CA_BUNDLE and CURL_CA_BUNDLE (to HTTPS hosts) still apply, as set when
    the client first spoke to the host."""

    def __init__(self) -> None:
        super().__init__()
        self._read: dict[tuple[str, str, str | None], tuple[dict[str, str], str | None]] = {}

    def merge_environment_settings(
        self, url: Any, proxies: Any, stream: Any, verify: Any, cert: Any
    ) -> dict[str, Any]:
        """``requests.Session.merge_environment_settings``, the environment read once a host."""
        if self.trust_env:
            no_proxy = proxies.get("no_proxy") if proxies is not None else None
            scheme, host = urlsplit(url)[:2]
            read = self._read.get((scheme, host, no_proxy))
            if read is None:
                bundle = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE")
                # Not for plain HTTP, which uses no certificate: requests would look the path
                # up on disk (os.path.isdir) for every request all the same.
                bundle = bundle if scheme == "https" else None
                read = (get_environ_proxies(url, no_proxy=no_proxy), bundle)
                self._read[(scheme, host, no_proxy)] = read
            if proxies is not None:
                for key, value in read[0].items():
                    proxies.setdefault(key, value)
            if verify is True or verify is None:
                verify = read[1] or verify
        return {
            "proxies": merge_setting(proxies, self.proxies),
            "stream": merge_setting(stream, self.stream),
            "verify": merge_setting(verify, self.verify),
            "cert": merge_setting(cert, self.cert),
        }


class _HttpConnection(HTTPRequestsConnectionClass):
    """PyGithub's connection over an ``EnvironmentOnce`` session."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.session = _environment_once(self.session)


class _HttpsConnection(HTTPSRequestsConnectionClass):
    """PyGithub's connection over an ``EnvironmentOnce`` session."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.session = _environment_once(self.session)


_ONCE = {
    HTTPRequestsConnectionClass: _HttpConnection,
    HTTPSRequestsConnectionClass: _HttpsConnection,
}


def _environment_once(made: requests.Session) -> EnvironmentOnce:
    """An ``EnvironmentOnce`` session with what PyGithub set on ``made``: its auth (which keeps
    ~/.netrc out) and its adapter (retries, pool size)."""
    session = EnvironmentOnce()
    session.auth = made.auth
    session.adapters = made.adapters
    return session


# A 401 to a request sent without a token: github.com reads public repositories without one
# (60 requests an hour), so only the answer tells that this server wants one.
NO_TOKEN = "no token set and the server requires one (401): set GITHUB_TOKEN or CIFLAKE_TOKEN_FILE"


class GitHubClient:
    """Sequential API calls (GitHub's secondary limits punish concurrency) plus token-free
    downloads of log blobs, which may run in parallel."""

    def __init__(
        self,
        api_url: str,
        token: str | None,
        *,
        timeout: float = 30,
        max_wait: float = 3600,
        secondary_wait: float = 60,
        backoff_factor: float = 0.5,
        on_wait: Callable[[str], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        max_requests: int | None = None,
        reserve: int = 0,
    ) -> None:
        retry = Retry(
            total=5,
            connect=5,
            read=5,
            status=5,
            backoff_factor=backoff_factor,  # urllib3's sleep between 5xx and connection retries
            status_forcelist=TRANSIENT_STATUS,
            allowed_methods=None,
            respect_retry_after_header=False,
            raise_on_status=False,
        )
        auth = Auth.Token(token) if token else None
        self.anonymous = not token  # a 401 then means a token is needed, not a bad one
        self._github = Github(
            base_url=api_url,
            auth=auth,
            per_page=100,
            timeout=int(timeout),
            retry=retry,
            seconds_between_requests=None,
            seconds_between_writes=None,
            lazy=True,
        )
        # PyGithub makes its connection (and session) at the first request, of the class its
        # Requester chose for the URL's scheme (a name-mangled attribute, PyGithub 2.x).
        requester = self._github.requester
        chosen = requester._Requester__connectionClass  # type: ignore[attr-defined]
        requester._Requester__connectionClass = _ONCE[chosen]  # type: ignore[attr-defined]
        self._prefix = urlsplit(api_url).path.rstrip("/")
        self.timeout = timeout
        self.max_wait = max_wait
        self.secondary_wait = secondary_wait
        self.on_wait = on_wait or (lambda message: None)
        self.sleep = sleep
        self.stats = RequestStats()
        self.backoff_factor = backoff_factor
        self.max_requests = max_requests  # counted requests this client may send, None: any
        self.reserve = reserve  # rate budget always left to other users of the token
        self._refused: dict[str, set[str]] = {}  # route -> its resources refused in a row
        self._blob_session = EnvironmentOnce()
        self._blob_session.mount("http://", requests.adapters.HTTPAdapter(max_retries=retry))
        self._blob_session.mount("https://", requests.adapters.HTTPAdapter(max_retries=retry))

    @property
    def github(self) -> Github:
        return self._github

    # ---- requests -------------------------------------------------------------------------

    def _exchange(
        self,
        method: str,
        path: str,
        *,
        blob: bool = False,
        etag: str | None = None,
        body: Any = None,
        retry_slow: bool = True,
    ) -> tuple[int, dict[str, str], str]:
        """Send one call until it gets an answer that is not a rate limit: transport errors
        (urllib3 already retried connections; a body cut short lands here) are retried a few
        times, rate limits waited out as GitHub asks. A 401 raises ``BadCredentials``."""
        headers = {"If-None-Match": etag} if etag else {}
        secondary_backoff = self.secondary_wait
        failures = slow = 0
        requester = self._github.requester
        while True:
            self.check_budget()  # a retry is a request too
            try:
                if blob:
                    status, hdrs, raw = requester.requestBlob(method, path, headers=headers)
                else:
                    status, hdrs, raw = requester.requestJson(
                        method, path, input=body, headers=headers
                    )
            except requests.exceptions.RequestException as exc:
                failures += 1
                if failures > BAD_BODY_RETRIES:
                    raise CollectError(f"{method} {path}: {type(exc).__name__}") from None
                self._announce(f"{type(exc).__name__} on {path}; retrying", 0.2 * failures)
                continue
            hdrs = {k.lower(): v for k, v in hdrs.items()}
            self.stats.count(status, hdrs)
            if status == 401:
                raise BadCredentials(
                    NO_TOKEN
                    if self.anonymous
                    else "GitHub rejected the token (401 Bad credentials): set GITHUB_TOKEN or "
                    "CIFLAKE_TOKEN_FILE to a valid token"
                )
            if status in SLOW_STATUS and retry_slow and slow < BAD_BODY_RETRIES:
                slow += 1  # as urllib3 would for a 500: quietly, after a short sleep
                self._quietly(f"{status} from {path}; retrying", self.backoff_factor * slow)
                continue
            if self._refused and (status < 400 or status in (404, 410)):
                self._refused.pop(_route(path), None)
            if status not in (403, 429):
                return status, hdrs, raw
            if self._rate_limit_wait(status, hdrs, raw, secondary_backoff) is None:
                raise self.refused(path, Forbidden(f"{method} {path}: {status} {_message(raw)}"))
            if _is_secondary(hdrs, raw) and "retry-after" not in hdrs:
                secondary_backoff *= 2

    def refused(self, path: str, error: ResourceError) -> CollectError:
        """What to raise for a refused resource: ``error`` itself, or ``RouteDown`` once
        ``ROUTE_DOWN`` different resources of its route were refused in a row."""
        resource = path.split("?", 1)[0]
        refused = self._refused.setdefault(_route(resource), set())
        refused.add(resource)
        if len(refused) < ROUTE_DOWN:
            return error
        return RouteDown(
            f"GitHub refused {len(refused)} different {_route(resource)} in a row, the last "
            f"with: {error}",
            error.status,
        )

    @property
    def counted(self) -> int:
        """Requests sent that count against GitHub's rate limit (a 304 does not)."""
        return self.stats.requests - self.stats.not_modified

    def budget_left(self) -> int | None:
        """Counted requests this collect may still send (None: no limit of ours)."""
        left = []
        if self.max_requests is not None:
            left.append(self.max_requests - self.counted)
        if self.reserve and self.stats.rate_limit_remaining is not None:
            left.append(self.stats.rate_limit_remaining - self.reserve)
        return max(0, min(left)) if left else None

    def check_budget(self) -> None:
        """Raise ``BudgetSpent`` when no counted request is left (before sending one)."""
        if self.budget_left() == 0:
            if self.max_requests is not None and self.counted >= self.max_requests:
                raise BudgetSpent(f"request budget spent ({self.counted} of --max-requests)")
            raise BudgetSpent(
                f"rate budget down to the reserve of {self.reserve} requests left for others"
            )

    def request(
        self,
        method: str,
        path: str,
        *,
        etag: str | None = None,
        body: Any = None,
        retry_slow: bool = True,
    ) -> tuple[int, dict[str, str], Any]:
        """One API call with rate-limit handling; returns (status, headers, parsed JSON).
        Raises ``BadCredentials`` on 401 and ``CollectError`` on other failures; a 502/504 is
        asked again a few times unless `retry_slow` is off (``ServerError`` at once)."""
        for attempt in range(1, BAD_BODY_RETRIES + 2):
            status, hdrs, raw = self._exchange(
                method, path, etag=etag, body=body, retry_slow=retry_slow
            )
            if status == 304:
                return status, hdrs, None
            if status == 404:
                raise NotFound(f"{method} {path}: 404 not found")
            if status >= 400:
                error = ServerError if status >= 500 else ResourceError
                message = f"{method} {path}: HTTP {status} {_message(raw)}".rstrip()
                raise self.refused(path, error(message, status))
            try:
                return status, hdrs, json.loads(raw) if raw else None
            except json.JSONDecodeError:
                self._announce(f"incomplete answer from {path}; retrying", 0.2 * attempt)
        raise CollectError(f"{method} {path}: truncated or invalid JSON")

    def _rate_limit_wait(
        self, status: int, hdrs: dict[str, str], raw: str, secondary_backoff: float
    ) -> float | None:
        """Wait as GitHub asks; None when the 403 is not a rate limit at all."""
        retry_after = hdrs.get("retry-after")
        remaining = hdrs.get("x-ratelimit-remaining")
        if retry_after is not None and retry_after.strip().isdigit():
            wait, why = float(retry_after), f"rate limit ({status}), Retry-After"
        elif remaining == "0":
            reset = int(hdrs.get("x-ratelimit-reset", "0") or 0)
            wait, why = max(1.0, reset - time.time() + 1), "primary rate limit exhausted; reset"
        elif _is_secondary(hdrs, raw) or status == 429:
            wait, why = secondary_backoff, f"secondary rate limit ({status}); backing off"
        else:
            return None
        if wait > self.max_wait:
            raise CollectError(
                f"rate limit: GitHub asks to wait {wait:.0f}s, more than the {self.max_wait:.0f}s "
                "allowed; run collect again later"
            )
        self._announce(f"{why}: waiting {wait:.0f}s", wait)
        return wait

    def _quietly(self, message: str, wait: float) -> None:
        """A retry worth recording but not worth telling the user about."""
        self.stats.waits.append(message)
        self.sleep(wait)

    def _announce(self, message: str, wait: float) -> None:
        self.stats.waits.append(message)
        self.on_wait(message)
        self.sleep(wait)

    def get(
        self,
        path: str,
        params: dict[str, Any] | None = None,
        *,
        etag: str | None = None,
        retry_slow: bool = True,
    ):
        return self.request("GET", _with_query(path, params), etag=etag, retry_slow=retry_slow)

    def pages(
        self, path: str, params: dict[str, Any], etags: dict[str, str]
    ) -> Iterator[tuple[str, Page]]:
        """Every page of a list endpoint, following ``Link`` URLs, each asked with the ETag
        stored for its URL in ``etags``. Yields (url, page).

        GitHub answers 502/504 to a request it could not serve in 10 s and advises smaller
        pages: then ``per_page`` is halved (down to MIN_PER_PAGE) and the listing goes on from
        the same item; callers may see an item twice when the offsets do not line up."""
        url: str | None = _with_query(path, params)
        per_page, page_number = int(params.get("per_page", 30)), 1
        while url is not None:
            smallest = per_page <= MIN_PER_PAGE or "per_page" not in params
            try:
                status, hdrs, body = self.get(url, etag=etags.get(url), retry_slow=smallest)
            except ServerError as exc:
                if exc.status not in SLOW_STATUS or smallest:
                    raise
                offset = (page_number - 1) * per_page
                per_page = max(MIN_PER_PAGE, per_page // 2)
                page_number = offset // per_page + 1
                self._quietly(f"{exc.status} on a page of {path}: {per_page} per page", 0)
                url = _with_query(path, {**params, "per_page": per_page, "page": page_number})
                continue
            next_url = _next_link(hdrs.get("link"))
            if next_url is not None:
                next_url = self._relative(next_url)
            yield url, Page(status, body, hdrs.get("etag"), next_url)
            if status == 304:
                return  # unchanged first page: the following pages are unchanged too
            url, page_number = next_url, page_number + 1

    def _relative(self, url: str) -> str:
        parts = urlsplit(url)
        path = parts.path
        if self._prefix and path.startswith(self._prefix):
            path = path[len(self._prefix) :]
        return path + (f"?{parts.query}" if parts.query else "")

    # ---- logs -----------------------------------------------------------------------------

    def log_location(self, repo: str, job_id: int) -> tuple[int, str | None]:
        """Ask the API where a job's log is: (302, url), (410, None) expired, (404, None)."""
        path = f"/repos/{repo}/actions/jobs/{job_id}/logs"
        status, hdrs, raw = self._exchange("GET", path, blob=True)
        if status in (301, 302, 303, 307):
            return 302, hdrs.get("location")
        if status in (200, 404, 410):  # 200: a server that answers with the log itself
            return status, None
        error = ServerError if status >= 500 else ResourceError
        raise self.refused(
            path, error(f"GET {path}: HTTP {status} {_message(raw)}".rstrip(), status)
        )

    download_chunk = 1 << 20  # bytes read from the blob host at a time: logs never sit whole

    def download(
        self, url: str, sink: LogSink | None = None, *, chunk_size: int | None = None
    ) -> bytes | None:
        """Fetch a log blob: a signed URL on another host, fetched without the token, streamed
        in chunks of ``chunk_size`` bytes into ``sink.write`` (``sink.restart()`` before a
        retry starts over); without a sink the log is returned as bytes (small answers only).
        Raises ``BlobGone`` on 404 (the job left no log) and ``BlobExpired`` on 403 (the blob
        host refused the URL, most often because it is more than a minute old: ask for a new
        one)."""
        buffer = _Buffer() if sink is None else None
        target: LogSink = buffer if buffer is not None else sink  # type: ignore[assignment]
        chunk_size = chunk_size or self.download_chunk
        written = False
        for attempt in range(BAD_BODY_RETRIES + 1):
            try:
                with self._blob_session.get(url, timeout=self.timeout, stream=True) as response:
                    if response.status_code == 404:
                        raise BlobGone("log blob not found (404)")
                    if response.status_code == 403:
                        raise BlobExpired("log URL refused (403)")
                    response.raise_for_status()
                    expected = response.headers.get("content-length")
                    encoded = "content-encoding" in response.headers
                    if written:
                        target.restart()
                    received = 0
                    for chunk in response.iter_content(chunk_size):
                        written = True
                        target.write(chunk)
                        received += len(chunk)
                    if expected is not None and not encoded and int(expected) != received:
                        raise requests.exceptions.ContentDecodingError("short read")
                return buffer.getvalue() if buffer is not None else None
            except requests.exceptions.RequestException as exc:
                if attempt == BAD_BODY_RETRIES:
                    raise CollectError(f"log download failed: {type(exc).__name__}") from None
                time.sleep(0.2 * (attempt + 1))
        raise AssertionError("unreachable")


class LogSink(Protocol):
    """Where ``GitHubClient.download`` puts a log as it arrives."""

    def write(self, chunk: bytes, /) -> object: ...

    def restart(self) -> None:
        """Forget what was written: the download starts over."""


class _Buffer(bytearray):
    def write(self, chunk: bytes, /) -> None:
        self.extend(chunk)

    def restart(self) -> None:
        self.clear()

    def getvalue(self) -> bytes:
        return bytes(self)


def _with_query(path: str, params: dict[str, Any] | None) -> str:
    if not params:
        return path
    return f"{path}{'&' if '?' in path else '?'}{urlencode(params)}"


def _route(path: str) -> str:
    """A request's route: its path without the query, ids as ``{id}``."""
    return _ID_SEGMENT.sub("/{id}", path.split("?", 1)[0])


def _message(raw: str | None) -> str:
    try:
        return str(json.loads(raw or "{}").get("message", ""))[:200]
    except (json.JSONDecodeError, AttributeError):
        return ""


def _is_secondary(hdrs: dict[str, str], raw: str | None) -> bool:
    return bool(SECONDARY_MESSAGE.search(_message(raw)))
