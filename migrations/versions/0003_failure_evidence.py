"""failure evidence: check-run annotations, time limits GitHub calls `cancelled`, deleted runs,
and which evidence decided each failure (and the stage it failed in).

Existing failures get the evidence their stored row implies: the rules without patterns (as of
this revision) are job facts, another rule with a line number is the log, the rest job facts,
and `unknown` is nothing; `ciflake reclassify` recomputes them from the archive.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01 09:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import store.models

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# collector/classify/rules.toml's rules decided by job facts alone, as of this revision
JOB_FACT_RULES = (
    "run failed with no jobs",
    "provisioning job failed",
    "NPU environment check step failed",
)
OUTCOME_READS = ["run_id", "run_attempt", "name", "conclusion", "id", "runner_name", "labels"]


def upgrade() -> None:
    op.create_table(
        "job_annotations",
        sa.Column("job_id", sa.BigInteger(), nullable=False),
        sa.Column("annotations", sa.JSON(), nullable=False),
        sa.Column("fetched_at", store.models.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["job_id"],
            ["jobs.id"],
            name=op.f("fk_job_annotations_job_id_jobs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("job_id", name=op.f("pk_job_annotations")),
    )
    for table in ("workflow_runs", "run_attempts", "jobs"):
        with op.batch_alter_table(table) as batch:
            batch.add_column(
                sa.Column("timed_out", sa.Boolean(), server_default=sa.false(), nullable=False)
            )
    with op.batch_alter_table("workflow_runs") as batch:
        batch.add_column(
            sa.Column("deleted_at", store.models.UTCDateTime(timezone=True), nullable=True)
        )
    with op.batch_alter_table("failures") as batch:
        batch.add_column(
            sa.Column("evidence", sa.String(length=20), server_default="none", nullable=False)
        )
        batch.add_column(sa.Column("stage", sa.String(length=50), nullable=True))
    failures = sa.table(
        "failures",
        sa.column("evidence", sa.String),
        sa.column("category", sa.String),
        sa.column("line_number", sa.Integer),
        sa.column("rule", sa.String),
    )
    op.execute(failures.update().where(failures.c.category != "unknown").values(evidence="job"))
    op.execute(
        failures.update()
        .where(
            failures.c.category != "unknown",
            failures.c.line_number.is_not(None),
            failures.c.rule.not_in(JOB_FACT_RULES),
        )
        .values(evidence="log")
    )
    if op.get_bind().dialect.name == "sqlite":
        op.drop_index("ix_jobs_outcome_reads", table_name="jobs")
        op.create_index("ix_jobs_outcome_reads", "jobs", [*OUTCOME_READS, "timed_out"])


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.drop_index("ix_jobs_outcome_reads", table_name="jobs")
        op.create_index("ix_jobs_outcome_reads", "jobs", OUTCOME_READS)
    with op.batch_alter_table("failures") as batch:
        batch.drop_column("stage")
        batch.drop_column("evidence")
    with op.batch_alter_table("workflow_runs") as batch:
        batch.drop_column("deleted_at")
    for table in ("jobs", "run_attempts", "workflow_runs"):
        with op.batch_alter_table(table) as batch:
            batch.drop_column("timed_out")
    op.drop_table("job_annotations")
