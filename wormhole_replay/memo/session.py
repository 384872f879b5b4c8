"""The memo during one run: look up transients as partitions change, apply hits, learn misses.

The engine stops (``RUN_MEMO``) once an instant is complete if it logged a record: a partition's
flows changed, it froze steady, its jump ended, its flows were flat for a few samples, or rates
were sampled.  ``MemoSession.handle`` reads the log:

* **A transient begins** (flows changed), unless the partition has no shares to settle
  (``engine.wormhole.settled``: the engine finds its steady state in a short window, sooner than
  a lookup pays for itself; counted as ``memo_settled``) or a flow of it is too close to its end
  for any hit to jump ``min_jump`` (``memo_too_short``): its start FCG is built (``_start_fcg``:
  rates, and the CC state and queues the paper's rate-only key leaves out) and looked up.  A hit is applied
  through the isomorphism's mapping: each flow is credited its stored bytes (plus the pipe it had
  filled), gets the stored CC state and timer phases, and the partition jumps over the transient
  (``engine.wormhole.memo_jump``); an entry that ended steady continues at its steady rates to the
  next disruptive event.  A hit whose flows would reach their tails inside it is ``refused``.
* **A transient ends**: a miss's course is snapshotted at every rate sample; it is learned when
  the partition freezes steady (the paper's entry: ``t_conv`` to the start of the steadiness
  window, the bytes, the steady rates) or, when a change ends it first, up to the last sample at
  which every flow still had its tail ahead (a *prefix*: replaying it leads to that sample's state,
  and the rest is simulated).  Prefixes are learned for partitions whose flows share no link (a
  flow alone at its rate); with ``shared_prefixes`` also for flows sharing links, whose queues a
  hit cannot restore (measured: a few percent of FCT error per hit).
* **Steady states**: every freeze stores its FCG weighted by the steady rates.  A partition whose
  flows have been flat for a short window (``FastForward.short_samples``) and whose rates make a
  known steady FCG is frozen at once, without waiting for a full window.
* **Spot checks** (``spot_check``): that many hits, of distinct entries, are simulated instead of
  applied, and the bytes their flows delivered are compared with the entry's.

Entries learned in a run are used in the same run (the next layer or iteration hits the first)
and handed to the store (``new_entries``).  Lookups read only memory: the entries of this
network's fingerprint, loaded when the run starts.  The journal (hits, jumps, spot checks) is
``tables()``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..engine import layout as L
from ..engine import wormhole as wh
from ..engine.queue import QN_TIME, QN_WHERE
from . import fcg
from .entry import CC_FIELDS, MemoEntry

# the CC state a memo entry carries per flow (installed when it is applied), with its timers' phases
CC_FLOAT = (L.FF_RATE, L.FF_TARGET, L.FF_ALPHA, L.FF_CUR_RATE, L.FF_U)
CC_INT = (L.FT_ALPHA_CNP, L.FT_DEC_CNP, L.FT_FIRST_CNP, L.FT_RP_STAGE, L.FT_INC_STAGE, L.FT_ECN_CNT,
          L.FT_BATCH, L.FT_CA_STATE)
assert len(CC_FLOAT) + len(CC_INT) + wh.CC_TIMERS == CC_FIELDS


def _timer_slots(ci, flows) -> np.ndarray:
    """Event slots of the flows' CC timers (``engine.slots.qp_slot``), [flow, timer]."""
    base = 2 * int(ci[L.CI_N_PORTS]) + int(ci[L.CI_N_HOSTS]) + 1
    return base + L.FLOW_SLOTS * np.asarray(flows, np.int64)[:, None] + np.arange(wh.CC_TIMERS)[None, :]


@dataclass
class Snapshot:
    """A transient's flows at one rate sample: bytes acknowledged, CC state, timer phases."""

    t: int
    una: np.ndarray
    nxt: np.ndarray
    cc: np.ndarray  # [flow, CC_FLOAT + CC_INT + CC timer phases]


@dataclass
class Transient:
    """A transient being learned: partition generation, start, key FCG, snapshots since."""

    gen: int
    t: int
    key: fcg.FCG
    start: Snapshot
    snaps: list = field(default_factory=list)


class MemoSession:
    def __init__(self, fingerprint: str, entries: list[MemoEntry], tau_ns: int, samples: int, short_samples: int,
                 shared_prefixes: bool = False, on_learn=None, spot_check: int = 0, lookups: bool = True):
        self.fingerprint = fingerprint
        self.lookups = lookups  # False: keep the journal only (no memo database)
        self.spot_check = spot_check  # this many hits (of distinct entries) are checked, not applied
        self.hits: list = []  # (time_ns, digest, steady, t_conv_ns, flows) per hit applied
        self.jumps: list = []  # (partition, start_ns, end_ns, kind, flows) per fast-forward
        self.checks: list = []  # finished spot checks (see _check)
        self._open_jumps: dict = {}  # partition -> (start_ns, kind, flows)
        self._checking: list = []  # spot checks under way
        self.shared_prefixes = shared_prefixes  # learn prefixes of transients of flows sharing links
        self.on_learn = on_learn  # called after an entry is learned (the database flushes now and then)
        self.tau = tau_ns
        self.l = samples
        self.short = short_samples
        self._buckets: dict = {}
        self._steady_known = 0
        self._digests: set = set()
        self.new_entries: list[MemoEntry] = []
        self.hit_counts: dict = {}  # digest -> hits in this run
        self.hit_flows: list = []  # the lowest flow id of each partition a hit was applied to
        self.looked_flows: list = []  # ... of each partition whose transient was looked up
        self.pending: dict = {}  # partition -> (gen, t_change, FCG, snd_una at the change)
        self.counters = {"memo_hits": 0, "memo_misses": 0, "memo_refused": 0, "memo_steady_hits": 0,
                         "memo_inserts": 0, "memo_too_large": 0, "memo_too_short": 0, "memo_settled": 0,
                         "memo_entries_at_start": len(entries)}
        for e in entries:
            self._add(e)

    def log_bits(self) -> int:
        """What the engine should log for us now (``CI_MEMO``): samples only while a transient is
        being learned or a hit checked, short flat windows only once a steady state is known."""
        bits = L.MEMO_ON
        if self.lookups and (self.pending or self._checking):
            bits |= L.MEMO_SAMPLES
        if self.lookups and self._steady_known:
            bits |= L.MEMO_SHORT
        return bits

    # ------------------------------------------------------------------ the in-memory index
    def _add(self, e: MemoEntry) -> bool:
        if e.digest in self._digests:
            return False
        self._digests.add(e.digest)
        self._steady_known += e.kind == "steady"
        self._buckets.setdefault((e.kind, e.wl_hash, e.n_vertices, e.n_edges), []).append((e, None))
        return True

    def find(self, kind: str, g: fcg.FCG):
        """The first stored entry isomorphic to ``g`` and the mapping (entry vertex -> g vertex)."""
        bucket = self._buckets.get((kind, g.wl_hash, len(g.v), len(g.e)))
        if not bucket:
            return None, None
        for i, (e, eg) in enumerate(bucket):
            if eg is None:
                eg = fcg.graph_of(e.key)
                bucket[i] = (e, eg)
            m = fcg.mapping(eg, g.graph)
            if m is not None:
                return e, m
        return None, None

    def learn(self, kind: str, g: fcg.FCG, value: dict) -> None:
        e = MemoEntry(kind, self.fingerprint, fcg.SCHEME, g.wl_hash, g.key, value)
        if self.find(kind, g)[0] is None and self._add(e):
            self.new_entries.append(e)
            self.counters["memo_inserts"] += 1
            if self.on_learn is not None:
                self.on_learn()

    # ------------------------------------------------------------------ reading the engine
    @staticmethod
    def _flows(state, k) -> list:
        out = []
        f = state.wp[k, L.WP_FLOWS]
        ft = state.ft
        while f >= 0:
            out.append(int(f))
            f = ft[f, L.FT_PNEXT]
        out.sort()
        return out

    @staticmethod
    def _fcg(state, flows, rates) -> fcg.FCG:
        """The steady FCG: vertices weighted by their (steady) rates."""
        ft, paths = state.ft, state.paths
        links = [paths[ft[f, L.FT_DPATH]:ft[f, L.FT_APATH]].tolist() for f in flows]
        line = state.ff[flows, L.FF_MAX_RATE]
        return fcg.build(flows, links, [fcg.quantise(r, x) for r, x in zip(rates, line)])

    @staticmethod
    def _start_fcg(state, flows) -> fcg.FCG:
        """The FCG where a transient starts.  Its course depends on more than the rates the
        paper keys on, so its vertex weight also holds the CC's target rate, its alpha (DCQCN),
        and whether the flow has yet to be cut once; its edges the queue on the links shared."""
        ft, ff, pt, paths = state.ft, state.ff, state.pt, state.paths
        links = [paths[ft[f, L.FT_DPATH]:ft[f, L.FT_APATH]].tolist() for f in flows]
        line = ff[flows, L.FF_MAX_RATE]
        q = fcg.RATE_LEVELS + 1
        weights = [fcg.quantise(ff[f, L.FF_RATE], x) + q * (fcg.quantise(ff[f, L.FF_TARGET], x)
                   + q * (min(int(ff[f, L.FF_ALPHA] * 4), 4) + 5 * int(ft[f, L.FT_FIRST_CNP] != 0)))
                   for f, x in zip(flows, line)]
        payload = int(state.ci[L.CI_PAYLOAD])
        return fcg.build(flows, links, weights, lambda p: fcg.queue_level(int(pt[p, L.PT_QBYTES]), payload))

    # ------------------------------------------------------------------ the log
    def handle(self, state) -> None:
        """Handle the memo log's records (the engine stopped with ``RUN_MEMO``)."""
        st, wp, ml = state.st, state.wp, state.ml
        n = int(st[L.ST_ML_N])
        records = ml[:n].copy()
        st[L.ST_ML_N] = 0
        # transients that ended since the last stop (their partition changed or is gone): learn them
        if not self.lookups:
            self._journal(state, records)
            return
        for k, p in list(self.pending.items()):
            if wp[k, L.WP_STATE] == 0 or wp[k, L.WP_GEN] != p.gen:
                del self.pending[k]
                self._ended(state, p)
        for kind, k, gen, t in records.tolist():
            if kind == L.ML_SAMPLED:
                for p in self.pending.values():
                    p.snaps.append(self._snapshot(state, p.key.flows))
                self._check(state)
            elif kind == L.ML_THAWED:
                self._journal(state, [(kind, k, gen, t)])
            elif wp[k, L.WP_STATE] == 0 or wp[k, L.WP_GEN] != gen:
                continue  # the partition changed again (or is gone) since: a later record stands
            elif kind == L.ML_CHANGED:
                if wp[k, L.WP_STATE] != 1:
                    continue
                s = state
                if wh.settled(s.pt, s.ci, s.ft, s.ff, s.paths, wp, s.wsf, k):  # the engine's own (short window)
                    self.counters["memo_settled"] += 1
                else:
                    self._changed(state, k, gen, t)
            elif kind == L.ML_SHORT:
                if wp[k, L.WP_STATE] == 1:
                    self._short(state, k, gen, t)
            elif wp[k, L.WP_NSAMP] > self.l:  # steady over a full window
                self._steady(state, k, gen, t, self.l)
            else:  # over a short one: a settled partition (wormhole.settled), the engine's own
                self._journal(state, [(kind, k, gen, t)])

    def _journal(self, state, records) -> None:
        """Note where jumps begin (plain steady ones; memo jumps are noted when applied) and end."""
        for kind, k, gen, t in np.asarray(records).tolist():
            if kind == L.ML_STEADY:
                self._open_jumps[k] = (t, "steady", self._flows(state, k))
            elif kind == L.ML_THAWED and k in self._open_jumps:
                start, what, flows = self._open_jumps.pop(k)
                self.jumps.append((k, start, t, what, flows))

    def _snapshot(self, state, flows) -> Snapshot:
        ft, ff, qn = state.ft, state.ff, state.qn
        now = int(state.st[L.ST_NOW])
        slots = _timer_slots(state.ci, flows)
        phases = np.where(qn[slots, QN_WHERE] >= 0, qn[slots, QN_TIME] - now, -1)
        cc = np.concatenate([ff[np.ix_(flows, CC_FLOAT)], ft[np.ix_(flows, CC_INT)], phases], axis=1)
        return Snapshot(now, ft[flows, L.FT_SND_UNA].copy(), ft[flows, L.FT_SND_NXT].copy(), cc)

    def _changed(self, state, k, gen, t) -> None:
        flows = self._flows(state, k)
        if len(flows) > fcg.MAX_VERTICES:
            self.counters["memo_too_large"] += 1
            return
        ft, ff = state.ft, state.ff
        at_line_rate = (ft[flows, L.FT_SIZE] - ft[flows, L.FT_SND_UNA]) * 8e9 / ff[flows, L.FF_MAX_RATE]
        if at_line_rate.min() < state.ci[L.CI_WH_MIN_JUMP]:  # no hit could jump far enough (memo_jump)
            self.counters["memo_too_short"] += 1
            return
        g = self._start_fcg(state, flows)
        self.looked_flows.append(flows[0])
        e, m = self.find("transient", g)
        if e is not None and self._verify(state, k, gen, t, g, e, m):
            return
        if e is not None and self._apply(state, k, g, e, m):
            self.counters["memo_hits"] += 1
            self.hit_counts[e.digest] = self.hit_counts.get(e.digest, 0) + 1
            self.hit_flows.append(flows[0])
            self.hits.append((t, e.digest, bool(e.value.get("steady", True)), int(e.value["t_conv_ns"]), flows))
            self._open_jumps[k] = (t, "memo", flows)
            return
        if e is not None:
            self.counters["memo_refused"] += 1
        else:
            self.counters["memo_misses"] += 1
        self.pending[k] = Transient(gen, t, g, self._snapshot(state, flows))

    def _apply(self, state, k, g, e, m) -> bool:
        s, ft, ff = state, state.ft, state.ff
        flows = np.array(g.flows, np.int64)
        at = flows[[m[i] for i in range(len(flows))]]  # entry vertex i is flow at[i]
        saved_f, saved_i = ff[at].copy(), ft[at].copy()
        v = e.value
        # the bytes acknowledged in the transient, and the pipe refilled as it was at its end (the
        # bytes in flight then, up to one bandwidth-delay product: beyond that they were queued)
        in_flight = ft[at, L.FT_SND_NXT] - ft[at, L.FT_SND_UNA]
        pipe = np.maximum(np.array(v.get("pipe", np.zeros(len(at))), np.float64) - in_flight, 0)
        ff[at, L.FF_MEMO] = np.array(v["bytes"], np.float64) + pipe
        ff[at, L.FF_STEADY] = np.array(v["rates"], np.float64)
        nf, ni = len(CC_FLOAT), len(CC_INT)
        cc = np.array(v["cc"], np.float64) if "cc" in v else None
        if cc is not None:
            ff[np.ix_(at, CC_FLOAT)] = cc[:, :nf]
            ft[np.ix_(at, CC_INT)] = cc[:, nf:nf + ni].astype(np.int64)
        phases = (cc[:, nf + ni:] if cc is not None else np.zeros((len(at), 0))).astype(np.int64)
        if wh.memo_jump(s.pt, s.nt, s.ft, s.ff, s.qn, s.qw, s.qm, s.hs, s.hpos, s.ci, s.st, s.wp, s.wl, k,
                        int(v["t_conv_ns"]), bool(v.get("steady", True)), at, np.ascontiguousarray(phases)):
            return True
        ff[at], ft[at] = saved_f, saved_i
        return False

    def _verify(self, state, k, gen, t, g, e, m) -> bool:
        """Spot check: instead of applying a hit (of an entry not checked yet), simulate it packet
        by packet and compare what its flows deliver within ``t_conv`` with the entry's bytes."""
        if self.spot_check <= 0 or e.digest in {c[1] for c in self._checking} | {c["digest"] for c in self.checks}:
            return False
        if len(self.checks) + len(self._checking) >= self.spot_check:
            return False
        at = np.array(g.flows, np.int64)[[m[i] for i in range(len(g.flows))]]
        una = state.ft[at, L.FT_SND_UNA].copy()
        self._checking.append([k, e.digest, gen, t, at, una, np.array(e.value["bytes"], np.float64),
                               int(e.value["t_conv_ns"]), t, una.copy()])
        return True

    def _check(self, state) -> None:
        """At a rate sample: finish the spot checks whose ``t_conv`` has passed (or that a change
        of their partition interrupted)."""
        now = int(state.st[L.ST_NOW])
        wp, ft = state.wp, state.ft
        still = []
        for c in self._checking:
            k, digest, gen, t, at, una0, expected, t_conv, t_prev, una_prev = c
            una = ft[at, L.FT_SND_UNA].astype(np.float64)
            interrupted = wp[k, L.WP_STATE] != 1 or wp[k, L.WP_GEN] != gen
            if not interrupted and now < t + t_conv:
                c[8], c[9] = now, una.copy()
                still.append(c)
                continue
            target = t + t_conv
            if not interrupted and now > t_prev:  # what was delivered by t + t_conv, between two samples
                una = una_prev + (una - una_prev) * (target - t_prev) / (now - t_prev)
            actual = una - una0
            err = float(np.abs(actual - expected).sum() / max(actual.sum(), 1.0))  # relative to the truth
            self.checks.append({"time_ns": t, "digest": digest, "flows": at.tolist(), "t_conv_ns": t_conv,
                                "expected_bytes": int(expected.sum()), "actual_bytes": int(round(actual.sum())),
                                "error": float("nan") if interrupted else err, "interrupted": bool(interrupted)})
        self._checking = still

    def tables(self) -> dict:
        """The run's journal as DataFrames: ``memo_hits``, ``jumps`` and ``spot_checks`` (a check
        still under way when the run ended counts as interrupted)."""
        import pandas as pd

        checks = self.checks + [{"time_ns": c[3], "digest": c[1], "flows": c[4].tolist(), "t_conv_ns": c[7],
                                 "expected_bytes": int(c[6].sum()), "actual_bytes": -1, "error": float("nan"),
                                 "interrupted": True} for c in self._checking]
        return {
            "memo_hits": pd.DataFrame(self.hits, columns=["time_ns", "digest", "steady", "t_conv_ns", "flows"]),
            "jumps": pd.DataFrame(self.jumps, columns=["partition", "start_ns", "end_ns", "kind", "flows"]),
            "spot_checks": pd.DataFrame(checks, columns=["time_ns", "digest", "flows", "t_conv_ns", "expected_bytes",
                                                         "actual_bytes", "error", "interrupted"]),
        }

    def _short(self, state, k, gen, t) -> None:
        """Partition k's flows have been flat for a few samples: if the memo knows the steady
        state their rates make, freeze it now rather than after a full window."""
        flows = self._flows(state, k)
        if len(flows) > fcg.MAX_VERTICES:
            return
        ft, ff = state.ft, state.ff
        n = ft[flows, L.FT_NSAMP]
        recent = [[state.sr[f, (m - 2 - j) % self.l] for j in range(self.short)] for f, m in zip(flows, n)]
        g = self._fcg(state, flows, np.mean(recent, axis=1))
        e, m = self.find("steady", g)
        if e is None:
            return
        at = np.array(flows, np.int64)[[m[i] for i in range(len(flows))]]
        saved = ff[at, L.FF_STEADY].copy()
        ff[at, L.FF_STEADY] = np.array(e.value["rates"], np.float64)
        s = state
        if not wh.freeze_known(s.pt, s.nt, s.ft, s.ff, s.paths, s.qn, s.qw, s.qm, s.hs, s.hpos, s.ci, s.st, s.wp,
                               s.wl, s.wsf, k):
            ff[at, L.FF_STEADY] = saved
            return
        self.counters["memo_steady_hits"] += 1
        self.hit_counts[e.digest] = self.hit_counts.get(e.digest, 0) + 1
        self._steady(state, k, gen, t, self.short, kind="memo-steady")

    def _steady(self, state, k, gen, t, window, kind="steady") -> None:
        """Partition k froze, steady over the last ``window`` samples: learn its steady state and
        the transient that led to it."""
        flows = self._flows(state, k)
        self._open_jumps[k] = (t, kind, flows)
        if len(flows) > fcg.MAX_VERTICES:
            return
        rates = state.ff[flows, L.FF_STEADY]
        now = self._snapshot(state, flows)
        self.learn("steady", self._fcg(state, flows, rates), {"rates": rates.tolist(), "cc": now.cc.tolist()})
        p = self.pending.pop(k, None)
        if p is None or p.gen != gen or p.key.flows != flows:
            return
        # the steadiness window began ``window`` samples ago: the transient is what came before it
        t_ws = t - window * self.tau
        at = [x for x in p.snaps if x.t == t_ws]
        if t_ws < p.t or not at:
            return
        sent = np.maximum(at[0].una - p.start.una, 0)
        self.learn("transient", p.key, {"t_conv_ns": int(t_ws - p.t), "bytes": sent.tolist(),
                                        "rates": rates.tolist(), "cc": now.cc.tolist(), "steady": True})

    def _ended(self, state, p: Transient) -> None:
        """A transient ended by a change before its partition was steady: learn its course up to
        the last sample at which every flow still had its tail ahead (a checkpoint), so that a hit
        jumps there, in the CC state of then, and simulates the rest."""
        if p.key.e and not self.shared_prefixes:
            return
        ft, ci = state.ft, state.ci
        flows = p.key.flows
        payload, tail = int(ci[L.CI_PAYLOAD]), int(ci[L.CI_WH_TAIL])
        size, win = ft[flows, L.FT_SIZE], ft[flows, L.FT_WIN]
        for j in range(len(p.snaps) - 1, 0, -1):
            s, before = p.snaps[j], p.snaps[j - 1]
            if s.t - p.t < self.tau:
                return
            rate = np.maximum((s.una - before.una) * 8e9 / (s.t - before.t), 1.0)
            margin = 2 * (2 * payload + rate * tail / 8e9) + win
            if (size - s.una >= margin).all():
                bdp = rate * ft[flows, L.FT_BASE_RTT] / 8e9
                pipe = np.minimum(s.nxt - s.una, bdp).astype(np.int64)
                self.learn("transient", p.key, {"t_conv_ns": int(s.t - p.t), "bytes": (s.una - p.start.una).tolist(),
                                                "pipe": pipe.tolist(), "rates": rate.tolist(), "cc": s.cc.tolist(),
                                                "steady": False})
                return


def journal_only(plan) -> MemoSession:
    """The engine's ``memo`` argument for a wormhole run without a memo database that still keeps
    the journal of jumps (``tables()``)."""
    ff = plan.fast_forward
    return MemoSession("", [], ff.interval_ns, ff.samples, ff.short_samples, lookups=False)
