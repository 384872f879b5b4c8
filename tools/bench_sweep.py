#!/usr/bin/env python
"""Sweep throughput: 8 points of the bundled GPT sample (``traces/gpt-16gpu.trace.parquet`` on
``rail:servers=4,gpus_per_server=4``, 2 iterations) on 1 and on 2 local worker processes, points per
hour side by side.

The points are the sample under DCQCN with 8 ECN seeds (``RNG_SEED`` 1..8): 8 distinct runs of
the same cost. Each worker count gets a fresh folder and memo database, and its workers load the
engine's compiled kernels (Numba's cache, once per process) with a tiny simulation before the clock
starts, so the figure is the sweep's rate once running, not process start-up. The rate is points
finished over the time from the first submission to the last point done. Beside it: the mean wall
time of one point in its worker, and how many points ran at once on average (their wall times summed
over the sweep's): with 2 workers on 2 free cores, about 2 at once at the 1-worker time per point.
Goal (issue 18): 2 workers give at least 1.8x the points per hour of 1 (this machine has 2 cores).

    python tools/bench_sweep.py [--points 8] [--workers 1,2] [--cc dcqcn] [--keep DIR]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import pandas as pd

from wormhole_replay.errors import InputError

REPO = Path(__file__).resolve().parents[1]
TRACE = REPO / "traces" / "gpt-16gpu.trace.parquet"
TOPOLOGY = "rail:servers=4,gpus_per_server=4"


def _warm() -> None:
    """Runs in each worker: load the engine's kernels (a 100 kB flow on a 2-host network)."""
    from wormhole_replay import api
    from wormhole_replay.workload.flowfile import FlowSet

    api.simulate("leaf-spine:hosts=2,leaves=1,spines=1", FlowSet.from_columns([0], [1], [100_000], [0]), "dcqcn")


def _workers(text: str) -> list[int]:
    try:
        counts = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected worker counts like 1,2, not {text!r}") from None
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"worker counts must be >= 1, not {text!r}")
    return counts


def measure(spec_path: Path, out: Path, workers: int) -> dict:
    """One sweep of the spec on ``workers`` fresh local worker processes, warmed up first."""
    from wormhole_replay.sweep.points import resolve
    from wormhole_replay.sweep.run import open_client, run_sweep
    from wormhole_replay.sweep.spec import load_spec

    spec = load_spec(spec_path)
    points = resolve(spec)
    with open_client(workers=workers) as (client, _):
        client.run(_warm)
        summary = run_sweep(spec, points, out, client, memo_db=str(out / "memo.sqlite"), progress=False)
    if summary["failed"]:
        raise SystemExit(f"bench_sweep: {summary['failed']} point(s) failed: {summary['failed_points'][0]['error']}")
    return summary


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--points", type=int, default=8, help="points (ECN seeds) per sweep")
    ap.add_argument("--workers", type=_workers, default=[1, 2], metavar="N,M", help="worker counts to compare (1,2)")
    ap.add_argument("--cc", default="dcqcn", choices=["dcqcn", "hpcc", "dctcp"])
    ap.add_argument("--keep", metavar="DIR", help="keep the sweeps' folders in DIR (default: a temporary folder)")
    a = ap.parse_args()
    if a.points < 1:
        raise InputError(f"--points {a.points}: give at least 1")
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as tmp:
        root = Path(a.keep or tmp)
        root.mkdir(parents=True, exist_ok=True)
        spec = root / "sweep.toml"
        spec.write_text(f'trace = "{TRACE}"\ntopology = "{TOPOLOGY}"\ncc = "{a.cc}"\n\n'
                        f"[grid]\nRNG_SEED = {list(range(1, a.points + 1))}\n")
        rows = []
        for n in a.workers:
            s = measure(spec, root / f"workers-{n}", n)
            point_walls = pd.read_parquet(root / f"workers-{n}" / "sweep.parquet")["wall_seconds"]
            rows.append((n, s["ok"], s["wall_seconds"], s["points_per_hour"], point_walls.mean(),
                         point_walls.sum() / s["wall_seconds"]))
            print(f"  {n} worker(s): {s['ok']} points in {s['wall_seconds']:.1f} s", file=sys.stderr, flush=True)
    base = rows[0][3]
    print(f"{a.points} points of {TRACE.name} on {TOPOLOGY}, {a.cc}")
    print(f"{'workers':>7} {'points':>6} {'wall (s)':>9} {'points/hour':>12} {'vs ' + str(rows[0][0]) + ' worker(s)':>16} "
          f"{'s per point':>12} {'points at once':>15}")
    for n, ok, wall, rate, per_point, at_once in rows:
        print(f"{n:>7} {ok:>6} {wall:>9.1f} {rate:>12.0f} {rate / base:>15.2f}x {per_point:>12.1f} {at_once:>15.2f}")
    return 0


if __name__ == "__main__":  # the workers are spawned processes: they must not run this again
    try:
        sys.exit(main())
    except InputError as e:
        print(f"bench_sweep: {e}", file=sys.stderr)
        sys.exit(2)
