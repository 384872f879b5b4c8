"""Jumps: freezing a steady partition, and thawing it with its flows credited.

A frozen partition's pending events (transmissions, link arrivals, NIC wake-ups, CC and
retransmission timers) are parked, its ports stop sending, and its buffers keep their occupancy,
so the shared buffer other partitions see does not change.  It thaws at the planned end of the
jump (the first of its flows reaching its tail: the bytes still in flight, two packets and
``tail`` ns at its steady rate, then simulated packet by packet), or earlier when a flow arrives
on one of its links (the paper's skip-back; free here, since parked events are released only at
thaw, shifted by the jump actually taken ``J``).  At thaw each flow is credited ``rate x J`` bytes
(whole packets, never more than its links carry) by shifting every sequence number of the flow:
sender, receiver and the packets in flight, as if the bytes had been sent before the first
unacknowledged one.  Times kept by the partition (ports' busy-until, packets' arrival, pacing,
HPCC's INT timestamps) shift by ``J``, so the CC resumes where it left off.
"""

import numpy as np

from ..kernel import entry, kernel
from ..layout import (CF_WH_RELEASER, CF_WH_THETA, CI_DATA_HDR, CI_PAYLOAD, CI_WH_CAP, CI_WH_FLUID, CI_WH_L, CI_WH_MIN_JUMP,
                      CI_WH_SHORT, CI_WH_TAIL, CI_WH_TAU, FF_MEMO, FF_STEADY, FH_INT, FT_APATH, FT_BYTES_RX, FT_CREDIT,
                      FT_DPATH, FT_FLUID, FT_HIGH_SEQ, FT_LAST_UPD, FT_NEXT_AVAIL, FT_NSAMP, FT_PART, FT_PKTS_SENT,
                      FT_PNEXT, FT_READY, FT_START, FT_SUCC, FT_RX_EXPECTED, FT_RX_LAST_NACK, FT_RX_NACK_TIMER, FT_SIZE,
                      FT_SKIPPED, FT_SND_NXT, FT_SND_UNA, INT_TIME_MOD, MAXHOP, ML_THAWED, NQ, NT_HOST, PK_ARRIVE,
                      PK_FLOW, PK_INT, PK_LEN, PK_NEXT, PK_NHOP, PK_SEQ, PT_BUSY_UNTIL, PT_FROZEN, PT_IS_HOST,
                      PT_LN_HEAD, PT_NODE, PT_PNEXT, QT_HEAD, ST_NOW, ST_WH_FF, ST_WH_MEMO_JUMPS, ST_WH_EV_SKIPPED,
                      ST_WH_SKIPBACK, ST_WH_SKIPPED_NS, WP_CAP, WP_FLOWS, WP_FRESH, WP_NSAMP, WP_PLAN, WP_PORTS,
                      WP_STATE, WP_T0, WP_TCONV)
from ..share import service_rate, skip_jump
from ..queue import QN_SEQ, QN_TIME, QN_WHERE, pending, q_remove, q_set
from ..slots import T_TIMERS, arrive_slot, kick, next_seq, qp_slot, thaw_slot, wake_slot, wh_seq
from .credit import count_in_int, credit_jump, jump_credit
from .partitions import FROZEN, LIVE, ensure_sampling, live_add, live_remove, log, ports_end

DRIFT_BUDGET = 0.1  # the error a jump may accrue from a creeping rate, in units of theta
HOLD_NONE = 0  # which flows of a jump share_cap holds to a share of their FCT: none, ...
HOLD_RELEASERS = 1  # ... those that release others (contended, flat shares), ...
HOLD_EVERY = 2  # ... all (contended, shares that wander around their means)
PARKED = -2  # QN_WHERE of an event held while its partition is frozen
NEVER = 1 << 62


@kernel
def _park(events, slot):
    if pending(events, slot):
        q_remove(events, slot)
        events.slots[slot, QN_WHERE] = PARKED


@kernel
def _unpark(events, slot, shift):
    qn = events.slots
    if qn[slot, QN_WHERE] == PARKED:
        qn[slot, QN_WHERE] = -1
        q_set(events, slot, qn[slot, QN_TIME] + shift, qn[slot, QN_SEQ])


@kernel
def window_stats(samples, f, oldest, n, l):
    """Flow f's ``n`` samples from ring position ``oldest`` (a ring of ``l``): sums of their older
    and newer halves, min, max."""
    lo = samples[f, oldest]
    hi = lo
    s_old = 0.0
    s_new = 0.0
    for j in range(n):
        v = samples[f, (oldest + j) % l]
        if j < n // 2:
            s_old += v
        else:
            s_new += v
        lo = min(lo, v)
        hi = max(hi, v)
    return s_old, s_new, lo, hi


@kernel(inline="always")
def half_change(s_old, s_new, l, resolution):
    """How far the newer half's mean rate is from the older half's, beyond one packet per sample."""
    half = l // 2
    return abs(s_new / (l - half) - s_old / half) - resolution / half


SHARE_WANDER = 2.0  # a contended flow's quarter means may spread by this many theta (see stationary)


@kernel
def quarters(samples, f, oldest, n, l):
    """Flow f's four quarter sums of its window."""
    q = n // 4
    s0 = s1 = s2 = s3 = 0.0
    for j in range(q):
        s0 += samples[f, (oldest + j) % l]
        s1 += samples[f, (oldest + q + j) % l]
        s2 += samples[f, (oldest + 2 * q + j) % l]
        s3 += samples[f, (oldest + 3 * q + j) % l]
    return s0, s1, s2, s3


@kernel
def stationary(s0, s1, s2, s3, n, spread, drift, resolution):
    """A window's four quarter sums (``n`` samples in all) hold: their means spread by less than
    ``spread`` of the window's mean (beyond one packet of resolution per quarter) and its halves'
    by less than ``drift``.

    A contended partition is steady when each flow's quarters hold within ``SHARE_WANDER`` x theta
    and the partition's total within theta: flows that share a bottleneck trade a few percent of
    it from sample to sample (on ``tools/bench_contention.py``'s colliding rings under HPCC a
    flow's 100 us samples spread by 6% of its mean, and all 32 flows never passed the per-sample
    test at once), while what they carry in all is flat and each flow's mean over a quarter window
    holds.  The jump then extrapolates the window's means (``jump.freeze``), bounded by the drift
    of the total, and each of its flows holds it to a share of its FCT (``share_cap``).  A
    partition whose every flow is flat sample by sample (``steadiness._flat``) jumps as before.  Measured
    (2026-12-02, HPCC) against full simulation: the rings with 200 MB flows 2.3% of events avoided
    (none before) at a per-flow FCT error of 0.04% mean, 0.67% p99; the AICB GPT-13B iteration on 16
    GPUs of ``fat-tree:k=4,gpus_per_server=8`` with collectives / 10 (16 DP flows of 325 MB) 46.8%
    (12.5% before) at 0.04% / 0.27%, iteration +0.002%; DEVELOPERS.md, "Wormhole mode: the measurements", has more."""
    q = n // 4
    total = s0 + s1 + s2 + s3
    lo = min(min(s0, s1), min(s2, s3))
    hi = max(max(s0, s1), max(s2, s3))
    if total <= 0.0 or (hi - lo - resolution) / q > spread * total / (4 * q):
        return False
    return half_change(s0 + s1, s2 + s3, 4 * q, resolution) <= drift * total / (4 * q)


@kernel
def freeze(net, flows, events, cfg, state, parts, k, n, wander):
    """Freeze partition k, steady over its flows' last ``n`` samples, until its first flow reaches
    its tail; False if that is too soon.  With ``wander``, only the flows' means over the window
    held, not each sample (``stationary``): the jump is bounded by the drift of the
    partition's total, and every flow holds it to ``share_cap``."""
    ci, wp, ft, ff = cfg.ints, parts.table, flows.table, flows.rates
    l = ci[CI_WH_L]
    theta = cfg.floats[CF_WH_THETA]
    # steady rates: the window's mean delivered rate
    confirmed = wp[k, WP_FRESH] == 0  # same flows as the last jump: do their rates still hold?
    half = n // 2
    resolution = ci[CI_PAYLOAD] * 8e9 / ci[CI_WH_TAU]
    drift = 0.0  # the largest relative change between a window's halves, beyond resolution
    total_old = 0.0
    total_new = 0.0
    f = wp[k, WP_FLOWS]
    while f >= 0:
        if ft[f, FT_FLUID] != 0:  # fast-forwarded on its own already (fluid)
            f = ft[f, FT_PNEXT]
            continue
        s_old, s_new, lo, hi = window_stats(parts.samples, f, (ft[f, FT_NSAMP] - 1 - n) % l, n, l)
        r = (s_old + s_new) / n
        total_old += s_old
        total_new += s_new
        d = half_change(s_old, s_new, n, resolution) / r
        if d > drift:
            drift = d
        prev = ff[f, FF_STEADY]
        if prev <= 0.0 or abs(r - prev) > 0.5 * theta * prev:
            confirmed = False
        ff[f, FF_STEADY] = r
        f = ft[f, FT_PNEXT]
    # extrapolate no further than the rates have proven to hold: the first jump after a change is
    # at most CI_WH_CAP; each re-measurement that finds the same rates doubles the next one.  A
    # partition frozen after a short window is settled: no share can drift, and only a flow's tail
    # or an arrival ends the jump
    cap = 2 * wp[k, WP_CAP] if confirmed else ci[CI_WH_CAP]
    contended = n >= l
    if wander and total_old + total_new > 0.0:  # the flows trade shares; what they carry in all holds
        drift = max(half_change(total_old, total_new, n, resolution), 0.0) / ((total_old + total_new) / n)
    if not contended:
        cap = NEVER // 4
    if cap > NEVER // 4:
        cap = NEVER // 4
    # and no further than a rate still creeping at the window's pace would take to drift by
    # DRIFT_BUDGET x theta (half a window apart, the halves differ by ``drift``)
    if drift > 0.0:
        limit = DRIFT_BUDGET * theta * (n - half) * ci[CI_WH_TAU] / drift
        if limit < cap:
            cap = np.int64(limit)
    min_jump = ci[CI_WH_MIN_JUMP] if contended else settled_min_jump(cfg)
    hold = HOLD_EVERY if wander else (HOLD_RELEASERS if contended else HOLD_NONE)
    return _plan(net, flows, events, cfg, state, parts, k, cap, hold, min_jump)


@entry
def settled_min_jump(cfg):
    """The shortest jump of a settled partition: one short window (the time it takes to jump
    again), or ``CI_WH_MIN_JUMP`` if that is shorter.  Its flows cannot contend, so a jump does not
    perturb their shares, the reason a contended jump must span a window (fastforward.py)."""
    ci = cfg.ints
    return min(ci[CI_WH_MIN_JUMP], ci[CI_WH_SHORT] * ci[CI_WH_TAU])


@entry
def freeze_known(net, flows, events, cfg, state, parts, k):
    """Freeze live partition k at the steady rates the caller set in ``FF_STEADY`` (a steady state
    the memo knows, recognised before a full window); False if a flow's tail is too near."""
    # not held to share_cap: the memo's steady hits are measured apart (the +memo rows of
    # tools/bench_wormhole.py, audit --spot-check)
    return _plan(net, flows, events, cfg, state, parts, k, cfg.ints[CI_WH_CAP], HOLD_NONE, cfg.ints[CI_WH_MIN_JUMP])


@kernel
def share_cap(flows, cfg, state, f, left, rate, hold):
    """How long a contended jump may run for flow f: ``CF_WH_RELEASER`` (``FastForward.
    releaser_share``) of its expected FCT (time since it started plus its ``left`` bytes at
    ``rate``) if ``hold`` is ``HOLD_EVERY``, or if it is ``HOLD_RELEASERS`` and f releases other
    flows; else no limit.

    Every flow, when the jump extrapolates means of shares that wander (``HOLD_EVERY``): its
    window's mean is its share's mean over the jump to a few percent only, up to 13% on the
    contended rings of ``tests/test_wormhole.py`` (HPCC, traced against full), and so its FCT
    moves by up to that share of each jump.  Measured (2026-12-02) on those 8 rings of 100 MB:
    per-flow FCT error 0.85% mean, 3.3% max with the cap, 1.14% / 2.8% without it on stricter
    windows (halves within theta / 4).

    Releasers, when shares are flat (``HOLD_RELEASERS``). Shares that settle by contention drift by
    up to theta over a jump, so f's completion moves by up to theta x the jump, and with it the
    start of every flow it releases, whose contention then changes: a timing error the DAG carries
    on and amplifies. Measured on ``bench_scale --only ddp16`` (HPCC; ring steps of 7-15 ms, the
    full run's noise floor 0.27% / 1.97% per-flow mean / p99): 11 contended jumps of 0.3-3.3 ms
    avoided 0.9% of events and put per-flow FCTs 0.80% / 5.71% off (beyond the 5% p99 bound); a lone
    HPCC flow there settles to a rate that depends on the few microseconds its neighbours ended
    earlier or later (84 or 89 Gb/s), so small shifts do not stay small. At the default 1/16 a jump
    moves its flow's completion by at most theta / 16 (0.19% at the default theta) of its FCT; a
    ring step of a second may still jump for 1/16 s at a time."""
    ft = flows.table
    if hold == HOLD_NONE:
        return NEVER
    end = ft[f + 1, FT_SUCC] if f + 1 < ft.shape[0] else flows.successors.shape[0]
    if hold == HOLD_RELEASERS and ft[f, FT_SUCC] >= end:
        return NEVER
    started = ft[f, FT_READY] if ft[f, FT_READY] > ft[f, FT_START] else ft[f, FT_START]
    return np.int64(cfg.floats[CF_WH_RELEASER] * (state[ST_NOW] - started + left * 8e9 / rate))


@kernel
def _plan(net, flows, events, cfg, state, parts, k, cap, hold, min_jump):
    """Jump partition k at its flows' ``FF_STEADY`` rates (scaled so that no link carries more
    than its rate) until the first flow reaches its tail, at most ``cap`` and each flow's
    ``share_cap`` under ``hold``; False if that is shorter than ``min_jump``."""
    ci, wp, ft, ff, paths, load = cfg.ints, parts.table, flows.table, flows.rates, flows.paths, parts.scratch_floats
    payload = ci[CI_PAYLOAD]
    wire = (payload + ci[CI_DATA_HDR]) / payload
    p = wp[k, WP_PORTS]
    while p >= 0:
        load[p] = 0.0
        p = net.ports[p, PT_PNEXT]
    f = wp[k, WP_FLOWS]
    while f >= 0:
        if ft[f, FT_FLUID] == 0:
            for j in range(ft[f, FT_DPATH], ft[f, FT_APATH]):
                load[paths[j]] += ff[f, FF_STEADY] * wire
        f = ft[f, FT_PNEXT]
    jump = NEVER
    tail = ci[CI_WH_TAIL]
    f = wp[k, WP_FLOWS]
    while f >= 0:
        if ft[f, FT_FLUID] != 0:
            f = ft[f, FT_PNEXT]
            continue
        scale = 1.0
        for j in range(ft[f, FT_DPATH], ft[f, FT_APATH]):
            carried = load[paths[j]]
            rate = float(service_rate(net, paths[j]))
            if carried > rate and rate / carried < scale:
                scale = rate / carried
        r = ff[f, FF_STEADY] * scale
        ff[f, FF_STEADY] = r
        una = ft[f, FT_SND_UNA]
        margin = (ft[f, FT_SND_NXT] - una) + 2 * payload + r * tail / 8e9
        left = ft[f, FT_SIZE] - una - margin
        if r <= 0.0 or left <= 0.0:
            return False
        j_f = np.int64(left * 8e9 / r)
        j_f = min(j_f, share_cap(flows, cfg, state, f, ft[f, FT_SIZE] - una, r, hold))
        if j_f < jump:
            jump = j_f
        f = ft[f, FT_PNEXT]
    if jump > cap:
        jump = cap
    if jump < min_jump:  # a tail too near, or rates still creeping: sample on instead
        return False
    _jump(net, flows, events, cfg, state, parts, k, jump, cap)
    return True


@kernel
def _jump(net, flows, events, cfg, state, parts, k, jump, cap):
    """Freeze partition k for ``jump`` ns: park its events, stop its ports, plan its thaw."""
    wp, ft = parts.table, flows.table
    now = state[ST_NOW]
    wp[k, WP_CAP] = cap
    wp[k, WP_FRESH] = 0
    p = wp[k, WP_PORTS]
    while p >= 0:
        _park(events, p)
        _park(events, arrive_slot(cfg, p))
        if net.ports[p, PT_IS_HOST] != 0:
            _park(events, wake_slot(cfg, net.nodes[net.ports[p, PT_NODE], NT_HOST]))
        net.ports[p, PT_FROZEN] = 1
        p = net.ports[p, PT_PNEXT]
    f = wp[k, WP_FLOWS]
    while f >= 0:
        for t in range(T_TIMERS):
            _park(events, qp_slot(cfg, f, t))
        f = ft[f, FT_PNEXT]
    live_remove(parts, state, k)
    wp[k, WP_STATE] = FROZEN
    wp[k, WP_T0] = now
    wp[k, WP_PLAN] = now + jump
    q_set(events, thaw_slot(cfg, ft.shape[0], k), now + jump, wh_seq(state))
    state[ST_WH_FF] += 1


@entry
def memo_jump(net, flows, events, cfg, state, parts, k, t_conv, steady, members, phases, min_jump):
    """Apply a memoized transient to live partition k: jump ``t_conv`` ns crediting each flow its
    ``FF_MEMO`` bytes and, if the transient ended ``steady``, on at its converged ``FF_STEADY``
    rate until the first flow reaches its tail (the caller has set both, and the flows' CC state
    at the transient's end).  ``members[i]``'s CC timers (QP slots 0..2) are set to fire
    ``phases[i, t]`` ns after the jump, or disarmed (-1); ``phases`` with no columns leaves them.
    False, and nothing changed, if a flow would reach its tail inside the transient (the entry
    does not apply), or if the whole jump would be shorter than ``min_jump`` (``CI_WH_MIN_JUMP``,
    or a short window for a settled partition's course: ``settled_min_jump``)."""
    ci, wp, ft, ff = cfg.ints, parts.table, flows.table, flows.rates
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
    if jump < min_jump:  # not worth the perturbation, as for a steady jump (fastforward.py)
        return False
    wp[k, WP_TCONV] = max(t_conv, 1)
    now = state[ST_NOW]
    for i in range(phases.shape[0]):
        for t in range(phases.shape[1]):
            s = qp_slot(cfg, members[i], t)
            if phases[i, t] >= 0:  # parked by the jump below, shifted by it at thaw
                q_set(events, s, now + phases[i, t], next_seq(state))
            elif pending(events, s):
                q_remove(events, s)
    _jump(net, flows, events, cfg, state, parts, k, jump, ci[CI_WH_CAP])
    state[ST_WH_MEMO_JUMPS] += 1
    return True


@kernel
def _shift_packet(net, flows, k, i, shift):
    """A packet held in a frozen partition: its flow's credited bytes move its sequence number,
    and HPCC's INT timestamps move with the partition's clock."""
    pk = net.packets
    f = pk[i, PK_FLOW]
    if f < 0 or flows.table[f, FT_PART] != k:
        return
    pk[i, PK_SEQ] += flows.table[f, FT_CREDIT]
    if pk.shape[1] > PK_LEN:
        for h in range(min(pk[i, PK_NHOP], MAXHOP)):
            w = pk[i, PK_INT + h]
            t = w & (INT_TIME_MOD - 1)
            pk[i, PK_INT + h] = w - t + (t + shift) % INT_TIME_MOD


@kernel
def _credit(net, flows, cfg, state, parts, k, shift, hpcc):
    """Credit each flow of partition k what it sent over the jump of ``shift`` ns (whole packets),
    and shift its own clocks."""
    ci, wp, ft, fh = cfg.ints, parts.table, flows.table, flows.hops
    payload = ci[CI_PAYLOAD]
    t_conv = wp[k, WP_TCONV]  # a memoized transient: its bytes over t_conv, then the steady rate
    wp[k, WP_TCONV] = 0
    f = wp[k, WP_FLOWS]
    while f >= 0:
        if ft[f, FT_FLUID] != 0:  # credited at its own thaw (fluid)
            ft[f, FT_CREDIT] = 0
            f = ft[f, FT_PNEXT]
            continue
        b = jump_credit(flows, cfg, f, shift, t_conv)
        ft[f, FT_CREDIT] = b
        ft[f, FT_SKIPPED] += b
        credit_jump(net, flows, cfg, f, b)  # the link monitor's bytes carried
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
        state[ST_WH_EV_SKIPPED] += (b // payload) * 2 * (ports_end(flows, f) - ft[f, FT_DPATH])
        ft[f, FT_NSAMP] = 0  # its last sample predates the jump: the next one is a base point
        f = ft[f, FT_PNEXT]


@kernel
def thaw(net, flows, events, cfg, state, parts, k):
    """End partition k's jump now: credit its flows, shift its times, release its events."""
    wp, ft = parts.table, flows.table
    now = state[ST_NOW]
    shift = now - wp[k, WP_T0]
    n_flows = ft.shape[0]
    if now < wp[k, WP_PLAN]:
        state[ST_WH_SKIPBACK] += 1
    q_remove(events, thaw_slot(cfg, n_flows, k))
    hpcc = flows.hops.shape[0] == n_flows and net.packets.shape[1] > PK_LEN
    _credit(net, flows, cfg, state, parts, k, shift, hpcc)
    wp[k, WP_NSAMP] = 0
    pk, ports = net.packets, net.ports
    p = wp[k, WP_PORTS]
    while p >= 0:
        for q in range(NQ):
            i = net.queues[p * NQ + q, QT_HEAD]
            while i >= 0:
                _shift_packet(net, flows, k, i, shift)
                i = pk[i, PK_NEXT]
        i = ports[p, PT_LN_HEAD]
        while i >= 0:
            _shift_packet(net, flows, k, i, shift)
            pk[i, PK_ARRIVE] += shift
            i = pk[i, PK_NEXT]
        ports[p, PT_BUSY_UNTIL] += shift
        ports[p, PT_FROZEN] = 0
        skip_jump(net, p, wp[k, WP_T0], now)
        _unpark(events, p, shift)
        _unpark(events, arrive_slot(cfg, p), shift)
        if ports[p, PT_IS_HOST] != 0:
            _unpark(events, wake_slot(cfg, net.nodes[ports[p, PT_NODE], NT_HOST]), shift)
        kick(net, state, p)
        p = ports[p, PT_PNEXT]
    if hpcc and cfg.ints[CI_WH_FLUID] != 0:  # with fluid flows only: see count_in_int
        count_in_int(net, flows, cfg, state, parts, k)
    f = wp[k, WP_FLOWS]
    while f >= 0:
        if ft[f, FT_FLUID] == 0:  # a fluid flow's timers stay parked until its own thaw
            for t in range(T_TIMERS):
                _unpark(events, qp_slot(cfg, f, t), shift)
        f = ft[f, FT_PNEXT]
    wp[k, WP_STATE] = LIVE
    live_add(parts, state, k)
    log(parts, cfg, state, ML_THAWED, k)
    state[ST_WH_SKIPPED_NS] += shift
    ensure_sampling(events, cfg, state, n_flows)
