"""GitHub's JSON shapes for the objects fakehub serves, with absolute URLs on its own address.

Field names and required fields follow GitHub's OpenAPI description (see `openapi/`); every
field PyGithub may read is present (null where GitHub has no value), so lazy objects never
trigger a completion request.

Over 350 lines on purpose: ``Shapes`` is one builder whose payloads nest (a run embeds the
repository and its actor, a check run the Actions app) and share one base URL and repository;
split by resource, every part would need all the others.
"""

from __future__ import annotations

import base64
import hashlib
import uuid
from datetime import datetime
from typing import Any
from urllib.parse import quote

from fakehub.annotations import Note
from fakehub.catalog import DEFAULT_DESCRIPTION, DEFAULT_IDS, WorkflowSpec
from fakehub.records import Attempt, Job, Run
from fakehub.steps import plan

BOT_LOGIN = "ciflake-bot"  # the default token's user
# Who a workflow's GITHUB_TOKEN writes as (its comments' `user`); its id is github.com's.
ACTIONS_BOT, ACTIONS_BOT_ID = "github-actions[bot]", 41898282
# The app behind every Actions check run, as GitHub shows it (`performed_via_github_app` and
# check runs' `app` on api.github.com); its html_url is moved onto fakehub's address.
ACTIONS_APP_PERMISSIONS = {
    "actions": "write",
    "administration": "read",
    "attestations": "write",
    "checks": "write",
    "contents": "write",
    "deployments": "write",
    "discussions": "write",
    "issues": "write",
    "merge_queues": "write",
    "metadata": "read",
    "packages": "write",
    "pages": "write",
    "pull_requests": "write",
    "repository_hooks": "write",
    "repository_projects": "write",
    "security_events": "write",
    "statuses": "write",
    "vulnerability_alerts": "read",
}
ACTIONS_APP_EVENTS = (
    "branch_protection_rule",
    "check_run",
    "check_suite",
    "create",
    "delete",
    "deployment",
    "deployment_status",
    "discussion",
    "discussion_comment",
    "fork",
    "gollum",
    "issues",
    "issue_comment",
    "label",
    "merge_group",
    "milestone",
    "page_build",
    "project",
    "project_card",
    "project_column",
    "public",
    "pull_request",
    "pull_request_review",
    "pull_request_review_comment",
    "push",
    "registry_package",
    "release",
    "repository",
    "repository_dispatch",
    "status",
    "watch",
    "workflow_dispatch",
    "workflow_run",
)


def iso(at: datetime | None) -> str | None:
    """GitHub's ``%Y-%m-%dT%H:%M:%SZ``, formatted by hand: strftime was a tenth of fakehub's
    CPU in a collect (every job's steps carry two times), this about a quarter of it."""
    if at is None:
        return None
    return "%04d-%02d-%02dT%02d:%02d:%02dZ" % (  # noqa: UP031 (twice an f-string's speed)
        at.year,
        at.month,
        at.day,
        at.hour,
        at.minute,
        at.second,
    )


def node_id(prefix: str, number: int) -> str:
    return prefix + base64.b64encode(f"0:{number}".encode()).decode().rstrip("=")


class Shapes:
    """Builds payloads for one repository served at `base` (e.g. http://127.0.0.1:PORT), whose
    web pages (every `html_url`) are at `web`, by default `base` too. `description` and `ids`
    (the bases of its issue and pull-request ids) are its catalog's; verl's by default."""

    def __init__(
        self,
        base: str,
        owner: str,
        name: str,
        repo_id: int,
        created: str,
        web: str | None = None,
        description: str = DEFAULT_DESCRIPTION,
        ids: dict[str, int] | None = None,
    ) -> None:
        self.base, self.owner, self.name, self.repo_id, self.created = (
            base,
            owner,
            name,
            repo_id,
            created,
        )
        self.description = description
        self.ids = {**DEFAULT_IDS, **(ids or {})}
        self.full = f"{owner}/{name}"
        self.api = f"{base}/repos/{owner}/{name}"
        self.web = web or base
        self.html = f"{self.web}/{owner}/{name}"

    def user(self, login: str, user_id: int) -> dict[str, Any]:
        url = f"{self.base}/users/{login}"
        return {
            "login": login,
            "id": user_id,
            "node_id": node_id("U_", user_id),
            "avatar_url": f"{self.base}/avatars/u/{user_id}?v=4",
            "gravatar_id": "",
            "url": url,
            "html_url": f"{self.web}/{login}",
            "followers_url": f"{url}/followers",
            "following_url": f"{url}/following{{/other_user}}",
            "gists_url": f"{url}/gists{{/gist_id}}",
            "starred_url": f"{url}/starred{{/owner}}{{/repo}}",
            "subscriptions_url": f"{url}/subscriptions",
            "organizations_url": f"{url}/orgs",
            "repos_url": f"{url}/repos",
            "events_url": f"{url}/events{{/privacy}}",
            "received_events_url": f"{url}/received_events",
            "type": "User",
            "user_view_type": "public",
            "site_admin": False,
        }

    def actor(self, login: str) -> dict[str, Any]:
        return self.user(login, 1_000_000 + sum(map(ord, login)) * 7919)

    def account(self, login: str) -> dict[str, Any]:
        """The `user` of something a token wrote: the default user, the Actions bot or another."""
        if login == BOT_LOGIN:
            return self.user(BOT_LOGIN, 190_000_001)
        if login == ACTIONS_BOT:
            bot = self.user(ACTIONS_BOT, ACTIONS_BOT_ID)
            return {**bot, "html_url": f"{self.web}/apps/github-actions", "type": "Bot"}
        return self.actor(login)

    def authenticated_user(self, login: str) -> dict[str, Any]:
        """`GET /user` for a user token (OpenAPI `public-user`)."""
        return {
            **self.account(login),
            "name": None,
            "company": None,
            "blog": "",
            "location": None,
            "email": None,
            "hireable": None,
            "bio": None,
            "twitter_username": None,
            "public_repos": 0,
            "public_gists": 0,
            "followers": 0,
            "following": 0,
            "created_at": "2020-01-01T00:00:00Z",
            "updated_at": "2025-10-01T00:00:00Z",
        }

    def repository(self, full: bool = False, has_issues: bool = True) -> dict[str, Any]:
        a = self.api
        repo: dict[str, Any] = {
            "id": self.repo_id,
            "node_id": node_id("R_", self.repo_id),
            "name": self.name,
            "full_name": self.full,
            "private": False,
            "owner": {**self.user(self.owner, 175_000_000), "type": "Organization"},
            "html_url": self.html,
            "description": self.description,
            "fork": False,
            "url": a,
            "forks_url": f"{a}/forks",
            "keys_url": f"{a}/keys{{/key_id}}",
            "collaborators_url": f"{a}/collaborators{{/collaborator}}",
            "teams_url": f"{a}/teams",
            "hooks_url": f"{a}/hooks",
            "issue_events_url": f"{a}/issues/events{{/number}}",
            "events_url": f"{a}/events",
            "assignees_url": f"{a}/assignees{{/user}}",
            "branches_url": f"{a}/branches{{/branch}}",
            "tags_url": f"{a}/tags",
            "blobs_url": f"{a}/git/blobs{{/sha}}",
            "git_tags_url": f"{a}/git/tags{{/sha}}",
            "git_refs_url": f"{a}/git/refs{{/sha}}",
            "trees_url": f"{a}/git/trees{{/sha}}",
            "statuses_url": f"{a}/statuses/{{sha}}",
            "languages_url": f"{a}/languages",
            "stargazers_url": f"{a}/stargazers",
            "contributors_url": f"{a}/contributors",
            "subscribers_url": f"{a}/subscribers",
            "subscription_url": f"{a}/subscription",
            "commits_url": f"{a}/commits{{/sha}}",
            "git_commits_url": f"{a}/git/commits{{/sha}}",
            "comments_url": f"{a}/comments{{/number}}",
            "issue_comment_url": f"{a}/issues/comments{{/number}}",
            "contents_url": f"{a}/contents/{{+path}}",
            "compare_url": f"{a}/compare/{{base}}...{{head}}",
            "merges_url": f"{a}/merges",
            "archive_url": f"{a}/{{archive_format}}{{/ref}}",
            "downloads_url": f"{a}/downloads",
            "issues_url": f"{a}/issues{{/number}}",
            "pulls_url": f"{a}/pulls{{/number}}",
            "milestones_url": f"{a}/milestones{{/number}}",
            "notifications_url": f"{a}/notifications{{?since,all,participating}}",
            "labels_url": f"{a}/labels{{/name}}",
            "releases_url": f"{a}/releases{{/id}}",
            "deployments_url": f"{a}/deployments",
        }
        if not full:
            return repo
        return {
            **repo,
            "created_at": self.created,
            "updated_at": self.created,
            "pushed_at": self.created,
            "git_url": f"git://127.0.0.1/{self.full}.git",
            "ssh_url": f"git@127.0.0.1:{self.full}.git",
            "clone_url": f"{self.html}.git",
            "svn_url": self.html,
            "homepage": None,
            "size": 48213,
            "stargazers_count": 17000,
            "watchers_count": 17000,
            "language": "Python",
            "has_issues": has_issues,
            "has_projects": True,
            "has_downloads": True,
            "has_wiki": True,
            "has_pages": False,
            "has_discussions": False,
            "forks_count": 2900,
            "mirror_url": None,
            "archived": False,
            "disabled": False,
            "open_issues_count": 1500,
            "license": None,
            "allow_forking": True,
            "is_template": False,
            "web_commit_signoff_required": False,
            "topics": [],
            "visibility": "public",
            "forks": 2900,
            "open_issues": 1500,
            "watchers": 17000,
            "default_branch": "main",
            "network_count": 2900,
            "subscribers_count": 120,
            "permissions": {
                "admin": False,
                "maintain": False,
                "push": False,
                "triage": False,
                "pull": True,
            },
        }

    def workflow(self, wf: WorkflowSpec, at: datetime) -> dict[str, Any]:
        """The workflow as the workflows API shows it at ``at``: its `state` then (a deleted
        file leaves it as it was, as on GitHub), updated when its file or state last changed."""
        created = iso(wf.present[0][0])
        file = wf.path.rsplit("/", 1)[1]
        changes = [t for t, _ in (*wf.present, *wf.states) if t <= at]
        return {
            "id": wf.id,
            "node_id": node_id("W_", wf.id),
            "name": wf.name,
            "path": wf.path,
            "state": wf.state(at),
            "created_at": created,
            "updated_at": iso(max([wf.present[0][0], *changes])),
            "url": f"{self.api}/actions/workflows/{wf.id}",
            "html_url": f"{self.html}/blob/main/{wf.path}",
            "badge_url": f"{self.html}/workflows/{file}/badge.svg",
        }

    def file_content(self, path: str, text: bytes) -> dict[str, Any]:
        """A file as the contents API serves it (`GET /repos/{o}/{r}/contents/{path}`): its
        bytes base64 in lines of 60, as GitHub wraps them, and its git blob sha."""
        encoded = base64.b64encode(text).decode()
        wrapped = "\n".join(encoded[i : i + 60] for i in range(0, len(encoded), 60)) + "\n"
        entry = self.directory_entry(path, text)
        return {**entry, "encoding": "base64", "content": wrapped}

    def directory_entry(self, path: str, text: bytes) -> dict[str, Any]:
        """One file of a directory listing (the contents API on a directory): no content."""
        sha = hashlib.sha1(b"blob %d\0" % len(text) + text).hexdigest()
        return {
            "type": "file",
            "size": len(text),
            "name": path.rsplit("/", 1)[-1],
            "path": path,
            "sha": sha,
            "url": f"{self.api}/contents/{path}",
            "git_url": f"{self.api}/git/blobs/{sha}",
            "html_url": f"{self.html}/blob/{sha}/{path}",
            "download_url": None,
            "_links": {
                "self": f"{self.api}/contents/{path}",
                "git": f"{self.api}/git/blobs/{sha}",
                "html": f"{self.html}/blob/{sha}/{path}",
            },
        }

    def run(
        self, run: Run, attempt: Attempt, exclude_prs: bool = False, via_attempt: bool = False
    ) -> dict[str, Any]:
        """A workflow run as the runs list and `/runs/{id}` show it, or as one attempt."""
        url = f"{self.api}/actions/runs/{run.id}"
        at = f"{url}/attempts/{attempt.number}"
        latest = not via_attempt
        suite = run.id * 3 + 11
        return {
            "id": run.id,
            "name": run.workflow.path if run.invalid else run.workflow.name,
            "node_id": node_id("WFR_", run.id),
            "head_branch": run.branch,
            "head_sha": run.sha,
            "path": run.workflow.path,
            "display_title": run.title,
            "run_number": run.number,
            "event": run.event,
            "status": attempt.status,
            "conclusion": attempt.conclusion,
            "workflow_id": run.workflow.id,
            "check_suite_id": suite,
            "check_suite_node_id": node_id("CS_", suite),
            "url": url,
            "html_url": f"{self.html}/actions/runs/{run.id}"
            + ("" if latest else f"/attempts/{attempt.number}"),
            "pull_requests": [] if exclude_prs or run.pr is None else [self._pr_minimal(run)],
            "created_at": iso(run.created_at),
            "updated_at": iso(attempt.updated_at),
            "actor": self.actor(run.actor),
            "run_attempt": attempt.number,
            "referenced_workflows": [],
            "run_started_at": iso(attempt.created_at),
            "triggering_actor": self.actor(run.actor),
            "jobs_url": f"{at}/jobs" if not latest else f"{url}/jobs",
            "logs_url": f"{at}/logs" if not latest else f"{url}/logs",
            "check_suite_url": f"{self.api}/check-suites/{suite}",
            "artifacts_url": f"{url}/artifacts",
            "cancel_url": f"{url}/cancel",
            "rerun_url": f"{url}/rerun",
            "previous_attempt_url": f"{url}/attempts/{attempt.number - 1}"
            if attempt.number > 1
            else None,
            "workflow_url": f"{self.api}/actions/workflows/{run.workflow.id}",
            "head_commit": {
                "id": run.sha,
                "tree_id": run.sha[::-1],
                "message": run.title,
                "timestamp": iso(run.created_at),
                "author": {"name": run.actor, "email": f"{run.actor}@users.noreply.github.com"},
                "committer": {"name": "GitHub", "email": "noreply@github.com"},
            },
            "repository": self.repository(),
            "head_repository": self.repository(),
            "head_repository_id": self.repo_id,
        }

    def _pr_minimal(self, run: Run) -> dict[str, Any]:
        repo = {"id": self.repo_id, "url": self.api, "name": self.name}
        return {
            "url": f"{self.api}/pulls/{run.pr}",
            "id": self.ids["pull"] + (run.pr or 0),
            "number": run.pr,
            "head": {"ref": run.branch, "sha": run.sha, "repo": repo},
            "base": {"ref": "main", "sha": run.sha[::-1], "repo": repo},
        }

    def job(self, job: Job, run: Run) -> dict[str, Any]:
        url = f"{self.api}/actions/jobs/{job.id}"
        hosted = job.runner_label.startswith("ubuntu")
        group = (
            (None, None)
            if job.runner_name is None
            else ((0, "GitHub Actions") if hosted else (1, "Default"))
        )
        return {
            "id": job.id,
            "run_id": job.run_id,
            "workflow_name": run.workflow.name,
            "head_branch": run.branch,
            "run_url": f"{self.api}/actions/runs/{run.id}",
            "run_attempt": job.attempt,
            "node_id": node_id("CR_", job.id),
            "head_sha": run.sha,
            "url": url,
            "html_url": f"{self.html}/actions/runs/{run.id}/job/{job.id}",
            "status": job.status,
            "conclusion": job.conclusion,
            "created_at": iso(job.created_at),
            "started_at": iso(job.started_at or job.created_at),
            "completed_at": iso(job.completed_at),
            "name": job.spec.name,
            "steps": [
                {
                    "name": s.name,
                    "status": s.status,
                    "conclusion": s.conclusion,
                    "number": s.number,
                    "started_at": iso(s.started_at),
                    "completed_at": iso(s.completed_at),
                }
                for s in plan(job)
            ],
            "check_run_url": f"{self.api}/check-runs/{job.id}",
            "labels": [job.runner_label]
            if not job.runner_label.startswith("npu")
            else ["self-hosted", job.runner_label],
            "runner_id": job.runner_id,
            "runner_name": job.runner_name,
            "runner_group_id": group[0],
            "runner_group_name": group[1],
        }

    def actions_app(self) -> dict[str, Any]:
        """The "GitHub Actions" app (id 15368), owned by the github organization."""
        return {
            "id": 15368,
            "slug": "github-actions",
            "node_id": "MDM6QXBwMTUzNjg=",
            "owner": {**self.user("github", 9919), "type": "Organization"},
            "name": "GitHub Actions",
            "description": "Automate your workflow from idea to production",
            "external_url": "https://help.github.com/en/actions",
            "html_url": f"{self.web}/apps/github-actions",
            "created_at": "2018-07-30T09:30:17Z",
            "updated_at": "2024-04-10T20:33:16Z",
            "permissions": dict(ACTIONS_APP_PERMISSIONS),
            "events": list(ACTIONS_APP_EVENTS),
        }

    def check_run(self, job: Job, run: Run, annotations_count: int) -> dict[str, Any]:
        """The check run of an Actions job: GitHub gives both the same id (and node id)."""
        url = f"{self.api}/check-runs/{job.id}"
        html = f"{self.html}/actions/runs/{run.id}/job/{job.id}"
        return {
            "id": job.id,
            "name": job.spec.name,
            "node_id": node_id("CR_", job.id),
            "head_sha": run.sha,
            "external_id": str(uuid.uuid5(uuid.NAMESPACE_URL, url)),
            "url": url,
            "html_url": html,
            "details_url": html,
            "status": job.status,
            "conclusion": job.conclusion,
            "started_at": iso(job.started_at or job.created_at),
            "completed_at": iso(job.completed_at),
            "output": {
                "title": None,
                "summary": None,
                "text": None,
                "annotations_count": annotations_count,
                "annotations_url": f"{url}/annotations",
            },
            "check_suite": {"id": run.id * 3 + 11},
            "app": self.actions_app(),
            "pull_requests": [],
        }

    def annotation(self, note: Note, run: Run) -> dict[str, Any]:
        """One check-run annotation; Actions never sets columns or raw details."""
        return {
            "path": note.path,
            "blob_href": f"{self.html}/blob/{run.sha}/{note.path}",
            "start_line": note.start_line,
            "end_line": note.end_line,
            "start_column": None,
            "end_column": None,
            "annotation_level": note.level,
            "title": note.title,
            "message": note.message,
            "raw_details": "",
        }

    def issue_comment(self, comment: dict[str, Any]) -> dict[str, Any]:
        cid = comment["id"]
        return {
            "id": cid,
            "node_id": node_id("IC_", cid),
            "url": f"{self.api}/issues/comments/{cid}",
            "html_url": f"{self.html}/issues/{comment['issue']}#issuecomment-{cid}",
            "body": comment["body"],
            "user": self.account(comment.get("login", BOT_LOGIN)),
            "created_at": comment["created_at"],
            "updated_at": comment["updated_at"],
            "issue_url": f"{self.api}/issues/{comment['issue']}",
            "author_association": "NONE",
            "performed_via_github_app": None,
        }

    def _issue_links(self, number: int) -> dict[str, Any]:
        """What every issue-shaped payload (an issue, or a pull request seen as one) shares."""
        url = f"{self.api}/issues/{number}"
        return {
            "id": self.ids["issue"] + number,
            # verl's issues have always had node ids of their numbers; another repository's
            # are moved by its id base's distance from verl's, so that none is shared
            "node_id": node_id("I_", number + self.ids["issue"] - DEFAULT_IDS["issue"]),
            "url": url,
            "repository_url": self.api,
            "labels_url": f"{url}/labels{{/name}}",
            "comments_url": f"{url}/comments",
            "events_url": f"{url}/events",
            "number": number,
            "assignee": None,
            "assignees": [],
            "milestone": None,
            "locked": False,
            "active_lock_reason": None,
        }

    def issue(self, number: int, comments: int, at: str) -> dict[str, Any]:
        """A pull request as the issues routes show it (with its `pull_request` key)."""
        return {
            **self._issue_links(number),
            "html_url": f"{self.html}/pull/{number}",
            "state": "open",
            "title": f"Pull request #{number}",
            "body": None,
            "user": self.actor("Begunner"),
            "labels": [],
            "comments": comments,
            "closed_at": None,
            "created_at": at,
            "updated_at": at,
            "author_association": "MEMBER",
            "pull_request": {
                "url": f"{self.api}/pulls/{number}",
                "html_url": f"{self.html}/pull/{number}",
                "diff_url": f"{self.html}/pull/{number}.diff",
                "patch_url": f"{self.html}/pull/{number}.patch",
                "merged_at": None,
            },
        }

    def stored_issue(
        self, issue: dict[str, Any], labels: list[dict[str, Any]], comments: int
    ) -> dict[str, Any]:
        """An issue filed through the API (OpenAPI `issue`): `closed_by` names who closed it
        last, `state_reason` why (completed, not_planned, duplicate; reopened once reopened)."""
        number = issue["number"]
        closer = issue["closed_by"]
        return {
            **self._issue_links(number),
            "html_url": f"{self.html}/issues/{number}",
            "timeline_url": f"{self.api}/issues/{number}/timeline",
            "state": issue["state"],
            "state_reason": issue["state_reason"],
            "title": issue["title"],
            "body": issue["body"],
            "user": self.account(issue["login"]),
            "labels": [self.label(label) for label in labels],
            "comments": comments,
            "closed_at": issue["closed_at"],
            "closed_by": None if closer is None else self.account(closer),
            "created_at": issue["created_at"],
            "updated_at": issue["updated_at"],
            "author_association": "NONE",
            "performed_via_github_app": None,
        }

    def label(self, label: dict[str, Any]) -> dict[str, Any]:
        """A repository's label (OpenAPI `label`); its URL carries the name, percent-encoded."""
        return {
            "id": label["id"],
            "node_id": node_id("LA_", label["id"]),
            "url": f"{self.api}/labels/{quote(label['name'], safe='')}",
            "name": label["name"],
            "description": label["description"],
            "color": label["color"],
            "default": False,
        }

    def issue_event(self, event: dict[str, Any]) -> dict[str, Any]:
        """A closed or reopened event (OpenAPI `state-change-issue-event`)."""
        return {
            "id": event["id"],
            "node_id": node_id("CE_" if event["event"] == "closed" else "REE_", event["id"]),
            "url": f"{self.api}/issues/events/{event['id']}",
            "actor": self.account(event["login"]),
            "event": event["event"],
            "commit_id": None,
            "commit_url": None,
            "created_at": event["created_at"],
            "state_reason": event["state_reason"],
            "performed_via_github_app": None,
        }

    @staticmethod
    def rate_limit(limit: int, remaining: int, reset: int) -> dict[str, Any]:
        core = {"limit": limit, "remaining": remaining, "reset": reset, "used": limit - remaining}
        return {
            "resources": {
                "core": core,
                "search": {"limit": 30, "remaining": 30, "reset": reset, "used": 0},
                "graphql": {"limit": 5000, "remaining": 5000, "reset": reset, "used": 0},
            },
            "rate": core,
        }
