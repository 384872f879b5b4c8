"""The memo database: ``MemoStore`` over SQLite (a file, the default) or Postgres (shared).

Open a store with ``MemoStore.open(target)``, ``target`` being a file path (SQLite) or a SQLAlchemy
URL (``sqlite:///memo.db``, ``postgresql+psycopg://user@host/db``). Alembic owns the schema
(``migrations/``): opening creates a new database at the head revision and upgrades an older one;
a database from a newer wormhole-replay, or one that is not a memo database, is refused with
``InputError``.

Concurrency: every write is one transaction, so a crash leaves all or nothing of it. SQLite runs in
WAL mode (readers never block the writer) and starts every write with ``BEGIN IMMEDIATE`` under a
30 s busy timeout, so concurrent writers queue instead of failing. Inserts are idempotent: the
unique ``digest`` plus insert-or-ignore, and an optional isomorphism check per lookup bucket that
is made race-free by the write lock (SQLite) or a transaction-scoped advisory lock per bucket
(Postgres).

Postgres schemas: to keep a memo in its own schema of a shared database, create the schema and add
libpq's ``options`` to the URL, e.g. ``postgresql+psycopg://u@host/db?options=-csearch_path%3Dmemo``
(the tests isolate themselves this way).

URLs are only ever shown masked (``safe_url``): a password never reaches a message or a log.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from functools import cache
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

import wormhole_replay

from ..errors import InputError
from .entry import KINDS, MemoEntry, canonical_json, validate
from .models import BUCKET, EntryRow, RunRow

SQLITE_MAGIC = b"SQLite format 3\x00"
BUSY_TIMEOUT_MS = 30_000
CHUNK = 500  # rows per INSERT statement (10 values a row, far below SQLite's 32766 limit)
_ENTRIES = EntryRow.__table__
_RUNS = RunRow.__table__


def _enable_wal(cur) -> None:
    """Put the SQLite file in WAL mode, waiting out other openers.

    Switching the journal mode needs an exclusive lock, and SQLite answers "database is locked" at
    once, without its busy handler, when a concurrent opener of a new file holds a shared one; so
    this retries for up to the busy timeout. A file already in WAL mode takes no lock at all.
    """
    if cur.execute("PRAGMA journal_mode").fetchone()[0].lower() == "wal":
        return
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cur.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def migrations_dir() -> Path:
    """The Alembic folder: ``migrations/`` beside the package (the package is installed editable)."""
    d = Path(wormhole_replay.__file__).resolve().parents[1] / "migrations"
    if not (d / "env.py").is_file():
        raise InputError(f"{d}: missing; the memo database needs wormhole-replay installed from its "
                         "source tree (pip install -e .)")
    return d


def alembic_config(url: str | None = None, connection=None):
    """An Alembic ``Config`` for ``migrations/`` without an alembic.ini: either ``connection``
    (an open SQLAlchemy connection, used as is) or ``url`` to connect to."""
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir()))
    cfg.set_main_option("path_separator", "os")
    if url is not None:
        cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))  # ConfigParser interpolates %
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


@cache
def _revisions() -> tuple[str, frozenset]:
    """(head revision, every revision this code knows)."""
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(alembic_config())
    return script.get_current_head(), frozenset(r.revision for r in script.walk_revisions())


def head_revision() -> str:
    """The schema revision this wormhole-replay writes."""
    return _revisions()[0]


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _lock_key(text: str) -> int:
    """A Postgres advisory lock key (signed 64-bit) for ``text``."""
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big", signed=True)


_SCHEMA_LOCK = _lock_key("wormhole-replay memo schema")


def _bucket(e: MemoEntry) -> tuple:
    return tuple(getattr(e, c) for c in BUCKET)


def _row(e: MemoEntry, now: datetime) -> dict:
    return {"digest": e.digest, "kind": e.kind, "fingerprint": e.fingerprint, "scheme": e.scheme,
            "wl_hash": e.wl_hash, "n_vertices": e.n_vertices, "n_edges": e.n_edges,
            "key_json": canonical_json(e.key), "value_json": canonical_json(e.value), "created_at": now}


def _entry(r) -> MemoEntry:
    return MemoEntry(r.kind, r.fingerprint, r.scheme, r.wl_hash, json.loads(r.key_json), json.loads(r.value_json))


def _plain(x):
    """JSON for the odd counter value (numpy scalars and arrays)."""
    if hasattr(x, "tolist"):
        return x.tolist()
    return str(x)


def _days(name: str, days) -> timedelta:
    if days is None or not days >= 0:
        raise InputError(f"prune: {name} must be a number of days >= 0, not {days!r}")
    return timedelta(days=float(days))


class MemoStore:
    """A memo database. Use ``MemoStore.open``; close it (or use ``with``) when done."""

    safe_url: str  # the URL with its password masked: the only form ever shown
    revision: str | None  # the schema revision now (head, unless opened with upgrade=False)
    previous_revision: str | None  # the revision found when opening (None: a new database)
    head: str  # the revision this code writes

    def __init__(self, url: URL, label: str, path: Path | None):
        """Use ``MemoStore.open``."""
        self.backend = url.get_backend_name()
        self.safe_url = url.render_as_string(hide_password=True)
        self.label = label  # how messages name the database: the path as given, or safe_url
        self._password = url.password
        self._path = path
        self.head = head_revision()
        self.revision = self.previous_revision = None
        self._engine = None
        self._url = url

    def __repr__(self) -> str:
        return f"MemoStore({self.safe_url!r}, revision={self.revision!r})"

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- opening ---------------------------------------------------------------------------

    @classmethod
    def open(cls, target: str, *, upgrade: bool = True) -> MemoStore:
        """The memo database at ``target`` (a file path or a SQLAlchemy URL).

        With ``upgrade`` (the default) a new database is created and an older one upgraded to the
        head revision. Without it nothing is written (a missing file is not created); ``revision``
        then says where the database is, and the other methods refuse until it is at head.
        """
        url, label, path = _parse_target(str(target))
        store = cls(url, label, path)
        new = False
        if path is not None:
            new = _check_sqlite_file(path, label)
            if new and upgrade:
                try:
                    path.parent.mkdir(parents=True, exist_ok=True)
                except OSError as e:
                    raise InputError(f"{label}: cannot create its folder ({e.strerror})") from None
        try:
            store._engine = store._make_engine(writable=upgrade)
            if not (new and not upgrade):  # a missing file stays missing without upgrade
                store._open_schema(upgrade)
        except InputError:
            store.close()
            raise
        except SQLAlchemyError as e:
            store.close()
            raise store._error(e) from None
        return store

    def _make_engine(self, writable: bool):
        url = self._url
        if self.backend == "sqlite":
            engine = sa.create_engine(url)

            @sa.event.listens_for(engine, "connect")
            def _connect(dbapi_conn, _record):
                # SQLAlchemy's documented recipe: pysqlite must not BEGIN on its own; _begin does
                dbapi_conn.isolation_level = None
                cur = dbapi_conn.cursor()
                cur.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
                cur.execute("PRAGMA foreign_keys = ON")
                if writable:  # WAL persists in the file: only a store that may write sets it
                    _enable_wal(cur)
                cur.close()

            @sa.event.listens_for(engine, "begin")
            def _begin(conn):
                # writers take the write lock up front, so they queue on busy_timeout instead of
                # failing when a read transaction would have to be upgraded to a write one
                write = conn.get_execution_options().get("memo_write")
                conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

            return engine
        if self.backend == "postgresql":
            # an unreachable server should fail within seconds, not hang a run
            args = {} if "connect_timeout" in url.query else {"connect_timeout": 10}
            try:
                return sa.create_engine(url, connect_args=args)
            except ImportError as e:
                raise InputError(f"{self.label}: the database driver is not installed ({e.name})") from None
        raise InputError(f"{self.label}: unsupported database (use a file, sqlite:///FILE or "
                         "postgresql+psycopg://USER@HOST/DB)")

    def _open_schema(self, upgrade: bool) -> None:
        from alembic import command

        if not upgrade:
            with self._read() as conn:
                self.previous_revision = self.revision = self._current_revision(conn)
            return
        with self._write() as conn:
            if self.backend == "postgresql":
                # concurrent openers of a new database: one creates the schema, the others wait
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(CAST(:k AS bigint))"), {"k": _SCHEMA_LOCK})
            self.previous_revision = self._current_revision(conn)
            if self.previous_revision != self.head:
                command.upgrade(alembic_config(connection=conn), "head")
        self.revision = self.head

    def _current_revision(self, conn) -> str | None:
        """The database's revision (None when empty), or InputError for a foreign or newer one."""
        tables = set(sa.inspect(conn).get_table_names())
        foreign = f"{self.label}: not a wormhole-replay memo database"
        if "alembic_version" not in tables:
            if "entries" in tables:
                raise InputError(f"{foreign} (it has an entries table but no alembic_version)")
            if tables and self.backend == "sqlite":
                names = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
                raise InputError(f"{foreign} (it has other tables: {names})")
            return None
        if "entries" not in tables:
            raise InputError(f"{foreign} (its alembic_version belongs to another application; "
                             "use another database or schema)")
        revs = conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalars().all()
        if len(revs) != 1:
            raise InputError(f"{foreign} (alembic_version holds {len(revs)} revisions)")
        rev = revs[0]
        if rev not in _revisions()[1]:
            raise InputError(f"{self.label}: memo database schema revision {rev} is newer than this "
                             f"wormhole-replay knows (head {self.head}); upgrade wormhole-replay")
        return rev

    def _error(self, e: SQLAlchemyError) -> InputError:
        """A database error as one line naming the (masked) database."""
        reason = (str(getattr(e, "orig", None) or e).strip().splitlines() or ["unknown error"])[0]
        if self._password:
            reason = reason.replace(self._password, "***")
        if self.backend == "sqlite" and "not a database" in reason:
            return InputError(f"{self.label}: not a wormhole-replay memo database ({reason})")
        if "locked" in reason:
            return InputError(f"{self.label}: the memo database stayed locked by another process for "
                              f"{BUSY_TIMEOUT_MS // 1000} s ({reason})")
        if isinstance(e, sa.exc.OperationalError) and "connect" in reason:
            return InputError(f"{self.label}: cannot connect to the memo database ({reason})")
        return InputError(f"{self.label}: cannot use the memo database ({reason})")

    # --- transactions ----------------------------------------------------------------------

    @contextmanager
    def _read(self):
        try:
            with self._engine.begin() as conn:
                yield conn
        except SQLAlchemyError as e:
            raise self._error(e) from None

    @contextmanager
    def _write(self):
        """One write transaction (BEGIN IMMEDIATE on SQLite): all of it or nothing."""
        try:
            with self._engine.execution_options(memo_write=True).begin() as conn:
                yield conn
        except SQLAlchemyError as e:
            raise self._error(e) from None

    def _require_current(self) -> None:
        if self.revision != self.head:
            raise InputError(f"{self.label}: memo database schema revision {self.revision or '(none: empty)'} "
                             f"is older than {self.head}; run: wormhole-replay memo upgrade --db {self.label}")

    # --- entries ---------------------------------------------------------------------------

    def entries(self, fingerprint: str, scheme: str) -> list[MemoEntry]:
        """Every entry of that network fingerprint and hashing scheme, in insertion (id) order."""
        self._require_current()
        t = _ENTRIES
        with self._read() as conn:
            rows = conn.execute(sa.select(t).where(t.c.fingerprint == fingerprint, t.c.scheme == scheme)
                                .order_by(t.c.id)).all()
        return [_entry(r) for r in rows]

    def entries_with_hits(self, fingerprint: str | None = None) -> list[tuple[MemoEntry, int]]:
        """Every entry (of one fingerprint, if given) with its hit count, in id order."""
        self._require_current()
        t = _ENTRIES
        q = sa.select(t).order_by(t.c.id)
        if fingerprint is not None:
            q = q.where(t.c.fingerprint == fingerprint)
        with self._read() as conn:
            return [(_entry(r), r.hits) for r in conn.execute(q)]

    def insert(self, entries: list[MemoEntry], same=None) -> int:
        """Store ``entries`` in one transaction; return how many rows were new.

        An entry whose digest is stored already is skipped, and so is a repeat within the batch.
        With ``same(new, existing) -> bool`` (an isomorphism test), an entry is also skipped when
        ``same`` holds for a stored entry of its lookup bucket or an earlier one of the batch.
        """
        self._require_current()
        batch, seen = [], set()
        for e in entries:
            if e.digest not in seen:
                seen.add(e.digest)
                batch.append(e)
        if not batch:
            return 0
        now = _now()
        with self._write() as conn:
            if same is not None:
                batch = self._not_known(conn, batch, same)
            # a fixed row order: concurrent Postgres inserts of overlapping batches cannot deadlock
            rows = [_row(e, now) for e in sorted(batch, key=lambda e: e.digest)]
            ins = postgresql.insert if self.backend == "postgresql" else sqlite.insert
            inserted = 0
            for i in range(0, len(rows), CHUNK):
                stmt = (ins(_ENTRIES).values(rows[i:i + CHUNK])
                        .on_conflict_do_nothing(index_elements=["digest"]).returning(_ENTRIES.c.id))
                inserted += len(conn.execute(stmt).all())
        return inserted

    def _not_known(self, conn, batch: list[MemoEntry], same) -> list[MemoEntry]:
        """The entries of ``batch`` that ``same`` finds no equivalent for, stored or earlier."""
        t = _ENTRIES
        buckets = sorted({_bucket(e) for e in batch})
        if self.backend == "postgresql":
            # SQLite's BEGIN IMMEDIATE already serializes writers; on Postgres another writer could
            # add an isomorphic entry to the bucket between our look and our insert. Sorted: no deadlock.
            for b in buckets:
                conn.execute(sa.text("SELECT pg_advisory_xact_lock(CAST(:k AS bigint))"),
                             {"k": _lock_key(canonical_json(list(b)))})
        known = {}
        for b in buckets:
            q = sa.select(t).where(*(t.c[c] == v for c, v in zip(BUCKET, b))).order_by(t.c.id)
            known[b] = [_entry(r) for r in conn.execute(q)]
        kept = []
        for e in batch:
            peers = known[_bucket(e)]
            if any(p.digest == e.digest or same(e, p) for p in peers):
                continue
            peers.append(e)
            kept.append(e)
        return kept

    def touch(self, hits: dict[str, int], jumped: dict[str, tuple[int, int]] | None = None) -> None:
        """Count uses: for each digest, ``hits += n`` and ``last_used_at = now``, and add what its hits
        let the run skip (``jumped``: digest -> (simulated ns, payload bytes)), in one transaction."""
        self._require_current()
        jumped = jumped or {}
        items = sorted((d, int(n)) for d, n in hits.items() if n > 0)  # sorted: a fixed lock order
        if not items:
            return
        t = _ENTRIES
        stmt = (sa.update(t).where(t.c.digest == sa.bindparam("d"))
                .values(hits=t.c.hits + sa.bindparam("n"), last_used_at=sa.bindparam("now"),
                        jumped_ns=t.c.jumped_ns + sa.bindparam("ns"), jumped_bytes=t.c.jumped_bytes + sa.bindparam("b")))
        now = _now()
        rows = [{"d": d, "n": n, "now": now, "ns": int(jumped.get(d, (0, 0))[0]), "b": int(jumped.get(d, (0, 0))[1])}
                for d, n in items]
        with self._write() as conn:
            conn.execute(stmt, rows)

    def top_entries(self, n: int) -> list[dict]:
        """The ``n`` entries that carried runs the most (by simulated time jumped, then hits): kind,
        fingerprint, flows, hits, time and bytes jumped, last use."""
        self._require_current()
        t = _ENTRIES
        q = (sa.select(t.c.digest, t.c.kind, t.c.fingerprint, t.c.n_vertices, t.c.hits, t.c.jumped_ns, t.c.jumped_bytes,
                       t.c.last_used_at)
             .where(t.c.hits > 0).order_by(t.c.jumped_ns.desc(), t.c.hits.desc(), t.c.id).limit(n))
        with self._read() as conn:
            return [{"digest": r.digest, "kind": r.kind, "fingerprint": r.fingerprint, "flows": r.n_vertices,
                     "hits": r.hits, "jumped_ns": int(r.jumped_ns), "jumped_bytes": int(r.jumped_bytes),
                     "last_used_at": r.last_used_at.isoformat() if r.last_used_at else None} for r in conn.execute(q)]

    def record_run(self, *, trace_digest: str | None, fingerprint: str, mode: str, counters: dict,
                   wall_seconds: float) -> None:
        """Record a run that used the memo (it started ``wall_seconds`` ago)."""
        self._require_current()
        now = _now()
        row = {"started_at": now - timedelta(seconds=max(0.0, float(wall_seconds))),
               "trace_digest": trace_digest, "fingerprint": fingerprint, "mode": mode,
               "counters_json": json.dumps(counters, sort_keys=True, default=_plain),
               "wall_seconds": float(wall_seconds), "tool_version": wormhole_replay.__version__}
        with self._write() as conn:
            conn.execute(sa.insert(_RUNS).values(**row))

    # --- maintenance -----------------------------------------------------------------------

    def count(self) -> int:
        """How many entries are stored."""
        self._require_current()
        with self._read() as conn:
            return conn.scalar(sa.select(sa.func.count()).select_from(_ENTRIES))

    def stats(self) -> dict:
        """Entry counts (all, by kind, by fingerprint), total hits, runs, revision and masked URL."""
        self._require_current()
        t = _ENTRIES
        with self._read() as conn:  # one transaction: a consistent picture
            n = conn.scalar(sa.select(sa.func.count()).select_from(t))
            by_kind = dict(conn.execute(sa.select(t.c.kind, sa.func.count()).group_by(t.c.kind).order_by(t.c.kind)).all())
            by_fp = dict(conn.execute(sa.select(t.c.fingerprint, sa.func.count())
                                      .group_by(t.c.fingerprint).order_by(t.c.fingerprint)).all())
            hits = conn.scalar(sa.select(sa.func.coalesce(sa.func.sum(t.c.hits), 0)))
            runs = conn.scalar(sa.select(sa.func.count()).select_from(_RUNS))
        return {"entries": n, "by_kind": by_kind, "by_fingerprint": by_fp, "hits": int(hits), "runs": runs,
                "revision": self.revision, "url": self.safe_url}

    def prune(self, *, fingerprint: str | None = None, kind: str | None = None, older_than_days: float | None = None,
              unused_days: float | None = None, everything: bool = False) -> int:
        """Delete the entries matching every filter given (or all, with ``everything``); return how
        many went. ``unused_days``: not used (nor created) within that many days."""
        self._require_current()
        t = _ENTRIES
        now = _now()
        where = []
        if fingerprint is not None:
            where.append(t.c.fingerprint == fingerprint)
        if kind is not None:
            if kind not in KINDS:
                raise InputError(f"prune: unknown kind {kind!r} (kinds: {', '.join(KINDS)})")
            where.append(t.c.kind == kind)
        if older_than_days is not None:
            where.append(t.c.created_at < now - _days("older-than", older_than_days))
        if unused_days is not None:
            cutoff = now - _days("unused-days", unused_days)
            where.append(sa.or_(t.c.last_used_at < cutoff, sa.and_(t.c.last_used_at.is_(None), t.c.created_at < cutoff)))
        if not where and not everything:
            raise InputError("prune: say which entries to remove (fingerprint, kind, age, unused days) or all of them")
        if where and everything:
            raise InputError("prune: 'all' removes every entry and takes no filter")
        with self._write() as conn:
            return conn.execute(sa.delete(t).where(*where)).rowcount

    def integrity_check(self) -> list[str]:
        """Problems found ([] when fine): SQLite's own check, then every row's content."""
        self._require_current()
        problems = []
        with self._read() as conn:
            if self.backend == "sqlite":
                res = conn.exec_driver_sql("PRAGMA integrity_check").scalars().all()
                if res != ["ok"]:
                    problems += [f"sqlite: {r}" for r in res]
            for r in conn.execute(sa.select(_ENTRIES).order_by(_ENTRIES.c.id)):
                try:
                    e = validate({"kind": r.kind, "fingerprint": r.fingerprint, "scheme": r.scheme,
                                  "wl_hash": r.wl_hash, "key": json.loads(r.key_json),
                                  "value": json.loads(r.value_json), "digest": r.digest})
                    if (e.n_vertices, e.n_edges) != (r.n_vertices, r.n_edges):
                        raise ValueError("n_vertices/n_edges do not match the key")
                    if r.hits < 0:
                        raise ValueError(f"negative hits {r.hits}")
                except (ValueError, TypeError) as ex:
                    problems.append(f"entry id {r.id}: {ex}")
        return problems

    def close(self) -> None:
        """Release the connections (the store cannot be used afterwards)."""
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None


def _parse_target(target: str) -> tuple[URL, str, Path | None]:
    """(URL, how messages name it, the SQLite file or None)."""
    if "://" not in target:
        path = Path(target).expanduser()
        return URL.create("sqlite", database=str(path)), target, path
    try:
        url = make_url(target)
    except (ArgumentError, ValueError):
        # never echo the text: it may hold a password
        raise InputError("bad memo database URL (expected a file, sqlite:///FILE or "
                         "postgresql+psycopg://USER@HOST/DB)") from None
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")  # the driver we depend on
    label = url.render_as_string(hide_password=True)
    path = None
    if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:") \
            and not url.query.get("uri"):
        path = Path(url.database)
    return url, label, path


def _check_sqlite_file(path: Path, label: str) -> bool:
    """Whether ``path`` is a new database (missing or empty); InputError unless it is SQLite."""
    if path.is_dir():
        raise InputError(f"{label}: is a folder, not a memo database file")
    try:
        with open(path, "rb") as f:
            head = f.read(len(SQLITE_MAGIC))
    except FileNotFoundError:
        return True
    except PermissionError:
        raise InputError(f"{label}: permission denied") from None
    if not head:
        return True
    if head != SQLITE_MAGIC:
        raise InputError(f"{label}: not a wormhole-replay memo database (not an SQLite file)")
    return False
