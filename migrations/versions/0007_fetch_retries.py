"""fetch retries: resources GitHub kept refusing (a job's log or annotations, a run's jobs),
recorded so that the collect goes on and later collects ask again (collector.retries).

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-04 03:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import store.models

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    utc = store.models.UTCDateTime(timezone=True)
    op.create_table(
        "fetch_retries",
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("item_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("repo", sa.String(length=200), nullable=False),
        sa.Column("workflow_id", sa.BigInteger(), nullable=False),
        sa.Column("run_id", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=False),
        sa.Column("tries", sa.Integer(), nullable=False),
        sa.Column("first_failed_at", utc, nullable=False),
        sa.Column("last_tried_at", utc, nullable=False),
        sa.Column("given_up", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("kind", "item_id", name=op.f("pk_fetch_retries")),
    )
    op.create_index(op.f("ix_fetch_retries_repo"), "fetch_retries", ["repo"])


def downgrade() -> None:
    op.drop_index(op.f("ix_fetch_retries_repo"), table_name="fetch_retries")
    op.drop_table("fetch_retries")
