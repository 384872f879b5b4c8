"""entries.hits and entries.last_used_at, for `memo prune --unused-days`

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # server_default fills the rows that exist already (hits 0, never used since the upgrade)
    with op.batch_alter_table("entries") as batch:
        batch.add_column(sa.Column("hits", sa.Integer(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    # dropping columns is one of the things SQLite needs batch mode (a table copy) for
    with op.batch_alter_table("entries") as batch:
        batch.drop_column("last_used_at")
        batch.drop_column("hits")
