"""Each tracked workflow's triggers and presence on the default branch, for SILENT
(analytics.silence): once per collect, one request for the `.github/workflows` listing
(`GET /repos/{owner}/{repo}/contents/.github/workflows?ref={branch}`, with the ETag of the
last one: a 304 when nothing changed) and one per tracked file whose blob changed since it was
last read (the listing gives each file's blob ``sha``).

GitHub keeps listing a deleted workflow `active` in the workflows API, so the listing, not
the state, says that a file is gone. Scheduled runs fire only for files directly in
`.github/workflows/` on the default branch: a tracked path elsewhere is never present. A
listing or file that GitHub refuses (a token without `contents: read`, a default branch that
does not exist) leaves what is stored as it was: the collect goes on. A 404 on the listing of
the repository's own default branch is the folder deleted: every tracked file is gone."""

from __future__ import annotations

import base64
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import yaml
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from collector.client import GitHubClient, NotFound, ResourceError
from store.triggers import mark_checked, save_triggers, stored_triggers

WORKFLOWS_DIR = ".github/workflows"


def parse_triggers(text: str) -> dict[str, Any] | None:
    """The events of a workflow file's `on:` and its schedule's cron lines with their
    timezone (None: UTC); None when the file says nothing readable. PyYAML reads the key `on`
    as True (YAML 1.1)."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    if not isinstance(data, dict):
        return None
    on = data.get("on", data.get(True))
    if isinstance(on, str):
        on = [on]
    if isinstance(on, list):
        return {"events": [str(event) for event in on], "schedule": []}
    if not isinstance(on, dict):
        return None
    entries = on.get("schedule")
    schedule = [
        {"cron": str(entry["cron"]), "timezone": entry.get("timezone")}
        for entry in (entries if isinstance(entries, list) else [])
        if isinstance(entry, dict) and entry.get("cron")
    ]
    return {"events": [str(event) for event in on], "schedule": schedule}


def read_triggers(
    engine: Engine,
    client: GitHubClient,
    repo: str,
    branch: str,
    paths: Iterable[str],
    etag: str | None,
) -> str | None:
    """Read the listing and the changed files of ``paths`` at ``branch``'s head; store a row
    per path (store.models.WorkflowTriggers). ``etag``: the listing's, as this returned it
    last time; a 304 (the same listing) keeps the rows read from it, so a collect with nothing
    new spends nothing here. Returns the ETag to send next time; None when a file could not be
    read (its row is stale), so that the listing is asked again in full."""
    paths = list(paths)
    with Session(engine) as session:
        stored = stored_triggers(session, repo)
    if not all(path in stored for path in paths):  # a path never read: read them all
        etag = None
    try:
        status, headers, listing = client.get(
            f"/repos/{repo}/contents/{WORKFLOWS_DIR}", {"ref": branch}, etag=etag
        )
    except NotFound:  # no such folder, or no such branch
        if not _branch_exists(client, repo, branch):
            return None
        status, headers, listing = 404, {}, []  # the folder is gone, and every file with it
    except ResourceError:  # refused: nothing known better
        return None
    now = datetime.now(UTC)
    if status == 304:
        with Session(engine) as session, session.begin():
            mark_checked(session, repo, paths, now)
        return etag
    blobs = {
        entry["path"]: entry.get("sha")
        for entry in (listing if isinstance(listing, list) else [])
        if entry.get("type") == "file"
    }
    rows, complete = [], True
    for path in paths:
        old = stored.get(path)
        row = {"repo": repo, "path": path, "checked_at": now, "sha": blobs.get(path)}
        if path not in blobs:
            rows.append(row | {"file_present": False, "triggers": old.triggers if old else None})
        elif old is not None and old.file_present and old.sha == blobs[path]:
            rows.append(row | {"file_present": True, "triggers": old.triggers})
        else:
            try:
                _status, _headers, body = client.get(
                    f"/repos/{repo}/contents/{path}", {"ref": branch}
                )
            except NotFound:  # deleted between the two requests
                rows.append(row | {"file_present": False, "triggers": None, "sha": None})
                continue
            except ResourceError:
                complete = False
                continue
            text = base64.b64decode(body.get("content") or "").decode("utf-8", "replace")
            rows.append(row | {"file_present": True, "triggers": parse_triggers(text)})
    with Session(engine) as session, session.begin():
        save_triggers(session, rows)
    return headers.get("etag") if complete else None


def _branch_exists(client: GitHubClient, repo: str, branch: str) -> bool:
    """Whether ``branch`` is the repository's default branch as GitHub says: then a 404 on
    the listing means the directory is gone. One request, asked only after a 404."""
    try:
        _status, _headers, body = client.get(f"/repos/{repo}")
    except (NotFound, ResourceError):
        return False
    return isinstance(body, dict) and body.get("default_branch") == branch
