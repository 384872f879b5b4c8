#!/usr/bin/env python
"""A newcomer beside flows already sharing a link: the share HPCC lets it keep, in full simulation,
and the time the recurring flows' timers give it (``engine/wormhole/timers.py: yield_to``).

Per case, ``n`` flows three times the newcomer's size (so that they outlive it) and the newcomer
``--offset`` us after them, all into one host, every source on a leaf or pod of its own: the
receiver's downlink is their bottleneck, and ECMP decides whether the newcomer also meets some of
them on a link before it.  Printed: the newcomer's time in full simulation and its share of the
link's target rate (payload bytes over its time, against 95% of 100 Gb/s), and with ``--timers``
its time when the others are paced timers of their time alone (a recurring class's copies taken
from the memo) and its error against full.

Fabrics (``--fabric``): ``leaf-spine`` (2 spines, 8.4 us base RTT: the newcomer meets one to three
of the others again on a spine link), ``leaf-spine-12us`` and ``leaf-spine-16us`` (the same with
1.5 and 2 us links), ``leaf-spine-8`` (8 spines: it meets at most one), ``fat-tree`` and
``fat-tree-b`` (k=8, sources in other pods, 12.6 us, two sets of pods), ``fat-tree-pod`` (k=8,
sources in the receiver's pod, 8.4 us; two others at most).  Measured 2026-12-06 (DEVELOPERS.md,
"What sets how long a newcomer keeps its lead"): the lead does not follow the RTT; it fades where the
newcomer meets other flows before the shared link (``timers.newcomer_share``).

    python tools/bench_newcomer.py                        # every fabric, full simulation only
    python tools/bench_newcomer.py --fabric fat-tree --timers
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import pandas as pd

from wormhole_replay.api import prepare_direct_run, simulate
from wormhole_replay.engine.fastforward import FastForward
from wormhole_replay.engine.memo_view import LOG_ON
from wormhole_replay.engine.simulate import simulate as simulate_engine
from wormhole_replay.memo.recurring import GROUP
from wormhole_replay.topology.builders import build_topology
from wormhole_replay.workload.flowfile import FlowSet

MB = 1_000_000
TARGET_GBPS = 0.95 * 100  # HPCC's target utilisation of a 100 Gb/s link
FABRICS = {  # topology, receiver, sources (host indices): the newcomer's is the (n + 1)-th
    "leaf-spine": ("leaf-spine:hosts=24,leaves=6,spines=2", 4, [0, 8, 12, 16, 20]),
    "leaf-spine-12us": ("leaf-spine:hosts=24,leaves=6,spines=2,delay=1500ns", 4, [0, 8, 12, 16, 20]),
    "leaf-spine-16us": ("leaf-spine:hosts=24,leaves=6,spines=2,delay=2000ns", 4, [0, 8, 12, 16, 20]),
    "leaf-spine-8": ("leaf-spine:hosts=24,leaves=6,spines=8", 4, [0, 8, 12, 16, 20]),
    "fat-tree": ("fat-tree:k=8", 0, [16, 32, 48, 64, 80]),
    "fat-tree-b": ("fat-tree:k=8", 0, [100, 36, 70, 117, 52]),
    "fat-tree-pod": ("fat-tree:k=8", 0, [4, 8, 12]),
}
WINDOWS = FastForward(window_ns=100_000, samples=16, first_jump_ns=5_000_000)  # the tests' short windows


class _PacedOthers:
    """A memo session that makes the first ``n`` flows paced timers of one time alone (as a trusted
    recurring class's copies are) and the newcomer the memo's own packet flow (a class's sampled
    copy): the timers yield it a newcomer's share."""

    lookups = False

    def __init__(self, n, rx_ns, fct_ns):
        self.n, self.rx_ns, self.fct_ns = n, rx_ns, fct_ns

    def log_bits(self):
        return LOG_ON

    def start(self, engine):
        engine.make_timers(list(range(self.n)), [self.rx_ns] * self.n, [self.fct_ns] * self.n, group=GROUP, gain=1.0)
        engine.mark_memo_flows([self.n], group=GROUP)

    def handle(self, engine):
        engine.take_records()

    def finish(self, engine):
        engine.settle_timers()


def _received(flows: pd.DataFrame, i: int) -> int:
    return int(flows["received_ns"].iloc[i] - flows["start_ns"].iloc[i])


def case(fabric: str, n: int, mb: float, offset_us: int, timers: bool) -> dict:
    """One newcomer of ``mb`` MB joining ``n`` flows ``offset_us`` after them on ``fabric``."""
    spec, receiver, sources = FABRICS[fabric]
    hosts = np.asarray(build_topology(spec).hosts)
    size = int(mb * MB)
    src = [hosts[s] for s in sources[:n + 1]]
    flows = FlowSet.from_columns(src, [hosts[receiver]] * (n + 1), [3 * size] * n + [size], [0] * n + [offset_us * 1000])
    full = _received(simulate(spec, flows, cc="hpcc", mode="full").flows, n)
    row = {"fabric": fabric, "flows": n, "MB": mb, "offset_us": offset_us, "full_us": full / 1000,
           "share": size * 8 / full / TARGET_GBPS}
    if timers:
        alone = simulate(spec, FlowSet.from_columns([src[0]], [hosts[receiver]], [3 * size], [0]), cc="hpcc", mode="full").flows
        run = prepare_direct_run(spec, flows, "hpcc", out=None)
        session = _PacedOthers(n, _received(alone, 0), int(alone["fct_ns"].iloc[0]))
        got = _received(simulate_engine(run.topo, run.flows, run.cfg, fast_forward=WINDOWS, memo=lambda plan: session).flows, n)
        row.update(timers_us=got / 1000, error=got / full - 1)
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fabric", nargs="+", choices=list(FABRICS), default=list(FABRICS))
    ap.add_argument("--flows", nargs="+", type=int, choices=[1, 2, 3, 4], default=[2, 3, 4], help="flows it joins")
    ap.add_argument("--mb", nargs="+", type=float, default=[1.0, 3.3, 8.0], help="the newcomer's size")
    ap.add_argument("--offset", nargs="+", type=int, default=[50, 300], help="us after the others")
    ap.add_argument("--timers", action="store_true", help="also the others as paced timers (the memo's)")
    a = ap.parse_args(argv)
    rows = []
    for fabric in a.fabric:
        most = len(FABRICS[fabric][2]) - 1
        for n in [n for n in a.flows if n <= most]:
            for mb in a.mb:
                for offset in a.offset:
                    r = case(fabric, n, mb, offset, a.timers)
                    rows.append(r)
                    line = (f"{fabric:16s} beside {n}  {mb:4.1f} MB  +{offset:3d} us  full {r['full_us']:8.1f} us  "
                            f"share {r['share']:.3f}")
                    if a.timers:
                        line += f"  timers {r['timers_us']:8.1f} us  {r['error']:+.1%}"
                    print(line, flush=True)
    table = pd.DataFrame(rows)
    if a.timers and len(table):
        print(table.groupby("fabric", sort=False)["error"].agg(lambda e: f"|error| mean {e.abs().mean():.1%}, "
                                                                         f"max {e.abs().max():.1%}").to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
