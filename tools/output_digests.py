#!/usr/bin/env python
"""Digests of the engine's outputs on a fixed set of scenarios, to show that a change (a refactor,
a speed-up) leaves every result bit for bit as it was.

Each scenario's outputs (the flows table, PFC log, counters that describe the simulation, and the
per-iteration table for replays) are hashed; run this before and after a change and compare the
two listings (``--json`` writes them to a file; ``--against FILE`` compares and exits 1 on any
difference).  Scenarios, in full and in wormhole mode:

* every reference run in ``../shared/reference-runs`` (paths pinned, 64-bit sequence numbers),
  S4 only with ``--big``;
* the bundled GPT and MoE samples (2 iterations, both CCs);
* a 4-layer GPT-13B iteration with long ring steps (the ``bench_wormhole`` shape) in wormhole mode,
  where jumps are taken, with and without a memo database (both CCs).

    python tools/output_digests.py --json before.json          # on the old code
    python tools/output_digests.py --against before.json       # on the new code
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
from pandas.api.types import is_bool_dtype, is_numeric_dtype

REPO = Path(__file__).resolve().parents[1]
RUNS = REPO.parent / "shared" / "reference-runs"
# counters that describe the simulation (not wall times, not the options echoed back)
SIMULATED = ("events", "simulated_ns", "flows", "flows_completed", "drops", "pfc_pauses", "ecn_marks", "timeouts",
             "peak_packets")
SIMULATED_WORMHOLE = ("fast_forwards", "skip_backs", "skipped_ns", "events_skipped_estimate", "memo_hits",
                      "memo_inserts", "memo_jumps")


def _digest(frames: list, counters: dict) -> str:
    h = hashlib.sha256()
    for df in frames:
        if df is None:
            continue
        df = df.drop(columns=[c for c in df.columns if c in ("wall_seconds",)], errors="ignore")
        h.update(",".join(map(str, df.columns)).encode())
        for c in df.columns:
            if not (is_numeric_dtype(df[c]) or is_bool_dtype(df[c])):  # strings, lists: their text
                # (an object array's bytes would be pointers)
                h.update("\x00".join(map(str, df[c])).encode())
            else:
                h.update(np.ascontiguousarray(df[c].to_numpy()).tobytes())

    kept = {k: counters.get(k) for k in SIMULATED}
    wh = counters.get("wormhole") or {}
    kept["wormhole"] = {k: wh.get(k) for k in SIMULATED_WORMHOLE if k in wh}
    h.update(json.dumps(kept, sort_keys=True, default=str).encode())
    return h.hexdigest()[:16]


def scenarios(big: bool):
    from wormhole_replay.api import execute, prepare_config_run
    from wormhole_replay.api import fast_forward_for
    from wormhole_replay.replay import replay
    from wormhole_replay.workload.generators import GPT_PRESETS, gpt_trace

    folders = sorted(d for d in RUNS.iterdir() if (d / "config.txt").is_file()) if RUNS.is_dir() else []
    for d in folders:
        if d.name.startswith("S4") and not big:
            continue
        for mode in ("full", "wormhole"):
            def run(d=d, mode=mode):
                r = prepare_config_run(d / "config.txt", paths=d / "paths.txt", seq_num_bytes=8)
                r.fast_forward = fast_forward_for(mode)
                res = execute(r)
                return [res.flows, res.pfc], res.counters
            yield f"{d.name} {mode}", run
    for sample in ("gpt", "moe"):
        for cc in ("dcqcn", "hpcc"):
            for mode in ("full", "wormhole"):
                def run(sample=sample, cc=cc, mode=mode):
                    r = replay(str(REPO / "traces" / f"{sample}-16gpu.trace.parquet"), "rail:servers=4,gpus_per_server=4",
                               cc, iterations=2, mode=mode)
                    return [r.flows, r.pfc, r.iterations], r.counters
                yield f"{sample}-16gpu {cc} {mode}", run
    shape = dataclasses.replace(GPT_PRESETS["gpt-13b"], layers=4)
    trace = gpt_trace(shape, 16, tp=4, bucket_mb=800, name="gpt-13b")
    for cc in ("dcqcn", "hpcc"):
        for memo in (False, True):
            def run(cc=cc, memo=memo):
                with tempfile.TemporaryDirectory() as tmp:
                    r = replay(trace, "rail:servers=4,gpus_per_server=4", cc, mode="wormhole",
                               memo_db=str(Path(tmp) / "m.sqlite") if memo else None, journal=True)
                return [r.flows, r.iterations, r.jumps, r.memo_hits], r.counters
            yield f"gpt-13b-4layers {cc} wormhole{' +memo' if memo else ''}", run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", type=Path, help="write the digests here")
    ap.add_argument("--against", type=Path, help="compare with digests written earlier; exit 1 on a difference")
    ap.add_argument("--big", action="store_true", help="include S4 (two minutes more)")
    ap.add_argument("--only", help="run only scenarios whose name contains this")
    a = ap.parse_args()
    before = None
    if a.against is not None:
        try:
            before = json.loads(a.against.read_text())
        except (OSError, ValueError) as e:
            print(f"output_digests: {a.against}: {e}", file=sys.stderr)
            return 2
    out, differ = {}, []
    for name, run in scenarios(a.big):
        if a.only and a.only not in name:
            continue
        frames, counters = run()
        out[name] = _digest(frames, counters)
        mark = ""
        if before is not None:
            mark = "same" if before.get(name) == out[name] else ("DIFFERS" if name in before else "new")
            if mark == "DIFFERS":
                differ.append(name)
        print(f"{name:<40} {out[name]} {mark}", flush=True)
    if a.json:
        a.json.write_text(json.dumps(out, indent=1) + "\n")
    if differ:
        print(f"{len(differ)} scenario(s) differ: {', '.join(differ)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
