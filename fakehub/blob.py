"""The log storage host: a second address that serves job logs like a signed blob store.

Like Azure blob storage behind GitHub's log redirect, it refuses requests that carry an
`Authorization` header (the collector must drop the token), refuses a URL issued more than
`BLOB_TTL` seconds ago (403), and answers `BlobNotFound` for jobs that never ran.

A job can be given a big log (`POST /_admin/big_log`): ordinary output up to the size asked
for, then the job's own log, streamed block by block so fakehub never holds it whole.
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from fakehub.api import RepoApi, log_signature
from fakehub.logs import render
from fakehub.web import Request, Response, StartResponse, start

PATH = re.compile(r"/actions-results/[0-9a-f]+/workflow-job-run-(\d+)/logs/job/job-logs\.txt")
XML = "application/xml"
BLOB_TTL = 60.0  # seconds a log URL stays valid: "expires after 1 minute" (GitHub's OpenAPI)
FILLER_BLOCK = 1 << 20  # bytes of ordinary output generated once, then repeated


class BigLog(Response):
    """A log streamed in blocks: `length` bytes from `chunks()`, the body left empty."""

    def __init__(self, length: int, chunks: Callable[[], Iterator[bytes]]) -> None:
        super().__init__(200, b"", [("Content-Type", "text/plain; charset=utf-8")])
        self.length, self.chunks = length, chunks


def filler_block(seed: int, size: int = FILLER_BLOCK) -> bytes:
    """About `size` bytes of whole, harmless CI lines (pip, INFO, training metrics), stamped
    like GitHub's, varied enough to compress like real output (not like one repeated line)."""
    rng = random.Random(seed)
    lines, total, tick = [], 0, 0
    while total < size:
        tick += rng.randint(1, 400_000)
        seconds, frac = divmod(tick, 10_000_000)
        stamp = f"2026-06-01T{seconds // 3600 % 24:02d}:{seconds // 60 % 60:02d}:"
        stamp += f"{seconds % 60:02d}.{frac:07d}Z"
        kind = rng.random()
        if kind < 0.5:
            metrics = " - ".join(
                f"{name}:{rng.uniform(-1, 100):.4g}"
                for name in ("actor/entropy", "actor/pg_loss", "critic/score/mean",
                             "response_length/mean", "timing_s/gen", "perf/throughput")
            )  # fmt: skip
            text = f"(TaskRunner pid={rng.randint(1000, 99999)}) step:{rng.randint(1, 999)} - "
            text += metrics
        elif kind < 0.8:
            text = (
                f"INFO 06-01 12:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d} "
                f"[model_runner.py:{rng.randint(100, 2000)}] Loading model weights took "
                f"{rng.uniform(1, 80):.2f} GB"
            )
        else:
            text = (
                f"Requirement already satisfied: package{rng.randint(1, 400)}>="
                f"{rng.randint(0, 9)}.{rng.randint(0, 40)} in /usr/local/lib/python3.11/"
                f"dist-packages ({rng.randint(0, 9)}.{rng.randint(0, 40)}.{rng.randint(0, 9)})"
            )
        line = f"{stamp} {text}\n".encode()
        lines.append(line)
        total += len(line)
    return b"".join(lines)


def big_log(seed: int, size: int, tail: bytes) -> tuple[int, Callable[[], Iterator[bytes]]]:
    """(length, chunks) of a log of ordinary lines up to about `size` bytes, then `tail`."""
    block = filler_block(seed)
    whole, left = divmod(max(0, size - len(tail)), len(block))
    part = block[: block.rfind(b"\n", 0, left) + 1]

    def chunks() -> Iterator[bytes]:
        for _ in range(whole):
            yield block
        if part:
            yield part
        yield tail

    return whole * len(block) + len(part) + len(tail), chunks


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
        self.big_logs: dict[int, int] = {}  # job id -> bytes of its big log (admin big_log)

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
            if job.id in self.big_logs:
                return BigLog(*big_log(job.id, self.big_logs[job.id], body))
            return Response(200, body, [("Content-Type", "text/plain; charset=utf-8")])
        return _xml_error(404, "BlobNotFound", "The specified blob does not exist.")

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> list[bytes]:
        response = self.answer(Request.from_environ(environ))
        if isinstance(response, BigLog):
            status = f"{response.status} OK"
            start_response(status, [*response.headers, ("Content-Length", str(response.length))])
            return response.chunks()
        start(start_response, response)
        return [response.body]
