"""Episodes: whole iterations taken from the memo (issue 15).

A replay names its iterations to the memo as *groups* of flows (one per job and iteration, flows by
rank, then op, then id: the order in which ``repeat_iterations`` matches an iteration's copies).  A
group whose network traffic ran on an otherwise idle network (no network flow of another group in
flight from its first packet to its last ACK) is an *episode*: it starts with empty queues and new
QPs, so its course is a function of its flows, their paths, the DAG between them and the network,
except for the skew with which its ranks reach it (what they still compute when the network goes
idle).  The memo keeps an isolated episode's course (below: once it has seen it recur), keyed by
that structure (``key``), as the time each of its network flows took from its start to its last
byte received (``rx_ns``, which releases its successors) and to its last ACK (``fct_ns``), and when
it started after the first (``start_ns``).  When a later group has the same key and none of its
network flows has started, each of them becomes a timer of its learned duration (``EngineView
.make_timers``): the DAG still times every op, so the group's flows start when its ranks reach them,
and only the packets are not simulated.

The skew is not in the key: on a 4-layer DDP GPT-13B of 16 GPUs on a k=4 fat-tree (HPCC, 4
iterations of ``bench_scale``'s ``ddp16``, full run, 2026-12-03) the ranks reach the network 0.06-1.5
ms apart from one iteration to the next (iteration 0 starts with none), and no two iterations start
alike to within 50 us, so a key that held it would never hit.  What leaving it out costs was measured
on that run by re-timing its DAG with iterations 1-3 taking iteration 0's network times: per-flow
FCT 1.62-1.91% mean, 10.9-13.2% p99 against each iteration's own, mean FCT +0.28..+0.88%, iteration
times within 0.4% (DEVELOPERS.md, "Where the next issues plug in", Episodes).  A hit is the full
run's own iteration-to-iteration variation, no more; whether that is within a workload's bounds is
the noise floor's to say, which is why episodes are opt-in (``memo_episodes``).

An iteration is remembered only once two simulated copies of it in one run agreed: their network
flows' mean FCT and their network spans (first start to last byte received) within
``AGREE_TOLERANCE``, the bounds that hold on every workload, chaotic or not; the first copy is
stored (``memo_episode_learned``), and a pair that disagrees is counted (``memo_episode_refuted``)
and the later copy compared with the next.  So the database holds only courses that were seen to
recur, and a later run trusts them at once (a check inside the later run would prove nothing: its
first iteration is the very trajectory the entry came from).  Measured 2026-12-03 on a 2-layer DDP
GPT-13B of 128 GPUs (TP 8, PP 2, 4 micro-batches) on ``fat-tree:k=8,gpus_per_server=8``, HPCC, 3
iterations: the full run's iterations last 155.4, 163.2 and 179.0 ms and differ per flow by 11-14%;
taken from the memo without this rule, iterations 1-2 were 4.0% and 5.1% off and the mean FCT 1.1%.

Groups are taken in order; a group is looked up once the group before it has ended (its network
flows all acknowledged, or it was itself taken from the memo), while its own network flows all
wait.  A hit whose flows then overlap another group's network flows in time (its ranks reached it
early) is counted (``memo_episode_overlaps``): those flows did not meet each other's packets.
"""

from __future__ import annotations

import hashlib

import numpy as np

from ..workload.flowfile import FlowSet
from .entry import canonical_json

KIND = "episode"
AGREE_TOLERANCE = 0.01  # two copies agree: mean FCT and network span within 1% of each other
BEFORE, AFTER = 1, 2  # an edge's weight: vertex i is a predecessor of vertex j (i < j), or j of i


def key_of(flows: FlowSet, sport: np.ndarray, members: np.ndarray) -> dict:
    """A group's structure as a memo key: one vertex per flow in ``members`` order (a group's
    canonical order, the same in every copy of an iteration), weighted by a
    63-bit digest of what its course depends on (network or virtual, hosts, size, ports, priority,
    compute time, gap after its predecessors, how many of those are outside the group), and its
    DAG inside the group as edges.  Which flows outside the group it waits for is left out (they
    set when it starts), but not whether it waits for any: a first iteration, whose ranks all
    start at once, has a course of its own (on ``ddp16`` its flows differ from the later
    iterations' by 1.6-1.9%, and from each other's by as much)."""
    at = {int(f): i for i, f in enumerate(members)}
    dur = flows.duration_ns if flows.duration_ns is not None else np.full(len(flows), -1)
    delay = flows.delay_ns if flows.delay_ns is not None else np.zeros(len(flows), dtype=np.int64)
    v, e = [], set()  # a flow may name one predecessor twice (two of its op's deps map to it)
    for i, f in enumerate(members):
        f = int(f)
        outside = 0
        for d in flows.predecessors(f):
            j = at.get(int(d))
            if j is None:
                outside += 1
            else:
                e.add((j, i, BEFORE) if j < i else (i, j, AFTER))
        what = [int(dur[f]), int(flows.src[f]), int(flows.dst[f]), int(flows.size[f]), int(sport[f]),
                int(flows.dport[f]), int(flows.pg[f]), int(delay[f]), outside]
        v.append(int.from_bytes(hashlib.sha256(canonical_json(what).encode()).digest()[:8], "big") >> 1)
    return {"v": v, "e": [list(x) for x in sorted(e)]}


def key_digest(key: dict) -> str:
    return hashlib.sha256(canonical_json(key).encode()).hexdigest()


class Episodes:
    """The groups of one run and what the memo knows of them; driven by ``MemoSession``."""

    def __init__(self, flows: FlowSet, sport: np.ndarray, groups: list[np.ndarray], known: dict):
        self.groups = [np.asarray(g, dtype=np.int64) for g in groups]
        virtual = flows.is_virtual
        self.positions = [np.flatnonzero(~virtual[g]) for g in self.groups]  # of each group's network flows
        self.network = [g[p] for g, p in zip(self.groups, self.positions)]
        self.all_network = np.flatnonzero(~virtual)
        self.keys = [key_of(flows, sport, g) for g in self.groups]
        self.digests = [key_digest(k) for k in self.keys]
        self.known = known  # key digest -> MemoEntry (kind "episode"), shared with the session
        self.next = 0  # the first group not yet ended or taken from the memo
        self.acked = 0  # how many of its first network flows have their last ACK
        self.looked = [False] * len(self.groups)
        self.hit = [False] * len(self.groups)
        self.candidates: dict = {}  # key digest -> the value of its last simulated copy, not yet stored
        self.sizes = flows.size
        self.counters = {"memo_episode_hits": 0, "memo_episode_misses": 0, "memo_episode_learned": 0,
                         "memo_episode_unisolated": 0, "memo_episode_overlaps": 0, "memo_episode_refuted": 0}

    def step(self, engine, session) -> None:
        """At a stop of the engine: learn the groups that have ended, and take from the memo the
        ones that may start next."""
        while self.next < len(self.groups):
            i = self.next
            net = self.network[i]
            if not len(net):
                self.next += 1
                continue
            if not self.looked[i]:
                self._look_up(engine, session, i)
            if self.hit[i]:
                self.next += 1
                continue
            # the flows are checked in order, each until it is done: a stop costs O(1), not O(group)
            while self.acked < len(net) and engine.acknowledged(int(net[self.acked])):
                self.acked += 1
            if self.acked < len(net):
                return
            self.acked = 0
            self._learn(engine, session, i)
            self.next += 1

    def _look_up(self, engine, session, i: int) -> None:
        """Group i, whose predecessor has ended: a hit if the memo knows its key and none of its
        network flows has started (else it is simulated)."""
        self.looked[i] = True
        net = self.network[i]
        session.looked_flows.append(int(net[0]))
        e = self.known.get(self.digests[i])
        if e is None or e.key != self.keys[i] or engine.any_started(net):
            self.counters["memo_episode_misses"] += 1
            return
        pos = self.positions[i]
        rx = np.asarray(e.value["rx_ns"], dtype=np.int64)[pos]
        fct = np.asarray(e.value["fct_ns"], dtype=np.int64)[pos]
        engine.make_timers(net, rx, fct, group=i + 1)  # an iteration's flows were learned together
        self.hit[i] = True
        self.counters["memo_episode_hits"] += 1
        session.note_whole_hit(e.digest, int(net[0]), int(rx.max()), int(self.sizes[net].sum()))

    def _learn(self, engine, session, i: int) -> None:
        """Group i has ended as simulated: if nothing else crossed the network meanwhile, compare it
        with the last simulated copy of its key, and remember the two's course if they agree."""
        digest = self.digests[i]
        if digest in self.known:
            return
        start, rx, fin = engine.flow_times(self.network[i])
        if engine.active_between(int(start.min()), int(fin.max()), self._others(i)):
            self.counters["memo_episode_unisolated"] += 1
            return
        value = {}
        for name, ns in (("start_ns", start - start.min()), ("rx_ns", rx - start), ("fct_ns", fin - start)):
            per_flow = np.full(len(self.groups[i]), -1, dtype=np.int64)
            per_flow[self.positions[i]] = ns
            value[name] = per_flow.tolist()
        earlier = self.candidates.get(digest)
        if earlier is None or not agree(earlier, value):
            self.counters["memo_episode_refuted"] += earlier is not None
            self.candidates[digest] = value
            return
        if session.learn_episode(self.keys[i], digest, earlier):
            self.counters["memo_episode_learned"] += 1

    def _others(self, i: int) -> np.ndarray:
        """The network flows of every group but group i."""
        return np.setdiff1d(self.all_network, self.network[i], assume_unique=True)

    def finish(self, engine) -> None:
        """At the end of the run (before the session settles the timers): count the hits whose flows
        met another group's network flows in time (which they did not see)."""
        for i in range(len(self.groups)):
            if not self.hit[i]:
                continue
            start, _, fin = engine.flow_times(self.network[i])
            if (start >= 0).all() and engine.active_between(int(start.min()), int(fin.max()), self._others(i)):
                self.counters["memo_episode_overlaps"] += 1


def agree(a: dict, b: dict) -> bool:
    """Two copies of an episode (entry values) agree: their network flows' mean FCT and their
    network spans within ``AGREE_TOLERANCE`` of each other."""
    net = np.asarray(a["rx_ns"]) >= 0
    fct_a, fct_b = np.asarray(a["fct_ns"])[net], np.asarray(b["fct_ns"])[net]
    span_a, span_b = ((np.asarray(v["start_ns"]) + np.asarray(v["rx_ns"]))[net].max() for v in (a, b))
    return max(abs(fct_b.mean() / fct_a.mean() - 1), abs(span_b / span_a - 1)) <= AGREE_TOLERANCE
