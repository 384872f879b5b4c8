#!/usr/bin/env python
"""Wormhole vs full simulation on one GPT and one MoE training iteration, in one process.

Prints, per workload and CC, two wormhole rows against the same full run: steady-state
fast-forwarding alone (``steady``), and with a memo database that starts empty (``+memo``: the
iteration's own recurring transients and steady states are reused within the run).  Each row: full
and wormhole wall time, the speedup, the fraction of events avoided (1 - wormhole events / full
events), and the per-flow FCT error (mean, p99, max) and iteration-time error against full.  The
iterations are sized so that the full run takes one to a few minutes here; expect ~15 minutes.

With ``--noise-floor [N]``, a third row per workload: the full simulation against itself with one
compute op 1 ns longer (``audit.compare.perturb_ops``, as ``audit --noise-floor``), i.e. how far
per-flow FCTs move for a perturbation far below any jump's; an error near it is chaos, not the
jumps (one more full run per workload).  With N draws (up to 4: the op 1 ns, 10 ns, 100 ns, 1 us
longer) each statistic is the widest over them, as the contention issue defines the floor.

    python tools/bench_wormhole.py [--cc hpcc] [--only gpt|moe] [--noise-floor [N]] [--layers N] [--theta X]

``--layers N`` shortens both models to N layers (a quicker look; the table in the README is for
the full models), ``--theta X`` sets the wormhole runs' steadiness threshold (default 3%).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
from pathlib import Path

import numpy as np

from wormhole_replay.audit.compare import DRAW_DELAYS_NS, perturb_ops, widest
from wormhole_replay.engine.fastforward import FastForward
from wormhole_replay.errors import InputError
from wormhole_replay.replay import replay
from wormhole_replay.workload.generators import GPT_PRESETS, MOE_PRESETS, gpt_trace
from wormhole_replay.workload.trace import Trace

TOPOLOGY = "rail:servers=4,gpus_per_server=4"
# 16 GPUs: TP 4 inside a server, DP 4 across servers; large gradient buckets make long ring steps
WORKLOADS = {"gpt": ("gpt-13b", GPT_PRESETS["gpt-13b"], {}),
             "moe": ("mixtral-8x7b", MOE_PRESETS["mixtral-8x7b"], {"ep": 4})}  # name, shape, extra layout


def workload(name: str, layers: int | None = None):
    """The benchmark's iteration of ``name`` (its model cut to ``layers`` if given)."""
    model, shape, extra = WORKLOADS[name]
    if layers is not None:
        shape = dataclasses.replace(shape, layers=layers)
    return gpt_trace(shape, 16, tp=4, bucket_mb=800, name=model, **extra)


def compare(full, fast) -> dict:
    a, b = full.flows, fast.flows
    net = ~a["virtual"].to_numpy()
    err = np.abs(b["fct_ns"].to_numpy()[net] - a["fct_ns"].to_numpy()[net]) / a["fct_ns"].to_numpy()[net]
    it_a, it_b = full.iterations["duration_ns"].to_numpy(), fast.iterations["duration_ns"].to_numpy()
    return {
        "full_s": full.counters["wall_seconds"], "wormhole_s": fast.counters["wall_seconds"],
        "speedup": full.counters["wall_seconds"] / fast.counters["wall_seconds"],
        "events_avoided": 1 - fast.counters["events"] / full.counters["events"],
        "fct_mean": err.mean(), "fct_p99": np.percentile(err, 99), "fct_max": err.max(),
        "iteration": float(np.max(np.abs(it_b - it_a) / it_a)), "flows": int(net.sum()),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cc", default="hpcc", choices=["dcqcn", "hpcc"])
    ap.add_argument("--only", choices=sorted(WORKLOADS))
    ap.add_argument("--noise-floor", type=int, nargs="?", const=1, default=0, choices=range(0, 5), metavar="N",
                    help="also the full run with one compute op 1 ns longer (N draws: 1, 10, 100 ns, 1 us; "
                         "each statistic at its widest)")
    ap.add_argument("--layers", type=int, help="cut the models to this many layers")
    ap.add_argument("--theta", type=float, default=FastForward.theta, help="steadiness threshold of the wormhole runs")
    a = ap.parse_args()
    if a.layers is not None and a.layers < 1:
        raise InputError(f"--layers {a.layers}: give at least 1")
    if not 0.0 < a.theta < 1.0:
        raise InputError(f"--theta {a.theta}: must be in (0, 1)")
    # compile the kernels first so that neither mode pays for it
    replay(gpt_trace(GPT_PRESETS["gpt-13b"], 4, tp=4, name="warm-up"), TOPOLOGY, a.cc, mode="wormhole")
    tmp = tempfile.TemporaryDirectory()
    print(f"{'workload':16s} {'cc':6s} {'flows':>6s} {'full s':>8s} {'wormhole s':>10s} {'speedup':>8s} "
          f"{'events avoided':>14s} {'FCT err mean':>12s} {'p99':>8s} {'max':>8s} {'iter err':>8s}")
    ff = FastForward(theta=a.theta)
    for name in WORKLOADS:
        if a.only and name != a.only:
            continue
        trace = workload(name, a.layers)
        full = replay(trace, TOPOLOGY, a.cc, mode="full")
        db = str(Path(tmp.name) / f"{name}.sqlite")
        runs = {"steady": {"fast_forward": ff}, "+memo": {"fast_forward": ff, "memo_db": db}}
        if a.noise_floor:
            runs["floor"] = {"mode": "full"}
        for how, kw in runs.items():
            if how == "floor":  # each statistic at its widest over the draws, as audit's
                draws = [compare(full, replay(Trace(perturb_ops(trace.ops, d)[0], trace.meta), TOPOLOGY, a.cc, **kw))
                         for d in DRAW_DELAYS_NS[:a.noise_floor]]
                r = widest([{"floor": d} for d in draws])["floor"]
            else:
                r = compare(full, replay(trace, TOPOLOGY, a.cc, **{"mode": "wormhole", **kw}))
            speed = "-" if how == "floor" else f"{r['speedup']:.1f}x"  # a full run against a full run
            avoided = "-" if how == "floor" else f"{r['events_avoided'] * 100:.2f}%"
            print(f"{name + ' ' + how:16s} {a.cc:6s} {r['flows']:6d} {r['full_s']:8.1f} {r['wormhole_s']:10.1f} "
                  f"{speed:>8s} {avoided:>14s} {r['fct_mean'] * 100:11.3f}% "
                  f"{r['fct_p99'] * 100:7.3f}% {r['fct_max'] * 100:7.3f}% {r['iteration'] * 100:7.3f}%", flush=True)
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except InputError as e:  # bad input: one line, exit 2
        print(f"bench_wormhole: {e}", file=sys.stderr)
        sys.exit(2)
