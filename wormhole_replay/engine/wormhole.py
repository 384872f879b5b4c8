"""Wormhole fast-forwarding inside the event loop (Numba): port-level partitions, steady-state
detection and jumps.  Knows nothing of files, SQL or the command line.

**Partitions.**  Every active network flow crosses a set of links: its data path, its ACK path,
and the reverse direction of each (PFC frames travel against the data).  Flows that share a link
are in one partition: the connected components of the flow-link graph, kept incrementally.  A
starting flow opens a partition, joins one or merges several (``flow_started``); a finishing flow
leaves its partition, which is split if it fell apart (``flow_finished``, a union-find over the
partition's ports).  A host's NIC carries its flows' data and its incoming flows' ACKs, so every
flow that touches a host is in that host's partition.

**Steadiness.**  Every ``tau`` ns (``SAMPLE`` event) each flow of every live partition is sampled:
its delivered rate over the last interval (acknowledged payload bytes x 8 / tau).  A flow is steady
when ``(max - min) / mean`` of its last ``l`` samples is below ``theta``, after allowing one packet
per sample of measurement resolution (a sample counts whole packets); a partition is steady when all
its flows are.  Delivered rate rather than the CC's rate variable: DCQCN's rate variable saws up
and down by design while the throughput it yields is flat, and delivered rate is what the flow's
completion time depends on.  The window restarts whenever the partition's flows change.  A
partition with no shares to settle (``settled``) needs only a short window (``CI_WH_SHORT``
samples): under HPCC its flows cannot contend (``alone``: no switch port carries two of them, none
crosses one slower than its NIC), under DCQCN they all still send at line rate with no queue ECN
could mark (``_idle``); its jump then has no first-jump cap.

**Jumps.**  A steady partition is frozen: its pending events (transmissions, link arrivals, NIC
wake-ups, CC timers) are parked, its ports stop sending, and its buffers keep their occupancy, so
the shared buffer other partitions see does not change.  It thaws at the planned end of the jump
(the first of its flows reaching its tail: the bytes still in flight, two packets and ``tail`` ns
at its steady rate, which are then simulated packet by packet), or earlier when a flow arrives on
one of its links: the paper's skip-back, here free, since the parked events are released only at
thaw, shifted by the jump actually taken ``J``.  At thaw each flow is credited ``rate x J`` bytes
(whole packets, never more than its links carry) by shifting every sequence number of the flow:
sender, receiver and the packets in flight, as if the bytes had been sent before the first
unacknowledged one.  Times kept by the partition (ports' busy-until, packets' arrival, pacing,
HPCC's INT timestamps) shift by ``J``, so the CC resumes where it left off.

Wormhole events draw sequence numbers above all packet events (``slots.wh_seq``): until the first
jump a wormhole run is the full simulation, bit for bit.
"""

import numpy as np
from numba import njit

from .layout import *  # noqa: F403  (column and index constants)
from .queue import QN_SEQ, QN_TIME, QN_WHERE, q_remove, q_set
from .slots import kick, next_seq, qp_slot, sample_slot, wake_slot, wh_seq

DRIFT_BUDGET = 0.1  # the error a jump may accrue from a creeping rate, in units of theta
PARKED = -2  # QN_WHERE of an event held while its partition is frozen
NEVER = 1 << 62
T_TIMERS = 4  # a flow's QP slots 0..3 are its CC and retransmission timers
CC_TIMERS = 3  # ... 0..2 its CC timers (DCQCN's alpha update, rate decrease, rate increase)
INT_TIME_MOD = 1 << 24


# ------------------------------------------------------------------ small helpers -------------


@njit(cache=True, inline="always", _nrt=False)
def _ports_end(ft, paths, f):
    """End of flow f's ports in ``paths`` (data path, then ACK path)."""
    return ft[f + 1, FT_DPATH] if f + 1 < ft.shape[0] else paths.shape[0]


@njit(cache=True, _nrt=False)
def _park(qn, qw, qm, hs, hpos, slot):
    if qn[slot, QN_WHERE] >= 0:
        q_remove(qn, qw, qm, hs, hpos, slot)
        qn[slot, QN_WHERE] = PARKED


@njit(cache=True, _nrt=False)
def _unpark(qn, qw, qm, hs, hpos, slot, shift):
    if qn[slot, QN_WHERE] == PARKED:
        qn[slot, QN_WHERE] = -1
        q_set(qn, qw, qm, hs, hpos, slot, qn[slot, QN_TIME] + shift, qn[slot, QN_SEQ])


@njit(cache=True, _nrt=False)
def _ensure_sampling(ci, st, qn, qw, qm, hs, hpos, n_flows):
    s = sample_slot(ci, n_flows)
    if qn[s, QN_WHERE] < 0 and st[ST_WH_NLIVE] > 0:
        tau = ci[CI_WH_TAU]
        q_set(qn, qw, qm, hs, hpos, s, (st[ST_NOW] // tau + 1) * tau, wh_seq(st))


# ------------------------------------------------------------------ partition bookkeeping ------


@njit(cache=True, _nrt=False)
def _live_add(wp, wl, st, k):
    n = st[ST_WH_NLIVE]
    wl[n] = k
    wp[k, WP_LIVEPOS] = n
    st[ST_WH_NLIVE] = n + 1


@njit(cache=True, _nrt=False)
def _live_remove(wp, wl, st, k):
    n = st[ST_WH_NLIVE] - 1
    i = wp[k, WP_LIVEPOS]
    last = wl[n]
    wl[i] = last
    wp[last, WP_LIVEPOS] = i
    wp[k, WP_LIVEPOS] = -1
    st[ST_WH_NLIVE] = n


@njit(cache=True, _nrt=False)
def _part_new(wp, wl, st):
    k = st[ST_WH_FREE]
    st[ST_WH_FREE] = wp[k, WP_NEXT_FREE]
    wp[k, WP_STATE] = 1
    wp[k, WP_NFLOWS] = 0
    wp[k, WP_FLOWS] = -1
    wp[k, WP_NPORTS] = 0
    wp[k, WP_PORTS] = -1
    wp[k, WP_NEXT_FREE] = -1
    wp[k, WP_FRESH] = 1
    wp[k, WP_NSAMP] = 0
    wp[k, WP_ALONE] = -1
    _live_add(wp, wl, st, k)
    st[ST_WH_NPARTS] += 1
    if st[ST_WH_NPARTS] > st[ST_WH_PARTS_MAX]:
        st[ST_WH_PARTS_MAX] = st[ST_WH_NPARTS]
    return k


@njit(cache=True, _nrt=False)
def _part_free(wp, wl, st, k):
    if wp[k, WP_STATE] == 1:
        _live_remove(wp, wl, st, k)
    wp[k, WP_STATE] = 0
    wp[k, WP_NEXT_FREE] = st[ST_WH_FREE]
    st[ST_WH_FREE] = k
    st[ST_WH_NPARTS] -= 1


@njit(cache=True, _nrt=False)
def _link(wp, tab, part, nxt, prv, head, count, k, x):
    """Put row x of ``tab`` (flows or ports) at the head of partition k's list."""
    h = wp[k, head]
    tab[x, part] = k
    tab[x, prv] = -1
    tab[x, nxt] = h
    if h >= 0:
        tab[h, prv] = x
    wp[k, head] = x
    wp[k, count] += 1


@njit(cache=True, _nrt=False)
def _unlink(wp, tab, part, nxt, prv, head, count, x):
    """Take row x of ``tab`` out of its partition's list."""
    k = tab[x, part]
    n = tab[x, nxt]
    pv = tab[x, prv]
    if pv >= 0:
        tab[pv, nxt] = n
    else:
        wp[k, head] = n
    if n >= 0:
        tab[n, prv] = pv
    tab[x, part] = -1
    wp[k, count] -= 1


@njit(cache=True, inline="always", _nrt=False)
def _flow_link(wp, ft, k, f):
    _link(wp, ft, FT_PART, FT_PNEXT, FT_PPREV, WP_FLOWS, WP_NFLOWS, k, f)


@njit(cache=True, inline="always", _nrt=False)
def _flow_unlink(wp, ft, f):
    _unlink(wp, ft, FT_PART, FT_PNEXT, FT_PPREV, WP_FLOWS, WP_NFLOWS, f)


@njit(cache=True, inline="always", _nrt=False)
def _port_link(wp, pt, k, p):
    _link(wp, pt, PT_PART, PT_PNEXT, PT_PPREV, WP_PORTS, WP_NPORTS, k, p)


@njit(cache=True, inline="always", _nrt=False)
def _port_unlink(wp, pt, p):
    _unlink(wp, pt, PT_PART, PT_PNEXT, PT_PPREV, WP_PORTS, WP_NPORTS, p)


@njit(cache=True, _nrt=False)
def _restart_windows(wp, k):
    """The partition's flows changed: every flow's steadiness window starts again."""
    wp[k, WP_FRESH] = 1
    wp[k, WP_NSAMP] = 0
    wp[k, WP_ALONE] = -1


@njit(cache=True, _nrt=False)
def _record(ml, st, kind, k, gen):
    """Append a memo log record (a full log only costs the memo a lookup)."""
    n = st[ST_ML_N]
    if n < ml.shape[0]:
        ml[n, ML_KIND] = kind
        ml[n, ML_PART] = k
        ml[n, ML_GEN] = gen
        ml[n, ML_TIME] = st[ST_NOW]
        st[ST_ML_N] = n + 1


@njit(cache=True, _nrt=False)
def _log(wp, ml, ci, st, kind, k):
    """A memo log record for partition k (only when the memo is on)."""
    if ci[CI_MEMO] != 0:
        _record(ml, st, kind, k, wp[k, WP_GEN])


@njit(cache=True, _nrt=False)
def _transient(wp, ml, ci, st, k):
    """Partition k's flows changed: a transient begins (its current record is the last one)."""
    wp[k, WP_GEN] += 1
    _log(wp, ml, ci, st, ML_CHANGED, k)


@njit(cache=True, _nrt=False)
def _changed(wp, ft, ml, ci, st, k):
    """Partition k's flows changed: their windows restart, and a transient begins."""
    _restart_windows(wp, k)
    _transient(wp, ml, ci, st, k)


@njit(cache=True, _nrt=False)
def _merge(wp, wl, pt, ft, st, into, other):
    """Move every flow and port of partition ``other`` into ``into``."""
    f = wp[other, WP_FLOWS]
    while f >= 0:
        nx = ft[f, FT_PNEXT]
        _flow_link(wp, ft, into, f)
        f = nx
    p = wp[other, WP_PORTS]
    while p >= 0:
        nx = pt[p, PT_PNEXT]
        _port_link(wp, pt, into, p)
        p = nx
    wp[other, WP_FLOWS] = -1
    wp[other, WP_PORTS] = -1
    _part_free(wp, wl, st, other)
    st[ST_WH_MERGES] += 1


# ------------------------------------------------------------------ freeze and thaw ------------


@njit(cache=True, _nrt=False)
def _shift_packet(ft, pk, ci, k, i, shift):
    """A packet held in a frozen partition: its flow's credited bytes move its sequence number,
    and HPCC's INT timestamps move with the partition's clock."""
    f = pk[i, PK_FLOW]
    if f < 0 or ft[f, FT_PART] != k:
        return
    pk[i, PK_SEQ] += ft[f, FT_CREDIT]
    if pk.shape[1] > PK_LEN:
        for h in range(min(pk[i, PK_NHOP], MAXHOP)):
            w = pk[i, PK_INT + h]
            t = w & (INT_TIME_MOD - 1)
            pk[i, PK_INT + h] = w - t + (t + shift) % INT_TIME_MOD


@njit(cache=True, _nrt=False)
def _freeze(pt, nt, ft, ff, paths, qn, qw, qm, hs, hpos, ci, cf, st, wp, wl, sr, wsf, k, n):
    """Freeze partition k, steady over its flows' last ``n`` samples, until its first flow reaches
    its tail; False if that is too soon."""
    l = ci[CI_WH_L]
    # steady rates: the window's mean delivered rate
    confirmed = wp[k, WP_FRESH] == 0  # same flows as the last jump: do their rates still hold?
    half = n // 2
    resolution = ci[CI_PAYLOAD] * 8e9 / ci[CI_WH_TAU]
    drift = 0.0  # the largest relative change between a window's halves, beyond resolution
    f = wp[k, WP_FLOWS]
    while f >= 0:
        s_old, s_new, lo, hi = _window(sr, f, (ft[f, FT_NSAMP] - 1 - n) % l, n, l)
        r = (s_old + s_new) / n
        d = _half_change(s_old, s_new, n, resolution) / r
        if d > drift:
            drift = d
        prev = ff[f, FF_STEADY]
        if prev <= 0.0 or abs(r - prev) > 0.5 * cf[CF_WH_THETA] * prev:
            confirmed = False
        ff[f, FF_STEADY] = r
        f = ft[f, FT_PNEXT]
    # extrapolate no further than the rates have proven to hold: the first jump after a change is
    # at most CI_WH_CAP; each re-measurement that finds the same rates doubles the next one.  A
    # partition frozen after a short window is settled: no share can drift, and only a flow's tail
    # or an arrival ends the jump
    cap = 2 * wp[k, WP_CAP] if confirmed else ci[CI_WH_CAP]
    if n < l:
        cap = NEVER // 4
    if cap > NEVER // 4:
        cap = NEVER // 4
    # and no further than a rate still creeping at the window's pace would take to drift by
    # DRIFT_BUDGET x theta (half a window apart, the halves differ by ``drift``)
    if drift > 0.0:
        limit = DRIFT_BUDGET * cf[CF_WH_THETA] * (n - half) * ci[CI_WH_TAU] / drift
        if limit < cap:
            cap = np.int64(limit)
    return _plan(pt, nt, ft, ff, paths, qn, qw, qm, hs, hpos, ci, st, wp, wl, wsf, k, cap)


@njit(cache=True, _nrt=False)
def freeze_known(pt, nt, ft, ff, paths, qn, qw, qm, hs, hpos, ci, st, wp, wl, wsf, k):
    """Freeze live partition k at the steady rates the caller set in ``FF_STEADY`` (a steady state
    the memo knows, recognised before a full window); False if a flow's tail is too near."""
    return _plan(pt, nt, ft, ff, paths, qn, qw, qm, hs, hpos, ci, st, wp, wl, wsf, k, ci[CI_WH_CAP])


@njit(cache=True, _nrt=False)
def _plan(pt, nt, ft, ff, paths, qn, qw, qm, hs, hpos, ci, st, wp, wl, wsf, k, cap):
    """Jump partition k at its flows' ``FF_STEADY`` rates (scaled so that no link carries more
    than its rate) until the first flow reaches its tail, at most ``cap``; False if too soon."""
    payload = ci[CI_PAYLOAD]
    wire = (payload + ci[CI_DATA_HDR]) / payload
    p = wp[k, WP_PORTS]
    while p >= 0:
        wsf[p] = 0.0
        p = pt[p, PT_PNEXT]
    f = wp[k, WP_FLOWS]
    while f >= 0:
        for j in range(ft[f, FT_DPATH], ft[f, FT_APATH]):
            wsf[paths[j]] += ff[f, FF_STEADY] * wire
        f = ft[f, FT_PNEXT]
    jump = NEVER
    tail = ci[CI_WH_TAIL]
    f = wp[k, WP_FLOWS]
    while f >= 0:
        scale = 1.0
        for j in range(ft[f, FT_DPATH], ft[f, FT_APATH]):
            load = wsf[paths[j]]
            rate = float(pt[paths[j], PT_RATE])
            if load > rate and rate / load < scale:
                scale = rate / load
        r = ff[f, FF_STEADY] * scale
        ff[f, FF_STEADY] = r
        una = ft[f, FT_SND_UNA]
        margin = (ft[f, FT_SND_NXT] - una) + 2 * payload + r * tail / 8e9
        left = ft[f, FT_SIZE] - una - margin
        if r <= 0.0 or left <= 0.0:
            return False
        j_f = np.int64(left * 8e9 / r)
        if j_f < jump:
            jump = j_f
        f = ft[f, FT_PNEXT]
    if jump > cap:
        jump = cap
    if jump < ci[CI_WH_MIN_JUMP]:  # a tail too near, or rates still creeping: sample on instead
        return False
    _jump(pt, nt, ft, qn, qw, qm, hs, hpos, ci, st, wp, wl, k, jump, cap)
    return True


@njit(cache=True, _nrt=False)
def _jump(pt, nt, ft, qn, qw, qm, hs, hpos, ci, st, wp, wl, k, jump, cap):
    """Freeze partition k for ``jump`` ns: park its events, stop its ports, plan its thaw."""
    now = st[ST_NOW]
    n_ports = ci[CI_N_PORTS]
    wp[k, WP_CAP] = cap
    wp[k, WP_FRESH] = 0
    n_flows = ft.shape[0]
    p = wp[k, WP_PORTS]
    while p >= 0:
        _park(qn, qw, qm, hs, hpos, p)
        _park(qn, qw, qm, hs, hpos, n_ports + p)
        if pt[p, PT_IS_HOST] != 0:
            _park(qn, qw, qm, hs, hpos, wake_slot(ci, nt[pt[p, PT_NODE], NT_HOST]))
        pt[p, PT_FROZEN] = 1
        p = pt[p, PT_PNEXT]
    f = wp[k, WP_FLOWS]
    while f >= 0:
        for t in range(T_TIMERS):
            _park(qn, qw, qm, hs, hpos, qp_slot(ci, f, t))
        f = ft[f, FT_PNEXT]
    _live_remove(wp, wl, st, k)
    wp[k, WP_STATE] = 2
    wp[k, WP_T0] = now
    wp[k, WP_PLAN] = now + jump
    q_set(qn, qw, qm, hs, hpos, sample_slot(ci, n_flows) + 1 + k, now + jump, wh_seq(st))
    st[ST_WH_FF] += 1


@njit(cache=True, _nrt=False)
def memo_jump(pt, nt, ft, ff, qn, qw, qm, hs, hpos, ci, st, wp, wl, k, t_conv, steady, flows, phases):
    """Apply a memoized transient to live partition k: jump ``t_conv`` ns crediting each flow its
    ``FF_MEMO`` bytes and, if the transient ended ``steady``, on at its converged ``FF_STEADY``
    rate until the first flow reaches its tail (the caller has set both, and the flows' CC state
    at the transient's end).  ``flows[i]``'s CC timers (QP slots 0..2) are set to fire
    ``phases[i, t]`` ns after the jump, or disarmed (-1); ``phases`` with no columns leaves them.
    False, and nothing changed, if a flow would reach its tail inside the transient (the entry
    does not apply), or if the whole jump would be shorter than ``CI_WH_MIN_JUMP``."""
    payload = ci[CI_PAYLOAD]
    tail = ci[CI_WH_TAIL]
    jump = NEVER
    f = wp[k, WP_FLOWS]
    while f >= 0:
        r = ff[f, FF_STEADY]
        una = ft[f, FT_SND_UNA]
        margin = (ft[f, FT_SND_NXT] - una) + 2 * payload + r * tail / 8e9
        left = ft[f, FT_SIZE] - una - margin - ff[f, FF_MEMO]
        if r <= 0.0 or left <= 0.0:
            return False
        j_f = t_conv + np.int64(left * 8e9 / r) if steady else t_conv
        if j_f < jump:
            jump = j_f
        f = ft[f, FT_PNEXT]
    cap = t_conv + ci[CI_WH_CAP]
    if jump > cap:
        jump = cap
    if jump < ci[CI_WH_MIN_JUMP]:  # not worth the perturbation, as for a steady jump (fastforward.py)
        return False
    wp[k, WP_TCONV] = max(t_conv, 1)
    now = st[ST_NOW]
    for i in range(phases.shape[0]):
        for t in range(phases.shape[1]):
            s = qp_slot(ci, flows[i], t)
            if phases[i, t] >= 0:  # parked by the jump below, shifted by it at thaw
                q_set(qn, qw, qm, hs, hpos, s, now + phases[i, t], next_seq(st))
            elif qn[s, QN_WHERE] >= 0:
                q_remove(qn, qw, qm, hs, hpos, s)
    _jump(pt, nt, ft, qn, qw, qm, hs, hpos, ci, st, wp, wl, k, jump, ci[CI_WH_CAP])
    st[ST_WH_MEMO_JUMPS] += 1
    return True


@njit(cache=True, _nrt=False)
def thaw(pt, qt, nt, ft, ff, fh, pk, paths, kick_fifo, qn, qw, qm, hs, hpos, ci, st, wp, wl, ml, k):
    """End partition k's jump now: credit its flows, shift its times, release its events."""
    now = st[ST_NOW]
    shift = now - wp[k, WP_T0]
    n_ports = ci[CI_N_PORTS]
    n_flows = ft.shape[0]
    payload = ci[CI_PAYLOAD]
    if now < wp[k, WP_PLAN]:
        st[ST_WH_SKIPBACK] += 1
    q_remove(qn, qw, qm, hs, hpos, sample_slot(ci, n_flows) + 1 + k)
    hpcc = fh.shape[0] == n_flows and pk.shape[1] > PK_LEN
    t_conv = wp[k, WP_TCONV]  # a memoized transient: its bytes over t_conv, then the steady rate
    wp[k, WP_TCONV] = 0
    f = wp[k, WP_FLOWS]
    while f >= 0:
        if t_conv > 0:
            b = np.int64(ff[f, FF_MEMO] * min(shift, t_conv) / t_conv
                         + ff[f, FF_STEADY] * max(shift - t_conv, 0) / 8e9) // payload * payload
        else:
            b = np.int64(ff[f, FF_STEADY] * shift / 8e9) // payload * payload
        room = ft[f, FT_SIZE] - ft[f, FT_SND_NXT] - payload
        if b > room:
            b = room if room > 0 else 0
        ft[f, FT_CREDIT] = b
        ft[f, FT_SKIPPED] += b
        for col in (FT_SND_NXT, FT_SND_UNA, FT_RX_EXPECTED, FT_BYTES_RX, FT_RX_LAST_NACK):
            ft[f, col] += b
        if ft[f, FT_LAST_UPD] > 0:
            ft[f, FT_LAST_UPD] += b
        if ft[f, FT_HIGH_SEQ] > 0:
            ft[f, FT_HIGH_SEQ] += b
        ft[f, FT_PKTS_SENT] += b // payload
        ft[f, FT_NEXT_AVAIL] += shift
        if ft[f, FT_RX_NACK_TIMER] >= wp[k, WP_T0]:
            ft[f, FT_RX_NACK_TIMER] += shift
        if hpcc:
            for j in range(MAXHOP):
                w = fh[f, FH_INT + j]
                t = w & (INT_TIME_MOD - 1)
                fh[f, FH_INT + j] = w - t + (t + shift) % INT_TIME_MOD
        # every packet of the flow crosses each port of its two paths once
        st[ST_WH_EV_SKIPPED] += (b // payload) * 2 * (_ports_end(ft, paths, f) - ft[f, FT_DPATH])
        ft[f, FT_NSAMP] = 0  # its last sample predates the jump: the next one is a base point
        f = ft[f, FT_PNEXT]
    wp[k, WP_NSAMP] = 0
    p = wp[k, WP_PORTS]
    while p >= 0:
        for q in range(NQ):
            i = qt[p * NQ + q, QT_HEAD]
            while i >= 0:
                _shift_packet(ft, pk, ci, k, i, shift)
                i = pk[i, PK_NEXT]
        i = pt[p, PT_LN_HEAD]
        while i >= 0:
            _shift_packet(ft, pk, ci, k, i, shift)
            pk[i, PK_ARRIVE] += shift
            i = pk[i, PK_NEXT]
        pt[p, PT_BUSY_UNTIL] += shift
        pt[p, PT_FROZEN] = 0
        _unpark(qn, qw, qm, hs, hpos, p, shift)
        _unpark(qn, qw, qm, hs, hpos, n_ports + p, shift)
        if pt[p, PT_IS_HOST] != 0:
            _unpark(qn, qw, qm, hs, hpos, wake_slot(ci, nt[pt[p, PT_NODE], NT_HOST]), shift)
        kick(pt, kick_fifo, st, p)
        p = pt[p, PT_PNEXT]
    f = wp[k, WP_FLOWS]
    while f >= 0:
        for t in range(T_TIMERS):
            _unpark(qn, qw, qm, hs, hpos, qp_slot(ci, f, t), shift)
        f = ft[f, FT_PNEXT]
    wp[k, WP_STATE] = 1
    _live_add(wp, wl, st, k)
    _log(wp, ml, ci, st, ML_THAWED, k)
    st[ST_WH_SKIPPED_NS] += shift
    _ensure_sampling(ci, st, qn, qw, qm, hs, hpos, n_flows)


# ------------------------------------------------------------------ flows join and leave -------


@njit(cache=True, _nrt=False)
def flow_started(pt, qt, nt, ft, ff, fh, pk, paths, kick_fifo, qn, qw, qm, hs, hpos, ci, st, wp, wl, ml, f):
    """Network flow f is about to start: thaw the frozen partitions it arrives on (skip-back),
    then join, merge or open a partition."""
    end = _ports_end(ft, paths, f)
    into = -1
    for j in range(ft[f, FT_DPATH], end):
        for p in (paths[j], pt[paths[j], PT_PEER]):
            k = pt[p, PT_PART]
            if k < 0:
                continue
            if wp[k, WP_STATE] == 2:
                thaw(pt, qt, nt, ft, ff, fh, pk, paths, kick_fifo, qn, qw, qm, hs, hpos, ci, st, wp, wl, ml, k)
            if into < 0 or wp[k, WP_NFLOWS] > wp[into, WP_NFLOWS]:
                into = k
    if into < 0:
        into = _part_new(wp, wl, st)
    for j in range(ft[f, FT_DPATH], end):
        for p in (paths[j], pt[paths[j], PT_PEER]):
            k = pt[p, PT_PART]
            if k >= 0 and k != into:
                _merge(wp, wl, pt, ft, st, into, k)
    _flow_link(wp, ft, into, f)
    for j in range(ft[f, FT_DPATH], end):
        for p in (paths[j], pt[paths[j], PT_PEER]):
            if pt[p, PT_PART] < 0:
                _port_link(wp, pt, into, p)
            pt[p, PT_NUSE] += 1
    _changed(wp, ft, ml, ci, st, into)
    _ensure_sampling(ci, st, qn, qw, qm, hs, hpos, ft.shape[0])


@njit(cache=True, _nrt=False)
def _find(uf, x):
    while uf[x] != x:
        uf[x] = uf[uf[x]]
        x = uf[x]
    return x


@njit(cache=True, _nrt=False)
def flow_finished(pt, ft, paths, ci, st, wp, wl, wsi, ml, f):
    """Network flow f completed: leave its partition, which may split."""
    k = ft[f, FT_PART]
    if k < 0:
        return
    _flow_unlink(wp, ft, f)
    end = _ports_end(ft, paths, f)
    for j in range(ft[f, FT_DPATH], end):
        for p in (paths[j], pt[paths[j], PT_PEER]):
            pt[p, PT_NUSE] -= 1
            if pt[p, PT_NUSE] == 0:
                _port_unlink(wp, pt, p)
    if wp[k, WP_NFLOWS] == 0:
        _part_free(wp, wl, st, k)
        return
    _changed(wp, ft, ml, ci, st, k)
    # union-find over the remaining flows' ports (wsi[:P]), one root per component
    n_ports = ci[CI_N_PORTS]
    uf = wsi[:n_ports]
    part_of_root = wsi[n_ports:2 * n_ports]
    p = wp[k, WP_PORTS]
    while p >= 0:
        uf[p] = p
        part_of_root[p] = -1
        p = pt[p, PT_PNEXT]
    g = wp[k, WP_FLOWS]
    while g >= 0:
        r0 = _find(uf, paths[ft[g, FT_DPATH]])
        for j in range(ft[g, FT_DPATH], _ports_end(ft, paths, g)):
            for p in (paths[j], pt[paths[j], PT_PEER]):
                r = _find(uf, p)
                if r != r0:
                    uf[r] = r0
        g = ft[g, FT_PNEXT]
    first = _find(uf, paths[ft[wp[k, WP_FLOWS], FT_DPATH]])
    part_of_root[first] = k
    # move the flows and ports of every other component into a partition of its own
    g = wp[k, WP_FLOWS]
    while g >= 0:
        nx = ft[g, FT_PNEXT]
        r = _find(uf, paths[ft[g, FT_DPATH]])
        if part_of_root[r] < 0:
            part_of_root[r] = _part_new(wp, wl, st)
            _transient(wp, ml, ci, st, part_of_root[r])
            st[ST_WH_SPLITS] += 1
        if part_of_root[r] != k:
            _flow_unlink(wp, ft, g)
            _flow_link(wp, ft, part_of_root[r], g)
        g = nx
    p = wp[k, WP_PORTS]
    while p >= 0:
        nx = pt[p, PT_PNEXT]
        r = _find(uf, p)
        if part_of_root[r] != k:
            _port_unlink(wp, pt, p)
            _port_link(wp, pt, part_of_root[r], p)
        p = nx


# ------------------------------------------------------------------ sampling -------------------


@njit(cache=True, _nrt=False)
def _window(sr, f, oldest, n, l):
    """Flow f's ``n`` samples from ring position ``oldest`` (a ring of ``l``): sums of their older
    and newer halves, min, max."""
    lo = sr[f, oldest]
    hi = lo
    s_old = 0.0
    s_new = 0.0
    for j in range(n):
        v = sr[f, (oldest + j) % l]
        if j < n // 2:
            s_old += v
        else:
            s_new += v
        lo = min(lo, v)
        hi = max(hi, v)
    return s_old, s_new, lo, hi


@njit(cache=True, inline="always", _nrt=False)
def _half_change(s_old, s_new, l, resolution):
    """How far the newer half's mean rate is from the older half's, beyond one packet per sample."""
    half = l // 2
    return abs(s_new / (l - half) - s_old / half) - resolution / half


@njit(cache=True, _nrt=False)
def _flat(sr, f, oldest, n, l, theta, resolution):
    """Flow f's window is steady: its samples spread less than theta of their mean (beyond one
    packet of resolution), and its older and newer halves agree within theta / 4 (no drift: a
    rate creeping by a few percent per window would pass the spread test, then be extrapolated
    over a long jump)."""
    s_old, s_new, lo, hi = _window(sr, f, oldest, n, l)
    s = s_old + s_new
    if s <= 0.0 or hi - lo - resolution > theta * s / n:
        return False
    return _half_change(s_old, s_new, n, resolution) <= 0.25 * theta * s / n


@njit(cache=True, _nrt=False)
def alone(pt, ft, paths, wp, wsf, k):
    """No two flows of partition k share a switch port, and none crosses a switch port slower than
    its NIC (cached in ``WP_ALONE`` until the flows change).  Such flows have no shares to settle:
    each one's rate is set by its own CC and its NIC, which divides itself evenly between the
    flows of one host, so a steady state shows in a few samples and cannot drift."""
    if wp[k, WP_ALONE] < 0:
        wp[k, WP_ALONE] = 1
        p = wp[k, WP_PORTS]
        while p >= 0:
            wsf[p] = 0.0
            p = pt[p, PT_PNEXT]
        f = wp[k, WP_FLOWS]
        while f >= 0 and wp[k, WP_ALONE] == 1:
            nic = pt[paths[ft[f, FT_DPATH]], PT_RATE]
            for j in range(ft[f, FT_DPATH], ft[f, FT_APATH]):
                p = paths[j]
                if pt[p, PT_IS_HOST] == 0:
                    wsf[p] += 1.0
                    if wsf[p] > 1.0 or pt[p, PT_RATE] < nic:
                        wp[k, WP_ALONE] = 0
            f = ft[f, FT_PNEXT]
    return wp[k, WP_ALONE] == 1


@njit(cache=True, _nrt=False)
def _idle(pt, ci, ft, ff, wp, k):
    """DCQCN sends every flow of partition k at its NIC's line rate (no flow has been cut by a CNP
    for ~10 ms, the time a cut rate takes to climb back to exactly line rate), and no switch port
    of the partition holds a queue ECN could mark: the CC is idle and stays so, and the shares are
    the NICs' round-robin ones, which do not drift (an all-to-all whose senders' NICs are its
    bottleneck).  Without the queue test, flows that have just met at a port, still at line rate
    while the queue they build has yet to be marked, would pass."""
    if ci[CI_CC_MODE] != 1:
        return False
    p = wp[k, WP_PORTS]
    while p >= 0:
        if pt[p, PT_IS_HOST] == 0 and pt[p, PT_QBYTES] > pt[p, PT_KMIN]:
            return False
        p = pt[p, PT_PNEXT]
    f = wp[k, WP_FLOWS]
    while f >= 0:
        if ff[f, FF_RATE] < ff[f, FF_MAX_RATE]:
            return False
        f = ft[f, FT_PNEXT]
    return True


@njit(cache=True, _nrt=False)
def settled(pt, ci, ft, ff, paths, wp, wsf, k):
    """Partition k has no shares to settle, so a short window shows its steady state and its jump
    needs no first-jump cap: under HPCC its flows cannot contend (``alone``); under DCQCN its CC is
    idle (``_idle``: every flow at line rate, no queue to mark), whether its flows are alone or
    bound by their NICs.  A lone DCQCN flow climbing back from a cut is not: its rate steps up on a
    300 us timer, flat between steps (measured: frozen at its cut rate, a 6 MB flow of the bundled
    sample took 5.9 ms instead of 0.5 ms).  DCTCP never is (its window grows by a packet per RTT)."""
    if ci[CI_CC_MODE] == 3:
        return alone(pt, ft, paths, wp, wsf, k)
    return _idle(pt, ci, ft, ff, wp, k)


@njit(cache=True, _nrt=False)
def sample(pt, nt, ft, ff, paths, qn, qw, qm, hs, hpos, ci, cf, st, wp, wl, sr, wsf, ml):
    """The SAMPLE event: one rate sample per flow of every live partition; freeze the steady ones."""
    tau = ci[CI_WH_TAU]
    l = ci[CI_WH_L]
    theta = cf[CF_WH_THETA]
    resolution = ci[CI_PAYLOAD] * 8e9 / tau  # a sample counts whole packets
    i = 0
    while i < st[ST_WH_NLIVE]:
        k = wl[i]
        m = wp[k, WP_NSAMP]
        steady = m >= l  # a full window since the flows last changed
        # ... or a short one, for a settled partition, or for the memo (a steady state it may know)
        n_short = ci[CI_WH_SHORT]
        short = n_short <= m < l
        free = short and settled(pt, ci, ft, ff, paths, wp, wsf, k)
        known = short and (free or (ci[CI_MEMO] & MEMO_SHORT) != 0)
        wp[k, WP_NSAMP] += 1
        f = wp[k, WP_FLOWS]
        while f >= 0:
            n = ft[f, FT_NSAMP]
            una = ft[f, FT_SND_UNA]
            if n > 0:
                sr[f, (n - 1) % l] = (una - ft[f, FT_SAMP_UNA]) * 8e9 / tau
            ft[f, FT_SAMP_UNA] = una
            ft[f, FT_SAMP_T] = st[ST_NOW]
            ft[f, FT_NSAMP] = n + 1
            if steady:
                steady = _flat(sr, f, n % l, l, l, theta, resolution)
            if known:
                known = _flat(sr, f, (n - n_short) % l, n_short, l, theta, resolution)
            f = ft[f, FT_PNEXT]
        if known and not free:  # flat over a short window: the memo may know this steady state
            _log(wp, ml, ci, st, ML_SHORT, k)
        n = l if steady else n_short
        if (steady or (known and free)) and _freeze(pt, nt, ft, ff, paths, qn, qw, qm, hs, hpos, ci, cf, st, wp, wl,
                                                     sr, wsf, k, n):
            _log(wp, ml, ci, st, ML_STEADY, k)
            continue  # k left the live list; wl[i] is now another partition
        i += 1
    if (ci[CI_MEMO] & MEMO_SAMPLES) != 0:  # the memo snapshots the transients it is learning
        _record(ml, st, ML_SAMPLED, -1, 0)
    _ensure_sampling(ci, st, qn, qw, qm, hs, hpos, ft.shape[0])
