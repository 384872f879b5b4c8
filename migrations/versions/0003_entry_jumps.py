"""entries.jumped_ns and entries.jumped_bytes: what each entry let runs skip, for `memo stats --entries`

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # server_default fills the rows that exist already (nothing jumped since the upgrade)
    with op.batch_alter_table("entries") as batch:
        batch.add_column(sa.Column("jumped_ns", sa.BigInteger(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("jumped_bytes", sa.BigInteger(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("entries") as batch:
        batch.drop_column("jumped_bytes")
        batch.drop_column("jumped_ns")
