#!/usr/bin/env python
"""How often a partition's state recurs across iterations: the ceiling of an exact memo.

Replays a trace for N iterations in wormhole mode (on the bundled samples no jump is taken, so the
run is the full simulation) and, at every change of a partition's flows, records three keys of the
partition's state, each a sorted multiset over its flows (so two isomorphic states have equal keys;
equal keys are necessary for a hit that reproduces the simulation exactly, not sufficient):

* ``bytes``: each flow's bytes left to acknowledge and bytes in flight;
* ``cc``: that and the flow's CC state (``engine.memo_view``'s ``CC_RATES`` and ``CC_COUNTERS``, exact);
* ``exact``: that and the queue of every port of the partition.

Prints per iteration the partition changes and the fraction whose key was seen at an earlier change
(of any iteration).  A transient can only be taken from the memo without changing what the full
simulation would do when its start recurs exactly; everything else is an approximation whose error
a DAG workload then amplifies (see ``bench_memo.py``'s noise floor).

    python tools/bench_recurrence.py [--trace traces/gpt-16gpu.trace.parquet] [--cc hpcc] [--iterations 4]
"""

from __future__ import annotations

import argparse
import collections
import sys

from wormhole_replay.api import prepare_direct_run
from wormhole_replay.engine import memo_view as V
from wormhole_replay.engine.fastforward import FastForward
from wormhole_replay.engine.simulate import simulate
from wormhole_replay.errors import InputError
from wormhole_replay.memo.session import MemoSession
from wormhole_replay.workload.expand import trace_to_flows
from wormhole_replay.workload.trace import load_trace

TOPOLOGY = "rail:servers=4,gpus_per_server=4"
KEYS = ("bytes", "cc", "exact")


class Recurrence(MemoSession):
    """A memo session that looks nothing up: it keys every partition change and counts repeats."""

    def __init__(self, iteration_of, plan):
        ff = plan.fast_forward
        super().__init__("", [], ff.interval_ns, ff.samples, ff.short_samples, lookups=False)
        self.iteration_of = iteration_of
        self.seen = {k: set() for k in KEYS}
        self.tally = collections.defaultdict(collections.Counter)

    def log_bits(self) -> int:
        return V.LOG_ON

    def handle(self, engine: V.EngineView) -> None:
        n_cc = len(V.CC_RATES) + len(V.CC_COUNTERS)
        for kind, k, gen, _t in engine.take_records():
            if kind != V.CHANGED or not engine.is_live(k) or engine.generation(k) != gen:
                continue  # not a change, or the partition changed again since
            flows = engine.flows_of(k)
            una = engine.acked(flows)
            left = tuple(sorted(zip((engine.sizes(flows) - una).tolist(), (engine.sent(flows) - una).tolist())))
            cc = tuple(sorted(tuple(row) for row in engine.cc_state(flows)[:, :n_cc].tolist()))
            queues = tuple(sorted(engine.queue_bytes(p) for p in engine.ports_of(k)))
            keys = {"bytes": left, "cc": (left, cc), "exact": (left, cc, queues)}
            count = self.tally[int(self.iteration_of[min(flows)])]
            count["changes"] += 1
            for name, key in keys.items():
                count[name] += key in self.seen[name]
                self.seen[name].add(key)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", default="traces/gpt-16gpu.trace.parquet")
    ap.add_argument("--cc", default="hpcc", choices=["dcqcn", "hpcc", "dctcp"])
    ap.add_argument("--iterations", type=int, default=4)
    a = ap.parse_args()
    run = prepare_direct_run(TOPOLOGY, None, a.cc, out=None)
    flows, info = trace_to_flows(load_trace(a.trace), run.topo, a.iterations)
    iteration_of = info.sort_values("flow_id")["iteration"].to_numpy()
    sessions = []

    def memo(plan):
        sessions.append(Recurrence(iteration_of, plan))
        return sessions[-1]

    r = simulate(run.topo, flows, run.cfg, routes=run.routes, fast_forward=FastForward(), memo=memo)
    print(f"{a.trace}, {a.cc}, {a.iterations} iterations: {r.counters['wormhole']['fast_forwards']} jumps; "
          "partition changes whose state was seen before, by key")
    print(f"{'iteration':>9s} {'changes':>8s} " + " ".join(f"{k:>7s}" for k in KEYS))
    for it, c in sorted(sessions[0].tally.items()):
        print(f"{it:9d} {c['changes']:8d} " + " ".join(f"{c[k] / c['changes']:7.1%}" for k in KEYS))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except InputError as e:  # bad input: one line, exit 2
        print(f"bench_recurrence: {e}", file=sys.stderr)
        sys.exit(2)
