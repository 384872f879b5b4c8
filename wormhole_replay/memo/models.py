"""The memo database's tables as SQLAlchemy 2 typed models.

These describe the schema at Alembic's head revision (``migrations/versions``); the migrations,
not ``create_all``, create and change the tables, and a test checks that both agree.

* ``entries``: one row per memo entry (``memo/entry.py``); ``digest`` is the unique key that makes
  concurrent inserts idempotent; ``ix_entries_bucket`` is the lookup bucket (fingerprint, scheme,
  kind, WL hash, size) in which the store looks for isomorphic keys.
* ``runs``: one row per run that used the memo, so a user can see what the database learned and
  from where.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, DateTime, Float, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

BUCKET = ("fingerprint", "scheme", "kind", "wl_hash", "n_vertices", "n_edges")


class Base(DeclarativeBase):
    pass


class EntryRow(Base):
    """A stored ``MemoEntry``: its fields as columns, ``key`` and ``value`` as canonical JSON."""

    __tablename__ = "entries"
    __table_args__ = (
        UniqueConstraint("digest", name="uq_entries_digest"),
        Index("ix_entries_bucket", *BUCKET),
        Index("ix_entries_fingerprint", "fingerprint"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    digest: Mapped[str] = mapped_column(String(64))
    kind: Mapped[str] = mapped_column(String(16))
    fingerprint: Mapped[str] = mapped_column(String(64))
    scheme: Mapped[str] = mapped_column(String(64))
    wl_hash: Mapped[str] = mapped_column(String(64))
    n_vertices: Mapped[int] = mapped_column(Integer)
    n_edges: Mapped[int] = mapped_column(Integer)
    key_json: Mapped[str] = mapped_column(Text)
    value_json: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))  # UTC
    # revision 0002: usage, for `memo prune --unused-days`
    hits: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))  # UTC
    # revision 0003: what the entry's hits let runs skip (the jumps they began: simulated time and
    # payload bytes credited), for `memo stats --entries`
    jumped_ns: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    jumped_bytes: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")


class RunRow(Base):
    """A run that used the memo: what it replayed, on which network, how, and what it counted."""

    __tablename__ = "runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))  # UTC
    trace_digest: Mapped[str | None] = mapped_column(String(64))
    fingerprint: Mapped[str] = mapped_column(String(64))
    mode: Mapped[str] = mapped_column(String(16))
    counters_json: Mapped[str] = mapped_column(Text)
    wall_seconds: Mapped[float] = mapped_column(Float)
    tool_version: Mapped[str] = mapped_column(String(32))  # the wormhole-replay that ran it
