#!/usr/bin/env python
"""How long a 1024-GPU GPT iteration trace takes to generate, write and load (the Workloads
issue asks for under 5 s for generate + load on this machine kind).

    python tools/bench_workload.py [--model gpt-175b] [--gpus 1024 --tp 8 --pp 8 --microbatches 8]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from wormhole_replay.workload.generators import GPT_PRESETS, gpt_trace
from wormhole_replay.workload.trace import load_trace, save_trace


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="gpt-175b", choices=sorted(GPT_PRESETS))
    ap.add_argument("--gpus", type=int, default=1024)
    ap.add_argument("--tp", type=int, default=8)
    ap.add_argument("--pp", type=int, default=8)
    ap.add_argument("--microbatches", type=int, default=8)
    a = ap.parse_args()
    t0 = time.perf_counter()
    trace = gpt_trace(GPT_PRESETS[a.model], a.gpus, a.tp, a.pp, microbatches=a.microbatches)
    t1 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "trace.parquet"
        save_trace(trace, path)
        t2 = time.perf_counter()
        load_trace(path)
        t3 = time.perf_counter()
        size = path.stat().st_size
    print(f"{a.model} on {a.gpus} GPUs (tp {a.tp}, pp {a.pp}, {a.microbatches} micro-batches): {len(trace.ops):,} ops, "
          f"{size / 1e6:.1f} MB")
    print(f"generate {t1 - t0:.2f} s, write {t2 - t1:.2f} s, load {t3 - t2:.2f} s; generate + load {t1 - t0 + t3 - t2:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
