"""Workflows and their runs: resolve the tracked workflows, list runs in ``created`` windows that
stay under GitHub's 1,000-result cap, and save them."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session

from collector.client import GitHubClient, NotFound
from collector.payloads import run_row, workflow_row
from store.models import Workflow, WorkflowRun
from store.upsert import upsert

RESULT_CAP = 1000
MIN_WINDOW = timedelta(minutes=1)


def fetch_workflows(
    client: GitHubClient, repo: str, etags: dict[str, str]
) -> tuple[list[dict[str, Any]] | None, dict[str, str]]:
    """All workflows of ``repo``; None when GitHub says nothing changed since ``etags``."""
    found: list[dict[str, Any]] = []
    new_etags: dict[str, str] = {}
    for url, page in client.pages(f"/repos/{repo}/actions/workflows", {"per_page": 100}, etags):
        if page.status == 304:
            return None, etags
        found.extend(page.body.get("workflows", []))
        if page.etag:
            new_etags[url] = page.etag
    return found, new_etags


def fetch_workflow_by_file(client: GitHubClient, repo: str, path: str) -> dict[str, Any] | None:
    """A workflow the list left out, asked for by its file name (GitHub accepts it in place of
    the id); None when GitHub does not know it either."""
    try:
        _status, _headers, body = client.get(
            f"/repos/{repo}/actions/workflows/{path.rsplit('/', 1)[-1]}"
        )
    except NotFound:
        return None
    return body if body and body.get("path") == path else None


def save_workflows(session: Session, repo: str, workflows: Sequence[dict[str, Any]]) -> None:
    upsert(session, Workflow, [workflow_row(repo, wf) for wf in workflows])


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _list(
    client: GitHubClient,
    path: str,
    created: str,
    etags: dict[str, str],
    new_etags: dict[str, str],
    splittable: bool = True,
) -> tuple[int, list[dict[str, Any]] | None]:
    """One ``created`` query, every page: (total_count, runs), runs None if unchanged. A
    ``splittable`` window that reaches RESULT_CAP stops at page 1 (the caller splits it)."""
    runs: dict[int, dict[str, Any]] = {}  # by id: a page asked again smaller may repeat some
    total = 0
    # The pull-request array is not used, and without it GitHub's pages are much lighter.
    params = {"created": created, "per_page": 100, "exclude_pull_requests": "true"}
    for index, (url, page) in enumerate(client.pages(path, params, etags)):
        if page.status == 304:
            new_etags[url] = etags[url]
            return -1, None
        if index == 0:
            total = int(page.body.get("total_count", 0))
            if total >= RESULT_CAP and splittable:
                return total, []  # the caller splits the window; later pages would be capped
        runs.update((run["id"], run) for run in page.body.get("workflow_runs", []))
        if page.etag:
            new_etags[url] = page.etag
    return total, list(runs.values())


def _capped(total: int, runs: list[dict[str, Any]] | None) -> bool:
    """Whether a listing holds fewer runs than its ``total_count``: capped, whatever the cap
    (GitHub's is 1,000 today; the listing, not that number, is the proof)."""
    return runs is not None and len(runs) < total


def fetch_runs(
    client: GitHubClient,
    repo: str,
    workflow_id: int,
    since: datetime,
    until: datetime,
    etags: dict[str, str],
    closed: bool = False,
    capped: list[str] | None = None,
) -> tuple[list[dict[str, Any]] | None, dict[str, str]]:
    """Every run of a workflow created in [since, ...): first as one open-ended query (which an
    ETag makes free when nothing changed), or `closed` as [since, until); split into closed
    windows while a window's listing is capped. A window of MIN_WINDOW still capped keeps the
    runs it lists and is added to ``capped``. Returns (runs or None when unchanged, the ETags
    to keep)."""
    path = f"/repos/{repo}/actions/workflows/{workflow_id}/runs"
    new_etags: dict[str, str] = {}
    last = _stamp(until - timedelta(seconds=1))
    first = f"{_stamp(since)}..{last}" if closed else f">={_stamp(since)}"
    total, runs = _list(client, path, first, etags, new_etags)
    if runs is None:
        return None, new_etags
    if not _capped(total, runs):
        return runs, new_etags
    found: dict[int, dict[str, Any]] = {}
    pending = [(since, until)]
    while pending:
        start, end = pending.pop()
        splittable = end - start > MIN_WINDOW
        created = f"{_stamp(start)}..{_stamp(end)}"
        total, window = _list(client, path, created, {}, new_etags, splittable)
        if splittable and _capped(total, window):
            middle = start + (end - start) / 2
            pending += [(start, middle), (middle + timedelta(seconds=1), end)]
            continue
        if _capped(total, window) and capped is not None:
            capped.append(f"{created}: {len(window or [])} of {total} runs")
        for run in window or []:
            found[run["id"]] = run
    return list(found.values()), new_etags


def fetch_run(
    client: GitHubClient, repo: str, run_id: int, etag: str | None
) -> tuple[dict[str, Any] | None, str | None]:
    """One run by id, conditionally: (None, etag) when unchanged."""
    status, hdrs, body = client.get(f"/repos/{repo}/actions/runs/{run_id}", etag=etag)
    if status == 304:
        return None, etag
    return body, hdrs.get("etag")


def save_runs(
    session: Session,
    repo: str,
    paths: dict[int, str],
    runs: Sequence[dict],
    timed_out: Collection[int] = frozenset(),
    deleted: dict[int, datetime] | None = None,
) -> None:
    """Upsert runs; ``timed_out``: ids of runs whose latest attempt hit a time limit,
    ``deleted``: ids of runs GitHub answered 404 for, with when."""
    deleted = deleted or {}
    rows = [
        run_row(repo, paths.get(run["workflow_id"], run.get("path", "")), run)
        | {"timed_out": run["id"] in timed_out, "deleted_at": deleted.get(run["id"])}
        for run in runs
    ]
    upsert(session, WorkflowRun, rows)
