"""Fluid flows: fast-forwarding one flow while the rest of its partition is simulated.

A partition whose flows share ports is frozen only as a whole (``jump``), and on a fabric where
rings collide under ECMP a partition spans most of it and is never steady as a whole.  Yet what
couples two flows is a shared bottleneck, not a shared port: a flow steady at its rate, whose
bottleneck carries no flow still moving, keeps that rate until something changes there.  Such a
flow becomes *fluid*: it stops sending packets and takes its steady rate of every link of its data
path (and its ACKs' share of its ACK path) as a reservation (``link.reserve``), so the live flows
around it see the links as loaded as they were.  Its CC state and timers are kept as they were; its
packets in flight drain as usual.  It is thawed, and credited its rate times the time it was fluid
(whole packets, its sequence numbers shifted, as a frozen partition's are):

* at its planned end: its tail (bytes in flight, two packets and ``tail`` ns at its rate), or the
  first-jump cap (doubling while its re-measured rate holds), or the drift bound (as a partition's
  jump, ``jump.freeze``);
* when a flow starts or finishes on its bottleneck (``neighbourhood_changed``);
* when, at a rate sample, the load of its bottleneck, or of another of its links now nearly full
  (90%), has moved by more than theta of the link's rate since it became fluid (``fluid_pass``):
  the shares there moved, so would its own.

A flow's bottleneck (``FT_BNECK``) is the link of its data path most loaded for its rate (live
flows' recent rates plus fluid reservations).  A flow becomes fluid at a rate sample when its own
window is flat (the full window, or the short one if it cannot contend: no other flow's data on its
switch ports under HPCC, line rate and no markable queue under DCQCN) and no live flow still moving
sends data across its bottleneck, and only together with every live flow bound by that same link
(a live flow beside a fixed reservation on its own bottleneck settles below its full-run share).
Its reservation is taken hop by hop as its last packet (and the ACK of it) leaves each hop, and
given back hop by hop as its first new packet does (``on_transmit``), so no link carries it twice,
or not at all, while its pipe drains and refills.  What it gets wrong:
the share it would have lost or won as its neighbours drift by less than theta, and whatever the
CC of the live flows does against a load that no longer reacts to them.
"""

import numpy as np

from ..kernel import kernel
from ..layout import (CC_DCQCN, CC_HPCC, CF_WH_THETA, CI_ACK_SIZE, CI_CC_MODE, CI_DATA_HDR, CI_PAYLOAD, CI_WH_CAP,
                      CI_WH_L, CI_WH_MIN_JUMP, CI_WH_SHORT, CI_WH_TAIL, CI_WH_TAU, FF_FLUID, FF_MAX_RATE, FF_RATE, FF_STEADY,
                      FT_APATH, FT_BNECK, FT_BYTES_RX, FT_DPATH, FT_FLUID, FT_FLUID_CAP, FT_FLUID_FIRST, FT_FLUID_LAST, FT_FLUID_T0, FT_HIGH_SEQ, FT_LAST_UPD,
                      FT_NEXT_AVAIL, FT_NSAMP, FT_PART, FT_PKTS_SENT, FT_PNEXT, FT_RX_EXPECTED, FT_RX_LAST_NACK,
                      FT_RESV, FT_RX_NACK_TIMER, FT_SIZE, FT_SKIPPED, FT_SND_NXT, FT_SND_UNA, FT_SRC, FT_WINDOW, FT_WSAMP, NQ, NT_HOST,
                      KIND_DATA, PK_FLOW, PK_HOP, PK_KIND, PK_NEXT, PK_PAYLOAD, PK_SEQ, PT_IS_HOST, PT_KMIN, PT_LN_HEAD, PT_PEER, PT_PNEXT, PT_QBYTES,
                      PT_RATE, QT_HEAD, ST_NOW, ST_WH_EV_SKIPPED, ST_WH_FLUID, ST_WH_FLUID_NOW, ST_WH_FLUID_THAWS,
                      WP_FLOWS, WP_PORTS, WP_STATE)
from ..share import reserve
from ..queue import q_remove, q_set
from ..slots import T_FLUID, T_TIMERS, kick, qp_slot, wh_seq
from .jump import DRIFT_BUDGET, NEVER, _park, _unpark, half_change, window_stats
from .partitions import FROZEN, ports_end

LOAD = 0  # parts.port_scratch columns: the port's load (bps, live flows' recent rates and fluid ones)
MOVING = 1  # ... a live flow whose data crosses it is not steady
DATA = 2  # ... data paths crossing it
MARK = 3  # ... scratch mark (neighbourhood_changed)
FULL = 0.9  # a link this loaded may bound the rates of the flows crossing it


@kernel(inline="always")
def _wire(cfg):
    payload = cfg.ints[CI_PAYLOAD]
    return (payload + cfg.ints[CI_DATA_HDR]) / payload


@kernel(inline="always")
def _ack_share(cfg):
    return cfg.ints[CI_ACK_SIZE] / cfg.ints[CI_PAYLOAD]


@kernel(inline="always")
def _share(cfg, rate, data):
    """A fluid flow's share (bps) of a link of its data path (data) or of its ACK path."""
    return np.int64(rate * (_wire(cfg) if data else _ack_share(cfg)))


@kernel(inline="always")
def _is_last(pk, i, data, last):
    """Packet i is a flow's last data packet (ending at ``last``), or (not ``data``) the ACK of it."""
    if data:
        return pk[i, PK_KIND] == KIND_DATA and pk[i, PK_SEQ] + pk[i, PK_PAYLOAD] >= last
    return pk[i, PK_KIND] != KIND_DATA and pk[i, PK_SEQ] >= last


@kernel
def _passed(net, flows, f, first, end, data, last):
    """How many hops of the path ``paths[first:end]`` flow f's last packet has left: its last data
    packet (``data``: the one ending at ``last``) or the ACK of it; all of them if it has arrived."""
    ft, paths, pk = flows.table, flows.paths, net.packets
    for j in range(end - first):
        p = paths[first + j]
        for q in range(NQ):
            i = net.queues[p * NQ + q, QT_HEAD]
            while i >= 0:
                if pk[i, PK_FLOW] == f and _is_last(pk, i, data, last):
                    return j
                i = pk[i, PK_NEXT]
        i = net.ports[p, PT_LN_HEAD]
        while i >= 0:
            if pk[i, PK_FLOW] == f and _is_last(pk, i, data, last):
                return j + 1
            i = pk[i, PK_NEXT]
    if data:  # not on its way: delivered (or lost)
        return end - first
    return end - first if ft[f, FT_SND_UNA] >= last else 0


@kernel
def on_transmit(net, flows, cfg, state, p, i, taking):
    """Port p puts packet i on the wire.  A fluid flow's reservation is taken at each hop as its last
    packet (or the ACK of it) leaves that hop (``taking``: called once the packet is on the wire),
    and a thawed one's given back as its first new packet (or the ACK of it) does (called before
    its serialisation time is set), so that no link carries a flow twice, or not at all, and no
    packet is slowed by its own flow's share."""
    pk, ft = net.packets, flows.table
    f = pk[i, PK_FLOW]
    if f < 0 or (ft[f, FT_FLUID] == 0 and ft[f, FT_RESV] == 0):
        return
    data = pk[i, PK_KIND] == KIND_DATA
    bit = np.int64(1) << (pk[i, PK_HOP] - 1 + (0 if data else 8))
    seq = pk[i, PK_SEQ]
    held = (ft[f, FT_RESV] & bit) != 0
    share = _share(cfg, flows.rates[f, FF_FLUID], data)
    if ft[f, FT_FLUID] != 0:
        if taking and not held and _is_last(pk, i, data, ft[f, FT_FLUID_LAST]):
            reserve(net, p, share, state[ST_NOW])
            ft[f, FT_RESV] |= bit
    elif not taking and held and (seq >= ft[f, FT_FLUID_FIRST] if data else seq > ft[f, FT_FLUID_FIRST]):
        reserve(net, p, -share, state[ST_NOW])
        ft[f, FT_RESV] &= ~bit


@kernel
def release_all(net, flows, cfg, state, f):
    """Give back whatever flow f still holds (it finished, or stopped again, before its first new
    packet got everywhere)."""
    ft, paths = flows.table, flows.paths
    if ft[f, FT_RESV] == 0:
        return
    now = state[ST_NOW]
    for j in range(ft[f, FT_APATH] - ft[f, FT_DPATH]):
        if (ft[f, FT_RESV] >> j) & 1:
            reserve(net, paths[ft[f, FT_DPATH] + j], -_share(cfg, flows.rates[f, FF_FLUID], True), now)
    for j in range(ports_end(flows, f) - ft[f, FT_APATH]):
        if (ft[f, FT_RESV] >> (8 + j)) & 1:
            reserve(net, paths[ft[f, FT_APATH] + j], -_share(cfg, flows.rates[f, FF_FLUID], False), now)
    ft[f, FT_RESV] = 0


@kernel
def go_fluid(net, flows, events, cfg, state, parts, f, rate, plan_ns, cap):
    """Flow f becomes fluid at ``rate`` (payload bps) for at most ``plan_ns``."""
    ft, ff = flows.table, flows.rates
    now = state[ST_NOW]
    ft[f, FT_FLUID] = 1
    ft[f, FT_FLUID_T0] = now
    ft[f, FT_FLUID_CAP] = cap
    ft[f, FT_FLUID_LAST] = ft[f, FT_SND_NXT]
    ff[f, FF_STEADY] = rate
    release_all(net, flows, cfg, state, f)  # what a previous thaw has not given back yet
    ff[f, FF_FLUID] = rate
    # the hops its last packet (and the ACK of it) has left carry its share from now; the others
    # as it leaves them (on_transmit)
    paths, last = flows.paths, ft[f, FT_SND_NXT]
    d0, a0, end = ft[f, FT_DPATH], ft[f, FT_APATH], ports_end(flows, f)
    held = np.int64(0)
    n = _passed(net, flows, f, d0, a0, True, last)
    for j in range(n):
        reserve(net, paths[d0 + j], _share(cfg, rate, True), now)
        held |= np.int64(1) << j
    if n == a0 - d0:
        for j in range(_passed(net, flows, f, a0, end, False, last)):
            reserve(net, paths[a0 + j], _share(cfg, rate, False), now)
            held |= np.int64(1) << (8 + j)
    ft[f, FT_RESV] = held
    for t in range(T_TIMERS):  # its CC state stays as it is now
        _park(events, qp_slot(cfg, f, t))
    # the loads its data path's links carry now: a move of more than theta thaws it (fluid_pass)
    watch, load = parts.watch, parts.port_scratch
    for j in range(ft[f, FT_DPATH], ft[f, FT_APATH]):
        watch[f, j - ft[f, FT_DPATH]] = load[flows.paths[j], LOAD]
    q_set(events, qp_slot(cfg, f, T_FLUID), now + plan_ns, wh_seq(state))
    state[ST_WH_FLUID] += 1
    state[ST_WH_FLUID_NOW] += 1


@kernel
def _shift_flow_packets(net, flows, f, b):
    """Packets of flow f still queued or on a link of its paths: their sequence numbers move with
    the bytes credited (a fluid flow's last packets may not have drained yet)."""
    ft, paths, pk = flows.table, flows.paths, net.packets
    for j in range(ft[f, FT_DPATH], ports_end(flows, f)):
        p = paths[j]
        for q in range(NQ):
            i = net.queues[p * NQ + q, QT_HEAD]
            while i >= 0:
                if pk[i, PK_FLOW] == f:
                    pk[i, PK_SEQ] += b
                i = pk[i, PK_NEXT]
        i = net.ports[p, PT_LN_HEAD]
        while i >= 0:
            if pk[i, PK_FLOW] == f:
                pk[i, PK_SEQ] += b
            i = pk[i, PK_NEXT]


@kernel
def thaw_fluid(net, flows, events, cfg, state, parts, f, early):
    """Fluid flow f sends packets again: credit its rate times the time it was fluid, give back its
    reservations, release its timers; ``early`` if a change near it ended the jump."""
    ft, ff, ci = flows.table, flows.rates, cfg.ints
    now = state[ST_NOW]
    shift = now - ft[f, FT_FLUID_T0]
    payload = ci[CI_PAYLOAD]
    rate = ff[f, FF_FLUID]
    b = np.int64(rate * shift / 8e9) // payload * payload
    room = ft[f, FT_SIZE] - ft[f, FT_SND_NXT] - payload
    if b > room:
        b = room if room > 0 else 0
    ft[f, FT_SKIPPED] += b
    for col in (FT_SND_NXT, FT_SND_UNA, FT_RX_EXPECTED, FT_BYTES_RX, FT_RX_LAST_NACK):
        ft[f, col] += b
    if ci[CI_CC_MODE] == CC_HPCC:  # its last INT predates the jump, and the links went on counting:
        ft[f, FT_LAST_UPD] = 0  # the next ACK's INT is a new base (HPCC's first RTT)
    elif ft[f, FT_LAST_UPD] > 0:
        ft[f, FT_LAST_UPD] += b
    if ft[f, FT_HIGH_SEQ] > 0:
        ft[f, FT_HIGH_SEQ] += b
    ft[f, FT_PKTS_SENT] += b // payload
    if ft[f, FT_RX_NACK_TIMER] >= ft[f, FT_FLUID_T0]:
        ft[f, FT_RX_NACK_TIMER] += shift
    ft[f, FT_NEXT_AVAIL] = now
    _shift_flow_packets(net, flows, f, b)
    ft[f, FT_FLUID_FIRST] = ft[f, FT_SND_NXT]  # its reservation goes as its first new packet goes (on_transmit)
    # ... except at its own NIC, now: there its packets wait behind the NIC's ACKs, which a link
    # still reserved would serve so slowly that they never ran out (measured: two thawed flows of
    # one host sent nothing for 2.4 ms, +34% FCT)
    if ft[f, FT_RESV] & 1:
        reserve(net, flows.paths[ft[f, FT_DPATH]], -_share(cfg, rate, True), now)
        ft[f, FT_RESV] &= ~np.int64(1)
    state[ST_WH_EV_SKIPPED] += (b // payload) * 2 * (ports_end(flows, f) - ft[f, FT_DPATH])
    for t in range(T_TIMERS):
        _unpark(events, qp_slot(cfg, f, t), shift)
    q_remove(events, qp_slot(cfg, f, T_FLUID))
    ft[f, FT_FLUID] = 0
    ft[f, FT_NSAMP] = 0  # its last sample predates the jump: the next one is a base point
    ft[f, FT_WSAMP] = 0
    if early:
        ft[f, FT_FLUID_CAP] = 0
        state[ST_WH_FLUID_THAWS] += 1
    state[ST_WH_FLUID_NOW] -= 1
    kick(net, state, flows.paths[ft[f, FT_DPATH]])


@kernel
def neighbourhood_changed(net, flows, events, cfg, state, parts, k, f):
    """Flow f of partition k starts or finishes: the fluid flows whose bottleneck (``FT_BNECK``) it
    crosses (its data or its ACKs, in the same direction) thaw, their shares being about to move.
    A change elsewhere on their paths leaves them fluid: if it loads one of their links enough to
    matter, the next sample's watch thaws them (``fluid_pass``)."""
    wp, ft, paths, mark = parts.table, flows.table, flows.paths, parts.port_scratch
    ft[f, FT_WSAMP] = 0
    for j in range(ft[f, FT_DPATH], ports_end(flows, f)):
        mark[paths[j], MARK] = 1.0
    g = wp[k, WP_FLOWS]
    while g >= 0:
        nx = ft[g, FT_PNEXT]
        if ft[g, FT_FLUID] != 0 and mark[ft[g, FT_BNECK], MARK] != 0.0:
            thaw_fluid(net, flows, events, cfg, state, parts, g, True)
        g = nx
    for j in range(ft[f, FT_DPATH], ports_end(flows, f)):
        mark[paths[j], MARK] = 0.0


@kernel
def _recent_rate(flows, parts, cfg, f):
    """Flow f's mean delivered rate over its last few samples (0 before its first one)."""
    sr, l = parts.samples, cfg.ints[CI_WH_L]
    n = flows.table[f, FT_NSAMP] - 1
    m = max(4, l // 4)
    if n < m:
        m = n
    if m <= 0:
        return 0.0
    s = 0.0
    for j in range(m):
        s += sr[f, (n - 1 - j) % l]
    return s / m


@kernel
def _cannot_contend(net, flows, cfg, parts, f):
    """Flow f has no share to settle, so a short window shows its steady state: under HPCC no other
    flow's data crosses its switch ports (``parts.port_scratch[:, DATA]``) and none is slower than
    its NIC; under DCQCN it is at line rate with no queue ECN could mark on its path
    (``steadiness.settled``, for one flow)."""
    ft, paths, ports = flows.table, flows.paths, net.ports
    mode = cfg.ints[CI_CC_MODE]
    nic = ports[paths[ft[f, FT_DPATH]], PT_RATE]
    for j in range(ft[f, FT_DPATH], ft[f, FT_APATH]):
        p = paths[j]
        if ports[p, PT_IS_HOST] != 0:
            continue
        if mode == CC_HPCC and (ports[p, PT_RATE] < nic or parts.port_scratch[p, DATA] > 1.0):
            return False
        if mode == CC_DCQCN and ports[p, PT_QBYTES] > ports[p, PT_KMIN]:
            return False
    if mode == CC_DCQCN:
        return flows.rates[f, FF_RATE] >= flows.rates[f, FF_MAX_RATE]
    return mode == CC_HPCC


@kernel
def _window_flat(flows, parts, cfg, f, n, resolution):
    """Flow f's last ``n`` samples are flat (as ``steadiness._flat``): (flat, mean, drift)."""
    sr, l, theta = parts.samples, cfg.ints[CI_WH_L], cfg.floats[CF_WH_THETA]
    oldest = (flows.table[f, FT_NSAMP] - 1 - n) % l
    s_old, s_new, lo, hi = window_stats(sr, f, oldest, n, l)
    s = s_old + s_new
    if s <= 0.0:
        return False, 0.0, 0.0
    mean = s / n
    change = half_change(s_old, s_new, n, resolution)
    flat = hi - lo - resolution <= theta * mean and change <= 0.25 * theta * mean
    return flat, mean, max(change, 0.0) / mean


@kernel
def _fluid_plan(flows, cfg, parts, f, n, resolution):
    """Whether flow f may become fluid at its window's mean rate, and for how long: as long as
    ``jump.freeze`` would jump a partition, to its tail, at most the first-jump cap (doubling while
    its rate holds; none after a short window) and the drift bound; not if that is shorter than
    ``min_jump``.  (ok, rate, plan_ns, cap)."""
    ft, ff, ci, theta = flows.table, flows.rates, cfg.ints, cfg.floats[CF_WH_THETA]
    flat, r, drift = _window_flat(flows, parts, cfg, f, n, resolution)
    if not flat or r <= 0.0:
        return False, 0.0, np.int64(0), np.int64(0)
    payload = ci[CI_PAYLOAD]
    una = ft[f, FT_SND_UNA]
    left = ft[f, FT_SIZE] - una - ((ft[f, FT_SND_NXT] - una) + 2 * payload + r * ci[CI_WH_TAIL] / 8e9)
    if left <= 0.0:
        return False, 0.0, np.int64(0), np.int64(0)
    jump = np.int64(left * 8e9 / r)
    prev = ff[f, FF_STEADY]
    confirmed = ft[f, FT_FLUID_CAP] > 0 and prev > 0.0 and abs(r - prev) <= 0.5 * theta * prev
    cap = 2 * ft[f, FT_FLUID_CAP] if confirmed else np.int64(ci[CI_WH_CAP])
    if n < ci[CI_WH_L] or cap > NEVER // 4:
        cap = NEVER // 4
    if drift > 0.0:
        limit = DRIFT_BUDGET * theta * (n - n // 2) * ci[CI_WH_TAU] / drift
        if limit < cap:
            cap = np.int64(limit)
    if jump > cap:
        jump = cap
    return jump >= ci[CI_WH_MIN_JUMP], r, jump, cap


@kernel
def _bottleneck(net, flows, parts, f):
    """The port of flow f's data path that bounds its rate: the most loaded for its rate."""
    ft, paths, ports, ps = flows.table, flows.paths, net.ports, parts.port_scratch
    best, best_u = paths[ft[f, FT_DPATH]], -1.0
    for j in range(ft[f, FT_DPATH], ft[f, FT_APATH]):
        p = paths[j]
        u = ps[p, LOAD] / ports[p, PT_RATE]
        if u > best_u:
            best, best_u = p, u
    return best


@kernel
def fluid_pass(net, flows, events, cfg, state, parts, k):
    """At a rate sample of live partition k (not steady as a whole): thaw the fluid flows whose
    links' loads moved, and make fluid the flows steady whose bottleneck no moving flow crosses."""
    wp, ft, ff, paths, ports, ps = parts.table, flows.table, flows.rates, flows.paths, net.ports, parts.port_scratch
    ci, theta = cfg.ints, cfg.floats[CF_WH_THETA]
    l, n_short = ci[CI_WH_L], ci[CI_WH_SHORT]
    resolution = ci[CI_PAYLOAD] * 8e9 / ci[CI_WH_TAU]
    wire, acks = _wire(cfg), _ack_share(cfg)
    p = wp[k, WP_PORTS]
    while p >= 0:
        ps[p, LOAD] = 0.0
        ps[p, MOVING] = 0.0
        ps[p, DATA] = 0.0
        p = ports[p, PT_PNEXT]
    # each link's load: live flows' recent rates, fluid flows' reservations
    f = wp[k, WP_FLOWS]
    while f >= 0:
        r = ff[f, FF_STEADY] if ft[f, FT_FLUID] != 0 else _recent_rate(flows, parts, cfg, f)
        for j in range(ft[f, FT_DPATH], ft[f, FT_APATH]):
            ps[paths[j], LOAD] += r * wire
            ps[paths[j], DATA] += 1.0
        for j in range(ft[f, FT_APATH], ports_end(flows, f)):
            ps[paths[j], LOAD] += r * acks
        f = ft[f, FT_PNEXT]
    # each live flow's bottleneck, whether it is steady over its window (full, or short if it
    # cannot contend), and which ports carry data of a flow still moving
    f = wp[k, WP_FLOWS]
    while f >= 0:
        ft[f, FT_WINDOW] = 0
        if ft[f, FT_FLUID] == 0:
            ft[f, FT_BNECK] = _bottleneck(net, flows, parts, f)
            n = n_short if _cannot_contend(net, flows, cfg, parts, f) else l
            if ft[f, FT_WSAMP] >= n and ft[f, FT_NSAMP] - 1 >= n and _window_flat(flows, parts, cfg, f, n, resolution)[0]:
                ft[f, FT_WINDOW] = n
            else:
                for j in range(ft[f, FT_DPATH], ft[f, FT_APATH]):
                    ps[paths[j], MOVING] = 1.0
        f = ft[f, FT_PNEXT]
    # a fluid flow thaws when the load of its bottleneck, or of another of its links now nearly
    # full, moved by more than theta of the link's rate since it became fluid
    f = wp[k, WP_FLOWS]
    while f >= 0:
        nx = ft[f, FT_PNEXT]
        if ft[f, FT_FLUID] != 0:
            for j in range(ft[f, FT_DPATH], ft[f, FT_APATH]):
                p = paths[j]
                rate = ports[p, PT_RATE]
                moved = abs(ps[p, LOAD] - parts.watch[f, j - ft[f, FT_DPATH]]) > theta * rate
                if moved and (p == ft[f, FT_BNECK] or ps[p, LOAD] >= FULL * rate):
                    thaw_fluid(net, flows, events, cfg, state, parts, f, True)
                    for jj in range(ft[f, FT_DPATH], ft[f, FT_APATH]):
                        ps[paths[jj], MOVING] = 1.0
                    break
        f = nx
    # steady flows whose bottleneck no moving flow crosses become fluid, together with every live
    # flow bound by the same link, or not at all: a live HPCC flow beside a fixed reservation on
    # the bottleneck they share settles below the share it splits with a live neighbour (each
    # live flow's additive increase lifts the link above eta, and a fluid one no longer adds its
    # own; measured in the skip-back case of test_wormhole: 44.9-45.6 Gb/s against 46.6).  A flow
    # bound elsewhere does not answer this link's load, so it may stay live beside them
    f = wp[k, WP_FLOWS]
    while f >= 0:
        n = ft[f, FT_WINDOW]
        if ft[f, FT_FLUID] == 0 and (n == 0 or ps[ft[f, FT_BNECK], MOVING] != 0.0
                                     or not _fluid_plan(flows, cfg, parts, f, n, resolution)[0]):
            ft[f, FT_WINDOW] = 0
            ps[ft[f, FT_BNECK], MARK] = 1.0  # stays live, bound here
        f = ft[f, FT_PNEXT]
    f = wp[k, WP_FLOWS]
    while f >= 0:
        n = ft[f, FT_WINDOW]
        if n > 0 and ft[f, FT_FLUID] == 0 and ps[ft[f, FT_BNECK], MARK] == 0.0:
            _, r, jump, cap = _fluid_plan(flows, cfg, parts, f, n, resolution)  # ok: checked above
            go_fluid(net, flows, events, cfg, state, parts, f, r, jump, cap)
        f = ft[f, FT_PNEXT]
    f = wp[k, WP_FLOWS]
    while f >= 0:
        ps[ft[f, FT_BNECK], MARK] = 0.0
        f = ft[f, FT_PNEXT]
