"""A big log is collected without being held whole: downloaded in chunks, compressed as it
arrives into one zlib stream (the stored format, readable as before), classified from that
stream, and written to the database in chunks, on SQLite and PostgreSQL."""

from __future__ import annotations

import hashlib
import random
import tracemalloc
import zlib
from collections.abc import Iterator

import pytest
import requests
from sqlalchemy import select
from sqlalchemy.orm import Session

import collector.logs
import fakehub
import store.compression
from collector.client import GitHubClient
from collector.logs import LogFetcher, LogResult
from store.compression import CompressedLog, decompress
from store.models import Failure, JobLog
from tests.support.hubtools import TEST_SCALE, collect, migrated

REPO = "verl-project/verl"
BIG_MB = 30
CHUNK = 64 << 10


@pytest.fixture
def hub() -> Iterator[fakehub.Hub]:
    with fakehub.running(seed=11, scale=TEST_SCALE) as running:
        yield running


def _failed_job_with_log(hub: fakehub.Hub) -> dict:
    failures = hub.admin("GET", "truth?log_status=ok")["failures"]
    return next(f for f in failures if f["line_number"] and f["conclusion"] == "failure")


def _served_log(hub: fakehub.Hub, job_id: int) -> bytes:
    """The job's log as the blob host serves it now, through the client's no-sink path."""
    client = GitHubClient(hub.base_url, hub.token)
    status, url = client.log_location(REPO, job_id)
    assert status == 302 and url
    content = client.download(url)
    assert content is not None
    return content


def test_a_30_mb_log_is_streamed_into_the_store_and_classified(hub, db_url, monkeypatch):
    truth = _failed_job_with_log(hub)
    job_id = truth["job_id"]
    hub.admin("POST", "big_log", {"job_id": job_id, "megabytes": BIG_MB})
    # small pieces everywhere, so that a log held whole anywhere would show
    monkeypatch.setattr(GitHubClient, "download_chunk", CHUNK)
    monkeypatch.setattr(store.compression, "SPOOL_BYTES", 1 << 20)
    monkeypatch.setattr(collector.logs, "INLINE_BYTES", 256 << 10)
    writes: list[int] = []
    real_write = CompressedLog.write

    def spy_write(self, chunk):
        writes.append(len(chunk))
        real_write(self, chunk)

    monkeypatch.setattr(CompressedLog, "write", spy_write)
    streamed: list[bool] = []
    real_get = requests.Session.get

    def spy_get(self, url, **kwargs):
        if "/actions-results/" in url:
            streamed.append(kwargs.get("stream") is True)
        return real_get(self, url, **kwargs)

    monkeypatch.setattr(requests.Session, "get", spy_get)

    report = collect(hub, db_url)

    assert report.log_errors == 0 and streamed and all(streamed)
    assert max(writes) <= CHUNK and len(writes) >= (BIG_MB << 20) // CHUNK
    monkeypatch.undo()
    expected = _served_log(hub, job_id)
    assert len(expected) > (BIG_MB - 1) << 20
    with Session(migrated(db_url)) as s:
        row = s.get(JobLog, job_id)
        failure = s.scalars(select(Failure).where(Failure.job_id == job_id)).one()
    assert row is not None and row.status == "ok" and row.compression == "zlib"
    assert len(row.content) < len(expected) // 2  # stored compressed
    stored = decompress(row.content, row.compression)
    assert stored == expected  # byte for byte, readable by every existing reader
    assert row.size == len(expected) and row.sha256 == hashlib.sha256(expected).hexdigest()
    # classified from the stream as it would be from the whole log, on the job's own failure
    _status, _hdrs, job = GitHubClient(hub.base_url, hub.token).get(
        f"/repos/{REPO}/actions/jobs/{job_id}"
    )
    job["annotations"] = truth["annotations"]
    whole = LogResult(job, "ok", content=expected).classification
    assert failure.category == truth["category"] == whole.category
    assert failure.line_number == whole.line_number
    filler_lines = expected.count(b"\n") - _tail_lines(hub, job_id)
    assert failure.line_number > filler_lines  # the failure is in the job's log, at the end


def _tail_lines(hub: fakehub.Hub, job_id: int) -> int:
    hub.blob.big_logs.pop(job_id)
    try:
        return _served_log(hub, job_id).count(b"\n")
    finally:
        hub.blob.big_logs[job_id] = BIG_MB << 20


def test_downloading_and_classifying_a_log_never_holds_it_whole(hub, monkeypatch):
    """Python's allocations peak far below the log's size while it is fetched, compressed,
    spooled and classified (tracemalloc counts every bytes object, not time)."""
    megabytes = 80
    job_id = _failed_job_with_log(hub)["job_id"]
    hub.admin("POST", "big_log", {"job_id": job_id, "megabytes": megabytes})
    monkeypatch.setattr(store.compression, "SPOOL_BYTES", 1 << 20)
    client = GitHubClient(hub.base_url, hub.token)
    _status, _hdrs, job = client.get(f"/repos/{REPO}/actions/jobs/{job_id}")
    fetcher = LogFetcher(client, REPO, workers=1)
    tracemalloc.start()
    try:
        [result] = fetcher.fetch([job])
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        fetcher.close()
    assert result.status == "ok" and result.log is not None
    assert result.log.size > (megabytes - 1) << 20
    assert result.classification.category != "unknown"
    assert peak < (megabytes << 20) // 4, f"peak {peak >> 20} MB for a {megabytes} MB log"
    result.log.close()


def test_a_compressed_log_reads_back_and_starts_over_on_a_retry():
    rng = random.Random(3)
    content = b"".join(f"line {rng.random()}\r{i}\n".encode() for i in range(200_000))
    log = CompressedLog()
    log.write(b"half a first attempt")
    log.restart()  # the download starts over
    for start in range(0, len(content), 7_777):
        log.write(content[start : start + 7_777])
    log.finish()
    assert log.size == len(content) and log.sha256 == hashlib.sha256(content).hexdigest()
    assert zlib.decompress(log.compressed()) == content  # the stored format: one zlib stream
    assert b"".join(log.chunks(1000)) == log.compressed()
    with log.open() as stream:
        assert stream.readline() == content[: content.index(b"\n") + 1]
        assert stream.read(10) + stream.read() == content[content.index(b"\n") + 1 :]
    log.close()
