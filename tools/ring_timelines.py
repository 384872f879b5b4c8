#!/usr/bin/env python
"""Per ring and iteration, how far a run's collectives and ranks' ends are from a full run's.

An iteration's duration is read off its first rank to start and its last to end, so a run whose
rings are each right on average can still be off by their spread: one ring fast and another slow
in every iteration moves every duration (``audit.compare.ring_times``).  This prints, per
iteration, the spread over the rings of their collectives' time error (signed: the mean of its
magnitude, the fastest and the slowest ring) and of their ranks' ends; with ``--floor``, the same
for a second full run of the trace (one op 1 ns longer, ``audit --noise-floor``'s draw) beside it:
the fabric's own spread.  ``--table`` adds the rings' errors, iteration by ring.

    wormhole-replay replay TRACE --topology T --cc hpcc --mode full --out out/full
    wormhole-replay replay TRACE --topology T --cc hpcc --memo-recurring 1.0 --memo-db m.sqlite --out out/mech
    python tools/ring_timelines.py out/full out/mech [--floor out/full-1ns] [--table]

Each folder is a replay's output (its ``flows.parquet``).  Measured (2026-12-07, the 10-layer
128-GPU DDP fat-tree over 4 iterations, DEVELOPERS.md "A ring's draw, frozen"): the memo's recurring
flows put stage 0's rings' all-reduces -7.7% .. +6.6% off full in every iteration, the same ring
fastest in all four, where the fabric's own 1-ns draw moves them -3.4% .. +3.6%, another ring each time.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from wormhole_replay.audit.compare import ring_times


def _flows(folder: Path) -> pd.DataFrame:
    path = folder / "flows.parquet"
    if not path.is_file():
        raise FileNotFoundError(f"ring_timelines: no flows.parquet in {folder} (a replay's --out folder)")
    return pd.read_parquet(path)


def spread(times: pd.DataFrame) -> pd.DataFrame:
    """Per iteration: the rings' collectives' error (mean magnitude, least, most) and their ends' shift
    (least, most), in percent."""
    g = times.groupby("iteration")
    return pd.DataFrame({"coll |err|": g["coll_error"].apply(lambda e: e.abs().mean()), "coll min": g["coll_error"].min(),
                         "coll max": g["coll_error"].max(), "end min": g["end_shift"].min(),
                         "end max": g["end_shift"].max()}) * 100


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("full", type=Path, help="the full run's output folder")
    ap.add_argument("other", type=Path, help="the run to compare with it")
    ap.add_argument("--floor", type=Path, help="a second full run (a noise draw), shown beside")
    ap.add_argument("--table", action="store_true", help="also each ring's collectives' error, iteration by ring")
    a = ap.parse_args()
    try:
        full = _flows(a.full)
        runs = {"run": ring_times(full, _flows(a.other))}
        if a.floor:
            runs["floor"] = ring_times(full, _flows(a.floor))
    except FileNotFoundError as e:
        print(e, file=sys.stderr)
        return 2
    if not len(runs["run"]):
        print("ring_timelines: the flows have no ranks (a flow file): no rings to compare", file=sys.stderr)
        return 2
    print("per iteration, over the rings, % of full (collectives' time: signed error; ends: shift of the ranks' "
          "mean end, of the iteration):")
    print(pd.concat({k: spread(t) for k, t in runs.items()}, axis=1).round(2).to_string())
    if a.table:
        for name, t in runs.items():
            print(f"\n{name}: each ring's collectives' time error, % (rings named by their lowest rank)")
            print((t.pivot_table(index="iteration", columns="ring", values="coll_error") * 100).round(2).to_string())
    return 0


if __name__ == "__main__":
    sys.exit(main())
