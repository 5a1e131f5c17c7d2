"""job log content last (SQLite): `job_logs.content` becomes the table's last column, so that
the collector can write a big log in place in chunks (`zeroblob` then incremental blob I/O,
store.blobs). SQLite builds a whole row in memory when a zeroblob is not its last field, two
copies of a 200 MB compressed log; as the last field the zeros are never materialised. The
stored values do not change; PostgreSQL is left as it is (its column order does not matter).

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 14:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import store.models

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLUMNS = "job_id, status, compression, size, sha256, error, fetched_at, content"


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    op.create_table(
        "_job_logs_new",
        sa.Column("job_id", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("compression", sa.String(length=20), nullable=True),
        sa.Column("size", sa.BigInteger(), nullable=True),
        sa.Column("sha256", sa.String(length=64), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("fetched_at", store.models.UTCDateTime(timezone=True), nullable=False),
        sa.Column("content", sa.LargeBinary(), nullable=True),
        sa.ForeignKeyConstraint(
            ["job_id"], ["jobs.id"], name="fk_job_logs_job_id_jobs", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("job_id", name="pk_job_logs"),
    )
    op.execute(f"INSERT INTO _job_logs_new ({COLUMNS}) SELECT {COLUMNS} FROM job_logs")
    op.drop_table("job_logs")
    op.rename_table("_job_logs_new", "job_logs")


def downgrade() -> None:
    """Nothing to undo: 0003's schema holds the same columns, in whatever order."""
