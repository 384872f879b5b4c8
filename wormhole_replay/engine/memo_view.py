"""The engine's contract with the memo (``memo/session.py``): what it may read of a running
engine, and what it may do to it.  The memo knows this interface, not the tables behind it.

Between kernel calls (the loop returns ``RUN_MEMO`` once an instant is complete and the memo's
log has records), the memo reads the log (``take_records``), a partition's flows, their links,
rates, CC state and progress, and then either applies a memoized transient to a live partition
(``apply_transient``: its flows are credited the entry's bytes over its length and continue with
its CC state) or freezes one at known steady rates (``freeze_at``).

A flow's *CC state* (``cc_state``, ``CC_FIELDS`` numbers) is what a memo entry stores and installs
per flow: its rates and CC variables (``CC_RATES``, ``CC_COUNTERS``) and the phases of its CC
timers (ns until each fires, -1 if disarmed).  If the engine's CC state grows, so does this, and
the memo's FCG scheme must change (``memo/fcg.py: SCHEME``) so that older entries no longer match.
"""

from __future__ import annotations

import numpy as np

from . import layout as L
from .queue import QN_TIME, QN_WHERE
from .slots import CC_TIMERS, FLOW_SLOTS
from .wormhole.jump import freeze_known, memo_jump, settled_min_jump
from .wormhole.steadiness import settled

CC_RATES = (L.FF_RATE, L.FF_TARGET, L.FF_ALPHA, L.FF_CUR_RATE, L.FF_U)
CC_COUNTERS = (L.FT_ALPHA_CNP, L.FT_DEC_CNP, L.FT_FIRST_CNP, L.FT_RP_STAGE, L.FT_INC_STAGE, L.FT_ECN_CNT,
               L.FT_BATCH, L.FT_CA_STATE)
CC_FIELDS = len(CC_RATES) + len(CC_COUNTERS) + CC_TIMERS

# the memo log's record kinds (``take_records``)
CHANGED = L.ML_CHANGED  # a partition's flows changed: a transient begins
STEADY = L.ML_STEADY  # a partition was found steady and froze
SAMPLED = L.ML_SAMPLED  # rates were sampled (partition -1)
THAWED = L.ML_THAWED  # a partition's jump ended
SHORT = L.ML_SHORT  # a partition's flows are flat over a short window
EMPTIED = L.ML_EMPTIED  # a partition's last flow finished (its row is free)
# what the memo asks the engine to log (``set_log``)
LOG_ON, LOG_SAMPLES, LOG_SHORT, LOG_EMPTIED = L.MEMO_ON, L.MEMO_SAMPLES, L.MEMO_SHORT, L.MEMO_EMPTIED


class EngineView:
    """A running engine (``build.EngineState``) as the memo sees it."""

    def __init__(self, engine):
        self._e = engine
        self._acked_after = []  # (flows, ns from last byte received to last ACK) of flows made timers

    # ------------------------------------------------------------------ the log and the clock
    def take_records(self) -> list[tuple[int, int, int, int]]:
        """The log's records since the last call, ``(kind, partition, generation, time_ns)``."""
        st, ml = self._e.state, self._e.parts.memo_log
        n = int(st[L.ST_ML_N])
        st[L.ST_ML_N] = 0
        return [tuple(r) for r in ml[:n].tolist()]

    def set_log(self, bits: int) -> None:
        """What the engine logs from now on (``LOG_*`` bits)."""
        self._e.cfg.ints[L.CI_MEMO] = bits

    @property
    def now(self) -> int:
        return int(self._e.state[L.ST_NOW])

    @property
    def payload(self) -> int:
        return int(self._e.cfg.ints[L.CI_PAYLOAD])

    @property
    def tail_ns(self) -> int:
        return int(self._e.cfg.ints[L.CI_WH_TAIL])

    @property
    def min_jump_ns(self) -> int:
        return int(self._e.cfg.ints[L.CI_WH_MIN_JUMP])

    @property
    def settled_min_jump_ns(self) -> int:
        """The shortest jump of a partition with no shares to settle (one short window)."""
        return int(settled_min_jump(self._e.cfg))

    # ------------------------------------------------------------------ partitions
    def is_live(self, k: int) -> bool:
        return int(self._e.parts.table[k, L.WP_STATE]) == 1

    def exists(self, k: int) -> bool:
        return int(self._e.parts.table[k, L.WP_STATE]) != 0

    def generation(self, k: int) -> int:
        """Bumped whenever partition k's flows change: a record is current while it matches."""
        return int(self._e.parts.table[k, L.WP_GEN])

    def samples_taken(self, k: int) -> int:
        """Rate samples since partition k's flows last changed (or it thawed)."""
        return int(self._e.parts.table[k, L.WP_NSAMP])

    def flows_of(self, k: int) -> list[int]:
        """Partition k's flows, sorted."""
        out = []
        ft = self._e.flows.table
        f = self._e.parts.table[k, L.WP_FLOWS]
        while f >= 0:
            out.append(int(f))
            f = ft[f, L.FT_PNEXT]
        out.sort()
        return out

    def ports_of(self, k: int) -> list[int]:
        """The ports partition k's flows cross (data and ACK paths, both directions)."""
        out = []
        p = self._e.parts.table[k, L.WP_PORTS]
        while p >= 0:
            out.append(int(p))
            p = self._e.net.ports[p, L.PT_PNEXT]
        return out

    def has_fluid(self, k: int) -> bool:
        """Some flow of partition k is fast-forwarded on its own (fluid): the memo leaves it alone."""
        return bool(self._e.flows.table[self.flows_of(k), L.FT_FLUID].any())

    def settled(self, k: int) -> bool:
        """Partition k has no shares to settle (the engine freezes it after a short window)."""
        e = self._e
        return bool(settled(e.net, e.flows, e.cfg, e.parts, k))

    # ------------------------------------------------------------------ flows
    def links(self, flows) -> list[list[int]]:
        """Each flow's data-path egress ports."""
        ft, paths = self._e.flows.table, self._e.flows.paths
        return [paths[ft[f, L.FT_DPATH]:ft[f, L.FT_APATH]].tolist() for f in flows]

    def crossed(self, flows) -> list[list[int]]:
        """Each flow's data-path and ACK-path egress ports: where its packets meet others' (a
        flow's data shares its NIC and the switch port before its receiver with ACKs of flows
        going the other way, and HPCC's INT counts their bytes)."""
        ft, paths = self._e.flows.table, self._e.flows.paths
        return [paths[ft[f, L.FT_DPATH]:end].tolist() for f, end in zip(flows, self._ports_end(flows))]

    def _ports_end(self, flows) -> np.ndarray:
        """End of each flow's ports in ``paths`` (its data path, then its ACK path)."""
        ft = self._e.flows.table
        nxt = np.asarray(flows, np.int64) + 1  # the next flow's data path starts where f's ports end
        last = nxt >= len(ft)
        return np.where(last, len(self._e.flows.paths), ft[np.where(last, 0, nxt), L.FT_DPATH])

    def line_rates(self, flows) -> np.ndarray:
        return self._e.flows.rates[flows, L.FF_MAX_RATE]

    def rates(self, flows) -> np.ndarray:
        """Current sending rates (bps)."""
        return self._e.flows.rates[flows, L.FF_RATE]

    def targets(self, flows) -> np.ndarray:
        """DCQCN's target rates (bps)."""
        return self._e.flows.rates[flows, L.FF_TARGET]

    def alphas(self, flows) -> np.ndarray:
        return self._e.flows.rates[flows, L.FF_ALPHA]

    def reference_rates(self, flows) -> np.ndarray:
        """HPCC's reference rate (the one its window is computed from)."""
        return self._e.flows.rates[flows, L.FF_CUR_RATE]

    def utilisations(self, flows) -> np.ndarray:
        """HPCC's utilisation estimate of the flow's bottleneck (1: exactly full)."""
        return self._e.flows.rates[flows, L.FF_U]

    def increase_stages(self, flows) -> np.ndarray:
        """HPCC's additive-increase stage (rate updates since it last cut)."""
        return self._e.flows.table[flows, L.FT_INC_STAGE]

    def never_cut(self, flows) -> np.ndarray:
        """DCQCN: the flow has yet to receive its first CNP."""
        return self._e.flows.table[flows, L.FT_FIRST_CNP] != 0

    def acked(self, flows) -> np.ndarray:
        return self._e.flows.table[flows, L.FT_SND_UNA].copy()

    def sent(self, flows) -> np.ndarray:
        return self._e.flows.table[flows, L.FT_SND_NXT].copy()

    def sizes(self, flows) -> np.ndarray:
        return self._e.flows.table[flows, L.FT_SIZE]

    def windows(self, flows) -> np.ndarray:
        return self._e.flows.table[flows, L.FT_WIN]

    def base_rtts(self, flows) -> np.ndarray:
        return self._e.flows.table[flows, L.FT_BASE_RTT]

    def steady_rates(self, flows) -> np.ndarray:
        """The rates a frozen partition's flows are being credited at (bps of payload)."""
        return self._e.flows.rates[flows, L.FF_STEADY].copy()

    def recent_rates(self, flows, n: int) -> np.ndarray:
        """Each flow's mean delivered rate over its last ``n`` rate samples."""
        sr, ft = self._e.parts.samples, self._e.flows.table
        l = sr.shape[1]
        recent = [[sr[f, (m - 2 - j) % l] for j in range(n)] for f, m in zip(flows, ft[flows, L.FT_NSAMP])]
        return np.mean(recent, axis=1)

    def queue_bytes(self, port: int) -> int:
        return int(self._e.net.ports[port, L.PT_QBYTES])

    def cc_state(self, flows) -> np.ndarray:
        """Each flow's CC state, ``[flow, CC_FIELDS]``."""
        e = self._e
        flows = np.asarray(flows, np.int64)
        slots = _timer_slots(e.cfg.ints, flows)
        qn = e.events.slots
        phases = np.where(qn[slots, QN_WHERE] >= 0, qn[slots, QN_TIME] - self.now, -1)
        return np.concatenate([e.flows.rates[np.ix_(flows, CC_RATES)], e.flows.table[np.ix_(flows, CC_COUNTERS)],
                               phases], axis=1)

    # ------------------------------------------------------------------ acts
    def apply_transient(self, k: int, flows, credit_bytes, rates, cc, t_conv_ns: int, steady: bool,
                        min_jump_ns: int) -> bool:
        """Jump live partition k over a memoized transient of ``t_conv_ns``: ``flows[i]`` is
        credited ``credit_bytes[i]`` over it and (``steady``) goes on at ``rates[i]`` until the
        first flow's tail; ``cc`` (``[flow, CC_FIELDS]``, or None) is installed.  False, and
        nothing changed, if a flow would reach its tail inside the transient or the jump would be
        shorter than ``min_jump_ns`` (the view's ``min_jump_ns``, or ``settled_min_jump_ns`` for a
        settled partition's course)."""
        e = self._e
        ft, ff = e.flows.table, e.flows.rates
        at = np.asarray(flows, np.int64)
        saved_f, saved_i = ff[at].copy(), ft[at].copy()
        ff[at, L.FF_MEMO] = np.asarray(credit_bytes, np.float64)
        ff[at, L.FF_STEADY] = np.asarray(rates, np.float64)
        nr, nc = len(CC_RATES), len(CC_COUNTERS)
        if cc is not None:
            cc = np.asarray(cc, np.float64)
            ff[np.ix_(at, CC_RATES)] = cc[:, :nr]
            ft[np.ix_(at, CC_COUNTERS)] = cc[:, nr:nr + nc].astype(np.int64)
        phases = (cc[:, nr + nc:] if cc is not None else np.zeros((len(at), 0))).astype(np.int64)
        if memo_jump(e.net, e.flows, e.events, e.cfg, e.state, e.parts, k, int(t_conv_ns), bool(steady), at,
                     np.ascontiguousarray(phases), int(min_jump_ns)):
            return True
        ff[at], ft[at] = saved_f, saved_i
        return False

    # ------------------------------------------------------------------ whole flows (memo/episodes.py)
    def timers(self, flows) -> np.ndarray:
        """Which of ``flows`` are (still) timers: not simulated packet by packet."""
        return self._e.flows.table[np.asarray(flows, np.int64), L.FT_VIRTUAL] >= 0

    @property
    def timers_thawed(self) -> int:
        """The memo's timers made packet flows half-way, a foreign flow having started beside them."""
        return int(self._e.state[L.ST_WH_TIMERS_THAWED])

    def any_started(self, flows) -> bool:
        """Some flow of ``flows`` has started."""
        return bool((self._e.flows.table[np.asarray(flows, np.int64), L.FT_STATE] != 0).any())

    def started(self, flows) -> np.ndarray:
        """Which of ``flows`` have started."""
        return self._e.flows.table[np.asarray(flows, np.int64), L.FT_STATE] != 0

    def finished(self, flows) -> np.ndarray:
        """Which of ``flows`` have their last ACK (one column read: a scan of many flows)."""
        return self._e.flows.table[np.asarray(flows, np.int64), L.FT_FINISH] >= 0

    def acknowledged(self, f: int) -> bool:
        """Flow f has its last ACK (its sender is done)."""
        return bool(self.finished([f])[0])

    def flow_times(self, flows) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Start, last byte received and last ACK of ``flows`` (-1 where not yet)."""
        ft = self._e.flows.table
        at = np.asarray(flows, np.int64)
        start = np.where(ft[at, L.FT_STATE] != 0, ft[at, L.FT_START], -1)
        return start, ft[at, L.FT_RX_DONE].copy(), ft[at, L.FT_FINISH].copy()

    def active_between(self, t0: int, t1: int, flows) -> bool:
        """Some flow of ``flows`` had started before ``t1`` and was not done (acknowledged) by ``t0``."""
        start, _, fin = self.flow_times(flows)
        return bool(((start >= 0) & (start < t1) & ((fin < 0) | (fin > t0))).any())

    def mark_memo_flows(self, flows, group: int) -> None:
        """Network ``flows``, none started, are the memo's, learned with the others of ``group``: not
        foreign to its timers (``wormhole/timers.py``), whether they become timers or not.  Group 0
        makes them foreign again (a class the memo was learning, refuted before they started)."""
        ft = self._e.flows.table
        at = np.asarray(flows, np.int64)
        assert not (ft[at, L.FT_STATE] != 0).any() and (ft[at, L.FT_VIRTUAL] < 0).all()
        ft[at, L.FT_MEMO_TIMER] = group

    def make_timers(self, flows, rx_ns, fct_ns, group: int, gain: float = 1.0, aside: bool = False) -> None:
        """Network ``flows``, none started, become timers: each, once it starts, is received
        ``rx_ns`` later (which releases its successors) and acknowledged ``fct_ns`` after its start
        (``settle_timers``); its bytes count as fast-forwarded, its packets' events as avoided.  One
        that is due while a live flow crosses its ports is simulated after all (``wormhole/timers.py``).
        ``group`` (not 0) names what the timers were learned with: timers of one group may share links,
        as their copies did when learned; timers of two groups whose data would share a link are
        simulated (``mark_memo_flows``).  A negative group's timers are paced (recurring flows):
        ``rx_ns`` is the time alone, which a timer covers, moment by moment, at ``min(1, gain / n)``
        (1 alone), n the flows whose data leave its busiest port, reserving its share of its links; its last
        ACK comes ``fct_ns - rx_ns`` after its last byte received (``wormhole/timers.py``).  Timers
        ``aside`` hold their times and count as no one's sharer: flows that took little of their
        links where their times were taken (a pipeline send among rings), so that the timers beside
        them ran as if they were not there; each reserves its mean rate of its links
        (``timers.aside_bps``), which the packet flows beside it meet."""
        e = self._e
        ft = e.flows.table
        at = np.asarray(flows, np.int64)
        self.mark_memo_flows(at, group)
        ft[at, L.FT_TIMER_ASIDE] = int(aside)
        self._time(at, rx_ns, fct_ns, gain)
        ft[at, L.FT_SKIPPED] = ft[at, L.FT_SIZE]
        packets = (ft[at, L.FT_SIZE] + self.payload - 1) // self.payload
        hops = self._ports_end(at) - ft[at, L.FT_DPATH]
        e.state[L.ST_WH_EV_SKIPPED] += int((packets * 2 * hops).sum())  # as a jump counts them

    def retime_timers(self, flows, rx_ns, fct_ns, gain: float) -> None:
        """Timers ``flows``, none started, take new times (as ``make_timers``) at pace ``gain``."""
        ft = self._e.flows.table
        at = np.asarray(flows, np.int64)
        assert not (ft[at, L.FT_STATE] != 0).any() and (ft[at, L.FT_VIRTUAL] >= 0).all()
        self._time(at, rx_ns, fct_ns, gain)

    def _time(self, at: np.ndarray, rx_ns, fct_ns, gain: float) -> None:
        """Timers ``at`` are received ``rx_ns`` after their start, at pace ``gain``, and acknowledged
        ``fct_ns`` after it (``settle_timers`` applies the latest times given)."""
        self._e.flows.table[at, L.FT_VIRTUAL] = np.asarray(rx_ns, np.int64)
        self._e.flows.rates[at, L.FF_PACE_GAIN] = gain
        self._acked_after.append((at, np.asarray(fct_ns, np.int64) - np.asarray(rx_ns, np.int64)))

    def forwarded(self, flows) -> np.ndarray:
        """Bytes of ``flows`` not simulated packet by packet (a timer's, a jump's, a thawed timer's)."""
        return self._e.flows.table[np.asarray(flows, np.int64), L.FT_SKIPPED].copy()

    def settle_timers(self) -> None:
        """At the end of the run: each timer flow's last ACK its ACK tail (``fct_ns - rx_ns``) after
        its last byte received (not for one that met a live flow when it was due, and was simulated:
        ``wormhole/timers.py``)."""
        ft = self._e.flows.table
        for at, tail in self._acked_after:
            done = (ft[at, L.FT_FINISH] >= 0) & (ft[at, L.FT_VIRTUAL] >= 0)
            ft[at[done], L.FT_FINISH] = ft[at[done], L.FT_RX_DONE] + tail[done]

    def freeze_at(self, k: int, flows, rates) -> bool:
        """Freeze live partition k now at known steady ``rates`` (in the order of ``flows``);
        False, and nothing changed, if a flow's tail is too near."""
        e = self._e
        at = np.asarray(flows, np.int64)
        ff = e.flows.rates
        saved = ff[at, L.FF_STEADY].copy()
        ff[at, L.FF_STEADY] = np.asarray(rates, np.float64)
        if freeze_known(e.net, e.flows, e.events, e.cfg, e.state, e.parts, k):
            return True
        ff[at, L.FF_STEADY] = saved
        return False


def _timer_slots(ci, flows) -> np.ndarray:
    """Event slots of the flows' CC timers (``slots.qp_slot``), [flow, timer]."""
    base = 2 * int(ci[L.CI_N_PORTS]) + int(ci[L.CI_N_HOSTS]) + 1
    return base + FLOW_SLOTS * np.asarray(flows, np.int64)[:, None] + np.arange(CC_TIMERS)[None, :]
