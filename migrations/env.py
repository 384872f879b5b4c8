"""Alembic environment for the memo database.

``MemoStore.open`` runs the migrations programmatically and hands its own connection over in
``config.attributes["connection"]`` (already inside its write transaction, so an upgrade is all or
nothing and concurrent openers wait for it). Without one, it connects to the ``sqlalchemy.url``
option of the Alembic config (running Alembic by hand; see README.md).
"""

from alembic import context
from sqlalchemy import create_engine

from wormhole_replay.memo.models import Base

config = context.config
target_metadata = Base.metadata


def _configure(**kw) -> None:
    # render_as_batch: SQLite cannot ALTER most things in place, batch mode recreates the table
    context.configure(target_metadata=target_metadata, render_as_batch=True, compare_type=True, **kw)


def run_migrations_offline() -> None:
    """``--sql`` mode: print the DDL instead of running it."""
    _configure(url=config.get_main_option("sqlalchemy.url"), literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _configure(connection=connection)
        with context.begin_transaction():
            context.run_migrations()
        return
    engine = create_engine(config.get_main_option("sqlalchemy.url"))
    try:
        with engine.begin() as connection:
            _configure(connection=connection)
            with context.begin_transaction():
                context.run_migrations()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
