"""fakehub serves GitHub's issues API as github.com does: issues share the pull requests' number
sequence, listings include pull requests, labels filter by AND, a state changes only with its
reason, and writes meet GitHub's permissions, limits and the secondary limit on creating content.
Through PyGithub's real HTTP stack where ciflake uses it, and plain requests for the raw answers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import requests
from github import Auth, Github

import fakehub
from fakehub.payloads import ACTIONS_BOT, BOT_LOGIN

REPO = "verl-project/verl"
TOKEN = "issues-token"
PERSON, PERSON_TOKEN = "maintainer1", "maintainer1-token"
SUBSET = json.loads((Path(fakehub.__file__).parent / "openapi" / "github_subset.json").read_text())
SECONDARY = (
    "You have exceeded a secondary rate limit and have been temporarily blocked from content "
    "creation. Please retry your request again later."
)


@pytest.fixture
def hub() -> Iterator[fakehub.Hub]:
    users = {PERSON_TOKEN: PERSON}
    with fakehub.running(seed=8, scale=0.01, token=TOKEN, repos=(REPO,), users=users) as hub:
        yield hub


class Client:
    """requests against the hub's repository, as one token."""

    def __init__(self, hub: fakehub.Hub, token: str = TOKEN) -> None:
        self.base = f"{hub.base_url}/repos/{REPO}"
        self.headers = {"Authorization": f"token {token}"}

    def call(self, method: str, path: str, body: Any = None, **params: Any) -> requests.Response:
        url = self.base + path
        return requests.request(
            method, url, json=body, params=params, headers=self.headers, timeout=10
        )

    def file(self, title: str = "t", **fields: Any) -> dict[str, Any]:
        response = self.call("POST", "/issues", {"title": title, **fields})
        assert response.status_code == 201, response.text
        return response.json()


def gh(hub: fakehub.Hub, token: str = TOKEN) -> Github:
    """PyGithub without its pauses between requests (fakehub has no secondary limit on reads)."""
    return Github(
        auth=Auth.Token(token),
        base_url=hub.base_url,
        retry=None,
        seconds_between_requests=0,
        seconds_between_writes=0,
    )


def valid(schema_name: str, body: Any) -> list[str]:
    schema = {"$defs": SUBSET["$defs"], "$ref": f"#/$defs/{schema_name}"}
    validator = jsonschema.Draft202012Validator(schema)
    return [f"{list(e.path)}: {e.message[:120]}" for e in validator.iter_errors(body)]


def test_pygithub_files_edits_closes_and_lists_an_issue(hub):
    repo = gh(hub).get_repo(REPO)
    highest_pr = max(r.pr for r in hub.history().runs if r.pr is not None)
    label = repo.create_label("ciflake", "0e8a16", "filed by ciflake")
    issue = repo.create_issue("oom in e2e", body="<!-- ciflake:abc -->\nbody", labels=["ciflake"])
    assert issue.number > max(highest_pr, 8900)  # after every PR number: one sequence
    assert issue.user.login == BOT_LOGIN and issue.state == "open" and issue.pull_request is None
    assert [lb.name for lb in issue.labels] == ["ciflake"] and label.color == "0e8a16"
    again = repo.get_issue(issue.number)
    assert (again.title, again.body) == ("oom in e2e", "<!-- ciflake:abc -->\nbody")
    issue.edit(body="new body", state="closed", state_reason="not_planned")
    closed = repo.get_issue(issue.number)
    assert (closed.state, closed.state_reason, closed.body) == ("closed", "not_planned", "new body")
    assert closed.closed_by.login == BOT_LOGIN and closed.closed_at is not None
    closed.edit(state="open")
    reopened = repo.get_issue(issue.number)
    assert (reopened.state, reopened.state_reason, reopened.closed_at) == ("open", "reopened", None)
    events = [(e.event, e.actor.login) for e in reopened.get_events()]
    assert events == [("closed", BOT_LOGIN), ("reopened", BOT_LOGIN)]
    listed = repo.get_issues(state="all", labels=[repo.get_label("ciflake")], creator=BOT_LOGIN)
    assert [i.number for i in listed] == [issue.number]
    second = repo.create_issue("second")
    assert second.number == issue.number + 1


def test_the_pull_requests_answer_as_before_and_are_listed_with_their_key(hub):
    client = Client(hub)
    pr = client.call("GET", "/issues/7357").json()
    assert pr["title"] == "Pull request #7357" and "pull_request" in pr
    assert client.call("GET", "/issues/99999").status_code == 404  # never handed out
    filed = client.file("an issue")
    listed = client.call("GET", "/issues", per_page=100).json()
    pulls = [item for item in listed if "pull_request" in item]
    assert pulls and len(pulls) == len(listed) - 1
    assert [i["number"] for i in listed if "pull_request" not in i] == [filed["number"]]
    pushed = {r.pr for r in hub.history().runs if r.pr is not None}
    assert {p["number"] for p in pulls} <= pushed | {7357}


def test_listing_filters_as_github_does(hub):
    client, person = Client(hub), Client(hub, PERSON_TOKEN)
    both = client.file("both", labels=["ciflake", {"name": "oom"}])
    only = client.file("only ciflake", labels=["ciflake"])
    theirs = person.file("a person's", labels=["ciflake", "oom"])
    shut = client.file("closed", labels=["ciflake", "oom"])
    client.call("PATCH", f"/issues/{shut['number']}", {"state": "closed"})

    def numbers(**params: Any) -> list[int]:
        items = client.call("GET", "/issues", per_page=100, **params).json()
        return [i["number"] for i in items if "pull_request" not in i]

    assert numbers(labels="ciflake,oom") == [theirs["number"], both["number"]]  # AND, open
    assert numbers(labels="ciflake,OOM", state="all") == [
        shut["number"],
        theirs["number"],
        both["number"],
    ]
    assert numbers(state="closed") == [shut["number"]]
    assert numbers(labels="ciflake", creator=PERSON) == [theirs["number"]]
    assert numbers(labels="ciflake", direction="asc") == [both["number"], only["number"]] + [
        theirs["number"]
    ]
    since = client.call("GET", f"/issues/{shut['number']}").json()["updated_at"]
    assert numbers(state="all", since=since, labels="ciflake") == [shut["number"]]
    assert client.call("GET", "/issues", state="every").status_code == 422
    assert client.call("GET", "/issues", since="yesterday").status_code == 422


def test_listing_pages_with_a_link_header_and_at_most_100(hub):
    client = Client(hub)
    hub.admin("POST", "content_limit", {"per_minute": None})
    for n in range(3):
        client.file(f"issue {n}", labels=["x"])
    for _ in range(60):  # with the pull requests, more than a page of 100
        client.file("filler")
    first = client.call("GET", "/issues", labels="x", per_page=2)
    assert [i["title"] for i in first.json()] == ["issue 2", "issue 1"]
    assert 'rel="next"' in first.headers["Link"] and "labels=x" in first.headers["Link"]
    second = client.call("GET", "/issues", labels="x", per_page=2, page=2)
    assert [i["title"] for i in second.json()] == ["issue 0"]
    assert len(client.call("GET", "/issues", state="all", per_page=500).json()) == 100


def test_labels_are_created_when_missing_and_a_duplicate_is_refused(hub):
    client = Client(hub)
    made = client.call("POST", "/labels", {"name": "ciflake", "color": "#0E8A16"})
    assert made.status_code == 201 and made.json()["color"] == "0e8a16"
    again = client.call("POST", "/labels", {"name": "CIFLAKE", "color": "ffffff"})
    assert again.status_code == 422 and again.json()["errors"][0]["code"] == "already_exists"
    assert client.call("POST", "/labels", {"name": "no colour"}).status_code == 422
    issue = client.file(labels=["ciflake", "oom"])  # oom does not exist yet
    oom = client.call("GET", "/labels/oom").json()
    assert (oom["color"], oom["description"]) == ("ededed", None)
    added = client.call("POST", f"/issues/{issue['number']}/labels", {"labels": ["gpu hang"]})
    assert [lb["name"] for lb in added.json()] == ["ciflake", "oom", "gpu hang"]
    assert client.call("GET", "/labels/gpu hang").json()["color"] == "ededed"
    replaced = client.call("PATCH", f"/issues/{issue['number']}", {"labels": []}).json()
    assert replaced["labels"] == []  # PATCH labels replaces the set
    assert client.call("GET", "/labels/absent").status_code == 404


def test_state_reason_is_ignored_unless_the_state_changes(hub):
    client = Client(hub)
    number = client.file()["number"]
    kept = client.call("PATCH", f"/issues/{number}", {"state_reason": "not_planned"}).json()
    assert (kept["state"], kept["state_reason"]) == ("open", None)
    done = client.call("PATCH", f"/issues/{number}", {"state": "closed"}).json()
    assert done["state_reason"] == "completed"
    same = client.call(
        "PATCH", f"/issues/{number}", {"state": "closed", "state_reason": "not_planned"}
    ).json()
    assert same["state_reason"] == "completed"
    assert client.call("PATCH", f"/issues/{number}", {"state": "shut"}).status_code == 422
    assert client.call("GET", f"/issues/{number}/events").json()[0]["state_reason"] == "completed"


def test_a_person_closes_as_not_planned_and_copies_a_marker(hub):
    """The "another author" of the sticky comment's tests, for issues: a second token."""
    ours, person = Client(hub), Client(hub, PERSON_TOKEN)
    number = ours.file(body="<!-- ciflake:1 -->")["number"]
    person.call("PATCH", f"/issues/{number}", {"state": "closed", "state_reason": "not_planned"})
    copy = person.file("copied", body="<!-- ciflake:1 -->")
    closed = ours.call("GET", f"/issues/{number}").json()
    events = ours.call("GET", f"/issues/{number}/events").json()
    assert closed["closed_by"]["login"] == PERSON and closed["user"]["login"] == BOT_LOGIN
    assert [(e["event"], e["actor"]["login"], e["state_reason"]) for e in events] == [
        ("closed", PERSON, "not_planned")
    ]
    assert copy["user"]["login"] == PERSON and copy["user"]["type"] == "User"
    hub.admin("POST", "users", {"token": "ghs-workflow", "login": ACTIONS_BOT})
    bot = Client(hub, "ghs-workflow").file("by the workflow")
    assert (bot["user"]["login"], bot["user"]["type"]) == (ACTIONS_BOT, "Bot")
    for problems in (
        valid("issue", closed),
        *(valid("state-change-issue-event", e) for e in events),
    ):
        assert not problems, problems


def test_a_token_without_issues_write_is_refused_every_write(hub):
    client = Client(hub)
    number = client.file()["number"]
    assert hub.admin("POST", "permissions", {"issues": False}) == {"checks": True, "issues": False}
    writes = [
        client.call("POST", "/issues", {"title": "t"}),
        client.call("PATCH", f"/issues/{number}", {"state": "closed"}),
        client.call("POST", f"/issues/{number}/labels", ["x"]),
        client.call("POST", "/labels", {"name": "x", "color": "ffffff"}),
        client.call("POST", f"/issues/{number}/comments", {"body": "x"}),
    ]
    for answer in writes:
        assert answer.status_code == 403
        assert answer.json()["message"] == "Resource not accessible by integration"
        assert answer.headers["X-Accepted-GitHub-Permissions"] == "issues=write"
    assert client.call("GET", f"/issues/{number}").json()["state"] == "open"  # reads still work
    assert client.call("POST", "/issues/7357/comments", {"body": "x"}).status_code == 201  # a PR


def test_creating_too_fast_meets_the_secondary_limit(hub):
    client, person = Client(hub), Client(hub, PERSON_TOKEN)
    assert hub.admin("POST", "content_limit", {"per_minute": 2}) == {
        "per_minute": 2,
        "retry_after": None,
    }
    client.file(), client.file()
    blocked = client.call("POST", "/issues", {"title": "third"})
    assert blocked.status_code == 403 and blocked.json()["message"] == SECONDARY
    assert "Retry-After" not in blocked.headers  # often absent on github.com
    assert person.call("POST", "/issues", {"title": "theirs"}).status_code == 201  # per user
    hub.admin("POST", "content_limit", {"retry_after": 30})
    assert client.call("POST", "/issues", {"title": "t"}).headers["Retry-After"] == "30"
    listed = client.call("GET", "/issues", creator=BOT_LOGIN).json()
    assert [i["title"] for i in listed] == ["t", "t"]  # the refused ones were not filed


def test_titles_and_bodies_over_github_limits_are_refused(hub):
    client = Client(hub)
    long_body = client.call("POST", "/issues", {"title": "t", "body": "x" * 65_537})
    assert long_body.status_code == 422
    assert long_body.json()["errors"] == [
        {
            "resource": "Issue",
            "code": "custom",
            "field": "body",
            "message": "body is too long (maximum is 65536 characters)",
        }
    ]
    assert client.call("POST", "/issues", {"title": "t" * 257}).status_code == 422
    assert client.call("POST", "/issues", {"body": "no title"}).status_code == 422
    fits = client.file("t" * 256, body="x" * 65_536)
    edit = client.call("PATCH", f"/issues/{fits['number']}", {"body": "y" * 65_537})
    assert edit.status_code == 422
    assert client.call("GET", f"/issues/{fits['number']}").json()["body"] == "x" * 65_536


def test_issues_turned_off_answer_410_and_the_repository_says_so(hub):
    client = Client(hub)
    number = client.file()["number"]
    hub.admin("POST", "issues", {"enabled": False})
    assert client.call("GET", "").json()["has_issues"] is False
    for answer in (
        client.call("POST", "/issues", {"title": "t"}),
        client.call("GET", f"/issues/{number}"),
        client.call("GET", "/issues"),
    ):
        assert answer.status_code == 410
        assert answer.json()["message"] == "Issues are disabled for this repo"
