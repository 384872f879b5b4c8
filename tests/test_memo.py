"""The memo in use: canonical FCG keys, hits applied in the engine, and the memo database shared by
runs (warm starts, concurrent runs, a killed run)."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import networkx as nx
import numpy as np
import pytest

from wormhole_replay import api
from wormhole_replay.memo import fcg
from wormhole_replay.memo.entry import MemoEntry
from wormhole_replay.memo.session import MemoSession
from wormhole_replay.memo.store import MemoStore
from wormhole_replay.workload.flowfile import FlowSet

TOPO = "leaf-spine:hosts=8,leaves=2,spines=1"  # one spine: repeated flows take the same path


def _key(n, edges, w=20):
    return {"v": [w] * n, "e": sorted([min(a, b), max(a, b), 1] for a, b in edges)}


def _fcg(key):
    return fcg.FCG(list(range(len(key["v"]))), key["v"], key["e"])


def test_wl_collision_is_never_a_hit():
    """A 6-cycle and two triangles share a WL hash; only an isomorphic key may hit."""
    ring = _key(6, [(i, (i + 1) % 6) for i in range(6)])
    triangles = _key(6, [(0, 1), (1, 2), (2, 0), (3, 4), (4, 5), (5, 3)])
    assert _fcg(ring).wl_hash == _fcg(triangles).wl_hash
    value = {"t_conv_ns": 1000, "bytes": [1000] * 6, "rates": [1e9] * 6, "steady": False}
    s = MemoSession("fp", [MemoEntry("transient", "fp", fcg.SCHEME, _fcg(ring).wl_hash, ring, value)], 1000, 4, 2)
    assert s.find("transient", _fcg(triangles)) == (None, None)
    e, m = s.find("transient", _fcg(ring))
    assert e is not None and sorted(m) == list(range(6))


def test_isomorphism_maps_weights_and_edges():
    """The mapping takes each stored vertex to the current vertex of the same weight and links."""
    stored = {"v": [3, 7, 20], "e": [[0, 1, 2], [1, 2, 1]]}
    current = {"v": [20, 3, 7], "e": [[0, 2, 1], [1, 2, 2]]}  # the same graph, vertices permuted
    m = fcg.mapping(fcg.graph_of(stored), fcg.graph_of(current))
    assert m == {0: 1, 1: 2, 2: 0}
    other = {"v": [20, 3, 7], "e": [[0, 2, 2], [1, 2, 1]]}  # edge weights swapped: not the same FCG
    assert fcg.mapping(fcg.graph_of(stored), fcg.graph_of(other)) is None


def test_fcg_counts_shared_links():
    g = fcg.build([4, 9, 11], [[1, 2, 3], [2, 3, 5], [7]], [20, 20, 10])
    assert g.v == [20, 20, 10] and g.e == [[0, 1, 2]]
    assert fcg.build([1, 2], [[1, 2], [2]], [1, 1], link_level=lambda x: 3).e == [[0, 1, 1 + 3 * fcg.LINKS_MAX]]


def _repeated(reps=3, size=30_000_000, n=2, sizes=None):
    """``n`` flows into host 7 (of ``size``, or of the ``sizes`` given), repeated ``reps`` times,
    10 ms apart: the same contention each time."""
    sizes = sizes or [size] * n
    src, dst, sz, start = [], [], [], []
    for r in range(reps):
        for i, s in enumerate(sizes):
            src.append(i)
            dst.append(7)
            sz.append(s)
            start.append(r * 10_000_000 + i * 1000)
    return FlowSet.from_columns(src, dst, sz, start)


def _fct_errors(a, b):
    x, y = a.flows.fct_ns.to_numpy(float), b.flows.fct_ns.to_numpy(float)
    return np.abs(y - x) / x


@pytest.mark.parametrize("cc,sizes", [("hpcc", [30_000_000] * 2), ("dcqcn", [30_000_000, 2_000_000])])
def test_repeated_contention_hits_the_memo(tmp_path, cc, sizes):
    """The first round learns; later rounds hit (in the same run, and from the database in the
    next), within the fast-forward bounds of the full simulation.  HPCC: two flows into one host
    converge to a steady state (a transient ending steady); DCQCN: the long flow, cut while the
    short one shared its receiver, climbs back to line rate alone (a transient's prefix; measured:
    2 hits cold, 3 warm, FCT errors <= 0.6%).  A flow at line rate with nothing to share is not
    the memo's: the engine settles it in a short window (``memo_settled``)."""
    flows = _repeated(sizes=sizes)
    full = api.simulate(TOPO, flows, cc, mode="full")
    db = tmp_path / "memo.sqlite"
    cold = api.simulate(TOPO, flows, cc, memo_db=db)
    w = cold.counters["wormhole"]
    assert w["memo_entries_at_start"] == 0 and w["memo_inserts"] >= 1 and w["memo_hits"] >= 1
    warm = api.simulate(TOPO, flows, cc, memo_db=db)
    v = warm.counters["wormhole"]
    assert v["memo_entries_at_start"] == w["memo_inserts"] and v["memo_hits"] >= w["memo_hits"]
    for r in (cold, warm):
        e = _fct_errors(full, r)
        assert e.mean() <= 0.01 and e.max() <= 0.05, (cc, e)
    with MemoStore.open(str(db)) as store:
        s = store.stats()
        assert s["entries"] == w["memo_inserts"] and s["runs"] == 2


def _ring_steps(rounds=4, size=3_000_000, hosts=4):
    """A ring step repeated: each of ``hosts`` hosts of one leaf sends ``size`` to the next, all at
    once, every 2 ms.  The flows share no switch port (each one's rate is its own CC's: a settled
    partition), and each is shorter than a steadiness window (3 MB at 100 Gb/s: 240 us)."""
    src = [h for _ in range(rounds) for h in range(hosts)]
    dst = [(h + 1) % hosts for _ in range(rounds) for h in range(hosts)]
    start = [r * 2_000_000 for r in range(rounds) for _ in range(hosts)]
    return FlowSet.from_columns(src, dst, [size] * len(src), start)


@pytest.mark.parametrize("cc", ["hpcc", "dcqcn"])
def test_a_repeated_short_ring_step_hits_the_memo_from_its_first_packet(tmp_path, cc):
    """The first step learns its course from its flows' first packet, the second is simulated to
    confirm the entry (its flows delivered what a hit would have credited), and every later one
    is a hit at the first packet, jumping over most of the step: more events skipped than without
    the memo (measured 2026-12-01, of a full run's 384k events: HPCC 0 -> 181k, DCQCN 209k ->
    282k), FCTs within the flow-file bounds of the full run (0.002% / 0.04% mean)."""
    flows = _ring_steps()
    full = api.simulate(TOPO, flows, cc, mode="full")
    plain = api.simulate(TOPO, flows, cc)
    run = api.simulate(TOPO, flows, cc, memo_db=tmp_path / "memo.sqlite")
    w = run.counters["wormhole"]
    assert w["memo_inserts"] >= 1 and w["memo_confirmed"] == 1 and w["memo_refuted"] == 0, w
    hits = run.memo.tables()["memo_hits"]
    assert sorted(hits["time_ns"]) == [4_000_000, 6_000_000]  # at the steps' first packets
    # without the memo HPCC's steps are too short to jump at all, DCQCN's jump after a short window
    assert w["events_skipped_estimate"] > 1.2 * plain.counters["wormhole"]["events_skipped_estimate"]
    e = _fct_errors(full, run)
    assert e.mean() <= 0.01 and e.max() <= 0.05, e
    f, r = full.flows.fct_ns.to_numpy(float), run.flows.fct_ns.to_numpy(float)
    assert abs(r.mean() / f.mean() - 1) <= 0.01


def test_a_spot_checked_memo_hit_delivers_what_its_entry_says(tmp_path):
    """A memo hit simulated packet by packet instead of applied (``memo_spot_check``) delivers the
    bytes its entry predicted, to 1%: DCQCN's long flow climbing back after the short one left
    (measured 2026-12-01: one check, not interrupted, 0.00% off).  Catches an entry learned or
    keyed wrongly (a hit that would credit other bytes than the flows really deliver), which the
    FCT bounds only see blurred over a whole flow."""
    from wormhole_replay.audit.compare import spot_check_errors

    flows = _repeated(sizes=[30_000_000, 2_000_000])
    db = tmp_path / "memo.sqlite"
    assert api.simulate(TOPO, flows, "dcqcn", memo_db=db).counters["wormhole"]["memo_hits"] >= 1
    run = api.prepare_direct_run(TOPO, flows, "dcqcn", out=None)
    run.fast_forward, run.memo_db, run.memo_spot_check = api.fast_forward_for("wormhole", None), str(db), 3
    checks = api.execute(run).memo.tables()["spot_checks"]
    done = checks[~checks["interrupted"].astype(bool)]
    assert len(done) >= 1
    err = spot_check_errors(done)
    assert np.isfinite(err).all() and err.max() <= 0.01, err


def test_a_warm_run_equals_its_cold_run_where_the_memo_does_not_hit(tmp_path):
    """A database full of entries that do not fit changes nothing: the warm run looks them up,
    misses, and is the cold run bit for bit (jumps included), learning the same entries.  Catches a
    lookup or a near-miss that touches the engine's state (a rate, a queue, an event) on a miss."""
    learned = tmp_path / "other.sqlite"
    assert api.simulate(TOPO, _repeated(), "hpcc", memo_db=learned).counters["wormhole"]["memo_inserts"] >= 1
    flows = FlowSet.from_columns([0, 4], [6, 6], [30_000_000, 20_000_000], [0, 200_000])  # another contention
    cold = api.simulate(TOPO, flows, "hpcc", memo_db=tmp_path / "cold.sqlite")
    warm = api.simulate(TOPO, flows, "hpcc", memo_db=learned)
    c, w = cold.counters["wormhole"], warm.counters["wormhole"]
    assert c["memo_entries_at_start"] == 0 < w["memo_entries_at_start"]
    assert w["memo_misses"] >= 1 and w["memo_hits"] == w["memo_steady_hits"] == w["memo_jumps"] == 0
    assert w["fast_forwards"] >= 1
    assert warm.flows.equals(cold.flows) and warm.counters["events"] == cold.counters["events"]
    assert sorted(e.digest for e in warm.memo.new_entries) == sorted(e.digest for e in cold.memo.new_entries)


@pytest.mark.parametrize("workload", ["contention", "ring steps"])
def test_fingerprints_keep_networks_apart(tmp_path, workload):
    """Entries learned on one network are never offered to another (here: another buffer size),
    transients of contending flows and courses of settled ones alike: the run on the other network
    starts from none of them and hits only what it learns itself."""
    flows = _repeated(reps=2) if workload == "contention" else _ring_steps()
    db = tmp_path / "memo.sqlite"
    first = api.simulate(TOPO, flows, "hpcc", memo_db=db)
    assert first.counters["wormhole"]["memo_inserts"] >= 1
    cfg = tmp_path / "config.txt"
    cfg.write_text("BUFFER_SIZE 8\n")
    other = api.simulate(TOPO, flows, "hpcc", config=cfg, memo_db=db)
    w = other.counters["wormhole"]
    assert w["memo_entries_at_start"] == 0
    learned = {e.digest for e in other.memo.new_entries}
    assert set(other.memo.tables()["memo_hits"]["digest"]) <= learned
    with MemoStore.open(str(db)) as store:
        assert len(store.stats()["by_fingerprint"]) == 2


def _trace(tmp_path):
    from wormhole_replay.workload.generators import GptShape, gpt_trace
    from wormhole_replay.workload.trace import save_trace

    t = gpt_trace(GptShape(layers=2, hidden=2048, seq=1024), gpus=8, tp=2, iterations=2, bucket_mb=8.0)
    save_trace(t, tmp_path / "t.parquet")
    return tmp_path / "t.parquet"


def _replay(trace, out, db, *extra, env=None):
    cmd = [sys.executable, "-m", "wormhole_replay", "replay", str(trace), "--topology", "rail:servers=2,gpus_per_server=4",
           "--cc", "hpcc", "--out", str(out), "--memo-db", str(db), "--json", "--quiet", *extra,
           "--ports", "flow",  # a source port per flow: its rings contend, so there are transients to learn
           "--ff-releaser-share", "1"]  # ... which by default (their steps release the next) never jump a window
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})


def _digests(db) -> list:
    with sqlite3.connect(db) as c:
        return [r[0] for r in c.execute("select digest from entries")]


def test_four_replays_share_one_sqlite_database(tmp_path):
    trace = _trace(tmp_path)
    db = tmp_path / "shared.sqlite"
    procs = [_replay(trace, tmp_path / f"o{i}", db) for i in range(4)]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
    learned = [json.loads(o)["wormhole"] for o, _ in outs]
    digests = _digests(db)
    assert len(digests) == len(set(digests)) > 0  # nothing duplicated
    assert sum(w["memo_inserts"] for w in learned) == len(digests)  # nothing lost: each row inserted once
    with MemoStore.open(str(db)) as store:
        assert store.stats()["runs"] == 4 and store.integrity_check() == []


def test_four_replays_share_one_postgres_database(tmp_path, pg_url):
    """Four replays on one Postgres database, through a URL with a password (the server trusts
    local connections and ignores it): every insert lands once, and no output shows the password."""
    from sqlalchemy.engine import make_url

    password = f"secret-{os.getpid()}-pw"
    url = make_url(pg_url).set(password=password).render_as_string(hide_password=False)
    assert password in url
    trace = _trace(tmp_path)
    procs = [_replay(trace, tmp_path / f"o{i}", url) for i in range(4)]
    outs = [p.communicate(timeout=600) for p in procs]
    for i, (p, (out, err)) in enumerate(zip(procs, outs)):
        assert p.returncode == 0, err
        assert password not in out + err
        assert password not in (tmp_path / f"o{i}" / "summary.json").read_text()
    inserted = sum(json.loads(o)["wormhole"]["memo_inserts"] for o, _ in outs)
    with MemoStore.open(pg_url) as store:
        s = store.stats()
        assert s["entries"] == inserted > 0 and s["runs"] == 4


def test_a_database_moved_from_sqlite_to_postgres_gives_the_same_hits(tmp_path, pg_url):
    """A memo database filled by a run on SQLite, exported (``memo export``) and imported into
    Postgres (``memo import``), serves a warm run on Postgres exactly as it serves a warm run on the
    SQLite file: the same hits, the same results bit for bit."""
    trace = _trace(tmp_path)
    db = tmp_path / "memo.sqlite"
    cold = _replay(trace, tmp_path / "cold", db)
    out, err = cold.communicate(timeout=600)
    assert cold.returncode == 0, err
    moved = tmp_path / "memo.json"
    for args in (["export", str(moved), "--db", str(db)], ["import", str(moved), "--db", pg_url]):
        p = subprocess.run([sys.executable, "-m", "wormhole_replay", "memo", *args], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
    with MemoStore.open(str(db)) as a, MemoStore.open(pg_url) as b:
        assert a.count() == b.count() > 0
    warm = {}
    for name, where in (("sqlite", db), ("postgres", pg_url)):  # each starts from the same entries
        p = _replay(trace, tmp_path / name, where)
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        warm[name] = json.loads(out)["wormhole"]
    assert warm["sqlite"]["memo_hits"] == warm["postgres"]["memo_hits"] > 0
    assert (tmp_path / "sqlite" / "fct.txt").read_bytes() == (tmp_path / "postgres" / "fct.txt").read_bytes()


def test_memo_stats_shows_the_entries_that_carried_the_runs(tmp_path):
    """``memo stats --entries`` lists the entries hit, each with its hits and the simulated time and
    bytes the jumps its hits began skipped; the totals agree with the runs' own journals."""
    trace = _trace(tmp_path)
    db = tmp_path / "memo.sqlite"
    hits = 0
    for name in ("cold", "warm"):
        p = _replay(trace, tmp_path / name, db)
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
        w = json.loads(out)["wormhole"]
        hits += w["memo_hits"] + w["memo_steady_hits"]
    assert hits > 0
    p = subprocess.run([sys.executable, "-m", "wormhole_replay", "memo", "stats", "--db", str(db), "--entries", "1000",
                        "--json"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    top = json.loads(p.stdout)["top_entries"]
    assert sum(e["hits"] for e in top) == hits
    assert all(e["jumped_ns"] > 0 and e["jumped_bytes"] > 0 for e in top)  # every hit here began a jump
    assert [e["jumped_ns"] for e in top] == sorted((e["jumped_ns"] for e in top), reverse=True)
    p = subprocess.run([sys.executable, "-m", "wormhole_replay", "memo", "stats", "--db", str(db), "--entries", "2"],
                       capture_output=True, text=True)
    assert p.returncode == 0 and "entries that carried runs" in p.stdout and top[0]["digest"][:12] in p.stdout
    p = subprocess.run([sys.executable, "-m", "wormhole_replay", "memo", "stats", "--db", str(db), "--entries", "-1"],
                       capture_output=True, text=True)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1


def test_killed_replay_leaves_a_database_that_warm_starts(tmp_path):
    """A replay killed (SIGKILL) in the middle of its run, after its first entries reached the
    database, leaves a sound database whose entries the next run starts with.  The kill must hit a
    running process (4 iterations: measured 2026-12-01, first entry at 2.9 s of a 6.7 s run), else
    the test would check a finished run's database and pass whatever a kill does."""
    trace = _trace(tmp_path)
    db = tmp_path / "memo.sqlite"
    first = _replay(trace, tmp_path / "a", db, "--iterations", "4", env={"WORMHOLE_MEMO_FLUSH_SECONDS": "0"})
    deadline = time.time() + 300
    while time.time() < deadline and first.poll() is None:  # kill it once it has written something
        if db.exists() and os.path.getsize(db) > 0:
            try:
                if _digests(db):
                    break
            except sqlite3.Error:
                pass
        time.sleep(0.02)
    assert first.poll() is None, "the replay ended before it could be killed"
    first.send_signal(signal.SIGKILL)
    first.communicate()
    assert first.returncode == -signal.SIGKILL
    with MemoStore.open(str(db)) as store:
        assert store.integrity_check() == []
        kept = store.count()
    assert kept >= 1
    again = _replay(trace, tmp_path / "b", db)
    out, err = again.communicate(timeout=600)
    assert again.returncode == 0, err
    assert json.loads(out)["wormhole"]["memo_entries_at_start"] == kept


def test_foreign_file_as_memo_database_is_one_clear_error(tmp_path):
    trace = _trace(tmp_path)
    bad = tmp_path / "notes.txt"
    bad.write_bytes(os.urandom(4096))
    p = _replay(trace, tmp_path / "o", bad)
    out, err = p.communicate(timeout=600)
    assert p.returncode == 2 and out == ""
    assert err.count("\n") == 1 and "not a wormhole-replay memo database" in err and "Traceback" not in err


def test_scheme_names_the_networkx_version():
    assert fcg.SCHEME.endswith("nx" + ".".join(nx.__version__.split(".")[:2]))


def test_entry_values_are_validated_before_use():
    from wormhole_replay.memo.entry import validate

    good = MemoEntry("transient", "fp", fcg.SCHEME, "h", {"v": [20, 20], "e": [[0, 1, 1]]},
                     {"t_conv_ns": 5, "bytes": [1, 2], "rates": [1e9, 1e9], "steady": False, "pipe": [0, 3],
                      "cc": [[0.0] * 16, [1.0] * 16]}).as_dict()
    assert validate(good).digest == good["digest"]
    for field, bad in (("cc", [[0.0] * 15, [1.0] * 16]), ("pipe", [0]), ("steady", 1), ("bytes", [1, -2])):
        d = {**good, "value": {**good["value"], field: bad}}
        with pytest.raises(ValueError):
            validate(d)
