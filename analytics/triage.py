"""Triage: which failure signatures recur on the default branch, and what ``ciflake triage``
does about them tonight (file, update, close, reopen, or wait for a later night). Pure: the
store loads the frames, collector.triage_post does the plan on GitHub.

A signature without a deciding line (``line`` empty: the classifier had no log line, e.g. an
expired log) is never tracked: it is a gap in the evidence, not one problem."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pandas as pd

from store.project import TriageSettings

__all__ = [
    "TriageSettings",
    "Step",
    "TriagePlan",
    "Draft",
    "signature_stats",
    "recurring",
    "plan",
]

# Close reasons with which a person told GitHub not to act on the issue again.
PERSON_REFUSALS = ("not_planned", "duplicate")
STATS_COLUMNS = ("failures", "runs", "first_seen", "last_seen", "category", "line", "recurring")


def _tracked(failures: pd.DataFrame) -> pd.DataFrame:
    """The failures that have a deciding line."""
    line = failures["line"].fillna("").astype(str).str.strip()
    return failures[line != ""]


def signature_stats(
    failures: pd.DataFrame, now: datetime, settings: TriageSettings
) -> pd.DataFrame:
    """Per signature with a deciding line, its failures within the last ``window_days`` days
    before ``now``: failures, runs (distinct), first_seen, last_seen, category and line (of
    its latest failure), and ``recurring``, whether it crosses the threshold. ``failures``:
    the default branch's, columns signature, category, line, run_id, created_at. Index:
    signature; the largest first."""
    since = pd.Timestamp(now) - pd.Timedelta(days=settings.window_days)
    frame = _tracked(failures)
    frame = frame[(frame["created_at"] >= since) & (frame["created_at"] <= pd.Timestamp(now))]
    if frame.empty:
        return pd.DataFrame(columns=list(STATS_COLUMNS), index=pd.Index([], name="signature"))
    frame = frame.sort_values(["created_at", "run_id"])
    grouped = frame.groupby("signature", sort=False)
    stats = pd.DataFrame(
        {
            "failures": grouped.size(),
            "runs": grouped["run_id"].nunique(),
            "first_seen": grouped["created_at"].min(),
            "last_seen": grouped["created_at"].max(),
            "category": grouped["category"].last(),
            "line": grouped["line"].last(),
        }
    )
    stats["recurring"] = (stats["failures"] >= settings.min_failures) & (
        stats["runs"] >= settings.min_runs
    )
    stats.index.name = "signature"
    order = stats.reset_index().sort_values(
        ["failures", "runs", "signature"], ascending=[False, False, True]
    )
    return order.set_index("signature")


def recurring(stats: pd.DataFrame) -> pd.DataFrame:
    """The signatures of ``signature_stats`` that cross the threshold, the largest first."""
    return stats[stats["recurring"].astype(bool)]


@dataclass(frozen=True)
class Step:
    """One thing to do tonight about one signature; ``issue_number`` None: not filed yet."""

    action: str  # file | update | close | reopen | waiting | recurred
    signature: str
    issue_number: int | None
    why: str


@dataclass(frozen=True)
class TriagePlan:
    """What ``ciflake triage`` does tonight. ``waiting``: recurring and unlinked, beyond the
    night's cap; ``recurred``: a person's linked issue closed, and the signature failed since
    (the summary says so; ciflake never reopens a person's issue)."""

    file: tuple[Step, ...] = ()
    update: tuple[Step, ...] = ()
    close: tuple[Step, ...] = ()
    reopen: tuple[Step, ...] = ()
    waiting: tuple[Step, ...] = ()
    recurred: tuple[Step, ...] = field(default=())

    @property
    def writes(self) -> tuple[Step, ...]:
        """Every step that writes to GitHub, in the order they are done."""
        return (*self.reopen, *self.update, *self.close, *self.file)


@dataclass(frozen=True)
class Draft:
    """An issue as ciflake would write it (reports.triage_body): ``sha256`` is its counts
    section's, stored as the link's ``body_sha256`` to tell whether the counts changed since
    (``plan``'s ``digests``)."""

    title: str
    body: str
    section: str
    sha256: str
    category: str


def _last_seen(history: pd.DataFrame) -> dict[str, pd.Timestamp]:
    if history.empty:
        return {}
    return {str(k): v for k, v in history.groupby("signature")["created_at"].max().items()}


def _is_ours(link: Mapping[Hashable, Any]) -> bool:
    return link.get("source") == "ciflake" and pd.notna(link.get("issue_number"))


def _refused_by_person(link: Mapping[Hashable, Any]) -> bool:
    """A person closed the issue as not planned (or as a duplicate): it stays closed."""
    return link.get("state_reason") in PERSON_REFUSALS and link.get("closed_by") != link.get(
        "set_by"
    )


def plan(
    stats: pd.DataFrame,
    history: pd.DataFrame,
    links: pd.DataFrame,
    now: datetime,
    settings: TriageSettings,
    *,
    digests: Mapping[str, str] | None = None,
    filed_tonight: int = 0,
) -> TriagePlan:
    """Tonight's plan for one repository.

    ``stats``: ``signature_stats``; ``history``: the default branch's
    failures (signature, created_at) since at least ``quiet_days`` before ``now``; ``links``:
    the repository's known issues (signature, source, issue_number, state, state_reason,
    closed_at, closed_by, set_by, body_sha256); ``digests``: per signature, the sha256 of the
    counts section its issue would carry now (an issue whose stored ``body_sha256`` differs is
    updated); ``filed_tonight``: issues already filed in the last 20 hours, counted against
    ``max_new``. An issue ciflake filed is closed after ``quiet_days`` days without a failure
    and reopened when the signature fails after it was closed, unless a person closed it as
    not planned."""
    now_ts = pd.Timestamp(now)
    quiet_since = now_ts - pd.Timedelta(timedelta(days=settings.quiet_days))
    last_seen = _last_seen(history)
    by_signature = {str(row["signature"]): row for row in links.to_dict("records")}
    file: list[Step] = []
    waiting: list[Step] = []
    room = max(0, settings.max_new - filed_tonight)
    for signature, row in recurring(stats).iterrows():
        if str(signature) in by_signature:
            continue
        why = f"{row['failures']} failures in {row['runs']} runs"
        if len(file) < room:
            file.append(Step("file", str(signature), None, why))
        else:
            waiting.append(Step("waiting", str(signature), None, f"{why}; over tonight's cap"))
    update, close, reopen, recurred = [], [], [], []
    for signature, link in sorted(by_signature.items()):
        seen = last_seen.get(signature)
        closed_at = link.get("closed_at")
        failed_since_closed = (
            link.get("state") == "closed"
            and seen is not None
            and (pd.isna(closed_at) or seen > pd.Timestamp(closed_at))
        )
        number = int(link["issue_number"]) if pd.notna(link.get("issue_number")) else None
        if not _is_ours(link):
            if failed_since_closed and number is not None:
                recurred.append(Step("recurred", signature, number, f"failed {seen:%Y-%m-%d}"))
            continue
        if link.get("state") == "closed":
            if failed_since_closed and not _refused_by_person(link):
                reopen.append(Step("reopen", signature, number, f"failed {seen:%Y-%m-%d}"))
            else:
                continue
        elif seen is None or seen <= quiet_since:
            since = "no failure loaded" if seen is None else f"last failed {seen:%Y-%m-%d}"
            close.append(Step("close", signature, number, f"quiet: {since}"))
            continue
        digest = (digests or {}).get(signature)
        if digest is not None and digest != link.get("body_sha256"):
            update.append(Step("update", signature, number, "counts changed"))
    return TriagePlan(
        tuple(file), tuple(update), tuple(close), tuple(reopen), tuple(waiting), tuple(recurred)
    )
