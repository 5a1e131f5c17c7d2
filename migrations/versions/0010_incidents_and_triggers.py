"""incidents and workflow triggers: bursts of failures with one cause (derived, kept by the
collector like the logical runs) and what each tracked workflow's file on the default branch
says about when it runs (for SILENT); derived_state.incident_rule, the incident settings the
incidents were found with.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-05 05:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import store.models

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Time = store.models.UTCDateTime


def upgrade() -> None:
    with op.batch_alter_table("derived_state") as batch:
        batch.add_column(sa.Column("incident_rule", sa.Text(), nullable=True))
    op.create_table(
        "incidents",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("repo", sa.String(length=200), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("category", sa.String(length=50), nullable=False),
        sa.Column("signature", sa.String(length=64), nullable=True),
        sa.Column("runner", sa.String(length=500), nullable=True),
        sa.Column("label", sa.Text(), nullable=False),
        sa.Column("started_at", Time(timezone=True), nullable=False),
        sa.Column("ended_at", Time(timezone=True), nullable=False),
        sa.Column("jobs", sa.Integer(), nullable=False),
        sa.Column("runs", sa.Integer(), nullable=False),
        sa.Column("workflows", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_incidents")),
    )
    op.create_index(
        op.f("ix_incidents_repo_started_at"), "incidents", ["repo", "started_at"], unique=False
    )
    op.create_table(
        "incident_failures",
        sa.Column("run_id", sa.BigInteger(), nullable=False),
        sa.Column("run_attempt", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.BigInteger(), nullable=False),
        sa.Column("incident_id", sa.String(length=32), nullable=False),
        sa.ForeignKeyConstraint(
            ["incident_id"],
            ["incidents.id"],
            name=op.f("fk_incident_failures_incident_id_incidents"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["workflow_runs.id"],
            name=op.f("fk_incident_failures_run_id_workflow_runs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "run_id", "run_attempt", "job_id", name=op.f("pk_incident_failures")
        ),
    )
    op.create_index(
        op.f("ix_incident_failures_incident_id"),
        "incident_failures",
        ["incident_id"],
        unique=False,
    )
    op.create_table(
        "workflow_triggers",
        sa.Column("repo", sa.String(length=200), nullable=False),
        sa.Column("path", sa.String(length=500), nullable=False),
        sa.Column("file_present", sa.Boolean(), nullable=False),
        sa.Column("triggers", sa.JSON(), nullable=True),
        sa.Column("sha", sa.String(length=64), nullable=True),
        sa.Column("checked_at", Time(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("repo", "path", name=op.f("pk_workflow_triggers")),
    )


def downgrade() -> None:
    op.drop_table("workflow_triggers")
    op.drop_index(op.f("ix_incident_failures_incident_id"), table_name="incident_failures")
    op.drop_table("incident_failures")
    op.drop_index(op.f("ix_incidents_repo_started_at"), table_name="incidents")
    op.drop_table("incidents")
    with op.batch_alter_table("derived_state") as batch:
        batch.drop_column("incident_rule")
