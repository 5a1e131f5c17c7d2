"""Admin endpoints under `/_admin` (no auth, no rate limit, no faults) for tests and the demo.

    GET  /_admin/counters            request counters (total, 304s, counted, by route, by status)
    POST /_admin/counters/reset      zero them; answers the zeroed counters
    GET  /_admin/faults              {"spec", "fired"}
    POST /_admin/faults {"spec"}     replace the fault rules (syntax in fakehub.faults)
    POST /_admin/rerun {"run_id", "conclusion"?, "category"?}   append an attempt to a run
    POST /_admin/new_runs {"workflow", "count"?, "event"?, "conclusion"?, "category"?,
                           "minutes_apart"? (2)}
    GET  /_admin/truth[?log_status=ok]  each failed or timed-out job GitHub still serves (not
                                     archived): its category, log line, and
                                     what a client sees without the log (annotations, failed
                                     step, the category they determine); invalid runs; events
    GET  /_admin/inventory           counts and ids of runs, attempts, jobs and logs by status
                                     (jobs of archived runs left out; archived_runs counts them)
    POST /_admin/rate_limit {"limit"?, "used"?}   set the primary budget
    POST /_admin/token {"token"}     accept this token from now on (the old one is revoked: 401)
    POST /_admin/log {"job_id", "content_b64"}   serve these bytes as the job's log (hostile logs)
    POST /_admin/big_log {"job_id", "megabytes"}   serve a log of that size, streamed: ordinary
                                     lines, then the job's own log (memory benchmarks)
    POST /_admin/delete_run {"run_id"}   delete a run: it and its jobs answer 404 from now on
    POST /_admin/delete_workflow {"workflow"}   a workflow file deleted and its runs gone: it
                                     is no longer listed and its routes answer 404
    POST /_admin/blob_ttl {"seconds"}    how long a log URL stays valid (GitHub: 60 s)
    POST /_admin/permissions {"checks"?, "issues"?}   "checks": false: check-run routes answer
                                     403, as for a workflow token without `checks: read`;
                                     "issues": false: every issue and label write (and a comment
                                     on an issue) answers 403, as without `issues: write`
    POST /_admin/issues {"enabled"}  false: issues turned off (`has_issues` false): the issue
                                     routes answer 410 "Issues are disabled for this repo"
    POST /_admin/content_limit {"per_minute"?, "retry_after"?}   the secondary limit on creating
                                     issues, per user (default 20 a minute, no Retry-After;
                                     null per_minute: none)
    POST /_admin/users {"token", "login"}   accept one more token, writing as that login (a
                                     person, or "github-actions[bot]" for a workflow's token)
    POST /_admin/stuck {"path", "status", "message"?}   this resource (any query) answers that
                                     error every time; "status": null serves it again; a path
                                     with "{id}" for its ids sticks the fault to the whole route
    GET  /_admin/stuck               {path: {"status", "message", "hits"}}
    POST /_admin/result_cap {"cap"}  a filtered run listing serves at most this many results
                                     (GitHub: 1,000), whatever total_count says
    POST /_admin/checks_retention {"days"}   runs older than that lose their checks data (jobs,
                                     annotations): GitHub archives it after 400 days

Every endpoint takes `?repo=owner/name` (default: the first repository).
"""

from __future__ import annotations

import base64
from collections import Counter
from datetime import timedelta
from typing import Any

from fakehub.annotations import job_notes
from fakehub.api import RepoApi
from fakehub.faults import Faults
from fakehub.logs import Rendered, render
from fakehub.payloads import iso
from fakehub.records import Job, Run
from fakehub.steps import plan
from fakehub.web import REASONS, Request, Response, error, json_response


class Admin:
    """Answers `/_admin/...` for an `ApiApp` (typed loosely to avoid an import cycle)."""

    def __init__(self, app: Any, blob: Any) -> None:
        self.app, self.blob = app, blob

    def answer(self, request: Request) -> Response:
        name = request.path.removeprefix("/_admin/").strip("/")
        handler = getattr(self, f"{request.method.lower()}_{name.replace('/', '_')}", None)
        if handler is None:
            return error(404, "Not Found")
        repo = request.arg("repo") or next(iter(self.app.repos))
        api = self.app.repos.get(repo.lower())
        if api is None:
            return error(404, f"unknown repository {repo}")
        try:
            return json_response(200, handler(request, api))
        except (KeyError, ValueError, TypeError) as exc:
            return error(422, f"{type(exc).__name__}: {exc}")

    def get_counters(self, request: Request, api: RepoApi) -> dict[str, Any]:
        return {**self.app.counters.snapshot(), "rate": self.app.rate.snapshot()}

    def post_counters_reset(self, request: Request, api: RepoApi) -> dict[str, Any]:
        self.app.counters.reset()
        return self.get_counters(request, api)

    def get_faults(self, request: Request, api: RepoApi) -> dict[str, Any]:
        return {"spec": self.app.faults.spec, "fired": dict(self.app.faults.fired)}

    def post_faults(self, request: Request, api: RepoApi) -> dict[str, Any]:
        spec = str(request.json().get("spec", ""))
        self.app.set_faults(Faults.parse(spec, self.app.faults.seed))
        return self.get_faults(request, api)

    def post_rate_limit(self, request: Request, api: RepoApi) -> dict[str, Any]:
        body = request.json()
        rate = self.app.rate
        rate.limit = int(body.get("limit", rate.limit))
        rate.used = int(body.get("used", rate.used))
        return rate.snapshot()

    def post_token(self, request: Request, api: RepoApi) -> dict[str, Any]:
        self.app.token = str(request.json()["token"])
        return {"changed": True}

    def post_log(self, request: Request, api: RepoApi) -> dict[str, Any]:
        body = request.json()
        job_id = int(body["job_id"])
        if job_id not in api.history.job_by_id:
            raise KeyError(f"unknown job {job_id}")
        api.log_overrides[job_id] = base64.b64decode(body["content_b64"])
        return {"job_id": job_id, "size": len(api.log_overrides[job_id])}

    def post_big_log(self, request: Request, api: RepoApi) -> dict[str, Any]:
        body = request.json()
        job_id = int(body["job_id"])
        if job_id not in api.history.job_by_id:
            raise KeyError(f"unknown job {job_id}")
        self.blob.big_logs[job_id] = int(float(body["megabytes"]) * (1 << 20))
        return {"job_id": job_id, "size": self.blob.big_logs[job_id]}

    def post_delete_run(self, request: Request, api: RepoApi) -> dict[str, Any]:
        run_id = int(request.json()["run_id"])
        api.history.delete_run(run_id)
        return {"deleted": run_id}

    def post_delete_workflow(self, request: Request, api: RepoApi) -> dict[str, Any]:
        ref = str(request.json()["workflow"])
        workflow = api.find_workflow(ref)
        if workflow is None:
            raise KeyError(f"unknown workflow {ref}")
        run_ids = [run.id for run in api.history.runs if run.workflow.id == workflow.id]
        for run_id in run_ids:  # GitHub drops a deleted workflow once none of its runs is left
            api.history.delete_run(run_id)
        api.history.workflows = tuple(w for w in api.history.workflows if w.id != workflow.id)
        return {"deleted": workflow.path, "runs": len(run_ids)}

    def post_blob_ttl(self, request: Request, api: RepoApi) -> dict[str, Any]:
        self.blob.ttl = float(request.json()["seconds"])
        return {"seconds": self.blob.ttl}

    def post_permissions(self, request: Request, api: RepoApi) -> dict[str, Any]:
        body = request.json()
        api.checks_readable = bool(body.get("checks", api.checks_readable))
        api.tracker.writable = bool(body.get("issues", api.tracker.writable))
        return {"checks": api.checks_readable, "issues": api.tracker.writable}

    def post_issues(self, request: Request, api: RepoApi) -> dict[str, Any]:
        api.tracker.enabled = bool(request.json()["enabled"])
        return {"enabled": api.tracker.enabled}

    def post_content_limit(self, request: Request, api: RepoApi) -> dict[str, Any]:
        body, limit = request.json(), api.tracker.content
        if "per_minute" in body:
            limit.per_minute = None if body["per_minute"] is None else int(body["per_minute"])
        if "retry_after" in body:
            limit.retry_after = None if body["retry_after"] is None else int(body["retry_after"])
        return {"per_minute": limit.per_minute, "retry_after": limit.retry_after}

    def post_users(self, request: Request, api: RepoApi) -> dict[str, Any]:
        body = request.json()
        self.app.users[str(body["token"])] = str(body["login"])
        return {"login": self.app.users[str(body["token"])]}

    def post_stuck(self, request: Request, api: RepoApi) -> dict[str, Any]:
        body = request.json()
        path = str(body["path"])
        if body.get("status") is None:
            self.app.stuck.pop(path, None)
        else:
            status = int(body["status"])
            self.app.stuck[path] = (status, str(body.get("message") or REASONS.get(status, "")))
        return self.get_stuck(request, api)

    def get_stuck(self, request: Request, api: RepoApi) -> dict[str, Any]:
        return {
            path: {"status": status, "message": message, "hits": self.app.stuck_hits[path]}
            for path, (status, message) in self.app.stuck.items()
        }

    def post_result_cap(self, request: Request, api: RepoApi) -> dict[str, Any]:
        api.result_cap = int(request.json()["cap"])
        return {"cap": api.result_cap}

    def post_checks_retention(self, request: Request, api: RepoApi) -> dict[str, Any]:
        api.checks_retention = timedelta(days=int(request.json()["days"]))
        archived = sum(api.archived(run) for run in api.history.runs)
        return {"days": api.checks_retention.days, "archived_runs": archived}

    def post_rerun(self, request: Request, api: RepoApi) -> dict[str, Any]:
        body = request.json()
        run = api.history.rerun(int(body["run_id"]), body.get("conclusion"), body.get("category"))
        return api.shapes.run(run, run.latest)

    def post_new_runs(self, request: Request, api: RepoApi) -> dict[str, Any]:
        body = request.json()
        workflow = api.find_workflow(str(body["workflow"]))
        if workflow is None:
            raise KeyError(f"unknown workflow {body['workflow']}")
        runs = api.history.add_runs(
            workflow,
            int(body.get("count", 1)),
            body.get("event", "push"),
            body.get("conclusion"),
            body.get("category"),
            float(body.get("minutes_apart", 2.0)),
        )
        return {"run_ids": [run.id for run in runs], "now": iso(api.history.now)}

    def get_truth(self, request: Request, api: RepoApi) -> dict[str, Any]:
        history = api.history
        wanted = request.arg("log_status")
        failures = []
        for job in served_jobs(api):
            if job.category is None or (wanted and api.log_status(job) != wanted):
                continue
            run = history.run_by_id[job.run_id]
            rendered = render(job, run, api.shapes.full)
            failures.append(
                {
                    "job_id": job.id,
                    "run_id": run.id,
                    "run_attempt": job.attempt,
                    "workflow": run.workflow.path,
                    "job_name": job.spec.name,
                    "conclusion": job.conclusion,
                    "category": job.category,
                    "cause": job.cause,
                    "line_number": rendered.line_number,
                    "line": rendered.line,
                    "log_status": api.log_status(job),
                    **without_log(job, run, rendered, api.shapes.full),
                }
            )
        invalid_runs = [run.id for run in history.runs if run.invalid]
        return {
            "now": iso(history.now),
            "failures": failures,
            "invalid_runs": invalid_runs,
            "events": list(history.catalog.events),
            "workflows": [
                {
                    "id": w.id,
                    "path": w.path,
                    "name": w.name,
                    "family": w.family,
                    "present": [[iso(a), None if b.year >= 2100 else iso(b)] for a, b in w.present],
                    "invalid": [[iso(a), iso(b), why] for a, b, why in w.invalid],
                }
                for w in history.workflows
            ],
        }

    def get_inventory(self, request: Request, api: RepoApi) -> dict[str, Any]:
        history = api.history
        jobs = served_jobs(api)
        logs: dict[str, list[int]] = {"ok": [], "expired": [], "missing": []}
        for job in jobs:
            logs[api.log_status(job)].append(job.id)
        by_workflow: dict[str, dict[str, int]] = {}
        for run in history.runs:
            entry = by_workflow.setdefault(run.workflow.path, Counter())
            entry["runs"] += 1
            entry["attempts"] += len(run.attempts)
            entry["jobs"] += 0 if api.archived(run) else sum(len(a.jobs) for a in run.attempts)
        conclusions = Counter(str(j.conclusion) for j in jobs)
        return {
            "now": iso(history.now),
            "runs": len(history.runs),
            "archived_runs": sum(api.archived(run) for run in history.runs),
            "attempts": sum(len(r.attempts) for r in history.runs),
            "jobs": len(jobs),
            "failed_jobs": sum(1 for j in jobs if j.category),
            "run_ids": [run.id for run in history.runs],
            "attempts_by_run": {str(r.id): len(r.attempts) for r in history.runs},
            "jobs_by_conclusion": dict(sorted(conclusions.items())),
            "logs": {status: {"count": len(ids), "job_ids": ids} for status, ids in logs.items()},
            "by_workflow": {path: dict(c) for path, c in sorted(by_workflow.items())},
        }


def served_jobs(api: RepoApi) -> list[Job]:
    """The jobs GitHub still serves: those of runs whose checks data is not archived. The
    truth and the inventory count only these, because no client can see the others."""
    history = api.history
    return [j for j in history.job_by_id.values() if not api.archived(history.run_by_id[j.run_id])]


def without_log(job: Job, run: Run, rendered: Rendered, repo: str) -> dict[str, Any]:
    """What a client can know of a failed job once its log has gone, by the simulation's own
    account: its annotations and failed step, and the category they determine (None when only
    the log told it). The annotations determine it when the line that shows the category was
    itself an annotation, or when the exit code or the service's message implies it; the job's
    facts do for a failed `setup` job (provisioning) and a failed NPU check step."""
    notes = [note.message for note in job_notes(job, run, repo, rendered)]
    failed = [s for s in plan(job) if s.conclusion in ("failure", "cancelled")]
    step = failed[0] if failed else None
    shown = rendered.line.split(" ", 1)[1] if rendered.line else ""
    by_notes = (
        job.cause in ("job_time_limit", "step_time_limit", "no_runner")
        or (shown.startswith("##[error]") and shown.removeprefix("##[error]") in notes)
        or any(n.endswith(("exit code 137.", "exit code 127.")) for n in notes)
    )
    by_job = job.spec.kind == "setup" or (step is not None and step.kind == "npu_info")
    determined_by = "annotations" if by_notes else ("job" if by_job else None)
    return {
        "annotations": notes,
        "failed_step": step.name if step else None,
        "failed_step_kind": step.kind if step else None,
        "determined_by": determined_by,
    }
