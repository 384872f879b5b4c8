"""initial: entries and runs

Revision ID: 0001
Revises:
Create Date: 2026-11-30
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "entries",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("scheme", sa.String(64), nullable=False),
        sa.Column("wl_hash", sa.String(64), nullable=False),
        sa.Column("n_vertices", sa.Integer(), nullable=False),
        sa.Column("n_edges", sa.Integer(), nullable=False),
        sa.Column("key_json", sa.Text(), nullable=False),
        sa.Column("value_json", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("digest", name="uq_entries_digest"),
    )
    op.create_index("ix_entries_bucket", "entries",
                    ["fingerprint", "scheme", "kind", "wl_hash", "n_vertices", "n_edges"])
    op.create_index("ix_entries_fingerprint", "entries", ["fingerprint"])
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("trace_digest", sa.String(64), nullable=True),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("mode", sa.String(16), nullable=False),
        sa.Column("counters_json", sa.Text(), nullable=False),
        sa.Column("wall_seconds", sa.Float(), nullable=False),
        sa.Column("tool_version", sa.String(32), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("runs")
    op.drop_index("ix_entries_fingerprint", table_name="entries")
    op.drop_index("ix_entries_bucket", table_name="entries")
    op.drop_table("entries")
