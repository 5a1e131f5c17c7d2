"""Report tables of failures: each classified failure, the categories per period, the unknown
ones by stage, the evidence they rest on, the signatures, the known issues, the incidents.

The categories, the stages, the bases and the signatures are computed from one counts frame
(store.failure_counts, one statement; from the raw rows by pandas when the derived tables are
not current), read once per query and data stamp for all four: the Failures page asks for them
together."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd
from sqlalchemy import Engine

from analytics.evidence import KNOWN, counted_shares, failure_basis
from analytics.newness import is_new
from analytics.rates import with_period
from analytics.text import filled
from reports.query import Query
from reports.table_inputs import shared_counts, with_lineage
from reports.table_spec import ReportTable
from store.failure_counts import COUNT_KEYS, failure_counts, failures_at
from store.frame_queries import load_failures, run_outcomes
from store.incidents import incidents_hitting
from store.page_queries import failure_details, signature_triage
from store.project import Project
from store.runfilter import RunFilter
from store.triage import TRIAGE_COLUMNS, triage_signatures

CATEGORIES_COLUMNS = ["period", "category", "failures"]
UNKNOWN_STAGES_COLUMNS = ["stage", "basis", "failures"]
BASES_COLUMNS = ["basis", "failures", "share"]
NO_STEP = "(no step)"  # the stage of a job that stopped in no known step

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


def raw_failure_counts(engine: Engine, where: RunFilter) -> pd.DataFrame:
    """store.failure_counts.failure_counts from the failures and runs as stored, by pandas."""
    every = RunFilter(repo=where.repo)
    failures = load_failures(engine, every, detail=("signature",))
    runs = run_outcomes(engine, every)[["run_id", "created_at"]]
    rows = failures.merge(runs, on="run_id")
    chosen = rows["run_id"].isin(run_outcomes(engine, where)["run_id"])
    rows = rows.assign(
        chosen=chosen,
        day=rows["created_at"].dt.floor("D").where(chosen),
        run_failures=rows["job_id"].eq(0).astype(int),
    )
    for column in COUNT_KEYS[3:]:
        rows[column] = rows[column].where(chosen)
    counted = rows.groupby(COUNT_KEYS, dropna=False).agg(
        failures=("run_id", "size"),
        run_failures=("run_failures", "sum"),
        first_at=("created_at", "min"),
        last_at=("created_at", "max"),
    )
    return counted.reset_index()


def counts_of(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    """The failure counts of ``query`` (store.failure_counts.COUNT_COLUMNS). Shared by the
    tables of one query (reports.table_inputs.shared_counts): do not modify."""
    return _counted(engine, project, query)[0]


def _counted(engine: Engine, project: Project, query: Query) -> tuple[pd.DataFrame, pd.DataFrame]:
    """counts_of, and its rows of the query's runs each with its ``basis``
    (analytics.evidence): computed once for the four tables of the Failures page that read
    them, not filtered and classified again by each."""
    where = query.where(project)

    def compute(current: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
        counts = failure_counts(engine, where) if current else raw_failure_counts(engine, where)
        chosen = counts[counts["chosen"]]
        return counts, chosen.assign(basis=failure_basis(chosen))

    return shared_counts("failures", engine, project, where, compute)


def _chosen(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    """The counts of the query's runs, with each group's basis (analytics.evidence)."""
    return _counted(engine, project, query)[1]


def categories_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    """Failures per category and day or week (``query.period``), oldest first."""
    periods = with_period(_chosen(engine, project, query), query.period, "day")
    return periods.groupby(["period", "category"])["failures"].sum().reset_index()


def unknown_by_stage(counts: pd.DataFrame) -> pd.DataFrame:
    """The unknown failures (``basis`` not in analytics.evidence.KNOWN) of ``counts`` (stage,
    basis, failures) per stage and basis, most first; stage NO_STEP where the job stopped in no
    known step. Columns: stage, basis, failures."""
    unknown = counts[counts["basis"].notna() & ~counts["basis"].isin(KNOWN)]
    table = (
        unknown.assign(stage=filled(unknown["stage"], NO_STEP))
        .groupby(["stage", "basis"])["failures"]
        .sum()
        .reset_index()
    )
    order = table.sort_values(["failures", "stage", "basis"], ascending=[False, True, True])
    return order.reset_index(drop=True)


def unknown_stages_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    return unknown_by_stage(_chosen(engine, project, query))


def bases_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    """The failures per basis and their share, in the order of analytics.evidence.BASES: the
    Failures page's "How much of this is known" (analytics.evidence.described)."""
    chosen = _chosen(engine, project, query)
    return counted_shares(chosen.set_index("basis")["failures"])


def failures_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    failures = failure_details(engine, query.where(project)).iloc[::-1].reset_index(drop=True)
    return with_lineage(failures, project)[FAILURES_COLUMNS]


def signatures_table(engine: Engine, project: Project, query: Query) -> pd.DataFrame:
    """``new`` (analytics.newness): first seen within NEW_DAYS of the range's end, now for a
    range left open."""
    where = query.where(project)
    table = signature_rows(engine, where, counts_of(engine, project, query))
    end = pd.Timestamp(query.until or datetime.now(UTC))
    return table.assign(new=is_new(table["first_seen"], end))[SIGNATURES_COLUMNS]


def signature_rows(engine: Engine, where: RunFilter, counts: pd.DataFrame) -> pd.DataFrame:
    """Per signature of ``where``'s runs, most failures first, from their ``counts``
    (store.failure_counts): its counts, its first sighting in the whole history and in the
    range, its newest failure's job_id, category, rule, line, runner and link, its known issue
    or correction. ``jobs``: distinct job ids, a run's own failures (job 0) one job."""
    grouped = counts[counts["chosen"]].groupby("signature")
    sums = grouped[["failures", "run_failures"]].sum()  # built-in sums: named ones cost more
    table = pd.DataFrame(
        {
            "failures": sums["failures"],
            "job_failures": sums["failures"] - sums["run_failures"],
            "run_failures": sums["run_failures"],
            "first_seen_in_range": grouped["first_at"].min(),
            "last_seen_in_range": grouped["last_at"].max(),
        }
    )
    table = table.assign(
        jobs=table["job_failures"] + table["run_failures"].gt(0).astype(int),
        first_seen=counts.groupby("signature")["first_at"].min().reindex(table.index),
    ).reset_index()
    newest = failures_at(engine, where, sorted(set(table["last_seen_in_range"])))
    last = table.set_index("signature")["last_seen_in_range"].reindex(newest["signature"])
    newest = newest[newest["created_at"].to_numpy() == last.to_numpy()].sort_values(
        ["created_at", "job_id", "run_attempt", "run_id"], ascending=False
    )
    example = ["job_id", "category", "rule", "line", "runner_name", "html_url"]
    # each signature's example and triage looked up by its key: two merges cost twice that
    keys = table["signature"].to_numpy()
    examples = newest.drop_duplicates("signature").set_index("signature")[example]
    triage = signature_triage(engine, where.repo).set_index("signature")
    looked_up: list[pd.DataFrame] = [
        frame.reindex(keys).reset_index(drop=True) for frame in (examples, triage)
    ]
    table = pd.concat([table, *looked_up], axis=1)
    order = table.sort_values(["failures", "signature"], ascending=[False, True])
    return order.reset_index(drop=True)


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
        "categories",
        "failures (job attempts) of one category in a week (on the Failures page: or a day)",
        CATEGORIES_COLUMNS,
        categories_table,
        "category",
    ),
    ReportTable(
        "unknown-stages",
        "the failures of unknown category that stopped in one stage, for one reason",
        UNKNOWN_STAGES_COLUMNS,
        unknown_stages_table,
    ),
    ReportTable(
        "failure-bases",
        "the failures whose category rests on one basis (the evidence that decided it, or "
        "why nothing did), and their share",
        BASES_COLUMNS,
        bases_table,
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
