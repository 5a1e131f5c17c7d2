"""Small WSGI plumbing shared by the API, admin and blob apps: requests, responses, JSON, links."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode

JSON_TYPE = "application/json; charset=utf-8"
DOCS = "https://docs.github.com/rest"

StartResponse = Callable[..., Any]


@dataclass
class Request:
    method: str
    path: str
    query: list[tuple[str, str]]
    headers: dict[str, str]
    body: bytes
    environ: dict[str, Any]

    @classmethod
    def from_environ(cls, environ: dict[str, Any]) -> Request:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        headers = {
            key[5:].replace("_", "-").lower(): value
            for key, value in environ.items()
            if key.startswith("HTTP_")
        }
        return cls(
            method=environ["REQUEST_METHOD"],
            path=environ.get("PATH_INFO", "/"),
            query=parse_qsl(environ.get("QUERY_STRING", ""), keep_blank_values=True),
            headers=headers,
            body=environ["wsgi.input"].read(length) if length else b"",
            environ=environ,
        )

    def arg(self, name: str, default: str | None = None) -> str | None:
        return next((v for k, v in self.query if k == name), default)

    def json(self) -> Any:
        return json.loads(self.body or b"{}")


@dataclass
class Response:
    status: int
    body: bytes = b""
    headers: list[tuple[str, str]] = field(default_factory=list)
    payload: Any = None  # the JSON value, kept for ETags and tests

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)


REASONS = {
    200: "OK",
    201: "Created",
    302: "Found",
    304: "Not Modified",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    410: "Gone",
    422: "Unprocessable",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
}


def dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def json_response(status: int, value: Any, headers: Iterable[tuple[str, str]] = ()) -> Response:
    return Response(status, dumps(value), [("Content-Type", JSON_TYPE), *headers], value)


def error(status: int, message: str, docs: str = DOCS) -> Response:
    return json_response(
        status, {"message": message, "documentation_url": docs, "status": str(status)}
    )


def start(start_response: StartResponse, response: Response) -> None:
    status = f"{response.status} {REASONS.get(response.status, 'Unknown')}"
    headers = [*response.headers, ("Content-Length", str(len(response.body)))]
    start_response(status, headers)


def paginate(
    items: list[Any], request: Request, url: str, cap: int | None = None
) -> tuple[list[Any], list[tuple[str, str]]]:
    """One page of `items` plus GitHub's Link header (carrying every query parameter)."""
    per_page = max(1, min(100, int(request.arg("per_page", "30") or 30)))
    page = max(1, int(request.arg("page", "1") or 1))
    visible = len(items) if cap is None else min(len(items), cap)
    last = max(1, -(-visible // per_page))
    lo = (page - 1) * per_page
    chunk = items[lo : min(lo + per_page, visible)] if lo < visible else []
    if last == 1:
        return chunk, []

    def link(number: int, rel: str) -> str:
        query = [(k, v) for k, v in request.query if k != "page"] + [("page", str(number))]
        return f'<{url}?{urlencode(query)}>; rel="{rel}"'

    rels = []
    if page > 1:
        rels += [link(min(page - 1, last), "prev")]
    if page < last:
        rels += [link(page + 1, "next"), link(last, "last")]
    if page > 1:
        rels += [link(1, "first")]
    return chunk, [("Link", ", ".join(rels))]
