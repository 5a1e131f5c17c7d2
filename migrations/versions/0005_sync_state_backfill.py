"""sync state backfill: the spans a first collect (a backfill) has listed, per workflow.

A backfill now lists the windows around the configured events first, then the rest newest
first (store.backfill), so where it stopped is a set of spans, not one watermark. A state
written by an older collect (a watermark, no spans) is read as "listed up to the watermark".

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 15:10:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("sync_state") as batch:
        batch.add_column(
            sa.Column("backfill", sa.JSON(), nullable=False, server_default=sa.text("'{}'"))
        )


def downgrade() -> None:
    with op.batch_alter_table("sync_state") as batch:
        batch.drop_column("backfill")
