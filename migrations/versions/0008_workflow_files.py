"""workflow files: each tracked workflow file's time limits at a commit, read once from the
contents API, so that a job cancelled at its `timeout-minutes` is a timeout even when its
annotations cannot be read (collector.time_limits).

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-04 04:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import store.models

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "workflow_files",
        sa.Column("repo", sa.String(length=200), nullable=False),
        sa.Column("path", sa.String(length=500), nullable=False),
        sa.Column("sha", sa.String(length=64), nullable=False),
        sa.Column("limits", sa.JSON(), nullable=True),
        sa.Column("fetched_at", store.models.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("repo", "path", "sha", name=op.f("pk_workflow_files")),
    )


def downgrade() -> None:
    op.drop_table("workflow_files")
