"""Typed SQLAlchemy 2 models: one table per GitHub resource, keyed by GitHub's own ids.

GitHub's ids as primary keys make every write an idempotent upsert, so an interrupted
collect can simply be run again. Times are stored in UTC (see ``UTCDateTime``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.sql.expression import false, text

NAMING_CONVENTION = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every backend (SQLite drops the zone otherwise)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class Base(DeclarativeBase):
    if TYPE_CHECKING:  # every model here maps one Table; SQLAlchemy types it as any FromClause
        __table__: ClassVar[Table]

    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {
        datetime: UTCDateTime(),
        dict[str, Any]: JSON(),
        list[Any]: JSON(),
    }


class Workflow(Base):
    __tablename__ = "workflows"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    repo: Mapped[str] = mapped_column(String(200), index=True)
    path: Mapped[str] = mapped_column(String(500))
    name: Mapped[str] = mapped_column(String(500))
    state: Mapped[str] = mapped_column(String(50))
    created_at: Mapped[datetime | None]
    updated_at: Mapped[datetime | None]
    html_url: Mapped[str | None] = mapped_column(String(1000))


# The columns every scoped read asks of a run (store.runfilter.conditions) and the page
# statements group or order by (store.job_counts), so they read this index alone: ordered by
# workflow and time within a branch and repository, as the window statements partition. The
# branch comes first: a read of a whole repository has the indexes that start with it. Last,
# the commit: the status tiles read every run of the range with it (migration 0014).
SCOPE_READS = Index(
    "ix_workflow_runs_scope_reads",
    "head_branch",
    "repo",
    "workflow_path",
    "created_at",
    "id",
    "event",
    "head_sha",
)


# A repository's runs in time order: the loaders every page calls (store.page_queries.run_span,
# latest_run_url) read its two ends instead of every run of the repository (0.28 -> 0.05 s and
# 0.11 -> 0.001 s on the 16x benchmark). The statements over the failures and the incident
# members start from those rows and look each run up by its key (store.runfilter.Unindexed,
# selects_run), so that this index cannot lead SQLite to walk the runs (migration 0012). It
# holds what the reads of a scope without a branch (pull requests, both) take of each run, which
# read the runs from it alone instead of visiting each wide row (migration 0017).
RUNS_IN_TIME = Index(
    "ix_workflow_runs_repo_created_at",
    *("repo", "created_at", "id", "event", "workflow_path", "head_branch", "head_sha"),
)


# A workflow's runs of one event in time order: SILENT's newest scheduled run of each workflow
# (store.triggers.workflow_watch) is the last entry of its range, where the (workflow_id,
# created_at) index walked every run since (migration 0013).
RUNS_BY_EVENT = Index(None, "workflow_id", "event", "created_at")


class WorkflowRun(Base):
    """A workflow run as GitHub reports it now (its latest attempt)."""

    __tablename__ = "workflow_runs"
    __table_args__ = (
        Index(None, "workflow_id", "created_at"),
        SCOPE_READS,
        RUNS_IN_TIME,
        RUNS_BY_EVENT,
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    repo: Mapped[str] = mapped_column(String(200), index=True)
    workflow_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("workflows.id"))
    workflow_path: Mapped[str] = mapped_column(String(500))
    name: Mapped[str | None] = mapped_column(String(500))
    display_title: Mapped[str | None] = mapped_column(Text)
    event: Mapped[str] = mapped_column(String(50))
    head_branch: Mapped[str | None] = mapped_column(String(500))
    head_sha: Mapped[str] = mapped_column(String(40))
    run_number: Mapped[int] = mapped_column(Integer)
    run_attempt: Mapped[int] = mapped_column(Integer)
    status: Mapped[str | None] = mapped_column(String(50))
    conclusion: Mapped[str | None] = mapped_column(String(50))
    created_at: Mapped[datetime] = mapped_column(index=True)
    updated_at: Mapped[datetime | None]
    run_started_at: Mapped[datetime | None]
    html_url: Mapped[str | None] = mapped_column(String(1000))
    # GitHub says `cancelled` for a run whose job hit its time limit: ciflake reads the
    # annotations (or the duration) and counts it red. `conclusion` stays GitHub's word.
    timed_out: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # When GitHub answered 404 for a run stored earlier: it is asked for no more.
    deleted_at: Mapped[datetime | None]


class RunAttempt(Base):
    """One attempt of a run; GitHub identifies it by (run id, attempt number)."""

    __tablename__ = "run_attempts"

    run_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("workflow_runs.id", ondelete="CASCADE"), primary_key=True
    )
    attempt: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    status: Mapped[str | None] = mapped_column(String(50))
    conclusion: Mapped[str | None] = mapped_column(String(50))
    run_started_at: Mapped[datetime | None]
    updated_at: Mapped[datetime | None]
    job_count: Mapped[int | None] = mapped_column(Integer)
    timed_out: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())


# SQLite: the columns the dashboard reads of every job (store.frame_queries.job_outcomes), so the
# read never visits the wide table rows; its (run_id, run_attempt) prefix serves every lookup the
# plain index below serves on PostgreSQL, which cannot put a json column in a btree key.
# ``info["dialects"]`` tells the migrations' comparison (migrations/env.py) where each exists.
JOB_OUTCOME_READS = Index(
    "ix_jobs_outcome_reads",
    "run_id",
    "run_attempt",
    "name",
    "conclusion",
    "id",
    "runner_name",
    "labels",
    "timed_out",
    info={"dialects": ("sqlite",)},
).ddl_if(dialect="sqlite")

# PostgreSQL: the job names of runs read from the index alone (store.page_queries'
# daily_job_presence reads the first attempt's names of every run in scope: 3.1 -> 2.2 s at
# 16x, where the wide rows were read), as SQLite's index above gives them; its
# (run_id, run_attempt) prefix serves every lookup by run (migration 0015).
JOB_NAME_READS = Index(
    None, "run_id", "run_attempt", "name", info={"dialects": ("postgresql",)}
).ddl_if(dialect="postgresql")


class Job(Base):
    __tablename__ = "jobs"
    __table_args__ = (
        ForeignKeyConstraint(
            ["run_id", "run_attempt"],
            ["run_attempts.run_id", "run_attempts.attempt"],
            ondelete="CASCADE",
        ),
        JOB_NAME_READS,
        JOB_OUTCOME_READS,
    )

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    run_id: Mapped[int] = mapped_column(BigInteger)
    run_attempt: Mapped[int] = mapped_column(Integer)
    name: Mapped[str] = mapped_column(String(500))
    status: Mapped[str | None] = mapped_column(String(50))
    conclusion: Mapped[str | None] = mapped_column(String(50))
    created_at: Mapped[datetime | None]
    started_at: Mapped[datetime | None]
    completed_at: Mapped[datetime | None]
    runner_name: Mapped[str | None] = mapped_column(String(500))
    runner_group_name: Mapped[str | None] = mapped_column(String(500))
    labels: Mapped[list[Any]] = mapped_column(default=list)
    steps: Mapped[list[Any]] = mapped_column(default=list)
    html_url: Mapped[str | None] = mapped_column(String(1000))
    # The job hit its time limit although GitHub reports it `cancelled` (collector.annotations).
    timed_out: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())


class JobAnnotations(Base):
    """A job's check-run annotations (job id = check run id), fetched once: GitHub keeps them
    400 days, long after the log has gone. ``annotations``: [{level, title, message}, ...]."""

    __tablename__ = "job_annotations"

    job_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True
    )
    annotations: Mapped[list[Any]] = mapped_column(default=list)
    fetched_at: Mapped[datetime]


class JobLog(Base):
    """The archived log of a failed job: GitHub deletes logs after 90 days, we keep them."""

    __tablename__ = "job_logs"

    job_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True
    )
    status: Mapped[str] = mapped_column(String(20))
    compression: Mapped[str | None] = mapped_column(String(20))
    size: Mapped[int | None] = mapped_column(BigInteger)
    sha256: Mapped[str | None] = mapped_column(String(64))
    error: Mapped[str | None] = mapped_column(Text)
    fetched_at: Mapped[datetime]
    # zlib-compressed (``compression``); last, so that SQLite can write a big one in place
    # in chunks (store.blobs; migration 0004)
    content: Mapped[bytes | None] = mapped_column(LargeBinary)


class Failure(Base):
    """Why a run attempt or one of its jobs failed. ``job_id`` 0 stands for the run itself
    (a run that failed with no jobs), which keeps the key non-null on every backend."""

    __tablename__ = "failures"
    __table_args__ = (Index(None, "signature"), Index(None, "category"))

    run_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("workflow_runs.id", ondelete="CASCADE"), primary_key=True
    )
    run_attempt: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    job_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    category: Mapped[str] = mapped_column(String(50))
    rule: Mapped[str] = mapped_column(String(200))
    signature: Mapped[str] = mapped_column(String(64))
    line_number: Mapped[int | None] = mapped_column(Integer)
    line: Mapped[str | None] = mapped_column(Text)
    context: Mapped[list[Any]] = mapped_column(default=list)
    env: Mapped[dict[str, Any]] = mapped_column(default=dict)
    classifier_version: Mapped[str] = mapped_column(String(50))
    classified_at: Mapped[datetime]
    # Which evidence decided the category (store.vocabulary.EVIDENCE) and the stage the job
    # failed in, from its failed step's name (collector/classify/stages.toml).
    evidence: Mapped[str] = mapped_column(String(20), default="none", server_default="none")
    stage: Mapped[str | None] = mapped_column(String(50))
    # The classifier's own answer, kept beside ``category``/``evidence`` when a maintainer's
    # correction (``Correction``) overrides them: every reader sees the corrected values, a
    # page can show both, and ``triage uncorrect`` puts the classifier's back.
    classifier_category: Mapped[str] = mapped_column(String(50))
    classifier_evidence: Mapped[str] = mapped_column(String(20))


class ChangeEvent(Base):
    """A dated CI change added with ``ciflake events add`` or detected by the collector;
    the events of the config file are not copied here."""

    __tablename__ = "change_events"
    __table_args__ = (UniqueConstraint("repo", "occurred_at", "title"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    repo: Mapped[str] = mapped_column(String(200))
    occurred_at: Mapped[datetime]
    title: Mapped[str] = mapped_column(String(500))
    pr: Mapped[int | None] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(20))
    source: Mapped[str] = mapped_column(String(20))


class SyncState(Base):
    """Where the last collect of one workflow stopped, and the ETags that make the next one
    free when nothing changed."""

    __tablename__ = "sync_state"

    repo: Mapped[str] = mapped_column(String(200), primary_key=True)
    workflow_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    watermark: Mapped[datetime | None]
    # Lower bound of the last run listing. It moves only in whole weeks, so the listing URL, and
    # with it the ETag that makes an unchanged listing free, stays the same between collects.
    window_start: Mapped[datetime | None]
    etags: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # A backfill's listed spans (store.backfill.dump): {"from": floor, "done": [[a, b]],
    # "default": default_since then}.
    backfill: Mapped[dict[str, Any]] = mapped_column(default=dict, server_default=text("'{}'"))
    updated_at: Mapped[datetime]


class SyncLog(Base):
    """One row per collect: what it did and what it cost."""

    __tablename__ = "sync_log"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    repo: Mapped[str] = mapped_column(String(200))
    started_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]
    status: Mapped[str] = mapped_column(String(20))
    runs_new: Mapped[int] = mapped_column(Integer, default=0)
    runs_updated: Mapped[int] = mapped_column(Integer, default=0)
    jobs: Mapped[int] = mapped_column(Integer, default=0)
    logs_fetched: Mapped[int] = mapped_column(Integer, default=0)
    logs_expired: Mapped[int] = mapped_column(Integer, default=0)
    logs_missing: Mapped[int] = mapped_column(Integer, default=0)
    requests: Mapped[int] = mapped_column(Integer, default=0)
    requests_304: Mapped[int] = mapped_column(Integer, default=0)
    errors: Mapped[int] = mapped_column(Integer, default=0)
    rate_limit_remaining: Mapped[int | None] = mapped_column(Integer)
    duration_s: Mapped[float | None] = mapped_column(Float)
    message: Mapped[str | None] = mapped_column(Text)


class PostedComment(Base):
    """The one summary comment per PR or issue that ``ciflake summary --post`` keeps updated."""

    __tablename__ = "posted_comments"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    repo: Mapped[str] = mapped_column(String(200))
    issue_number: Mapped[int] = mapped_column(Integer)
    body_sha256: Mapped[str] = mapped_column(String(64))
    html_url: Mapped[str | None] = mapped_column(String(1000))
    created_at: Mapped[datetime]
    updated_at: Mapped[datetime]


# ---- derived tables: facts of completed runs, kept by the collector -----------------------------
# The transaction that stores a batch's raw rows marks its runs pending; the derived rows are
# recomputed for many runs at once (analytics.derived), so they are never out of step unknown
# to readers; ``ciflake db rebuild`` recomputes them all from the raw rows. What depends on
# configuration (lineages, tags, scope, events, invalid windows) is not stored here.


class LogicalRun(Base):
    """A run's attempts collapsed (analytics.outcomes.logical_runs) and the failure that speaks
    for it (analytics.outcomes.with_run_categories)."""

    __tablename__ = "logical_runs"

    run_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("workflow_runs.id", ondelete="CASCADE"), primary_key=True
    )
    red_attempts: Mapped[int] = mapped_column(Integer)
    first_attempt_conclusion: Mapped[str | None] = mapped_column(String(50))
    logical_outcome: Mapped[str] = mapped_column(String(20))
    failure_category: Mapped[str | None] = mapped_column(String(50))
    failure_basis: Mapped[str | None] = mapped_column(String(50))


class LogicalJob(Base):
    """A logical job of a run: its shards and attempts collapsed under the job-name rule of
    ``DerivedState.job_name_strip`` (analytics.outcomes.logical_jobs), with the category of
    its last red shard."""

    __tablename__ = "logical_jobs"
    # What store.job_counts counts the logical jobs of a run by (the flaky-jobs table), read
    # from this index alone instead of each wide row.
    __table_args__ = (
        Index(
            "ix_logical_jobs_count_reads", "run_id", "logical_job", "logical_outcome", "red_job_id"
        ),
    )

    run_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("workflow_runs.id", ondelete="CASCADE"), primary_key=True
    )
    logical_job: Mapped[str] = mapped_column(String(500), primary_key=True)
    attempts: Mapped[int] = mapped_column(Integer)
    last_attempt: Mapped[int] = mapped_column(Integer)
    first_conclusion: Mapped[str] = mapped_column(String(20))
    conclusion: Mapped[str] = mapped_column(String(20))
    logical_outcome: Mapped[str] = mapped_column(String(20))
    runner_name: Mapped[str | None] = mapped_column(String(500))
    labels: Mapped[list[Any]] = mapped_column(default=list)
    started_at: Mapped[datetime | None]
    completed_at: Mapped[datetime | None]
    red_attempts: Mapped[int] = mapped_column(Integer)
    red_attempt: Mapped[int | None] = mapped_column(Integer)
    red_job_id: Mapped[int | None] = mapped_column(BigInteger)
    category: Mapped[str | None] = mapped_column(String(50))


class Incident(Base):
    """A burst of failures that share a cause across many jobs in a short time (one stuck
    host, one Hub outage, one bad image): found by analytics.incidents from the stored
    failures and kept by the collector with the other derived tables. ``id`` is derived from
    the incident's cause and its first failure, so a rebuild gives the same ids."""

    __tablename__ = "incidents"
    __table_args__ = (Index(None, "repo", "started_at"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    repo: Mapped[str] = mapped_column(String(200))
    kind: Mapped[str] = mapped_column(String(20))  # signature | runner | workflows
    category: Mapped[str] = mapped_column(String(50))
    signature: Mapped[str | None] = mapped_column(String(64))
    runner: Mapped[str | None] = mapped_column(String(500))  # host name or runner label
    label: Mapped[str] = mapped_column(Text)  # the cause in a few words, for people
    started_at: Mapped[datetime]
    ended_at: Mapped[datetime]
    jobs: Mapped[int] = mapped_column(Integer)
    runs: Mapped[int] = mapped_column(Integer)
    workflows: Mapped[int] = mapped_column(Integer)


class IncidentFailure(Base):
    """A failure (one job attempt) that belongs to an incident; a failure belongs to at most
    one."""

    __tablename__ = "incident_failures"
    __table_args__ = (Index(None, "incident_id"),)

    run_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("workflow_runs.id", ondelete="CASCADE"), primary_key=True
    )
    run_attempt: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    job_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    incident_id: Mapped[str] = mapped_column(
        String(32), ForeignKey("incidents.id", ondelete="CASCADE")
    )


class DerivedPending(Base):
    """A run whose derived rows are out of date: marked in the transaction that stores its raw
    rows, cleared in the one that recomputes them (analytics.derived.flush). A collect
    recomputes its runs a thousand at a time, not batch by batch, and a kill in between leaves
    the marks, never a stale row that no one knows of."""

    __tablename__ = "derived_pending"

    run_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("workflow_runs.id", ondelete="CASCADE"), primary_key=True
    )
    repo: Mapped[str] = mapped_column(String(200), index=True)


class DerivedState(Base):
    """What a repository's derived tables were computed with: readers use them only while the
    derivation's version and the configured job-name rule are these, and no run of the
    repository is pending; the collector finds the incidents again when the configured
    incident settings differ."""

    __tablename__ = "derived_state"

    repo: Mapped[str] = mapped_column(String(200), primary_key=True)
    version: Mapped[int] = mapped_column(Integer)
    job_name_strip: Mapped[str] = mapped_column(Text)
    # the incident settings the incidents were found with (IncidentSettings.rule); None:
    # before incidents were kept
    incident_rule: Mapped[str | None] = mapped_column(Text)
    built_at: Mapped[datetime]


class _RollupKeys:
    """The keys a rollup shares: what a page's scope selects runs by (repository, workflow
    file, head branch, trigger event) and the run's UTC creation day as ``YYYY-MM-DD`` text,
    the same on every backend. A page whose dates fall on midnights counts from these rows
    instead of from every logical job or run (store.rollups)."""

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    repo: Mapped[str] = mapped_column(String(200))
    workflow_path: Mapped[str] = mapped_column(String(500))
    head_branch: Mapped[str | None] = mapped_column(String(500))
    event: Mapped[str] = mapped_column(String(50))
    day: Mapped[str] = mapped_column(String(10))


class RollupJob(_RollupKeys, Base):
    """Logical jobs counted per scope key and day, logical job, outcome, the incident of a red
    one (its last red shard's), runner and runner labels (as text), with the latest of their
    runs' times: kept with the derived tables by store.rollups, read by store.job_counts for
    the runners."""

    __tablename__ = "rollup_jobs"
    __table_args__ = (Index(None, "repo", "day"),)

    logical_job: Mapped[str] = mapped_column(String(500))
    logical_outcome: Mapped[str] = mapped_column(String(20))
    incident_id: Mapped[str | None] = mapped_column(String(32))
    runner_name: Mapped[str | None] = mapped_column(String(500))
    labels: Mapped[str] = mapped_column(Text)
    n: Mapped[int] = mapped_column(Integer)
    last_at: Mapped[datetime]  # the latest of their runs' creation times


class RollupJobOutcome(_RollupKeys, Base):
    """RollupJob without the runner: the logical jobs per scope key and day, logical job,
    outcome and incident, with the latest of their runs' times. Most runners run a job or two,
    so what counts no runner reads a third of the rows (store.job_counts, store
    .migration_counts)."""

    __tablename__ = "rollup_job_outcomes"
    __table_args__ = (Index(None, "repo", "day"),)

    logical_job: Mapped[str] = mapped_column(String(500))
    logical_outcome: Mapped[str] = mapped_column(String(20))
    incident_id: Mapped[str | None] = mapped_column(String(32))
    n: Mapped[int] = mapped_column(Integer)
    last_at: Mapped[datetime]


class RollupRun(_RollupKeys, Base):
    """Logical runs counted per scope key and day, outcome and the incident of a red one (the
    smallest among its failures'): kept by store.rollups, read by store.overview_counts."""

    __tablename__ = "rollup_runs"
    __table_args__ = (Index(None, "repo", "day"),)

    logical_outcome: Mapped[str] = mapped_column(String(20))
    incident_id: Mapped[str | None] = mapped_column(String(32))
    runs: Mapped[int] = mapped_column(Integer)


class RollupJobName(_RollupKeys, Base):
    """Runs counted per scope key and day and the name of a job of their first attempt (raw
    names, not logical jobs): when each job joined or left a workflow. Kept by store.rollups,
    read by store.page_queries.daily_job_presence."""

    __tablename__ = "rollup_job_names"
    __table_args__ = (Index(None, "repo", "day"),)

    name: Mapped[str] = mapped_column(String(500))
    runs: Mapped[int] = mapped_column(Integer)


class FetchRetry(Base):
    """A resource GitHub kept answering with an error (a job's log or annotations, a run's
    jobs): the collect recorded it and went on. Later collects ask again after a growing wait
    (collector.retries), and give up after a limit of tries. The row goes once an answer
    comes; ``run_id`` is the run to process again, which may not be stored yet."""

    __tablename__ = "fetch_retries"

    kind: Mapped[str] = mapped_column(String(20), primary_key=True)  # log | annotations | jobs
    item_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    repo: Mapped[str] = mapped_column(String(200), index=True)
    workflow_id: Mapped[int] = mapped_column(BigInteger)
    run_id: Mapped[int] = mapped_column(BigInteger)
    status: Mapped[int | None] = mapped_column(Integer)  # the HTTP status, None: no answer
    error: Mapped[str] = mapped_column(Text)
    tries: Mapped[int] = mapped_column(Integer)
    first_failed_at: Mapped[datetime]
    last_tried_at: Mapped[datetime]
    given_up: Mapped[bool] = mapped_column(default=False)


class WorkflowFile(Base):
    """The time limits of a tracked workflow file at one commit (collector.time_limits), read
    once: ``limits`` is None when GitHub had no such file at that commit."""

    __tablename__ = "workflow_files"

    repo: Mapped[str] = mapped_column(String(200), primary_key=True)
    path: Mapped[str] = mapped_column(String(500), primary_key=True)
    sha: Mapped[str] = mapped_column(String(64), primary_key=True)
    limits: Mapped[dict[str, Any] | None]
    fetched_at: Mapped[datetime]


class WorkflowTriggers(Base):
    """What a tracked workflow's file on the default branch says about when it runs, and
    whether the file is still there: read by the collector from the contents API (the
    `.github/workflows` listing and the file at the branch's head) for SILENT
    (analytics.silence). ``triggers``: {"events": [event names], "schedule": [{"cron": "...",
    "timezone": "..." | None}]}; None when the file could not be read."""

    __tablename__ = "workflow_triggers"

    repo: Mapped[str] = mapped_column(String(200), primary_key=True)
    path: Mapped[str] = mapped_column(String(500), primary_key=True)
    file_present: Mapped[bool] = mapped_column(Boolean)
    triggers: Mapped[dict[str, Any] | None]
    sha: Mapped[str | None] = mapped_column(String(64))  # the file's blob sha (None: gone)
    checked_at: Mapped[datetime]


# ---- triage: what maintainers decided about a failure signature ----------------------------------


class KnownIssue(Base):
    """The tracked issue of a failure signature: linked by a person (``triage link``) or filed
    by ciflake (``triage --post``, ``source`` "ciflake"). ``issue_repo``/``issue_number`` are
    set when the URL is a GitHub issue; ``state`` and the rest are GitHub's, as last read
    (None: never read, or not a GitHub issue). ``body_sha256``: the sha256 of the counts
    section ciflake last wrote (the rest of the body is people's to edit)."""

    __tablename__ = "known_issues"

    repo: Mapped[str] = mapped_column(String(200), primary_key=True)
    signature: Mapped[str] = mapped_column(String(64), primary_key=True)
    url: Mapped[str] = mapped_column(String(1000))
    issue_repo: Mapped[str | None] = mapped_column(String(200))
    issue_number: Mapped[int | None] = mapped_column(Integer)
    source: Mapped[str] = mapped_column(String(20))  # person | ciflake
    note: Mapped[str | None] = mapped_column(Text)
    set_by: Mapped[str] = mapped_column(String(200))
    set_at: Mapped[datetime]
    state: Mapped[str | None] = mapped_column(String(20))  # open | closed
    state_reason: Mapped[str | None] = mapped_column(String(20))
    closed_at: Mapped[datetime | None]
    closed_by: Mapped[str | None] = mapped_column(String(200))
    checked_at: Mapped[datetime | None]
    body_sha256: Mapped[str | None] = mapped_column(String(64))


class Correction(Base):
    """A maintainer's category for every failure of a signature, past and future
    (``triage correct``). It is applied to ``Failure.category`` with evidence "maintainer"
    whenever failures are written, so it survives ``reclassify`` and rule upgrades."""

    __tablename__ = "corrections"

    repo: Mapped[str] = mapped_column(String(200), primary_key=True)
    signature: Mapped[str] = mapped_column(String(64), primary_key=True)
    category: Mapped[str] = mapped_column(String(50))
    note: Mapped[str] = mapped_column(Text)
    set_by: Mapped[str] = mapped_column(String(200))
    set_at: Mapped[datetime]


class TriageLog(Base):
    """What triage did, one row per action (linked, unlinked, corrected, uncorrected, filed,
    adopted, updated, closed, reopened): who and when, for the summary's "tonight" and for audit."""

    __tablename__ = "triage_log"
    __table_args__ = (Index(None, "repo", "at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    repo: Mapped[str] = mapped_column(String(200))
    signature: Mapped[str] = mapped_column(String(64))
    action: Mapped[str] = mapped_column(String(20))
    issue_number: Mapped[int | None] = mapped_column(Integer)
    actor: Mapped[str] = mapped_column(String(200))
    at: Mapped[datetime]
    detail: Mapped[str | None] = mapped_column(Text)


class Lease(Base):
    """A named lock that one process holds at a time (``triage --post`` per repository), held
    by ``holder`` (host:pid) until ``expires_at``; a holder that died on this host, or a lease
    past its expiry, may be taken over."""

    __tablename__ = "leases"

    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    holder: Mapped[str] = mapped_column(String(200))
    acquired_at: Mapped[datetime]
    expires_at: Mapped[datetime]
