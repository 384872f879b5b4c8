#!/usr/bin/env python
"""How well the progress bar's time-left estimate predicts the end of a run, against a bar that
counts flows (the one before ``observe/progress.py``).

Replays the benchmark's GPT iteration (``tools/bench_wormhole.py``: GPT-13B, 16 GPUs, TP 4, DP 4,
800 MB buckets), records at every kernel slice the fraction of flows finished and of network bytes
delivered, and afterwards compares with the time that was really left:

* ``flows``: the estimate from the fraction f of flows finished, elapsed x (1 - f) / f, shown always
  (what a flow-counting bar says, before its smoothing);
* ``bytes``: ``observe.progress.Eta`` on the bytes delivered, shown only once stable.

For each: the share of slices at which an estimate was shown, and its error |estimate - actual
time left| as a fraction of the whole run, mean and max over the slices where it was shown, and
the mean in each quarter of the run.

    python tools/bench_progress.py [--mode full|wormhole] [--cc dcqcn|hpcc] [--layers N] [--only gpt|moe] [--save CSV]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_wormhole import TOPOLOGY, workload  # noqa: E402

from wormhole_replay.engine import layout as L  # noqa: E402
from wormhole_replay.observe.progress import ByteProgress, Eta  # noqa: E402
from wormhole_replay.replay import replay  # noqa: E402
from wormhole_replay.workload.expand import trace_to_flows  # noqa: E402
from wormhole_replay.topology import build_topology  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mode", choices=["full", "wormhole"], default="full")
    p.add_argument("--cc", choices=["dcqcn", "hpcc"], default="dcqcn")
    p.add_argument("--only", choices=["gpt", "moe"], default="gpt")
    p.add_argument("--layers", type=int, help="cut the model to N layers (a quicker run)")
    p.add_argument("--save", metavar="CSV", help="also write each slice's elapsed time, flows and bytes fractions")
    a = p.parse_args()
    trace = workload(a.only, a.layers)
    flows, _ = trace_to_flows(trace, build_topology(TOPOLOGY))
    counter = ByteProgress(flows, after=float("inf"))  # never draws: used for its byte count
    eta = Eta()
    records = []  # elapsed, flows fraction, bytes fraction, bytes estimate
    t0 = time.perf_counter()

    def record(state):
        elapsed = time.perf_counter() - t0
        f_flows = float((state.flows.table[:, L.FT_STATE] == 2).sum()) / len(flows)
        f_bytes = counter.done(state) / counter.total
        records.append((elapsed, f_flows, f_bytes, eta.update(elapsed, f_bytes)))

    replay(trace, TOPOLOGY, a.cc, mode=a.mode, on_slice=record)
    total = time.perf_counter() - t0
    if a.save:
        import pandas as pd

        pd.DataFrame(records, columns=["elapsed_s", "flows", "bytes", "eta_s"]).assign(total_s=total).to_csv(a.save, index=False)
    rec = [r for r in records if r[1] < 1.0]  # before the end
    left = np.array([total - r[0] for r in rec])
    flows_est = np.array([r[0] * (1 - r[1]) / r[1] if r[1] > 0 else np.nan for r in rec])
    bytes_est = np.array([np.nan if r[3] is None else r[3] for r in rec])
    print(f"{a.only} {a.mode} {a.cc}: {total:.1f} s, {len(rec)} slices before the end")
    quarter = np.minimum((np.array([r[0] for r in rec]) / total * 4).astype(int), 3)
    print("| estimate | shown at | error mean | error max | mean error per quarter of the run |")
    print("|---|---|---|---|---|")
    for name, est in (("flows: elapsed x (1-f)/f", flows_est), ("bytes, once stable", bytes_est)):
        shown = np.isfinite(est)
        err = np.abs(est - left) / total
        if not shown.any():
            print(f"| {name} | never | | | |")
            continue
        per = " / ".join(f"{np.mean(err[shown & (quarter == q)]):.1%}" if (shown & (quarter == q)).any() else "-"
                         for q in range(4))
        print(f"| {name} | {shown.mean():.0%} of slices | {np.mean(err[shown]):.1%} | {np.max(err[shown]):.1%} | {per} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
