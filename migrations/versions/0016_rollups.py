"""rollups: the logical jobs (with and without their runners), logical runs and first-attempt
job names counted per scope key
(repository, workflow file, head branch, event) and UTC day (store.rollups), so that a page
whose dates are whole days reads a row per key and day instead of one per job (#49). They are
filled by the derived tables' rebuild: store.derived.VERSION goes to 3 with this revision, so
readers use the raw rows until the collector or ``ciflake db upgrade`` has rebuilt them.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-06 01:20:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import store.models

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = {
    "rollup_jobs": [
        sa.Column("logical_job", sa.String(500), nullable=False),
        sa.Column("logical_outcome", sa.String(20), nullable=False),
        sa.Column("incident_id", sa.String(32), nullable=True),
        sa.Column("runner_name", sa.String(500), nullable=True),
        sa.Column("labels", sa.Text(), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("last_at", store.models.UTCDateTime(timezone=True), nullable=False),
    ],
    "rollup_job_outcomes": [
        sa.Column("logical_job", sa.String(500), nullable=False),
        sa.Column("logical_outcome", sa.String(20), nullable=False),
        sa.Column("incident_id", sa.String(32), nullable=True),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("last_at", store.models.UTCDateTime(timezone=True), nullable=False),
    ],
    "rollup_runs": [
        sa.Column("logical_outcome", sa.String(20), nullable=False),
        sa.Column("incident_id", sa.String(32), nullable=True),
        sa.Column("runs", sa.Integer(), nullable=False),
    ],
    "rollup_job_names": [
        sa.Column("name", sa.String(500), nullable=False),
        sa.Column("runs", sa.Integer(), nullable=False),
    ],
}


def upgrade() -> None:
    for table, columns in TABLES.items():
        op.create_table(
            table,
            sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
            sa.Column("repo", sa.String(200), nullable=False),
            sa.Column("workflow_path", sa.String(500), nullable=False),
            sa.Column("head_branch", sa.String(500), nullable=True),
            sa.Column("event", sa.String(50), nullable=False),
            sa.Column("day", sa.String(10), nullable=False),
            *columns,
            sa.PrimaryKeyConstraint("id", name=op.f(f"pk_{table}")),
        )
        op.create_index(op.f(f"ix_{table}_repo_day"), table, ["repo", "day"])
    # empty rollups are not current ones, even under derived tables of this version (an
    # upgrade after a downgrade): readers use the raw rows until the rebuild fills them
    op.execute("UPDATE derived_state SET version = 0")


def downgrade() -> None:
    for table in reversed(TABLES):
        op.drop_index(op.f(f"ix_{table}_repo_day"), table_name=table)
        op.drop_table(table)
