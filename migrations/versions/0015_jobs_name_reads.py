"""jobs name reads (PostgreSQL): the (run_id, run_attempt) index on jobs also holds the job's
name, so that the Overview's per-day presence of job names (store.page_queries
.daily_job_presence: the first attempt's jobs of every run in scope) reads the index alone
instead of every wide job row (3.1 -> 2.2 s in one process on a 16x copy). SQLite reads the
names from ix_jobs_outcome_reads already (migration 0002).

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-05 19:45:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BEFORE = ["run_id", "run_attempt"]  # the plain index as of revision 0014


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.create_index("ix_jobs_run_id_run_attempt_name", "jobs", [*BEFORE, "name"])
        op.drop_index("ix_jobs_run_id_run_attempt", table_name="jobs")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.create_index("ix_jobs_run_id_run_attempt", "jobs", BEFORE)
        op.drop_index("ix_jobs_run_id_run_attempt_name", table_name="jobs")
