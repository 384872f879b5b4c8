#!/usr/bin/env python
"""Contention in seconds: rings that collide on a fat-tree, wormhole mode against full simulation,
and why the fast-forward does (or does not) take them.

The flows: one ring per ``--strides`` entry over all hosts of ``--topology`` (host i sends
``--size`` MB to host i + stride), every flow starting at 0, so that the rings share NICs, edge
and core links as data-parallel rings do under ECMP (issue 14's fat-tree rows, at 32 flows instead
of hundreds of thousands).  Per CC: full and wormhole events and wall time, events avoided,
fast-forwards, per-flow FCT error (mean, max) and the mean FCT's error.

``--workload TRACE`` replays a native trace's first iteration on ``--topology`` instead of the
rings (errors over its network flows), e.g. bench_scale's ``ddp16`` trace on
``fat-tree:k=4,gpus_per_server=2``.

``--cut RUN LO HI`` replays as a flow file the network flows of a run's output folder (its
``flows.parquet``) that start within [LO, HI) ms, at their start times less LO, with their source
ports (so their ECMP paths), on ``--topology``: a chaotic DAG run's contention with no chaos left,
so that per-flow errors measure the fast-forward alone (2026-12-03, a cut of the AICB iteration at
collectives / 10, 250-300 ms: a 1 us shift of one flow moves its FCTs by 0.15% mean).

``--episodes`` (with ``--fluid``) tells where a fluid run's packet-level time goes: of all network
flows' time between start and finish, the share live before a flow first goes fluid, between its
fluid episodes, and after its last one, and the episodes per flow.  Measured 2026-12-03 on a cut of
the full-size AICB iteration (its 190 flows of 406 MB starting at 1000-1150 ms, HPCC): 3.2%
before, 26.1% between (12.6 episodes per flow, 1.43 ms live per gap, about one full window:
contended flows must show a full window again after each thaw), 1.3% after; events avoided 77.6%.
Since a group thawed for the load around it may come back after a short window (``FT_REFLUID``):
3.1% before, 21.1% between (11.8 per flow, 1.24 ms per gap), 1.4% after; 81.0% avoided.

``--trace`` follows the wormhole run's steadiness: about every millisecond, for each live partition
of two flows or more, how many of its flows have a full window, and how many of those pass the
spread test (max - min within theta of the mean, one packet of resolution allowed) and the drift
test (halves within theta / 4), and how many pass a mean jump's per-flow test (quarter means within
2 theta, halves within theta / 2; the partition's total is held to theta besides); and the gaps
between flow completions (each one changes the partition and restarts its window).  Measured
2026-12-01 (``--trace``, 50 MB, strides 1 and 5 on ``fat-tree:k=4``): HPCC, one partition of 32
flows, never frozen, 0% of events avoided; from 3 to 6 ms, when all 32 have full windows, at most 7
pass the spread test (their samples spread by 6% of the mean, median, up to 12%) and 11-22 the
drift test; the completions then come every 268 us (median) against a 1.6 ms window.  DCQCN: at
most 10 pass, completions every 132 us against 1.2 ms.  Loosening the tests alone (spread 4 theta,
drift theta) gave steady windows from 5.0 ms, but no jump: the first completion (5.7 ms) left less
than ``min_jump``.

    python tools/bench_contention.py                      # HPCC and DCQCN, 50 MB
    python tools/bench_contention.py --cc hpcc --trace
    python tools/bench_contention.py --size 200 --strides 1 3 5
    python tools/bench_contention.py --fluid                  # with fluid flows (--ff-fluid)
    python tools/bench_contention.py --cc hpcc --coupling     # whom a completion moves
    python tools/bench_contention.py --cc hpcc --predict      # the rates after a completion, foreseen?
    python tools/bench_contention.py --cc hpcc --trace --workload ddp16.parquet --topology fat-tree:k=4,gpus_per_server=2
    python tools/bench_contention.py --cc hpcc --fluid --cut out/bench-scale/runs/KEY 250 300 --topology fat-tree:k=8,gpus_per_server=8
    python tools/bench_contention.py --cc hpcc --fluid --episodes --cut out/bench-scale/runs/KEY 1000 1150 --topology fat-tree:k=8,gpus_per_server=8
    python tools/bench_contention.py --cc hpcc --fluid --memo --cut out/bench-scale/runs/KEY 250 300 --topology ...

``--memo`` gives the wormhole run a new memo database (a temporary SQLite file), so what the memo
learns early in a flow file is used later in it, and prints its counters.  Measured 2026-12-03 on
the 250-300 ms cut of the AICB /10 iteration (HPCC, ``--fluid``): 38.2% of events avoided, per-flow
0.52% / 3.36% (without the memo 36.8%, 0.54% / 3.65%): 3 course hits, the fluid partitions left
alone (``memo/session.py``).

``--coupling`` asks, of the full run, what a partition-wide window restart assumes: after each
completion, how many of the flows still running change their delivered rate (mean over 0.5-0.9 ms
after it against 0.4 ms before) by more than theta (3%) and by more than 10%; ``(alone)`` marks a
completion with no other within the 0.9 ms after it.  Measured 2026-12-01, HPCC: after the first
completion (5.71 ms; the next comes 0.61 ms later) 9 of the 30 flows that run on move by more than
3% and 3 by more than 10%; after the first one alone (8.76 ms) 15 of 21 move by more than 3% and 5
by more than 10%; the clusters in between move 11-22 of 24-26.  So a partition cut by rate
coupling instead of shared ports would keep a third to two thirds of these flows frozen across a
completion at theta = 3%, three quarters at 10%.

``--predict`` asks what a jump *through* a completion would need, of the full run: after each
completion (150 us after it to 50 us before the next), each running flow's mean rate against a
prediction from its rate before it (the 400 us before, at most since the previous completion):
``unchanged``, or ``rescaled`` (HPCC's multiplicative reaction as a fluid model: every flow scales
by the least ratio, over its data path, of the link utilisation it tracked before to the one now,
``_rescaled``).  Measured 2026-12-02, HPCC, 50 MB: unchanged 4.27% mean error (p90 9.39%) over 122
flow-segments, rescaled 6.93% (p90 17.8%); between 1.5 and 5.6 ms, before any completion, the same
unchanged prediction over the same spans errs 1.43% (p90 2.99%): a completion moves the shares
around it by about 3% more than they wander, in a way this model of HPCC does not foresee.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from wormhole_replay.api import execute, fast_forward_for, prepare_direct_run
from wormhole_replay.engine import layout as L
from wormhole_replay.engine import simulate as engine_simulate
from wormhole_replay.engine.fastforward import FastForward
from wormhole_replay.engine.wormhole.jump import SHARE_WANDER
from wormhole_replay.errors import InputError
from wormhole_replay.replay import replay
from wormhole_replay.topology import build_topology
from wormhole_replay.workload.flowfile import FlowSet
from wormhole_replay.workload.trace import load_trace

MB = 1_000_000


def rings(topology: str, strides: list[int], size_mb: float) -> FlowSet:
    hosts = np.asarray(build_topology(topology).hosts)
    n = len(hosts)
    src = [hosts[i] for _ in strides for i in range(n)]
    dst = [hosts[(i + s) % n] for s in strides for i in range(n)]
    return FlowSet.from_columns(src, dst, [int(size_mb * MB)] * len(src), [0] * len(src))


def cut(run: str, lo_ms: float, hi_ms: float) -> FlowSet:
    """The network flows of run folder ``run`` that start within [lo_ms, hi_ms), as a flow file
    (see the module's docstring)."""
    path = Path(run) / "flows.parquet"
    if not path.is_file():
        raise InputError(f"--cut: no flows.parquet in {run}")
    f = pd.read_parquet(path)
    lo, hi = int(lo_ms * 1e6), int(hi_ms * 1e6)
    f = f[~f["virtual"] & (f["start_ns"] >= lo) & (f["start_ns"] < hi)]
    if f.empty:
        raise InputError(f"--cut: no network flow of {run} starts within [{lo_ms:g}, {hi_ms:g}) ms")
    return FlowSet.from_columns(f["src"], f["dst"], f["size_bytes"], f["start_ns"] - lo, pg=f["pg"],
                                dport=f["dport"], sport=f["sport"])


class Progress:
    """``on_slice``: every flow's acknowledged bytes, about every 2000 events (and, once, each
    flow's data and ACK ports, the ports' rates and the wire overheads, for ``predict``)."""

    def __init__(self):
        self.t, self.acked, self.links = [], [], None

    def __call__(self, state) -> None:
        if self.links is None:
            ft, paths, ci = state.flows.table, state.flows.paths, state.cfg.ints
            ends = np.append(ft[1:, L.FT_DPATH], len(paths))
            self.links = {"data": [paths[ft[f, L.FT_DPATH]:ft[f, L.FT_APATH]].copy() for f in range(len(ft))],
                          "ack": [paths[ft[f, L.FT_APATH]:ends[f]].copy() for f in range(len(ft))],
                          "rate": state.net.ports[:, L.PT_RATE].astype(float),
                          "wire": (ci[L.CI_PAYLOAD] + ci[L.CI_DATA_HDR]) / ci[L.CI_PAYLOAD],
                          "ack_share": ci[L.CI_ACK_SIZE] / ci[L.CI_PAYLOAD]}
        self.t.append(int(state.state[L.ST_NOW]))
        self.acked.append(state.flows.table[:, L.FT_SND_UNA].copy())

    def rates(self, a: int, b: int) -> np.ndarray:
        """Each flow's mean delivered rate over [a, b] (b/s)."""
        t = np.asarray(self.t)
        i, j = np.searchsorted(t, a), min(np.searchsorted(t, b), len(t) - 1)
        return (self.acked[j] - self.acked[i]) * 8e9 / max(t[j] - t[i], 1)


def coupling(progress: Progress, finish: np.ndarray, theta: float = 0.03) -> None:
    """After each completion, how many running flows' rates it moved (see the module's docstring)."""
    end = progress.t[-1]
    for tc in np.sort(finish)[:-1]:
        if tc + 900_000 > end:
            break
        before, after = progress.rates(tc - 400_000, tc), progress.rates(tc + 500_000, tc + 900_000)
        alive = (finish > tc + 900_000) & (before > 0)
        change = np.abs(after[alive] / before[alive] - 1)
        alone = not np.any((finish > tc) & (finish <= tc + 900_000))
        print(f"  completion at {tc / 1e6:6.2f} ms{' (alone)' if alone else '        '}: {int(alive.sum()):3d} flows run on, "
              f"{int((change > theta).sum()):3d} move by more than {theta:.0%}, {int((change > 0.1).sum()):3d} by more than 10%")


def _rescaled(links: dict, before: np.ndarray, was: np.ndarray, alive: np.ndarray, eta: float = 0.95,
              rounds: int = 200) -> np.ndarray:
    """HPCC's reaction to a completion, as a fluid model: each flow's rate scales (multiplicatively,
    as HPCC's window does) by the least, over its data path, of link utilisation it tracked before
    (at least ``eta``) over the utilisation now, until no link is over its level."""
    data, ack, rate = links["data"], links["ack"], links["rate"]

    def load(r, on):
        u = np.zeros(len(rate))
        for f in np.flatnonzero(on):
            u[data[f]] += r[f] * links["wire"]
            u[ack[f]] += r[f] * links["ack_share"]
        return u / rate

    level = np.maximum(load(before, was), eta)
    r = before.copy()
    for _ in range(rounds):
        u = np.maximum(load(r, alive), 1e-12)
        scale = np.array([(level[data[f]] / u[data[f]]).min() if alive[f] else 0.0 for f in range(len(r))])
        r = np.where(alive, r * np.sqrt(scale), 0.0)
    return r


def predict(progress: Progress, finish: np.ndarray) -> None:
    """How well a flow's rate after a completion is predicted from the rates before (see the
    module's docstring): unchanged, or rescaled as HPCC would (``_rescaled``), against its mean
    rate from 150 us after the completion to 50 us before the next one."""
    errors = {"unchanged": [], "rescaled": []}
    done = np.sort(finish)
    for c in range(len(done) - 1):
        tc, nxt, prev = done[c], done[c + 1], done[c - 1] if c else 0
        a, b0, b1 = tc - min(400_000, tc - prev - 50_000), tc + 150_000, nxt - 50_000
        if tc - a < 150_000 or b1 - b0 < 150_000:
            continue  # too close to the completions around it to measure
        before, after = progress.rates(a, tc), progress.rates(b0, b1)
        was = (finish >= tc) & (before > 0)
        alive = was & (finish > tc)
        guess = {"unchanged": before, "rescaled": _rescaled(progress.links, before, was, alive)}
        line = []
        for name, g in guess.items():
            e = np.abs(g[alive] / after[alive] - 1)
            errors[name] += list(e)
            line.append(f"{name} {e.mean():.2%}")
        print(f"  completion at {tc / 1e6:6.2f} ms, {int(alive.sum())} flows run on: mean error " + ", ".join(line))
    for name, e in errors.items():
        if e:
            print(f"  {name}: mean error {np.mean(e):.2%}, p90 {np.quantile(e, 0.9):.2%} over {len(e)} flow-segments")


class Episodes:
    """``on_slice``: which flows are fluid, every few thousand events (``--episodes``)."""

    def __init__(self):
        self.t, self.fluid = [], []

    def __call__(self, state) -> None:
        self.t.append(int(state.state[L.ST_NOW]))
        self.fluid.append(state.flows.table[:, L.FT_FLUID] != 0)

    def report(self, flows, net: np.ndarray) -> str:
        """Shares of the network flows' time live before, between and after their fluid episodes."""
        t, fluid = np.asarray(self.t), np.asarray(self.fluid)
        after_t = np.append(t[1:], np.iinfo(np.int64).max)  # each slice lasts to the next (or the finish)
        start, finish = flows["start_ns"].to_numpy(), flows["finish_ns"].to_numpy()
        before = between = after = 0
        episodes = []
        for f in np.flatnonzero(net):
            m = (t >= start[f]) & (t < finish[f])
            on, d = fluid[m, f], np.minimum(after_t[m], finish[f]) - t[m]
            n = int(np.sum(np.diff(on.astype(int)) == 1) + (1 if on.size and on[0] else 0))
            episodes.append(n)
            if n == 0:
                before += d.sum()
                continue
            i0, i1 = np.argmax(on), len(on) - 1 - np.argmax(on[::-1])
            before, after = before + d[:i0].sum(), after + d[i1 + 1:].sum()
            between += d[i0:i1 + 1][~on[i0:i1 + 1]].sum()
        total = float((finish - start)[net].sum())
        gaps = sum(max(n - 1, 0) for n in episodes)
        return (f"live {before / total:.1%} of the flows' time before their first fluid episode, {between / total:.1%} "
                f"between episodes ({np.mean(episodes):.1f} per flow, {between / max(gaps, 1) / 1e3:.0f} us per gap), "
                f"{after / total:.1%} after the last; {int(np.sum(np.array(episodes) == 0))} flows never fluid")


class Steadiness:
    """``on_slice``: each live partition's window statistics, about every millisecond."""

    def __init__(self, every_ns: int = 1_000_000):
        self.every, self.next = every_ns, every_ns

    def __call__(self, state) -> None:
        now = int(state.state[L.ST_NOW])
        if now < self.next:
            return
        self.next = (now // self.every + 1) * self.every
        ci, ft, sr, wp = state.cfg.ints, state.flows.table, state.parts.samples, state.parts.table
        window, theta = int(ci[L.CI_WH_L]), float(state.cfg.floats[L.CF_WH_THETA])
        resolution = ci[L.CI_PAYLOAD] * 8e9 / ci[L.CI_WH_TAU]
        running = (ft[:, L.FT_STATE] > 0) & (ft[:, L.FT_FINISH] < 0)
        parts = []
        for k in np.flatnonzero(wp[:, L.WP_STATE] == 1):  # live partitions
            members, f = [], wp[k, L.WP_FLOWS]
            while f >= 0:
                members.append(f)
                f = ft[f, L.FT_PNEXT]
            full = [f for f in members if ft[f, L.FT_NSAMP] > window]
            spread_ok = drift_ok = quarter_ok = 0
            for f in full:
                newest = int(ft[f, L.FT_NSAMP]) - 2  # the last sample written (samples are a ring)
                w = sr[f, (newest - np.arange(window)[::-1]) % window]  # oldest first
                mean = w.mean()
                if mean <= 0:
                    continue
                # the engine's two tests (steadiness._flat, jump.half_change), written out: its kernels
                # are not callable from Python
                spread_ok += w.max() - w.min() - resolution <= theta * mean
                half = window // 2
                drift = abs(w[half:].mean() - w[:half].mean()) - resolution / half
                drift_ok += drift <= 0.25 * theta * mean
                # a mean jump's per-flow test (jump.stationary at SHARE_WANDER x theta)
                q = w[: 4 * (window // 4)].reshape(4, -1).mean(axis=1)
                quarter_ok += (q.max() - q.min() - resolution / (window // 4) <= SHARE_WANDER * theta * mean
                               and drift <= 0.25 * SHARE_WANDER * theta * mean)
            if len(members) > 1:
                parts.append(f"{len(members)} flows, {len(full)} with a full window, {spread_ok} pass the spread "
                             f"test, {drift_ok} the drift test, {quarter_ok} the mean test")
        print(f"  {now / 1e6:6.2f} ms: {int(running.sum()):3d} running; live partitions of 2 or more: "
              + ("; ".join(parts) or "none"), flush=True)


def run(source, topology: str, cc: str, mode: str, on_slice=None, fluid: bool = False, memo_db=None):
    """One run of ``source``: a FlowSet, or a Trace (its first iteration replayed); in wormhole
    mode with ``memo_db`` that memo database (None: none)."""
    ff = fast_forward_for(mode, FastForward(fluid=True) if fluid else None)
    memo_db = memo_db if mode == "wormhole" else None
    t0 = time.perf_counter()
    if isinstance(source, FlowSet):
        r = prepare_direct_run(topology, source, cc, out=None)
        r.fast_forward, r.memo_db = ff, memo_db
        res = execute(r, on_slice=on_slice)
    else:
        res = replay(source, topology, cc, iterations=1, mode=mode, fast_forward=ff, on_slice=on_slice,
                     memo_db=memo_db)
    return res, time.perf_counter() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--topology", default="fat-tree:k=4")
    ap.add_argument("--strides", type=int, nargs="+", default=[1, 5], help="one ring per stride")
    ap.add_argument("--size", type=float, default=50.0, help="MB per flow (default 50)")
    ap.add_argument("--cc", choices=["dcqcn", "hpcc"], help="one CC (default: both)")
    ap.add_argument("--trace", action="store_true", help="follow the wormhole run's steadiness")
    ap.add_argument("--episodes", action="store_true", help="with --fluid: where the packet-level time goes")
    ap.add_argument("--fluid", action="store_true", help="wormhole mode with fluid flows (--ff-fluid)")
    ap.add_argument("--memo", action="store_true", help="the wormhole run with a new memo database (entries "
                    "learned and used within the run; its counters printed)")
    ap.add_argument("--coupling", action="store_true", help="how many flows each completion moves (full run)")
    ap.add_argument("--predict", action="store_true", help="how well rates after a completion are predicted (full run)")
    ap.add_argument("--cut", nargs=3, metavar=("RUN", "LO", "HI"), help="the network flows of a run's output "
                    "folder starting within [LO, HI) ms, as a flow file on --topology")
    ap.add_argument("--workload", metavar="TRACE", help="a native trace file instead of the rings (its first "
                                                         "iteration, on --topology)")
    a = ap.parse_args()
    try:
        if a.size <= 0 or any(s <= 0 for s in a.strides):
            raise InputError("--size and --strides must be positive")
        if a.workload and (a.coupling or a.predict):
            raise InputError("--coupling and --predict follow the rings' flows only (every flow, every 2000 events)")
        if a.workload and a.cut:
            raise InputError("--workload and --cut are two sources: give one")
        if a.episodes and (not a.fluid or a.trace):
            raise InputError("--episodes follows fluid episodes: it needs --fluid, and not --trace")
        if a.cut:
            try:
                lo, hi = float(a.cut[1]), float(a.cut[2])
            except ValueError:
                raise InputError(f"--cut: LO and HI are milliseconds, not {a.cut[1]!r} {a.cut[2]!r}") from None
            flows = cut(a.cut[0], lo, hi)
        else:
            flows = load_trace(a.workload) if a.workload else rings(a.topology, a.strides, a.size)
        run(rings(a.topology, [1], 0.1), a.topology, "hpcc", "wormhole")  # compile first: neither mode pays
        tmp = tempfile.TemporaryDirectory() if a.memo else None  # the memo databases of --memo
        for cc in [a.cc] if a.cc else ["hpcc", "dcqcn"]:
            progress = Progress() if a.coupling or a.predict else None
            if progress is not None:
                engine_simulate.SLICE_EVENTS = 2000  # progress is read between slices
            full, t_full = run(flows, a.topology, cc, "full", progress)
            engine_simulate.SLICE_EVENTS = 1_000_000
            if a.coupling:
                print(f"{cc}: whom each completion moves (full run)")
                coupling(progress, full.flows["finish_ns"].to_numpy())
            if a.predict:
                print(f"{cc}: rates after each completion, predicted from the rates before (full run)")
                predict(progress, full.flows["finish_ns"].to_numpy())
            if a.trace:
                engine_simulate.SLICE_EVENTS = 100_000  # the trace samples between slices
                print(f"{cc}: steadiness of the wormhole run")
            episodes = Episodes() if a.episodes else None
            if episodes is not None:
                engine_simulate.SLICE_EVENTS = 5000  # which flows are fluid, read between slices
            db = str(Path(tmp.name) / f"memo-{cc}.sqlite") if tmp else None
            fast, t_fast = run(flows, a.topology, cc, "wormhole", Steadiness() if a.trace else episodes, a.fluid, db)
            engine_simulate.SLICE_EVENTS = 1_000_000
            net = ~full.flows["virtual"].to_numpy()  # network flows (a trace also has compute ops)
            x, y = full.flows["fct_ns"].to_numpy()[net], fast.flows["fct_ns"].to_numpy()[net]
            err = np.abs(y - x) / x
            w = fast.counters["wormhole"]
            done = np.sort(full.flows["finish_ns"].to_numpy()[net])
            what = (f"network flows of {a.workload}" if a.workload else f"flows of {a.cut[0]}" if a.cut
                    else f"flows of {a.size:g} MB")
            print(f"{cc}: {len(x)} {what}; full {full.counters['events'] / 1e6:.2f} M events "
                  f"{t_full:.1f} s, wormhole {fast.counters['events'] / 1e6:.2f} M events {t_fast:.1f} s; "
                  f"events avoided {1 - fast.counters['events'] / full.counters['events']:.1%}, "
                  f"{w['fast_forwards']} fast-forwards, partitions_max {w['partitions_max']}; "
                  f"FCT error mean {err.mean():.2%} p99 {np.quantile(err, 0.99):.2%} max {err.max():.2%}, "
                  f"mean FCT {y.mean() / x.mean() - 1:+.2%}; "
                  f"completions from {done[0] / 1e6:.2f} to {done[-1] / 1e6:.2f} ms, median gap "
                  f"{np.median(np.diff(done)) / 1e3:.0f} us (window {w['options']['window_ns'] / 1e3:.0f} us)",
                  flush=True)
            if a.memo:
                print(f"{cc}: memo " + ", ".join(f"{k} {v}" for k, v in w.items()
                                                 if k.startswith("memo_") and isinstance(v, int) and v), flush=True)
            # who errs which way: flows fast-forwarded for most of their bytes against the others
            signed = (y - x) / x
            skipped = (fast.flows["fast_forwarded_bytes"] / fast.flows["size_bytes"].clip(lower=1)).to_numpy()[net]
            groups = [("most of their bytes (> 60%)", skipped > 0.6), ("some", (skipped > 0) & (skipped <= 0.6)),
                      ("none", skipped == 0)]
            print(f"{cc}: signed FCT error of flows fast-forwarded for "
                  + ", ".join(f"{name}: {int(m.sum())} flows, {signed[m].mean():+.2%}" for name, m in groups if m.any()),
                  flush=True)
            if episodes is not None:
                print(f"{cc}: {episodes.report(fast.flows, net)}", flush=True)
    except InputError as e:
        print(f"bench_contention: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
