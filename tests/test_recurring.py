"""Recurring flows taken from their earlier copies (``memo/recurring.py``, ``replay(memo_recurring=True)``)."""

import numpy as np
import pytest
from conftest import move_memo
from test_wormhole import FF, MB, TOPO, _flows

from wormhole_replay.api import prepare_direct_run, simulate
from wormhole_replay.audit.compare import perturb_ops, spot_check_errors
from wormhole_replay.engine import memo_view as V
from wormhole_replay.engine.simulate import simulate as simulate_engine
from wormhole_replay.errors import InputError
from wormhole_replay.memo import exchange, recurring
from wormhole_replay.memo.entry import MemoEntry, validate
from wormhole_replay.memo.recurring import (AS_SIMULATED, MOST_SHARERS, SMALL_GROUP, _after_cold_start, _alone, _learn_from,
                                            _whole_first,
                                            _samples, _spent, agree, fit_gain, tolerance_of)
from wormhole_replay.memo.store import MemoStore
from wormhole_replay.replay import replay
from wormhole_replay.topology.builders import build_topology
from wormhole_replay.workload.flowfile import FlowSet
from wormhole_replay.workload.generators import GptShape, gpt_trace
from wormhole_replay.workload.trace import Trace

FABRIC = "fat-tree:k=4,gpus_per_server=2"  # the two DP rings collide under ECMP
RAIL = "rail:servers=8,gpus_per_server=2"  # each DP ring alone on its rail
SHAPE = GptShape(layers=1, hidden=1024, seq=512, vocab=8192)


def _trace(tflops=5.0):
    return gpt_trace(SHAPE, gpus=16, tp=2, tflops=tflops)


def _network(res):
    f = res.flows
    return f[~f["virtual"]]


def _errors(res, full):
    a, b = _network(full)["fct_ns"].to_numpy(float), _network(res)["fct_ns"].to_numpy(float)
    e = np.abs(b / a - 1)
    d = np.abs(res.iterations["duration_ns"].to_numpy() / full.iterations["duration_ns"].to_numpy() - 1)
    return e.mean(), e.max(), d.max()


def test_ring_steps_on_a_rail_are_taken_from_their_first_copies_then_from_the_memo(tmp_path):
    trace, db = _trace(), tmp_path / "memo.sqlite"
    full = replay(trace, RAIL, "hpcc", iterations=2, mode="full")
    cold = replay(trace, RAIL, "hpcc", iterations=2, memo_db=db, memo_recurring=True)
    w = cold.counters["wormhole"]
    # 32 classes (connection and size) of 28-29 copies: each trusted after 8 simulated copies agreed
    assert (w["memo_recurring_classes"], w["memo_recurring_trusted"], w["memo_recurring_refuted"]) == (32, 32, 0)
    assert w["memo_recurring_taken"] > 0.6 * len(_network(cold))
    # while a ring's classes are trusted one by one, a copy due beside a copy still simulated is
    # simulated too (wormhole/timers.py): the rest are timers
    assert 0 < w["memo_recurring_met_live"] < 0.5 * w["memo_recurring_taken"]
    taken = _network(cold)
    taken = taken[taken["packets_sent"] == 0]
    assert len(taken) == w["memo_recurring_taken"] - w["memo_recurring_met_live"]
    assert (taken["fast_forwarded_bytes"] == taken["size_bytes"]).all()
    mean, worst, iteration = _errors(cold, full)
    assert mean < 0.003 and worst < 0.025 and iteration < 0.002  # measured 0.15%, 1.51%, 0.09%
    with MemoStore.open(str(db)) as store, MemoStore.open(str(tmp_path / "copy.sqlite")) as copy:
        assert store.stats()["by_kind"].get("recurring") == 32
        exchange.export(store, tmp_path / "memo.json")
        read, inserted = exchange.import_(copy, tmp_path / "memo.json")  # each entry validated on the way in
        assert read == inserted == store.count()
    # the same workload again: every copy from the first is taken from the memo
    warm = replay(trace, RAIL, "hpcc", iterations=2, memo_db=db, memo_recurring=True)
    w = warm.counters["wormhole"]
    assert w["memo_recurring_taken"] == len(_network(warm)) and w["memo_inserts"] == 0
    assert warm.counters["events"] < 0.01 * cold.counters["events"]
    mean, worst, iteration = _errors(warm, full)
    assert mean < 0.003 and worst < 0.01 and iteration < 0.002  # measured 0.11%, 0.30%, 0.07%
    # spot checks: every class keeps its first copy simulated, and two are compared with the entry
    checked = replay(trace, RAIL, "hpcc", iterations=2, memo_db=db, memo_recurring=True, memo_spot_check=2)
    spot = checked.spot_checks
    errors = spot_check_errors(spot)[spot["actual_ns"].notna().to_numpy()]
    assert len(errors) == 2 and (errors < 0.01).all(), spot  # measured 0.00% and 0.05%
    assert checked.counters["wormhole"]["memo_recurring_taken"] == w["memo_recurring_taken"] - 32
    # another compute speed is another workload: its contention may differ, nothing is taken whole
    other = replay(_trace(50.0), RAIL, "hpcc", iterations=2, memo_db=db, memo_recurring=True)
    assert other.counters["wormhole"]["memo_recurring_taken"] < warm.counters["wormhole"]["memo_recurring_taken"]
    assert other.counters["wormhole"]["memo_inserts"] >= 32  # learned anew, under its own key


def test_colliding_rings_disagree_and_are_simulated(tmp_path):
    """Under ECMP the two rings meet on a link or not depending on their phase, so a class's copies
    take one time or nearly twice it: refuted, and the run is the one without the option."""
    trace = _trace()
    res = replay(trace, FABRIC, "hpcc", iterations=2, memo_db=tmp_path / "a.sqlite", memo_recurring=True)
    w = res.counters["wormhole"]
    assert w["memo_recurring_refuted"] == w["memo_recurring_classes"] > 0 and w["memo_recurring_taken"] == 0
    plain = replay(trace, FABRIC, "hpcc", iterations=2, memo_db=tmp_path / "b.sqlite")
    assert _network(res)["fct_ns"].tolist() == _network(plain)["fct_ns"].tolist()


def _as_placed(res) -> int:
    """Copies of the second iteration taken as timers whose time to their last byte received is
    exactly that of the first iteration's copy at their place (``Recurring._place``)."""
    f = _network(res).sort_values("flow_id")
    f = f.assign(rx=f["received_ns"] - f["start_ns"], cls=f.groupby(["src", "dst", "sport", "dport", "pg",
                                                                     "size_bytes"]).ngroup())
    f["place"] = f.groupby(["cls", "iteration"]).cumcount()
    first = f[f["iteration"] == 0].set_index(["cls", "place"])["rx"]
    second = f[f["iteration"] == 1].set_index(["cls", "place"])
    same = (second["rx"] == first.reindex(second.index)) & (second["fast_forwarded_bytes"] == second["size_bytes"])
    return int(same.sum())


def test_colliding_rings_taken_at_a_chaotic_fabrics_spread_stay_at_its_noise_floor(tmp_path):
    """Asked to trust copies that agree within 30% (``memo_recurring=0.3``: this shape's full run
    moves per flow by 3.7% mean for a 1-ns change of one op), most classes are trusted, and their
    paced timers run beside each other on the links where the rings collide, each at its share.
    The classes refuted have their second iteration's copies taken by place, from the first's
    (``Recurring._place``).  What the timers add stays near the run's own chaos, the widest of two
    draws (one op 1 ns and 1 us longer: per-flow 3.68% / 3.88% mean, iteration 0.29% / 1.68%):
    measured per-flow 4.76% (3.59% with the refuted classes simulated, at 76% of full's events
    instead of 45%: the copies at the same place of two iterations of the full run differ by 6.1%,
    and the timers that were simulated beside those classes' copies err by 5.5%), mean FCT +0.44%,
    iteration 0.54%.  A second run takes every copy from the memo, the refuted classes' by place:
    per-flow 4.93% (5.32% before places), mean FCT +0.81%, iteration 0.63%."""
    trace = _trace()
    full = replay(trace, FABRIC, "hpcc", iterations=2, mode="full")
    floor_mean = floor_iteration = 0.0
    for delay in (1, 1000):
        ops, _ = perturb_ops(trace.ops, delay)
        m, _, it = _errors(replay(Trace(ops, trace.meta), FABRIC, "hpcc", iterations=2, mode="full"), full)
        floor_mean, floor_iteration = max(floor_mean, m), max(floor_iteration, it)
    res = replay(trace, FABRIC, "hpcc", iterations=2, memo_db=tmp_path / "a.sqlite", memo_recurring=0.3)
    w = res.counters["wormhole"]
    assert w["memo_recurring_trusted"] >= 0.75 * w["memo_recurring_classes"]  # measured 28 of 32
    refuted = w["memo_recurring_refuted"]  # measured 4: their 14 copies of the second iteration taken by place,
    # but one since 2026-12-05 (night): its place's copy, ended at 10.5 ms, was read at 20.8 ms, when it started
    # (finished copies are read at the engine's stops, at most every 50 us), so it is simulated
    assert refuted > 0 and 14 * refuted - 2 <= w["memo_recurring_placed"] <= 14 * refuted
    assert _as_placed(res) >= w["memo_recurring_placed"]  # each at its place's time as simulated (16 when paced)
    timers = w["memo_recurring_taken"] - w["memo_recurring_met_live"]
    assert timers > 0.4 * len(_network(res))  # measured 498 of 896 (the first 8 copies of each class simulated)
    assert res.counters["events"] < 0.5 * full.counters["events"]  # measured 45%
    mean, _, iteration = _errors(res, full)
    mean_fct = _network(res)["fct_ns"].mean() / _network(full)["fct_ns"].mean() - 1
    assert abs(mean_fct) < 0.01 and iteration < max(0.01, floor_iteration), (mean_fct, iteration)
    assert mean < 1.25 * max(0.01, floor_mean), (mean, floor_mean)
    with MemoStore.open(str(tmp_path / "a.sqlite")) as store:  # the refuted classes' entries hold their places
        placed = {e.digest for e, _ in store.entries_with_hits() if e.value.get("refuted")}
        simulated = [e for e, _ in store.entries_with_hits() if "places" in e.value and e.digest not in placed]
    assert len(placed) == refuted
    assert len(simulated) == w["memo_recurring_trusted"]  # the trusted classes' copies simulated, by place
    warm = replay(trace, FABRIC, "hpcc", iterations=2, memo_db=tmp_path / "a.sqlite", memo_recurring=0.3)
    w = warm.counters["wormhole"]
    assert w["memo_recurring_placed"] == 2 * 14 * refuted and w["memo_recurring_refuted"] == 0
    assert w["memo_recurring_taken"] == len(_network(warm)) and warm.counters["events"] < 0.01 * full.counters["events"]
    mean, _, iteration = _errors(warm, full)
    mean_fct = _network(warm)["fct_ns"].mean() / _network(full)["fct_ns"].mean() - 1
    assert abs(mean_fct) < 0.01 and iteration < max(0.01, floor_iteration), (mean_fct, iteration)
    assert mean < 1.3 * max(0.01, floor_mean), (mean, floor_mean)
    # spot checks: the first copy of every class, placed ones included, simulated and compared
    checked = replay(trace, FABRIC, "hpcc", iterations=2, memo_db=tmp_path / "a.sqlite", memo_recurring=0.3,
                     memo_spot_check=32)
    assert placed <= set(checked.spot_checks["digest"])


def test_a_single_iterations_refuted_classes_are_stored_by_place_at_its_end(tmp_path):
    """With one iteration no place can be taken in the run: the refuted classes' copies are read
    once, at its end (``Recurring.finish``), not at every scan, and every place is stored; a
    second run takes them all."""
    trace, db = _trace(), tmp_path / "a.sqlite"
    res = replay(trace, FABRIC, "hpcc", iterations=1, memo_db=db, memo_recurring=0.3)
    refuted = res.counters["wormhole"]["memo_recurring_refuted"]
    assert refuted > 0 and res.counters["wormhole"]["memo_recurring_placed"] == 0  # measured 4 refuted
    with MemoStore.open(str(db)) as store:
        places = [e.value["places"] for e, _ in store.entries_with_hits() if e.value.get("refuted")]
    assert len(places) == refuted and all(p == list(range(14)) for p in places)  # 14 copies per class
    warm = replay(trace, FABRIC, "hpcc", iterations=1, memo_db=db, memo_recurring=0.3)
    assert warm.counters["wormhole"]["memo_recurring_placed"] == 14 * refuted


def test_a_small_class_is_replayed_aside_from_the_memo_by_copy(tmp_path):
    """A class too small to learn (at most 8 copies: a pipeline send, a small ring's steps) is
    simulated, and stored by copy (``Recurring._aside``, at a spread wider than the default); a
    second run takes each copy from the memo as a timer aside, of the time the first run gave it.
    Here (16 GPUs, two pipeline stages, one iteration) every class is small: the second run
    replays the first one's flows to the nanosecond, as timers (1,241 events of 8.3 M)."""
    trace = gpt_trace(GptShape(layers=2, hidden=1024, seq=512, vocab=8192), gpus=16, tp=2, pp=2, microbatches=2,
                      tflops=5.0)
    db = tmp_path / "a.sqlite"
    cold = replay(trace, FABRIC, "hpcc", memo_db=db, memo_recurring=1.0)
    w = cold.counters["wormhole"]
    assert w["memo_recurring_classes"] == 0 and w["memo_recurring_aside"] == 0
    warm = replay(trace, FABRIC, "hpcc", memo_db=db, memo_recurring=1.0)
    f, w = _network(warm), warm.counters["wormhole"]
    assert w["memo_recurring_aside"] == len(f) == 224 and (f["packets_sent"] == 0).all()
    for col in ("start_ns", "received_ns", "fct_ns"):
        assert f[col].tolist() == _network(cold)[col].tolist()
    assert warm.counters["events"] < 0.001 * cold.counters["events"]
    default = replay(trace, FABRIC, "hpcc", memo_db=db, memo_recurring=True)  # at 1%: simulated
    assert default.counters["wormhole"]["memo_recurring_aside"] == 0


def test_small_classes_give_their_places_to_later_iterations(tmp_path, monkeypatch):
    """At a wide spread, a small class's copy (a pipeline send) simulated in the second iteration or
    later gives its time to the copies at its place in the later ones, which are timers aside
    (``Recurring._sends``): here (16 GPUs, two pipeline stages, every class small, 3 iterations)
    the third iteration is timers, within 1% of full in duration and mean FCT (measured -0.32%,
    -0.34%), and the database holds every copy, so that a second run takes them all aside, and a
    run of 4 iterations takes the fourth from the third's places.  Not from the first as they are,
    a cold start (``SENDS_FROM`` 0: the second iteration's mean FCT 1.10% short, 1.76% before
    timers aside reserved their rates); the second iteration's sends released by compute are taken from
    the first's rescaled by its first micro-batch's (``cold_sends.py``: here 14 of its 224 flows,
    whose families' probes are done before they start; measured +0.27% and -0.64%).  With
    ``SENDS_FROM`` past the last iteration they are simulated."""
    trace = gpt_trace(GptShape(layers=2, hidden=1024, seq=512, vocab=8192), gpus=16, tp=2, pp=2, microbatches=2,
                      tflops=5.0)
    full = replay(trace, FABRIC, "hpcc", iterations=3, mode="full")
    db = tmp_path / "a.sqlite"
    res = replay(trace, FABRIC, "hpcc", iterations=3, memo_db=db, memo_recurring=1.0)
    f, g = _network(res), _network(full)
    timers = (f["packets_sent"] == 0).groupby(f["iteration"]).mean()
    assert timers[0] == 0 and 0 < timers[1] < 0.5 and timers[2] > 0.99, timers  # measured 0, 14 and 223 of 224
    w = res.counters["wormhole"]
    assert w["memo_recurring_aside"] == (f["packets_sent"] == 0).sum()
    assert w["memo_recurring_cold_sends"] == (f["packets_sent"] == 0)[f["iteration"] == 1].sum()

    def errors(res, i):
        f, at = _network(res), (_network(res)["iteration"] == i).to_numpy()
        return (res.iterations["duration_ns"][i] / full.iterations["duration_ns"][i] - 1,
                f["fct_ns"][at].mean() / g["fct_ns"][at].mean() - 1)

    assert max(map(abs, errors(res, 1))) < 0.01, errors(res, 1)
    assert max(map(abs, errors(res, 2))) < 0.01, errors(res, 2)
    warm = replay(trace, FABRIC, "hpcc", iterations=3, memo_db=db, memo_recurring=1.0)
    assert warm.counters["wormhole"]["memo_recurring_aside"] == len(_network(warm))
    assert _network(warm)["fct_ns"].tolist() == f["fct_ns"].tolist()
    longer = _network(replay(trace, FABRIC, "hpcc", iterations=4, memo_db=db, memo_recurring=1.0))
    assert (longer["packets_sent"] == 0).all()  # the fourth iteration from the third's places, as stored
    monkeypatch.setattr(recurring, "SENDS_FROM", 0)
    early = replay(trace, FABRIC, "hpcc", iterations=3, memo_db=tmp_path / "c.sqlite", memo_recurring=1.0)
    assert abs(errors(early, 1)[1]) > 0.01  # the second iteration's sends from the cold start's
    monkeypatch.setattr(recurring, "SENDS_FROM", 3)
    off = replay(trace, FABRIC, "hpcc", iterations=3, memo_db=tmp_path / "b.sqlite", memo_recurring=1.0)
    assert (_network(off)["packets_sent"] > 0).all() and off.counters["wormhole"]["memo_recurring_aside"] == 0


def test_a_two_iteration_replay_takes_its_second_iterations_sends_from_the_first_rescaled(tmp_path):
    """The rescaled sends (``cold_sends.py``) where the second iteration is the last: nothing is
    left there to watch, follow or give on to a later iteration, and the probes are still read
    (``Recurring.step``; until 2026-12-07 a two-iteration run never read them, and on the 10-layer
    128-GPU DDP fat-tree its second iteration simulated 512 sends and the 745 timers they met:
    23.9 s and +1.13% long against full, now 7.9 s and +0.95%).  Here (the 16-GPU two-stage
    replay of the test above) 14 of the second iteration's 224 flows, within 1% of full in
    duration and mean FCT (measured +0.27% and -0.64%; simulated before, 0.00%)."""
    trace = gpt_trace(GptShape(layers=2, hidden=1024, seq=512, vocab=8192), gpus=16, tp=2, pp=2, microbatches=2,
                      tflops=5.0)
    full = replay(trace, FABRIC, "hpcc", iterations=2, mode="full")
    res = replay(trace, FABRIC, "hpcc", iterations=2, memo_db=tmp_path / "a.sqlite", memo_recurring=1.0)
    f, g = _network(res), _network(full)
    cold = res.counters["wormhole"]["memo_recurring_cold_sends"]
    assert cold > 0 and cold == ((f["packets_sent"] == 0) & (f["iteration"] == 1)).sum(), cold
    at = (f["iteration"] == 1).to_numpy()
    duration = res.iterations["duration_ns"][1] / full.iterations["duration_ns"][1] - 1
    mean_fct = f["fct_ns"][at].mean() / g["fct_ns"][at].mean() - 1
    assert max(abs(duration), abs(mean_fct)) < 0.01, (duration, mean_fct)


def test_a_class_sampled_whole_in_a_cold_start_learns_from_the_next_iteration():
    """From 3 iterations on, at a wide spread, a class whose samples would be every copy of its
    first iteration (which starts every rank at once) is learned from the second; one with timers
    in its first iteration (more copies there than samples) keeps learning from it."""
    per_iteration = np.array([2, 14, 40])  # copies of each class in each iteration
    for iterations, tolerance, expected in ((4, 1.0, [1, 1, -1]), (3, 1.0, [1, -1, -1]), (2, 1.0, [-1, -1, -1]),
                                            (4, 0.01, [-1, -1, -1])):
        cls = np.repeat(np.tile(np.arange(3), iterations), np.tile(per_iteration, iterations))
        iteration = np.repeat(np.arange(iterations), per_iteration.sum())
        trust = _samples(per_iteration * iterations, tolerance)  # 4 / 14 / 32 of 4 iterations' copies
        assert _learn_from(cls, iteration, trust, tolerance).tolist() == expected, (iterations, tolerance)


def test_a_class_spanning_its_first_iteration_is_learned_from_all_of_it():
    """Over 2 iterations or more, at a wide spread, a class with more copies in its first
    iteration than its samples (at most 32) cover a quarter of (a ring's buckets, 210 an
    iteration) is learned from all of them; one of a bucket or a few (14, 60: the cold start's
    rules) and one of a few copies (4) are not, nor any class in one iteration or at 1%."""
    per_iteration = np.array([4, 14, 60, 210])
    for iterations, tolerance, expected in ((4, 1.0, [0, 0, 0, 210]), (2, 1.0, [0, 0, 0, 210]), (1, 1.0, [0, 0, 0, 0]),
                                            (4, 0.01, [0, 0, 0, 0])):
        cls = np.repeat(np.tile(np.arange(4), iterations), np.tile(per_iteration, iterations))
        iteration = np.repeat(np.arange(iterations), per_iteration.sum())
        samples = _samples(per_iteration * iterations, tolerance)
        assert _whole_first(cls, iteration, samples, tolerance).tolist() == expected, (iterations, tolerance)


def test_a_class_spanning_its_iteration_is_learned_whole_under_hpcc_only():
    """``Recurring(cc=...)``: the rule of ``_whole_first`` holds under HPCC, where it was measured;
    under DCQCN a class of 200 copies an iteration learns as before (from 32 copies, in turn): on
    the 10-layer proxy of the 128-GPU DDP fat-tree the rule put three of the six later iterations
    of two draws beyond the bound, where learned as before none are (``_whole_first``)."""
    from wormhole_replay.memo.recurring import Recurring

    n = 400
    flows = _flows([(0, 1)] * n, [MB] * n, [i * 10**6 for i in range(n)])
    iteration = np.repeat([0, 1], n // 2)
    kw = dict(tolerance=1.0, iteration_of=iteration)
    hpcc, dcqcn = Recurring(flows, np.zeros(n, np.int64), {}, **kw), Recurring(flows, np.zeros(n, np.int64), {}, cc="dcqcn", **kw)
    assert hpcc.learn_only.tolist() == [0] and hpcc.trust.tolist() == [200] and hpcc.take_by_place.tolist() == [True]
    assert dcqcn.learn_only.tolist() == [-1] and dcqcn.trust.tolist() == [32] and dcqcn.take_by_place.tolist() == [False]


def test_a_class_learned_after_its_cold_start_is_learned_from_one_iteration_however_many_are_replayed():
    """A class sampled whole in its first iteration (12 copies an iteration) learns from the second
    iteration's copies alone, over 4 iterations as over 8, as the later part of a split class (40
    an iteration: 32 samples in the first) does (at most 32): its samples, a quarter of the run's
    copies, would be 24 over 8 iterations, the second iteration and half the third."""
    from wormhole_replay.memo.recurring import Recurring

    per_iteration = [12, 40]
    for iterations in (4, 8):
        pairs = [(0, 1)] * per_iteration[0] + [(2, 3)] * per_iteration[1]
        n = len(pairs) * iterations
        flows = _flows(pairs * iterations, [MB] * n, [i * 10**6 for i in range(n)])
        r = Recurring(flows, np.zeros(n, np.int64), {}, tolerance=1.0, iteration_of=np.repeat(np.arange(iterations), len(pairs)))
        # classes by key: (0, 1); (2, 3) first part; (2, 3) after the first iteration
        assert r.trust.tolist() == [12, 32, 32] and r.learn_from.tolist() == [1, -1, 1], iterations
        assert r.take_by_place.tolist() == [True, False, False], iterations


def test_rings_of_many_buckets_take_their_later_iterations_from_the_first_by_place(tmp_path):
    """The colliding rings with 6 layers and 0.5 MB buckets (14-168 copies a class an iteration),
    two iterations at a spread of 100%: the classes of 168 copies (``_whole_first``) have every
    copy of their first iteration simulated and every one of the second a timer, each at the alone
    time of the copy at its place there.  Measured against full: the second iteration's mean FCT
    +0.29% (a second run on the database +0.47%), per flow 5.97% (its floor, one op 1 ns or 1 us
    longer: 5.34% / 5.56%); its duration +1.18% (+1.26%), beyond that floor (0.67%) as the code
    before was (+1.15%, +1.22%), which left 69% of the first iteration's copies timers: the
    durations of this small shape are not what the rule moves, so they are held to 1.5% here."""
    trace = gpt_trace(GptShape(layers=6, hidden=1024, seq=512, vocab=8192), gpus=16, tp=2, tflops=5.0, bucket_mb=0.5)
    full = replay(trace, FABRIC, "hpcc", iterations=2, mode="full")
    cold = replay(trace, FABRIC, "hpcc", iterations=2, memo_db=tmp_path / "a.sqlite", memo_recurring=1.0)
    f = _network(cold)
    key = ["src", "dst", "sport", "dport", "pg", "size_bytes"]
    in_first = f[f["iteration"] == 0].groupby(key).size().rename("in_first")  # per class
    whole = f.merge(in_first, left_on=key, right_index=True, how="left")["in_first"].to_numpy() > 128
    first, timer = (f["iteration"] == 0).to_numpy(), (f["packets_sent"] == 0).to_numpy()
    assert whole.sum() > 0.3 * len(f)
    assert not timer[whole & first].any() and timer[whole & ~first].mean() > 0.95
    warm = replay(trace, FABRIC, "hpcc", iterations=2, memo_db=tmp_path / "a.sqlite", memo_recurring=1.0)
    assert (_network(warm)["packets_sent"] == 0).all()
    for res in (cold, warm):
        g, h = _network(res), _network(full)
        for i in (0, 1):
            d = res.iterations["duration_ns"][i] / full.iterations["duration_ns"][i] - 1
            m = g["fct_ns"][g["iteration"] == i].mean() / h["fct_ns"][h["iteration"] == i].mean() - 1
            assert abs(d) < 0.015 and abs(m) < 0.01, (i, d, m)


def test_under_dcqcn_a_class_sharing_its_links_takes_no_copy_of_its_first_iteration(tmp_path):
    """Under DCQCN a paced timer among packet flows misplaces their time, and in a run's first
    iteration a class's neighbours are packet flows (classes being learned or refuted): a class
    learned in the run whose samples shared a link takes no copy of its first iteration (under HPCC
    it does; on a rail, where each ring is alone, DCQCN's do), whose copies give their places'
    times to the second's, as simulated; a second run on the database replays the first iteration
    as the first run gave it."""
    trace, db = _trace(), tmp_path / "a.sqlite"

    def timers(res, i):
        f = _network(res)
        return int(((f["iteration"] == i).to_numpy() & (f["packets_sent"] == 0).to_numpy()).sum())

    cold = replay(trace, FABRIC, "dcqcn", iterations=2, memo_db=db, memo_recurring=1.0)
    hpcc = replay(trace, FABRIC, "hpcc", iterations=2, memo_db=tmp_path / "h.sqlite", memo_recurring=1.0)
    rail = replay(trace, RAIL, "dcqcn", iterations=2, memo_db=tmp_path / "r.sqlite", memo_recurring=1.0)
    second = (_network(cold)["iteration"] == 1).sum()
    assert timers(cold, 0) < 0.5 * timers(hpcc, 0) and timers(rail, 0) > 0.5 * timers(hpcc, 0)  # measured 68, 188, 160
    assert timers(cold, 1) > 0.95 * second and _as_placed(cold) > 0.7 * second  # measured 446 and 367 of 448
    warm = replay(trace, FABRIC, "dcqcn", iterations=2, memo_db=db, memo_recurring=1.0)
    c, w = _network(cold), _network(warm)
    first = (c["iteration"] == 0).to_numpy()
    assert (w["packets_sent"] == 0).all()
    same = (w["received_ns"] - w["start_ns"]).to_numpy()[first] == (c["received_ns"] - c["start_ns"]).to_numpy()[first]
    assert same.mean() > 0.8, same.mean()  # measured 403 of 448


def test_a_class_with_timers_in_a_cold_start_is_learned_again_after_it():
    """From 3 iterations on, at a wide spread, a class with more copies in its first iteration
    than samples is split there (``_after_cold_start``: True for the later part's copies), where
    its later part's samples would be at least a quarter of an iteration's copies (40 an iteration,
    not 840: 32 samples of 840 are an iteration's start again); one sampled whole there learns from
    the second instead (``_learn_from``), one too small to learn is left whole."""
    per_iteration = np.array([2, 14, 40, 840])
    for iterations, tolerance, split in ((4, 1.0, [False, False, True, False]), (3, 1.0, [False, True, True, False]),
                                         (2, 1.0, [False] * 4), (4, 0.01, [False] * 4)):
        cls = np.repeat(np.tile(np.arange(len(per_iteration)), iterations), np.tile(per_iteration, iterations))
        iteration = np.repeat(np.arange(iterations), per_iteration.sum())
        counts = per_iteration * iterations
        later = _after_cold_start(cls, iteration, counts, _samples(counts, tolerance), tolerance)
        expected = np.array(split)[cls] & (iteration > 0)
        assert (later == expected).all(), (iterations, tolerance)


def test_colliding_rings_over_three_iterations_learn_again_after_the_cold_start(tmp_path, monkeypatch):
    """Three iterations of the colliding rings (14 copies per class an iteration, 10 samples): each
    class is learned from its first 10 copies for the rest of the first iteration, as before, and
    again from the second iteration's copies for the third (64 classes).  Measured against full,
    the third iteration per flow 3.42%, mean FCT +0.15%, duration +0.31%; learned once, from the
    first iteration, 5.58%, +0.56%, +0.09% (and the second iteration's timers 6.68%, +1.10%)."""
    trace = _trace()
    full = _network(replay(trace, FABRIC, "hpcc", iterations=3, mode="full"))

    def third(res):
        f = _network(res)
        at = (f["iteration"] == 2).to_numpy()
        e = f["fct_ns"].to_numpy(float)[at] / full["fct_ns"].to_numpy(float)[at] - 1
        return np.abs(e).mean(), abs(f["fct_ns"][at].mean() / full["fct_ns"][at].mean() - 1)

    res = replay(trace, FABRIC, "hpcc", iterations=3, memo_db=tmp_path / "a.sqlite", memo_recurring=1.0)
    w = res.counters["wormhole"]
    assert w["memo_recurring_classes"] == w["memo_recurring_trusted"] == 64
    per_flow, mean = third(res)
    assert per_flow < 0.045 and mean < 0.004
    monkeypatch.setattr(recurring, "COLD_START_ITERATIONS", 99)  # learned once
    once = replay(trace, FABRIC, "hpcc", iterations=3, memo_db=tmp_path / "b.sqlite", memo_recurring=1.0)
    assert once.counters["wormhole"]["memo_recurring_classes"] == 32
    first = (_network(res)["iteration"] == 0).to_numpy()
    assert (_network(res)["fct_ns"][first] == _network(once)["fct_ns"][first]).all()  # the first iteration as before
    per_flow_once, mean_once = third(once)
    assert per_flow_once > per_flow + 0.01 and mean_once > 0.004


def test_a_later_part_refuted_stays_the_memos_own_where_its_first_part_was_trusted(tmp_path, monkeypatch):
    """A class split at its cold start whose later part's samples disagree, where its first part was
    trusted, is simulated as the memo's own packet flows (``SMALL_GROUP``: foreign only to timers
    whose data meet its), not as foreign flows: on the 128-GPU DDP fat-tree over 4 iterations two
    such classes, foreign, kept 25 trusted classes' timers simulated through the whole second
    iteration (DEVELOPERS.md, "The first iteration is a cold start").  Three iterations of the colliding
    rings at a spread of 30%: one such class of 11 refuted; every other refuted class is foreign."""
    refuted = []
    orig = recurring.Recurring._refute

    def record(self, engine, c, group=0):
        refuted.append((self.first_part[c] in self.trusted, group))
        orig(self, engine, c, group)

    monkeypatch.setattr(recurring.Recurring, "_refute", record)
    replay(_trace(), FABRIC, "hpcc", iterations=3, memo_db=tmp_path / "a.sqlite", memo_recurring=0.3)
    assert (True, SMALL_GROUP) in refuted and all(group == (SMALL_GROUP if first else 0) for first, group in refuted)
    assert sum(first for first, _ in refuted) == 1 and len(refuted) == 11  # measured


def test_colliding_rings_over_four_iterations_are_learned_after_the_cold_start(tmp_path, monkeypatch):
    """The colliding rings of 16 GPUs (14-15 copies per class an iteration, so each class's samples
    are its whole first iteration at a spread of 100%), four iterations: learned from the second
    iteration, the third and fourth are timers, within 1% of full in duration and mean FCT
    (measured +0.53% / +0.43% and -0.52% / +0.27%, per flow 4.68% / 4.14%); learned from the first
    (the rule off), the timers of iterations 2-4 put the third 1.45% long and the fourth's mean FCT
    1.22% long (per flow 5.45-6.09%)."""
    trace = _trace()
    full = replay(trace, FABRIC, "hpcc", iterations=4, mode="full")

    def worst(res, iterations):
        f, g = _network(res), _network(full)
        at = lambda df, i: df["fct_ns"][df["iteration"] == i].mean()  # noqa: E731
        return max(max(abs(res.iterations["duration_ns"][i] / full.iterations["duration_ns"][i] - 1),
                       abs(at(f, i) / at(g, i) - 1)) for i in iterations)

    res = replay(trace, FABRIC, "hpcc", iterations=4, memo_db=tmp_path / "a.sqlite", memo_recurring=1.0)
    f = _network(res)
    timers = (f["packets_sent"] == 0).groupby(f["iteration"]).mean()
    assert timers[0] == 0 and timers[1] < 0.05 and (timers[[2, 3]] > 0.95).all()  # measured 0, 0, 0.99, 1
    assert worst(res, [2, 3]) < 0.01
    monkeypatch.setattr(recurring, "COLD_START_ITERATIONS", 99)  # learned from the first iteration
    old = replay(trace, FABRIC, "hpcc", iterations=4, memo_db=tmp_path / "b.sqlite", memo_recurring=1.0)
    assert (_network(old)["packets_sent"] == 0).groupby(f["iteration"]).mean()[1] > 0.95
    assert worst(old, [1, 2, 3]) > 0.01


def test_a_filled_database_replays_a_cold_start_as_it_was_simulated(tmp_path, monkeypatch):
    """Four iterations at a spread of 30%: 26 classes trusted and 6 refuted, each learned from its
    second iteration (``_learn_from``).  A second run on the database takes every copy of its
    first iteration at the time the first run simulated it at its place (the trusted classes'
    entries by place, and the refuted classes' first-iteration places, ``_first_places``); the
    refuted classes' own entries hold their second iteration's places, a cold start's neighbours
    apart."""
    trace, db = _trace(), tmp_path / "a.sqlite"
    cold = replay(trace, FABRIC, "hpcc", iterations=4, memo_db=db, memo_recurring=0.3)
    w = cold.counters["wormhole"]
    assert (w["memo_recurring_trusted"], w["memo_recurring_refuted"]) == (26, 6)

    def first_iteration_as_simulated(warm):
        c, f = _network(cold), _network(warm)
        first = (c["iteration"] == 0).to_numpy()
        rx = lambda x: (x["received_ns"] - x["start_ns"]).to_numpy()[first]  # noqa: E731
        return (f["packets_sent"].to_numpy()[first] == 0).all() and (rx(c) == rx(f)).all()

    with MemoStore.open(str(db)) as store, MemoStore.open(str(tmp_path / "b.sqlite")) as copy:
        exchange.export(store, tmp_path / "memo.json")
        exchange.import_(copy, tmp_path / "memo.json")
    warm = replay(trace, FABRIC, "hpcc", iterations=4, memo_db=db, memo_recurring=0.3)
    assert warm.counters["wormhole"]["memo_recurring_placed"] == 6 * 14 * 4
    assert first_iteration_as_simulated(warm)
    monkeypatch.setattr(recurring.Recurring, "_first_places", lambda *a: None)  # the second iteration's places
    assert not first_iteration_as_simulated(replay(trace, FABRIC, "hpcc", iterations=4, memo_db=tmp_path / "b.sqlite",
                                                   memo_recurring=0.3))


class _Finished:
    """A stub engine at a run's end (or at a class's refutation): copy k started at k ms and was
    received 500 + k ns later; ``timers`` are timers to their end, ``thawed`` were timers made packet
    flows part of the way (``_to_packets``), ``done`` the copies finished."""

    def __init__(self, n, timers=(), thawed=(), done=None):
        self.timer, self.thawed = set(timers), set(thawed)
        self.done = set(range(n)) if done is None else set(done)

    def finished(self, at):
        return np.isin(np.asarray(at, np.int64), list(self.done))

    def timers(self, at):
        return np.isin(np.asarray(at, np.int64), list(self.timer))

    def forwarded(self, at):
        return np.where(np.isin(np.asarray(at, np.int64), list(self.thawed)), MB // 2, 0)

    def flow_times(self, at):
        at = np.asarray(at, np.int64)
        start = at * 10**6
        return start, start + 500 + at, start + 600 + at


class _Learned:
    def __init__(self):
        self.stored = {}

    def learn_recurring(self, key, digest, value):
        self.stored[digest] = value


def test_a_refuted_class_is_placed_at_every_copy_it_simulated_while_learned():
    """``Recurring._done_unsampled``: a class refuted at a wide spread is placed at its sampled
    copies and at those that finished, simulated from their start, while it was learned without
    being read as samples (after its last sample, or while the classes waited for the gain): on
    the 128-GPU MoE a later run on the database found no time at 181 such places of its first
    iteration and simulated them as foreign flows, which made a placed 16 MB copy on the critical
    path a packet flow part of the way and ended the iteration 2.2% short.  Copies 0-4 are the
    samples, 5-9 finished besides (7 a timer to its end, 8 thawed half-way), 10-19 not yet; in
    two iterations of 10 the earliest copy at a place gives it, and a class learned after its cold
    start (``_learn_from``) takes none of the cold start's."""
    from wormhole_replay.memo.recurring import Recurring

    flows = _flows([(0, 1)] * 20, [MB] * 20, [i * 10**6 for i in range(20)])
    engine = _Finished(20, timers=[7], thawed=[8], done=range(10))
    r = Recurring(flows, np.zeros(20, np.int64), {}, tolerance=1.0)
    r.sampled[0] = [0, 1, 2, 3, 4]
    assert r._done_unsampled(engine, 0) == {5: (505, 605), 6: (506, 606), 9: (509, 609)}
    two = np.repeat([0, 1], 10)  # copy k at place k % 10
    engine = _Finished(20, done=[5, 6, 15, 16, 17])
    r = Recurring(flows, np.zeros(20, np.int64), {}, tolerance=1.0, iteration_of=two)
    r.sampled[0] = [0, 1, 2, 3, 4]
    assert r._done_unsampled(engine, 0) == {5: (505, 605), 6: (506, 606), 7: (517, 617)}
    r.learn_from[0] = 1
    assert r._done_unsampled(engine, 0) == {5: (515, 615), 6: (516, 616), 7: (517, 617)}


@pytest.mark.parametrize("iterations", [1, 2])
def test_a_class_of_one_iteration_is_stored_by_place_as_it_ran(iterations):
    """``Recurring.finish``: a trusted class's copies simulated from their start are stored by
    place for a later run to replay; where each place has one copy (``one_at_a_place``: a split
    class's first iteration, a run of one iteration) so are those simulated part of the way (a
    timer made a packet flow beside a foreign flow), which a later run otherwise ran as timers at
    their alone pace (on the 128-GPU MoE, 21 such copies a third longer than the first run gave
    them).  Across iterations a thawed copy is not stored: the copies at its place in later
    iterations ran as timers, not at its time.  Copies 0-4 are the samples, 5-14 timers to their
    end, 15 thawed, 16-19 simulated from their start (due beside a foreign flow)."""
    from wormhole_replay.memo.recurring import Recurring

    flows = _flows([(0, 1)] * 20, [MB] * 20, [i * 10**6 for i in range(20)])
    its = np.repeat(np.arange(iterations), 20 // iterations)
    r = Recurring(flows, np.zeros(20, np.int64), {}, tolerance=1.0, iteration_of=its)
    r.trusted, r.sampled, r.gains = {0}, {0: [0, 1, 2, 3, 4]}, {0: 1.0}
    session = _Learned()
    r.finish(_Finished(20, timers=range(5, 15), thawed=[15]), session)
    stored = session.stored[r.simulated_digests[0]]
    copies = [0, 1, 2, 3, 4, 15, 16, 17, 18, 19] if iterations == 1 else [0, 1, 2, 3, 4, 16, 17, 18, 19]
    assert r.one_at_a_place(0) == (iterations == 1)
    assert stored["places"] == sorted(int(r.place[k]) for k in copies)
    assert sorted(stored["rx_ns"]) == [500 + k for k in copies]


def test_copies_agree_within_one_percent_of_the_fastest():
    assert agree([(1000, 1010), (1005, 1015), (1009, 1019)])
    assert not agree([(1000, 1010), (1011, 1012)])  # received 1.1% later
    assert not agree([(1000, 1010), (1000, 1030)])  # acknowledged 2% later
    assert agree([(1000, 1010), (1000, 1030)], 0.05)  # ... within a spread of 5%
    assert tolerance_of(True) == 0.01 and tolerance_of(False) == 0.0 and tolerance_of(0.1) == 0.1
    for bad in (0, -0.1, 1.5):
        with pytest.raises(InputError):
            tolerance_of(bad)


def test_a_class_trusted_at_a_wide_spread_is_learned_from_more_of_its_copies():
    """Copies that must agree within 1% are learned from their first 8; at a wider spread a class is
    learned from a quarter of its copies (4 to 32), whose mean its timers carry: a class's first copies
    are one bucket's ring steps, faster than its later ones."""
    counts = np.array([4, 14, 28, 100, 840])
    assert _samples(counts, 0.01).tolist() == [8] * 5
    assert _samples(counts, 0.3).tolist() == [4, 4, 7, 25, 32]


def test_a_copy_is_paced_by_the_flows_on_its_busiest_port():
    """``_spent`` and ``_alone``: a copy's time divided, moment by moment, by the most flows live on one of its
    ports (itself included): alone for 100 ns, beside one flow for 200 ns, then beside two on the
    other port for 300 ns: 100 + 200 / 2 + 300 / 3 = 300 ns."""

    class _Times:
        def __init__(self, times):
            self.times = times

        def flow_times(self, flows):
            t = np.array([self.times[f] for f in flows], np.int64).reshape(-1, 2)
            return t[:, 0], t[:, 1], t[:, 1]

    engine = _Times({0: (0, 600), 1: (100, 300), 2: (300, 900), 3: (250, 1000), 4: (-1, -1)})
    spent = _spent([engine.flow_times(np.array(p))[:2] for p in ([0, 1, 4], [0, 2, 3])], 0, 600)[None]
    assert _alone(spent, 1.0)[0] == 300
    # where n flows on a link get together 1.12 times what one gets alone: 100 + (200 / 2 + 300 / 3) * 1.12
    assert _alone(spent, 1.12)[0] == 324


def _spent_row(n, ns):
    """A sampled copy's row of ``_spent``: ``ns`` spent beside n flows (itself included)."""
    row = np.zeros(MOST_SHARERS)
    row[n - 1] = ns
    return row


def _showing(gain):
    """Three copies of one class, 100 ns alone, that ran alone, beside one and beside two flows for
    their whole life, where n flows on a link together get ``gain`` times what one gets alone."""
    return np.array([_spent_row(1, 100), _spent_row(2, 100 * 2 / gain), _spent_row(3, 100 * 3 / gain)])


def test_the_pace_gain_is_the_one_a_runs_copies_agree_under():
    """``fit_gain``: copies of one class, 100 ns alone, that ran alone, beside one flow or beside two
    for their whole life, where n flows on a link together get 1.12 times what one gets alone (so
    they took 100 / (1.12 / n) ns), agree best at 1.12; copies that all met the same flows say
    nothing, and the gain stays 1 (equal shares)."""

    mixed = _showing(1.12)
    same = np.array([_spent_row(2, 180), _spent_row(2, 190)])
    assert fit_gain([mixed, same]) == 1.12
    assert fit_gain([same]) == fit_gain([]) == 1.0
    # classes whose copies all ran alone (a spread no gain moves) do not hide the evidence:
    # counted in, three of them made the fit keep 1 (DEVELOPERS.md, "A gain the first classes cannot show")
    alone = np.array([_spent_row(1, 100), _spent_row(1, 160)])
    assert not recurring.informs(alone) and recurring.informs(mixed) and not recurring.informs(same)
    assert fit_gain([alone] * 3 + [mixed]) == 1.12


def test_the_pace_gain_is_kept_once_the_classes_show_one():
    """``Recurring._fit_gain``: fitted again on every class sampled so far while they show none
    (copies that all ran alone: 1), then kept: a class sampled later whose copies agree best at
    1.3 does not move it, so every class is judged and paced at one gain (fitted again on each,
    ``moe16``'s backward classes were paced at 1.3 and its iteration came out 1.10% long)."""
    from wormhole_replay.memo.recurring import Recurring

    r = Recurring(_flows([(0, 1)] * 8, [MB] * 8, [0] * 8), np.zeros(8, np.int64), {})
    r.spent = {0: np.array([_spent_row(1, 100), _spent_row(1, 160)])}
    r._fit_gain()
    assert (r.gain, r.gain_fitted) == (1.0, False)
    r.spent[1] = _showing(1.12)
    r._fit_gain()
    assert (r.gain, r.gain_fitted) == (1.12, True)
    r.spent[2] = r.spent[3] = r.spent[4] = _showing(1.3)
    assert fit_gain(list(r.spent.values())) > 1.2  # fitted again, the later classes would move it
    r._fit_gain()
    assert r.gain == 1.12


def test_classes_a_warm_run_learns_pace_at_the_gain_of_the_classes_it_took():
    """A run that takes classes from the memo learns the rest at the gain those were learned at
    (fitted on 16 classes of the run that stored them), not one fitted anew on the few classes
    left (on the 128-GPU DDP fat-tree, a warm run's 3 new classes fitted 1.0 where the entries
    held 1.10).  Stub engine: every copy has started, so nothing is made a timer."""
    from wormhole_replay.memo.recurring import Recurring

    flows = _flows([(0, 1)] * 10 + [(1, 2)] * 10, [MB] * 20, [i * 10**6 for i in range(20)])
    cold = Recurring(flows, np.zeros(20, np.int64), {})
    assert (cold.gain, cold.gain_fitted) == (1.0, False)

    class _Started:
        def started(self, members):
            return np.ones(len(members), bool)

        def mark_memo_flows(self, at, group):  # the class left to learn: the memo's own (``start``)
            pass

    entry = MemoEntry("recurring", "fp", "s", "h", cold.keys[0],
                      {"rx_ns": [100] * 8, "fct_ns": [110] * 8, "alone_rx_ns": [90] * 8, "gain": 1.1})
    warm = Recurring(flows, np.zeros(20, np.int64), {cold.digests[0]: entry})
    warm.start(_Started(), None)
    assert warm.trusted == {0} and warm.gains == {0: 1.1} and (warm.gain, warm.gain_fitted) == (1.1, True)
    Recurring(flows, np.zeros(20, np.int64), {}).start(_Started(), None)  # nothing known: still to be fitted


def test_flows_of_classes_too_small_to_learn_are_the_memos_own():
    """A class with no copy left to take once learned (at most 8 copies: a pipeline send) is never
    made timers, and its flows are marked the memo's (``mark_memo_flows``), of a group of their
    own: a paced timer beside one shares its links with it, and is simulated only where their data
    meet (the engine side: ``test_a_small_class_flow_is_foreign_only_where_its_data_meets_a_timers``).
    Stub engine."""
    from wormhole_replay.memo.recurring import GROUP, SMALL_GROUP, Recurring

    assert SMALL_GROUP < 0 and SMALL_GROUP != GROUP

    flows = _flows([(0, 1)] * 10 + [(1, 2)] * 3 + [(2, 3)] * 8, [MB] * 21, [i * 10**6 for i in range(21)])

    class _Marks:
        def __init__(self):
            self.marked = []

        def mark_memo_flows(self, at, group):
            self.marked.append((np.asarray(at).tolist(), group))

    r, engine = Recurring(flows, np.zeros(21, np.int64), {}), _Marks()
    r.start(engine, None)
    assert r.watch.tolist() == list(range(10))  # only the class of 10 is watched, to be learned
    # the small classes' flows, then the copies of the class being learned: the memo's own, not foreign
    assert engine.marked == [(list(range(10, 21)), SMALL_GROUP), (list(range(10)), SMALL_GROUP)]


def test_the_second_iterations_sends_are_the_firsts_rescaled_by_its_probes():
    """``cold_sends.py``: in the second iteration, the sends released by compute at places past 0
    take their first-iteration copies' times times the probes' (place 0) total over their own
    first-iteration copies' total, once the family's probes are done and none is running; a send
    released by a network flow (a ring's step before it) is left alone.  Stub engine: per
    iteration a compute op (flow 0 / 6), sends of class A at places 0 and 1 after it, and class B
    at places 0 and 1 after A's first (a network flow)."""
    from wormhole_replay.memo.cold_sends import ColdSends

    #           it 0: op, A0, A1, B0, B1, ring   it 1: op, A0, A1, B0, B1, ring
    src = [0, 0, 0, 2, 2, 4] * 2
    deps = [[], [0], [0], [1], [1], []] + [[], [6], [6], [7], [7], []]
    flows = FlowSet.from_columns(src, [1, 1, 1, 3, 3, 5] * 2, [MB] * 12, [0] * 12, deps=deps,
                                 duration_ns=[1000, -1, -1, -1, -1, -1] * 2)
    small = np.array([1, 2, 3, 4, 7, 8, 9, 10])
    iteration = np.repeat([0, 1], 6)
    place = np.array([-1, 0, 1, 0, 1, 0] * 2)
    next_at_place = np.full(12, -1)
    next_at_place[[1, 2, 3, 4]] = [7, 8, 9, 10]
    class_of = np.array([-1, 0, 0, 1, 1, 2] * 2)
    sends = ColdSends(flows, small, iteration, place, next_at_place, class_of)
    assert [f[0].tolist() + f[2].tolist() for f in sends.families] == [[7, 8]]  # A only: B waits for A's copy

    class _Engine:
        def __init__(self):
            self.start = np.full(12, -1)
            self.rx = np.full(12, -1)
            self.fin = np.full(12, -1)
            self.start[[1, 2]], self.rx[[1, 2]], self.fin[[1, 2]] = [0, 50], [100, 250], [110, 262]

        def started(self, at):
            return self.start[at] >= 0

        def finished(self, at):
            return self.fin[at] >= 0

        def timers(self, at):
            return np.zeros(len(at), bool)

        def forwarded(self, at):
            return np.zeros(len(at), np.int64)

        def flow_times(self, at):
            return self.start[at], self.rx[at], self.fin[at]

    engine = _Engine()
    engine.start[7] = 5000  # its probe running: nothing yet
    flows_, times = sends.step(engine)
    assert len(flows_) == 0 and len(sends.families) == 1
    engine.rx[7], engine.fin[7] = 5110, 5120  # the probe took 110 ns where its first copy took 100
    flows_, times = sends.step(engine)
    assert flows_.tolist() == [8] and times.tolist() == [[220, 233]]  # (200, 212) x 1.1
    assert sends.families == [] and sends.ratios == [(1, 1.1)]


def test_a_refuted_class_copies_not_started_are_foreign_again():
    """``Recurring._refute``: the copies of a class being learned are the memo's own packet flows
    (``start``); once the class is refuted, those not started (nor timers) are foreign again."""
    from wormhole_replay.memo.recurring import Recurring

    flows = _flows([(0, 1)] * 10, [MB] * 10, [i * 10**6 for i in range(10)])

    class _Engine:
        def __init__(self):
            self.marked = []

        def started(self, at):
            return np.asarray(at) < 4  # the first four copies have started (its samples)

        def timers(self, at):
            return np.asarray(at) == 9

        def mark_memo_flows(self, at, group):
            self.marked.append((np.asarray(at).tolist(), group))

    r, engine = Recurring(flows, np.zeros(10, np.int64), {}), _Engine()
    r._refute(engine, 0)
    assert engine.marked == [([4, 5, 6, 7, 8], 0)]
    assert r.refuted == {0} and r.counters["memo_recurring_refuted"] == 1


def test_a_class_is_learned_by_its_copies_in_one_iteration():
    """``learnable``: a class is learned where it has copies left once trusted and more than 8 in
    some one iteration, so that replaying more iterations does not turn a pipeline send (4 an
    iteration) into a learned class beside the rings' steps (14 an iteration)."""
    from wormhole_replay.memo.recurring import learnable

    iterations = 4
    cls = np.repeat([0, 1], [4 * iterations, 14 * iterations])
    iteration = np.r_[np.repeat(np.arange(iterations), 4), np.repeat(np.arange(iterations), 14)]
    counts, trust = np.array([16, 56]), np.array([8, 14])
    assert learnable(cls, iteration, counts, trust).tolist() == [False, True]
    one = iteration < 1  # one iteration: the send has no copy left, the ring's 6 once 8 are learned
    assert learnable(cls[one], iteration[one], np.array([4, 14]), np.array([8, 8])).tolist() == [False, True]
    assert learnable(cls, iteration, counts, np.array([2, 2]), fixed=2).tolist() == [True, True]  # trust 2: 4 > 2
    # at a wide spread a one-bucket class (14 an iteration) is learned from 4, a send stays out
    one_bucket = learnable(cls[one], iteration[one], np.array([4, 14]), _samples(np.array([4, 14]), 1.0))
    assert one_bucket.tolist() == [False, True]
    six = np.repeat([0, 1], [6, 14])  # 6 an iteration (a send of 6 micro-batches): not learned, though 6 > 4
    assert learnable(six, np.zeros(20, np.int64), np.array([6, 14]), np.array([4, 4])).tolist() == [False, True]


def test_a_copy_is_learned_beside_the_recurring_flows_only():
    """``spent_beside``: a sampled copy's sharers are the recurring classes' flows on its ports, not
    the small classes' (a pipeline send, which ring flows starve: on the 128-GPU DDP fat-tree a
    20 MB send beside two ring flows took 4.7 Gb/s and they 38 each, so counting it learned their
    copies at a third of the link where they had half).  Copy 0 (0 -> 1, 0-600 ns) meets copy 1 of
    its class for 200 ns and a small flow (2 -> 1) for its whole life: 400 ns alone and 200 ns
    beside one flow.  Stub engine."""
    from wormhole_replay.memo.recurring import Recurring

    flows = _flows([(0, 1)] * 10 + [(2, 1)] * 3, [MB] * 13, [i * 10**6 for i in range(13)])
    times = {0: (0, 600), 1: (400, 800), 10: (0, 5000)}

    class _Engine:
        def flow_times(self, at):
            t = np.array([times.get(int(f), (-1, -1)) for f in at], np.int64).reshape(-1, 2)
            return t[:, 0], t[:, 1], t[:, 1]

        def links(self, at):
            return [[7] for _ in at]  # one data port for every flow

    r, engine = Recurring(flows, np.zeros(13, np.int64), {}), _Engine()
    r.sampled[0] = [0]
    spent = r.spent_beside(engine, 0)
    assert spent[0, 0] == 400 and spent[0, 1] == 200 and spent[0].sum() == 600


def test_a_recurring_entry_is_validated():
    key = {"v": [12345], "e": []}
    ok = MemoEntry("recurring", "fp", "s", "h", key, {"rx_ns": [10, 11], "fct_ns": [12, 13]}).as_dict()
    assert validate(ok).kind == "recurring"
    assert validate({**ok, "value": {**ok["value"], "alone_rx_ns": [5, 11]}}).value["alone_rx_ns"] == [5, 11]
    assert validate({**ok, "value": {**ok["value"], "gain": 1.12}}).value["gain"] == 1.12
    assert validate({**ok, "value": {**ok["value"], "places": [3, 0]}}).value["places"] == [3, 0]  # a refuted class's
    assert validate({**ok, "value": {**ok["value"], "places": [0, 1], "refuted": True}}).value["refuted"] is True
    assert validate({**ok, "value": {**ok["value"], "places": [4, 9], "aside": True}}).value["aside"] is True  # a small class's
    for value in ({"rx_ns": [10], "fct_ns": [12, 13]}, {"rx_ns": [0], "fct_ns": [1]}, {"rx_ns": [], "fct_ns": []},
                  {"rx_ns": [10], "fct_ns": [12], "alone_rx_ns": [0]}, {"rx_ns": [10], "fct_ns": [12], "alone_rx_ns": [5, 6]},
                  {"rx_ns": [10], "fct_ns": [12], "gain": 0}, {"rx_ns": [10], "fct_ns": [12], "gain": "1.1"},
                  {"rx_ns": [10, 11], "fct_ns": [12, 13], "places": [1, 1]}, {"rx_ns": [10], "fct_ns": [12], "places": [-1]},
                  {"rx_ns": [10], "fct_ns": [12], "places": [0, 1]}, {"rx_ns": [10], "fct_ns": [12], "refuted": 1},
                  {"rx_ns": [10], "fct_ns": [12], "aside": "yes"}):
        with pytest.raises(ValueError):
            validate({**ok, "value": value, "digest": MemoEntry("recurring", "fp", "s", "h", key, value).digest})
    two = {"v": [1, 2], "e": []}
    with pytest.raises(ValueError):
        validate({**ok, "key": two, "digest": MemoEntry("recurring", "fp", "s", "h", two, ok["value"]).digest})


class _Timers:
    """A memo session that makes given flows timers of given times before the first event (what
    ``Recurring`` and episodes do), each a group of its own, and reads nothing."""

    lookups = False  # no counters of its own

    def __init__(self, flows, rx_ns, fct_ns, group=None, memo_packets=(), packets_group=None, gain=1.0, aside=()):
        self.flows, self.rx_ns, self.fct_ns, self.group, self.gain = flows, rx_ns, fct_ns, group, gain
        self.memo_packets = list(memo_packets)  # the memo's flows simulated (as a class's first copy is), ...
        self.packets_group = packets_group or group  # ... of the timers' group unless another is given
        self.aside = list(aside)  # (flow, rx_ns, fct_ns): timers aside, of a small class (``Recurring._aside``)

    def log_bits(self):
        return V.LOG_ON

    def start(self, engine):
        for i, f in enumerate(self.flows):  # each learned apart (a group of its own), or all in one
            engine.make_timers([f], self.rx_ns[i:i + 1], self.fct_ns[i:i + 1], group=self.group or i + 1, gain=self.gain)
        groups = self.packets_group if isinstance(self.packets_group, list) else [self.packets_group] * len(self.memo_packets)
        for f, group in zip(self.memo_packets, groups):
            engine.mark_memo_flows([f], group=group)
        for f, rx, fct in self.aside:
            engine.make_timers([f], [rx], [fct], group=SMALL_GROUP, gain=AS_SIMULATED, aside=True)

    def handle(self, engine):
        engine.take_records()

    def finish(self, engine):
        engine.settle_timers()
        self.thawed = engine.timers_thawed


def _with_timers(flows, timers, rx_ns, fct_ns, group=None, memo_packets=(), packets_group=None, **how):
    run = prepare_direct_run(TOPO, flows, "hpcc", out=None)
    return simulate_engine(run.topo, run.flows, run.cfg, fast_forward=FF,
                           memo=lambda plan: _Timers(timers, rx_ns, fct_ns, group, memo_packets, packets_group, **how))


@pytest.mark.parametrize("gain", [1.0, np.inf])
def test_a_paced_timer_alone_on_its_path_takes_its_alone_time(gain):
    """A paced timer with no sharer covers its alone time at pace 1, to the nanosecond, sending no
    packet; so does a copy taken at its place's time as simulated (infinite gain,
    ``recurring.AS_SIMULATED``)."""
    flows = _flows([(0, 4)], [10 * MB], [0])
    rx = 800_000
    f = _with_timers(flows, [0], np.array([rx]), np.array([rx + 5_000]), group=-1, gain=gain).flows
    assert int(f["received_ns"].iloc[0] - f["start_ns"].iloc[0]) == rx
    assert int(f["packets_sent"].iloc[0]) == 0


@pytest.mark.parametrize("case", ["timer first", "foreign first", "two timers"])
def test_a_timer_meeting_a_flow_it_was_not_learned_beside_is_simulated(case):
    """Two 10 MB flows into host 4 (its downlink their bottleneck), one 300 us after the other; the
    memo makes flow 0 (and, in "two timers", flow 1 too) a timer of the time it takes alone.  A
    timer crosses no link, so where the other flow is on its ports it must be simulated: due after
    a foreign flow started, it starts as a packet flow (the run is the one without a timer); running
    when a foreign flow starts, or when another timer's data would share its link, it becomes a
    packet flow there, credited the bytes its timer covered.  Each way both end as in full
    simulation, to the short windows' jumps (measured: thawed 0.83% / 0.15%; started as a packet
    flow, which is the run without a timer, 0.80% / 1.27%), where as timers both would have taken
    their time alone."""
    starts = [300_000, 0] if case == "foreign first" else [0, 300_000]
    flows = _flows([(0, 4), (8, 4)], [10 * MB, 10 * MB], starts)
    alone = simulate(TOPO, _flows([(0, 4)], [10 * MB], [0]), cc="hpcc", mode="full").flows
    rx, fct = (alone["received_ns"] - alone["start_ns"]).to_numpy(), alone["fct_ns"].to_numpy()
    full = simulate(TOPO, flows, cc="hpcc", mode="full").flows
    timers = [0, 1] if case == "two timers" else [0]
    res = _with_timers(flows, timers, np.repeat(rx, len(timers)), np.repeat(fct, len(timers)))
    f = res.flows
    assert f["completed"].all() and (f["bytes_received"] == flows.size).all()
    assert (f["packets_sent"] > 0).all() and res.memo.thawed == int(case != "foreign first")
    error = np.abs(f["fct_ns"] / full["fct_ns"] - 1)
    assert error.max() < 0.02, error.tolist()
    if case == "foreign first":  # started as a packet flow: the run without a timer
        plain = simulate(TOPO, flows, cc="hpcc", fast_forward=FF).flows
        assert f["fct_ns"].tolist() == plain["fct_ns"].tolist()


def test_paced_timers_share_the_link_their_data_shares():
    """Recurring flows' timers (a negative group) are paced: two 10 MB flows into host 4, the second
    300 us after the first, as timers of their time alone T (to the last byte received).  The first
    runs alone for 300 us, then both at half pace until the first ends at 2T - 300 us; the second
    then has 300 us of its alone time left: it ends at 2T.  Full simulation of the two flows agrees
    with that to 1.5% (measured: 0.10% and 1.35% early), where timers each at its time alone (an
    episode's, unpaced, learned together) end 40% and 41% early."""
    at = 300_000
    flows = _flows([(0, 4), (8, 4)], [10 * MB, 10 * MB], [0, at])
    alone = simulate(TOPO, _flows([(0, 4)], [10 * MB], [0]), cc="hpcc", mode="full").flows
    rx, fct = int(alone["received_ns"].iloc[0] - alone["start_ns"].iloc[0]), int(alone["fct_ns"].iloc[0])
    res = _with_timers(flows, [0, 1], np.array([rx, rx]), np.array([fct, fct]), group=-1)
    f = res.flows
    assert (f["packets_sent"] == 0).all() and res.memo.thawed == 0  # both timers to their end, beside each other
    got = (f["received_ns"] - f["start_ns"]).to_numpy()
    assert abs(got[0] - (2 * rx - at)) <= 2 and abs(got[1] - (2 * rx - at)) <= 2, (got, rx)
    assert (f["fct_ns"] - got == fct - rx).all()  # each last ACK its tail after its last byte
    full = simulate(TOPO, flows, cc="hpcc", mode="full").flows
    error = np.abs(got / (full["received_ns"] - full["start_ns"]).to_numpy() - 1)
    assert error.max() < 0.015, error.tolist()
    unpaced = _with_timers(flows, [0, 1], np.array([rx, rx]), np.array([fct, fct]), group=1).flows
    assert (unpaced["received_ns"] - unpaced["start_ns"] == rx).all()


@pytest.mark.parametrize("at", [0, 300_000])
def test_a_paced_timer_and_a_packet_flow_feel_each_other(at):
    """A paced timer takes its share of its links (the tightest one's, at HPCC's target utilisation),
    and counts the packet flows there among its sharers: flow 0 a timer of its time alone, flow 1
    packets into the same host, together or 300 us later (one of the memo's, as a class's first copy
    simulated is: a foreign flow would have made the timer packets).  Both end within 1.5% of full simulation
    (measured: 0.48% / 0.90% together; 0.10% / 0.54% later), where the timer alone on the link
    would have ended 40% early and the packet flow ~4% late."""
    flows = _flows([(0, 4), (8, 4)], [10 * MB, 10 * MB], [0, at])
    alone = simulate(TOPO, _flows([(0, 4)], [10 * MB], [0]), cc="hpcc", mode="full").flows
    rx, fct = int(alone["received_ns"].iloc[0] - alone["start_ns"].iloc[0]), int(alone["fct_ns"].iloc[0])
    res = _with_timers(flows, [0], np.array([rx]), np.array([fct]), group=-1, memo_packets=[1])
    f = res.flows
    assert f["packets_sent"].tolist() == [0, 10_000] and res.memo.thawed == 0
    full = simulate(TOPO, flows, cc="hpcc", mode="full").flows
    got, want = (f["received_ns"] - f["start_ns"]).to_numpy(), (full["received_ns"] - full["start_ns"]).to_numpy()
    error = np.abs(got / want - 1)
    assert error.max() < 0.015, error.tolist()
    assert res.counters["wormhole"]["fluid_reserved_bps_at_end"] == 0  # every share given back


@pytest.mark.parametrize("mb, offset_us", [(3.3, 50), (8, 300), (1, 50)])
def test_a_packet_flow_starting_beside_two_paced_timers_keeps_a_newcomers_share(mb, offset_us):
    """Three flows into host 4, the third ``offset_us`` after the other two.  In full simulation HPCC
    lets the newcomer, which starts at line rate while the others' rates are already cut, keep more
    than a third of the link for the rest of its life: at 3.3 MB (a ring step's size on the 128-GPU
    DDP fat-tree) it takes 711 us where the first two take 889 and 935.  With the first two paced
    timers of their time alone, each held a third of the link from the newcomer's first packet, and
    the newcomer took 876 us (+23%; DEVELOPERS.md, "Probes").  They now yield it a newcomer's share
    (``timers.yield_to``), fading a little since it meets one of them on a spine link too
    (``newcomer_share``; measured: 731 us, +2.8%; 8 MB at +300 us +5.0%, 1 MB +3.8%; with the lead
    held for its whole life -0.9%, -3.5%, +2.6%), and take their share back when it ends: the three
    flows' total time within 1.4% of full."""
    size = int(mb * MB)
    flows = _flows([(0, 4), (8, 4), (12, 4)], [size] * 3, [0, 0, offset_us * 1000])
    alone = simulate(TOPO, _flows([(0, 4)], [size], [0]), cc="hpcc", mode="full").flows
    rx, fct = int(alone["received_ns"].iloc[0] - alone["start_ns"].iloc[0]), int(alone["fct_ns"].iloc[0])
    res = _with_timers(flows, [0, 1], np.array([rx, rx]), np.array([fct, fct]), group=-1, memo_packets=[2])
    f = res.flows
    assert f["packets_sent"].tolist()[:2] == [0, 0] and res.memo.thawed == 0
    assert f["completed"].all() and (f["bytes_received"] == flows.size).all()
    full = simulate(TOPO, flows, cc="hpcc", mode="full").flows
    got, want = (f["received_ns"] - f["start_ns"]).to_numpy(), (full["received_ns"] - full["start_ns"]).to_numpy()
    assert abs(got[2] / want[2] - 1) < 0.05, (got, want)
    assert abs(got.sum() / want.sum() - 1) < 0.02, (got, want)


def test_a_newcomer_meeting_the_timers_upstream_too_keeps_a_fading_lead():
    """Where a newcomer shares a link before the bottleneck with the flows it joins (here three flows
    into host 4 of a 2-spine leaf-spine, whose spine links the newcomer shares with two of them), its
    lead fades: in full simulation an 8 MB newcomer joining them 300 us late keeps 29% of the link,
    not the 41% it keeps where the bottleneck is the one link it shares.  With the timers yielding
    the lead for its whole life it came out 27% fast; with the fade over the flows it meets upstream
    (``timers.newcomer_share``) within 3% (DEVELOPERS.md, "Newcomers")."""
    spec = "leaf-spine:hosts=24,leaves=6,spines=2"
    h = np.asarray(build_topology(spec).hosts)
    flows = FlowSet.from_columns([h[0], h[8], h[12], h[16]], [h[4]] * 4, [24 * MB] * 3 + [8 * MB], [0, 0, 0, 300_000])
    alone = simulate(spec, FlowSet.from_columns([h[0]], [h[4]], [24 * MB], [0]), cc="hpcc", mode="full").flows
    rx, fct = int(alone["received_ns"].iloc[0] - alone["start_ns"].iloc[0]), int(alone["fct_ns"].iloc[0])
    run = prepare_direct_run(spec, flows, "hpcc", out=None)
    f = simulate_engine(run.topo, run.flows, run.cfg, fast_forward=FF,
                        memo=lambda plan: _Timers([0, 1, 2], np.full(3, rx), np.full(3, fct), -1, [3])).flows
    assert f["packets_sent"].tolist()[:3] == [0, 0, 0]
    full = simulate(spec, flows, cc="hpcc", mode="full").flows
    got, want = (f["received_ns"] - f["start_ns"]).iloc[3], (full["received_ns"] - full["start_ns"]).iloc[3]
    assert abs(got / want - 1) < 0.08, (got, want)


@pytest.mark.parametrize("case", ["timer first", "send first", "acks only"])
def test_a_small_class_flow_is_foreign_only_where_its_data_meets_a_timers(case):
    """A small class's flow (a pipeline send: the memo's own packet flow, ``recurring.SMALL_GROUP``)
    beside a paced timer (flow 0, host 0 to 4, its time alone): where their data leave one port
    (flow 1 from host 8 into host 4, 300 us after the timer or before it) the timer is simulated,
    thawed when the send starts or started as a packet flow when it is due, as beside a foreign
    flow; both then end as in full simulation.  Where only their ACKs meet (flow 1 from host 4 to
    host 0), the timer runs on at its share.  On the 128-GPU DDP fat-tree the sends beside timers
    that reserved their share from their first byte erred by -51% to +31% (``DEVELOPERS.md``)."""
    pair = [(0, 4), (4, 0)] if case == "acks only" else [(0, 4), (8, 4)]
    flows = _flows(pair, [10 * MB, 10 * MB], [300_000, 0] if case == "send first" else [0, 300_000])
    alone = simulate(TOPO, _flows([(0, 4)], [10 * MB], [0]), cc="hpcc", mode="full").flows
    rx, fct = int(alone["received_ns"].iloc[0] - alone["start_ns"].iloc[0]), int(alone["fct_ns"].iloc[0])
    res = _with_timers(flows, [0], np.array([rx]), np.array([fct]), group=-1, memo_packets=[1], packets_group=-2)
    f = res.flows
    assert f["completed"].all() and (f["bytes_received"] == flows.size).all()
    assert (f["packets_sent"].iloc[0] == 0) == (case == "acks only")
    assert res.memo.thawed == int(case == "timer first")
    if case != "acks only":
        full = simulate(TOPO, flows, cc="hpcc", mode="full").flows
        error = np.abs(f["fct_ns"] / full["fct_ns"] - 1)
        assert error.max() < 0.02, error.tolist()


@pytest.mark.parametrize("beside", ["paced timer", "memo packets", "foreign"])
def test_a_timer_aside_holds_its_time_and_its_mean_rate(beside):
    """A small class's copy taken from the memo is a timer *aside* (``Recurring._aside``): it holds
    its time and is no one's sharer, since where its time was taken the timers beside it ran as if
    it were not there (a pipeline send among rings); it reserves its mean rate of its links, which
    the packet flows beside it meet.  Flow 1 (host 8 into host 4, from 300 us) is one, of 3 ms for
    10 MB (26.7 Gb/s); flow 0 (host 0 into host 4, from 0: their data meet on host 4's downlink) is
    a paced timer, or the memo's packet flow (a ring's copy simulated), or a foreign flow.  The
    paced timer ends at its alone time to the nanosecond; the packet flow carries what it has left
    at 300 us at its alone rate less flow 1's 26.7 Gb/s (measured 1,201.2 us against 1,204.8 us so
    expected, 925.6 us alone); flow 1 at its 3 ms either way.  A foreign flow makes it simulated,
    as any timer."""
    flows = _flows([(0, 4), (8, 4)], [10 * MB, 10 * MB], [0, 300_000])
    alone = simulate(TOPO, _flows([(0, 4)], [10 * MB], [0]), cc="hpcc", fast_forward=FF).flows
    rx, fct = int(alone["received_ns"].iloc[0] - alone["start_ns"].iloc[0]), int(alone["fct_ns"].iloc[0])
    aside = [(1, 3_000_000, 3_010_000)]
    if beside == "paced timer":
        res = _with_timers(flows, [0], np.array([rx]), np.array([fct]), group=-1, aside=aside)
    else:
        res = _with_timers(flows, [], np.zeros(0, np.int64), np.zeros(0, np.int64), group=-1,
                           memo_packets=[0] if beside == "memo packets" else [], aside=aside)
    f = res.flows
    assert f["completed"].all() and (f["bytes_received"] == flows.size).all() and res.memo.thawed == 0
    if beside == "foreign":
        assert f["packets_sent"].tolist() == [10_000, 10_000]
        return
    assert int(f["packets_sent"].iloc[1]) == 0
    assert int(f["received_ns"].iloc[1] - f["start_ns"].iloc[1]) == 3_000_000 and int(f["fct_ns"].iloc[1]) == 3_010_000
    took = int(f["received_ns"].iloc[0] - f["start_ns"].iloc[0])
    if beside == "paced timer":
        assert took == rx and int(f["fct_ns"].iloc[0]) == fct
    else:
        rate, aside_rate = 10 * MB * 8 / rx, 10 * MB * 8 / 3_000_000  # bits per ns
        expected = 300_000 + (10 * MB * 8 - rate * 300_000) / (rate - aside_rate)
        assert abs(took / expected - 1) < 0.02, (took, expected, rx)
    assert res.counters["wormhole"]["fluid_reserved_bps_at_end"] == 0


def test_a_timer_is_simulated_only_while_another_groups_data_is_there():
    """Where two groups' packet flows met (a ring's copy simulated, group -1, and a pipeline send,
    group -2, both into host 4), a ring's timer due there after the send ended runs as a timer
    beside the ring's copy still live: the port knows the groups it holds exactly
    (``membership.count_data``).  When it kept one group, 0 once two had met there until it had
    no flow left, each copy simulated there kept it for the next: on the 128-GPU rail 44,544 of
    the 107,008 copies taken were simulated after all, 704 since."""
    flows = _flows([(0, 4), (8, 4), (12, 4)], [10 * MB, MB, 10 * MB], [0, 0, 500_000])
    alone = simulate(TOPO, _flows([(0, 4)], [10 * MB], [0]), cc="hpcc", fast_forward=FF).flows
    rx, fct = int(alone["received_ns"].iloc[0] - alone["start_ns"].iloc[0]), int(alone["fct_ns"].iloc[0])
    res = _with_timers(flows, [2], np.array([rx]), np.array([fct]), group=-1, memo_packets=[0, 1],
                       packets_group=[-1, -2])
    f = res.flows
    assert f["completed"].all() and int(f["received_ns"].iloc[1]) < 500_000 < int(f["received_ns"].iloc[0])
    assert int(f["packets_sent"].iloc[2]) == 0 and res.memo.thawed == 0
    early = _flows([(0, 4), (8, 4), (12, 4)], [10 * MB, MB, 10 * MB], [0, 0, 100_000])  # the send still there
    f = _with_timers(early, [2], np.array([rx]), np.array([fct]), group=-1, memo_packets=[0, 1],
                     packets_group=[-1, -2]).flows
    assert int(f["packets_sent"].iloc[2]) > 0


def test_recurring_flows_moved_from_sqlite_to_postgres_give_the_same_hits(tmp_path, pg_url):
    """``memo export`` / ``memo import`` carry recurring entries: a warm run on Postgres takes the
    same copies from the memo as one on the SQLite file, with the same results."""
    trace, db = _trace(), tmp_path / "memo.sqlite"
    replay(trace, RAIL, "hpcc", iterations=2, memo_db=db, memo_recurring=True)
    move_memo(db, pg_url, tmp_path)
    warm = {name: replay(trace, RAIL, "hpcc", iterations=2, memo_db=where, memo_recurring=True)
            for name, where in (("sqlite", db), ("postgres", pg_url))}
    taken = [w.counters["wormhole"]["memo_recurring_taken"] for w in warm.values()]
    assert taken[0] == taken[1] == len(_network(warm["sqlite"]))
    assert warm["sqlite"].flows["fct_ns"].tolist() == warm["postgres"].flows["fct_ns"].tolist()
