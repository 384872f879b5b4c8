"""Fluid flows: one flow fast-forwarded while the rest of its partition is simulated.

A partition is frozen only as a whole (``jump``), and on a fabric where rings collide under ECMP a
partition spans most of it and is never steady as a whole.  A *fluid* flow stops sending packets
and takes its steady rate of every link of its data path (and its ACKs' share of its ACK path):

* as a reservation (``share.reserve``), hop by hop as its last packet (and the ACK of it) leaves
  each hop, given back hop by hop as its first new packet does (``on_transmit``), so that no link
  serves it twice, or not at all, while its pipe drains and refills: the link's data packets get
  the rest of it (``share.service_rate``);
* in the byte counter HPCC's INT reads (``share.accrue``), at every hop alike from the instant it
  went fluid to the instant it thaws (``_accrue_all``), as its packets would have advanced them.

Its CC state and timers are kept as they were; its packets in flight drain as usual.  It thaws
(``thaw_fluid``) credited its rate times the time it was fluid (whole packets, its sequence numbers
shifted, as a frozen partition's are), its HPCC taking the next INT as a new base.  Which flows go
fluid, together with which, and when they thaw, is ``fluid_groups``'s.
"""

import numpy as np

from ..kernel import kernel
from ..layout import (CC_HPCC, CI_ACK_SIZE, CI_CC_MODE, CI_DATA_HDR, CI_PAYLOAD, FF_FLUID, FF_STEADY, FT_APATH,
                      FT_BYTES_RX, FT_DPATH, FT_FLUID, FT_FLUID_CAP, FT_FLUID_FIRST, FT_FLUID_LAST, FT_FLUID_T0,
                      FT_HIGH_SEQ, FT_LAST_UPD, FT_NEXT_AVAIL, FT_NSAMP, FT_PKTS_SENT, FT_RESV, FT_RX_EXPECTED,
                      FT_RX_LAST_NACK, FT_RX_NACK_TIMER, FT_SIZE, FT_SKIPPED, FT_SND_NXT, FT_SND_UNA, FT_WSAMP,
                      FT_REFLUID, KIND_DATA, NQ, PK_FLOW, PK_HOP, PK_KIND, PK_NEXT, PK_PAYLOAD, PK_SEQ, PT_LN_HEAD,
                      QT_HEAD, ST_NOW, PT_FLUID_BYTES, ST_WH_EV_SKIPPED, ST_WH_FLUID, ST_WH_FLUID_NOW,
                      ST_WH_FLUID_THAWS)
from ..queue import q_remove, q_set
from ..share import accrue, reserve
from ..slots import T_FLUID, T_TIMERS, kick, qp_slot, wh_seq
from .credit import add_to_paths, wire_bytes
from .jump import _park, _unpark
from .partitions import ports_end

@kernel(inline="always")
def wire_ratio(cfg):
    payload = cfg.ints[CI_PAYLOAD]
    return (payload + cfg.ints[CI_DATA_HDR]) / payload


@kernel(inline="always")
def ack_ratio(cfg):
    return cfg.ints[CI_ACK_SIZE] / cfg.ints[CI_PAYLOAD]


@kernel(inline="always")
def _share(cfg, rate, data):
    """A fluid flow's share (bps) of a link of its data path (data) or of its ACK path."""
    return np.int64(rate * (wire_ratio(cfg) if data else ack_ratio(cfg)))


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
            reserve(net, p, share)
            ft[f, FT_RESV] |= bit
    elif not taking and held and (seq >= ft[f, FT_FLUID_FIRST] if data else seq > ft[f, FT_FLUID_FIRST]):
        reserve(net, p, -share)
        ft[f, FT_RESV] &= ~bit


@kernel
def release_all(net, flows, cfg, state, f):
    """Give back whatever flow f still holds (it finished, or stopped again, before its first new
    packet got everywhere)."""
    ft, paths = flows.table, flows.paths
    if ft[f, FT_RESV] == 0:
        return
    for j in range(ft[f, FT_APATH] - ft[f, FT_DPATH]):
        if (ft[f, FT_RESV] >> j) & 1:
            reserve(net, paths[ft[f, FT_DPATH] + j], -_share(cfg, flows.rates[f, FF_FLUID], True))
    for j in range(ports_end(flows, f) - ft[f, FT_APATH]):
        if (ft[f, FT_RESV] >> (8 + j)) & 1:
            reserve(net, paths[ft[f, FT_APATH] + j], -_share(cfg, flows.rates[f, FF_FLUID], False))
    ft[f, FT_RESV] = 0


@kernel
def _accrue_all(net, flows, cfg, f, rate, now):
    """Every link of flow f's data and ACK paths counts ``rate`` (payload bps; negative: no longer)
    more of its bytes from ``now`` (``share.accrue``: the same at every hop, as its packets were)."""
    ft, paths = flows.table, flows.paths
    for j in range(ft[f, FT_DPATH], ft[f, FT_APATH]):
        accrue(net, paths[j], _share(cfg, rate, True), now)
    for j in range(ft[f, FT_APATH], ports_end(flows, f)):
        accrue(net, paths[j], _share(cfg, rate, False), now)


@kernel
def _count_exactly(net, flows, cfg, f, rate, b, shift):
    """Flow f thawed after ``shift`` ns at ``rate``, credited ``b`` bytes: each link of its paths
    has counted ``rate x shift`` of its bytes (``_accrue_all``; less any partition jump it sat
    out, ``share.skip_jump``), and now counts exactly the packets it was credited, whole data
    packets and ACKs, as it would have with its packets.  HPCC's per-ACK utilisation is the largest
    of its hops' byte deltas in INT units (512 B at 100G), so where a lone flow settles depends on
    how its hops' counters stand against each other modulo that unit; a fraction of a packet left
    at each hop by an episode shifts them (measured 2026-12-03: a lone flow on an idle path of the
    AICB cut settled at 84 Gb/s where full simulation had it at 94, its hops' counters shifted by
    earlier fluid flows)."""
    data, ack = wire_bytes(cfg, b)
    d = data - np.int64(np.round(_share(cfg, rate, True) * (shift / 8e9)))
    a = ack - np.int64(np.round(_share(cfg, rate, False) * (shift / 8e9)))
    add_to_paths(net, flows, f, PT_FLUID_BYTES, d, a)


@kernel
def go_fluid(net, flows, events, cfg, state, f, rate, plan_ns, cap):
    """Flow f becomes fluid at ``rate`` (payload bps) for at most ``plan_ns`` (its first-jump
    cap for next time: ``cap``)."""
    ft, ff = flows.table, flows.rates
    now = state[ST_NOW]
    ft[f, FT_FLUID] = 1
    ft[f, FT_REFLUID] = 0  # its window, short or full, is spent
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
        reserve(net, paths[d0 + j], _share(cfg, rate, True))
        held |= np.int64(1) << j
    if n == a0 - d0:
        for j in range(_passed(net, flows, f, a0, end, False, last)):
            reserve(net, paths[a0 + j], _share(cfg, rate, False))
            held |= np.int64(1) << (8 + j)
    ft[f, FT_RESV] = held
    _accrue_all(net, flows, cfg, f, rate, now)  # its links count its bytes from now, every hop alike
    for t in range(T_TIMERS):  # its CC state stays as it is now
        _park(events, qp_slot(cfg, f, t))
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
def thaw_fluid(net, flows, events, cfg, state, f, early):
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
    _accrue_all(net, flows, cfg, f, -rate, now)
    _count_exactly(net, flows, cfg, f, rate, b, shift)
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
        reserve(net, flows.paths[ft[f, FT_DPATH]], -_share(cfg, rate, True))
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


