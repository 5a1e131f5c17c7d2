"""GitHub's issues API for one repository: issues, labels and close/reopen events.

Issues share one number sequence with pull requests, as on GitHub: a new issue takes the next
number after the highest the repository has handed out (its catalog's pull-request counter at
the simulated now, or an issue filed before). A number no issue was filed under answers as a
pull request, as it always has in fakehub (the PRs the summary comments on). Listing shows the
filed issues and the pull requests the history knows (pushed, or commented on), marked by their
`pull_request` key, as GitHub lists them.

What github.com does and fakehub copies (sources in docs/github-behaviour.md): labels that do not
exist are created (colour ededed); `labels=a,b` means both; `state` defaults to open;
`state_reason` is ignored unless the state changes and reads "reopened" after a reopen; titles
over 256 and bodies over 65,536 characters answer 422; a token without `issues: write` gets 403
with `X-Accepted-GitHub-Permissions`; creating too many issues a minute gets the secondary limit
on content creation; a repository with issues turned off answers 410.
"""

from __future__ import annotations

import itertools
from typing import Any

from fakehub.catalog import parse_time
from fakehub.history import History
from fakehub.payloads import BOT_LOGIN, Shapes, iso
from fakehub.ratelimit import ContentLimit
from fakehub.traffic import pr_number
from fakehub.web import Request, Response, error, json_response, paginate

LOGIN_KEY = "fakehub.login"  # the environ entry where the app puts the token's login
NO_PERMISSION = "Resource not accessible by integration"
ISSUES_DOCS = "https://docs.github.com/rest/issues/issues"
LABELS_DOCS = "https://docs.github.com/rest/issues/labels"
BODY_LIMIT = 65_536  # characters of an issue's or a comment's body
TITLE_LIMIT = 256  # characters of an issue's title
NEW_LABEL_COLOR = "ededed"  # the colour GitHub gives a label it creates on the fly
STATE_REASONS = ("completed", "not_planned", "duplicate", "reopened")
DISABLED = "Issues are disabled for this repo"
CONTENT_LIMIT = (
    "You have exceeded a secondary rate limit and have been temporarily blocked from content "
    "creation. Please retry your request again later."
)
SECONDARY_DOCS = (
    "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
)


def validation_failed(resource: str, field: str, message: str, docs: str) -> Response:
    """GitHub's 422 for one field: {"message": "Validation Failed", "errors": [...]}."""
    problem = {"resource": resource, "code": "custom", "field": field, "message": message}
    body = {"message": "Validation Failed", "errors": [problem], "documentation_url": docs}
    return json_response(422, {**body, "status": "422"})


def too_long(text: str, resource: str, docs: str, field: str = "body") -> Response | None:
    """GitHub's 422 for a body over BODY_LIMIT characters (a title over TITLE_LIMIT), else None."""
    limit = BODY_LIMIT if field == "body" else TITLE_LIMIT
    if len(text) <= limit:
        return None
    return validation_failed(
        resource, field, f"{field} is too long (maximum is {limit} characters)", docs
    )


def not_supplied(name: str) -> Response:
    return error(422, f'Invalid request.\n\n"{name}" wasn\'t supplied.')


def json_object(request: Request) -> dict[str, Any] | Response:
    """The request's JSON object, or GitHub's 400 for a body that is none."""
    try:
        body = request.json()
    except ValueError:
        body = None
    return body if isinstance(body, dict) else error(400, "Problems parsing JSON")


def label_names(value: Any) -> list[str] | None:
    """Label names from a request: names, or objects with a `name`; None when malformed."""
    if isinstance(value, dict):
        value = value.get("labels")
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return None
    names = [item.get("name") if isinstance(item, dict) else item for item in value]
    return [str(n) for n in names] if all(isinstance(n, str | int) for n in names) else None


class IssueTracker:
    """The issues, labels and events of one repository. `comments` is its comments by issue
    number (owned by `RepoApi`); `content` the hub's secondary limit on creating content."""

    def __init__(
        self,
        history: History,
        shapes: Shapes,
        comments: dict[int, list[dict[str, Any]]],
        content: ContentLimit,
    ) -> None:
        self.history, self.shapes, self.comments, self.content = history, shapes, comments, content
        self.issues: dict[int, dict[str, Any]] = {}
        self.labels: dict[str, dict[str, Any]] = {}  # lower-cased name -> label
        self.events: dict[int, list[dict[str, Any]]] = {}
        self.ids = itertools.count(shapes.repo_id * 1000 + 1)  # labels' and events' ids
        self.enabled = True  # False: the repository has issues turned off (admin issues)
        self.writable = True  # False: the token lacks `issues: write` (admin permissions)

    # ---- numbers, checks -------------------------------------------------------------------

    def highest(self) -> int:
        """The highest number handed out: pull requests so far, or an issue filed since."""
        known = [pr_number(self.history.catalog, self.history.now)]
        known += [run.pr for run in self.history.runs if run.pr is not None]
        return max(known + list(self.issues))

    def refused_edit(self, request: Request, number: int) -> Response | None:
        """GitHub's answer to a write on issue ``number`` it does not take: no such issue, or
        ``refused``'s; None when it goes ahead."""
        if number not in self.issues:
            return error(404, "Not Found")
        return self.refused(request)

    def refused(self, request: Request, creating: bool = False) -> Response | None:
        """GitHub's answer to a write it does not take: no permission, issues off, or (for a
        creation) the secondary limit on content creation; None when it goes ahead."""
        if not self.writable:
            answer = error(403, NO_PERMISSION, ISSUES_DOCS)
            answer.headers.append(("X-Accepted-GitHub-Permissions", "issues=write"))
            return answer
        if not self.enabled:
            return error(410, DISABLED, ISSUES_DOCS)
        if creating and not self.content.allow(request.environ.get(LOGIN_KEY, BOT_LOGIN)):
            answer = error(403, CONTENT_LIMIT, SECONDARY_DOCS)
            if self.content.retry_after is not None:
                answer.headers.append(("Retry-After", str(self.content.retry_after)))
            return answer
        return None

    def payload(self, number: int) -> dict[str, Any]:
        issue = self.issues[number]
        labels = [self.labels[name.lower()] for name in issue["labels"]]
        return self.shapes.stored_issue(issue, labels, len(self.comments.get(number, [])))

    def ensure_labels(self, names: list[str]) -> list[str]:
        """The labels' names as the repository spells them, creating those it lacks."""
        for name in names:
            if name.lower() not in self.labels:
                self.labels[name.lower()] = {
                    "id": next(self.ids),
                    "name": name,
                    "color": NEW_LABEL_COLOR,
                    "description": None,
                }
        return list(dict.fromkeys(self.labels[name.lower()]["name"] for name in names))

    def _checked_text(self, body: dict[str, Any]) -> Response | dict[str, Any]:
        """The title, body and labels a create or update sets, or GitHub's 422."""
        changes: dict[str, Any] = {}
        if body.get("title") is not None:
            changes["title"] = str(body["title"])  # GitHub takes an integer title too
        if body.get("body") is not None:
            changes["body"] = str(body["body"])
        for field in ("title", "body"):
            refused = too_long(changes.get(field, ""), "Issue", ISSUES_DOCS, field)
            if refused is not None:
                return refused
        if "labels" in body:
            names = label_names(body["labels"])
            if names is None:
                return validation_failed("Issue", "labels", "labels is invalid", ISSUES_DOCS)
            changes["labels"] = self.ensure_labels(names)
        return changes

    # ---- routes ----------------------------------------------------------------------------

    def create(self, request: Request) -> Response:
        """`POST /repos/{o}/{r}/issues`: 201 and `Location`; the token's user is the author."""
        refused = self.refused(request, creating=True)
        if refused is not None:
            return refused
        body = json_object(request)
        if isinstance(body, Response):
            return body
        if body.get("title") in (None, ""):
            return not_supplied("title")
        changes = self._checked_text(body)
        if isinstance(changes, Response):
            return changes
        at = iso(self.history.tick(1.0))
        number = self.highest() + 1
        self.issues[number] = {
            "number": number,
            "title": changes["title"],
            "body": changes.get("body"),
            "labels": changes.get("labels", []),
            "login": request.environ.get(LOGIN_KEY, BOT_LOGIN),
            "state": "open",
            "state_reason": None,
            "created_at": at,
            "updated_at": at,
            "closed_at": None,
            "closed_by": None,
        }
        payload = self.payload(number)
        return json_response(201, payload, [("Location", payload["url"])])

    def pull_request(self, number: int) -> dict[str, Any]:
        """A pull request seen through the issues routes (a number no issue was filed under)."""
        at = iso(self.history.now) or ""
        return self.shapes.issue(number, len(self.comments.get(number, [])), at)

    def pull_requests(self) -> list[dict[str, Any]]:
        """The pull requests a listing shows: those the history pushed to, or commented on."""
        numbers = {run.pr for run in self.history.runs if run.pr is not None} | set(self.comments)
        return [self.pull_request(n) for n in sorted(numbers - set(self.issues))]

    def get(self, request: Request, number: str) -> Response:
        """A filed issue; any other number up to the highest answers as a pull request."""
        n = int(number)
        if n in self.issues:
            return json_response(200, self.payload(n)) if self.enabled else self._gone()
        if n > self.highest():
            return error(404, "Not Found")
        return json_response(200, self.pull_request(n))

    def _gone(self) -> Response:
        return error(410, DISABLED, ISSUES_DOCS)

    def update(self, request: Request, text: str) -> Response:
        """`PATCH .../issues/{n}`: title, body, labels (replacing the set), state and its reason
        (ignored unless the state changes); a close or reopen is recorded as an event."""
        number = int(text)
        refused = self.refused_edit(request, number)
        if refused is not None:
            return refused
        body = json_object(request)
        if isinstance(body, Response):
            return body
        state, reason = body.get("state"), body.get("state_reason")
        if state not in (None, "open", "closed") or reason not in (None, *STATE_REASONS):
            field = "state" if state not in (None, "open", "closed") else "state_reason"
            return validation_failed(
                "Issue", field, f"{field} is not included in the list", ISSUES_DOCS
            )
        changes = self._checked_text(body)
        if isinstance(changes, Response):
            return changes
        issue = self.issues[number]
        at = iso(self.history.tick(1.0))
        issue.update(changes, updated_at=at)
        if state is not None and state != issue["state"]:
            login = request.environ.get(LOGIN_KEY, BOT_LOGIN)
            closing = state == "closed"
            issue.update(
                state=state,
                state_reason=(reason or "completed") if closing else "reopened",
                closed_at=at if closing else None,
                closed_by=login if closing else None,
            )
            self.events.setdefault(number, []).append(
                {
                    "id": next(self.ids),
                    "event": "closed" if closing else "reopened",
                    "login": login,
                    "state_reason": issue["state_reason"],
                    "created_at": at,
                }
            )
        return json_response(200, self.payload(number))

    def list(self, request: Request) -> Response:
        """`GET .../issues`: filed issues and pull requests, filtered and sorted as GitHub does
        (state open by default; every label of `labels`; `creator`; updated since `since`)."""
        if not self.enabled:
            return self._gone()
        state = request.arg("state", "open")
        sort = request.arg("sort", "created")
        direction = request.arg("direction", "desc")
        refused = error(422, "Validation Failed", ISSUES_DOCS)
        try:
            since = parse_time(request.arg("since")) if request.arg("since") else None
        except ValueError:
            return refused
        if (
            state not in ("open", "closed", "all")
            or sort not in ("created", "updated", "comments")
            or direction not in ("asc", "desc")
        ):
            return refused
        items = [self.payload(n) for n in self.issues] + self.pull_requests()
        wanted = [n.strip().lower() for n in (request.arg("labels") or "").split(",") if n.strip()]
        creator = (request.arg("creator") or "").lower()
        items = [
            item
            for item in items
            if state in ("all", item["state"])
            and set(wanted) <= {label["name"].lower() for label in item["labels"]}
            and (not creator or item["user"]["login"].lower() == creator)
            and (since is None or parse_time(item["updated_at"]) >= since)
        ]
        key = {"created": "created_at", "updated": "updated_at", "comments": "comments"}[sort]
        items.sort(key=lambda item: (item[key], item["number"]), reverse=direction == "desc")
        page, link = paginate(items, request, f"{self.shapes.api}/issues")
        return json_response(200, page, link)

    def list_events(self, request: Request, text: str) -> Response:
        number = int(text)
        if number not in self.issues:
            return json_response(200, [])  # a pull request: fakehub records none of its events
        if not self.enabled:
            return self._gone()
        events = [self.shapes.issue_event(e) for e in self.events.get(number, [])]
        page, link = paginate(events, request, f"{self.shapes.api}/issues/{number}/events")
        return json_response(200, page, link)

    def create_label(self, request: Request) -> Response:
        """`POST .../labels`: `name` and `color` required; a taken name answers 422
        `already_exists`."""
        refused = self.refused(request)
        if refused is not None:
            return refused
        body = json_object(request)
        if isinstance(body, Response):
            return body
        for field in ("name", "color"):
            if not isinstance(body.get(field), str):
                return not_supplied(field)
        if body["name"].lower() in self.labels:
            problem = {"resource": "Label", "code": "already_exists", "field": "name"}
            answer = {"message": "Validation Failed", "errors": [problem]}
            return json_response(422, {**answer, "documentation_url": LABELS_DOCS, "status": "422"})
        label = {
            "id": next(self.ids),
            "name": body["name"],
            "color": body["color"].removeprefix("#").lower(),
            "description": body.get("description"),
        }
        self.labels[label["name"].lower()] = label
        payload = self.shapes.label(label)
        return json_response(201, payload, [("Location", payload["url"])])

    def get_label(self, request: Request, name: str) -> Response:
        label = self.labels.get(name.lower())
        return json_response(200, self.shapes.label(label)) if label else error(404, "Not Found")

    def add_labels(self, request: Request, text: str) -> Response:
        """`POST .../issues/{n}/labels`: adds to the set (creating missing labels, colour
        ededed) and answers the issue's labels."""
        number = int(text)
        refused = self.refused_edit(request, number)
        if refused is not None:
            return refused
        names = label_names(request.json())  # {"labels": [...]}, or the list alone
        if names is None:
            return validation_failed("Label", "labels", "labels is invalid", LABELS_DOCS)
        issue = self.issues[number]
        issue["labels"] = list(dict.fromkeys(issue["labels"] + self.ensure_labels(names)))
        issue["updated_at"] = iso(self.history.tick(1.0))
        return json_response(200, self.payload(number)["labels"])
