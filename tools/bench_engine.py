#!/usr/bin/env python
"""Engine speed and fidelity against the reference ns-3 simulator, on its own scenarios.

For each reference run (``../shared/reference-runs/S*``) this runs ``wormhole-replay simulate``
in a fresh process, twice: with every path pinned (``--paths paths.txt``) and with ECMP hashing
over the reference's next-hop order (``--routing routing.txt``), 64-bit sequence numbers; the
Numba cache is warmed first, so compile time is not counted.  Beside the reference's figures
from its ``time.txt`` it prints whole-process wall seconds, executed events, events per second,
peak RSS, the speed ratio, per-flow FCT error against ``fct.original-hpcc.txt`` (a flow missing
from our output counts as 100% off, and is counted), and whether ``fct.txt`` and ``pfc.txt`` are
byte-identical to the reference's.  The engine runs in full (every packet: both files must stay
identical); ``--mode wormhole`` measures wormhole mode against the reference instead, and
``--fluid`` wormhole mode with fluid flows (``--ff-fluid``).

    python tools/bench_engine.py                 # all runs
    python tools/bench_engine.py S1 S2           # a subset (prefix match)
    python tools/bench_engine.py --ways paths    # pinned paths only
    python tools/bench_engine.py --mode wormhole
    python tools/bench_engine.py --mode wormhole --fluid --ways paths
    python tools/bench_engine.py --json out.json
"""

from __future__ import annotations

import argparse
import json
import re
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DEFAULT_RUNS = REPO.parent / "shared" / "reference-runs"


def reference_figures(folder: Path) -> dict:
    text = (folder / "time.txt").read_text()
    events = int(re.search(r"events (\d+)", text).group(1))
    wall = float(re.search(r"median_wall_s ([\d.]+)", text).group(1))
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1))
    return {"wall_s": wall, "events": events, "rss_mb": rss_kb / 1024}


def fct_errors(ref_path: Path, ours_path: Path) -> tuple[float, float, float, int]:
    """Per-flow FCT error mean and max, mean-FCT error, flows missing from ours.  A missing flow
    counts as 100% off (it never completed), so a run that lost flows cannot print 0.00%."""
    def load(p):
        return {tuple(t[:4]): int(t[6]) for t in (ln.split() for ln in p.read_text().splitlines()) if len(t) == 8}

    ref, ours = load(ref_path), load(ours_path)
    keys = sorted(ref)
    r = np.array([ref[k] for k in keys], float)
    missing = sum(k not in ours for k in keys)
    e = np.array([abs(ours[k] - ref[k]) / ref[k] if k in ours else 1.0 for k in keys])
    o = np.array([ours[k] for k in keys if k in ours], float)
    mean_fct = float(o.mean() / r.mean() - 1) if len(o) and not missing else float("nan")
    return float(e.mean()), float(e.max()), mean_fct, missing


def run_once(folder: Path, out: Path, mode: str = "full", way: str = "paths", fluid: bool = False) -> dict:
    """One ``simulate`` of a reference run in a fresh process; ``way`` is ``paths`` (pinned) or
    ``routing`` (ECMP over the reference's next-hop order)."""
    cmd = [sys.executable, "-m", "wormhole_replay", "simulate", str(folder / "config.txt"), f"--{way}",
           str(folder / f"{way}.txt"), "--seq-num-bytes", "8", "--mode", mode, "--out", str(out), "--json", "--quiet"]
    if mode == "wormhole":
        cmd.append("--no-memo")
        if fluid:
            cmd.append("--ff-fluid")
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        p = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, usage = os.wait4(p.pid, 0)  # this child's own peak RSS
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if p.returncode != 0:
        raise SystemExit(f"{folder.name}: simulate failed: {stderr.strip()}")
    summary = json.loads(stdout)
    summary["process_wall_s"] = wall
    summary["peak_rss_mb"] = usage.ru_maxrss / 1024
    return summary


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("only", nargs="*", help="run name prefixes (default: all)")
    ap.add_argument("--runs", type=Path, default=DEFAULT_RUNS, help="reference-runs folder")
    ap.add_argument("--mode", choices=["full", "wormhole"], default="full", help="engine mode (default: full)")
    ap.add_argument("--fluid", action="store_true", help="wormhole mode with fluid flows (--ff-fluid)")
    ap.add_argument("--ways", nargs="+", choices=["paths", "routing"], default=["paths", "routing"],
                    help="how paths are chosen: pinned (paths.txt), ECMP over routing.txt (default: both)")
    ap.add_argument("--json", type=Path, help="also write the rows as JSON")
    args = ap.parse_args()
    if args.fluid and args.mode != "wormhole":
        ap.error("--fluid needs --mode wormhole")
    if not args.runs.is_dir():
        print(f"bench_engine: {args.runs}: no reference runs here", file=sys.stderr)
        return 2
    folders = sorted(d for d in args.runs.iterdir() if (d / "config.txt").is_file()
                     and (not args.only or any(d.name.startswith(o) for o in args.only)))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        # warm the Numba cache for both CC modes on the smallest runs
        for warm in [d for d in folders if d.name.startswith("S1")] or folders[:1]:
            run_once(warm, Path(tmp) / "warm", args.mode, fluid=args.fluid)
        hdr = (f"{'run':<10} {'way':<7} {'wall s':>8} {'ref s':>7} {'speedup':>7} {'events':>12} {'ref events':>12} "
               f"{'Mev/s':>6} {'RSS MB':>7} {'ref MB':>7} {'FCT err mean':>12} {'max':>7} {'mean FCT':>8} "
               f"{'missing':>7} {'fct.txt':>9} {'pfc.txt':>9}")
        print(hdr)
        print("-" * len(hdr))
        for folder in folders:
            ref = reference_figures(folder)
            for way in args.ways:
                out = Path(tmp) / f"{folder.name}-{way}"
                s = run_once(folder, out, args.mode, way, args.fluid)
                ours_fct = Path(s["outputs"]["fct"])
                mean_e, max_e, mean_fct, missing = fct_errors(folder / "fct.original-hpcc.txt", ours_fct)
                same_fct = ours_fct.read_bytes() == (folder / "fct.original-hpcc.txt").read_bytes()
                same_pfc = Path(s["outputs"]["pfc"]).read_bytes() == (folder / "pfc.txt").read_bytes()
                row = {"run": folder.name, "way": way, "wall_s": s["process_wall_s"], "kernel_s": s["wall_seconds"],
                       "events": s["events"], "events_per_s": s["events"] / s["wall_seconds"], "rss_mb": s["peak_rss_mb"],
                       "ref": ref, "speedup": ref["wall_s"] / s["process_wall_s"], "fct_err_mean": mean_e,
                       "fct_err_max": max_e, "mean_fct_err": mean_fct, "missing_flows": missing,
                       "fct_identical": same_fct, "pfc_identical": same_pfc}
                rows.append(row)
                print(f"{folder.name:<10} {way:<7} {row['wall_s']:>8.2f} {ref['wall_s']:>7.2f} {row['speedup']:>6.1f}x "
                      f"{row['events']:>12,} {ref['events']:>12,} {row['events_per_s'] / 1e6:>6.2f} {row['rss_mb']:>7.0f} "
                      f"{ref['rss_mb']:>7.0f} {mean_e * 100:>11.2f}% {max_e * 100:>6.2f}% {mean_fct * 100:>+7.2f}% "
                      f"{missing:>7} {'identical' if same_fct else 'DIFFERS':>9} {'identical' if same_pfc else 'DIFFERS':>9}",
                      flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
