"""derived tables: logical runs and logical jobs, kept by the collector (analytics.derived),
with the runs pending a recomputation.

The tables start empty, with no ``derived_state`` row: readers take the raw rows until the
derived tables of a repository are filled. Filling needs the configured job-name rule, which
a migration does not know, so ``ciflake db upgrade`` and the collector's own upgrade fill them
right after this revision (``ciflake db rebuild`` does the same on demand).

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-03 16:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import store.models

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _run_key(table: str) -> list[sa.schema.SchemaItem]:
    return [
        sa.Column("run_id", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["workflow_runs.id"],
            name=op.f(f"fk_{table}_run_id_workflow_runs"),
            ondelete="CASCADE",
        ),
    ]


def upgrade() -> None:
    utc = store.models.UTCDateTime(timezone=True)
    op.create_table(
        "logical_runs",
        *_run_key("logical_runs"),
        sa.Column("red_attempts", sa.Integer(), nullable=False),
        sa.Column("first_attempt_conclusion", sa.String(length=50), nullable=True),
        sa.Column("logical_outcome", sa.String(length=20), nullable=False),
        sa.Column("failure_category", sa.String(length=50), nullable=True),
        sa.Column("failure_basis", sa.String(length=50), nullable=True),
        sa.PrimaryKeyConstraint("run_id", name=op.f("pk_logical_runs")),
    )
    op.create_table(
        "logical_jobs",
        *_run_key("logical_jobs"),
        sa.Column("logical_job", sa.String(length=500), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_attempt", sa.Integer(), nullable=False),
        sa.Column("first_conclusion", sa.String(length=20), nullable=False),
        sa.Column("conclusion", sa.String(length=20), nullable=False),
        sa.Column("logical_outcome", sa.String(length=20), nullable=False),
        sa.Column("runner_name", sa.String(length=500), nullable=True),
        sa.Column("labels", sa.JSON(), nullable=False),
        sa.Column("started_at", utc, nullable=True),
        sa.Column("completed_at", utc, nullable=True),
        sa.Column("red_attempts", sa.Integer(), nullable=False),
        sa.Column("red_attempt", sa.Integer(), nullable=True),
        sa.Column("red_job_id", sa.BigInteger(), nullable=True),
        sa.Column("category", sa.String(length=50), nullable=True),
        sa.PrimaryKeyConstraint("run_id", "logical_job", name=op.f("pk_logical_jobs")),
    )
    op.create_table(
        "derived_pending",
        *_run_key("derived_pending"),
        sa.Column("repo", sa.String(length=200), nullable=False),
        sa.PrimaryKeyConstraint("run_id", name=op.f("pk_derived_pending")),
    )
    op.create_index(op.f("ix_derived_pending_repo"), "derived_pending", ["repo"])
    op.create_table(
        "derived_state",
        sa.Column("repo", sa.String(length=200), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("job_name_strip", sa.Text(), nullable=False),
        sa.Column("built_at", utc, nullable=False),
        sa.PrimaryKeyConstraint("repo", name=op.f("pk_derived_state")),
    )


def downgrade() -> None:
    op.drop_table("derived_state")
    op.drop_index(op.f("ix_derived_pending_repo"), table_name="derived_pending")
    op.drop_table("derived_pending")
    op.drop_table("logical_jobs")
    op.drop_table("logical_runs")
