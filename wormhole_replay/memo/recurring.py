"""Recurring flows: a network flow's course taken from its earlier copies in the run (issue 15).

A training iteration sends the same flow again and again: a ring step of one connection (same
hosts, same ports, hence the same ECMP path under stable connection ports, same size) recurs for
every bucket, every layer and every micro-batch.  Such a flow's *class* is (source, destination,
ports, priority, size).  Once ``TRUST_SAMPLES`` copies of a class have been simulated to their last
ACK, and they agree, the class is trusted: every copy not yet started becomes a timer
(``EngineView.make_timers``).  The DAG still times every op, so the copies start when their ranks
reach them; what is not simulated is their packets.

Where rings collide under ECMP a copy's time depends on whom it meets: about twice its time alone
beside another ring's flow on a shared link.  So a copy is learned at its *alone pace*
(``paced``): its time, moment by moment, divided by how many flows' data were leaving the busiest
port its data crossed; and a timer runs at that pace divided by how many flows' data (running
timers and packet flows) leave its busiest port, its end moved whenever one starts or ends there,
and reserves its share of its links as a fluid flow does (``wormhole/timers.py``).
That is a flow-level model of the contention between timers, equal shares on the busiest link,
calibrated per class by its simulated copies; HPCC's own shares are not equal (two flows on a
link split it 46/54 or so, a split that moves with every 1-ns change of the run), which is what a
class's paced copies still spread by.  A timer's durations, to its last byte received (which
releases its successors) and to its last ACK, are its class's paced copies' in turn (the j-th
timer the j-th copy's, modulo how many there are), not their mean: a ring's step waits for the
slowest of its flows, and a mean would make every step as fast as an average flow.

A class is trusted only if its paced copies agree (``agree``: each duration within the spread
asked, ``AGREE_TOLERANCE`` by default, of the fastest copy's); the others are refuted (simulated
for the rest of the run).  1% keeps the timers' error within the absolute bounds, and refutes most
classes where HPCC's shares wander; on a fabric whose full simulation is chaotic (its per-flow
noise floor, ``audit --noise-floor``, far above 1%) a user may ask for a spread up to that floor
(``replay --memo-recurring 0.1``): each timer then errs by about what one copy differs from
another, which is what one 1-ns change does to the full run.  A trusted class is stored in the
memo (kind ``recurring``), keyed by its class and by the set of classes its run sends (the
workload, up to timing), so that a later run of the same workload takes every copy from the first
(where the entry's copies agree within that run's spread); another workload, whose contention may
differ, never hits it.

What that leaves out, and why it is opt-in (``memo_recurring``): equal shares are a flow-level
model, and where a foreign flow (not the memo's) is live on a timer's ports the timer is simulated
(``wormhole/timers.py``).  The figures are in the README ("Recurring flows"), measured against full
simulation.
"""

from __future__ import annotations

import hashlib

import numpy as np

from ..errors import InputError
from ..workload.flowfile import FlowSet
from .entry import canonical_json

KIND = "recurring"

TRUST_SAMPLES = 8  # simulated copies of a class before its later copies become timers
AGREE_TOLERANCE = 0.01  # ... which must agree: the slowest copy's times within 1% of the fastest's
SCAN_NS = 50_000  # how often (simulated time) finished copies are read: at most every 50 us
GROUP = -1  # the timers' group (``FT_MEMO_TIMER``): all recurring classes run beside each other, each at its share
PACE = "alone-pace"  # in the key: entries whose times are at the alone pace (before 2026-12-03 they were not)


class Recurring:
    """The flow classes of one run and what was learned of them; driven by ``MemoSession``."""

    def __init__(self, flows: FlowSet, sport: np.ndarray, known: dict, trust: int = TRUST_SAMPLES,
                 spot_check: int = 0, tolerance: float = AGREE_TOLERANCE):
        network = np.flatnonzero(~flows.is_virtual)
        key = np.stack([flows.src[network], flows.dst[network], np.asarray(sport)[network], flows.dport[network],
                        flows.pg[network], flows.size[network]], axis=1).astype(np.int64)
        classes, cls, counts = np.unique(key.reshape(-1, 6), axis=0, return_inverse=True, return_counts=True)
        cls = cls.reshape(-1)
        workload = _workload(flows, classes)
        self.keys = [{"v": [int.from_bytes(hashlib.sha256(canonical_json([workload, c, PACE]).encode()).digest()[:8],
                                           "big") >> 1], "e": []} for c in classes.tolist()]
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
        self.sampled: dict = {}  # class -> those copies' flow ids
        self.alone: dict = {}  # class -> [(alone_rx_ns, tail_ns), ...]: those copies at their alone pace (``paced``)
        self.tolerance = tolerance
        self._on_port = None  # data port -> the network flows whose data leaves it (``paced``)
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
                alone = list(zip(e.value.get("alone_rx_ns", e.value["rx_ns"]),
                                 np.subtract(e.value["fct_ns"], e.value["rx_ns"]).tolist()))
                if agree(_spans(alone), self.tolerance):
                    self.alone[c] = alone
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
                self.sampled.setdefault(int(self.class_of[f]), []).append(f)
                if len(got) == self.trust:
                    newly.append(int(self.class_of[f]))
        self.watch = self.watch[~done]
        for c in newly:
            rx, fct = (list(x) for x in zip(*self.samples[c]))
            alone = self.paced(engine, c)
            self.alone[c] = [(a, f - r) for a, r, f in zip(alone, rx, fct)]
            if agree(_spans(self.alone[c]), self.tolerance):
                session.learn_recurring(self.keys[c], self.digests[c], {"rx_ns": rx, "fct_ns": fct, "alone_rx_ns": alone})
                self._take(engine, session, c)
            else:
                self.refuted.add(c)
                self.counters["memo_recurring_refuted"] += 1
        if newly:
            self.watch = self.watch[~np.isin(self.class_of[self.watch], list(self.trusted | self.refuted))]

    def paced(self, engine, c: int) -> list:
        """Each sampled copy of class c's time to its last byte received at the pace it would have had
        alone: its time, moment by moment, divided by how many flows' data (its own included) was
        leaving the busiest port its data leaves.  Timers run at that pace times their share
        (``wormhole/timers.py``), so copies that met other flows and copies that ran alone can be
        compared, and taken for each other."""
        if self._on_port is None:  # a class's copies share its 4-tuple's path: one look per class
            classes: dict = {}
            for k, ports in enumerate(engine.links([int(m[0]) for m in self.members])):
                for p in ports:
                    classes.setdefault(p, []).append(self.members[k])
            self._on_port = {p: np.concatenate(m) for p, m in classes.items()}
        on = [self._on_port[p] for p in engine.links([int(self.members[c][0])])[0]]
        start, rx, _ = engine.flow_times(self.sampled[c])
        return [_alone_ns(engine, on, int(s), int(r)) for s, r in zip(start, rx)]

    def _take(self, engine, session, c: int, digest: str | None = None) -> None:
        """Class c is trusted (from the memo's entry ``digest``, or learned in this run): its copies
        not started yet become timers of its simulated copies' durations, in turn."""
        self.trusted.add(c)
        self.counters["memo_recurring_trusted"] += 1
        members = self.members[c]
        waiting = members[~engine.started(members)]
        if not len(waiting):
            return
        alone = np.asarray(self.alone[c], dtype=np.int64)  # (alone pace to the last byte received, then its last ACK)
        times = np.stack([alone[:, 0], alone[:, 0] + alone[:, 1]], axis=1)[np.arange(len(waiting)) % len(alone)]
        if self.spot_check and len(waiting) > 1:  # its first copy simulated, beside the others' first
            if len(self.checking) < self.spot_check:
                self.checking.append((int(waiting[0]), self.digests[c], int(times[0, 0])))
            engine.mark_memo_flows(waiting[:1], group=GROUP)
            waiting, times = waiting[1:], times[1:]
        engine.make_timers(waiting, times[:, 0], times[:, 1], group=GROUP)  # paced: a recurring group
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


def _alone_ns(engine, on_ports, start: int, rx: int) -> int:
    """``integral dt / sharers(t)`` over ``[start, rx)``: ``sharers(t)`` the most flows live at t (from
    their start to their last byte received, or on) among those of each list of ``on_ports``."""
    cuts, counts = [np.array([start, rx], np.int64)], []
    lives = []
    for flows in on_ports:
        s, r, _ = engine.flow_times(flows)
        live = (s >= 0) & (s < rx) & ((r < 0) | (r > start))
        s, r = s[live], np.where(r[live] < 0, rx, r[live])
        lives.append((np.sort(s), np.sort(r)))
        cuts += [s, r]
    t = np.unique(np.clip(np.concatenate(cuts), start, rx))
    mid = (t[:-1] + t[1:]) / 2
    for s, r in lives:  # live at mid: started before it, not received by it
        counts.append(np.searchsorted(s, mid, side="right") - np.searchsorted(r, mid, side="right"))
    sharers = np.maximum(np.max(counts, axis=0), 1) if counts else np.ones(len(mid))
    return round(float((np.diff(t) / sharers).sum()))


def _spans(alone) -> list:
    """(time to the last byte received, to the last ACK) of copies given as (alone pace, ACK tail)."""
    return [(a, a + tail) for a, tail in alone]


def tolerance_of(option) -> float:
    """The agreement tolerance a ``memo_recurring`` option asks for: ``True`` the default
    (``AGREE_TOLERANCE``), ``False`` / ``None`` none (off), a number that spread (0 < x <= 1)."""
    if option is None or option is False:
        return 0.0
    if option is True:
        return AGREE_TOLERANCE
    x = float(option)
    if not 0 < x <= 1:
        raise InputError(f"--memo-recurring: the copies' agreement spread must be above 0 and at most 1 (100%), not {option}")
    return x


def agree(samples, tolerance: float = AGREE_TOLERANCE) -> bool:
    """A class's copies agree: each of their two durations (to the last byte received and to the
    last ACK) spread by at most ``tolerance`` of its shortest."""
    times = np.asarray(samples, dtype=np.float64)
    return bool((times.max(axis=0) <= times.min(axis=0) * (1 + tolerance)).all())
