#!/usr/bin/env python
"""The memo database across iterations and runs, in one process: full, cold and warm side by side.

Replays a trace for N iterations four times (after a warm-up that compiles the kernels): in full,
in wormhole mode without a memo, on an empty memo database (cold), and again on the database the
cold run filled (warm).  Prints per run the wall time, events, memo hits / lookups and FCT / iteration-time error
against full; per iteration of each wormhole run its wall time and its memo hit rate (hits over
transients looked up), and its duration, mean-FCT and per-flow FCT errors against full's same
iteration (beside the noise draw's); and the warm run's largest difference from the cold one.

    python tools/bench_memo.py [--trace traces/gpt-16gpu.trace.parquet] [--cc dcqcn] [--iterations 4]
                               [--shared-prefixes] [--episodes] [--recurring [SPREAD]] [--db memo.sqlite]
                               [--cache out/bench-memo] [--no-plain] [--no-floor] [--draws K]

At 128 GPUs a full run takes 15-75 minutes here: ``--cache DIR`` keeps the full run and its noise
draw (flows, iterations, wall time and events) in a folder named by a digest of their inputs (the
trace file's bytes, topology, CC, iterations, package version), and a later call reuses them; its
speedups then compare a cached wall time with a fresh one, fair only on an equally loaded machine.
Delete the folder after a change to the full engine.  ``--no-plain`` skips the wormhole run without
a memo (as long as full where flows contend).  For example, the 4-iteration DDP GPT-13B of issue 15
on a fat-tree, its trace made by ``wormhole-replay gen gpt --model gpt-13b --gpus 128 --tp 8 --pp 2
--microbatches 4 --iterations 4 -o ddp4.parquet``:

    python tools/bench_memo.py --trace ddp4.parquet --topology fat-tree:k=8,gpus_per_server=8 --cc hpcc \
        --iterations 4 --recurring 1.0 --cache out/bench-memo --no-plain

``--episodes`` lets the memo take whole iterations (``replay --memo-episodes``, README "Episodes");
``--recurring`` takes flows from their earlier copies (``replay --memo-recurring``, README "Recurring
flows").

The noise floor printed last is the full simulation against itself with one compute op 1 ns
longer in every iteration (the first one something depends on: ``audit.compare.perturb_ops``, as
``audit --noise-floor``): on DAG workloads contention order is chaotic, and per-flow errors below it mean
nothing.  ``--no-floor`` skips the draw (another full run) where it is not kept yet.

``--draws K`` also runs the cold replay (a new database) on the trace with the same op 1 ns, 10 ns,
100 ns, 1 us longer (the first K of ``compare.DRAW_DELAYS_NS``), each against the unperturbed full
run: other draws of the *mechanism*.  On the 128-GPU DDP fat-tree a change to the memo moved one
draw's iteration 2 by a few points and another's the other way (DEVELOPERS.md, "Newcomers"): keep a change
only where the draws agree.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

from wormhole_replay.audit.compare import DRAW_DELAYS_NS, delay_text, perturb_ops, rank_ends
from wormhole_replay.options import fraction
from wormhole_replay.replay import replay
from wormhole_replay.workload.trace import Trace, load_trace

SAMPLE = str(Path(__file__).resolve().parents[1] / "traces" / "gpt-16gpu.trace.parquet")  # the shipped sample
TOPOLOGY = "rail:servers=4,gpus_per_server=4"


def _flow_errors(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float]:
    """FCTs ``b`` against ``a`` (the same flows): per-flow error mean and p99, and the mean FCT's error."""
    if not len(a):
        return 0.0, 0.0, 0.0
    e = np.abs(b - a) / a
    return float(e.mean()), float(np.percentile(e, 99)), float(b.mean() / a.mean() - 1)


def errors(base, other) -> tuple[float, float, float, float]:
    """Per-flow FCT error mean and p99 over network flows, the largest iteration-time error, and the
    mean FCT's error."""
    net = ~base.flows["virtual"].to_numpy()
    m, p99, mean_fct = _flow_errors(base.flows["fct_ns"].to_numpy(float)[net], other.flows["fct_ns"].to_numpy(float)[net])
    ia, ib = base.iterations["duration_ns"].to_numpy(float), other.iterations["duration_ns"].to_numpy(float)
    return m, p99, float(np.max(np.abs(ib - ia) / ia)), mean_fct


def by_iteration(base, other) -> dict:
    """Per iteration index: ``other``'s duration error against ``base``, its network flows' mean-FCT
    error, per-flow FCT error mean and p99 (a long replay can be right in all and wrong in one), and
    how far its worst rank's timeline ended from ``base``'s (``compare.rank_ends``: a fraction of
    the iteration; the next iteration starts from the first stage-0 rank done)."""
    net = ~base.flows["virtual"].to_numpy()
    it = base.flows["iteration"].to_numpy()
    a, b = base.flows["fct_ns"].to_numpy(float), other.flows["fct_ns"].to_numpy(float)
    da, db = base.iterations["duration_ns"].to_numpy(float), other.iterations["duration_ns"].to_numpy(float)
    shift = rank_ends(base.flows, other.flows).groupby("iteration")["shift"].agg(lambda x: x.abs().max())
    out = {}
    for k, i in enumerate(base.iterations["index"].astype(int)):
        m = net & (it == i)
        mean, p99, mean_fct = _flow_errors(a[m], b[m])
        out[i] = (db[k] / da[k] - 1, mean_fct, mean, p99, float(shift.get(i, np.nan)))
    return out


def cached(cache: Path | None, trace_path: str, what, run: dict, make):
    """``make()``'s replay, or the one kept under ``cache`` for the same inputs (``what``: which
    run of the trace): its flows, iterations and counters (wall seconds, events)."""
    if cache is None:
        return make()
    from wormhole_replay import __version__

    digest = hashlib.sha256(Path(trace_path).read_bytes()).hexdigest()
    d = cache / hashlib.sha256(json.dumps([digest, what, run, __version__], sort_keys=True).encode()).hexdigest()[:16]
    if not (d / "counters.json").is_file():
        r = make()
        d.mkdir(parents=True, exist_ok=True)
        r.flows.to_parquet(d / "flows.parquet")
        r.iterations.to_csv(d / "iterations.csv", index=False)
        counters = {k: r.counters[k] for k in ("wall_seconds", "events")}
        (d / "counters.json").write_text(json.dumps({**counters, "what": what, "trace": trace_path, **run}))  # last
    counters = json.loads((d / "counters.json").read_text())
    return SimpleNamespace(flows=pd.read_parquet(d / "flows.parquet"), iterations=pd.read_csv(d / "iterations.csv"),
                           counters=counters)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", default=SAMPLE)
    ap.add_argument("--topology", default=TOPOLOGY)
    ap.add_argument("--cc", default="dcqcn", choices=["dcqcn", "hpcc"])
    ap.add_argument("--iterations", type=int, default=4)
    ap.add_argument("--shared-prefixes", action="store_true", help="memoize prefixes of shared transients too")
    ap.add_argument("--episodes", action="store_true", help="let the memo take whole iterations (--memo-episodes)")
    ap.add_argument("--recurring", nargs="?", type=fraction, const=True, default=False, metavar="SPREAD",
                    help="take flows from their earlier copies (--memo-recurring [SPREAD])")
    ap.add_argument("--db", help="memo database (default: a new temporary SQLite file)")
    ap.add_argument("--cache", type=Path, help="keep the full run and its noise draw here, and reuse them")
    ap.add_argument("--no-plain", action="store_true", help="skip the wormhole run without a memo")
    ap.add_argument("--no-floor", action="store_true", help="skip the noise draw (another full run)")
    ap.add_argument("--draws", type=int, default=0, choices=range(len(DRAW_DELAYS_NS) + 1), metavar="K",
                    help="also the cold run on the trace with one op 1 ns, 10 ns, ... longer (the first K "
                         "draws), against the unperturbed full run")
    a = ap.parse_args()
    trace = load_trace(a.trace)
    tmp = tempfile.TemporaryDirectory()
    db = a.db or str(Path(tmp.name) / "memo.sqlite")
    run = dict(topology=a.topology, cc=a.cc, iterations=a.iterations)
    memo = dict(memo_db=db, memo_shared_prefixes=a.shared_prefixes, memo_episodes=a.episodes,
                memo_recurring=a.recurring)
    # compile (or load) the kernels on the shipped sample: a warm-up on the trace itself would cost a
    # whole wormhole iteration, 15 minutes at 128 GPUs
    replay(load_trace(SAMPLE), topology=TOPOLOGY, cc=a.cc, iterations=1,
           **{**memo, "memo_db": str(Path(tmp.name) / "warm-up.sqlite")})
    full = cached(a.cache, a.trace, "full", run, lambda: replay(trace, **run, mode="full"))
    plain = None if a.no_plain else replay(trace, **run)  # wormhole mode without a memo: what the memo adds
    cold = replay(trace, **run, **memo)
    warm = replay(trace, **run, **memo)
    draws = [("+" + delay_text(d).replace(" ", ""), replay(Trace(perturb_ops(trace.ops, d)[0], trace.meta), **run,
                                          **{**memo, "memo_db": str(Path(tmp.name) / f"draw-{d}.sqlite")}))
             for d in DRAW_DELAYS_NS[:a.draws]]
    nudged, nudge = perturb_ops(trace.ops)  # keyed by what it changed: every iteration's op since 2026-12-06
    floor = None if a.no_floor else cached(a.cache, a.trace, ["noise-1ns", nudge], run, lambda: replay(
        Trace(nudged, trace.meta), **run, mode="full"))

    print(f"{a.trace}, {a.iterations} iterations, {a.cc}, {a.topology}"
          f"{', shared prefixes memoized' if a.shared_prefixes else ''}{', whole iterations memoized' if a.episodes else ''}"
          f"{', recurring flows memoized' if a.recurring else ''}"
          f"{f'; full run and noise draw kept in (or taken from) {a.cache}' if a.cache else ''}")
    print(f"{'run':7s} {'wall s':>7s} {'vs full':>8s} {'events':>11s} {'hits':>5s} {'lookups':>7s} "
          f"{'entries':>8s} {'FCT err mean':>12s} {'p99':>7s} {'iter err':>8s} {'mean FCT':>8s}")
    for name, r in (("full", full), ("no memo", plain), ("cold", cold), ("warm", warm), *draws):
        if r is None:
            continue
        c, w = r.counters, r.counters.get("wormhole", {})
        m, p99, it, mf = errors(full, r)
        looked = w.get("memo_hits", 0) + w.get("memo_misses", 0) + w.get("memo_refused", 0)
        print(f"{name:7s} {c['wall_seconds']:7.2f} {full.counters['wall_seconds'] / c['wall_seconds']:7.2f}x "
              f"{c['events']:11,d} {w.get('memo_hits', 0):5d} {looked:7d} {w.get('memo_entries_at_start', 0):8d} "
              f"{m:12.2%} {p99:7.2%} {it:8.2%} {mf:+8.2%}")
    for name, r in (("cold", cold), ("warm", warm)):
        it = r.iterations
        rate = it["memo_hits"] / np.maximum(it["memo_lookups"], 1)
        first = it["wall_seconds"].iloc[0]
        cells = ", ".join(f"#{int(i)} {s:.2f} s ({first / max(s, 1e-3):.1f}x) hits {int(h)}/{int(n)} ({q:.0%})"
                          for i, s, h, n, q in zip(it["index"], it["wall_seconds"], it["memo_hits"], it["memo_lookups"], rate))
        print(f"{name} iterations: {cells}")
    print("per iteration against full (duration, mean FCT, per-flow FCT error mean / p99, worst rank's end):")
    for name, r in (("cold", cold), ("warm", warm), *draws, ("floor", floor)):
        if r is None:
            continue
        print(f"  {name:5s} " + "; ".join(f"#{i} {d:+.2%}, {mf:+.2%}, {m:.2%} / {p99:.2%}, {re:.2%}"
                                          for i, (d, mf, m, p99, re) in by_iteration(full, r).items()))
    m, p99, it, mf = errors(cold, warm)
    print(f"warm vs cold: wall {cold.counters['wall_seconds'] / warm.counters['wall_seconds']:.2f}x faster; "
          f"FCT difference mean {m:.2%}, p99 {p99:.2%}; iteration time {it:.2%}; mean FCT {mf:+.2%}")
    if floor is not None:
        m, p99, it, mf = errors(full, floor)
        print(f"noise floor (full vs full with one compute op 1 ns longer in every iteration): FCT mean {m:.2%}, p99 {p99:.2%}; "
              f"iteration time {it:.2%}; mean FCT {mf:+.2%}")
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
