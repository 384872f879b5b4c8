"""Recurring flows: a network flow's course taken from its earlier copies in the run (issue 15).

A training iteration sends the same flow again and again: a ring step of one connection (same
hosts, same ports, hence the same ECMP path under stable connection ports, same size) recurs for
every bucket, every layer and every micro-batch, and where rings collide it meets the same
neighbours on the same links each time.  Such a flow's *class* is (source, destination, ports,
priority, size).  Once ``TRUST_SAMPLES`` copies of a class have been simulated to their last ACK,
the class is trusted: every copy not yet started becomes a timer (``EngineView.make_timers``)
whose durations, to its last byte received (which releases its successors) and to its last ACK,
are those of the simulated copies, taken in turn (the j-th timer the j-th copy's, modulo how many
there are).  The DAG still times every op, so the copies start when their ranks reach them; what is
not simulated is their packets.  Taking the copies' own durations in turn, rather than their mean,
keeps their spread: a ring's step waits for the slowest of its flows, and a mean would make every
step as fast as an average flow.

A class is trusted only if its first copies agree (``agree``: each duration within
``AGREE_TOLERANCE`` of the fastest copy's), so that its later copies are not a draw from a spread
the DAG would turn into timing errors: where rings collide under ECMP a copy takes one time or about
twice it depending on whether the other ring's flow is on the shared link at that moment, and the
class is refuted (simulated for the rest of the run).  A trusted class is stored in the memo (kind
``recurring``), keyed by its class and by the set of classes its run sends (the workload, up to
timing), so that a later run of the same workload takes every copy from the first; another workload,
whose contention may differ, never hits it.

What that leaves out, and why it is opt-in (``memo_recurring``): a timer crosses no link, so a flow
still simulated beside timers meets less contention than it would have (the first copies of a
class are simulated while the classes around it may already be timers), and a class's later copies
take what its first copies met, whatever the DAG's timing did to their neighbours since.  The
figures are in the README ("Recurring flows"), measured against full simulation.
"""

from __future__ import annotations

import hashlib

import numpy as np

from ..workload.flowfile import FlowSet
from .entry import canonical_json

KIND = "recurring"

TRUST_SAMPLES = 8  # simulated copies of a class before its later copies become timers
AGREE_TOLERANCE = 0.01  # ... which must agree: the slowest copy's times within 1% of the fastest's
SCAN_NS = 50_000  # how often (simulated time) finished copies are read: at most every 50 us


class Recurring:
    """The flow classes of one run and what was learned of them; driven by ``MemoSession``."""

    def __init__(self, flows: FlowSet, sport: np.ndarray, known: dict, trust: int = TRUST_SAMPLES,
                 spot_check: int = 0):
        network = np.flatnonzero(~flows.is_virtual)
        key = np.stack([flows.src[network], flows.dst[network], np.asarray(sport)[network], flows.dport[network],
                        flows.pg[network], flows.size[network]], axis=1).astype(np.int64)
        classes, cls, counts = np.unique(key.reshape(-1, 6), axis=0, return_inverse=True, return_counts=True)
        cls = cls.reshape(-1)
        workload = _workload(flows, classes)
        self.keys = [{"v": [int.from_bytes(hashlib.sha256(canonical_json([workload, c]).encode()).digest()[:8], "big")
                            >> 1], "e": []} for c in classes.tolist()]
        self.digests = [hashlib.sha256(canonical_json(k).encode()).hexdigest() for k in self.keys]
        self.known = known  # key digest -> MemoEntry (kind "recurring"), shared with the session
        self.sizes = flows.size
        order = np.lexsort((network, cls))  # by class, then flow id
        self.trust = trust
        self.members = np.split(network[order], np.cumsum(counts)[:-1])  # class -> its flows, by id
        self.class_of = np.full(len(flows), -1, dtype=np.int64)
        self.class_of[network] = cls
        recurring = counts[cls] > trust  # a class with copies left to take once it is trusted
        self.watch = network[recurring]  # copies whose times are still to be read
        self.samples: dict = {}  # class -> [(rx_ns, fct_ns), ...] of its simulated copies, in finish order
        self.trusted: set = set()
        self.refuted: set = set()  # classes whose first copies disagreed: simulated for the rest of the run
        self.next_scan = 0
        self.taken: list = []  # the copies turned into timers, per class taken
        # spot checks: every class taken keeps its first copy simulated (a copy simulated among
        # timers would meet none of its neighbours' ACKs, which move HPCC by 5-8%: it would check
        # that, not the entry), and the first ``spot_check`` of them are compared with the entry
        self.spot_check = spot_check
        self.checking: list = []  # (flow, class digest, its expected time to its last byte received)
        self.counters = {"memo_recurring_classes": int((counts > trust).sum()), "memo_recurring_trusted": 0,
                         "memo_recurring_refuted": 0, "memo_recurring_taken": 0, "memo_recurring_met_live": 0}

    def start(self, engine, session) -> None:
        """Before the first event: the classes the memo knows are taken from their first copy."""
        for c, digest in enumerate(self.digests):
            e = self.known.get(digest)
            if e is not None and e.key == self.keys[c]:
                self.samples[c] = list(zip(e.value["rx_ns"], e.value["fct_ns"]))
                self._take(engine, session, c, e.digest)
        self.watch = self.watch[~np.isin(self.class_of[self.watch], list(self.trusted))]

    def step(self, engine, session) -> None:
        """At a stop of the engine: read the copies that finished since the last scan, and turn the
        copies of newly trusted classes that have not started into timers."""
        if engine.now < self.next_scan or not len(self.watch):
            return
        self.next_scan = engine.now + SCAN_NS
        start, rx, fin = engine.flow_times(self.watch)
        done = fin >= 0
        if not done.any():
            return
        newly = []
        for f, s, r, e in zip(self.watch[done].tolist(), start[done].tolist(), rx[done].tolist(), fin[done].tolist()):
            got = self.samples.setdefault(int(self.class_of[f]), [])
            if len(got) < self.trust:  # the first copies to finish; later ones in this scan are not read
                got.append((r - s, e - s))
                if len(got) == self.trust:
                    newly.append(int(self.class_of[f]))
        self.watch = self.watch[~done]
        for c in newly:
            if agree(self.samples[c]):
                rx, fct = (list(x) for x in zip(*self.samples[c]))
                session.learn_recurring(self.keys[c], self.digests[c], {"rx_ns": rx, "fct_ns": fct})
                self._take(engine, session, c)
            else:
                self.refuted.add(c)
                self.counters["memo_recurring_refuted"] += 1
        if newly:
            self.watch = self.watch[~np.isin(self.class_of[self.watch], list(self.trusted | self.refuted))]

    def _take(self, engine, session, c: int, digest: str | None = None) -> None:
        """Class c is trusted (from the memo's entry ``digest``, or learned in this run): its copies
        not started yet become timers of its simulated copies' durations, in turn."""
        self.trusted.add(c)
        self.counters["memo_recurring_trusted"] += 1
        members = self.members[c]
        waiting = members[~engine.started(members)]
        if not len(waiting):
            return
        times = np.asarray(self.samples[c], dtype=np.int64)
        times = times[np.arange(len(waiting)) % len(times)]
        if self.spot_check and len(waiting) > 1:  # its first copy simulated, beside the others' first
            if len(self.checking) < self.spot_check:
                self.checking.append((int(waiting[0]), self.digests[c], int(times[0, 0])))
            engine.mark_memo_flows(waiting[:1], group=-(c + 1))
            waiting, times = waiting[1:], times[1:]
        engine.make_timers(waiting, times[:, 0], times[:, 1], group=-(c + 1))  # a class was learned alone
        self.taken.append(waiting)
        self.counters["memo_recurring_taken"] += len(waiting)
        if digest is not None:  # a lookup that hit, for the per-iteration counts
            session.looked_flows.append(int(waiting[0]))
            session.note_whole_hit(digest, int(waiting[0]), int(times[:, 0].sum()), int(self.sizes[waiting].sum()))

    def finish(self, engine, session) -> None:
        """At the end of the run: how many copies were simulated after all (a flow they were not
        learned with crossed their ports), and the spot checks."""
        if self.taken:
            taken = np.concatenate(self.taken)
            self.counters["memo_recurring_met_live"] = int((~engine.timers(taken)).sum())
        for f, digest, expected in self.checking:  # spot checks: the copy as simulated against the class's time
            start, rx, _ = engine.flow_times([f])
            actual = int(rx[0] - start[0]) if rx[0] >= 0 else -1
            session.checks.append({"time_ns": int(start[0]), "digest": digest, "flows": [f], "t_conv_ns": expected,
                                   "expected_ns": expected, "actual_ns": actual if actual > 0 else None,
                                   "error": abs(expected - actual) / actual if actual > 0 else float("nan"),
                                   "interrupted": actual <= 0})


def _workload(flows: FlowSet, classes: np.ndarray) -> str:
    """What a class's course depends on besides itself, up to timing: the set of classes the run
    sends, and the set of compute times and gaps between its ops (another speed of the GPUs meets
    other contention).  The same workload replayed for more iterations has the same digest."""
    dur = flows.duration_ns[flows.is_virtual] if flows.duration_ns is not None else np.zeros(0, np.int64)
    delay = flows.delay_ns if flows.delay_ns is not None else np.zeros(0, np.int64)
    what = [classes.tolist(), np.unique(dur).tolist(), np.unique(delay).tolist()]
    return hashlib.sha256(canonical_json(what).encode()).hexdigest()


def agree(samples) -> bool:
    """A class's simulated copies agree: each of their two durations (to the last byte received and
    to the last ACK) spread by at most ``AGREE_TOLERANCE`` of its shortest."""
    times = np.asarray(samples, dtype=np.float64)
    return bool((times.max(axis=0) <= times.min(axis=0) * (1 + AGREE_TOLERANCE)).all())
