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
(``spent_beside``, ``_alone``): its time, moment by moment, at its pace beside the n flows' data that were leaving the
busiest port its data crossed, ``min(1, gain / n)`` (1 alone); and a timer covers that time at its pace
beside the flows' data (running timers and packet flows) leaving its busiest port, its end moved
whenever one starts or ends there, and reserves its share of its links as a fluid flow does
(``wormhole/timers.py``).  ``gain``, what n flows on a link get together against one alone there,
is fitted on the run's own sampled copies, over the classes whose copies shared their links for
more or less of their lives (``fit_gain``: 1.12 on the 128-GPU DDP fat-tree under HPCC, where a
ring's flow alone does not fill its link; 1 where nothing shows it), again as classes are sampled
until they show one, which every class is then judged and paced at (``_fit_gain``).  A class
trusted at a spread wider than the default is learned from a quarter of its copies (4 to 32,
``_samples``) rather than its first 8, which are one bucket's ring steps and faster than the rest.
That is a flow-level model of the contention between timers, shares of the busiest link,
calibrated per class by its simulated copies; HPCC's own shares are not equal (two flows on a
link split it 46/54 or so, a split that moves with every 1-ns change of the run), which is what a
class's paced copies still spread by.  A timer's durations, to its last byte received (which
releases its successors) and to its last ACK, are its class's paced copies' in turn (the j-th
timer the j-th copy's, modulo how many there are), not their mean: a ring's step waits for the
slowest of its flows, and a mean would make every step as fast as an average flow.

A class is trusted only if its paced copies agree (``agree``: each duration within the spread
asked, ``AGREE_TOLERANCE`` by default, of the fastest copy's); the others are refuted (simulated
for the rest of the run; at a spread wider than the default, taken by place: a copy in a later
iteration, or a later run, takes the time of the copy at its place in the iteration, the same op of
the same rank, once that one was simulated, as simulated, at no pace: ``Recurring._place``; and
so, in a trusted class, do the copies at the place of one simulated after all, beside a foreign
flow: ``Recurring._simulated_places``).  1% keeps the timers' error
within the absolute bounds, and refutes most classes where HPCC's shares wander; on a fabric whose
full simulation is chaotic (its per-flow noise floor, ``audit --noise-floor``, far above 1%) a user
may ask for a spread up to that floor (``replay --memo-recurring 0.1``): each timer then errs by
about what one copy differs from another, which is what one 1-ns change does to the full run.  A
trusted class is stored in the memo (kind ``recurring``), keyed by its class and by the set of
classes its run sends (the workload, up to timing), so that a later run of the same workload takes
every copy from the first (where the entry's copies agree within that run's spread); another
workload, whose contention may differ, never hits it.

A copy's sharers are the recurring classes' flows, not the small classes' (pipeline sends), which
ring flows starve (``_flows_on``).  Counting them learned the copies sampled beside a send short,
which a *drift* made up for (2026-12-04: the paced timers stretched by the median ratio of the
copies simulated after all to their class's learned time); with them not counted the drift put
the 128-GPU DDP fat-tree's mean FCT 1.42% long, and was taken out (DEVELOPERS.md, "Recurring
flows: the measurements", "Sharers without the sends").

Over 3 iterations or more at a wide spread the first iteration, which starts every rank at once,
is a cold start and is not what later iterations repeat: a class sampled whole there learns from
the second instead (``_learn_from``), and a class with timers there is split in two, its first
iteration and the rest, each learned from its own copies (``_after_cold_start``).  Over 2
iterations or more at a wide spread, under HPCC, a class whose copies span the iteration (a ring's 25 MB
buckets, hundreds of copies) is past the cold start for most of it, and is learned from all its
first iteration's copies (no timer there), each later copy taking the alone time of the copy at
its place there (``_whole_first``): learned from its first 32 copies, a class's level is one draw
of its first buckets' chaos, which its timers would replay in every iteration.

Under DCQCN a class learned in the run whose samples shared a link (``_shared``; not a ring alone
on its rail) takes no copy of the run's first iteration (``TIMERS_FIRST_CCS``, ``_take``): there its
neighbours are packet flows (classes being learned, refuted ones), and a paced timer among DCQCN's
packet flows misplaces their time (two DCQCN flows on a link take 2.7 times one's time alone, not
the two an equal share gives).  On ``moe16`` (one iteration) its timers put the backward
all-to-alls simulated beside them long: mean FCT +1.51%, per flow 29.38% / 238.70%, beyond the
four-draw floor (28.77% / 234.40%); held back, -0.75%, 27.33% / 207.15%.  Its first iteration's
copies give their places' times to the later iterations' (as a refuted class's do): among timers
DCQCN's paced model is no better (``moe16`` over two iterations with every class held back, the
second paced: mean FCT -1.41%, per flow 34.36% / 339.8%; by place +0.13%, 30.95% / 260.8%; its
1-ns floor +1.59%, 31.63% / 242.8%), and a later run takes the first iteration's copies at the
times this one simulated them (``finish``; DEVELOPERS.md, "DCQCN's first iteration simulated").

A class too small to learn (``learnable``: a few copies an iteration, a pipeline send) is
simulated, and at a spread wider than the default stored by copy (its ordinal in the run); a later
run of the workload takes each copy as a timer *aside* of the time the first run gave it, which
holds it and shares nothing, as such a flow shared next to nothing beside the rings (``_aside``).
Within a run, at a wide spread, a copy simulated in the second iteration or later gives its time
to the copies at its place in the later ones, taken aside the same way (``_sends``).

What that leaves out, and why it is opt-in (``memo_recurring``): shares at a gain are a flow-level
model, and where a foreign flow is live on a timer's ports the timer is simulated
(``wormhole/timers.py``).  Foreign here are the copies of refuted classes (not yet placed); the
flows of classes too small to learn (``small``) and the copies of classes still being learned are
the memo's own packet flows, foreign only to the timers whose data meet theirs (``start``).  The figures
are in DEVELOPERS.md ("Recurring flows: the measurements"), measured against full simulation.
"""

from __future__ import annotations

import hashlib

import numpy as np

from ..arrays import unique_rows
from ..errors import InputError
from ..workload.flowfile import FlowSet
from .cold_sends import ColdSends
from .entry import canonical_json

KIND = "recurring"

TRUST_SAMPLES = 8  # simulated copies of a class before its later copies become timers
WIDE_SHARE = 4  # where they may spread wider than AGREE_TOLERANCE: a quarter of the class's copies, ...
TRUST_SAMPLES_WIDE = 32  # ... at most 32, ...
TRUST_SAMPLES_WIDE_LEAST = 4  # ... and at least 4 (a ring's last bucket: 4 of its 14 copies; ``_samples``)
AGREE_TOLERANCE = 0.01  # ... which must agree: the slowest copy's times within 1% of the fastest's
SCAN_NS = 50_000  # how often (simulated time) finished copies are read: at most every 50 us
SCAN_PLACES_NS = 1_000_000  # ... and trusted classes' copies simulated after all, every 1 ms (``_simulated_places``)
GROUP = -1  # the timers' group (``FT_MEMO_TIMER``): all recurring classes run beside each other, each at its share
SMALL_GROUP = -2  # the small classes' flows and the copies of classes being learned (``start``): packet
#                    flows, foreign to the timers whose data meets theirs
PACE = "alone-pace"  # in the key: entries whose times are at the alone pace (before 2026-12-03 they were not)
BY_PLACE = "by-place"  # in the key of a refuted class's entry: its copies' times by their place in an iteration
STEADY = "after-the-first-iteration"  # in the class row of a class's later part (``_after_cold_start``)
SIMULATED = "simulated-by-place"  # ... of a trusted class's: its copies simulated from their start, by place
BY_COPY = "aside-by-copy"  # ... of a small class's: its copies' times by their ordinal in the run (``_aside``)
GAINS = np.round(np.arange(0.7, 1.3001, 0.01), 2)  # the pace gains tried (``fit_gain``, ``timers.pace``)
GAIN_CLASSES = 16  # classes sampled before the gain is first fitted and any class is judged (fit_gain)
GAIN_EVIDENCE = 0.05  # ... one taken only where it cuts the copies' disagreement by a twentieth (fit_gain), ...
GAIN_SPREAD = 0.1  # ... over the classes whose copies' shares of their time beside other flows spread this much (informs)
AS_SIMULATED = float("inf")  # a placed copy's pace gain: 1 beside any number of flows (``_place``)
COLD_START_ITERATIONS = 3  # from this many iterations, a class sampled whole there skips the first (``_learn_from``)
SPLIT_COVER = 0.25  # ... one with timers there is split where its later samples are this much of an iteration
SENDS_FROM = 1  # the first iteration (0-based) whose small classes' copies give their places to later ones (``_sends``)
WHOLE_FIRST_CCS = ("hpcc",)  # where a class spanning its first iteration is learned from all of it (``_whole_first``)
TIMERS_FIRST_CCS = ("hpcc",)  # where a class learned in a run takes copies of its first iteration (``_take``)
MOST_SHARERS = 16  # a copy's time is counted by how many flows shared its busiest port, 16 or more as 16


class Recurring:
    """The flow classes of one run and what was learned of them; driven by ``MemoSession``."""

    def __init__(self, flows: FlowSet, sport: np.ndarray, known: dict, trust: int | None = None,
                 spot_check: int = 0, tolerance: float = AGREE_TOLERANCE, iteration_of=None, cc: str = "hpcc"):
        network = np.flatnonzero(~flows.is_virtual)
        iteration = np.zeros(len(flows), np.int64) if iteration_of is None else np.asarray(iteration_of, np.int64)
        key = np.stack([flows.src[network], flows.dst[network], np.asarray(sport)[network], flows.dport[network],
                        flows.pg[network], flows.size[network]], axis=1).astype(np.int64)
        classes, cls, counts = unique_rows(key.reshape(-1, 6))
        workload = _workload(flows, classes)
        rows = classes.tolist()
        samples = _samples(counts, tolerance) if trust is None else np.full(len(counts), trust)
        # per class: the copies of its first iteration where it is learned from all of them, else 0 (``_whole_first``)
        whole_first = _whole_first(cls, iteration[network], samples, tolerance) if trust is None and cc in WHOLE_FIRST_CCS \
            else np.zeros_like(samples)
        samples = np.maximum(samples, whole_first)
        later = _after_cold_start(cls, iteration[network], counts, samples, tolerance)  # per copy
        whole_cls = cls
        if later.any():  # such classes in two: their first iteration's copies, and the later ones (tagged)
            classes, cls, counts = unique_rows(np.concatenate([key, later[:, None].astype(np.int64)], axis=1))
            rows = [c[:6] if not c[6] else [*c[:6], STEADY] for c in classes.tolist()]
        # per class: a later part's first part, else -1 (``step``, ``_refute``)
        self.first_part = _first_parts(classes) if later.any() else np.full(len(counts), -1, np.int64)
        self.keys = [_key([workload, c, PACE]) for c in rows]
        self.digests = [_digest(k) for k in self.keys]
        self.place_keys = [_key([workload, c, PACE, BY_PLACE]) for c in rows]
        self.place_digests = [_digest(k) for k in self.place_keys]
        self.simulated_keys = [_key([workload, c, PACE, SIMULATED]) for c in rows]
        self.simulated_digests = [_digest(k) for k in self.simulated_keys]
        self.copy_keys = [_key([workload, c, PACE, BY_COPY]) for c in rows]
        self.copy_digests = [_digest(k) for k in self.copy_keys]
        self.known = known  # key digest -> MemoEntry (kind "recurring"), shared with the session
        self.sizes = flows.size
        order = np.lexsort((network, cls))  # by class, then flow id
        most = _most_in_one_iteration(cls, iteration[network], len(counts))
        # per class: how many simulated copies it is learned from
        if not later.any():
            self.trust = samples.copy()
        elif trust is not None:
            self.trust = np.full(len(counts), trust)
        else:  # split: the first part learns from as many copies as the whole class did; the later part
            steady = classes[:, 6] == 1  # from one iteration of its copies, which its timers then take by
            parent = np.zeros(len(counts), np.int64)  # place (at most TRUST_SAMPLES_WIDE)
            parent[cls] = whole_cls
            self.trust = _samples(counts, tolerance)
            self.trust[steady] = np.minimum(most[steady], TRUST_SAMPLES_WIDE)
            self.trust[~steady] = samples[parent[~steady]]
        self.members = np.split(network[order], np.cumsum(counts)[:-1])  # class -> its flows, by id
        self.class_of = np.full(len(flows), -1, dtype=np.int64)
        self.class_of[network] = cls
        # a copy's place: its ordinal among its class's copies in its iteration, by id (the same op of
        # the same rank in every iteration, and in every run of the workload)
        by = np.lexsort((network, iteration[network], cls))
        first = np.r_[True, (np.diff(cls[by]) != 0) | (np.diff(iteration[network][by]) != 0)]
        self.place = np.full(len(flows), -1, dtype=np.int64)
        self.place[network[by]] = np.arange(len(by)) - np.flatnonzero(first)[np.cumsum(first) - 1]
        # a place learned in this run is taken in a later iteration of it, if it has one (else only stored)
        self.later_iterations = len(np.unique(iteration[network])) > 1
        # each copy's copy at its place in the next iteration (-1: none): a trusted class's copy
        # simulated after all gives its place's time to the later ones (``_simulated_places``)
        self.next_at_place = np.full(len(flows), -1, dtype=np.int64)
        by = np.lexsort((iteration[network], self.place[network], cls))
        same = (np.diff(cls[by]) == 0) & (np.diff(self.place[network][by]) == 0)
        self.next_at_place[network[by][:-1][same]] = network[by][1:][same]
        self.iteration = iteration
        # the run's first iteration, where a class learned in the run takes no copy under DCQCN (``_take``)
        self.held_back = -1 if cc in TIMERS_FIRST_CCS else int(iteration[network].min(initial=0))
        self.held: set = set()  # the classes that took no copy of it (those whose samples shared a link)
        # per class, the first iteration whose copies it is learned from (-1: any; ``_learn_from``), and the
        # one whose copies alone it is learned from (-1: not one; ``_whole_first``)
        whole = np.zeros(len(counts), bool)
        whole[cls] = (whole_first > 0)[whole_cls]
        self.learn_from = _learn_from(cls, iteration[network], self.trust, tolerance, whole)
        if trust is None:  # ... from one iteration's copies, however many iterations are replayed
            after = self.learn_from >= 0
            self.trust[after] = np.minimum(self.trust[after], most[after])
        self.learn_only = np.where(whole, iteration[network].min(initial=0), -1)
        # per class: its later copies take the time of the sample at their place (``_take``), where its
        # samples are every copy of the iteration it learns from
        in_first = _in_first_iteration(cls, iteration[network], len(counts))
        self.take_by_place = (tolerance > AGREE_TOLERANCE) & (in_first > 0) & (self.trust >= in_first)
        self.sampled_at: dict = {}  # such a class -> {place: (alone_rx_ns, tail_ns)} of its samples
        self.simulated = np.zeros(0, np.int64)  # trusted classes' copies whose place may be read (``_simulated_places``)
        self.next_place_scan = 0
        self.learnable = learnable(cls, iteration[network], counts, self.trust, fixed=trust)  # per class
        recurring = self.learnable[cls]  # per network flow
        self.watch = network[recurring]  # copies whose times are still to be read
        self.small = network[~recurring]  # flows of classes too small to learn: the memo's own (``start``)
        self.aside_from: dict = {}  # small class -> the digest of the entry its copies were taken aside from
        self.sends = np.zeros(0, np.int64)  # small classes' copies whose places later iterations take (``_sends``)
        self.aside_times: dict = {}  # small copy -> (rx_ns, fct_ns) it was taken aside of, in this run
        self.samples: dict = {}  # class -> [(rx_ns, fct_ns), ...] of its simulated copies, in finish order
        self.sampled: dict = {}  # class -> those copies' flow ids
        self.alone: dict = {}  # class -> [(alone_rx_ns, tail_ns), ...]: those copies at their alone pace (``_alone``)
        self.spent: dict = {}  # class -> [copy, n - 1]: ns each sampled copy spent beside n flows (``_spent``)
        self.gain = 1.0  # the pace gain the run's sampled copies agree best under (``fit_gain``), ...
        self.gain_fitted = False  # ... fitted again as classes are sampled until they show one (``_fit_gain``), or
        # taken from the entries where a warm run takes classes
        self.gain_classes = 0  # classes sampled before any class is judged (GAIN_CLASSES, or all there are)
        self.waiting: list = []  # classes sampled, waiting for the gain before their copies are judged
        self.gains: dict = {}  # class -> the gain its alone times are at (its entry's, or self.gain when learned)
        self.tolerance = tolerance
        self._on_port = None  # data port -> the recurring classes' flows whose data leave it (``_flows_on``)
        self.trusted: set = set()
        self.refuted: set = set()  # classes whose first copies disagreed: simulated for the rest of the run, ...
        self.by_place = tolerance > AGREE_TOLERANCE  # ... but at a wide spread taken by place (``_place``)
        # the second iteration's sends from the first's, rescaled by its first micro-batch's (``_cold_sends``)
        self.cold_sends = ColdSends(flows, self.small, iteration, self.place, self.next_at_place, self.class_of,
                                    SENDS_FROM) if self.by_place else None
        self.placed: dict = {}  # refuted class -> {place: (rx_ns, fct_ns)} of a copy at it, as simulated
        self.placed_from: dict = {}  # refuted class -> the digest of the entry its places came from
        self.follow = np.zeros(0, np.int64)  # copies of refuted classes whose times are still to be read
        self.next_scan = 0
        self.taken: list = []  # the copies turned into timers, per class taken
        # spot checks: every class taken keeps its first copy simulated (a copy simulated among
        # timers would meet none of its neighbours' ACKs, which move HPCC by 5-8%: it would check
        # that, not the entry), and the first ``spot_check`` of them are compared with the entry
        self.spot_check = spot_check
        self.checking: list = []  # (flow, class digest, its expected time to its last byte received)
        self.counters = {"memo_recurring_classes": int(self.learnable.sum()), "memo_recurring_trusted": 0,
                         "memo_recurring_refuted": 0, "memo_recurring_taken": 0, "memo_recurring_met_live": 0,
                         "memo_recurring_placed": 0, "memo_recurring_retimed": 0, "memo_recurring_aside": 0,
                         "memo_recurring_cold_sends": 0}

    def start(self, engine, session) -> None:
        """Before the first event: the flows of classes too small to learn (at most ``trust`` copies:
        a pipeline send, an odd last bucket) are the memo's own packet flows, and the classes the memo
        knows are taken from their first copy.  The small ones are never timers, and are a group of
        their own (``SMALL_GROUP``): foreign only to the timers whose data leave a port theirs leave
        (``wormhole/timers.py``); a paced timer beside one elsewhere shares its links with it as with
        a class's sampled copies (it counts it among its sharers and reserves its share beside it).
        On the 128-GPU DDP fat-tree (HPCC, spread 100%; DEVELOPERS.md, "Recurring flows: the
        measurements") the 512 pipeline
        sends (128 classes of 4 copies, 20 MB each) crossed the fabric links of thousands of timers:
        foreign to all of them, 64.4-64.6% of events were avoided; the memo's own beside all of them,
        72.8-78.9%, but the 64 beside the first DP all-reduces erred by -51% to +31% (a noise draw:
        within 8%), moving stage 0's ring steps by milliseconds; foreign where their data meet, they
        err within 11%.  Refuted classes' copies stay foreign: treated as the memo's own as well, 85%
        were avoided at mean FCT -0.66% / -0.67% (two runs), but alone -1.65%, beyond the bound.

        The copies of the classes left to learn are in that group too until their class is refuted
        (``_refute``: foreign again).  Foreign, a class learned late in the iteration (a ring's last
        bucket, 14 copies of 8 MB, sampled at its end) made the trusted classes' timers on any of
        its ports, ACK paths included, simulated: on the 128-GPU DDP fat-tree (HPCC, spread 100%)
        5,522 copies of 3.3 MB simulated after all, 38% of the bytes the run simulated.  As the
        memo's own: 169.8 s instead of 191.8 s for one iteration (89.3% of events avoided instead
        of 85.5%), per flow 12.27% (12.41%), mean FCT +0.38% (+0.11%), iteration 0.40% (0.46%); two
        iterations 157.0 s instead of 192.0 s (DEVELOPERS.md, "Recurring flows: the measurements",
        "Classes being learned are the memo's own")."""
        if len(self.small):
            engine.mark_memo_flows(self.small, group=SMALL_GROUP)
        for c in np.flatnonzero(~self.learnable).tolist() if self.by_place else []:  # the small classes
            self._aside(engine, session, c)
        its = np.unique(self.iteration[self.small]) if self.by_place else []
        if len(its) > SENDS_FROM:  # ... and their places (``_sends``)
            later = self.small[(self.iteration[self.small] >= its[SENDS_FROM]) & (self.next_at_place[self.small] >= 0)]
            taken = engine.timers(later)  # aside from the memo: the last one at a place gives it on
            self.sends = later[~taken]
            last = later[taken][~engine.timers(self.next_at_place[later[taken]])]
            self._aside_at_places(engine, session, last, np.array([self.aside_times[f] for f in last.tolist()],
                                                                  np.int64).reshape(-1, 2))
        for c, digest in enumerate(self.digests):
            if c in self.aside_from:
                continue
            e = self.known.get(digest)
            if e is not None and e.key == self.keys[c]:
                alone = list(zip(e.value.get("alone_rx_ns", e.value["rx_ns"]),
                                 np.subtract(e.value["fct_ns"], e.value["rx_ns"]).tolist()))
                if agree(_spans(alone), self.tolerance):
                    self.alone[c] = alone
                    if "places" in e.value:  # learned from a whole iteration: by place (``_take``)
                        self.sampled_at[c] = dict(zip(e.value["places"], alone))
                    self.gains[c] = float(e.value.get("gain", 1.0))  # entries before the gain: equal shares
                    self._take(engine, session, c, e.digest)
                    p = self.known.get(self.simulated_digests[c]) if self.by_place else None
                    if p is not None and p.key == self.simulated_keys[c]:  # its copies simulated then, by place
                        at = _by_place(p.value)
                        m = self.members[c][np.isin(self.place[self.members[c]], list(at))]
                        if self.learn_from[c] >= 0:  # they are the first iteration's, a cold start's: for it alone
                            m = m[self.iteration[m] < self.learn_from[c]]
                        elif self.learn_only[c] >= 0:  # ... or the whole iteration it was learned from: for it
                            m = m[self.iteration[m] == self.learn_only[c]]  # alone, the later ones by place (``_take``)
                        self._retime(engine, m, np.array([at[q] for q in self.place[m].tolist()], np.int64).reshape(-1, 2))
                    continue
            e = self.known.get(self.place_digests[c]) if self.by_place else None
            if e is not None and e.key == self.place_keys[c]:  # refuted before: its copies by their place
                self.refuted.add(c)
                self.gains[c] = float(e.value.get("gain", 1.0))
                self.placed_from[c] = e.digest
                if self.learn_from[c] >= 0:  # its places are its second iteration's: the first takes its own
                    self._first_places(engine, session, c)
                self._place(engine, session, c, _by_place(e.value))
        self.watch = self.watch[~np.isin(self.class_of[self.watch], list(self.trusted | self.refuted))]
        if len(self.watch):  # the classes left to learn: the memo's own until refuted
            engine.mark_memo_flows(self.watch, group=SMALL_GROUP)
        self.gain_classes = min(GAIN_CLASSES, len(np.unique(self.class_of[self.watch])))
        if self.gains:  # the classes left pace as the ones taken do: at the gain their run fitted on more classes
            values, counts = np.unique(list(self.gains.values()), return_counts=True)
            self.gain, self.gain_fitted = float(values[np.argmax(counts)]), True

    def step(self, engine, session) -> None:
        """At a stop of the engine: read the copies that finished since the last scan, and turn the
        copies of newly trusted classes that have not started into timers."""
        if len(self.simulated) and engine.now >= self.next_place_scan:  # their places recur an iteration later
            self.next_place_scan = engine.now + SCAN_PLACES_NS
            self._simulated_places(engine)
        # the second iteration's sends wait for their probes: in a run of two iterations they can
        # be all that is left to read (nothing watched, followed, or sent to a later iteration)
        cold = self.cold_sends is not None and bool(self.cold_sends.families)
        if engine.now < self.next_scan or not (len(self.watch) or len(self.follow) or len(self.sends) or cold):
            return
        self.next_scan = engine.now + SCAN_NS
        if cold:
            self._cold_sends(engine, session)
        if len(self.sends):
            self._sends(engine, session)
        if len(self.follow) and self.later_iterations:  # else read once, at the end (``finish``)
            got = self._finished_places(engine)
            for c, times in got.items():
                self._place(engine, session, c, times)
            if got:
                self.follow = self.follow[~engine.timers(self.follow)]  # those just made timers
        if not len(self.watch):
            return
        done = engine.finished(self.watch)
        if not done.any():
            return
        start, rx, fin = engine.flow_times(self.watch[done])
        newly = []
        for f, s, r, e in zip(self.watch[done].tolist(), start.tolist(), rx.tolist(), fin.tolist()):
            c = int(self.class_of[f])
            if self.iteration[f] < self.learn_from[c]:  # a cold start's copy (``_learn_from``)
                continue
            if self.learn_only[c] >= 0 and self.iteration[f] != self.learn_only[c]:  # (``_whole_first``)
                continue
            got = self.samples.setdefault(c, [])
            if len(got) < self.trust[c]:  # the first copies to finish; later ones in this scan are not read
                got.append((r - s, e - s))
                self.sampled.setdefault(c, []).append(f)
                if len(got) == self.trust[c]:
                    newly.append(c)
        self.watch = self.watch[~done]
        for c in newly:
            self.spent[c] = self.spent_beside(engine, c)
        self.waiting += newly
        if len(self.spent) < self.gain_classes:
            return
        if newly:
            self._fit_gain()
        newly, self.waiting = self.waiting, []
        for c in newly:
            rx, fct = (list(x) for x in zip(*self.samples[c]))
            alone = _alone(self.spent[c], self.gain).tolist()
            self.alone[c] = [(a, f - r) for a, r, f in zip(alone, rx, fct)]
            self.gains[c] = self.gain
            if agree(_spans(self.alone[c]), self.tolerance):
                value = {"rx_ns": rx, "fct_ns": fct, "alone_rx_ns": alone, "gain": self.gain}
                if self.take_by_place[c]:  # its samples are a whole iteration: later copies take them by place
                    value["places"] = self.place[self.sampled[c]].tolist()
                    self.sampled_at[c] = dict(zip(value["places"], self.alone[c]))
                session.learn_recurring(self.keys[c], self.digests[c], value)
                self._take(engine, session, c)
            else:
                self._refute(engine, c, SMALL_GROUP if self.first_part[c] in self.trusted else 0)
                if self.by_place:  # its sampled copies' times, each at its place, and its other copies done by now
                    times = {int(self.place[f]): (r, x) for f, r, x in zip(self.sampled[c], rx, fct)}
                    self._place(engine, session, c, {**self._done_unsampled(engine, c), **times})
        if newly:
            self.watch = self.watch[~np.isin(self.class_of[self.watch], list(self.trusted | self.refuted))]

    def _fit_gain(self) -> None:
        """The pace gain fitted again on every class sampled so far (``fit_gain``) until they show
        one, which is kept from then on: every class is judged and paced at it.  Fitted again on
        each class as it came, the gain moved with the phase of the iteration whose classes came
        last: on ``moe16`` (HPCC, one iteration) the forward all-to-alls' classes were judged at
        1.23 and the backward's DP buckets' at the grid's top (1.3; 1.57 on a grid to 2), and the
        iteration came out 1.10% long (floor 0.13%), mean FCT +0.51%; at 1.23 kept, 0.19% and
        +0.21%.  On the 10-layer DDP proxy it keeps 1.28 from stage 1's first classes (+0.82%, the
        refit +0.91%), at 13% more events; over 4 iterations the two are alike (DEVELOPERS.md,
        "One gain, kept once shown")."""
        if not self.gain_fitted:
            self.gain = fit_gain(list(self.spent.values()))
            self.gain_fitted = self.gain != 1.0

    def _refute(self, engine, c: int, group: int = 0) -> None:
        """Class c's copies disagree: it is simulated for the rest of the run, and its copies not
        started yet are foreign again (``start``), as a flow the memo knows nothing of; or, the
        later part of a class split at its cold start whose first part was trusted (``group``
        ``SMALL_GROUP``), the memo's own packet flows, foreign only to the timers whose data meet
        theirs, as while it was learned: its neighbours' timers were learned beside its copies.
        Foreign, two such classes of the 128-GPU DDP fat-tree over 4 iterations (HPCC, spread
        100%, before ``SPLIT_COVER``) kept 25 trusted classes' timers simulated through the whole
        second iteration, 264 s of wall time against the first's 167 s; the memo's own, 153 s against 138 s."""
        self.refuted.add(c)
        self.counters["memo_recurring_refuted"] += 1
        m = self.members[c]
        engine.mark_memo_flows(m[~engine.started(m) & ~engine.timers(m)], group=group)

    def spent_beside(self, engine, c: int) -> np.ndarray:
        """How long each sampled copy of class c spent, to its last byte received, beside n flows'
        data (its own included) leaving the busiest port its data leaves (``_spent``): its time at
        the pace it would have had alone is then ``_alone``, at ``min(1, gain / n)`` (1 alone), the
        gain fitted on the classes sampled by then, at least ``GAIN_CLASSES`` (``fit_gain``).  Timers run at that
        pace (``wormhole/timers.py``), so copies that met other flows and copies that ran alone can
        be compared, and taken for each other."""
        on = [engine.flow_times(flows)[:2] for flows in self._flows_on(engine, c)]  # read once for all copies
        start, rx, _ = engine.flow_times(self.sampled[c])
        return np.array([_spent(on, int(s), int(r)) for s, r in zip(start, rx)])

    def _flows_on(self, engine, c: int) -> list:
        """Per port class c's data leaves, the recurring classes' flows whose data leaves it too.

        Not the small classes' (``small``: pipeline sends), which a ring's flows starve: on the
        128-GPU DDP fat-tree (HPCC) a 20 MB send crossing a ring's link took 4.7 Gb/s for 35 ms, and
        the two ring flows beside it 38 Gb/s each, so copies sampled beside one were learned at a
        third of the link where they had half: two connections' 3.3 MB steps (840 copies each) were
        learned 28% short.  Counted, the paced model fed with the full run's own overlaps
        (``tools/pace_model.py``) put the DP rings' total time -7.3% to +1.5% off; not counted,
        -1.2% to +1.3%, per copy 6.5% -> 6.0% mean.  A timer never runs beside one's data (it is
        simulated there, ``wormhole/timers.py``), so only learning counted them."""
        if self._on_port is None:  # a class's copies share its 4-tuple's path: one look per class
            classes: dict = {}
            for k, ports in enumerate(engine.links([int(m[0]) for m in self.members])):
                if self.learnable[k]:
                    for p in ports:
                        classes.setdefault(p, []).append(self.members[k])
            self._on_port = {p: np.concatenate(m) for p, m in classes.items()}
        return [self._on_port[p] for p in engine.links([int(self.members[c][0])])[0]]

    def _place(self, engine, session, c: int, times: dict) -> None:
        """Refuted class c, at a wide spread: ``times`` (place -> (rx_ns, fct_ns)) are
        the times of its copies at those places, simulated in an earlier iteration or run; its
        copies at the same place in later iterations, not started yet, become timers of them, each
        its place's time as simulated, at no pace (``AS_SIMULATED``: a refuted class is one whose
        times its alone pace does not explain; paced, the placed copies of the 128-GPU DDP
        fat-tree's 4-iteration replay took half the time the full run gave them), and the others
        are followed (``_finished_places``) until their place's time is known.

        A refuted class's copies differ by more than the spread asked: where its ring meets
        another, and how fast HPCC lets it through, depends on where in the iteration it runs.  The
        copy at the same place of another iteration (the same op of the same rank) met the same
        neighbours there, and differs from it by what one iteration differs from the next, which on
        a chaotic fabric is its noise floor (the spread asked).  Left simulated, its copies are
        foreign to every timer whose ports they cross, which are then simulated too: on the 128-GPU
        DDP fat-tree 22% of the copies taken in a 4-iteration replay (DEVELOPERS.md, "Recurring
        flows: the measurements").
        At the default spread (1%) a refuted class stays simulated."""
        first = c not in self.placed
        known = self.placed.setdefault(c, {})
        new = {p: t for p, t in times.items() if p not in known}
        known.update(new)
        members = self.members[c]
        waiting = members[np.isin(self.place[members], list(new)) & ~engine.started(members) & ~engine.timers(members)]
        if len(waiting):  # spot-checked where taken from an entry (all at once, before the first event)
            times = np.array([new[p] for p in self.place[waiting].tolist()], dtype=np.int64)
            entry = self.placed_from.get(c)
            self.counters["memo_recurring_placed"] += self._make_timers(engine, session, c, waiting, times, entry,
                                                                        check=entry is not None, gain=AS_SIMULATED)
        if first:  # its other copies are followed until they finish (``_finished_places``)
            self.follow = np.concatenate([self.follow, members[~engine.finished(members) & ~engine.timers(members)]])

    def one_at_a_place(self, c: int) -> bool:
        """Class c's copies are all of one iteration (a split class's first part, ``_after_cold_start``,
        or any class of a run of one iteration), so each of its places has one copy.  Its copies
        simulated part of the way (a timer made a packet flow by a foreign flow beside it) are
        then stored by place too, as they ran, for a later run to replay (``start``): a later copy
        at such a place would take a time the first run did not give it (``_simulated_places``
        takes only copies simulated from their start), but here there is none.  Left out, a
        later run on the database ran them as timers at their alone pace, where a foreign flow
        had held them back: on the 128-GPU MoE cut to 2 layers over 3 iterations (HPCC, spread
        100%) 21 such copies of the first iteration took a third longer on the filled database
        (DEVELOPERS.md, "A filled database replays the first run")."""
        return len(np.unique(self.iteration[self.members[c]])) == 1

    def _done_unsampled(self, engine, c: int) -> dict:
        """Class c's copies that finished while it was learned, simulated from their start, but were
        not read as samples (they finished after its last sample, or while the classes waited for
        the gain to be fitted), in the iterations it learns from: place -> (rx_ns, fct_ns), the
        earliest iteration's at each place.  Refuted, its places are its sampled copies' and those
        of the copies followed from then on (``_finished_places``): without these, a later run on
        the database found no time at their places and simulated them as foreign flows, which
        made the timers beside them packet flows part of the way (``_to_packets``).  On the 128-GPU
        MoE cut to 2 layers over 3 iterations (HPCC, spread 100%) 181 such copies of 16 MB were
        the foreign flows of the filled database's first iteration: one thawed a placed 16 MB copy
        on the iteration's critical path, which then took 16.9 ms where the first run took 24.3 ms,
        and the iteration ended 2.2% short of the first run's (DEVELOPERS.md, "A filled database
        replays the first run")."""
        m = self.members[c]
        m = _from_start(engine, m[engine.finished(m) & ~np.isin(m, self.sampled[c])])
        if self.learn_from[c] >= 0:
            m = m[self.iteration[m] >= self.learn_from[c]]
        if self.learn_only[c] >= 0:
            m = m[self.iteration[m] == self.learn_only[c]]
        places, first = self._first_at_each_place(m)
        return _by_place(_as_simulated(engine, first, places))

    def _first_at_each_place(self, copies: np.ndarray):
        """The places of ``copies``, and at each its copy of the earliest iteration (of the lowest id)."""
        copies = copies[np.lexsort((copies, self.iteration[copies], self.place[copies]))]
        places, first = np.unique(self.place[copies], return_index=True)
        return places, copies[first]

    def _first_places(self, engine, session, c: int) -> None:
        """Refuted class c, learned after its first iteration (``_learn_from``): its first
        iteration's copies take the times the memo holds of that iteration's, as simulated (its
        entry by place holds the second iteration's, where it was sampled and refuted)."""
        p = self.known.get(self.simulated_digests[c])
        if p is None or p.key != self.simulated_keys[c]:
            return
        at = _by_place(p.value)
        m = self.members[c]
        m = m[(self.iteration[m] < self.learn_from[c]) & np.isin(self.place[m], list(at))]
        if len(m):
            times = np.array([at[q] for q in self.place[m].tolist()], np.int64).reshape(-1, 2)
            self.counters["memo_recurring_placed"] += self._make_timers(engine, session, c, m, times, p.digest,
                                                                        check=False, gain=AS_SIMULATED)

    def _finished_places(self, engine) -> dict:
        """Copies of refuted classes that finished since the last look, no longer followed: their
        places' times as simulated (class -> {place: (rx_ns, fct_ns)}), where the place has none
        yet.  (Followed copies are added once per class and dropped in one pass per look: a set
        union per class took a third of a DCQCN run's wall time.  Their alone times are not
        computed: placed copies run as simulated, and a look at every sharer of every copy's ports
        per copy was most of what a DCQCN run's bookkeeping cost, DEVELOPERS.md, "Recurring flows:
        the measurements".)"""
        done = engine.finished(self.follow)
        got: dict = {}
        if not done.any():
            return got
        start, rx, fin = engine.flow_times(self.follow[done])
        for f, s, r, e in zip(self.follow[done].tolist(), start.tolist(), rx.tolist(), fin.tolist()):
            c, p = int(self.class_of[f]), int(self.place[f])
            if p not in self.placed[c] and p not in got.get(c, {}):
                got.setdefault(c, {})[p] = (r - s, e - s)
        self.follow = self.follow[~done]
        return got

    def _simulated_places(self, engine) -> None:
        """Copies of trusted classes that finished, simulated from their start (a foreign flow was
        live on their ports when they were due): the copies at their places in later iterations,
        still timers, take their times as simulated, at no pace (``AS_SIMULATED``), as a refuted
        class's places do.  Why: where the paced model misses what holds a class back, its
        timers run far from it once nothing beside them is simulated.  On the 128-GPU DDP
        fat-tree's 4-iteration replay a third of the classes had every copy of the first iteration
        simulated after all, and some of them were taken in iterations 2-4 at half the time the full
        run gave them (a connection's 3.3 MB steps 481 us where the full run took 974 us in every
        iteration, and the first iteration's simulated copies 860 us)."""
        self.simulated, flows, times = _finished_as_simulated(engine, self.simulated)
        for nxt, at_times in self._later_places(flows, times):
            self._retime(engine, nxt, at_times)

    def _sends(self, engine, session) -> None:
        """Copies of small classes (``small``: pipeline sends) that finished, simulated, from
        iteration ``SENDS_FROM`` on: the copies at their places in later iterations, not started,
        become timers *aside* of their times as simulated (``_aside``), which hold them and share
        nothing, so that nothing beside them is simulated either.  A send of the same op of the
        same rank meets what it met an iteration before: on the 128-GPU DDP fat-tree's 4-iteration
        replay (HPCC, spread 100%, the sends simulated) a send of the third or fourth iteration
        took 3.4-4.2% more or less than the one at its place an iteration before, -0.75% to +0.02%
        in total.  Not from the first iteration, a cold start (``_learn_from``): the second's sends
        differ from it by 8.6% and -2.9%, and taken from it (``SENDS_FROM`` 0) they put the second
        iteration's mean FCT -0.93% off on that fat-tree and -1.76% on the two-stage replay of
        ``tests/test_recurring.py`` (from the second: -0.27% and within 0.2%), though the second
        iteration then cost 3.2x less than the first instead of 1.7x.  Simulated, the sends were 80%
        of the packets of iterations 3-4 (DEVELOPERS.md, "Sends by place")."""
        self.sends, flows, times = _finished_as_simulated(engine, self.sends)
        self._aside_at_places(engine, session, flows, times)

    def _cold_sends(self, engine, session) -> None:
        """The second iteration's sends whose family's probes are done (``cold_sends.py``) become
        timers aside of their first-iteration copies' times, rescaled, and give them on to their
        places in later iterations.  On the 128-GPU DDP fat-tree's 4-iteration replay (HPCC, spread
        100%) the second iteration then ran 3.2x faster than the first, where its 512 sends
        simulated (10.7 M packets) held it at 1.8x (DEVELOPERS.md, "The first iteration's sends,
        rescaled")."""
        flows, times = self.cold_sends.step(engine)
        self.counters["memo_recurring_cold_sends"] += self._take_aside(engine, session, flows, times)
        self._aside_at_places(engine, session, flows, times)

    def _aside_at_places(self, engine, session, flows, times) -> None:
        """The copies at the places of small-class copies ``flows`` in later iterations, not started
        and not timers, become timers aside of ``times`` (per copy: rx_ns, fct_ns)."""
        for nxt, at_times in self._later_places(flows, times):
            self._take_aside(engine, session, nxt, at_times)

    def _take_aside(self, engine, session, flows, times) -> int:
        """Those of small-class copies ``flows`` not started and not timers become timers aside of
        ``times`` (per copy: rx_ns, fct_ns), kept in ``aside_times`` for the next run; how many."""
        take = ~engine.started(flows) & ~engine.timers(flows)
        for c in np.unique(self.class_of[flows[take]]).tolist():
            at = take & (self.class_of[flows] == c)
            self.counters["memo_recurring_aside"] += self._make_timers(engine, session, c, flows[at], times[at], None,
                                                                       check=False, gain=AS_SIMULATED, aside=True)
        self.aside_times.update(zip(flows[take].tolist(), map(tuple, times[take].tolist())))
        return int(take.sum())

    def _later_places(self, flows, times):
        """Iteration by iteration, the copies at the places of ``flows`` in later iterations, each
        with the time (``times``, per copy) of the copy of ``flows`` at its place."""
        nxt = self.next_at_place[flows]
        while (nxt >= 0).any():
            ok = nxt >= 0
            nxt, times = nxt[ok], times[ok]
            yield nxt, times
            nxt = self.next_at_place[nxt]

    def _retime(self, engine, copies, times) -> None:
        """Those of ``copies`` (of trusted classes) still timers and not started take ``times``
        (per copy: rx_ns, fct_ns), their places' times as simulated, at no pace."""
        take = engine.timers(copies) & ~engine.started(copies)
        if take.any():
            engine.retime_timers(copies[take], times[take, 0], times[take, 1], gain=AS_SIMULATED)
            self.counters["memo_recurring_retimed"] += int(take.sum())

    def _take(self, engine, session, c: int, digest: str | None = None) -> None:
        """Class c is trusted (from the memo's entry ``digest``, or learned in this run): its copies
        not started yet become timers of its simulated copies' durations, in turn; learned in this
        run under DCQCN with samples that shared a link, not those of the run's first iteration
        (``held_back``, ``TIMERS_FIRST_CCS``)."""
        self.trusted.add(c)
        self.counters["memo_recurring_trusted"] += 1
        members = self.members[c]
        held = digest is None and self.held_back >= 0 and self._shared(c)  # its timers would meet DCQCN's packet flows
        if held:
            self.held.add(c)
        taking = members[self.iteration[members] != self.held_back] if held else members
        waiting = taking[~engine.started(taking)]
        if self.by_place and self.later_iterations:  # its copies simulated after all give their places' times
            # (and, under DCQCN, those of its first iteration, which it took none of, where that is
            # not a cold start it learns after: ``_learn_from``)
            given = (self.iteration[members] == self.held_back) & held & (self.learn_from[c] < 0)
            has_next = members[(self.next_at_place[members] >= 0) & (~engine.finished(members) | given)]
            self.simulated = np.concatenate([self.simulated, has_next])
        if not len(waiting):
            return
        alone = np.asarray(self.alone[c], dtype=np.int64)  # (alone pace to the last byte received, then its last ACK)
        alone = alone[np.arange(len(waiting)) % len(alone)]
        at = self.sampled_at.get(c)
        if at:  # learned from a whole iteration: each copy the sample's at its place, where there is one
            alone = np.array([at.get(p, a) for p, a in zip(self.place[waiting].tolist(), map(tuple, alone.tolist()))],
                             np.int64).reshape(-1, 2)
        times = np.stack([alone[:, 0], alone[:, 0] + alone[:, 1]], axis=1)
        self._make_timers(engine, session, c, waiting, times, digest)

    def _shared(self, c: int) -> bool:
        """Whether class c's sampled copies spent any time beside another flow's data on their
        busiest port (``spent_beside``): a class alone on its path (a ring on a rail) has no packet
        flow beside its timers to misplace, under DCQCN as under HPCC."""
        return c in self.spent and bool(self.spent[c][:, 1:].any())

    def _aside(self, engine, session, c: int) -> None:
        """Small class c (``small``: a pipeline send), at a wide spread: where the memo holds its
        copies as an earlier run of the workload simulated them, each by its ordinal among the
        class's copies in the run (``BY_COPY``), those copies become timers *aside* of those times,
        which hold them and share nothing (``wormhole/timers.py``): such a flow took next to
        nothing of its links beside the rings (4.7 Gb/s of 100 for a 20 MB send on the 128-GPU DDP
        fat-tree), which ran as if it were not there, and what it met is in its time.  The ring
        copies simulated beside it in that run take their times by place as well
        (``_simulated_places``'s entries), so a run on a filled database replays both as they were.
        Within a run, from an earlier iteration's copy at its place, only past the cold start
        (``_sends``): on that fat-tree a send of the second iteration took 6% longer on average than
        the first's at its place (up to 44%), the second iteration's sends meeting the end of the
        first's all-reduces."""
        e = self.known.get(self.copy_digests[c])
        if e is None or e.key != self.copy_keys[c]:
            return
        at = _by_place(e.value)
        members = self.members[c]
        ordinal = np.arange(len(members))
        take = np.isin(ordinal, list(at))
        if take.any():
            times = np.array([at[k] for k in ordinal[take].tolist()], np.int64).reshape(-1, 2)
            self.aside_from[c] = e.digest
            self.aside_times.update(zip(members[take].tolist(), map(tuple, times.tolist())))  # (``_sends``)
            self.counters["memo_recurring_aside"] += self._make_timers(engine, session, c, members[take], times, e.digest,
                                                                       gain=AS_SIMULATED, aside=True)

    def _make_timers(self, engine, session, c: int, waiting, times, entry: str | None, check: bool = True,
                     gain: float | None = None, aside: bool = False) -> int:
        """Copies ``waiting`` of class c become paced timers of ``times`` (per copy: its alone pace
        to its last byte received, and to its last ACK); ``entry`` names the memo entry they come
        from (None: learned in this run).  With spot checks (``check``) the first stays simulated,
        beside the others' first, to be compared with its time.  ``aside``: timers of a small
        class, which hold their times and share nothing (``_aside``).  How many became timers."""
        group = SMALL_GROUP if aside else GROUP
        if check and self.spot_check and len(waiting) > 1:
            if len(self.checking) < self.spot_check:
                self.checking.append((int(waiting[0]), entry or self.digests[c], int(times[0, 0])))
            engine.mark_memo_flows(waiting[:1], group=group)
            waiting, times = waiting[1:], times[1:]
        engine.make_timers(waiting, times[:, 0], times[:, 1], group=group, gain=self.gains.get(c, 1.0) if gain is None else gain,
                           aside=aside)
        self.taken.append(waiting)
        self.counters["memo_recurring_taken"] += len(waiting)
        if entry is not None:  # a lookup that hit, for the per-iteration counts
            session.looked_flows.append(int(waiting[0]))
            session.note_whole_hit(entry, int(waiting[0]), int(times[:, 0].sum()), int(self.sizes[waiting].sum()))
        return len(waiting)

    def finish(self, engine, session) -> None:
        """At the end of the run: how many copies were simulated after all (a flow they were not
        learned with crossed their ports), and the spot checks."""
        self.counters["memo_recurring_gain"] = self.gain
        for c, times in self._finished_places(engine).items():  # the last (or, in one iteration, all)
            self.placed[c].update(times)
        for c, known in self.placed.items():  # refuted classes' copies by place, for the next run
            if c not in self.placed_from and known:
                places = sorted(known)
                rx, fct = (list(x) for x in zip(*(known[p] for p in places)))
                session.learn_recurring(self.place_keys[c], self.place_digests[c],
                                        {"places": places, "rx_ns": rx, "fct_ns": fct, "gain": self.gains[c],
                                         "refuted": True})
        for c in np.flatnonzero(~self.learnable).tolist() if self.by_place else []:  # small: by ordinal
            if c in self.aside_from:
                continue
            m = self.members[c]
            timers = engine.timers(m)
            done = engine.finished(m) & ~timers  # simulated, and ...
            given = timers & np.isin(m, list(self.aside_times))  # ... taken aside by place in this run (``_sends``)
            if (done | given).any():
                start, rx, fin = engine.flow_times(m)
                times = np.stack([rx - start, fin - start], axis=1)
                times[given] = np.array([self.aside_times[f] for f in m[given].tolist()], np.int64).reshape(-1, 2)
                keep = np.flatnonzero(done | given)
                session.learn_recurring(self.copy_keys[c], self.copy_digests[c],
                                        {"places": keep.tolist(), "rx_ns": times[keep, 0].tolist(),
                                         "fct_ns": times[keep, 1].tolist(), "aside": True})
        cold = {c for c in self.refuted - set(self.placed_from) if self.learn_from[c] >= 0}  # (``_first_places``)
        for c in sorted(self.trusted & set(self.sampled) | cold) if self.by_place else []:  # learned here: ...
            m = self.members[c]  # ... its copies simulated from their start, by place (the first at each), ...
            done = m[engine.finished(m) & ~engine.timers(m)]
            # ... or part of the way, where each place has one copy (``one_at_a_place``); a first
            # iteration it took no copy of (``_take``) as it ran, steady-state jumps included
            held = (self.iteration[done] == self.held_back) & (c in self.held)
            m = done if self.one_at_a_place(c) else np.union1d(done[held], _from_start(engine, done[~held]))
            if c in cold:  # the first iteration's alone
                m = m[self.iteration[m] < self.learn_from[c]]
            places, first = self._first_at_each_place(m)
            if len(places):
                session.learn_recurring(self.simulated_keys[c], self.simulated_digests[c],
                                        {**_as_simulated(engine, first, places), "gain": self.gains[c]})
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


def learnable(cls: np.ndarray, iteration: np.ndarray, counts: np.ndarray, trust: np.ndarray,
              fixed: int | None = None) -> np.ndarray:
    """Per class (``cls``, ``iteration``: per copy; ``counts``, ``trust``: per class), whether it is
    learned: copies left to take once it is trusted, and more than ``TRUST_SAMPLES`` in some one
    iteration (or than the trust a caller ``fixed``, if fewer), as a ring's steps are, however few
    samples a wide spread learns it from (``_samples``).  So a class is learned or not whatever
    the number of iterations replayed: four micro-batches' pipeline sends recur 4 times an
    iteration, 16 times in four, and would be learned there as a ring's steps are and counted
    beside them as sharers (``Recurring._flows_on``), where rings starve them.  A class of a few
    copies per iteration (a send, a small ring's last bucket) is the memo's own packet flow, and a
    later run takes it by copy (``Recurring._aside``)."""
    most = _most_in_one_iteration(cls, iteration, len(counts))
    return (counts > trust) & (most > (TRUST_SAMPLES if fixed is None else min(fixed, TRUST_SAMPLES)))


def _most_in_one_iteration(cls: np.ndarray, iteration: np.ndarray, classes: int) -> np.ndarray:
    """Per class, the most copies it has in any one iteration (``cls``, ``iteration``: per copy)."""
    pairs, _, n = unique_rows(np.stack([cls, iteration], axis=1))
    most = np.zeros(classes, np.int64)
    np.maximum.at(most, pairs[:, 0], n)
    return most


def _in_cold_start(cls: np.ndarray, iteration: np.ndarray, classes: int, tolerance: float):
    """Where the cold-start rules apply (a spread wider than ``AGREE_TOLERANCE``, at least
    ``COLD_START_ITERATIONS`` iterations): the iterations, and per class its copies in the first;
    else None."""
    its = np.unique(iteration)
    if tolerance <= AGREE_TOLERANCE or len(its) < COLD_START_ITERATIONS:
        return None
    return its, _in_first_iteration(cls, iteration, classes)


def _in_first_iteration(cls: np.ndarray, iteration: np.ndarray, classes: int) -> np.ndarray:
    """Per class, its copies in the run's first iteration (``cls``, ``iteration``: per copy)."""
    return np.bincount(cls[iteration == iteration.min(initial=0)], minlength=classes)


def _learn_from(cls: np.ndarray, iteration: np.ndarray, trust: np.ndarray, tolerance: float,
                whole: np.ndarray | None = None) -> np.ndarray:
    """Per class (``cls``, ``iteration``: per copy; ``trust``: per class), the first iteration whose
    copies it is learned from: the second where, at a spread wider than ``AGREE_TOLERANCE`` and
    with ``COLD_START_ITERATIONS`` iterations or more, its samples would be every copy of its first
    iteration (so that it has no timer there to lose), else -1 (any).  The first iteration is a
    cold start: every rank starts at once on an empty network.  On ``bench_scale``'s ``moe16``
    over 4 iterations (HPCC, full simulation) iterations 2-4 differ from one another at their
    places by 5.6-6.6% per flow (the noise floor of each, every iteration's op 1 ns longer, is
    4.8-6.3%) and from the first by 10-12%, their mean FCTs 1.1-1.6% shorter.  Learned from the
    first, the taken iterations 2-4 were 10.8-13.5% per flow and +0.70 / +0.46 / +1.11% in mean
    FCT (a second run on the database +1.37 / +1.06 / +1.62%); learned from the second where this
    rule says, and the other classes split (``_after_cold_start``), iterations 3-4 were 5.1% and
    6.2%, -0.08% and +0.39% (the second run -0.25 / +0.33%), at the cost of simulating most of the
    second (DEVELOPERS.md, "Recurring flows: the measurements", "The first iteration is a cold
    start").  A class with timers in its first iteration (more copies
    there than samples: a ring's 25 MB buckets, 840 an iteration on the 128-GPU DDP fat-tree) keeps
    learning from it for that iteration, as its timers there are most of what a first run avoids,
    and is learned again after it (``_after_cold_start``).  (``iteration`` is the replay's (job,
    iteration) index: with several jobs the first is the first job's; another job's classes, on
    other hosts, learn as before.)  Not the classes learned from their whole first iteration
    because their copies span it (``whole``, ``_whole_first``).

    Such a class is learned from one iteration's copies (``Recurring.__init__``), as the later part
    of a split class is (``_after_cold_start``), however many iterations are replayed: its
    samples, a quarter of the run's copies (``_samples``), are more than an iteration's from 5
    iterations on, and on ``moe16`` over 8 iterations they made the third iteration a sample too."""
    out = np.full(len(trust), -1, np.int64)
    cold = _in_cold_start(cls, iteration, len(trust), tolerance)
    if cold is not None:
        its, in_first = cold
        sampled_whole = trust >= in_first
        if whole is not None:
            sampled_whole &= ~whole
        out[sampled_whole] = its[1]
    return out


def _whole_first(cls: np.ndarray, iteration: np.ndarray, samples: np.ndarray, tolerance: float) -> np.ndarray:
    """Per class (``cls``, ``iteration``: per copy; ``samples``: per class, ``_samples``), its copies in
    the first iteration where it is learned from all of them, else 0: at a spread wider than
    ``AGREE_TOLERANCE``, over two iterations or more, a class whose copies span its first iteration
    (more there than ``TRUST_SAMPLES_WIDE`` are ``SPLIT_COVER`` of: a ring's 25 MB buckets, 210 or
    840 copies an iteration) has no timer in it, and each of its later copies takes the alone time
    of the copy at its place there, paced (``Recurring._take``).

    Why: learned from its first copies (the first buckets' ring steps, 32 of 840), a class's level
    is one draw of the first buckets' chaos, and its timers replay that draw in every iteration
    where the fabric redraws it: one DP ring fastest in every iteration, and the durations, which
    run from the first rank to start to the last to end, carry the rings' spread.  On the 10-layer
    proxy of the 128-GPU DDP fat-tree (``gen gpt --model gpt-13b --layers 10 --gpus 128 --tp 8 --pp 2
    --microbatches 4 --iterations 4``, HPCC, spread 100%; 210 copies a class an iteration) the
    kept code put iterations 2-4 +0.93 / +1.44 / +0.97% long, and +4.07 / +3.95 / +2.73% on the
    same trace with one op 1 ns longer, where the fabric's own 1-ns draw moves them by at most
    0.93%; learned from the whole first iteration, +0.31 / -0.05 / -0.37% and +1.57 / +0.34 /
    -1.19%.  On the 40-layer row itself (840 copies a class an iteration) the kept code was +1.9 ..
    +2.4% in iterations 2-4 on both draws, this rule within 0.22% (DEVELOPERS.md, "The lead where a
    class spans its iteration").  The cost is that iteration at about its full simulation's.  A
    class of few copies an iteration (one bucket of a small model) is all cold start and is
    learned as before (``_learn_from``, ``_after_cold_start``): on the 16-GPU colliding rings of
    ``tests/test_recurring.py`` (14 copies a class an iteration) learning from the whole first
    iteration put the third of three +1.48% long, where learned again from the second it is +0.31%;
    on the 40-layer fat-tree a ring's second iteration differs from its first at their places by
    its noise floor (11.6% per flow against 10.7%), on ``moe16`` (few copies) by twice it.

    Under HPCC only (``WHOLE_FIRST_CCS``, ``Recurring(cc=...)``): under DCQCN, on the 10-layer proxy
    over 4 iterations (two draws, each against its own full run; the fabric's own 1-ns draw moves
    the iterations by 0.18 / 0.41 / 0.24 / 3.45%), the rule put iterations 2-4 at -0.17 / **-1.31**
    / -2.60% and **+2.03 / +1.19** / +2.69%, beyond the bound in three places, where the classes
    learned as before are within it in every one (+0.70 / -0.55 / -1.94%, +0.25 / -0.98 / +0.95%),
    for the same events (DEVELOPERS.md, "The lead under DCQCN")."""
    its = np.unique(iteration)
    if tolerance <= AGREE_TOLERANCE or len(its) < 2:
        return np.zeros(len(samples), np.int64)
    in_first = _in_first_iteration(cls, iteration, len(samples))
    spans = np.minimum(TRUST_SAMPLES_WIDE, in_first) < SPLIT_COVER * in_first  # not split at the cold start
    return np.where((samples < in_first) & spans, in_first, 0)


def _after_cold_start(cls: np.ndarray, iteration: np.ndarray, counts: np.ndarray, trust: np.ndarray,
                      tolerance: float) -> np.ndarray:
    """Per copy (``cls``, ``iteration``; ``counts``, ``trust``: per class), whether it is in the
    later part of a class split at its first iteration: at a spread wider than ``AGREE_TOLERANCE``,
    with ``COLD_START_ITERATIONS`` iterations or more, a class learnable that has timers in its
    first iteration (more copies there than samples, so ``_learn_from`` keeps it there) is learned
    twice, from its first iteration's copies for the rest of that iteration and from the later
    ones' for the rest of the run: the first iteration is a cold start (README, "Recurring
    flows").  Only where the later part's samples (at most ``TRUST_SAMPLES_WIDE``) are at least
    ``SPLIT_COVER`` of an iteration's copies, as a class is learned from a quarter of its copies:
    a class of 840 copies an iteration (the 128-GPU DDP fat-tree's 25 MB buckets) would learn
    again from 32 copies at the second iteration's start, which overlaps the first's last buckets,
    no more like the rest than the first iteration's first 32.  Split, that fat-tree's 4-iteration
    run (HPCC, spread 100%, against full) put iterations 3-4 +2.0% / +2.2% long and took 264 s for
    the second against the first's 167 s; not split, -0.7% / -0.8%, the second 82 s against 126 s.
    Classes of 84 copies an iteration (32 samples, 38%; the colliding rings with 4 layers of hidden
    2048) are split as before: not split, their iterations 2-4 were -0.95 / -0.64 / -0.98% in
    mean FCT where split -0.19 / +0.38 / -0.13% (DEVELOPERS.md, "The first iteration is a cold start")."""
    cold = _in_cold_start(cls, iteration, len(counts), tolerance)
    if cold is None:
        return np.zeros(len(cls), bool)
    its, in_first = cold
    covered = np.minimum(TRUST_SAMPLES_WIDE, in_first) >= SPLIT_COVER * in_first  # its later part's samples, of an iteration
    split = (trust < in_first) & covered & learnable(cls, iteration, counts, trust)
    return split[cls] & (iteration > its[0])


def _first_parts(classes: np.ndarray) -> np.ndarray:
    """Per class row (its key, then 1 for a later part, ``_after_cold_start``), the row of its first
    part where it is a later part, else -1: the rows are sorted, so a later part follows its first."""
    out = np.full(len(classes), -1, np.int64)
    later = np.flatnonzero(classes[:, -1] == 1)
    later = later[(classes[later - 1, :-1] == classes[later, :-1]).all(axis=1)]
    out[later] = later - 1
    return out


def _by_place(value: dict) -> dict:
    """An entry's copies by their place (or ordinal, ``BY_COPY``): place -> (rx_ns, fct_ns)."""
    return dict(zip(value["places"], zip(value["rx_ns"], value["fct_ns"])))


def _as_simulated(engine, flows: np.ndarray, places) -> dict:
    """An entry's value holding ``flows`` as simulated, at ``places``: each one's time from its start
    to its last byte received and to its last ACK."""
    start, rx, fin = engine.flow_times(flows)
    return {"places": np.asarray(places).tolist(), "rx_ns": (rx - start).tolist(), "fct_ns": (fin - start).tolist()}


def _finished_as_simulated(engine, watched: np.ndarray):
    """Of the ``watched`` copies, those not finished yet (still to watch), and those finished and
    simulated from their start (``_from_start``) with their times (per copy: rx_ns, fct_ns)."""
    done = engine.finished(watched)
    flows = _from_start(engine, watched[done])
    start, rx, fin = engine.flow_times(flows)
    return watched[~done], flows, np.stack([rx - start, fin - start], axis=1)


def _from_start(engine, finished: np.ndarray) -> np.ndarray:
    """Those of ``finished`` copies simulated from their start: not timers, and no byte of them
    forwarded (a timer made a packet flow part of the way restarted from line rate)."""
    return finished[~engine.timers(finished) & (engine.forwarded(finished) == 0)]


def _samples(counts: np.ndarray, tolerance: float) -> np.ndarray:
    """How many simulated copies each class is learned from: ``TRUST_SAMPLES`` where they must agree
    within ``AGREE_TOLERANCE``; where they may spread wider, a ``WIDE_SHARE``-th of the class's
    copies, within ``TRUST_SAMPLES_WIDE_LEAST`` .. ``TRUST_SAMPLES_WIDE``: a class's first copies are
    its first bucket's ring steps, about 2% faster at their alone pace than its later ones on the
    128-GPU fat-tree (README, "Recurring flows"), and the timers carry their mean.  A class of one
    bucket (a ring's last, 14 copies of 8 MB on that fat-tree's 128 classes) has no later bucket to
    differ from: learned from 8 of its 14 it was a quarter of the bytes the run simulated; from 4,
    11% fewer events, per flow 12.03% against 12.02%, mean FCT -0.10% (-0.15%), iteration 0.04%
    (0.01%).  Fewer samples for the big classes cost accuracy: at most 16 instead of 32, 16.5% fewer
    events, but iteration 0.43% and each rank's timeline 2.7% off (1.6%); 24, 0.37% and 2.7%
    (DEVELOPERS.md, "Recurring flows: the measurements", "Samples per class")."""
    if tolerance <= AGREE_TOLERANCE:
        return np.full(len(counts), TRUST_SAMPLES)
    return np.clip(counts // WIDE_SHARE, TRUST_SAMPLES_WIDE_LEAST, TRUST_SAMPLES_WIDE)


def _key(what: list) -> dict:
    """A class's entry key: one vertex, weighted by a digest of ``what`` (workload, class, tags)."""
    return {"v": [int.from_bytes(hashlib.sha256(canonical_json(what).encode()).digest()[:8], "big") >> 1], "e": []}


def _digest(key: dict) -> str:
    return hashlib.sha256(canonical_json(key).encode()).hexdigest()


def _workload(flows: FlowSet, classes: np.ndarray) -> str:
    """What a class's course depends on besides itself, up to timing: the set of classes the run
    sends, and the set of compute times and gaps between its ops (another speed of the GPUs meets
    other contention).  The same workload replayed for more iterations has the same digest."""
    dur = flows.duration_ns[flows.is_virtual] if flows.duration_ns is not None else np.zeros(0, np.int64)
    delay = flows.delay_ns if flows.delay_ns is not None else np.zeros(0, np.int64)
    what = [classes.tolist(), np.unique(dur).tolist(), np.unique(delay).tolist()]
    return hashlib.sha256(canonical_json(what).encode()).hexdigest()


def _spent(on_ports, start: int, rx: int) -> np.ndarray:
    """The ns of ``[start, rx)`` spent beside n flows (``[n - 1]``, n up to ``MOST_SHARERS``): n the
    most flows live at once (from their start to their last byte received, or on) among those of
    each port of ``on_ports`` (per port, its flows' starts and last bytes received, -1 where not
    yet), at least 1."""
    cuts, counts = [np.array([start, rx], np.int64)], []
    lives = []
    for s, r in on_ports:
        live = _live(s, r, start, rx)
        s, r = s[live], np.where(r[live] < 0, rx, r[live])
        lives.append((np.sort(s), np.sort(r)))
        cuts += [s, r]
    t = np.unique(np.clip(np.concatenate(cuts), start, rx))
    mid = (t[:-1] + t[1:]) / 2
    for s, r in lives:  # live at mid: started before it, not received by it
        counts.append(np.searchsorted(s, mid, side="right") - np.searchsorted(r, mid, side="right"))
    sharers = np.clip(np.max(counts, axis=0), 1, MOST_SHARERS) if counts else np.ones(len(mid), np.int64)
    return np.bincount(sharers - 1, weights=np.diff(t), minlength=MOST_SHARERS)


def _live(start_ns: np.ndarray, rx_ns: np.ndarray, t0: int, t1: int) -> np.ndarray:
    """Which flows (their start and last byte received, -1 where not yet) were live at some moment
    of ``[t0, t1)``."""
    return (start_ns >= 0) & (start_ns < t1) & ((rx_ns < 0) | (rx_ns > t0))


def _paces(gain: float) -> np.ndarray:
    """A paced timer's pace beside n = 1 .. ``MOST_SHARERS`` flows (``timers.pace``): 1 alone."""
    paces = np.minimum(1.0, gain / np.arange(1, MOST_SHARERS + 1))
    paces[0] = 1.0
    return paces


def _alone(spent: np.ndarray, gain: float) -> np.ndarray:
    """Alone times (ns) of copies that spent ``spent`` (``_spent``, one row each), at ``gain``: each
    ``integral pace(sharers(t)) dt`` over its time to its last byte received."""
    return np.rint(spent @ _paces(gain)).astype(np.int64)


def fit_gain(spent: list) -> float:
    """The pace gain (of ``GAINS``) under which each class's sampled copies agree best: the least
    sum of squared relative deviations of their alone times from their class's mean, over the
    classes that say something of it (``informs``).  What n flows
    on a link get together against one alone there depends on more than the link (a ring's flow
    alone is held below its link's rate by the ACKs its NIC also sends; flows sharing the link fill
    it), so it is fitted on the run itself: on the 128-GPU DDP fat-tree's full run (HPCC), copies
    beside one other flow for their whole life took 1.78 times a copy alone, beside two 2.69 times
    (a gain of 1.12, which puts every such group within 3% of its class's alone time, where equal
    shares left them 6-11% short); two 3.3 MB flows alone on a leaf-spine link take 1.99 times one's
    time (a gain of 1).  Copies that all met the same flows say nothing of it; a gain is taken only
    where it makes the copies agree better by ``GAIN_EVIDENCE`` (on the 128-GPU fat-tree 1.12 cuts
    the sum by 12-16% on the full run's copies; on ``tests/test_recurring.py``'s colliding rings,
    whose first copies all met the same flows, nothing, where noise alone fitted 1.07-1.29), else
    it is 1 (equal shares).

    Only over the classes that inform it: counted in, a class whose copies all ran alone (or all
    shared for their whole lives) adds a deviation no gain moves and hides the others' evidence.  On
    the DDP fat-tree cut to 10 layers (``gen gpt --model gpt-13b --layers 10 --gpus 128 --tp 8 --pp 2
    --microbatches 4``, HPCC, its full run; DEVELOPERS.md, "A gain the first classes cannot show") the
    first 16 classes sampled are stage 1's, 11 of them alone in every copy: over them the fit kept 1,
    over all 256 classes 1.14 cut the sum by 4.2% only, where stage 0's classes alone show 1.12-1.13
    by 16-23%; the run paced at 1 put its iteration 2.74% long, at 1.12 0.95%."""
    spent = [rows for rows in spent if informs(rows)]
    paces = np.stack([_paces(g) for g in GAINS], axis=1)  # [n - 1, gain]
    cost = np.zeros(len(GAINS))
    for rows in spent:
        x = rows @ paces  # [copy, gain]
        cost += ((x / np.maximum(x.mean(axis=0), 1.0) - 1) ** 2).sum(axis=0)
    best, one = int(np.argmin(cost)), int(np.flatnonzero(GAINS == 1.0)[0])
    return float(GAINS[best]) if cost[best] < cost[one] * (1 - GAIN_EVIDENCE) else 1.0


def informs(spent: np.ndarray) -> bool:
    """Whether a class's sampled copies (``_spent``, one row each) say anything of the pace gain:
    their shares of their time beside other flows spread by ``GAIN_SPREAD`` (standard deviation).
    A gain scales only the time shared, so copies that spent the same share of their lives beside
    others (alone throughout, say) agree or disagree alike under every gain."""
    if len(spent) < 2:
        return False
    beside = spent[:, 1:].sum(axis=1) / np.maximum(spent.sum(axis=1), 1.0)
    return float(beside.std()) >= GAIN_SPREAD


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
