"""What tonight's triage plan is made of, read from the store: the same frames for ``ciflake
triage`` (which files from them) and for the nightly summary (which says what is recurring,
waiting and recurred), so both tell the same story."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

import pandas as pd
from sqlalchemy import Engine

from analytics.triage import TriagePlan, TriageSettings, plan, signature_stats
from store.issues import filed_since, links, triage_failures
from store.project import Project
from store.runfilter import RunFilter

# The nightly cap counts the issues filed within NIGHT before now: shorter than a day, so that
# a cron that starts a little earlier than the night before (a queued runner, a moved schedule)
# does not find last night's filings still inside the window and file nothing; long enough
# that a second run on the same night still counts the first one's.
NIGHT = timedelta(hours=20)


@dataclass(frozen=True)
class TriageFrames:
    """``failures``: the default branch's (store.issues.triage_failures) since the longer of
    the threshold's window and the closing period before ``now``; ``stats``: their
    analytics.triage.signature_stats; ``links``: the repository's known issues; ``filed``:
    the issues filed within ``NIGHT`` (20 hours) before ``now``, counted against the nightly
    cap."""

    failures: pd.DataFrame
    stats: pd.DataFrame
    links: pd.DataFrame
    filed: int

    def plan(
        self,
        now: datetime,
        settings: TriageSettings,
        digests: Mapping[str, str] | None = None,
    ) -> TriagePlan:
        """Tonight's plan from these frames (analytics.triage.plan); ``digests``: the counts
        sections' hashes, when the caller drafted the issues (an update is planned only then)."""
        return plan(
            self.stats,
            self.failures,
            self.links,
            now,
            settings,
            digests=digests,
            filed_tonight=self.filed,
        )


def triage_frames(engine: Engine, project: Project, now: datetime) -> TriageFrames:
    """The frames of ``project``'s plan at ``now``, GitHub's states as last read."""
    settings = project.triage
    days = max(settings.window_days, settings.quiet_days)
    where = RunFilter(
        repo=project.repo, since=now - timedelta(days=days), branch=project.default_branch
    )
    failures = triage_failures(engine, where)
    return TriageFrames(
        failures,
        signature_stats(failures, now, settings),
        links(engine, project.repo),
        filed_since(engine, project.repo, now - NIGHT),
    )
