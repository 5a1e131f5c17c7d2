"""The API host as a WSGI app: auth, rate limits, ETags, faults and counters around the routes.

Order per request: admin routes bypass everything; otherwise the token is checked (401), a fault
may fire, the route answers, a matching `If-None-Match` gives 304 without spending the budget,
an exhausted budget gives 403, and every JSON answer carries the rate-limit headers and an ETag.
"""

from __future__ import annotations

import hashlib
import itertools
import re
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

from fakehub.api import LOGIN_KEY, RepoApi, authenticated_user
from fakehub.faults import Faults, Rule
from fakehub.payloads import BOT_LOGIN, Shapes
from fakehub.ratelimit import RateLimit
from fakehub.web import Request, Response, StartResponse, error, json_response, start

SECONDARY = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. "
    "If you reach out to GitHub Support for help, please include the request ID {rid}."
)
SECONDARY_DOCS = (
    "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
)
PRIMARY = (
    "API rate limit exceeded for user ID 190000001. If you reach out to GitHub Support for help, "
    "please include the request ID {rid} and timestamp {ts}."
)
PRIMARY_DOCS = (
    "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-primary-rate-limits"
)
UNCOUNTED = frozenset({"rate_limit"})


class DropConnection(Exception):
    """Raised after the socket was cut, so the server writes nothing more."""


class Counters:
    """Request counters for the admin endpoint (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self.total = self.not_modified = self.counted = 0
            self.by_route: Counter[str] = Counter()
            self.by_status: Counter[str] = Counter()

    def add(self, route: str, status: int, counted: bool) -> None:
        with self._lock:
            self.total += 1
            self.not_modified += status == 304
            self.counted += counted
            self.by_route[route] += 1
            self.by_status[str(status)] += 1

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            return {
                "total": self.total,
                "not_modified": self.not_modified,
                "counted": self.counted,
                "by_route": dict(sorted(self.by_route.items())),
                "by_status": dict(sorted(self.by_status.items())),
            }


class ApiApp:
    """WSGI app for the API host; `repos` maps "owner/name" to its routes."""

    def __init__(self, token: str, faults: Faults, rate: RateLimit) -> None:
        self.token, self.faults, self.rate = token, faults, rate
        # token -> login of more users (the main token's login: BOT_LOGIN unless listed here);
        # "github-actions[bot]" makes a token a workflow's GITHUB_TOKEN (GET /user answers 403)
        self.users: dict[str, str] = {}
        self.repos: dict[str, RepoApi] = {}
        self.counters = Counters()
        self.lock = threading.RLock()
        self.admin: Any = None  # fakehub.admin.Admin, set by the server
        # path -> (status, message): a resource that answers this error every time, as GitHub
        # does for some logs ("Failed to generate URL to download logs") for days
        self.stuck: dict[str, tuple[int, str]] = {}
        self.stuck_hits: Counter[str] = Counter()
        self._requests = itertools.count()

    def set_faults(self, faults: Faults) -> None:
        self.faults = faults
        self.rate.exhaust_after = (
            None if faults.exhaust_after is None else self.rate.counted_total + faults.exhaust_after
        )
        self.rate.exhaust_seconds = faults.exhaust_seconds

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterator[bytes]:
        request = Request.from_environ(environ)
        if request.path.startswith("/_admin"):
            with self.lock:
                response = self.admin.answer(request)
            start(start_response, response)
            yield response.body
            return
        rid = f"{next(self._requests):08X}:{int(time.time() * 1000) % 10**6:06d}"
        response, route, counted = self.answer(request, rid)
        self.counters.add(route, response.status, counted)
        index = int(rid.split(":")[0], 16)
        hits = self.faults.pick(index, request.method) if route != "unauthorized" else []
        response = self._apply(hits, response, environ, rid)
        if response.status == 200 and self.faults.too_big(response.body):
            response = self._decorate(error(502, "Bad Gateway"), request, rid, None)
        start(start_response, response)
        if any(rule.kind == "truncate" for rule in hits) and len(response.body) > 1:
            yield response.body[: len(response.body) // 2]
            return
        yield response.body

    def answer(self, request: Request, rid: str) -> tuple[Response, str, bool]:
        """(response, route name, counted against the limit) before faults."""
        auth = request.headers.get("authorization", "")
        scheme, _, given = auth.partition(" ")
        login = self.login_of(given) if scheme.lower() in ("token", "bearer") else None
        if login is None:
            response = error(401, "Bad credentials")
            return self._decorate(response, request, rid, None), "unauthorized", False
        request.environ[LOGIN_KEY] = login
        with self.lock:
            route, response = self.route(request)
            stuck = self.stuck and next(
                (p for p in (request.path, _route(request.path)) if p in self.stuck), ""
            )
            if stuck:
                status, message = self.stuck[stuck]
                self.stuck_hits[stuck] += 1
                response = error(status, message)
        counted = route not in UNCOUNTED  # a 404 costs budget too, as on GitHub
        etag = _etag(response, given)
        if etag and request.headers.get("if-none-match") == etag:
            return self._decorate(Response(304), request, rid, etag), route, False
        if counted and self.rate.exhausted():
            response = error(
                403, PRIMARY.format(rid=rid, ts=time.strftime("%Y-%m-%d %H:%M:%S")), PRIMARY_DOCS
            )
            return self._decorate(response, request, rid, None), route, False
        if counted:
            self.rate.spend()
        return self._decorate(response, request, rid, etag), route, counted

    def login_of(self, token: str) -> str | None:
        """The user a token acts as; None for a token fakehub does not accept."""
        if token in self.users:
            return self.users[token]
        return BOT_LOGIN if token == self.token else None

    def route(self, request: Request) -> tuple[str, Response]:
        if request.path == "/rate_limit" and request.method == "GET":
            snap = self.rate.snapshot()
            body = Shapes.rate_limit(snap["limit"], snap["remaining"], snap["reset"])
            return "rate_limit", json_response(200, body)
        if request.path == "/user" and request.method == "GET" and self.repos:
            shapes = next(iter(self.repos.values())).shapes
            return "user", authenticated_user(shapes, request.environ[LOGIN_KEY])
        parts = request.path.split("/", 4)
        if len(parts) >= 4 and parts[1] == "repos":
            api = self.repos.get(f"{parts[2]}/{parts[3]}".lower())
            if api is not None:
                rest = "/" + parts[4] if len(parts) == 5 else ""
                name, response = api.dispatch(request, rest.rstrip("/"))
                return name, response
        return "unknown", error(404, "Not Found")

    def _decorate(
        self, response: Response, request: Request, rid: str, etag: str | None
    ) -> Response:
        """Rate headers everywhere; ETag and caching headers on JSON bodies."""
        version = request.headers.get("x-github-api-version", "2022-11-28")
        extra = [
            *self.rate.headers(),
            ("X-GitHub-Api-Version-Selected", version),
            ("X-GitHub-Request-Id", rid),
        ]
        if etag:
            extra += [("ETag", etag), ("Cache-Control", "private, max-age=60, s-maxage=60")]
        response.headers = [*response.headers, *extra]
        return response

    def _apply(
        self, hits: list[Rule], response: Response, environ: dict[str, Any], rid: str
    ) -> Response:
        for rule in hits:
            if rule.kind == "slow":
                time.sleep(rule.arg)
            elif rule.kind == "reset":
                sock: socket.socket | None = environ.get("fakehub.socket")
                if sock is not None:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    sock.shutdown(socket.SHUT_RDWR)
                raise DropConnection
            elif rule.kind in ("500", "502", "503", "502_post"):
                code = rule.kind.removesuffix("_post")  # 502_post: the POST took effect
                message = {
                    "500": "Server Error",
                    "502": "Bad Gateway",
                    "503": "Service Unavailable",
                }[code]
                return _with_rate(error(int(code), message), response)
            elif rule.kind.startswith(("secondary", "429")):
                status = 429 if rule.kind.startswith("429") else 403
                fault = _with_rate(
                    error(status, SECONDARY.format(rid=rid), SECONDARY_DOCS), response
                )
                if not rule.kind.endswith("noretry"):
                    fault.headers.append(("Retry-After", str(int(rule.arg))))
                return fault
        return response


def _route(path: str) -> str:
    """A path with its ids as ``{id}``: the key of a fault stuck to a whole route."""
    return re.sub(r"/[0-9]+(?=/|$)", "/{id}", path)


def _etag(response: Response, token: str) -> str | None:
    """GitHub-style weak ETag of a successful JSON body, specific to the token that asked, as
    github.com's are (GitHub Support, quoted in eclipse-csi/otterdog#201): a workflow's new
    GITHUB_TOKEN each night gets no 304 for the previous night's ETags."""
    if response.payload is None or response.status >= 300:
        return None
    return f'W/"{hashlib.sha256(token.encode() + b":" + response.body).hexdigest()}"'


def _with_rate(fault: Response, original: Response) -> Response:
    """A fault answer keeps the original's rate-limit headers."""
    fault.headers += [h for h in original.headers if h[0].lower().startswith("x-ratelimit")]
    return fault
