"""Wormhole mode (steady-state fast-forwarding) against the full packet-level simulation.

Every case runs both modes on the same flows and compares flow by flow: the full simulation is
the ground truth.  A short steadiness window keeps the cases small (a few ms simulated).

Bounds: a flow alone on its links is exact to 0.5%; where flows interact (merges, skip-backs,
contention) each flow stays within 5% of the full simulation.  The issue's 1% mean bound is not yet
met in these interacting cases (measured 1.6-2.5%, see DEVELOPERS.md, "Wormhole accuracy").
"""

import json

import numpy as np
import pytest

from wormhole_replay.api import simulate
from wormhole_replay.cli import main
from wormhole_replay.engine.fastforward import FastForward
from wormhole_replay.topology import build_topology
from wormhole_replay.workload.flowfile import FlowSet

TOPO = "leaf-spine:hosts=16,leaves=4,spines=2"  # hosts 0-3 on leaf 0, 4-7 on leaf 1, ...
FF = FastForward(window_ns=100_000, samples=16, first_jump_ns=5_000_000)
MB = 1_000_000


def _hosts():
    return np.asarray(build_topology(TOPO).hosts)


def _flows(pairs, sizes, starts, deps=None, duration_ns=None):
    h = _hosts()
    src = [h[a] if a >= 0 else h[b] for a, b in pairs]  # a virtual flow (-1, b) lives on host b
    dst = [h[b] for a, b in pairs]
    return FlowSet.from_columns(src, dst, sizes, starts, deps=deps, duration_ns=duration_ns)


def _both(flows, cc="hpcc", ff=FF):
    full = simulate(TOPO, flows, cc=cc, mode="full")
    fast = simulate(TOPO, flows, cc=cc, fast_forward=ff)
    return full, fast


def _fct_errors(full, fast):
    net = ~full.flows["virtual"].to_numpy()
    a = full.flows["fct_ns"].to_numpy()[net]
    b = fast.flows["fct_ns"].to_numpy()[net]
    return np.abs(b - a) / a


def _assert_all_delivered(res, flows):
    f = res.flows
    assert f["completed"].all()
    assert (f["bytes_received"] == flows.size).all()  # every byte arrives, credited or simulated


@pytest.mark.parametrize("cc", ["dcqcn", "hpcc"])
def test_a_lone_flow_is_fast_forwarded_to_its_tail(cc):
    flows = _flows([(1, 5)], [20 * MB], [0])
    full, fast = _both(flows, cc)
    w = fast.counters["wormhole"]
    assert w["fast_forwards"] >= 1 and w["skipped_ns"] > 0
    assert fast.counters["events"] < 0.35 * full.counters["events"]  # measured: 0.31 (HPCC), less for DCQCN
    assert _fct_errors(full, fast).max() < 0.005
    _assert_all_delivered(fast, flows)


def test_without_a_steady_state_wormhole_is_the_full_simulation_bit_for_bit():
    # flows far shorter than the window: nothing is ever fast-forwarded
    flows = _flows([(1, 0), (2, 0), (5, 0), (9, 4)], [200_000, 300_000, 250_000, 400_000], [0, 1000, 2000, 0])
    full, fast = _both(flows, "dcqcn")
    assert fast.counters["wormhole"]["fast_forwards"] == 0
    assert fast.counters["events"] - fast.counters["wormhole"]["bookkeeping_events"] == full.counters["events"]
    cols = ["flow_id", "start_ns", "finish_ns", "fct_ns", "done_index", "packets_sent"]
    assert full.flows[cols].equals(fast.flows[cols])


def test_an_unforeseen_arrival_pulls_the_jump_back():
    # flow 0 runs alone and is frozen; flow 1 is released by a compute op (a virtual flow) at a
    # time the frozen partition could not know, onto flow 0's receiver: a skip-back
    flows = _flows([(1, 5), (-1, 2), (2, 5)], [30 * MB, 0, 10 * MB], [0, 0, 0],
                   deps=[[], [], [1]], duration_ns=[-1, 300_000, -1])
    full, fast = _both(flows)
    w = fast.counters["wormhole"]
    assert w["skip_backs"] >= 1
    err = _fct_errors(full, fast)
    assert err.max() <= 0.05, err  # measured: 0.04% (flow 0), 4.96% (flow 2, contended from its start)
    f = fast.flows
    assert f.loc[2, "start_ns"] == full.flows.loc[2, "start_ns"]  # the arrival itself is exact
    _assert_all_delivered(fast, flows)


def test_partitions_merge_and_split_as_flows_come_and_go():
    # flows 0 (1->5) and 1 (9->13) share nothing: two partitions.  Flow 2 (5->9) joins both (it
    # sends on 5's NIC and receives on 9's): they merge.  It finishes first: they split again.
    flows = _flows([(1, 5), (9, 13), (5, 9)], [30 * MB, 30 * MB, 4 * MB], [0, 0, 700_000])
    full, fast = _both(flows)
    w = fast.counters["wormhole"]
    assert w["partitions_max"] == 2
    assert w["merges"] >= 1 and w["splits"] >= 1
    assert w["fast_forwards"] >= 2
    err = _fct_errors(full, fast)
    assert err.max() <= 0.05, err
    _assert_all_delivered(fast, flows)


def test_a_flow_finishing_elsewhere_during_a_jump_releases_work_into_the_frozen_partition():
    # flow 0 (1->5) is frozen for most of its life; flow 1 (9->13) in another partition finishes
    # meanwhile and releases flow 2 onto flow 0's sender: flow 0's jump ends at that moment
    flows = _flows([(1, 5), (9, 13), (1, 6)], [40 * MB, 12 * MB, 5 * MB], [0, 0, 0], deps=[[], [], [1]])
    full, fast = _both(flows)
    w = fast.counters["wormhole"]
    assert w["skip_backs"] >= 1
    assert abs(fast.flows.loc[2, "start_ns"] - full.flows.loc[2, "start_ns"]) <= 0.005 * full.flows.loc[2, "start_ns"]
    err = _fct_errors(full, fast)
    assert err.max() <= 0.05, err
    _assert_all_delivered(fast, flows)


# A window of 16 samples of 50 us; the short one spans 4 base RTTs (DCQCN: 2 samples) or 16 (HPCC:
# 3).  ``LONG`` turns the short window off (as many samples as the full one).
SHORT = FastForward(window_ns=800_000, samples=16, first_jump_ns=20_000_000)
LONG = FastForward(window_ns=800_000, samples=16, first_jump_ns=20_000_000, short_samples=16)


def _short_and_long(flows, cc):
    full = simulate(TOPO, flows, cc=cc, mode="full")
    return full, simulate(TOPO, flows, cc=cc, fast_forward=SHORT), simulate(TOPO, flows, cc=cc, fast_forward=LONG)


@pytest.mark.parametrize("cc", ["dcqcn", "hpcc"])
def test_a_flow_that_cannot_contend_is_frozen_after_a_short_window(cc):
    full, short, long = _short_and_long(_flows([(1, 5)], [20 * MB], [0]), cc)
    assert short.counters["wormhole"]["options"]["short_samples"] == (2 if cc == "dcqcn" else 3)
    # measured: 28.4 k events against 137 k (DCQCN), 28.1 k against 106 k (HPCC); full 260 k / 220 k
    assert short.counters["events"] < 0.5 * long.counters["events"]
    assert _fct_errors(full, short).max() < 0.005  # measured: 0.17% (DCQCN), 0.09% (HPCC)


def test_dcqcn_flows_bound_by_their_nics_are_frozen_after_a_short_window():
    # hosts 0 and 1 each send to hosts 2 and 3 (one leaf): every switch port to a receiver carries
    # two flows, but at half a NIC each they fit; DCQCN never cuts them (its CC is idle)
    flows = _flows([(0, 2), (0, 3), (1, 2), (1, 3)], [20 * MB] * 4, [0] * 4)
    full, short, long = _short_and_long(flows, "dcqcn")
    assert short.counters["events"] < 0.5 * long.counters["events"]  # measured: 31.1 k against 147 k
    assert _fct_errors(full, short).max() < 0.005  # measured: 0.18%


@pytest.mark.parametrize("cc", ["dcqcn", "hpcc"])
def test_contending_flows_wait_for_a_full_window(cc):
    full, short, long = _short_and_long(_flows([(1, 5), (2, 5)], [20 * MB, 20 * MB], [0, 0]), cc)
    assert short.counters["events"] == long.counters["events"]
    assert short.flows.equals(long.flows)


def test_contended_flows_stay_within_the_accuracy_bounds():
    # two flows through one receiver NIC, the second arriving late, with DCQCN and HPCC
    for cc in ("dcqcn", "hpcc"):
        flows = _flows([(1, 0), (5, 0)], [25 * MB, 12 * MB], [0, 1_500_000])
        full, fast = _both(flows, cc, FastForward())
        err = _fct_errors(full, fast)
        assert err.max() <= 0.05, (cc, err)
        _assert_all_delivered(fast, flows)


def test_wormhole_is_deterministic():
    flows = _flows([(1, 5), (9, 13), (5, 9)], [30 * MB, 30 * MB, 4 * MB], [0, 0, 700_000])
    a = simulate(TOPO, flows, cc="hpcc", fast_forward=FF)
    b = simulate(TOPO, flows, cc="hpcc", fast_forward=FF)
    assert a.flows.equals(b.flows)
    assert a.counters["events"] == b.counters["events"]
    assert a.counters["wormhole"] == b.counters["wormhole"]


def test_cli_modes_give_tables_of_the_same_shape(tmp_path, capsys):
    h = _hosts()
    flow_file = tmp_path / "flow.txt"
    flow_file.write_text(f"2\n{h[1]} {h[5]} 3 100 20000000 0\n{h[9]} {h[13]} 3 100 3000000 0.0001\n")
    outs = {}
    for mode in ("full", "wormhole"):
        rc = main(["simulate", "--topology", TOPO, "--flows", str(flow_file), "--cc", "hpcc", "--mode", mode,
                   "--ff-window", "100us", "--out", str(tmp_path / mode), "--json", "--quiet"])
        assert rc == 0
        outs[mode] = json.loads(capsys.readouterr().out)
    assert outs["full"]["mode"] == "full" and "wormhole" not in outs["full"]
    w = outs["wormhole"]["wormhole"]
    for key in ("fast_forwards", "skip_backs", "skipped_ns", "events_skipped_estimate", "partitions_max"):
        assert isinstance(w[key], int)
    assert w["fast_forwards"] >= 1
    import pandas as pd

    a = pd.read_parquet(tmp_path / "full" / "flows.parquet")
    b = pd.read_parquet(tmp_path / "wormhole" / "flows.parquet")
    assert list(a.columns) == list(b.columns) and (a["flow_id"] == b["flow_id"]).all()


def test_bad_fast_forward_options_are_one_line_errors(tmp_path, capsys):
    rc = main(["simulate", "--topology", TOPO, "--flows", "nowhere.txt", "--cc", "hpcc", "--ff-theta", "2"])
    assert rc == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error" in err
