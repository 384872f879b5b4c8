#!/usr/bin/env python
"""The recurring flows' paced model against a full run, with the full run's own overlaps.

``--memo-recurring`` learns each class's copies at their *alone pace* (``memo/recurring.py``: a
copy's time, moment by moment, at ``min(1, gain / n)`` beside the n flows' data leaving the busiest
port its data crosses) and runs its later copies as timers that cover that time at the same pace.
This tool separates the model's error from the engine's: it feeds the model with the full run's
own flows (who was live on which port, when), learns each class from its samples as the memo does
(a quarter of its copies, 4 to 32, at a spread wider than 1%; ``recurring._samples``), predicts
every later copy (the j-th from sample j mod n, in turn, as ``Recurring._take``) and prints how far
the prediction is from the copy's time in the full run: per copy, in total, and summed per DP ring
(the connected groups of ranks that all-reduce together), where a ring step waits for its slowest
flow.  A few seconds per try, where a recurring run takes minutes: the place to try a model change.

Measured (2026-12-05, the 128-GPU DDP GPT-13B of ``bench_scale`` on ``fat-tree:k=8``, HPCC, its
full run from the bench's cache): counting the small classes' flows (pipeline sends, which the
rings starve) as sharers put the rings' totals -7.3% to +1.5% off, per copy 6.5% mean; counting
only the recurring classes' (as ``Recurring._flows_on`` since), -1.2% to +1.3%, 6.0%.  On the
2-iteration form of that trace (``bench_memo``'s cached full run, 2026-12-05, late) the rings'
totals are within -1.2% .. +1.2%, but their steps' slowest flows (a step waits for the slowest of
its 8) -4.6% (DP ring 4) .. +3.8%, 1.75% per ring mean: the ring whose timeline ends 13-31 ms
early in every recurring run.  ``--order shuffled`` (each later copy a sample by a hash of its id, not
in turn): 1.63%, ring 4 -3.9%.  On the one-iteration run (2026-12-05, night) the four orders:
``aligned`` 1.87% per ring (ring 4 -4.44%), ``shuffled`` 1.76%, ``mean`` (every later copy its
class's samples' mean: per copy 4.52% instead of 5.99%, but the steps' slowest flows -2.70% in all,
ring 4 -5.88%) and ``pooled`` (the class's mean times a deviation drawn from every class's samples:
1.86%, -1.63% in all).  So ring 4's bias is not the spread a timer replays but its slowest class's
level: that class's (4 -> 12) later copies are 4.6% slower at their alone pace than its 32 samples
(DEVELOPERS.md, "Recurring flows").  ``--pool`` (2026-12-05, later) says it is the samples' representativeness
alone: the same later copies drawing from 32 copies spread over the class's iteration put the steps
at 1.60% per ring, from all its copies (its true level, known only at the run's end) 0.33% (every
ring within 0.8%, ring 4 +0.04%), from its first 32 1.87%; per copy 5.9-6.0% whatever the pool.  Under DCQCN (the same
trace, its full run, gain 1) first / spread / all: per ring 3.68% / 2.47% / 1.00%, total time
-2.44% / -1.09% / -1.57%, per copy 19.6-20.0%: the alone pace does not explain DCQCN's copies (presumably its rate
cuts, which outlast the contention that caused them): in 69 of the 78 classes of 256 whose first 32
copies spread beyond 2x at their alone pace, the fastest ran within 15% of line rate, and the
median copy took 2.6 times as long at its alone pace).

``--pool probed`` (2026-12-05, night; the 2-iteration trace's full run made again, ``bench_memo``'s
cache, gain 1.12): the first 32 and a probe at every 16th place of the first iteration put the
steps at 1.10% per ring (iteration 2: 1.01%, worst ring 3.06%, where the first 32 alone give 1.78%
and 5.35%), every 8th at 0.76% (0.78%, 2.29%), all copies 0.25%.  So the model says probes would
do; the engine says otherwise: a probe runs among timers, and a packet flow beside paced timers
runs late (DEVELOPERS.md, "Probes").  Drawing from the 4 probes nearest by place instead of the whole pool
in turn was no better (1.36% at every 16th place, 0.85% at every 8th).

``--share maxmin`` (2026-12-06) paces a copy at its max-min fair share of its path instead of an
equal share of its busiest port (the live flows water-filled at every start and end, each link's
rate alike): what the memo's pacing would need where flows meet sharers held down elsewhere.  On
``bench_scale --only moe16``'s full run (HPCC; its all-to-alls' flows meet at senders and receivers
alike), gain 1 / 1.3: per copy 16.89% / 15.81% -> 14.67% / 13.77%, total time -0.97% / -1.23% ->
+0.38% / +0.13%, the collectives' steps' slowest flows (per group of ranks the tool calls a ring)
4.31% / 4.57% -> 1.29% / 1.35%.  On
the AICB iteration's (``--only aicb --topology fat-tree --scale 10``, rings only) nothing changes:
4.00% / +1.44% -> 4.30% / +1.74% at gain 1.1, as on the DDP fat-tree (``DEVELOPERS.md``, "Max-min
shares checked").  The tool also prints how many classes' samples agree within ``--spread`` at
their alone pace (what the memo trusts, on the time to the last byte received): on moe16, 163 of
176 with equal shares, 168 with max-min; the others are DP buckets whose copies run 2-5x apart
under either (``DEVELOPERS.md``).

    python tools/pace_model.py out/bench-scale/runs/DIGEST --topology fat-tree:k=8,gpus_per_server=8
    python tools/pace_model.py DIR --topology SPEC --gain 1.05 --count all --order shuffled
    python tools/pace_model.py DIR --topology SPEC --pool all          # the classes' true levels
    python tools/pace_model.py DIR --topology SPEC --pool probed --stride 8   # and probes every 8th place
    python tools/pace_model.py DIR --topology SPEC --share maxmin            # max-min fair shares
    python tools/pace_model.py DIR --topology SPEC --sharers                 # what sharing costs, no model

``--sharers`` (2026-12-06, night) prints no model: the learnable classes' copies binned by the mean
count of flows on their busiest data port over their life, each copy's time over its time alone on
an empty network.  On the 128-GPU DDP fat-tree (its full runs made that night), median: HPCC alone
1.29 (a ring's flow alone does not fill its link), beside about two 2.20, about three 3.41, so n
flows take about n / 1.15 times a copy alone (the memo's fitted gain, 1.12); DCQCN alone 1.04,
beside about two 2.81, about three 3.86: two DCQCN flows on a link take 2.7 times one's time, not
2, and within a bin copies run from their time alone to 5-7 times it (a flow cut by a CNP crawls
back at 300 us a step), which no pace by counts explains (``DEVELOPERS.md``, "DCQCN's refuted classes again").
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from numba import njit

from wormhole_replay.audit.compare import rings
from wormhole_replay.errors import InputError
from wormhole_replay.memo.recurring import _paces, _samples, learnable as learnable_classes
from wormhole_replay.topology import build_topology
from wormhole_replay.topology.routing import compute_routes, flow_path, node_path_to_ports

BIN_NS = 1_000  # the model's clock: who is live on a port, per microsecond


@njit(cache=True)
def _occupancy(paths, start, end, counted, n_ports, n_bins):
    """Per port and bin, how many counted flows' data leave the port (from start to last byte received)."""
    occ = np.zeros((n_ports, n_bins), np.int16)
    for i in range(paths.shape[0]):
        if not counted[i]:
            continue
        for p in paths[i]:
            if p < 0:
                break
            occ[p, start[i]] += 1
            occ[p, end[i]] -= 1
    for p in range(n_ports):
        live = 0
        for t in range(n_bins):
            live += occ[p, t]
            occ[p, t] = live
    return occ


@njit(cache=True)
def _sharers(occ, path, t):
    """The most flows on one of ``path``'s ports at bin t, at least 1."""
    n = 1
    for p in path:
        if p < 0:
            break
        n = max(n, occ[p, t])
    return n


@njit(cache=True)
def _pace(occ, path, t, paces):
    """The pace at bin t of a flow on ``path``: ``paces[n - 1]`` (``recurring._paces``), n the most
    flows on one of its ports (``_sharers``), at most ``len(paces)``."""
    return paces[min(_sharers(occ, path, t), len(paces)) - 1]


@njit(cache=True)
def _mean_sharers(occ, paths, start, end):
    """Each flow's mean over its life (bins) of the most flows on one of its ports (at least 1)."""
    out = np.ones(paths.shape[0])
    for i in range(paths.shape[0]):
        total = 0.0
        for t in range(start[i], end[i]):
            total += _sharers(occ, paths[i], t)
        if end[i] > start[i]:
            out[i] = total / (end[i] - start[i])
    return out


@njit(cache=True)
def _alone_bins(occ, paths, start, end, paces):
    """Each flow's time at its alone pace (bins)."""
    out = np.zeros(paths.shape[0])
    for i in range(paths.shape[0]):
        for t in range(start[i], end[i]):
            out[i] += _pace(occ, paths[i], t, paces)
    return out


@njit(cache=True)
def _predicted_bins(occ, paths, start, alone, paces):
    """Each flow's time to cover ``alone`` bins at its pace from its start (-1 where none is given)."""
    out = np.full(paths.shape[0], -1.0)
    for i in range(paths.shape[0]):
        if alone[i] <= 0:
            continue
        covered, t = 0.0, start[i]
        while covered < alone[i] and t < occ.shape[1] - 1:
            covered += _pace(occ, paths[i], t, paces)
            t += 1
        out[i] = t - start[i]
    return out


@njit(cache=True)
def _water_fill(paths, live, n_ports):
    """Max-min fair shares (of a link's rate, every link alike) of the flows ``live`` on their data paths."""
    left, crossing = np.ones(n_ports), np.zeros(n_ports, np.int64)
    for i in live:
        for p in paths[i]:
            if p < 0:
                break
            crossing[p] += 1
    share, fixed, n = np.zeros(len(live)), np.zeros(len(live), np.bool_), len(live)
    while n > 0:
        least, tightest = np.inf, -1  # the port whose flows get least: their share is set there
        for a in range(len(live)):
            if not fixed[a]:
                for p in paths[live[a]]:
                    if p < 0:
                        break
                    if left[p] / crossing[p] < least:
                        least, tightest = left[p] / crossing[p], p
        for a in range(len(live)):
            if not fixed[a] and tightest in paths[live[a]]:
                fixed[a], share[a], n = True, least, n - 1
                for p in paths[live[a]]:
                    if p < 0:
                        break
                    left[p] -= least
                    crossing[p] -= 1
    return share


@njit(cache=True)
def _max_min_paces(paths, start, end, counted, n_ports, gain):
    """Each counted flow's pace from every change of the live set on (a start or an end) until the
    next: ``min(1, gain x its max-min share)``, 1 at a full link (``--share maxmin``).  Rows
    (flow, from ns, pace), in order of time."""
    flows = np.flatnonzero(counted)
    starts, ends = flows[np.argsort(start[flows])], flows[np.argsort(end[flows])]
    live, at = np.empty(len(flows), np.int64), np.full(len(start), -1)  # the live flows, each one's place there
    n, next_start, next_end = 0, 0, 0
    flow, since, pace = [0][:0], [0][:0], [0.0][:0]
    changes = np.unique(np.concatenate((start[flows], end[flows])))
    for t in changes[:-1]:
        while next_start < len(starts) and start[starts[next_start]] <= t:  # live from its start ...
            at[starts[next_start]], live[n], n = n, starts[next_start], n + 1
            next_start += 1
        while next_end < len(ends) and end[ends[next_end]] <= t:  # ... to its end
            i = ends[next_end]
            n -= 1
            live[at[i]], at[live[n]] = live[n], at[i]
            next_end += 1
        for a, x in zip(live[:n], _water_fill(paths, live[:n], n_ports)):
            flow.append(a)
            since.append(t)
            pace.append(1.0 if x >= 1.0 else min(1.0, gain * x))
    return np.array(flow, np.int64), np.array(since, np.int64), np.array(pace)


def _max_min_model(paths, start, end, counted, gain):
    """(alone, predict, time) as the binned model has them (``_alone_bins``, ``_predicted_bins``, in
    ``BIN_NS`` bins), at max-min paces from the flows' start and end (ns): a flow's alone time is
    the integral of its pace over its life, and a time to cover from its start goes at its paces,
    at its last one beyond its life."""
    flow, since, pace = _max_min_paces(paths, start, end, counted, int(paths.max()) + 1, gain)
    order = np.lexsort((since, flow))
    flow, since, pace = flow[order], since[order], pace[order]
    bounds = np.searchsorted(flow, np.arange(len(start) + 1))
    paced = np.flatnonzero(bounds[1:] > bounds[:-1])

    def spans(i):
        a, b = bounds[i], bounds[i + 1]
        return np.append(since[a:b], end[i]), pace[a:b]

    alone = np.zeros(len(start))
    for i in paced:
        t, x = spans(i)
        alone[i] = (np.diff(t) * x).sum() / BIN_NS

    def predict(given):
        out = np.full(len(start), -1.0)
        for i in paced[given[paced] > 0]:
            t, x = spans(i)
            covered = np.concatenate(([0.0], np.cumsum(np.diff(t) * x)))
            j = min(max(int(np.searchsorted(covered, given[i] * BIN_NS)) - 1, 0), len(x) - 1)
            out[i] = (t[j] - start[i] + (given[i] * BIN_NS - covered[j]) / x[j]) / BIN_NS
        return out

    return alone, predict, (end - start) / BIN_NS


def _hash(ids: np.ndarray, k: int) -> np.ndarray:
    """Each id's draw among k (a multiplicative hash: the same id, the same draw)."""
    return ((ids.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) >> np.uint64(33)) % np.uint64(k)).astype(np.int64)


def sample_order(order: str, later: np.ndarray, k: int) -> np.ndarray:
    """Which of a class's k samples each of its ``later`` copies takes: in turn (``aligned``, the
    j-th the j-th mod k), or ``shuffled`` (a hash of the copy's flow id mod k; ``pooled`` draws the
    same way from every class's samples, in ``model``)."""
    if order == "aligned":
        return np.arange(len(later)) % k
    return _hash(later, k)


def probes_of(members: np.ndarray, iteration: np.ndarray, k: int, stride: int) -> np.ndarray:
    """A class's probes, copies a memo would keep simulated to widen its pool (tried and not kept:
    DEVELOPERS.md, "Probes"): after its first k copies, those of its first iteration at every ``stride``-th place."""
    first = members[iteration[members] == iteration[members[0]]]
    place = np.arange(len(first))
    return first[(place >= k) & (place % stride == stride - 1)]


def pool_of(pool: str, members: np.ndarray, k: int, probes: np.ndarray | None = None) -> np.ndarray:
    """The copies (of a class's ``members``, by flow id) its later copies draw their alone times
    from: its first k, as the memo learns them (``first``); those and its ``probes`` (``probed``,
    ``probes_of``); k spread evenly over all its copies
    (``spread``: samples that see every part of the iteration); or all of them (``all``: the level
    the class really has, which no run knows before its end)."""
    if pool == "first":
        return members[:k]
    if pool == "probed":
        return np.concatenate([members[:k], probes])
    if pool == "spread":
        return members[np.unique(np.linspace(0, len(members) - 1, k).astype(np.int64))]
    return members


def steps(net: pd.DataFrame) -> pd.DataFrame:
    """Per ring step whose flows are all predicted (collective instance ``unit``, and the flow's
    ordinal among its rank's flows of the instance), its slowest flow's time in the full run and as
    predicted: a ring step waits for its slowest flow."""
    coll = net[net["kind"] == "coll"].sort_values("flow_id")
    coll = coll.assign(step=coll.groupby(["unit", "rank"]).cumcount())
    g = coll.groupby(["ring", "unit", "step"]).agg(full=("time_ns", "max"), predicted=("predicted_ns", "max"),
                                                  known=("predicted_ns", "min"), iteration=("iteration", "first"))
    return g[g["known"] >= 0]


def _paths(flows: pd.DataFrame, topology: str) -> np.ndarray:
    """Each flow's data-path ports, -1 padded (one ECMP path per 4-tuple)."""
    topo = build_topology(topology)
    routes = compute_routes(topo)
    seen: dict = {}
    rows = []
    for key in flows[["src", "dst", "sport", "dport"]].itertuples(index=False, name=None):
        if key not in seen:
            seen[key] = node_path_to_ports(topo, flow_path(topo, routes, *key, ack=False))
        rows.append(seen[key])
    out = np.full((len(rows), max(map(len, rows))), -1, np.int64)
    for i, r in enumerate(rows):
        out[i, :len(r)] = r
    return out


def _occupied(paths, start, end, counted):
    """The ``counted`` flows live on each port in each bin (``_occupancy``), over the run's ports and bins."""
    return _occupancy(paths, start, end, counted, int(paths.max()) + 1, int(end.max()) + 2)


def _copies(flows: pd.DataFrame):
    """The run's completed network flows by id, each one's class (``recurring``'s key) and the
    classes' sizes, and each flow's first and last bin (start, last byte received)."""
    net = flows[~flows["virtual"] & flows["completed"]].sort_values("flow_id").reset_index(drop=True)
    key = net[["src", "dst", "sport", "dport", "pg", "size_bytes"]].to_numpy()
    _, cls, counts = np.unique(key, axis=0, return_inverse=True, return_counts=True)
    start = (net["start_ns"].to_numpy() // BIN_NS).astype(np.int64)
    end = ((net["received_ns"].to_numpy() + BIN_NS - 1) // BIN_NS).astype(np.int64)
    return net, cls.reshape(-1), counts, start, end


def model(flows: pd.DataFrame, topology: str, gain: float, count: str, tolerance: float,
          order: str = "aligned", pool: str = "first", samples: int | None = None, stride: int = 16,
          share: str = "equal") -> pd.DataFrame:
    """The full run's network flows with their class, whether a sample, their alone time and the
    time the model predicts for the later copies (``predicted_ns``; -1 for samples and small classes).
    The later copies are always those after a class's first k (``recurring._samples``), as the memo
    takes them, less the probes (every ``stride``-th place of the first iteration, simulated) where
    ``pool`` is ``probed``; ``pool`` is what they draw from (``pool_of``)."""
    net, cls, counts, start, end = _copies(flows)
    trust = _samples(counts, tolerance) if samples is None else np.full(len(counts), samples)
    iteration = net["iteration"].to_numpy()
    learned = learnable_classes(cls, iteration, counts, trust, fixed=samples)  # per class, as the memo's
    learnable = learned[cls]
    paths = _paths(net, topology)
    counted = learnable if count == "recurring" else np.ones(len(net), bool)
    if share == "maxmin":
        alone, predict, time = _max_min_model(paths, net["start_ns"].to_numpy().astype(np.int64),
                                              net["received_ns"].to_numpy().astype(np.int64), counted, gain)
    else:
        occ = _occupied(paths, start, end, counted)
        paces = _paces(gain)  # the memo's own pace per count of sharers
        alone, time = _alone_bins(occ, paths, start, end, paces), end - start

        def predict(given):
            return _predicted_bins(occ, paths, start, given, paces)
    given, sample = np.zeros(len(net)), np.zeros(len(net), bool)
    deviations = []
    for c in np.flatnonzero(learned):
        members = np.flatnonzero(cls == c)  # by flow id, as the memo's samples are its first copies
        k = int(trust[c])
        probes = probes_of(members, iteration, k, stride) if pool == "probed" else members[:0]
        sample[members[:k]] = sample[probes] = True
        later = members[k:][~np.isin(members[k:], probes)]
        drawn = alone[pool_of(pool, members, k, probes)]
        if order in ("aligned", "shuffled"):
            given[later] = drawn[sample_order(order, later, len(drawn))]
        else:
            mean = drawn.mean()
            given[later] = mean
            deviations.append(drawn / mean)
    if order == "pooled":
        deviations = np.concatenate(deviations)
        later = (given > 0) & ~sample
        given[later] *= deviations[_hash(np.flatnonzero(later), len(deviations))]
    net["cls"], net["sample"], net["alone_ns"] = cls, sample, alone * BIN_NS
    net["time_ns"] = time * BIN_NS
    net["predicted_ns"] = predict(given) * BIN_NS
    net["ring"] = rings(net)
    return net


def by_sharers(flows: pd.DataFrame, topology: str, count: str) -> pd.DataFrame:
    """The learnable classes' copies (``recurring.learnable``) binned by the mean number of flows on
    their busiest data port over their life (``--count``), each copy's time over its time alone
    on an empty network (``standalone_fct_ns``): what n flows on a link cost each of them, with no
    model in between (``--sharers``)."""
    net, cls, counts, start, end = _copies(flows)
    learnable = learnable_classes(cls, net["iteration"].to_numpy(), counts, _samples(counts, 1.0))[cls]
    paths = _paths(net, topology)
    counted = learnable if count == "recurring" else np.ones(len(net), bool)
    occ = _occupied(paths, start, end, counted)
    sharers = _mean_sharers(occ, paths, start, end)[learnable]
    slowdown = (net["fct_ns"] / net["standalone_fct_ns"]).to_numpy()[learnable]
    bins = pd.cut(sharers, [0, 1.05, 1.3, 1.7, 2.2, 2.7, 3.3, np.inf],
                  labels=["1", "1.05-1.3", "1.3-1.7", "~2", "2.2-2.7", "~3", "more"])
    return pd.Series(slowdown).groupby(bins, observed=True).describe(percentiles=[0.25, 0.5, 0.75])[
        ["count", "25%", "50%", "75%", "mean"]]


def agreement(net: pd.DataFrame, spread: float) -> pd.Series:
    """Per learned class, whether its samples' alone times agree within ``spread`` of the fastest
    (``recurring.agree``, on the time to the last byte received alone: the tool has no ACK times)."""
    alone = net[net["sample"]].groupby("cls")["alone_ns"]
    return alone.max() <= alone.min() * (1 + spread)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("full", type=Path, help="a full run's output folder (its flows.parquet)")
    ap.add_argument("--topology", required=True, help="the run's topology spec")
    ap.add_argument("--gain", type=float, default=1.1, help="the pace gain (the memo fits it: 1.1 on the DDP fat-tree)")
    ap.add_argument("--count", choices=["recurring", "all"], default="recurring",
                    help="sharers: the recurring classes' flows (as the memo counts them) or every flow")
    ap.add_argument("--spread", type=float, default=1.0, help="the --memo-recurring spread (how many samples)")
    ap.add_argument("--order", choices=["aligned", "shuffled", "mean", "pooled"], default="aligned",
                    help="which sample a later copy takes: in turn (as the memo does), by a hash of its id, its "
                         "class's mean (mean), or that mean times a deviation drawn from every class's samples (pooled)")
    ap.add_argument("--pool", choices=["first", "probed", "spread", "all"], default="first",
                    help="what the later copies draw from: the class's first k copies, those and its probes "
                         "(DEVELOPERS.md, \"Probes\"), k spread over the iteration, or all its copies (its true level)")
    ap.add_argument("--stride", type=int, default=16, help="with --pool probed: a probe every STRIDE-th place")
    ap.add_argument("--share", choices=["equal", "maxmin"], default="equal",
                    help="a flow's share: equal among the flows on its busiest port (as the memo paces), or its "
                         "max-min fair share of its path (the live flows water-filled at every start and end)")
    ap.add_argument("--samples", type=int, default=None, metavar="K",
                    help="k, a class's samples (default: the memo's, a quarter of its copies, 8 to 32)")
    ap.add_argument("--sharers", action="store_true",
                    help="only print the copies' time over their time alone, by the mean count of flows on their "
                         "busiest port (no model: what sharing a link costs under the run's CC)")
    a = ap.parse_args()
    if a.stride < 1:
        ap.exit(2, f"pace_model: --stride {a.stride}: a probe every STRIDE-th place needs STRIDE of 1 or more\n")
    if a.samples is not None and a.samples < 1:
        ap.exit(2, f"pace_model: --samples {a.samples}: a class needs at least one sample\n")
    if not (a.full / "flows.parquet").is_file():
        ap.exit(2, f"pace_model: {a.full}: no flows.parquet there (give a full run's output folder)\n")
    try:
        if a.sharers:
            table = by_sharers(pd.read_parquet(a.full / "flows.parquet"), a.topology, a.count)
            print(f"copies of the learnable classes by the mean count of flows ({a.count}) on their busiest port: "
                  f"their time over their time alone")
            print(table.to_string(float_format="{:.2f}".format))
            return 0
        net = model(pd.read_parquet(a.full / "flows.parquet"), a.topology, a.gain, a.count, a.spread, a.order,
                    a.pool, a.samples, a.stride, a.share)
    except InputError as e:
        ap.exit(2, f"pace_model: {e}\n")
    later = net[net["predicted_ns"] >= 0]
    err = later["predicted_ns"] / later["time_ns"] - 1
    print(f"{len(later)} later copies of {net['cls'].nunique()} classes, gain {a.gain}, sharers: {a.count}, "
          f"shares: {a.share}")
    print(f"per copy: |error| mean {err.abs().mean():.2%}, signed mean {err.mean():+.2%}; "
          f"total time {later['predicted_ns'].sum() / later['time_ns'].sum() - 1:+.2%}")
    agreeing = agreement(net, a.spread)
    print(f"classes whose samples agree within {a.spread:.0%} at their alone pace (the memo trusts them; to the "
          f"last byte received): {int(agreeing.sum())} of {len(agreeing)}, their later copies "
          f"{later['cls'].isin(agreeing.index[agreeing]).mean():.1%} of all")
    rings = later.groupby("ring").agg(copies=("time_ns", "size"), predicted=("predicted_ns", "sum"), full=("time_ns", "sum"))
    rings["total"] = rings["predicted"] / rings["full"] - 1
    step = steps(net)
    by_step = step.groupby("ring").agg(steps=("full", "size"), full=("full", "sum"), predicted=("predicted", "sum"))
    rings["steps"] = by_step["steps"]
    rings["slowest"] = by_step["predicted"] / by_step["full"] - 1
    print("per ring: its copies' total time, and its steps' slowest flows (the steps all predicted)")
    print(rings[["copies", "total", "steps", "slowest"]].sort_values("slowest").to_string(
        formatters={"total": "{:+.2%}".format, "slowest": "{:+.2%}".format}))
    print(f"steps' slowest flows: |error| per ring mean {rings['slowest'].abs().mean():.2%}, "
          f"in all {by_step['predicted'].sum() / by_step['full'].sum() - 1:+.2%}")
    if later["iteration"].nunique() > 1:  # per iteration: a later one draws only from the first's copies
        for i, it in later.groupby("iteration"):
            ring = step[step["iteration"] == i].groupby("ring")[["predicted", "full"]].sum()
            slowest = (ring["predicted"] / ring["full"] - 1).abs()
            print(f"iteration {i}: {len(it)} later copies, total time "
                  f"{it['predicted_ns'].sum() / it['time_ns'].sum() - 1:+.2%}; "
                  f"steps' slowest flows per ring mean {slowest.mean():.2%}, worst {slowest.max():.2%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
