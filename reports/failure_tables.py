"""Report tables of failures: each classified failure, its signature, the known issues, the
incidents."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd
from sqlalchemy import Engine

from analytics.newness import is_new
from reports.query import Query
from reports.table_inputs import with_lineage
from reports.table_spec import ReportTable
from store.incidents import incidents_hitting
from store.page_queries import failure_details, signature_summary
from store.project import Project
from store.triage import TRIAGE_COLUMNS, triage_signatures

FAILURES_COLUMNS = [
    "run_id",
    "run_attempt",
    "job_id",
    "created_at",
    "workflow_path",
    "lineage",
    "job_name",
    "runner_name",
    "category",
    "rule",
    "signature",
    "line_number",
    "line",
    "log_status",
    "html_url",
    "evidence",
    "stage",
    "classifier_category",
    "classifier_evidence",
    "correction_note",
]


SIGNATURES_COLUMNS = [
    "signature",
    "category",
    "rule",
    "failures",
    "jobs",
    "first_seen",
    "first_seen_in_range",
    "last_seen_in_range",
    "line",
    "runner_name",
    "html_url",
    "issue_url",
    "issue_state",
    "correction_note",
    "new",
]


KNOWN_ISSUES_COLUMNS = list(TRIAGE_COLUMNS)


INCIDENTS_COLUMNS = [
    "incident_id",
    "started_at",
    "ended_at",
    "kind",
    "category",
    "label",
    "signature",
    "runner",
    "jobs",
    "runs",
    "workflows",
]


def failures_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    failures = failure_details(engine, query.where(project)).iloc[::-1].reset_index(drop=True)
    return with_lineage(failures, project)[FAILURES_COLUMNS]


def signatures_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    """``new`` (analytics.newness): first seen in the whole history within NEW_DAYS of the
    range's end, now for a range left open."""
    renamed = {"first_seen_here": "first_seen_in_range", "last_seen": "last_seen_in_range"}
    table = signature_summary(engine, query.where(project)).rename(columns=renamed)
    end = pd.Timestamp(query.until or datetime.now(UTC))
    return table.assign(new=is_new(table["first_seen"], end))[SIGNATURES_COLUMNS]


def known_issues_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    """The linked and corrected signatures, their failures counted in the query's runs."""
    return triage_signatures(engine, query.where(project))[KNOWN_ISSUES_COLUMNS]


def incidents_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    """The incidents that hit at least one of the query's runs, oldest first; their counts
    are over every run they hit."""
    found = incidents_hitting(engine, query.where(project))
    return found.rename(columns={"id": "incident_id"})[INCIDENTS_COLUMNS]


TABLES = (
    ReportTable(
        "failures",
        "a classified failure, with the evidence that decided it",
        FAILURES_COLUMNS,
        failures_table,
        "category",
    ),
    ReportTable(
        "signatures",
        "a failure signature, with its newest example",
        SIGNATURES_COLUMNS,
        signatures_table,
        "category",
    ),
    ReportTable(
        "known-issues",
        "a failure signature linked to an issue or corrected by a maintainer",
        KNOWN_ISSUES_COLUMNS,
        known_issues_table,
        "category",
    ),
    ReportTable(
        "incidents",
        "a burst of failures with one cause (a host, a signature, a category across "
        "workflows), counted once",
        INCIDENTS_COLUMNS,
        incidents_table,
        "category",
    ),
)
