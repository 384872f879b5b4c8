"""Whole iterations from the memo (``memo/episodes.py``, ``replay(memo_episodes=True)``)."""

import numpy as np
import pytest
from conftest import move_memo

from wormhole_replay.memo import exchange, fcg
from wormhole_replay.memo.entry import MemoEntry, validate
from wormhole_replay.memo.episodes import agree
from wormhole_replay.memo.store import MemoStore
from wormhole_replay.replay import replay
from wormhole_replay.workload.generators import GptShape, gpt_trace

FABRIC = "fat-tree:k=4,gpus_per_server=2"
RAIL = "rail:servers=8,gpus_per_server=2"  # each DP ring alone on its rail: iterations alike to 0.1%
SHAPE = GptShape(layers=1, hidden=1024, seq=512, vocab=8192)


def _trace(tflops):
    """A 16-GPU DDP iteration: at 5 TFLOP/s its ranks compute for milliseconds between all-reduces,
    so the network is idle between iterations; at 150 its iterations overlap on the network."""
    return gpt_trace(SHAPE, gpus=16, tp=2, tflops=tflops)


def _network(res):
    f = res.flows
    return f[~f["virtual"]]


def test_a_repeated_iteration_is_taken_whole_from_the_memo(tmp_path):
    trace, db = _trace(5.0), tmp_path / "memo.sqlite"
    cold = replay(trace, RAIL, "hpcc", iterations=4, memo_db=db, memo_episodes=True)
    w = cold.counters["wormhole"]
    # iteration 0 starts with every rank at once: a course of its own; iterations 1 and 2 are
    # simulated and agree, so iteration 1's course is stored and iteration 3 taken from it
    assert [w[f"memo_episode_{k}"] for k in ("learned", "refuted", "hits", "overlaps")] == [1, 0, 1, 0]
    with MemoStore.open(str(db)) as store, MemoStore.open(str(tmp_path / "copy.sqlite")) as copy:
        exchange.export(store, tmp_path / "memo.json")
        read, inserted = exchange.import_(copy, tmp_path / "memo.json")  # every entry validated on the way in
        assert read == inserted == store.count() and copy.stats()["by_kind"].get("episode") == 1
    net = _network(cold)
    by_it = [net[net["iteration"] == i] for i in range(4)]
    assert all(it["packets_sent"].sum() > 0 for it in by_it[:3]) and (by_it[3]["packets_sent"] == 0).all()
    taken = by_it[3]  # not simulated: each flow took what its counterpart in iteration 1 took
    assert (taken["fast_forwarded_bytes"] == taken["size_bytes"]).all()
    assert taken["fct_ns"].tolist() == by_it[1]["fct_ns"].tolist()
    assert (taken["received_ns"] - taken["start_ns"]).tolist() == (by_it[1]["received_ns"] - by_it[1]["start_ns"]).tolist()
    full = replay(trace, RAIL, "hpcc", iterations=4, mode="full")
    fct, ref = net["fct_ns"].to_numpy(float), _network(full)["fct_ns"].to_numpy(float)
    assert np.mean(np.abs(fct / ref - 1)) < 0.005  # 0.1% measured
    d = cold.iterations["duration_ns"].to_numpy()
    assert np.abs(d / full.iterations["duration_ns"].to_numpy() - 1).max() < 0.002  # 0.07% measured
    # a second run on the filled database simulates its first iteration and takes the others
    warm = replay(trace, RAIL, "hpcc", iterations=4, memo_db=db, memo_episodes=True)
    w = warm.counters["wormhole"]
    assert (w["memo_episode_hits"], w["memo_episode_learned"]) == (3, 0)
    assert warm.counters["events"] < 0.5 * cold.counters["events"]
    assert np.abs(warm.iterations["duration_ns"].to_numpy() / d - 1).max() < 0.001


def test_two_copies_agree_within_one_percent_of_mean_fct_and_span():
    a = {"start_ns": [-1, 0, 100], "rx_ns": [-1, 1000, 900], "fct_ns": [-1, 1010, 910]}  # span 1000, mean FCT 960
    near = {"start_ns": [-1, 0, 105], "rx_ns": [-1, 1005, 900], "fct_ns": [-1, 1015, 912]}
    slow = {**near, "fct_ns": [-1, 1030, 920]}  # mean FCT +1.6%
    late = {**near, "start_ns": [-1, 0, 130]}  # span +3%
    assert agree(a, near) and not agree(a, slow) and not agree(a, late)


def test_on_a_fat_tree_the_taken_iterations_keep_mean_fct_and_iteration_times(tmp_path):
    """The rings collide and per-flow FCTs move by several percent from one iteration to the next
    (4.1-4.2% here); mean FCT and iteration times are what the memo must keep (measured: within
    0.43% and 0.75%)."""
    trace = _trace(5.0)
    res = replay(trace, FABRIC, "hpcc", iterations=5, memo_db=tmp_path / "m.sqlite", memo_episodes=True)
    w = res.counters["wormhole"]
    assert (w["memo_episode_learned"], w["memo_episode_hits"]) == (1, 2)
    full = replay(trace, FABRIC, "hpcc", iterations=5, mode="full")
    a, b = _network(full), _network(res)
    for i in (3, 4):
        fa, fb = a[a["iteration"] == i]["fct_ns"], b[b["iteration"] == i]["fct_ns"]
        assert abs(fb.mean() / fa.mean() - 1) < 0.01
    d, ref = res.iterations["duration_ns"].to_numpy(), full.iterations["duration_ns"].to_numpy()
    assert np.abs(d / ref - 1).max() < 0.01


def test_iterations_that_overlap_on_the_network_are_not_remembered(tmp_path):
    res = replay(_trace(150.0), FABRIC, "hpcc", iterations=3, memo_db=tmp_path / "m.sqlite", memo_episodes=True)
    w = res.counters["wormhole"]
    assert w["memo_episode_learned"] == w["memo_episode_hits"] == 0 and w["memo_episode_unisolated"] > 0


def test_episodes_are_opt_in_and_need_a_memo_database(tmp_path):
    trace = _trace(5.0)
    for kw in ({"memo_db": tmp_path / "m.sqlite"}, {"memo_episodes": True}):
        w = replay(trace, RAIL, "hpcc", iterations=2, **kw).counters["wormhole"]
        assert w.get("memo_episode_hits", 0) == 0 and "memo_episode_learned" not in w


def test_episode_entries_are_validated():
    key = {"v": [7, 9, 11], "e": [[0, 1, 1], [1, 2, 1]]}
    value = {"start_ns": [-1, 0, 40], "rx_ns": [-1, 500, 600], "fct_ns": [-1, 510, 620]}
    good = MemoEntry("episode", "fp", fcg.SCHEME, "h", key, value)
    assert validate(good.as_dict()).digest == good.digest
    for bad in ({**value, "rx_ns": [-1, 500]}, {**value, "fct_ns": [-1, -2, 620]}, {**value, "start_ns": None},
                {k: v for k, v in value.items() if k != "fct_ns"}):
        with pytest.raises(ValueError):
            validate({**good.as_dict(), "value": bad})


def test_episodes_moved_from_sqlite_to_postgres_give_the_same_hits(tmp_path, pg_url):
    """``memo export`` / ``memo import`` carry episode entries: a warm run on Postgres takes the same
    iterations from the memo as one on the SQLite file, with the same results."""
    trace, db = _trace(5.0), tmp_path / "memo.sqlite"
    replay(trace, RAIL, "hpcc", iterations=3, memo_db=db, memo_episodes=True)
    move_memo(db, pg_url, tmp_path)
    warm = {name: replay(trace, RAIL, "hpcc", iterations=3, memo_db=where, memo_episodes=True)
            for name, where in (("sqlite", db), ("postgres", pg_url))}
    hits = [w.counters["wormhole"]["memo_episode_hits"] for w in warm.values()]
    assert hits == [2, 2]
    assert warm["sqlite"].flows["fct_ns"].tolist() == warm["postgres"].flows["fct_ns"].tolist()
