"""triage: known issues (linked or filed), maintainers' corrections beside the classifier's own
answer, the log of triage actions, and leases (one ``triage --post`` per repository at a time).

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-05 02:30:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import store.models

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

Time = store.models.UTCDateTime


def upgrade() -> None:
    with op.batch_alter_table("failures") as batch:
        batch.add_column(sa.Column("classifier_category", sa.String(length=50), nullable=True))
        batch.add_column(sa.Column("classifier_evidence", sa.String(length=20), nullable=True))
    op.execute("UPDATE failures SET classifier_category = category, classifier_evidence = evidence")
    with op.batch_alter_table("failures") as batch:
        batch.alter_column("classifier_category", existing_type=sa.String(50), nullable=False)
        batch.alter_column("classifier_evidence", existing_type=sa.String(20), nullable=False)
    op.create_table(
        "known_issues",
        sa.Column("repo", sa.String(length=200), nullable=False),
        sa.Column("signature", sa.String(length=64), nullable=False),
        sa.Column("url", sa.String(length=1000), nullable=False),
        sa.Column("issue_repo", sa.String(length=200), nullable=True),
        sa.Column("issue_number", sa.Integer(), nullable=True),
        sa.Column("source", sa.String(length=20), nullable=False),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("set_by", sa.String(length=200), nullable=False),
        sa.Column("set_at", Time(timezone=True), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=True),
        sa.Column("state_reason", sa.String(length=20), nullable=True),
        sa.Column("closed_at", Time(timezone=True), nullable=True),
        sa.Column("closed_by", sa.String(length=200), nullable=True),
        sa.Column("checked_at", Time(timezone=True), nullable=True),
        sa.Column("body_sha256", sa.String(length=64), nullable=True),
        sa.PrimaryKeyConstraint("repo", "signature", name=op.f("pk_known_issues")),
    )
    op.create_table(
        "corrections",
        sa.Column("repo", sa.String(length=200), nullable=False),
        sa.Column("signature", sa.String(length=64), nullable=False),
        sa.Column("category", sa.String(length=50), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("set_by", sa.String(length=200), nullable=False),
        sa.Column("set_at", Time(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("repo", "signature", name=op.f("pk_corrections")),
    )
    op.create_table(
        "triage_log",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("repo", sa.String(length=200), nullable=False),
        sa.Column("signature", sa.String(length=64), nullable=False),
        sa.Column("action", sa.String(length=20), nullable=False),
        sa.Column("issue_number", sa.Integer(), nullable=True),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("at", Time(timezone=True), nullable=False),
        sa.Column("detail", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_triage_log")),
    )
    op.create_index(op.f("ix_triage_log_repo_at"), "triage_log", ["repo", "at"], unique=False)
    op.create_table(
        "leases",
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("holder", sa.String(length=200), nullable=False),
        sa.Column("acquired_at", Time(timezone=True), nullable=False),
        sa.Column("expires_at", Time(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_leases")),
    )


def downgrade() -> None:
    op.drop_table("leases")
    op.drop_index(op.f("ix_triage_log_repo_at"), table_name="triage_log")
    op.drop_table("triage_log")
    op.drop_table("corrections")
    op.drop_table("known_issues")
    with op.batch_alter_table("failures") as batch:
        batch.drop_column("classifier_evidence")
        batch.drop_column("classifier_category")
