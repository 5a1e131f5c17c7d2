"""runs by event: an index on a workflow's runs by event and creation time, so that SILENT's
newest scheduled run of each workflow (store.triggers.workflow_watch) is one index lookup, not
a walk over the workflow's runs; with the newest run of each read from the (workflow_id,
created_at) index, the Overview's watch read went 0.40 -> 0.00 s CPU on the 16x benchmark
(it grouped every run of the repository by path).

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-05 15:30:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index(
        "ix_workflow_runs_workflow_id_event_created_at",
        "workflow_runs",
        ["workflow_id", "event", "created_at"],
    )


def downgrade() -> None:
    op.drop_index("ix_workflow_runs_workflow_id_event_created_at", table_name="workflow_runs")
