"""GitHub REST routes for one repository: workflows, runs, attempts, jobs, logs, comments, and
the issues routes of its `fakehub.issues.IssueTracker`.

Each handler returns a `Response`; rate limits, ETags, faults and auth are the app's business.
A little over 350 lines on purpose: `RepoApi` is one route table over one history and its
comments, and the helpers above it are what its routes parse and check (the `created` filter,
the log URL's signature that `fakehub.blob` verifies).
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import re
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any

from fakehub.annotations import job_notes
from fakehub.catalog import WorkflowSpec, parse_time
from fakehub.history import History
from fakehub.issues import LOGIN_KEY, NO_PERMISSION, IssueTracker, too_long
from fakehub.payloads import ACTIONS_BOT, BOT_LOGIN, Shapes, iso
from fakehub.ratelimit import ContentLimit
from fakehub.records import Job, Run
from fakehub.steps import test_step_name
from fakehub.web import Request, Response, error, json_response, paginate
from fakehub.workflow_files import TEST_KINDS, render

WORKFLOWS_DIR = ".github/workflows"
RETENTION = timedelta(days=90)  # job logs (the default retention period)
# "GitHub archives checks data after 400 days and deletes records 30 days after they are
# archived" (GitHub changelog, December 2022): jobs, steps, annotations. The run stays listed.
CHECKS_RETENTION_DAYS = 400
RESULT_CAP = 1000  # results a filtered listing serves: GitHub's search cap
CAPPED_FILTERS = ("actor", "branch", "check_suite_id", "created", "event", "head_sha", "status")
RUN_STATUSES = ("completed", "in_progress", "queued", "requested", "waiting", "pending")
LOG_DOCS = "https://docs.github.com/rest/actions/workflow-jobs#download-job-logs-for-a-workflow-run"
Handler = Callable[..., Response]
CHECKS_DOCS = "https://docs.github.com/rest/checks/runs#list-check-run-annotations"
COMMENT_DOCS = "https://docs.github.com/rest/issues/comments#create-an-issue-comment"
USER_DOCS = "https://docs.github.com/rest/users/users#get-the-authenticated-user"
COMMENT_ID_BASE = 3_500_000_000  # the first comment is one more


def log_signature(secret: str, job_id: int, issued: str) -> str:
    """The blob URL's signature over the job and the moment (wall clock) it was issued."""
    message = f"{job_id}:{issued}".encode()
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()[:32]


def created_range(text: str) -> tuple[datetime | None, datetime | None]:
    """GitHub search syntax for `created`: >=, >, <=, <, a..b, a..*, *..b or a single day."""
    day = timedelta(days=1)

    def bound(value: str, upper: bool) -> datetime | None:
        if value == "*":
            return None
        at = parse_time(value)
        return at + day - timedelta(microseconds=1) if upper and "T" not in value else at

    if ".." in text:
        lo, hi = text.split("..", 1)
        return bound(lo, False), bound(hi, True)
    for op in (">=", "<=", ">", "<"):
        if text.startswith(op):
            value = text[len(op) :]
            at = parse_time(value)
            whole = "T" not in value
            return {
                ">=": (at, None),
                "<=": (None, bound(value, True)),
                ">": ((at + day if whole else at + timedelta(seconds=1)), None),
                "<": (None, at - timedelta(microseconds=1)),
            }[op]
    return bound(text, False), bound(text, True)


def _file_name(workflow: WorkflowSpec) -> str:
    return workflow.path.rsplit("/", 1)[1]


def _file_text(workflow: WorkflowSpec, at: datetime) -> bytes:
    """The bytes of the workflow file at ``at``."""
    steps = {spec.id: test_step_name(spec) for spec in workflow.jobs if spec.kind in TEST_KINDS}
    return render(workflow, at, steps).encode()


def authenticated_user(shapes: Shapes, login: str) -> Response:
    """`GET /user`: the token's user, or GitHub's 403 for a workflow's GITHUB_TOKEN."""
    if login == ACTIONS_BOT:
        return error(403, NO_PERMISSION, USER_DOCS)
    return json_response(200, shapes.authenticated_user(login))


class RepoApi:
    """The routes of one repository, backed by its simulated history. `comment_ids` hands out
    comment ids; the repositories of one hub share it, as GitHub's ids are global."""

    def __init__(
        self,
        history: History,
        shapes: Shapes,
        blob_base: str,
        secret: str,
        comment_ids: Iterator[int] | None = None,
        content: ContentLimit | None = None,
    ) -> None:
        self.history, self.shapes, self.blob_base, self.secret = history, shapes, blob_base, secret
        self.comments: dict[int, list[dict[str, Any]]] = {}
        self.comment_by_id: dict[int, dict[str, Any]] = {}
        self.comment_ids = comment_ids or itertools.count(COMMENT_ID_BASE + 1)
        self.tracker = IssueTracker(history, shapes, self.comments, content or ContentLimit())
        self.log_overrides: dict[int, bytes] = {}  # job id -> bytes served instead of its log
        self.checks_readable = True  # False: the token lacks `checks: read` (admin permissions)
        self.checks_retention = timedelta(days=CHECKS_RETENTION_DAYS)
        # GitHub serves at most 1,000 results of a filtered run listing (admin result_cap)
        self.result_cap = RESULT_CAP
        self._sha_times: dict[str, datetime] = {}  # commit -> when (contents at a ref)
        self.routes: list[tuple[str, str, re.Pattern[str], Handler]] = [
            ("repo", "GET", re.compile(r""), self.repo),
            ("workflows", "GET", re.compile(r"/actions/workflows"), self.workflows),
            ("workflow", "GET", re.compile(r"/actions/workflows/([^/]+)"), self.workflow),
            ("workflow_runs", "GET", re.compile(r"/actions/workflows/([^/]+)/runs"), self.runs),
            ("runs", "GET", re.compile(r"/actions/runs"), self.runs),
            ("run", "GET", re.compile(r"/actions/runs/(\d+)"), self.run),
            ("attempt", "GET", re.compile(r"/actions/runs/(\d+)/attempts/(\d+)"), self.run),
            ("run_jobs", "GET", re.compile(r"/actions/runs/(\d+)/jobs"), self.jobs),
            (
                "attempt_jobs",
                "GET",
                re.compile(r"/actions/runs/(\d+)/attempts/(\d+)/jobs"),
                self.jobs,
            ),
            ("job", "GET", re.compile(r"/actions/jobs/(\d+)"), self.job),
            ("job_logs", "GET", re.compile(r"/actions/jobs/(\d+)/logs"), self.job_logs),
            ("check_run", "GET", re.compile(r"/check-runs/(\d+)"), self.check_run),
            (
                "check_run_annotations",
                "GET",
                re.compile(r"/check-runs/(\d+)/annotations"),
                self.check_run_annotations,
            ),
            ("contents", "GET", re.compile(r"/contents/(.+)"), self.contents),
            ("issues", "GET", re.compile(r"/issues"), self.tracker.list),
            ("create_issue", "POST", re.compile(r"/issues"), self.tracker.create),
            ("issue", "GET", re.compile(r"/issues/(\d+)"), self.tracker.get),
            ("edit_issue", "PATCH", re.compile(r"/issues/(\d+)"), self.tracker.update),
            ("issue_events", "GET", re.compile(r"/issues/(\d+)/events"), self.tracker.list_events),
            ("add_labels", "POST", re.compile(r"/issues/(\d+)/labels"), self.tracker.add_labels),
            ("create_label", "POST", re.compile(r"/labels"), self.tracker.create_label),
            ("label", "GET", re.compile(r"/labels/([^/]+)"), self.tracker.get_label),
            ("issue_comments", "GET", re.compile(r"/issues/(\d+)/comments"), self.list_comments),
            ("create_comment", "POST", re.compile(r"/issues/(\d+)/comments"), self.create_comment),
            ("comment", "GET", re.compile(r"/issues/comments/(\d+)"), self.get_comment),
            ("edit_comment", "PATCH", re.compile(r"/issues/comments/(\d+)"), self.edit_comment),
        ]

    def dispatch(self, request: Request, rest: str) -> tuple[str, Response]:
        """(route name, response) for a path relative to /repos/{owner}/{repo}."""
        for name, method, pattern, handler in self.routes:
            match = pattern.fullmatch(rest)
            if match and method == request.method:
                return name, handler(request, *match.groups())
        return "unknown", error(404, "Not Found")

    # ---- repository and workflows ---------------------------------------------------------

    def repo(self, request: Request) -> Response:
        payload = self.shapes.repository(full=True, has_issues=self.tracker.enabled)
        return json_response(200, payload)

    def workflows(self, request: Request) -> Response:
        items = [self.shapes.workflow(w, self.history.now) for w in self.history.workflows]
        page, link = paginate(items, request, f"{self.shapes.api}/actions/workflows")
        return json_response(200, {"total_count": len(items), "workflows": page}, link)

    def find_workflow(self, ref: str) -> WorkflowSpec | None:
        return next(
            (
                w
                for w in self.history.workflows
                if str(w.id) == ref or w.path.rsplit("/", 1)[1] == ref or w.path == ref
            ),
            None,
        )

    def workflow(self, request: Request, ref: str) -> Response:
        wf = self.find_workflow(ref)
        if wf is None:
            return error(404, "Not Found")
        return json_response(200, self.shapes.workflow(wf, self.history.now))

    # ---- runs -----------------------------------------------------------------------------

    def runs(self, request: Request, ref: str | None = None) -> Response:
        wf = self.find_workflow(ref) if ref is not None else None
        if ref is not None and wf is None:
            return error(404, "Not Found")
        lo = hi = None
        if request.arg("created"):
            try:
                lo, hi = created_range(request.arg("created") or "")
            except ValueError:
                return error(422, "Invalid created parameter")
        runs = self.history.between(wf.id if wf else None, lo, hi)
        filters = {k: request.arg(k) for k in CAPPED_FILTERS if request.arg(k) and k != "created"}
        if filters:
            runs = [r for r in runs if self._matches(r, filters)]
        runs = runs[::-1]
        exclude = request.arg("exclude_pull_requests") == "true"
        capped = any(request.arg(k) for k in CAPPED_FILTERS)
        base = f"{self.shapes.api}/actions/" + (f"workflows/{ref}/runs" if ref else "runs")
        page, link = paginate(runs, request, base, cap=self.result_cap if capped else None)
        body = [self.shapes.run(r, r.latest, exclude) for r in page]
        return json_response(200, {"total_count": len(runs), "workflow_runs": body}, link)

    @staticmethod
    def _matches(run: Run, filters: dict[str, str | None]) -> bool:
        attempt = run.latest
        fields = {
            "branch": run.branch,
            "event": run.event,
            "actor": run.actor,
            "head_sha": run.sha,
            "check_suite_id": str(run.id * 3 + 11),
        }
        for key, value in filters.items():
            if key == "status":
                actual = attempt.status if value in RUN_STATUSES else attempt.conclusion
            else:
                actual = fields[key]
            if actual != value:
                return False
        return True

    def run(self, request: Request, run_id: str, number: str | None = None) -> Response:
        run = self.history.run_by_id.get(int(run_id))
        if run is None or (number is not None and not 1 <= int(number) <= len(run.attempts)):
            return error(404, "Not Found")
        attempt = run.attempts[int(number) - 1] if number else run.latest
        exclude = request.arg("exclude_pull_requests") == "true"
        return json_response(200, self.shapes.run(run, attempt, exclude, number is not None))

    # ---- jobs and logs --------------------------------------------------------------------

    def archived(self, run: Run) -> bool:
        """Its checks data (jobs, steps, annotations) is gone; the run itself is still listed.
        What GitHub's jobs route answers then is undocumented: here, an empty list."""
        return run.created_at < self.history.now - self.checks_retention

    def jobs(self, request: Request, run_id: str, number: str | None = None) -> Response:
        run = self.history.run_by_id.get(int(run_id))
        if run is None or (number is not None and not 1 <= int(number) <= len(run.attempts)):
            return error(404, "Not Found")
        if self.archived(run):
            jobs: list[Job] = []
            url = f"{self.shapes.api}/actions/runs/{run.id}/jobs"
        elif number is not None:
            jobs = run.attempts[int(number) - 1].jobs
            url = f"{self.shapes.api}/actions/runs/{run.id}/attempts/{number}/jobs"
        else:
            every = request.arg("filter", "latest") == "all"
            jobs = [j for a in run.attempts for j in a.jobs] if every else run.latest.jobs
            url = f"{self.shapes.api}/actions/runs/{run.id}/jobs"
        page, link = paginate(jobs, request, url)
        body = [self.shapes.job(j, run) for j in page]
        return json_response(200, {"total_count": len(jobs), "jobs": body}, link)

    def job(self, request: Request, job_id: str) -> Response:
        job = self.history.job_by_id.get(int(job_id))
        if job is None or self.archived(self.history.run_by_id[job.run_id]):
            return error(404, "Not Found")
        return json_response(200, self.shapes.job(job, self.history.run_by_id[job.run_id]))

    def log_status(self, job: Job) -> str:
        """ok, expired (410) or missing (no runner ever took the job: it never had a log)."""
        if not (job.ran and job.status == "completed"):
            return "missing"
        return "expired" if job.completed_at < self.history.now - RETENTION else "ok"

    def job_logs(self, request: Request, job_id: str) -> Response:
        job = self.history.job_by_id.get(int(job_id))
        if job is None:
            return error(404, "Not Found")
        if self.log_status(job) == "expired":
            return json_response(
                410, {"message": "Server Error", "documentation_url": LOG_DOCS, "status": "410"}
            )
        expires = iso(self.history.now + timedelta(minutes=1))
        issued = f"{time.time():.3f}"  # the blob host refuses the URL BLOB_TTL seconds later
        location = (
            f"{self.blob_base}/actions-results/{job.run_id:x}/workflow-job-run-{job.id}/logs/job/"
            f"job-logs.txt?rsct=text%2Fplain&se={expires}&st={issued}"
            f"&sig={log_signature(self.secret, job.id, issued)}"
            "&sp=r&spr=http&sr=b&sv=2025-05-05"
        )
        return Response(
            302, b"", [("Content-Type", "text/html;charset=utf-8"), ("Location", location)]
        )

    # ---- check runs: a job's id is its check run's id; kept after the log has expired ------

    def _checked_job(self, job_id: str) -> tuple[Job, Run] | Response:
        """The job behind a check run, or GitHub's answer when there is none to show."""
        if not self.checks_readable:
            return error(403, NO_PERMISSION, CHECKS_DOCS)
        job = self.history.job_by_id.get(int(job_id))
        if job is None or self.archived(self.history.run_by_id[job.run_id]):
            return error(404, "Not Found")
        return job, self.history.run_by_id[job.run_id]

    def check_run(self, request: Request, job_id: str) -> Response:
        found = self._checked_job(job_id)
        if isinstance(found, Response):
            return found
        job, run = found
        count = len(job_notes(job, run, self.shapes.full))
        return json_response(200, self.shapes.check_run(job, run, count))

    def check_run_annotations(self, request: Request, job_id: str) -> Response:
        found = self._checked_job(job_id)
        if isinstance(found, Response):
            return found
        job, run = found
        notes = job_notes(job, run, self.shapes.full)
        url = f"{self.shapes.api}/check-runs/{job.id}/annotations"
        page, link = paginate(notes, request, url)
        return json_response(200, [self.shapes.annotation(n, run) for n in page], link)

    # ---- workflow files -------------------------------------------------------------------

    def contents(self, request: Request, path: str) -> Response:
        """A workflow file at a commit, base64 as GitHub serves files, or the listing of
        `.github/workflows` there (the files only: GitHub loads no subdirectory). ``?ref=``
        is a run's head_sha or the default branch (its head: now), the default branch when
        absent; 404 for any other path or commit."""
        at = self._commit_time(request.arg("ref") or self.default_branch)
        if at is not None and path.rstrip("/") == WORKFLOWS_DIR:
            files = sorted((w for w in self.history.workflows if w.active(at)), key=_file_name)
            listing = [self.shapes.directory_entry(w.path, _file_text(w, at)) for w in files]
            return json_response(200, listing)
        workflow = next((w for w in self.history.workflows if w.path == path), None)
        if at is None or workflow is None or not workflow.active(at):
            return error(404, "Not Found")
        return json_response(200, self.shapes.file_content(path, _file_text(workflow, at)))

    @property
    def default_branch(self) -> str:
        return str(self.history.catalog.repository.get("default_branch", "main"))

    def _commit_time(self, ref: str) -> datetime | None:
        """When the commit ``ref`` was made (its earliest run's creation); the default
        branch's head is now."""
        if ref in (self.default_branch, f"refs/heads/{self.default_branch}"):
            return self.history.now
        sha = ref
        if sha not in self._sha_times:
            self._sha_times = {}
            for run in sorted(self.history.runs, key=lambda r: r.created_at, reverse=True):
                self._sha_times[run.sha] = run.created_at
        return self._sha_times.get(sha)

    # ---- issues and comments --------------------------------------------------------------

    def list_comments(self, request: Request, number: str) -> Response:
        items = self.comments.get(int(number), [])
        since = request.arg("since")
        if since:
            items = [c for c in items if c["updated_at"] >= since]
        page, link = paginate(items, request, f"{self.shapes.api}/issues/{number}/comments")
        return json_response(200, [self.shapes.issue_comment(c) for c in page], link)

    def create_comment(self, request: Request, number: str) -> Response:
        body = request.json().get("body")
        if not isinstance(body, str):
            return error(422, 'Invalid request.\n\n"body" wasn\'t supplied.')
        # on an issue the token needs `issues: write`; on a pull request `pull_requests: write`,
        # which fakehub's tokens always have
        refused = self.tracker.refused(request) if int(number) in self.tracker.issues else None
        refused = refused or too_long(body, "IssueComment", COMMENT_DOCS)
        if refused is not None:
            return refused
        at = iso(self.history.tick(1.0))
        comment = {
            "id": next(self.comment_ids),
            "issue": int(number),
            "body": body,
            "login": request.environ.get(LOGIN_KEY, BOT_LOGIN),  # the token's user writes it
            "created_at": at,
            "updated_at": at,
        }
        self.comments.setdefault(int(number), []).append(comment)
        self.comment_by_id[comment["id"]] = comment
        payload = self.shapes.issue_comment(comment)
        return json_response(201, payload, [("Location", payload["url"])])

    def get_comment(self, request: Request, comment_id: str) -> Response:
        comment = self.comment_by_id.get(int(comment_id))
        if comment is None:
            return error(404, "Not Found")
        return json_response(200, self.shapes.issue_comment(comment))

    def edit_comment(self, request: Request, comment_id: str) -> Response:
        comment = self.comment_by_id.get(int(comment_id))
        body = request.json().get("body")
        if comment is None:
            return error(404, "Not Found")
        if not isinstance(body, str):
            return error(422, 'Invalid request.\n\n"body" wasn\'t supplied.')
        refused = too_long(body, "IssueComment", COMMENT_DOCS)
        if refused is not None:
            return refused
        comment["body"], comment["updated_at"] = body, iso(self.history.tick(1.0))
        return json_response(200, self.shapes.issue_comment(comment))
