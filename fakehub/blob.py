"""The log storage host: a second address that serves job logs like a signed blob store.

Like Azure blob storage behind GitHub's log redirect, it refuses requests that carry an
`Authorization` header (the collector must drop the token), refuses a URL issued more than
`BLOB_TTL` seconds ago (403), and answers `BlobNotFound` for jobs that never ran.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from typing import Any

from fakehub.api import RepoApi, log_signature
from fakehub.logs import render
from fakehub.web import Request, Response, StartResponse, start

PATH = re.compile(r"/actions-results/[0-9a-f]+/workflow-job-run-(\d+)/logs/job/job-logs\.txt")
XML = "application/xml"
BLOB_TTL = 60.0  # seconds a log URL stays valid: "expires after 1 minute" (GitHub's OpenAPI)


def _xml_error(status: int, code: str, message: str) -> Response:
    body = (
        '<?xml version="1.0" encoding="utf-8"?><Error><Code>'
        f"{code}</Code><Message>{message}</Message></Error>"
    ).encode()
    return Response(status, body, [("Content-Type", XML)])


class BlobApp:
    """WSGI app for the blob host; `repos` resolves a job id to its repository's API."""

    def __init__(self, repos: Callable[[], Iterable[RepoApi]], secret: str) -> None:
        self.repos, self.secret = repos, secret
        self.served = 0
        self.ttl = BLOB_TTL

    def answer(self, request: Request) -> Response:
        if "authorization" in request.headers:
            return _xml_error(
                400,
                "InvalidAuthenticationInfo",
                "Authentication information is not given in the correct format.",
            )
        match = PATH.fullmatch(request.path)
        job_id = int(match.group(1)) if match else -1
        issued = request.arg("st") or ""
        if not match or request.arg("sig") != log_signature(self.secret, job_id, issued):
            return _xml_error(403, "AuthenticationFailed", "Signature did not match.")
        if time.time() - float(issued) > self.ttl:
            return _xml_error(
                403,
                "AuthenticationFailed",
                "Signature not valid in the specified time frame: the URL expired.",
            )
        for api in self.repos():
            job = api.history.job_by_id.get(job_id)
            if job is None:
                continue
            if api.log_status(job) != "ok":
                return _xml_error(404, "BlobNotFound", "The specified blob does not exist.")
            body = api.log_overrides.get(job.id)
            if body is None:
                body = render(job, api.history.run_by_id[job.run_id], api.shapes.full).text.encode()
            self.served += 1
            return Response(200, body, [("Content-Type", "text/plain; charset=utf-8")])
        return _xml_error(404, "BlobNotFound", "The specified blob does not exist.")

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> list[bytes]:
        response = self.answer(Request.from_environ(environ))
        start(start_response, response)
        return [response.body]
