"""runs in time: an index on a repository's runs by creation time, so that the loaders every
page calls read the two ends of its history (store.page_queries.run_span: 0.28 -> 0.05 s,
latest_run_url: 0.11 -> 0.001 s on the 16x benchmark) instead of every run of it.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-05 14:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_workflow_runs_repo_created_at", "workflow_runs", ["repo", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_workflow_runs_repo_created_at", table_name="workflow_runs")
