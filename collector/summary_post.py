"""Posting the summary: one comment per PR or issue, found again by MARKER and by its author
(the token's ``GET /user`` login; ``github-actions[bot]`` for a workflow's token) and edited in
place, else created (PyTorch Dr.CI's single upserted comment). A marked comment by anyone else
is left alone and reported; a POST that may have failed is retried only after the comments
were listed again, so no retry doubles the comment."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import requests
from github.Requester import Requester
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from collector.client import (
    SECONDARY_MESSAGE,
    BadCredentials,
    CollectError,
    Forbidden,
    GitHubClient,
)
from store.models import PostedComment
from store.settings import parse_datetime
from store.upsert import upsert
from store.vocabulary import SUMMARY_MARKER as MARKER

ACTIONS_BOT = "github-actions[bot]"  # who a workflow's GITHUB_TOKEN comments as
INTEGRATION = "not accessible by integration"  # GitHub's 403 to GET /user for such a token
POST_TRIES = 4  # POSTs of one summary; before each retry the comments are listed again


def token_login(client: GitHubClient) -> str:
    """The login the token's comments carry: GET /user's, or ACTIONS_BOT when GitHub answers
    that the token is an integration's (a workflow's GITHUB_TOKEN)."""
    try:
        _, _, user = client.request("GET", "/user")
    except Forbidden as exc:
        if INTEGRATION in str(exc).lower():
            return ACTIONS_BOT
        raise
    return str(user["login"])


def author_login(item: dict[str, Any]) -> str:
    """The login of who wrote a comment or an issue ("" when GitHub does not say)."""
    return str((item.get("user") or {}).get("login") or "")


def issue_comments(client: GitHubClient, repo: str, number: int) -> Iterator[dict[str, Any]]:
    """The comments of an issue or pull request, oldest first, over every page."""
    path = f"/repos/{repo}/issues/{number}/comments"
    for _, page in client.pages(path, {"per_page": 100}, {}):
        yield from page.body or []


def marked_comments(
    client: GitHubClient, repo: str, number: int, author: str | None
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """(the first comment of the issue by ``author`` whose body starts with MARKER, those
    of anyone else), over every page; ``author`` None: the first of anyone's."""
    mine, foreign = None, []
    for comment in issue_comments(client, repo, number):
        if not (comment.get("body") or "").startswith(MARKER):
            continue
        if author is None or author_login(comment).casefold() == author.casefold():
            mine = mine or comment
        else:
            foreign.append(comment)
    return mine, foreign


def find_marked_comment(
    client: GitHubClient, repo: str, number: int, author: str | None = None
) -> dict[str, Any] | None:
    """The first comment of the issue (every page) by ``author`` (None: anyone's) whose body
    starts with MARKER."""
    return marked_comments(client, repo, number, author)[0]


def _github_message(raw: str | None) -> str:
    """An error answer's message and its validation errors, on one line."""
    try:
        answer = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return ""
    if not isinstance(answer, dict):
        return ""
    problems = [str(e.get("message") or e.get("code")) for e in answer.get("errors") or []]
    return ": ".join([str(answer.get("message", "")), *problems])[:300]


def _write_wait(
    client: GitHubClient, status: int, hdrs: dict[str, str], message: str
) -> float | None:
    """Seconds to wait before writing again after a rate-limit answer; None if it is not one."""
    retry_after = hdrs.get("retry-after", "")
    if retry_after.strip().isdigit():
        return float(retry_after)
    if hdrs.get("x-ratelimit-remaining") == "0":
        return max(1.0, int(hdrs.get("x-ratelimit-reset", "0") or 0) - time.time() + 1)
    if status == 429 or SECONDARY_MESSAGE.search(message):
        return client.secondary_wait
    return None


def _post_once(
    client: GitHubClient, path: str, payload: dict[str, Any]
) -> tuple[dict[str, Any] | None, str, float]:
    """One POST that nothing repeats: GitHubClient's retries would send it again after a 502,
    a cut connection or a garbled answer, when GitHub may well have created the comment or
    issue. (what was created, "", 0) when created, else (None, why, seconds to wait before
    looking); a refusal that is not a rate limit raises (``Forbidden`` for a 403)."""
    client.check_budget()
    requester = Requester(**{**client.github.requester.kwargs, "retry": 0})
    try:
        status, hdrs, raw = requester.requestJson("POST", path, input=payload)
    except requests.exceptions.RequestException as exc:
        return None, type(exc).__name__, 2.0
    finally:
        requester.close()
    hdrs = {key.lower(): value for key, value in hdrs.items()}
    client.stats.count(status, hdrs)
    message = _github_message(raw)
    if status == 201:
        try:
            return json.loads(raw), "", 0.0
        except json.JSONDecodeError:
            return None, "an unreadable answer", 2.0
    if status >= 500:
        return None, f"HTTP {status} {message}", 2.0
    wait = _write_wait(client, status, hdrs, message) if status in (403, 429) else None
    if wait is not None:
        return None, f"rate limit ({status})", wait
    if status == 401:
        raise BadCredentials("GitHub rejected the token (401 Bad credentials)")
    if status == 403:
        raise Forbidden(f"POST {path}: HTTP {status} {message}")
    raise CollectError(f"POST {path}: HTTP {status} {message}")


def create_once(
    client: GitHubClient,
    path: str,
    payload: dict[str, Any],
    find: Callable[[], dict[str, Any] | None],
    what: str = "comment",
) -> dict[str, Any]:
    """POST ``payload`` to create one thing; after a try that may have failed (a 5xx, a cut
    connection, a rate limit), wait as GitHub asks and ``find`` it again, taking it if that
    try created it after all, so that no retry doubles it."""
    for _ in range(POST_TRIES):
        created, why, wait = _post_once(client, path, payload)
        if created is not None:
            return created
        if wait > client.max_wait:
            raise CollectError(f"POST {path}: {why}; GitHub asks to wait {wait:.0f}s")
        message = f"POST {path}: {why}; looking for the {what} in {wait:.0f}s"
        client.stats.waits.append(message)
        client.on_wait(message)
        client.sleep(wait)
        found = find()
        if found is not None:
            return found
    raise CollectError(f"POST {path}: {why} on each of {POST_TRIES} tries; no {what} created")


def create_comment(
    client: GitHubClient, repo: str, number: int, body: str, author: str
) -> dict[str, Any]:
    """POST the comment, never twice (``create_once``, finding ours by marker and author)."""
    path = f"/repos/{repo}/issues/{number}/comments"
    comment = create_once(
        client,
        path,
        {"body": body},
        lambda: marked_comments(client, repo, number, author)[0],
    )
    return comment if comment.get("body") == body else edit_comment(client, repo, comment, body)


def edit_comment(
    client: GitHubClient, repo: str, comment: dict[str, Any], body: str
) -> dict[str, Any]:
    path = f"/repos/{repo}/issues/comments/{comment['id']}"
    return client.request("PATCH", path, body={"body": body})[2]


def upsert_comment(
    client: GitHubClient, repo: str, number: int, body: str, author: str | None = None
) -> tuple[str, dict[str, Any], list[dict[str, Any]]]:
    """Edit the marked comment by ``author`` (default: the token's login), or create it:
    ("edited" or "created", the comment, the marked comments of others, left alone)."""
    author = author or token_login(client)
    mine, foreign = marked_comments(client, repo, number, author)
    if mine is not None:
        return "edited", edit_comment(client, repo, mine, body), foreign
    return "created", create_comment(client, repo, number, body, author), foreign


def record_comment(
    engine: Engine, repo: str, number: int, comment: dict[str, Any], body: str
) -> None:
    """Remember the posted comment (its id, address and what it said) in posted_comments."""
    row = {
        "id": comment["id"],
        "repo": repo,
        "issue_number": number,
        "body_sha256": hashlib.sha256(body.encode("utf-8")).hexdigest(),
        "html_url": comment.get("html_url"),
        "created_at": parse_datetime(comment["created_at"]),
        "updated_at": parse_datetime(comment["updated_at"]),
    }
    with Session(engine) as session, session.begin():
        upsert(session, PostedComment, [row])


def post_summary(
    client: GitHubClient, engine: Engine, repo: str, number: int, body: str
) -> tuple[str, str, list[dict[str, Any]]]:
    """Upsert the comment and record it: (what happened, the comment's address, the marked
    comments of others, left alone)."""
    action, comment, foreign = upsert_comment(client, repo, number, body)
    record_comment(engine, repo, number, comment, body)
    return action, str(comment.get("html_url") or ""), foreign


def foreign_line(foreign: list[dict[str, Any]]) -> str:
    """One line naming the comments that carry the marker but are someone else's."""
    who = ", ".join(f"{author_login(c) or '?'} {c.get('html_url') or c.get('id')}" for c in foreign)
    return f"left alone: {len(foreign)} comment(s) by someone else starting with the marker: {who}"
