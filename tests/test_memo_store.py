"""The memo database: wormhole_replay/memo/{store,exchange,commands}.py and migrations/.

Every test that takes ``db`` runs on SQLite (a file in tmp_path) and on Postgres. The Postgres
runs need WORMHOLE_TEST_POSTGRES_URL (DEVELOPERS.md) and skip without it. Each works in a schema
of its own, ``wr_test_<random>``, created before the test and dropped (CASCADE) after it; the store
is pointed there with libpq's ``options=-csearch_path=...`` in the URL, exactly as a user would
keep a memo in its own schema. So the tests leave nothing behind and two runs never meet.

Concurrency and crash tests run workers as subprocesses that import this module
(``_concurrent_worker``, ``_kill_worker``).
"""

import hashlib
import json
import random
import signal
import sqlite3
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy.engine import make_url

from wormhole_replay.cli import main
from wormhole_replay.errors import InputError
from wormhole_replay.memo.entry import MemoEntry
from wormhole_replay.memo.exchange import export, import_
from wormhole_replay.memo.models import Base
from wormhole_replay.memo.store import MemoStore, alembic_config, head_revision

TESTS = Path(__file__).resolve().parent


# --- entries -------------------------------------------------------------------------------


def make_entry(i: int, flip: bool = False, fp: str = "fp-test", kind: str = "steady") -> MemoEntry:
    """Entry number ``i``: two flows on one link; ``flip`` lists them the other way round (another
    digest, an isomorphic key, the same bucket)."""
    v = [i + 1, 100_000 + i]
    rates = [1e9 * (1 + x % 7) for x in v]
    if flip:
        v, rates = v[::-1], rates[::-1]
    value = {"rates": rates}
    if kind == "transient":
        value.update(bytes=[x * 10 for x in v], t_conv_ns=1000 + i)
    wl = hashlib.sha256(str(sorted(v)).encode()).hexdigest()[:16]
    return MemoEntry(kind, fp, "wl-test", wl, {"v": v, "e": [[0, 1, 1]]}, value)


def same_iso(a: MemoEntry, b: MemoEntry) -> bool:
    """Isomorphism for make_entry's two-vertex keys: the same vertex weights in any order."""
    return (a.kind, a.fingerprint, a.scheme) == (b.kind, b.fingerprint, b.scheme) and \
        sorted(a.key["v"]) == sorted(b.key["v"]) and a.key["e"] == b.key["e"]


# --- databases -----------------------------------------------------------------------------


@pytest.fixture(params=["sqlite", "postgres"])
def db(request, tmp_path):
    """A URL for an empty database: a SQLite file, then a Postgres schema."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'memo.db'}"
    return request.getfixturevalue("pg_url")


def _sql(url: str, statement: str, params=None):
    """Run one statement on ``url`` outside any store; rows for a SELECT."""
    engine = sa.create_engine(url)
    try:
        with engine.begin() as c:
            res = c.execute(sa.text(statement), params or {})
            return res.all() if res.returns_rows else None
    finally:
        engine.dispose()


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "wormhole_replay", *args], check=False, cwd=cwd,
                          capture_output=True, text=True, timeout=60)


def _main(capsys, *args):
    """``wormhole-replay ARGS`` in this process: (exit status, stdout, stderr)."""
    capsys.readouterr()
    rc = main(list(args))
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(args, rc, out, err)


def _one_line_error(r) -> str:
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    return r.stderr


# --- round trips ---------------------------------------------------------------------------


def test_insert_entries_count_stats(db):
    es = [make_entry(i) for i in range(20)] + [make_entry(i, kind="transient") for i in range(5)]
    other = [make_entry(i, fp="fp-other") for i in range(3)]
    with MemoStore.open(db) as s:
        assert (s.revision, s.previous_revision) == (head_revision(), None)
        assert s.insert(es + other) == 28
        assert s.insert(es) == 0  # idempotent
        assert s.insert([es[0], es[0]]) == 0
        got = s.entries("fp-test", "wl-test")
        assert {e.digest for e in got} == {e.digest for e in es}
        assert [(e.key, e.value, e.kind, e.wl_hash) for e in got] == \
            [(e.key, e.value, e.kind, e.wl_hash) for e in sorted(es, key=lambda e: e.digest)]
        assert s.entries("fp-test", "other-scheme") == []
        assert s.count() == 28
        s.record_run(trace_digest="t" * 64, fingerprint="fp-test", mode="wormhole",
                     counters={"events": 12, "hits": 3}, wall_seconds=1.25)
        st = s.stats()
        assert st == {"entries": 28, "by_kind": {"steady": 23, "transient": 5},
                      "by_fingerprint": {"fp-other": 3, "fp-test": 25}, "hits": 0, "runs": 1,
                      "revision": head_revision(), "url": s.safe_url}
        assert s.integrity_check() == []
    with MemoStore.open(db) as s:  # reopening changes nothing
        assert s.previous_revision == head_revision() and s.count() == 28


def test_same_callable_dedupes_isomorphic_keys(db):
    with MemoStore.open(db) as s:
        assert s.insert([make_entry(1), make_entry(2)], same=same_iso) == 2
        assert s.insert([make_entry(1, flip=True)], same=same_iso) == 0  # isomorphic to a stored one
        assert s.insert([make_entry(3), make_entry(3, flip=True)], same=same_iso) == 1  # within the batch
        assert s.insert([make_entry(1, flip=True)]) == 1  # without `same`, only digests count
        assert s.count() == 4


def test_touch_and_prune(db):
    es = [make_entry(i) for i in range(6)] + [make_entry(i, kind="transient", fp="fp-b") for i in range(4)]
    with MemoStore.open(db) as s:
        s.insert(es)
        s.touch({es[0].digest: 2, es[1].digest: 1, "0" * 64: 5})
        s.touch({es[0].digest: 1})
        assert s.stats()["hits"] == 4
        with pytest.raises(InputError, match="say which entries"):
            s.prune()
        with pytest.raises(InputError, match="takes no filter"):
            s.prune(kind="steady", everything=True)
        with pytest.raises(InputError, match=">= 0"):
            s.prune(unused_days=-1)
        assert s.prune(older_than_days=1) == 0
        # age the rows: all created long ago, entry 1 last used 2 days ago, entry 0 just now
        two_days_ago = (datetime.now(timezone.utc) - timedelta(days=2)).strftime("%Y-%m-%d %H:%M:%S")
        _sql(db, "UPDATE entries SET created_at = :t", {"t": "2000-01-01 00:00:00"})
        _sql(db, "UPDATE entries SET last_used_at = :t WHERE digest = :d", {"t": two_days_ago, "d": es[1].digest})
        assert s.prune(unused_days=3, fingerprint="fp-test") == 4  # entries 2..5
        assert s.prune(unused_days=1, fingerprint="fp-test") == 1  # entry 1
        assert s.prune(kind="transient") == 4
        assert [e.digest for e in s.entries("fp-test", "wl-test")] == [es[0].digest]
        assert s.prune(older_than_days=365) == 1 and s.count() == 0
        s.insert(es[:2])
        assert s.prune(everything=True) == 2 and s.count() == 0


# --- concurrency ---------------------------------------------------------------------------


def _concurrent_worker(db: str, k: str) -> None:
    """Worker k: 100 entries shared by all (listed flipped by odd workers) and 100 of its own, in
    batches of 10 with the isomorphism check; prints how many it inserted."""
    k = int(k)
    todo = [make_entry(i, flip=k % 2 == 1) for i in range(100)] + [make_entry(1000 + 100 * k + i) for i in range(100)]
    random.Random(k).shuffle(todo)
    print("ready", flush=True)
    sys.stdin.readline()  # all start together, on the (new) database
    with MemoStore.open(db) as s:
        print(sum(s.insert(todo[i:i + 10], same=same_iso) for i in range(0, len(todo), 10)))


def _worker(fn: str, *args, stdin=None) -> subprocess.Popen:
    """A subprocess running ``fn(*args)`` of this module."""
    code = f"import sys; sys.path.insert(0, {str(TESTS)!r}); import test_memo_store as t; t.{fn}(*sys.argv[1:])"
    return subprocess.Popen([sys.executable, "-c", code, *args], stdin=stdin, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_concurrent_writers(db):
    procs = [_worker("_concurrent_worker", db, str(k), stdin=subprocess.PIPE) for k in range(4)]
    for p in procs:
        assert p.stdout.readline().strip() == "ready", p.stderr.read()
    for p in procs:
        p.stdin.write("go\n")
        p.stdin.flush()
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 0, err
    inserted = sum(int(out) for out, _ in outs)
    with MemoStore.open(db) as s:
        got = s.entries("fp-test", "wl-test")
        # 100 shared classes + 4 x 100 own; each row inserted by exactly one worker
        assert len(got) == s.count() == inserted == 500
        assert len({e.digest for e in got}) == 500
        assert len({tuple(sorted(e.key["v"])) for e in got}) == 500  # no two isomorphic rows
        assert s.integrity_check() == []


# --- faults --------------------------------------------------------------------------------


BATCH = 200


def _kill_worker(db: str) -> None:
    """Insert batches of BATCH new entries forever; say "going" after the second."""
    with MemoStore.open(db) as s:
        for j in range(10**6):
            s.insert([make_entry(10**6 + j * BATCH + i) for i in range(BATCH)])
            if j == 1:
                print("going", flush=True)


def test_sigkill_mid_batch_leaves_whole_batches(db):
    p = _worker("_kill_worker", db)
    try:
        assert p.stdout.readline().strip() == "going", p.stderr.read()
        time.sleep(0.3)
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    assert p.returncode == -signal.SIGKILL
    with MemoStore.open(db) as s:
        assert s.integrity_check() == []
        n = s.count()
        assert n >= 2 * BATCH and n % BATCH == 0
        assert s.insert([make_entry(7), make_entry(8)]) == 2
        assert s.count() == n + 2


def test_not_a_memo_database(tmp_path):
    junk = tmp_path / "junk.db"
    junk.write_bytes(random.Random(1).randbytes(4096))
    foreign = tmp_path / "foreign.db"
    with sqlite3.connect(foreign) as c:
        c.execute("CREATE TABLE people (name TEXT)")
    cases = ((junk, "not an SQLite file"), (foreign, "other tables: people"))
    for f, why in cases:
        with pytest.raises(InputError, match=f"^{f}: not a wormhole-replay memo database .*{why}"):
            MemoStore.open(str(f))
    # the real command line, both at once (each pays the start-up)
    procs = [subprocess.Popen([sys.executable, "-m", "wormhole_replay", "memo", "stats", "--db", str(f)],
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for f, _ in cases]
    for p, (f, why) in zip(procs, cases):
        out, err = p.communicate(timeout=60)
        err = _one_line_error(subprocess.CompletedProcess(p.args, p.returncode, out, err))
        assert f"{f}: not a wormhole-replay memo database" in err and why in err
    assert foreign.read_bytes()[:16] == b"SQLite format 3\x00"
    with pytest.raises(InputError, match="is a folder"):
        MemoStore.open(str(tmp_path))
    empty = tmp_path / "empty.db"
    empty.touch()  # a 0-byte file is a new database
    with MemoStore.open(str(empty)) as s:
        assert s.count() == 0 and s.previous_revision is None


def test_unreachable_server_and_password_masking(tmp_path):
    url = "postgresql+psycopg://postgres:secret@127.0.0.1:1/test"
    with pytest.raises(InputError) as e:
        MemoStore.open(url)
    assert "secret" not in str(e.value) and "postgres:***@127.0.0.1:1/test" in str(e.value)
    err = _one_line_error(_cli("memo", "stats", "--db", url, cwd=tmp_path))
    assert "secret" not in err and "cannot connect" in err
    with pytest.raises(InputError, match="bad memo database URL") as e:
        MemoStore.open("postgresql+psycopg://postgres:secret@127.0.0.1:notaport/test")
    assert "secret" not in str(e.value)


def test_password_masked_on_a_live_server(pg_url, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    url = make_url(pg_url).set(password="secret").render_as_string(hide_password=False)  # trust auth ignores it
    with MemoStore.open(url) as s:
        s.insert([make_entry(1)])
        assert "secret" not in s.safe_url and "secret" not in repr(s)
        assert "secret" not in json.dumps(s.stats())
        _sql(pg_url, "UPDATE alembic_version SET version_num = '0099'")
    with pytest.raises(InputError, match="newer") as e:
        MemoStore.open(url)
    assert "secret" not in str(e.value)
    for args in (("stats", "--json"), ("upgrade",), ("export", "out.json")):
        r = _main(capsys, "memo", *args, "--db", url)
        assert "secret" not in r.stdout + r.stderr


# --- migrations ----------------------------------------------------------------------------


def _at_0001(url: str) -> None:
    """A database at revision 0001 with two entries and a run, written with plain SQL."""
    engine = sa.create_engine(url)
    try:
        with engine.begin() as c:
            command.upgrade(alembic_config(connection=c), "0001")
        with engine.begin() as c:
            for e in (make_entry(1), make_entry(2, kind="transient")):
                c.execute(sa.text(
                    "INSERT INTO entries (digest, kind, fingerprint, scheme, wl_hash, n_vertices, n_edges, "
                    "key_json, value_json, created_at) VALUES (:digest, :kind, :fingerprint, :scheme, :wl_hash, "
                    ":nv, :ne, :k, :v, '2026-01-01 00:00:00')"),
                    {**e.as_dict(), "nv": e.n_vertices, "ne": e.n_edges, "k": json.dumps(e.key), "v": json.dumps(e.value)})
            c.execute(sa.text("INSERT INTO runs (started_at, fingerprint, mode, counters_json, wall_seconds, tool_version) "
                              "VALUES ('2026-01-01 00:00:00', 'fp-test', 'full', '{}', 1.0, '0.0.1')"))
    finally:
        engine.dispose()


def test_upgrade_from_0001(db):
    _at_0001(db)
    with MemoStore.open(db, upgrade=False) as s:  # only looks
        assert s.revision == "0001"
        with pytest.raises(InputError, match="run: wormhole-replay memo upgrade"):
            s.count()
    assert _sql(db, "SELECT version_num FROM alembic_version") == [("0001",)]
    with MemoStore.open(db) as s:
        assert (s.previous_revision, s.revision) == ("0001", "0003")
        got = s.entries("fp-test", "wl-test")
        assert [e.digest for e in got] == [make_entry(1).digest, make_entry(2, kind="transient").digest]
        assert s.stats()["runs"] == 1 and s.integrity_check() == []
        s.touch({got[0].digest: 1}, {got[0].digest: (2_000, 3_000)})
    assert sorted(_sql(db, "SELECT hits, jumped_ns, jumped_bytes FROM entries")) == [(0, 0, 0), (1, 2_000, 3_000)]


def test_newer_revision_is_refused(db):
    MemoStore.open(db).close()
    _sql(db, "UPDATE alembic_version SET version_num = '0099'")
    for upgrade in (True, False):
        with pytest.raises(InputError, match=r"schema revision 0099 is newer than this wormhole-replay knows "
                                             r"\(head 0003\); upgrade wormhole-replay"):
            MemoStore.open(db, upgrade=upgrade)
    assert _sql(db, "SELECT version_num FROM alembic_version") == [("0099",)]


def test_models_match_migrations(db):
    MemoStore.open(db).close()
    engine = sa.create_engine(db)
    try:
        with engine.connect() as c:
            assert compare_metadata(MigrationContext.configure(c, opts={"compare_type": True}), Base.metadata) == []
    finally:
        engine.dispose()


def test_upgrade_command_and_check(tmp_path, capsys):
    f = tmp_path / "memo.db"
    r = _main(capsys, "memo", "upgrade", "--check", "--db", str(f))
    assert r.returncode == 1 and not f.exists()  # --check creates nothing
    _at_0001(f"sqlite:///{f}")
    before = f.read_bytes()
    r = _main(capsys, "memo", "upgrade", "--check", "--db", str(f))
    assert r.returncode == 1 and "0001" in r.stdout
    assert f.read_bytes() == before  # --check changes nothing
    r = _main(capsys, "memo", "upgrade", "--db", str(f))
    assert r.returncode == 0 and "0003 (upgraded from 0001)" in r.stdout
    assert _main(capsys, "memo", "upgrade", "--check", "--db", str(f)).returncode == 0
    r = _main(capsys, "memo", "stats", "--json", "--db", str(f))
    assert r.returncode == 0 and json.loads(r.stdout)["entries"] == 2
    _one_line_error(_main(capsys, "memo", "prune", "--db", str(f)))
    r = _main(capsys, "memo", "prune", "--kind", "transient", "--db", str(f))
    assert r.returncode == 0 and r.stdout.startswith("1 entries removed")
    _one_line_error(_main(capsys, "memo", "stats", "--db", str(tmp_path / "missing.db")))


# --- export / import -----------------------------------------------------------------------


def test_export_import_round_trip(db, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    es = [make_entry(i) for i in range(30)] + [make_entry(i, kind="transient", fp="fp-b") for i in range(10)]
    with MemoStore.open(db) as s:
        s.insert(es)
        s.touch({es[0].digest: 3})
        assert export(s, tmp_path / "all.json") == 40
        assert export(s, tmp_path / "b.json", fingerprint="fp-b") == 10
    doc = json.loads((tmp_path / "all.json").read_text())
    assert (doc["format"], doc["version"], doc["schema_revision"]) == ("wormhole-replay-memo", 1, "0003")
    assert {d["digest"]: d["hits"] for d in doc["entries"]}[es[0].digest] == 3
    with MemoStore.open(str(tmp_path / "fresh.db")) as t:
        assert import_(t, tmp_path / "all.json", same=same_iso) == (40, 40)
        assert import_(t, tmp_path / "b.json") == (10, 0)
        got = {e.digest for e, _ in t.entries_with_hits()}
        assert got == {e.digest for e in es}
    # CLI: export, then import into another fresh database
    r = _main(capsys, "memo", "import", str(tmp_path / "b.json"), "--db", str(tmp_path / "cli.db"))
    assert r.returncode == 0 and "10 new" in r.stdout, r.stderr
    r = _main(capsys, "memo", "export", "again.json", "--db", str(tmp_path / "cli.db"))
    assert r.returncode == 0
    again = json.loads((tmp_path / "again.json").read_text())["entries"]
    assert sorted(d["digest"] for d in again) == sorted(e.digest for e in es[30:])


def test_import_with_a_bad_entry_writes_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with MemoStore.open(str(tmp_path / "a.db")) as s:
        s.insert([make_entry(i) for i in range(10)])
        export(s, tmp_path / "good.json")
    doc = json.loads((tmp_path / "good.json").read_text())
    doc["entries"][7]["value"]["rates"] = [1.0]  # one rate for two vertices
    (tmp_path / "bad.json").write_text(json.dumps(doc))
    doc["entries"][7] = json.loads((tmp_path / "good.json").read_text())["entries"][7]
    doc["entries"][3]["key"]["v"] = [9, 9]  # content no longer matches the digest
    (tmp_path / "tampered.json").write_text(json.dumps(doc))
    (tmp_path / "v2.json").write_text(json.dumps({**doc, "version": 2}))
    (tmp_path / "other.json").write_text('{"hello": 1}')
    (tmp_path / "broken.json").write_text('{"format": ')
    with MemoStore.open(str(tmp_path / "b.db")) as t:
        for name, why in (("bad", "entry 7: value.rates"), ("tampered", "entry 3: digest"),
                          ("v2", "version 2 is not supported"), ("other", "not a wormhole-replay memo export"),
                          ("broken", "not JSON"), ("missing", "no such memo export")):
            with pytest.raises(InputError, match=why):
                import_(t, tmp_path / f"{name}.json")
        assert t.count() == 0
    err = _one_line_error(_main(capsys, "memo", "import", "bad.json", "--db", "b.db"))
    assert "entry 7" in err
    with MemoStore.open(str(tmp_path / "b.db")) as t:
        assert t.count() == 0
