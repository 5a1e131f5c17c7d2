"""Doing tonight's triage plan on GitHub: file one issue per recurring signature, rewrite its
counts section, close it when quiet and reopen it when it fails again, each with one comment.

GitHub's facts that shape it (docs/github-behaviour.md): a POST retried after a 5xx may file
a second issue, so creates go through ``create_once`` (never repeated blindly; our issues are
listed again first); before filing, our issues are listed (``state=all``, pull requests
dropped, author AND marker checked on our side) and one already filed for the signature is
adopted, which also covers a process killed between creating an issue and recording it;
creates are paced ``[triage] pause_seconds`` apart (3 by default); labels are added with POST
(a PATCH of ``labels`` would wipe people's labels); an issue whose author is not our login, or
whose body lacks the marker, is never edited; one a person reopened is not closed again."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from analytics.triage import Draft, Step, TriagePlan
from collector.client import CollectError, Forbidden, GitHubClient, NotFound, ResourceError
from collector.summary_post import author_login, create_once, issue_comments
from store.issues import linked_numbers, record_issue, record_state, renew_lease
from store.triage import log_action
from store.vocabulary import COUNTS_END, COUNTS_START

LABEL = "ciflake"
LABEL_COLOR = "5319e7"
_MARKER = re.compile(r"<!-- ciflake:triage ([0-9a-f]+) -->")
_SECTION = re.compile(re.escape(COUNTS_START) + r".*?" + re.escape(COUNTS_END), re.DOTALL)
NEEDS_WRITE = "the token needs `issues: write` on {repo} (GitHub answered 403: {why})"
CLOSE_WORDS = (
    "ciflake: no failure of this signature on the default branch for {days} days; closing."
)
REOPEN_WORDS = "ciflake: this signature failed again ({why}); reopening."


def category_label(category: str) -> str:
    return f"{LABEL}:{category}"


def ours(issue: dict[str, Any], login: str, signature: str | None = None) -> bool:
    """Whether ciflake filed ``issue``: by ``login`` and carrying the marker (of
    ``signature`` when given), and not a pull request."""
    found = _MARKER.search(issue.get("body") or "")
    return (
        "pull_request" not in issue
        and author_login(issue).casefold() == login.casefold()
        and found is not None
        and (signature is None or found[1] == signature)
    )


def our_issues(client: GitHubClient, repo: str, login: str) -> dict[str, dict[str, Any]]:
    """Our issues of ``repo`` by signature, over every page, open and closed: those listed by
    ``creator`` and those listed by our label, ``ours`` checking the rest. Either listing
    alone can miss one, and a second issue would then be filed: a person may have removed
    the label, GitHub silently drops the labels of a create by a token without push access,
    and how ``creator`` matches a bot's login is undocumented (a wrong value lists nothing,
    with 200)."""
    found: dict[str, dict[str, Any]] = {}
    for only in ({"creator": login}, {"labels": LABEL}):
        params = {"state": "all", **only, "per_page": 100}
        for _, page in client.pages(f"/repos/{repo}/issues", params, {}):
            for issue in page.body or []:
                if ours(issue, login):
                    signature = _MARKER.search(issue["body"])[1]  # type: ignore[index]
                    found.setdefault(signature, issue)
    return found


def ensure_labels(client: GitHubClient, repo: str, names: set[str]) -> None:
    """Create our labels: GitHub would otherwise create them uncoloured, or not at all for a
    token that cannot. A 422 is fine when the label is there (``already_exists``: made by an
    earlier night, or by GitHub for a person's issue); the client's error keeps only GitHub's
    "Validation Failed", so the label is read to tell."""
    for name in sorted(names):
        try:
            client.request(
                "POST", f"/repos/{repo}/labels", body={"name": name, "color": LABEL_COLOR}
            )
        except ResourceError as exc:
            if exc.status != 422 or not _label_exists(client, repo, name):
                raise


def _label_exists(client: GitHubClient, repo: str, name: str) -> bool:
    try:
        client.request("GET", f"/repos/{repo}/labels/{quote(name, safe='')}")
    except NotFound:
        return False
    return True


@dataclass
class Poster:
    """One night's writes for one repository, each recorded and logged right after."""

    client: GitHubClient
    engine: Engine
    repo: str
    login: str
    now: datetime
    echo: Callable[[str], None]
    pause: float  # seconds between two issues created: GitHub throttles creating content
    lease: tuple[str, str, timedelta] | None = None  # (name, holder, TTL) renewed before writes

    def _record(
        self, step: Step, issue: dict[str, Any], action: str | None, sha: str | None = None
    ) -> None:
        with Session(self.engine) as session, session.begin():
            record_issue(
                session,
                self.repo,
                step.signature,
                issue,
                actor=self.login,
                now=self.now,
                body_sha256=sha,
            )
            if action is not None:
                log_action(
                    session,
                    self.repo,
                    step.signature,
                    action,
                    self.login,
                    issue_number=int(issue["number"]),
                    detail=step.why,
                    at=self.now,
                )

    def refresh(self) -> dict[int, dict[str, Any]]:
        """GitHub's state of every linked issue of this repository (people's links too), one
        GET each, recorded; the answers by number. A deleted or unreadable issue is skipped."""
        issues: dict[int, dict[str, Any]] = {}
        for signature, number in linked_numbers(self.engine, self.repo).items():
            try:
                issue = self.client.request("GET", f"/repos/{self.repo}/issues/{number}")[2]
            except (NotFound, ResourceError) as exc:
                self.echo(f"could not read #{number}: {exc}")
                continue
            if not str(issue.get("repository_url", "")).endswith(f"/repos/{self.repo}"):
                continue  # transferred: not this repository's any more
            issues[number] = issue
            record_state(self.engine, self.repo, signature, issue, self.now)
        return issues

    def _patch(self, number: int, payload: dict[str, Any]) -> dict[str, Any]:
        return self.client.request("PATCH", f"/repos/{self.repo}/issues/{number}", body=payload)[2]

    def _comment(self, number: int, text: str) -> None:
        def find() -> dict[str, Any] | None:
            return next(
                (
                    comment
                    for comment in issue_comments(self.client, self.repo, number)
                    if comment.get("body") == text
                    and author_login(comment).casefold() == self.login.casefold()
                ),
                None,
            )

        path = f"/repos/{self.repo}/issues/{number}/comments"
        create_once(self.client, path, {"body": text}, find)

    def hold(self) -> None:
        """Renew the lease before a write: a night paced slowly can outlast its TTL, and a
        lease taken over means another process may be doing the same writes."""
        if self.lease is not None and not renew_lease(self.engine, *self.lease):
            raise CollectError(
                f"the lease {self.lease[0]} was taken over by another process; stopped"
            )

    def _reopened_by_person(self, issue: dict[str, Any]) -> str | None:
        """Who reopened ``issue``, when it was reopened by someone other than us (its latest
        reopen event's actor); None otherwise. Only a reopened issue costs a request."""
        if issue.get("state_reason") != "reopened":
            return None
        path = f"/repos/{self.repo}/issues/{issue['number']}/events"
        who = None
        for _, page in self.client.pages(path, {"per_page": 100}, {}):
            for event in page.body or []:
                if event.get("event") == "reopened":
                    who = str((event.get("actor") or {}).get("login") or "")
        if who is None or who.casefold() == self.login.casefold():
            return None
        return who or "someone"

    def _editable(self, step: Step, issues: dict[int, dict[str, Any]]) -> dict[str, Any] | None:
        issue = issues.get(step.issue_number or 0)
        if issue is None or not ours(issue, self.login, step.signature):
            self.echo(
                f"left alone: #{step.issue_number} is not an issue ciflake filed ({step.signature})"
            )
            return None
        return issue

    def reopen(self, step: Step, issues: dict[int, dict[str, Any]]) -> None:
        if (issue := self._editable(step, issues)) is None:
            return
        self.hold()
        issue = self._patch(issue["number"], {"state": "open", "state_reason": "reopened"})
        issues[issue["number"]] = issue
        self._record(step, issue, "reopened")
        self._comment(issue["number"], REOPEN_WORDS.format(why=step.why))
        self.echo(f"reopened #{issue['number']} ({step.signature}): {step.why}")

    def close(self, step: Step, issues: dict[int, dict[str, Any]], quiet_days: int) -> None:
        if (issue := self._editable(step, issues)) is None:
            return
        if who := self._reopened_by_person(issue):  # a person wants it open: no tug of war
            self.echo(f"left open: #{issue['number']} was reopened by {who} ({step.signature})")
            return
        self.hold()
        issue = self._patch(issue["number"], {"state": "closed", "state_reason": "completed"})
        self._record(step, issue, "closed")
        self._comment(issue["number"], CLOSE_WORDS.format(days=quiet_days))
        self.echo(f"closed #{issue['number']} ({step.signature}): {step.why}")

    def update(self, step: Step, issues: dict[int, dict[str, Any]], draft: Draft) -> None:
        if (issue := self._editable(step, issues)) is None:
            return
        text = merged(issue.get("body") or "", draft.section)
        self.hold()
        try:
            answer = self._patch(issue["number"], {"body": text})
        except Forbidden:
            raise  # no `issues: write`: post_plan's one line, not a line per issue
        except ResourceError as exc:  # e.g. 422: a person's text made the body too long
            self.echo(f"not updated: #{issue['number']}: {exc}")
            return
        if answer.get("body") != text:  # GitHub answers 200 and keeps an over-long body
            self.echo(f"not updated: #{issue['number']}: GitHub kept the old body")
            return
        self._record(step, answer, "updated", draft.sha256)
        self.echo(f"updated #{issue['number']} ({step.signature}): {step.why}")

    def file(
        self, step: Step, draft: Draft, existing: dict[str, dict[str, Any]], first: bool
    ) -> None:
        """File the issue, or adopt ours already on GitHub for the signature (a run killed
        after creating it); record the link at once."""
        labels = [LABEL, category_label(draft.category)]
        issue = existing.get(step.signature)
        done = "adopted"  # not counted against the nightly cap: nothing was filed tonight
        if issue is None:
            if not first:
                self.client.sleep(self.pause)
            self.hold()
            issue = create_once(
                self.client,
                f"/repos/{self.repo}/issues",
                {"title": draft.title, "body": draft.body, "labels": labels},
                lambda: our_issues(self.client, self.repo, self.login).get(step.signature),
                "issue",
            )
            done = "filed"
        self._record(step, issue, done, draft.sha256)
        have = {str(label.get("name")) for label in issue.get("labels") or []}
        if missing := [name for name in labels if name not in have]:  # silently dropped
            path = f"/repos/{self.repo}/issues/{issue['number']}/labels"
            self.client.request("POST", path, body={"labels": missing})
        self.echo(f"{done} #{issue['number']} ({step.signature}): {issue.get('html_url', '')}")


def merged(current: str, section: str) -> str:
    """``current`` (the issue's body on GitHub) with its counts section replaced by
    ``section``, keeping everything a person wrote outside it; appended if it was removed."""
    if _SECTION.search(current):
        return _SECTION.sub(lambda _: section, current, count=1)
    return f"{current.rstrip()}\n\n{section}\n"


def post_plan(
    poster: Poster,
    tonight: TriagePlan,
    drafts: dict[str, Draft],
    issues: dict[int, dict[str, Any]],
    quiet_days: int,
) -> None:
    """Do ``tonight`` on GitHub: reopen, update, close, then file (largest first). A 403 that
    is not a rate limit stops with one line naming the permission."""
    try:
        if tonight.file or tonight.reopen:
            names = {LABEL} | {category_label(drafts[s.signature].category) for s in tonight.file}
            ensure_labels(poster.client, poster.repo, names)
        for step in tonight.reopen:
            poster.reopen(step, issues)
        for step in tonight.update:
            poster.update(step, issues, drafts[step.signature])
        for step in tonight.close:
            poster.close(step, issues, quiet_days)
        existing = our_issues(poster.client, poster.repo, poster.login) if tonight.file else {}
        for i, step in enumerate(tonight.file):
            poster.file(step, drafts[step.signature], existing, first=i == 0)
    except Forbidden as exc:
        why = str(exc).split(": ", 1)[-1].removeprefix("HTTP ").removeprefix("403 ")
        raise CollectError(NEEDS_WRITE.format(repo=poster.repo, why=why)) from None
