#!/usr/bin/env python
"""The link monitor's cost: a reference run in full mode with and without ``--monitor`` (the
default interval), whole processes, alternating, in CPU time (user + system: steadier than wall
time on a shared machine), and the size of the ``links.parquet`` it writes.

    python tools/bench_monitor.py                   # S4_hpcc, 2 runs each
    python tools/bench_monitor.py S1_dcqcn --repeat 3
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_builds import RUNS, simulate_cpu_seconds  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run", nargs="?", default="S4_hpcc", help="a reference run (default S4_hpcc)")
    ap.add_argument("--repeat", type=int, default=2)
    a = ap.parse_args()
    folder = RUNS / a.run
    if not (folder / "config.txt").is_file():
        print(f"bench_monitor: no reference run {a.run} in {RUNS}", file=sys.stderr)
        return 2
    cpu = {"off": [], "on": []}
    with tempfile.TemporaryDirectory(prefix="bench-monitor-") as tmp:
        for rep in range(a.repeat):
            for kind in ("off", "on") if rep % 2 == 0 else ("on", "off"):
                extra = ("--monitor",) if kind == "on" else ()
                cpu[kind].append(simulate_cpu_seconds(folder, Path(tmp) / kind, *extra))
        size = (Path(tmp) / "on" / "links.parquet").stat().st_size
    print(f"{a.run}: CPU s without the monitor {', '.join(f'{x:.2f}' for x in cpu['off'])}; "
          f"with {', '.join(f'{x:.2f}' for x in cpu['on'])}; "
          f"overhead (fastest/fastest) {min(cpu['on']) / min(cpu['off']) - 1:+.2%}; links.parquet {size:,} B")
    return 0


if __name__ == "__main__":
    sys.exit(main())
