"""Wormhole mode (steady-state fast-forwarding) against the full packet-level simulation.

Every case runs both modes on the same flows and compares flow by flow: the full simulation is
the ground truth.  A short steadiness window keeps the cases small (a few ms simulated).

Bounds: a flow alone on its links is exact to 0.5%; where flows interact (merges, skip-backs,
contention) each flow stays within 5% of the full simulation (the issue's p99 bound: these cases
have a handful of flows), the mean per-flow error within 1%, and the aggregate (mean FCT) within 1%
(``_assert_within_bounds``).  Each bound is asserted only on a run that did fast-forward.
"""

import json
from dataclasses import replace

import numpy as np
import pytest

from wormhole_replay.api import execute, prepare_direct_run, simulate
from wormhole_replay.cli import main
from wormhole_replay.engine.fastforward import FastForward
from wormhole_replay.topology import build_topology
from wormhole_replay.workload.flowfile import FlowSet

TOPO = "leaf-spine:hosts=16,leaves=4,spines=2"  # hosts 0-3 on leaf 0, 4-7 on leaf 1, ...
FF = FastForward(window_ns=100_000, samples=16, first_jump_ns=5_000_000)
FF_JUMPS_ONLY = replace(FF, fluid=False)  # the jump mechanics alone (the default; fluid flows: test_fluid_flows_...)
FF_FLUID = replace(FF, fluid=True)  # with fluid flows (--ff-fluid)
FF_DCQCN = replace(FF, window_ns=600_000)  # DCQCN's shortest window: two rate-increase periods (LEAST_RP_TIMERS)
MB = 1_000_000


def ff_for(cc):
    """The tests' short windows, at DCQCN's shortest where the CC is DCQCN."""
    return FF_DCQCN if cc == "dcqcn" else FF


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


def _assert_within_bounds(full, fast, per_flow=0.05):
    """The issue's bounds on a run with few flows: every flow within ``per_flow``, the mean per-flow
    error and the mean FCT (the aggregate) within 1%."""
    err = _fct_errors(full, fast)
    net = ~full.flows["virtual"].to_numpy()
    mean_fct = fast.flows["fct_ns"].to_numpy()[net].mean() / full.flows["fct_ns"].to_numpy()[net].mean() - 1
    assert err.max() <= per_flow and err.mean() <= 0.01 and abs(mean_fct) <= 0.01, (err, mean_fct)
    return err


def _assert_all_delivered(res, flows):
    f = res.flows
    assert f["completed"].all()
    assert (f["bytes_received"] == flows.size).all()  # every byte arrives, credited or simulated


@pytest.mark.parametrize("cc", ["dcqcn", "hpcc"])
def test_a_lone_flow_is_fast_forwarded_to_its_tail(cc):
    flows = _flows([(1, 5)], [20 * MB], [0])
    full, fast = _both(flows, cc, ff_for(cc))
    w = fast.counters["wormhole"]
    assert w["fast_forwards"] >= 1 and w["skipped_ns"] > 0
    assert fast.counters["events"] < 0.35 * full.counters["events"]  # measured: 0.31 (HPCC), less for DCQCN
    assert _fct_errors(full, fast).max() < 0.005
    _assert_all_delivered(fast, flows)


def test_without_a_steady_state_wormhole_is_the_full_simulation_bit_for_bit():
    # flows far shorter than the window: nothing is ever fast-forwarded
    flows = _flows([(1, 0), (2, 0), (5, 0), (9, 4)], [200_000, 300_000, 250_000, 400_000], [0, 1000, 2000, 0])
    full, fast = _both(flows, "dcqcn", FF_DCQCN)
    assert fast.counters["wormhole"]["fast_forwards"] == 0
    assert fast.counters["events"] - fast.counters["wormhole"]["bookkeeping_events"] == full.counters["events"]
    cols = ["flow_id", "start_ns", "finish_ns", "fct_ns", "done_index", "packets_sent"]
    assert full.flows[cols].equals(fast.flows[cols])


# flow 0 runs alone and is frozen; flow 2 is released by a compute op (the virtual flow 1) at a
# time the frozen partition could not know, onto flow 0's receiver: a skip-back
SKIP_BACK = dict(pairs=[(1, 5), (-1, 2), (2, 5)], sizes=[30 * MB, 0, 10 * MB], starts=[0, 0, 0],
                 deps=[[], [], [1]], duration_ns=[-1, 300_000, -1])
# flows 0 (1->5) and 1 (9->13) share nothing: two partitions.  Flow 2 (5->9) joins both (it
# sends on 5's NIC and receives on 9's): they merge.  It finishes first: they split again.
MERGE = dict(pairs=[(1, 5), (9, 13), (5, 9)], sizes=[30 * MB, 30 * MB, 4 * MB], starts=[0, 0, 700_000])


def test_an_unforeseen_arrival_pulls_the_jump_back():
    flows = _flows(SKIP_BACK["pairs"], SKIP_BACK["sizes"], SKIP_BACK["starts"], deps=SKIP_BACK["deps"],
                   duration_ns=SKIP_BACK["duration_ns"])
    full, fast = _both(flows, ff=FF_JUMPS_ONLY)
    w = fast.counters["wormhole"]
    assert w["skip_backs"] >= 1 and w["fast_forwards"] >= 2
    # measured 2026-12-01 (045ec41): 0.17% (flow 0), 0.51% (flow 2, contended from its start);
    # 4.96% before 6afacdc.  A skip-back that restored the frozen flow's bytes wrongly errs by far
    # more than 1%
    _assert_within_bounds(full, fast, per_flow=0.01)
    f = fast.flows
    assert f.loc[2, "start_ns"] == full.flows.loc[2, "start_ns"]  # the arrival itself is exact
    _assert_all_delivered(fast, flows)


def test_partitions_merge_and_split_as_flows_come_and_go():
    flows = _flows(MERGE["pairs"], MERGE["sizes"], MERGE["starts"])
    full, fast = _both(flows, ff=FF_JUMPS_ONLY)
    w = fast.counters["wormhole"]
    assert w["partitions_max"] == 2
    assert w["merges"] >= 1 and w["splits"] >= 1
    assert w["fast_forwards"] >= 2
    _assert_within_bounds(full, fast)  # measured 2026-12-01 (045ec41): 0.06%, 0.02%, 0.52% (flow 2)
    _assert_all_delivered(fast, flows)


@pytest.mark.parametrize("case", ["skip-back", "merge"])
def test_fluid_flows_in_the_skip_back_and_merge_cases_stay_within_the_bounds(case):
    """The two cases above with fluid flows (``--ff-fluid``), held to the same bounds.  In the
    skip-back case flows 0 and 2 share their bottleneck, so they go fluid together or not at all
    (``fluid_groups``): when flow 2 went fluid alone, flow 0 settled live beside its fixed
    reservation at 44.9-45.6 Gb/s against 46.6 in full and ended 2.28% late, mean FCT +1.51%
    (measured 2026-12-01).  Measured 2026-12-03, with data groups: skip-back 0.04%, 0.00%, 0.12%
    (99 k events against 472 k); merge 0.03%, 0.01%, 0.87% (1.87% for flow 2 before a thawed
    flow's first packet stopped being slowed by its own share)."""
    c = SKIP_BACK if case == "skip-back" else MERGE
    flows = _flows(c["pairs"], c["sizes"], c["starts"], deps=c.get("deps"), duration_ns=c.get("duration_ns"))
    full, fast = _both(flows, ff=FF_FLUID)
    assert fast.counters["wormhole"]["fluid_flows"] >= 1
    _assert_within_bounds(full, fast, per_flow=0.01 if case == "skip-back" else 0.05)
    _assert_all_delivered(fast, flows)


def test_a_flow_finishing_elsewhere_during_a_jump_releases_work_into_the_frozen_partition():
    # flow 0 (1->5) is frozen for most of its life; flow 1 (9->13) in another partition finishes
    # meanwhile and releases flow 2 onto flow 0's sender: flow 0's jump ends at that moment
    flows = _flows([(1, 5), (9, 13), (1, 6)], [40 * MB, 12 * MB, 5 * MB], [0, 0, 0], deps=[[], [], [1]])
    full, fast = _both(flows)
    w = fast.counters["wormhole"]
    assert w["skip_backs"] >= 1
    assert abs(fast.flows.loc[2, "start_ns"] - full.flows.loc[2, "start_ns"]) <= 0.005 * full.flows.loc[2, "start_ns"]
    _assert_within_bounds(full, fast)  # measured 2026-12-01: 0.15%, 0.05%, 0.44%
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


@pytest.mark.parametrize("cc, size", [("dcqcn", 80 * MB), ("hpcc", 20 * MB)])
def test_contending_flows_wait_for_a_full_window(cc, size):
    """Two flows into one receiver never take the short window: the run with it equals the run
    without it, and both do jump (DCQCN's shares need 80 MB flows to settle within a window here;
    at 20 MB neither run jumped and the equality held trivially)."""
    full, short, long = _short_and_long(_flows([(1, 5), (2, 5)], [size, size], [0, 0]), cc)
    assert long.counters["wormhole"]["fast_forwards"] >= 1
    assert short.counters["events"] == long.counters["events"] < full.counters["events"]
    assert short.flows.equals(long.flows)


def test_contended_flows_stay_within_the_accuracy_bounds():
    # two flows through one receiver NIC, the second arriving late, with DCQCN and HPCC
    for cc in ("dcqcn", "hpcc"):
        flows = _flows([(1, 0), (5, 0)], [25 * MB, 12 * MB], [0, 1_500_000])
        full, fast = _both(flows, cc, FastForward())
        assert fast.counters["wormhole"]["fast_forwards"] >= 1, cc
        _assert_within_bounds(full, fast)  # measured 2026-12-01: max 0.17% (DCQCN), 0.08% (HPCC)
        _assert_all_delivered(fast, flows)


# four flows from leaf 0 to leaf 1: ECMP puts flows 0, 2 and 3 on one spine, where they share a
# link whose shares wander by several percent from sample to sample (HPCC), and flow 1 alone on the
# other; flow 4 (host 12 into flow 0's receiver) arrives during a jump of the three
SHARED = dict(pairs=[(0, 4), (1, 5), (2, 6), (3, 7), (12, 4)], sizes=[100 * MB] * 4 + [10 * MB],
              starts=[0, 0, 0, 0, 17_000_000])


FF_MEAN = FastForward(mean_jumps=True)  # --ff-mean-jumps, the default windows


def _journaled(flows, ff=FF_MEAN):
    run = prepare_direct_run(TOPO, flows, "hpcc", out=None)
    run.fast_forward, run.journal = ff, True
    return execute(run)


def test_a_contended_partition_jumps_on_its_mean_shares_and_conserves_its_bottleneck():
    """Flows 0, 2 and 3 never pass the per-sample test together (without ``--ff-mean-jumps`` this case
    takes one jump); their window means hold, and so does what their link carries in all, so they jump at
    those means (``jump.stationary``), each jump at most 1/16 of their FCT.  What the jumps
    credit is what the shared link carries: the rate flow 1 gets alone on a link of the same speed.
    Measured 2026-12-02: 5 jumps, per-flow FCT error 0.33% mean, 0.64% max, mean FCT -0.01%."""
    flows = _flows(SHARED["pairs"][:4], SHARED["sizes"][:4], SHARED["starts"][:4])
    full, fast = simulate(TOPO, flows, cc="hpcc", mode="full"), _journaled(flows)
    assert fast.counters["wormhole"]["mean_jumps"] >= 3
    assert _journaled(flows, FastForward()).counters["wormhole"]["mean_jumps"] == 0  # opt-in
    j = fast.memo.tables()["jumps"]
    shared = [set(f) == {0, 2, 3} for f in j["flows"]]
    jumped_ns = float((j["end_ns"] - j["start_ns"])[shared].sum())
    credited = float(fast.flows["fast_forwarded_bytes"].to_numpy()[[0, 2, 3]].sum())
    alone = SHARED["sizes"][1] * 8 / full.flows["fct_ns"].to_numpy()[1]  # Gb/s, flow 1 alone at line rate
    assert jumped_ns > 0 and credited * 8 / jumped_ns == pytest.approx(alone, rel=0.01)
    _assert_within_bounds(full, fast, per_flow=0.02)
    _assert_all_delivered(fast, flows)


def test_a_flow_arriving_inside_a_jump_on_mean_shares_pulls_it_back():
    """The case above with flow 4 arriving at 17 ms, inside the third jump of flows 0, 2 and 3 (the
    jumps run 10.7-12.3, 13.4-15.0, 16.4-18.0 ms): the jump ends at the arrival.  Measured
    2026-12-02: flow 4 -3.1%, the others within 0.8%, mean FCT -0.34%.  (Without mean jumps the case
    takes two jumps and flow 4 errs by -8.4%; the case is chaotic: in full simulation, flow 3
    starting 1 ns later moves flow 4 by up to 7.0% over arrival times of 15.5-21 ms, DEVELOPERS.md.)"""
    flows = _flows(SHARED["pairs"], SHARED["sizes"], SHARED["starts"])
    full, fast = simulate(TOPO, flows, cc="hpcc", mode="full"), _journaled(flows)
    w = fast.counters["wormhole"]
    assert w["skip_backs"] >= 1 and w["mean_jumps"] >= 2
    assert fast.flows.loc[4, "start_ns"] == full.flows.loc[4, "start_ns"]
    _assert_within_bounds(full, fast)
    _assert_all_delivered(fast, flows)


def _jumps_of(res, flows_set):
    """Lengths (ns) of the jumps that froze exactly ``flows_set`` (from the run's journal)."""
    j = res.memo.tables()["jumps"]
    return np.array([e - s for s, e, f in zip(j["start_ns"], j["end_ns"], j["flows"]) if set(f) == flows_set])


def test_a_contended_flow_that_releases_others_jumps_a_sixteenth_of_its_fct_at_a_time():
    """Two flows into one receiver jump as one contended partition.  Alone, a jump may run to the
    first flow's tail; once each releases a successor (a trace's DAG, where a completion that
    moves moves every flow after it), each jump spans at most 1/16 of the flows' FCT
    (``FastForward.releaser_share``), and the run stays within the bounds."""
    pairs, sizes = [(1, 0), (5, 0)], [25 * MB, 25 * MB]
    free = _flows(pairs, sizes, [0, 0])
    releasing = _flows(pairs + [(0, 2), (0, 3)], sizes + [MB, MB], [0] * 4, deps=[[], [], [0], [1]])
    runs = {}
    for name, flows in (("free", free), ("releasing", releasing)):
        run = prepare_direct_run(TOPO, flows, "hpcc", out=None)
        run.fast_forward, run.journal = FF, True
        runs[name] = execute(run)
    fct = runs["free"].flows["fct_ns"].to_numpy()[:2].min()
    assert _jumps_of(runs["free"], {0, 1}).max() > fct / 16
    jumps = _jumps_of(runs["releasing"], {0, 1})
    assert len(jumps) >= 2 and jumps.max() <= 1.02 * runs["releasing"].flows["fct_ns"].to_numpy()[:2].min() / 16
    full = simulate(TOPO, releasing, cc="hpcc", mode="full")
    _assert_within_bounds(full, runs["releasing"])
    _assert_all_delivered(runs["releasing"], releasing)
    # --ff-releaser-share 1: no cap, the jumps of the flows without successors
    run = prepare_direct_run(TOPO, releasing, "hpcc", out=None)
    run.fast_forward, run.journal = replace(FF, releaser_share=1.0), True
    assert _jumps_of(execute(run), {0, 1}).max() > fct / 16


# short flows into host 0 (and a compute op releasing one more) that all finish within the first
# millisecond, beside two long flows that a window of 800 us lets jump only later
EARLY = dict(pairs=[(1, 0), (2, 0), (3, 0), (5, 4), (9, 13), (-1, 1), (1, 6), (10, 0)],
             sizes=[MB, MB, MB, 2 * MB, 40 * MB, 0, MB, 30 * MB], starts=[0, 1000, 2000, 50_000, 0, 0, 0, 0],
             deps=[[], [], [], [], [], [0], [5], [6]], duration_ns=[-1, -1, -1, -1, -1, 100_000, -1, -1])


def _run(flows, mode, ff=LONG, stop_ns=None):
    """One HPCC run of ``flows`` (wormhole mode keeps its jump journal), stopped at ``stop_ns``."""
    run = prepare_direct_run(TOPO, flows, "hpcc", out=None)
    if mode == "wormhole":
        run.fast_forward, run.journal = ff, True
    if stop_ns is not None:
        run.cfg = replace(run.cfg, simulator_stop_time=stop_ns / 1e9)
    return execute(run)


def test_until_its_first_jump_a_wormhole_run_is_the_full_run_bit_for_bit():
    """Wormhole events are ordered after every packet event of their instant, so until the first
    jump nothing differs: the flows done before it are the full run's to the ns and packet, and
    without fluid flows the whole state (every flow's bytes, the event count) is the full run's
    when both stop just before it.  Catches a sample or partition event that perturbs the packet
    simulation (an event stolen or reordered, a rate touched while measuring)."""
    flows = _flows(EARLY["pairs"], EARLY["sizes"], EARLY["starts"], deps=EARLY["deps"], duration_ns=EARLY["duration_ns"])
    full = _run(flows, "full")
    cols = ["flow_id", "start_ns", "finish_ns", "fct_ns", "received_ns", "done_index", "packets_sent", "bytes_received"]
    for ff in (LONG, replace(LONG, fluid=False)):
        fast = _run(flows, "wormhole", ff)
        first = int(fast.memo.tables()["jumps"]["start_ns"].min())
        before = full.flows["finish_ns"].between(0, first - 1)
        assert before.sum() >= 5, first  # the short flows and the released one
        assert full.flows.loc[before, cols].equals(fast.flows.loc[before, cols]), ff.fluid
        assert not full.flows.equals(fast.flows)  # the jumps did change the rest
    # a fluid flow stops sending before any jump (its bytes are credited when it thaws), so the
    # whole state is compared with fluid flows off
    nofluid = replace(LONG, fluid=False)
    first = int(_run(flows, "wormhole", nofluid).memo.tables()["jumps"]["start_ns"].min())
    a, b = _run(flows, "full", stop_ns=first - 1), _run(flows, "wormhole", nofluid, stop_ns=first - 1)
    assert b.counters["wormhole"]["fast_forwards"] == 0 and not a.flows["completed"].all()
    assert a.flows.equals(b.flows)
    assert b.counters["events"] - b.counters["wormhole"]["bookkeeping_events"] == a.counters["events"]


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
    for key in ("fast_forwards", "skip_backs", "skipped_ns", "events_skipped_estimate", "partitions_max",
                "mean_jumps"):
        assert isinstance(w[key], int)
    assert w["fast_forwards"] >= 1 and w["options"]["mean_jumps"] is False
    rc = main(["simulate", "--topology", TOPO, "--flows", str(flow_file), "--cc", "hpcc", "--ff-mean-jumps",
               "--ff-window", "100us", "--out", str(tmp_path / "mean"), "--json", "--quiet"])
    assert rc == 0 and json.loads(capsys.readouterr().out)["wormhole"]["options"]["mean_jumps"] is True
    import pandas as pd

    a = pd.read_parquet(tmp_path / "full" / "flows.parquet")
    b = pd.read_parquet(tmp_path / "wormhole" / "flows.parquet")
    assert list(a.columns) == list(b.columns) and (a["flow_id"] == b["flow_id"]).all()


@pytest.mark.parametrize("option", [["--ff-theta", "2"], ["--ff-releaser-share", "0"], ["--ff-releaser-share", "1.5"]])
def test_bad_fast_forward_options_are_one_line_errors(tmp_path, capsys, option):
    rc = main(["simulate", "--topology", TOPO, "--flows", "nowhere.txt", "--cc", "hpcc", *option])
    assert rc == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "error" in err


def test_a_dcqcn_window_shorter_than_two_rate_increase_periods_is_refused(tmp_path, capsys):
    """Between two rate increases (``RP_TIMER``, 300 us in the presets) a DCQCN flow's rate does not
    move, so a shorter window reads a trough of its sawtooth as a steady state and freezes it there.
    Measured on two to four flows of 10-30 MB into one host of ``test_wormhole``'s leaf-spine:
    FCTs 51-200% off with a 100 us window, up to 12% with one period, exact with two; three flows of
    100 MB within 0.3% (DEVELOPERS.md, "Wormhole mode (from the README)").  A window of one period
    is one error line and exit status 2, nothing written; two periods run."""
    h = _hosts()
    flow_file = tmp_path / "flow.txt"
    flow_file.write_text(f"2\n{h[0]} {h[4]} 3 100 10000000 0\n{h[8]} {h[4]} 3 100 10000000 0\n")
    args = ["simulate", "--topology", TOPO, "--flows", str(flow_file), "--cc", "dcqcn", "--json", "--quiet"]
    assert main([*args, "--ff-window", "300us", "--out", str(tmp_path / "short")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "rate-increase periods (600000 ns)" in err
    assert not (tmp_path / "short").exists()
    assert main([*args, "--ff-window", "600us", "--out", str(tmp_path / "two")]) == 0
    fast = json.loads(capsys.readouterr().out)
    full = simulate(TOPO, _flows([(0, 4), (8, 4)], [10 * MB, 10 * MB], [0, 0]), cc="dcqcn", mode="full")
    assert fast["wormhole"]["options"]["window_ns"] == 600_000
    import pandas as pd

    written = pd.read_parquet(tmp_path / "two" / "flows.parquet")["fct_ns"].to_numpy()
    assert np.array_equal(written, full.flows["fct_ns"].to_numpy())  # measured: no jump, exact


def test_partition_tables_are_sized_by_network_flows_and_the_memo_log_by_the_memo():
    """Virtual flows never join a partition and a full run has none; only a memo session reads the
    memo log, only fluid flows watch their links (at 1024 GPUs sizing these by every flow cost 730
    MB).  The run itself is unchanged by the sizes: the same flows table either way."""
    from wormhole_replay.config import SimConfig
    from wormhole_replay.engine.build import build

    flows = _flows(EARLY["pairs"], EARLY["sizes"], EARLY["starts"], deps=EARLY["deps"], duration_ns=EARLY["duration_ns"])
    topo, cfg = build_topology(TOPO), SimConfig(cc_mode=3)
    network = int((~flows.is_virtual).sum())
    full, _ = build(topo, flows, cfg)
    wormhole, _ = build(topo, flows, cfg, fast_forward=FF)
    memo, _ = build(topo, flows, cfg, fast_forward=FF_FLUID, memo_log=True)
    assert full.parts.table.shape[0] == 1 and wormhole.parts.table.shape[0] == network < len(flows)
    assert full.parts.memo_log.shape[0] == wormhole.parts.memo_log.shape[0] == 1
    assert memo.parts.memo_log.shape[0] == 3 * len(flows) + 2 * network + 16
    assert wormhole.parts.watch.shape[0] == 1 and memo.parts.watch.shape[0] == len(flows)
    journaled = _run(flows, "wormhole", FF)  # with a memo session (the journal), a full-size log
    assert journaled.flows.equals(simulate(TOPO, flows, cc="hpcc", fast_forward=FF).flows)
