"""``ciflake doctor``: ciflake against the configured service in about 20 requests.

One line per check, ``ok`` / ``warn`` / ``fail`` (``skip`` when an earlier failure leaves
nothing to check it with), each with what to do, then the estimated cost of the first backfill
from the listings' ``total_count``, at the rate budget found. Every request goes through the
collector's ``GitHubClient``. What GitHub does is in ../shared/reference/github-real-behaviour.md:
5,000 requests an hour for a user token, 1,000 per repository for a workflow's ``GITHUB_TOKEN``,
logs that answer 410 after the retention period (90 days by default), GitHub Enterprise Server's
API under ``https://HOST/api/v3``.
"""

from __future__ import annotations

import ipaddress
import math
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import requests

from ciflake.config import Config
from collector.annotations import fetch_annotations, needs_annotations
from collector.client import (
    BadCredentials,
    BlobExpired,
    BlobGone,
    CollectError,
    Forbidden,
    GitHubClient,
    NotFound,
)
from collector.payloads import FAILED_CONCLUSIONS, parse_time, ran

OK, WARN, FAIL, SKIP = "ok", "warn", "fail", "skip"
LOG_RETENTION = timedelta(days=90)  # GitHub's default; public repositories 1-90 days
MARGIN = timedelta(days=2)  # an "old" run is this much older than the retention, to be sure
SAMPLE_RUNS = 30  # newest runs per tracked workflow, listed with its total_count
FAILED_SAMPLES = 3  # failing runs whose jobs are asked for, at most
MIN_BUDGET = 30  # fewer requests left than this: the remaining checks are skipped
RESULT_CAP = 1000  # GitHub returns at most this many results of a filtered listing
LISTING_WINDOW = timedelta(days=7)  # a backfill's listing windows (collector.sync)
WORKFLOW_TOKEN_LIMIT = 1000
UNAUTHENTICATED_LIMIT = 60
CA_VARIABLES = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")


@dataclass(frozen=True)
class Check:
    status: str  # ok, warn, fail or skip
    name: str
    detail: str

    def line(self) -> str:
        return f"{self.status:<4}  {self.name:<11}  {self.detail}"


# ---- decisions without requests -----------------------------------------------------------


def url_check(api_url: str, answer: str, enterprise_version: str | None = None) -> Check:
    """Whether ``api_url`` looks like GitHub's API. ``answer``: "api" (it answered like the
    API), "other" (it answered, but not like the API) or "none" (no connection)."""
    parts = urlsplit(api_url)
    host, path = (parts.hostname or "").lower(), parts.path.rstrip("/")
    base = f"{parts.scheme}://{parts.netloc}"
    if not host or parts.scheme not in ("http", "https"):
        return Check(
            FAIL,
            "api url",
            f"{api_url!r} is not a URL: use https://api.github.com, or "
            "https://HOST/api/v3 for GitHub Enterprise Server",
        )
    if host == "api.github.com":
        if path:
            return Check(FAIL, "api url", f"{api_url}: drop the path, use https://api.github.com")
        return Check(OK, "api url", f"{api_url} (github.com)")
    if host in ("github.com", "www.github.com"):
        return Check(FAIL, "api url", f"{api_url} is the web site: use https://api.github.com")
    if host.endswith(".ghe.com"):  # GitHub Enterprise Cloud with data residency
        if host.startswith("api."):
            return Check(OK, "api url", f"{api_url} (GHE.com)")
        return Check(FAIL, "api url", f"{api_url} is the web site: use https://api.{host}")
    if path.endswith("/api/v3"):
        if answer == "other":
            return Check(
                FAIL,
                "api url",
                f"{api_url} does not answer like GitHub's API: check the host name",
            )
        version = f", version {enterprise_version}" if enterprise_version else ""
        return Check(OK, "api url", f"{api_url} (GitHub Enterprise Server{version})")
    if _loopback(host) and not path:
        return Check(OK, "api url", f"{api_url} (a local server: fakehub)")
    suggestion = f"{base}{path}/api/v3"
    mistake = (
        f"{host} is not api.github.com and the URL has no /api/v3, the usual mistake: "
        f"GitHub Enterprise Server's API is at {suggestion}"
    )
    if answer == "api":
        return Check(
            WARN,
            "api url",
            f"{host} is not api.github.com and the URL has no /api/v3; it answers like the "
            f"API (a proxy or a replica?), but for GitHub Enterprise Server use {suggestion}",
        )
    return Check(FAIL if answer == "other" else WARN, "api url", mistake)


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _ca_bundle(env: Mapping[str, str]) -> tuple[str, str] | None:
    """(variable, path) of the CA bundle requests will use instead of its own, if any."""
    return next(((name, env[name]) for name in CA_VARIABLES if env.get(name)), None)


def _proxy(url: str) -> str | None:
    """The proxy requests will use for ``url`` (HTTPS_PROXY, ALL_PROXY, NO_PROXY), without
    any user name or password it carries."""
    proxies = requests.utils.get_environ_proxies(url)
    proxy = proxies.get(urlsplit(url).scheme) or proxies.get("all")
    if not proxy:
        return None
    parts = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{parts.hostname}{port}"


def transport_error(exc: BaseException) -> str | None:
    """The name of the requests error behind a ``CollectError`` (SSLError, ProxyError,
    ConnectionError, ...), None when it was not a transport failure."""
    cause = exc.__context__
    if isinstance(cause, requests.exceptions.RequestException):
        return type(cause).__name__
    text = str(exc)
    for name in ("SSLError", "ProxyError", "ConnectTimeout", "ConnectionError", "ReadTimeout"):
        if text.endswith(name):
            return name
    return None


def network_check(
    api_url: str, env: Mapping[str, str], error: str | None, where: str | None = None
) -> Check:
    """Proxy and CA bundle: what is set, and what a transport ``error`` (a requests error
    name, on ``where``) says is needed."""
    host = where or urlsplit(api_url).hostname or api_url
    proxy, bundle = _proxy(api_url), _ca_bundle(env)
    via = f"via proxy {proxy}" if proxy else "directly (no HTTPS_PROXY)"
    ca = f"CA bundle {bundle[0]}={bundle[1]}" if bundle else "the default CA bundle"
    if bundle and not os.path.isfile(bundle[1]):
        return Check(
            FAIL,
            "network",
            f"{bundle[0]}={bundle[1]} does not exist: point it at your CA bundle (PEM) or unset it",
        )
    if error == "SSLError":
        now = f" (now {bundle[0]}={bundle[1]})" if bundle else ""
        return Check(
            FAIL,
            "network",
            f"TLS verification of {host} failed (SSLError){now}: behind a TLS-inspecting proxy "
            "or with a private CA, set REQUESTS_CA_BUNDLE to that CA's PEM file",
        )
    if error == "ProxyError":
        return Check(
            FAIL,
            "network",
            f"the proxy {proxy} failed (ProxyError): check HTTPS_PROXY and NO_PROXY",
        )
    if error is not None:
        hint = (
            f"check the proxy {proxy} (HTTPS_PROXY, NO_PROXY)"
            if proxy
            else "check the URL; if your network needs a proxy, set HTTPS_PROXY"
        )
        return Check(FAIL, "network", f"cannot reach {host} ({error}): {hint}")
    return Check(OK, "network", f"reached {host} {via}, with {ca}")


def token_kind(limit: int) -> str:
    """The kind of token a primary rate limit tells."""
    if limit <= UNAUTHENTICATED_LIMIT:
        return f"no token ({limit:,}/h unauthenticated)"
    if limit == WORKFLOW_TOKEN_LIMIT:
        return f"a workflow's GITHUB_TOKEN ({limit:,}/h per repository)"
    if limit == 5000:
        return f"a user token ({limit:,}/h)"
    if limit == 15000:
        return f"an Enterprise Cloud token ({limit:,}/h)"
    return f"a token with {limit:,} requests/h"


def budget_check(limit: int, remaining: int, reset: int | None, has_token: bool) -> Check:
    at = (
        datetime.fromtimestamp(reset, UTC).strftime("resets %H:%M UTC")
        if reset
        else "reset unknown"
    )
    left = f"{remaining:,} of {limit:,}/h left, {at}"
    if remaining < MIN_BUDGET:
        return Check(
            WARN,
            "rate budget",
            f"{left}: the checks that need requests are skipped; run doctor after the reset",
        )
    if not has_token or limit <= UNAUTHENTICATED_LIMIT:
        return Check(WARN, "rate budget", f"{left}: set GITHUB_TOKEN or CIFLAKE_TOKEN_FILE")
    if limit <= WORKFLOW_TOKEN_LIMIT:
        return Check(
            WARN,
            "rate budget",
            f"{left}, shared by every workflow of the repository: run the first backfill once "
            "with a user token (5,000/h) and hand the database to the workflow, or give each "
            "nightly collect --max-requests",
        )
    return Check(OK, "rate budget", left)


def workflow_check(
    path: str, workflow: dict[str, Any] | None, by_file: bool, runs: int | None, since: datetime
) -> Check:
    """One tracked workflow: found (in the list, or by file name), its state, its runs."""
    if workflow is None:
        return Check(
            FAIL,
            "workflow",
            f"{path}: not found on GitHub (a wrong path, or the file is deleted and its runs "
            "are gone): fix or remove this [[workflows]] entry; collect skips it",
        )
    state = workflow.get("state") or "unknown"
    found = ", found by file name (not in the workflows list)" if by_file else ""
    counted = "" if runs is None else f", {runs:,} runs since {since:%Y-%m-%d}"
    capped = " (GitHub's result cap: maybe more)" if runs == RESULT_CAP else ""
    text = f"{path}: {state}{counted}{capped}{found}"
    if state == "active":
        return Check(OK, "workflow", text)
    if state == "deleted":
        advice = "its file is gone and no new runs will come; the past runs are still collected"
    elif state.startswith("disabled"):
        advice = "no new runs until someone enables it (Actions tab, '...' menu)"
    else:
        advice = "GitHub reports an unusual state"
    return Check(WARN, "workflow", f"{text}: {advice}")


# ---- the estimate -------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkflowSample:
    total: int  # total_count of the runs created since the start
    runs: Sequence[dict[str, Any]]  # the newest of them


@dataclass(frozen=True)
class Estimate:
    runs: int
    list_pages: int
    jobs_calls: int
    log_calls: int
    annotation_calls: int
    capped: bool
    basis: str

    @property
    def requests(self) -> int:
        return self.list_pages + self.jobs_calls + self.log_calls + self.annotation_calls


def _kind(run: dict[str, Any]) -> str:
    """ "cancelled", "failing" (failed jobs to fetch logs and annotations of: failed now, or
    re-run) or "passing"."""
    if run.get("conclusion") == "cancelled":
        return "cancelled"
    if run.get("conclusion") in FAILED_CONCLUSIONS or (run.get("run_attempt") or 1) > 1:
        return "failing"
    return "passing"


def _per_run(sampled: Sequence[Sequence[dict[str, Any]]]) -> tuple[float, float] | None:
    """(log calls, annotation calls) per run, averaged over the job lists of sampled runs."""
    if not sampled:
        return None
    jobs = [job for run_jobs in sampled for job in run_jobs]
    logs = sum(1 for job in jobs if job.get("conclusion") in FAILED_CONCLUSIONS)
    notes = sum(1 for job in jobs if needs_annotations(job))
    return logs / len(sampled), notes / len(sampled)


def _list_pages(total: int, windows: int) -> int:
    """Pages the collector asks for one workflow: a backfill lists one closed window per
    LISTING_WINDOW (at least a page each, 100 runs a page), then the open listing of the
    last days."""
    return max(windows, math.ceil(total / 100)) + 1


def estimate(
    samples: Sequence[WorkflowSample],
    failing_jobs: Sequence[Sequence[dict[str, Any]]],
    cancelled_jobs: Sequence[Sequence[dict[str, Any]]] = (),
    span: timedelta = timedelta(0),
) -> Estimate:
    """Requests of a first backfill: the workflow list, each workflow's list pages, one jobs
    call per run, and per job that failed (or was cancelled after it started) one
    annotations call, plus a log call when it failed. The shares of failing and cancelled
    runs come from each workflow's newest runs, the jobs per such run from the job lists of
    the runs sampled (1 failed job per failing run, none per cancelled one, when none was)."""
    failing_per = _per_run(failing_jobs) or (1.0, 1.0)
    cancelled_per = _per_run(cancelled_jobs) or (0.0, 0.0)
    runs, logs, notes = 0, 0.0, 0.0
    pages = 1  # the workflows list
    windows = int(span // LISTING_WINDOW)
    for sample in samples:
        runs += sample.total
        pages += _list_pages(sample.total, windows)
        if not sample.runs:
            continue
        kinds = [_kind(run) for run in sample.runs]
        for kind, (log_calls, note_calls) in (
            ("failing", failing_per),
            ("cancelled", cancelled_per),
        ):
            share = kinds.count(kind) / len(kinds)
            logs += sample.total * share * log_calls
            notes += sample.total * share * note_calls
    sampled = sum(len(s.runs) for s in samples)
    basis = (
        f"shares from the newest {sampled} runs, jobs per run from {len(failing_jobs)} failing "
        f"and {len(cancelled_jobs)} cancelled runs sampled"
    )
    return Estimate(
        runs=runs,
        list_pages=pages,
        jobs_calls=runs,
        log_calls=round(logs),
        annotation_calls=round(notes),
        capped=any(s.total >= RESULT_CAP for s in samples),
        basis=basis,
    )


def wall_seconds(
    requests_: int, latency: float, limit: int | None, remaining: int | None, reset_in: float
) -> float:
    """Wall time of ``requests_`` sequential calls of ``latency`` seconds under a budget of
    ``limit`` per hour of which ``remaining`` are left for ``reset_in`` more seconds."""
    work = requests_ * latency
    if limit is None or remaining is None or requests_ <= remaining:
        return work
    windows = math.ceil((requests_ - remaining) / limit)  # budgets needed after this one
    last = requests_ - remaining - (windows - 1) * limit
    return max(work, reset_in + (windows - 1) * 3600 + last * latency)


def estimate_lines(
    found: Estimate,
    since: datetime,
    latency: float,
    limit: int | None,
    remaining: int | None,
    reset: int | None,
) -> list[str]:
    cap = " at least (a listing reached GitHub's 1,000-result cap)" if found.capped else ""
    lines = [
        f"estimate: first backfill since {since:%Y-%m-%d}: {found.requests:,} requests{cap} "
        f"for {found.runs:,} runs ({found.list_pages:,} list pages, {found.jobs_calls:,} jobs "
        f"calls, {found.log_calls:,} log calls, {found.annotation_calls:,} annotation calls; "
        f"{found.basis})"
    ]
    reset_in = max(0.0, (reset or 0) - time.time())
    wall = wall_seconds(found.requests, latency, limit, remaining, reset_in)
    pace = f"{latency * 1000:.0f} ms per request measured"
    if limit:
        hours = found.requests / limit
        shown = f"{hours:.1f}" if hours >= 1 else f"{hours:.2f}"
        lines.append(
            f"estimate: {shown} h of budget at {limit:,}/h; wall time about "
            f"{_duration(wall)} from now with {remaining or 0:,} left ({pace})"
        )
    else:
        lines.append(f"estimate: wall time about {_duration(wall)} ({pace}; no rate limit)")
    if remaining is not None and found.requests > remaining:
        lines.append(
            "estimate: more than this hour's budget: collect waits for each reset (or stops at "
            "--max-requests) and the next collect goes on where it stopped"
        )
    return lines


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


# ---- the checks, in order -----------------------------------------------------------------


class Doctor:
    """Runs the checks one by one (``checks()`` yields them as they are decided); afterwards
    ``estimate_lines()`` and ``requests`` say what a backfill and the doctor cost."""

    def __init__(
        self,
        config: Config,
        client: GitHubClient,
        since: datetime,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.config, self.client, self.since = config, client, since
        self.repo = config.repo
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
                else "no token set and the server requires one: set GITHUB_TOKEN or "
                "CIFLAKE_TOKEN_FILE"
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
        if branch and branch != self.config.default_branch:
            yield Check(
                WARN,
                "repository",
                f"{text}: set [analytics] default_branch = {branch!r} (it is "
                f"{self.config.default_branch!r})",
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
        if not self.config.workflows:
            yield Check(WARN, "workflow", "no [[workflows]] configured: nothing to collect")
        for tracked in self.config.workflows:
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
                total = self._sample_runs(workflow["id"])
            except CollectError as exc:
                yield Check(FAIL, "workflow", f"{tracked.path}: listing its runs: {exc}")
                continue
            yield workflow_check(tracked.path, workflow, by_file, total, self.since)

    def _sample_runs(self, workflow_id: int) -> int:
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
        self.samples.append(WorkflowSample(total, runs))
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
            cancelled = [r for s in self.samples for r in s.runs if _kind(r) == "cancelled"]
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
        return estimate_lines(found, self.since, latency, self.limit, self.remaining, self.reset)


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
    since: datetime,
    echo: Callable[[str], None],
    env: Mapping[str, str] | None = None,
) -> int:
    """Print the checklist and the estimate; the exit status: 1 when a check failed."""
    doctor = Doctor(config, make_client(config), since, env)
    echo(f"ciflake doctor: {config.repo} at {config.api_url or '(no api_url)'}")
    counts = {OK: 0, WARN: 0, FAIL: 0, SKIP: 0}
    for check in doctor.checks():
        counts[check.status] += 1
        echo(check.line())
    for line in doctor.estimate_lines():
        echo(line)
    summary = ", ".join(f"{n} {status}" for status, n in counts.items() if n)
    echo(f"doctor: {summary}; {doctor.requests} API requests used")
    return 1 if counts[FAIL] else 0
