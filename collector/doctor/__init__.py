"""``ciflake doctor``: ciflake against the configured service in about 20 requests.

One line per check, ``ok`` / ``warn`` / ``fail`` (``skip`` when an earlier failure leaves
nothing to check it with), each with what to do, then the estimated cost of the first backfill
from the listings' ``total_count``, at the rate budget found. Every request goes through the
collector's ``GitHubClient``. What GitHub does is in docs/github-behaviour.md:
5,000 requests an hour for a user token, 1,000 per repository for a workflow's ``GITHUB_TOKEN``,
logs that answer 410 after the retention period (90 days by default), GitHub Enterprise Server's
API under ``https://HOST/api/v3``.

This module holds the requests: ``Doctor`` asks them in order and hands what they answered to
the decisions in ``collector.doctor.checks`` and the arithmetic in ``collector.doctor.estimate``.
It is over 350 lines because ``Doctor`` is one sequence of checks that share what the earlier
ones found (the budget, the sampled runs, why the rest is blocked); cut apart, that state would
have to travel between modules.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from collector.annotations import fetch_annotations
from collector.client import (
    NO_TOKEN,
    BadCredentials,
    BlobExpired,
    BlobGone,
    CollectError,
    Forbidden,
    GitHubClient,
    NotFound,
)
from collector.doctor.checks import (
    FAIL,
    MIN_BUDGET,
    OK,
    SKIP,
    WARN,
    Check,
    budget_check,
    network_check,
    token_kind,
    transport_error,
    url_check,
    workflow_check,
)
from collector.doctor.estimate import (
    Collected,
    Estimate,
    WorkflowSample,
    estimate,
    estimate_lines,
    left_share,
    run_kind,
)
from collector.payloads import FAILED_CONCLUSIONS, parse_time, ran
from store.project import Project
from store.settings import Config

LOG_RETENTION = timedelta(days=90)  # GitHub's default; public repositories 1-90 days
MARGIN = timedelta(days=2)  # an "old" run is this much older than the retention, to be sure
SAMPLE_RUNS = 30  # newest runs per tracked workflow, listed with its total_count
FAILED_SAMPLES = 3  # failing runs whose jobs are asked for, at most


class Doctor:
    """Runs the checks one by one (``checks()`` yields them as they are decided); afterwards
    ``estimate_lines()`` and ``requests`` say what a backfill and the doctor cost."""

    def __init__(
        self,
        config: Config,
        project: Project,
        client: GitHubClient,
        since: datetime,
        env: Mapping[str, str] | None = None,
        collected: Mapping[str, Collected] | None = None,
    ) -> None:
        self.config, self.client, self.since = config, client, since
        self.collected = collected or {}  # what earlier collects listed, by workflow path
        self.project = project
        self.repo = project.repo
        self.env = dict(os.environ) if env is None else env
        self.blocked: str | None = None  # why the remaining checks cannot run
        self.limit: int | None = None
        self.remaining: int | None = None
        self.reset: int | None = None
        self.samples: list[WorkflowSample] = []
        self.failing_jobs: list[list[dict[str, Any]]] = []
        self.cancelled_jobs: list[list[dict[str, Any]]] = []
        self.newest: datetime | None = None
        self.api_seconds = 0.0

    @property
    def requests(self) -> int:
        return self.client.stats.requests

    def _get(self, path: str, params: dict[str, Any] | None = None) -> tuple[dict[str, str], Any]:
        started = time.monotonic()
        try:
            _status, hdrs, body = self.client.get(path, params)
        finally:
            self.api_seconds += time.monotonic() - started
        return hdrs, body

    def checks(self) -> Iterator[Check]:
        yield from self._connection()
        steps: list[Callable[[], Iterator[Check]]] = [
            self._repository,
            self._workflows,
            self._recent_failure,
            self._old_log,
        ]
        for step in steps:
            if self.blocked is not None:
                yield from self._skipped(step)
            else:
                yield from step()

    def _skipped(self, step: Callable[[], Iterator[Check]]) -> Iterator[Check]:
        names = {
            self._repository: ["repository"],
            self._workflows: ["workflows"],
            self._recent_failure: ["annotations", "log"],
            self._old_log: ["old logs"],
        }[step]
        for name in names:
            yield Check(SKIP, name, f"not checked: {self.blocked}")

    # -- api url, network, token, rate budget: all from GET /rate_limit, which costs nothing

    def _connection(self) -> Iterator[Check]:
        config = self.config
        answer, version, error, error_text = "api", None, None, ""
        rate: dict[str, Any] | None = None
        refused, limited = False, None
        try:
            hdrs, body = self._get("/rate_limit")
            version = hdrs.get("x-github-enterprise-version")
            rate = (body or {}).get("resources", {}).get("core") or (body or {}).get("rate")
            if not isinstance(rate, dict) or "limit" not in rate:
                answer, rate = "other", None
        except BadCredentials:
            refused = True
        except NotFound as exc:  # GHES with rate limiting off answers 404 here, like a wrong URL
            answer = "other" if "/api/v3" not in config.api_url else "api"
            error_text = str(exc)
        except CollectError as exc:
            error = transport_error(exc)
            if error is None and str(exc).startswith("rate limit"):
                limited = str(exc)  # a secondary rate limit: the API, but not now
            answer = "none" if error else ("api" if limited else "other")
            error_text = str(exc)
        yield url_check(config.api_url, answer, version)
        yield network_check(config.api_url, self.env, error)
        if error is not None:
            self.blocked = "no connection"
            yield Check(SKIP, "token", f"not checked: {self.blocked}")
            yield Check(SKIP, "rate budget", f"not checked: {self.blocked}")
            return
        if refused:
            self.blocked = "the token was refused"
            what = (
                f"GitHub rejected the token from {config.token_source} (401 Bad credentials): "
                "set GITHUB_TOKEN or CIFLAKE_TOKEN_FILE to a valid token"
                if config.token
                else NO_TOKEN
            )
            yield Check(FAIL, "token", what)
            yield Check(SKIP, "rate budget", f"not checked: {self.blocked}")
            return
        if limited is not None:
            self.blocked = "rate limited"
            yield Check(SKIP, "token", f"not checked: {self.blocked}")
            yield Check(WARN, "rate budget", f"{limited}")
            return
        if rate is None:
            if answer == "api":  # an Enterprise Server without rate limits
                yield Check(OK, "token", f"from {config.token_source}; kind unknown")
                yield Check(OK, "rate budget", "rate limiting is not enabled on this server")
                return
            self.blocked = "the API URL does not answer like GitHub's API"
            why = error_text or "no rate limit in the answer"
            yield Check(SKIP, "token", f"not checked: {why}")
            yield Check(SKIP, "rate budget", f"not checked: {self.blocked}")
            return
        self.limit, self.remaining = int(rate["limit"]), int(rate.get("remaining", 0))
        self.reset = int(rate["reset"]) if rate.get("reset") is not None else None
        kind = token_kind(self.limit)
        if config.token is None:
            yield Check(WARN, "token", f"{kind}: set GITHUB_TOKEN or CIFLAKE_TOKEN_FILE")
        else:
            yield Check(OK, "token", f"valid, from {config.token_source}: {kind}")
        budget = budget_check(self.limit, self.remaining, self.reset, config.token is not None)
        yield budget
        if self.remaining < MIN_BUDGET:
            self.blocked = f"only {self.remaining} requests left"

    # -- repository and workflows

    def _repository(self) -> Iterator[Check]:
        try:
            _hdrs, body = self._get(f"/repos/{self.repo}")
        except NotFound:
            self.blocked = f"repository {self.repo} not readable"
            yield Check(
                FAIL,
                "repository",
                f"{self.repo}: not found, or the token cannot see it: check [github] repo "
                "(or --repo); a fine-grained token must include this repository",
            )
            return
        except CollectError as exc:
            self.blocked = f"repository {self.repo} not readable"
            yield Check(FAIL, "repository", f"{self.repo}: {exc}")
            return
        visibility = body.get("visibility") or ("private" if body.get("private") else "public")
        branch = body.get("default_branch")
        text = f"{body.get('full_name', self.repo)} ({visibility}), default branch {branch}"
        if branch and branch != self.project.default_branch:
            yield Check(
                WARN,
                "repository",
                f"{text}: set the repository's default_branch = {branch!r} (it is "
                f"{self.project.default_branch!r})",
            )
        else:
            yield Check(OK, "repository", text)

    def _workflows(self) -> Iterator[Check]:
        path = f"/repos/{self.repo}/actions/workflows"
        listed: dict[str, dict[str, Any]] = {}
        try:
            for _url, page in self.client.pages(path, {"per_page": 100}, {}):
                listed.update((w["path"], w) for w in page.body.get("workflows", []))
        except Forbidden as exc:
            self.blocked = "the workflows are not readable"
            yield Check(FAIL, "workflow", f"{exc}: give the token `actions: read`")
            return
        except CollectError as exc:
            self.blocked = "the workflows are not readable"
            yield Check(FAIL, "workflow", str(exc))
            return
        if not self.project.workflows:
            yield Check(
                WARN, "workflow", f"no workflows configured for {self.repo}: nothing to collect"
            )
        for tracked in self.project.workflows:
            workflow, by_file = listed.get(tracked.path), False
            if workflow is None:  # GitHub accepts the file name in place of the id
                by_file = True
                try:
                    _hdrs, workflow = self._get(f"{path}/{tracked.path.rsplit('/', 1)[-1]}")
                except NotFound:
                    workflow = None
                except CollectError as exc:
                    yield Check(FAIL, "workflow", f"{tracked.path}: {exc}")
                    continue
            if workflow is None:
                yield workflow_check(tracked.path, None, by_file, None, self.since)
                continue
            try:
                total = self._sample_runs(workflow["id"], tracked.path)
            except CollectError as exc:
                yield Check(FAIL, "workflow", f"{tracked.path}: listing its runs: {exc}")
                continue
            yield workflow_check(tracked.path, workflow, by_file, total, self.since)

    def _sample_runs(self, workflow_id: int, path: str) -> int:
        _hdrs, body = self._get(
            f"/repos/{self.repo}/actions/workflows/{workflow_id}/runs",
            {
                "created": f">={_stamp(self.since)}",
                "per_page": SAMPLE_RUNS,
                "exclude_pull_requests": "true",
            },
        )
        runs = body.get("workflow_runs", [])
        total = int(body.get("total_count", len(runs)))
        before = self.collected.get(path)
        share = 1.0 if before is None else left_share(before.left, self.since, datetime.now(UTC))
        self.samples.append(WorkflowSample(total, runs, share))
        for run in runs:
            created = parse_time(run.get("created_at"))
            if created is not None and (self.newest is None or created > self.newest):
                self.newest = created
        return total

    # -- one recent failed job: annotations and log; one old failed job: its log's 410

    def _jobs(self, run: dict[str, Any]) -> list[dict[str, Any]]:
        _hdrs, body = self._get(
            f"/repos/{self.repo}/actions/runs/{run['id']}/jobs", {"filter": "all", "per_page": 100}
        )
        return body.get("jobs", [])

    def _failed_job(self, run: dict[str, Any]) -> dict[str, Any] | None:
        """The jobs of a failing run (kept for the estimate) and the first failed job that
        ran, which has annotations and a log."""
        jobs = self._jobs(run)
        self.failing_jobs.append(jobs)
        return next((j for j in jobs if j.get("conclusion") in FAILED_CONCLUSIONS and ran(j)), None)

    def _recent_failure(self) -> Iterator[Check]:
        candidates = sorted(
            (r for s in self.samples for r in s.runs if r.get("conclusion") in FAILED_CONCLUSIONS),
            key=lambda r: r.get("created_at") or "",
            reverse=True,
        )
        job = run = None
        try:
            for run in candidates[:FAILED_SAMPLES]:
                job = self._failed_job(run)
                if job is not None:
                    break
            cancelled = [r for s in self.samples for r in s.runs if run_kind(r) == "cancelled"]
            if cancelled:  # for the estimate: jobs cancelled after they started
                newest = max(cancelled, key=lambda r: r.get("created_at") or "")
                self.cancelled_jobs.append(self._jobs(newest))
        except CollectError as exc:
            yield Check(FAIL, "annotations", f"jobs of run {run and run['id']}: {exc}")
            yield Check(SKIP, "log", "not checked: no failed job")
            return
        if job is None or run is None:
            nothing = f"no failed job among the newest runs since {self.since:%Y-%m-%d}"
            yield Check(OK, "annotations", f"{nothing}: nothing to check")
            yield Check(OK, "log", f"{nothing}: nothing to check")
            return
        which = f"job {job['id']} {job.get('name', '')!r} (run {run['id']}, {run['created_at']})"
        try:
            notes = fetch_annotations(self.client, self.repo, job["id"])
        except Forbidden as exc:
            yield Check(
                WARN,
                "annotations",
                f"{which}: {exc}: the token lacks `checks: read`, so failures are classified "
                "without annotations; give it `checks: read`",
            )
        except CollectError as exc:
            yield Check(FAIL, "annotations", f"{which}: {exc}")
        else:
            example = next((n["message"] for n in notes if n.get("message")), "")
            shown = f", e.g. {example[:80]!r}" if example else ""
            count = f"{len(notes)} annotation" + ("" if len(notes) == 1 else "s")
            yield Check(OK, "annotations", f"{which}: {count}{shown}")
        yield self._log(job, which, recent=True)

    def _log(self, job: dict[str, Any], which: str, recent: bool) -> Check:
        name = "log" if recent else "old logs"
        try:
            status, url = self.client.log_location(self.repo, job["id"])
        except CollectError as exc:
            return Check(FAIL, name, f"{which}: {exc}")
        if status == 410:
            if recent:
                return Check(
                    WARN,
                    name,
                    f"{which}: 410, the log has expired already: the repository keeps logs "
                    "for less time than this; failures are classified from annotations and steps",
                )
            return Check(
                WARN,
                name,
                f"{which}: 410 expired, as expected past GitHub's {LOG_RETENTION.days}-day log "
                "retention: such failures are classified from annotations and steps (kept 400 "
                "days)",
            )
        if status == 404:
            return Check(WARN, name, f"{which}: no log (404): the job left none")
        if not recent:
            return Check(
                OK,
                name,
                f"{which}: log still served: this repository keeps logs longer than "
                f"{LOG_RETENTION.days} days",
            )
        if status == 200 or url is None:
            return Check(OK, name, f"{which}: log served by the API itself")
        blob_host = urlsplit(url).hostname or "the blob host"
        started = time.monotonic()
        try:
            size = _Size()
            self.client.download(url, size)
        except BlobGone:
            return Check(WARN, name, f"{which}: {blob_host} has no log for it (404)")
        except BlobExpired:
            return Check(
                WARN,
                name,
                f"{which}: {blob_host} refused the signed URL (403): check the clock; a proxy "
                "must pass the URL unchanged",
            )
        except CollectError as exc:
            error = transport_error(exc)
            if error is not None:
                check = network_check(url, self.env, error, where=blob_host)
                return Check(FAIL, name, f"{which}: log download: {check.detail}")
            return Check(FAIL, name, f"{which}: {exc}")
        finally:
            self.api_seconds += time.monotonic() - started
        return Check(OK, name, f"{which}: log reachable at {blob_host} ({size.bytes:,} bytes)")

    def _old_log(self) -> Iterator[Check]:
        reference = self.newest or datetime.now(UTC)
        cutoff = reference - LOG_RETENTION - MARGIN
        if self.since >= cutoff:
            yield Check(
                OK,
                "old logs",
                f"every run since {self.since:%Y-%m-%d} is younger than GitHub's "
                f"{LOG_RETENTION.days}-day log retention: their logs should all be there",
            )
            return
        try:
            _hdrs, body = self._get(
                f"/repos/{self.repo}/actions/runs",
                {
                    "status": "failure",
                    "created": f"{_stamp(self.since)}..{_stamp(cutoff)}",
                    "per_page": 5,
                    "exclude_pull_requests": "true",
                },
            )
            runs = body.get("workflow_runs", [])
            job = run = None
            for run in runs[:2]:
                job = self._failed_job(run)
                if job is not None:
                    break
        except CollectError as exc:
            yield Check(FAIL, "old logs", f"listing failed runs before {cutoff:%Y-%m-%d}: {exc}")
            return
        if job is None or run is None:
            yield Check(
                OK,
                "old logs",
                f"no failed job between {self.since:%Y-%m-%d} and {cutoff:%Y-%m-%d}: "
                "nothing to check",
            )
            return
        created = parse_time(run.get("created_at"))
        age = f", {(reference - created).days} days old" if created else ""
        which = f"job {job['id']} (run {run['id']}, {run.get('created_at')}{age})"
        yield self._log(job, which, recent=False)

    # -- what it cost and what a backfill will

    def estimate(self) -> Estimate | None:
        if not self.samples:
            return None
        span = max(self.newest or self.since, datetime.now(UTC)) - self.since
        return estimate(self.samples, self.failing_jobs, self.cancelled_jobs, span)

    def estimate_lines(self) -> list[str]:
        found = self.estimate()
        if found is None:
            return ["estimate: not made (no workflow listing)"]
        latency = self.api_seconds / max(1, self.requests)
        what = self._what()
        return estimate_lines(found, what, latency, self.limit, self.remaining, self.reset)

    def _what(self) -> str:
        """What the estimate is of: a first backfill, the rest of one, or once every tracked
        workflow's is complete, the next collect (the runs since the last one)."""
        found = {w.path: self.collected.get(w.path) for w in self.project.workflows}
        done = [c for c in found.values() if c is not None]
        if not done:
            return f"first backfill since {self.since:%Y-%m-%d}"
        complete = [c for c in done if c.complete]
        if len(complete) == len(found) and all(
            start >= c.listed_to for c in complete for start, _ in c.left
        ):
            since = min(c.listed_to for c in complete)
            return f"backfill complete; the next collect, for the runs since {since:%Y-%m-%d %H:%M}"
        return (
            f"the rest of the backfill since {self.since:%Y-%m-%d} ({len(complete)} of "
            f"{len(found)} tracked workflows complete)"
        )


class _Size:
    """A download sink that only counts: a log can be large, the doctor keeps none of it."""

    def __init__(self) -> None:
        self.bytes = 0

    def write(self, chunk: bytes, /) -> None:
        self.bytes += len(chunk)

    def restart(self) -> None:
        self.bytes = 0


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def make_client(config: Config) -> GitHubClient:
    """A client that never waits long: a doctor reports a spent budget instead of waiting."""
    return GitHubClient(
        config.api_url,
        config.token,
        timeout=20,
        max_wait=0,
        backoff_factor=0.01,
        sleep=lambda seconds: time.sleep(min(seconds, 0.2)),
    )


def run_doctor(
    config: Config,
    project: Project,
    since: datetime,
    echo: Callable[[str], None],
    env: Mapping[str, str] | None = None,
    collected: Mapping[str, Collected] | None = None,
) -> int:
    """Print the checklist and the estimate (of what earlier collects have not listed, when
    ``collected`` says what they did); the exit status: 1 when a check failed."""
    doctor = Doctor(config, project, make_client(config), since, env, collected)
    echo(f"ciflake doctor: {project.repo} at {config.api_url or '(no api_url)'}")
    counts = {OK: 0, WARN: 0, FAIL: 0, SKIP: 0}
    for check in doctor.checks():
        counts[check.status] += 1
        echo(check.line())
    for line in doctor.estimate_lines():
        echo(line)
    summary = ", ".join(f"{n} {status}" for status, n in counts.items() if n)
    echo(f"doctor: {summary}; {doctor.requests} API requests used")
    return 1 if counts[FAIL] else 0
