"""Incidents: bursts of failures that share one cause across many jobs within a short time (a
stuck host, a Hub outage, a bad image), the one definition every reader counts by.

A failure (one failed job attempt) has four possible causes, tried from the most specific:
the runner host it ran on (``host``), its signature where a line decided it (``signature``), a
runner label it asked for (``label``) and its category across workflows (``workflows``); the
host and label causes also require one category. Failures of one cause at most
``window_hours`` apart chain into a burst. A burst is an incident when it hit at least
``min_jobs`` jobs in ``min_runs`` runs of ``min_workflows`` workflows (one will do for a
host), and at least
``min_share`` of the jobs exposed to its cause while it lasted failed so: the jobs on that
host or label, or the same jobs (workflow and job name) for a signature or a category. The
share rules out a regime where a rate rises to a third, which the changepoints show;
docs/decisions/incidents.md gives the reasoning.

A failure belongs to at most one incident: the most specific cause keeps the failures it
explains, and a broader burst that overlaps it stands only on the failures left to it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime

import pandas as pd

from store.incidents import INCIDENT_COLUMNS, MEMBER_COLUMNS
from store.project import IncidentSettings

# The columns of the failures detection reads (store.incidents.incident_failures): ``at`` is
# when the job started, ``labels`` a tuple of str.
FAILURE_COLUMNS = [
    "run_id",
    "run_attempt",
    "job_id",
    "category",
    "signature",
    "line",
    "at",
    "runner_name",
    "labels",
    "workflow_path",
    "name",
]
# The columns of the jobs exposed to a cause (store.incidents.exposed_jobs).
JOB_COLUMNS = [
    "run_id",
    "run_attempt",
    "job_id",
    "at",
    "runner_name",
    "labels",
    "workflow_path",
    "name",
]
CAUSES = ("host", "signature", "label", "workflows")  # most specific first
KIND = {"host": "runner", "signature": "signature", "label": "runner", "workflows": "workflows"}
ID = ["run_id", "run_attempt", "job_id"]
LINE_CHARS = 80  # of the deciding line, in an incident's label


@dataclass(frozen=True)
class Burst:
    """Failures of one cause, each within the window of the next."""

    cause: str
    key: str  # the host, signature, label or category
    category: str
    failures: pd.DataFrame

    @property
    def start(self) -> pd.Timestamp:
        return pd.Timestamp(self.failures["at"].min())

    @property
    def end(self) -> pd.Timestamp:
        return pd.Timestamp(self.failures["at"].max())


def _keyed(failures: pd.DataFrame, cause: str) -> pd.DataFrame:
    """``failures`` with the column ``key`` of ``cause`` (a failure has one key per label)."""
    if cause == "host":
        frame = failures.assign(key=failures["runner_name"])
    elif cause == "signature":  # only where a line decided it: one message, not "no log"
        decided = failures["line"].notna() & (failures["line"] != "")
        frame = failures[decided].assign(key=failures["signature"])
    elif cause == "label":
        frame = failures.assign(key=failures["labels"]).explode("key")
    else:
        frame = failures.assign(key=failures["category"])
    frame = frame[frame["key"].notna() & (frame["key"] != "")]
    if cause in ("label", "workflows"):  # a category, not a cause: nothing matched
        frame = frame[frame["category"] != "unknown"]
    return frame


def _min_workflows(cause: str, settings: IncidentSettings) -> int:
    """A stuck host fails whatever it is sent, one workflow's jobs or many: its cause is the
    host, whose name no other job shares by chance. A signature, a label or a category in one
    workflow alone is that workflow's own failure, not an incident."""
    return 1 if cause == "host" else settings.min_workflows


def _enough(failures: pd.DataFrame, cause: str, settings: IncidentSettings) -> bool:
    return (
        failures["job_id"].nunique() >= settings.min_jobs
        and failures["run_id"].nunique() >= settings.min_runs
        and failures["workflow_path"].nunique() >= _min_workflows(cause, settings)
    )


def bursts(failures: pd.DataFrame, cause: str, settings: IncidentSettings) -> Iterator[Burst]:
    """The bursts of ``cause`` in ``failures`` that hit enough jobs, runs and workflows, by
    key and then time; the host and label causes group by category as well. Chains are cut
    and counted for every key at once: a host cause has a key per runner."""
    by = ["key", "category"] if cause in ("host", "label") else ["key"]
    frame = _keyed(failures, cause).sort_values([*by, "at", *ID], kind="stable")
    window = pd.Timedelta(hours=settings.window_hours)
    same_key = (frame[by] == frame[by].shift()).all(axis=1)
    chain = (~same_key | (frame["at"].diff() > window)).cumsum()
    sizes = frame.groupby(chain).agg(
        jobs=("job_id", "nunique"),
        runs=("run_id", "nunique"),
        workflows=("workflow_path", "nunique"),
    )
    enough = sizes.index[
        (sizes["jobs"] >= settings.min_jobs)
        & (sizes["runs"] >= settings.min_runs)
        & (sizes["workflows"] >= _min_workflows(cause, settings))
    ]
    kept = chain.isin(enough)
    for _, group in frame[kept].groupby(chain[kept], sort=True):
        category = group["category"].mode().sort_values().iloc[0]
        yield Burst(cause, str(group["key"].iloc[0]), str(category), group.drop(columns="key"))


def candidate_spans(
    failures: pd.DataFrame, settings: IncidentSettings
) -> list[tuple[datetime, datetime]]:
    """The time spans, merged where they overlap, of every burst big enough to be an
    incident: the only spans whose jobs ``detect`` needs to weigh a burst against the jobs
    exposed to it."""
    return _merged((b.start, b.end) for cause in CAUSES for b in bursts(failures, cause, settings))


def _merged(spans: Iterable[tuple[datetime, datetime]]) -> list[tuple[datetime, datetime]]:
    merged: list[tuple[datetime, datetime]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def affected_spans(
    starts: pd.Series,
    touched: pd.Series,
    held: Sequence[tuple[datetime, datetime]],
    settings: IncidentSettings,
) -> list[tuple[datetime, datetime]]:
    """Where changed runs can change the incidents, merged: the stretches of failures (their
    start times ``starts``) without a gap over the window that hold a start of the runs' jobs
    (``touched``) or overlap an incident that held one of their failures (``held``), and those
    incidents' spans. A burst chains failures at most the window apart, so it never crosses
    such a gap, and an incident only weighs the jobs within its span: detection within these
    spans finds what detection over every failure finds there, and nothing changes outside."""
    times = starts.sort_values(ignore_index=True)
    stretch = (times.diff() > pd.Timedelta(hours=settings.window_hours)).cumsum()
    bounds = times.groupby(stretch).agg(["min", "max"])
    first, last = bounds["min"].reset_index(drop=True), bounds["max"].reset_index(drop=True)
    touched = touched.dropna().reset_index(drop=True)
    begun = pd.Series(first.searchsorted(touched, side="right") - 1)  # the last stretch begun
    ends = last.reindex(begun).reset_index(drop=True)  # NaT before the first stretch
    hit = pd.Series(first.index.isin(begun[touched <= ends]))
    for start, end in held:
        hit |= (first <= end) & (last >= start)
    return _merged([*zip(first[hit], last[hit], strict=True), *held])


def _exposed(jobs: pd.DataFrame, burst: Burst) -> int:
    """How many job attempts were exposed to ``burst``'s cause while it lasted."""
    within = jobs[(jobs["at"] >= burst.start) & (jobs["at"] <= burst.end)]
    if burst.cause == "host":
        return int((within["runner_name"] == burst.key).sum())
    if burst.cause == "label":
        return int(within["labels"].map(lambda labels: burst.key in labels).sum())
    hit = set(zip(burst.failures["workflow_path"], burst.failures["name"], strict=True))
    pairs = zip(within["workflow_path"], within["name"], strict=True)
    return sum(pair in hit for pair in pairs)


def _incident_id(repo: str, burst: Burst) -> str:
    first = burst.failures.iloc[0]
    text = f"{repo}|{burst.cause}|{burst.key}|{first.run_id}|{first.run_attempt}|{first.job_id}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _label(burst: Burst) -> str:
    """The cause in a few words, for people."""
    if burst.cause == "host":
        return f"{burst.category} on runner {burst.key}"
    if burst.cause == "label":
        return f"{burst.category} on runners labelled {burst.key}"
    if burst.cause == "workflows":
        workflows = burst.failures["workflow_path"].nunique()
        return f"{burst.category} across {workflows} workflows"
    lines = burst.failures["line"].dropna()
    line = str(lines.iloc[0]).strip() if len(lines) else burst.key
    if len(line) > LINE_CHARS:
        line = line[: LINE_CHARS - 1] + "…"
    return f"{burst.category}: {line}"


def _row(repo: str, burst: Burst) -> dict[str, object]:
    failures = burst.failures
    signatures = failures["signature"].dropna().unique()
    return {
        "id": _incident_id(repo, burst),
        "repo": repo,
        "kind": KIND[burst.cause],
        "category": burst.category,
        "signature": signatures[0] if len(signatures) == 1 else None,
        "runner": burst.key if burst.cause in ("host", "label") else None,
        "label": _label(burst),
        "started_at": burst.start,
        "ended_at": burst.end,
        "jobs": failures["job_id"].nunique(),
        "runs": failures["run_id"].nunique(),
        "workflows": failures["workflow_path"].nunique(),
    }


def detect(
    failures: pd.DataFrame, jobs: pd.DataFrame, settings: IncidentSettings, repo: str
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The incidents of ``repo`` (columns INCIDENT_COLUMNS, oldest first) and their failures
    (MEMBER_COLUMNS) among ``failures`` (FAILURE_COLUMNS); ``jobs`` (JOB_COLUMNS): every job
    attempt that started within ``candidate_spans(failures, settings)``."""
    rows: list[dict[str, object]] = []
    members: list[pd.DataFrame] = []
    taken: set[tuple[int, int, int]] = set()
    ids = pd.Series(list(failures[ID].itertuples(index=False, name=None)), index=failures.index)
    for cause in CAUSES:
        # a broader cause's bursts are found among the failures the narrower ones left; the
        # biggest burst keeps a failure two of them hold (two labels of one job)
        left = failures[~ids.isin(taken)] if taken else failures
        found = sorted(bursts(left, cause, settings), key=lambda b: (-len(b.failures), b.key))
        for burst in found:
            mine = ~ids[burst.failures.index].isin(taken)
            rest = Burst(burst.cause, burst.key, burst.category, burst.failures[mine.to_numpy()])
            if not _enough(rest.failures, cause, settings):
                continue
            if len(rest.failures) < settings.min_share * _exposed(jobs, rest):
                continue
            rows.append(_row(repo, rest))
            members.append(rest.failures[ID].assign(incident_id=_incident_id(repo, rest)))
            taken.update(ids[rest.failures.index])
    incidents = pd.DataFrame(rows, columns=INCIDENT_COLUMNS)
    if len(incidents):
        incidents = incidents.sort_values(["started_at", "id"], ignore_index=True)
    if not members:
        return incidents, pd.DataFrame(columns=MEMBER_COLUMNS)
    return incidents, pd.concat(members, ignore_index=True)[MEMBER_COLUMNS]
