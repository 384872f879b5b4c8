"""A host's NIC: its queue pairs, their pacing and windows, and what it sends next
(``QbbNetDevice::DequeueAndTransmit`` at a host, ``RdmaEgressQueue::GetNextQindex``,
``RdmaHw::GetNxtPacket`` / ``PktSent`` / ``UpdateNextAvail`` / ``ChangeRate``,
``RdmaHw::AddQueuePair`` + ``QbbNetDevice::NewQp``).

The NIC serves its ACK queue first (unless PFC pauses the ACKs' priority), then its QPs
round-robin from the one after the last served, skipping QPs paused by PFC, with nothing left to
send, bound by their window, fluid (wormhole mode: fast-forwarded on their own), or paced into the future (a QP may send again ``wire size / rate``
after its last packet).  Finished QPs are dropped from the list as the reference compacts it.  When
nothing is eligible, the NIC wakes up (``WAKE[h]``) when the earliest paced QP may send.
"""

import numpy as np

from .kernel import kernel
from .layout import (CC_HPCC, CI_ACK_Q_IDX, CI_CC_MODE, CI_DATA_HDR, CI_MULTI_RATE, CI_PAYLOAD,
                     CI_RATE_BOUND, CI_RTO_NS, CI_VAR_WIN, FF_CUR_RATE, FF_MAX_RATE, FF_RATE, FF_TARGET,
                     FHF_RC, FT_LAST_PKT, FT_NEXT_AVAIL, FT_PG, FT_PKTS_SENT, FT_SIZE, FT_SND_NXT, FT_SND_UNA,
                     FT_SRC, FT_START, FT_STATE, FT_WIN, FT_FLUID, HT_PORT, HT_QP_COUNT, HT_QP_OFF, HT_RRLAST, KIND_DATA,
                     MAXHOP, NQ, NT_HOST, PK_FLOW, PK_HOP, PK_KIND, PK_PAYLOAD, PK_QUEUE, PK_SEQ, PK_SIZE,
                     QT_HEAD, QT_PAUSED, ST_NOW)
from .link import transmit_start
from .packets import NONE, alloc, dequeue, tx_ns
from .queue import QN_TIME, pending, q_set
from .slots import T_RTO, kick, next_seq, qp_slot, wake_slot

NEVER = 1 << 62


@kernel
def _win_bound(flows, cfg, f):
    """``RdmaQueuePair::IsWinBound``: the bytes in flight fill the window (scaled by the rate
    with ``VAR_WIN``)."""
    ft = flows.table
    w = ft[f, FT_WIN]
    if w == 0:
        return False
    if cfg.ints[CI_VAR_WIN] != 0:
        w = w * np.int64(flows.rates[f, FF_RATE]) // np.int64(flows.rates[f, FF_MAX_RATE])
        if w == 0:
            w = 1
    return ft[f, FT_SND_NXT] - ft[f, FT_SND_UNA] >= w


@kernel
def _next_qp(net, flows, cfg, state, h):
    """``RdmaEgressQueue::GetNextQindex`` over host h's QPs: the position of the QP to serve (-1:
    none), after dropping finished QPs from the list (keeping the order, as the reference does)."""
    ft, qpl, hosts = flows.table, net.qp_order, net.hosts
    base = hosts[h, HT_PORT] * NQ
    now = state[ST_NOW]
    off = hosts[h, HT_QP_OFF]
    n = hosts[h, HT_QP_COUNT]
    res = -1
    min_finish = n
    last = hosts[h, HT_RRLAST]
    for j in range(1, n + 1):
        idx = (j + last) % n
        f = qpl[off + idx]
        if (net.queues[base + ft[f, FT_PG], QT_PAUSED] == 0 and ft[f, FT_SIZE] > ft[f, FT_SND_NXT]
                and ft[f, FT_FLUID] == 0 and not _win_bound(flows, cfg, f)):
            if ft[f, FT_NEXT_AVAIL] > now:
                continue
            res = idx
            break
        elif ft[f, FT_SND_UNA] >= ft[f, FT_SIZE]:
            if idx < min_finish:
                min_finish = idx
    if min_finish < n:
        nxt = min_finish
        for j in range(min_finish + 1, n):
            f = qpl[off + j]
            if ft[f, FT_SND_UNA] < ft[f, FT_SIZE]:
                if j == res:
                    res = nxt
                qpl[off + nxt] = f
                nxt += 1
        hosts[h, HT_QP_COUNT] = nxt
    return res


@kernel
def _send_data(net, flows, events, cfg, state, p, f):
    """``RdmaHw::GetNxtPacket``, then ``PktSent`` / ``UpdateNextAvail``: QP f's next packet goes
    out of its NIC's port p, and the QP is paced at its rate (or at line rate without
    ``RATE_BOUND``); the retransmission timer is armed if it is not."""
    ft, pk, ci = flows.table, net.packets, cfg.ints
    now = state[ST_NOW]
    left = ft[f, FT_SIZE] - ft[f, FT_SND_NXT]
    payload = ci[CI_PAYLOAD] if left > ci[CI_PAYLOAD] else left
    i = alloc(net, state)
    pk[i, PK_KIND] = KIND_DATA
    pk[i, PK_FLOW] = f
    pk[i, PK_SEQ] = ft[f, FT_SND_NXT]
    pk[i, PK_PAYLOAD] = payload
    pk[i, PK_SIZE] = payload + ci[CI_DATA_HDR]
    pk[i, PK_QUEUE] = ft[f, FT_PG]
    pk[i, PK_HOP] = 1  # paths[0] is this NIC's own port
    ft[f, FT_SND_NXT] += payload
    ft[f, FT_PKTS_SENT] += 1
    transmit_start(net, flows, events, cfg, state, p, i)
    ft[f, FT_LAST_PKT] = pk[i, PK_SIZE]
    r = np.int64(flows.rates[f, FF_RATE]) if ci[CI_RATE_BOUND] != 0 else np.int64(flows.rates[f, FF_MAX_RATE])
    ft[f, FT_NEXT_AVAIL] = now + tx_ns(pk[i, PK_SIZE], r)
    if ci[CI_RTO_NS] > 0:
        s = qp_slot(cfg, f, T_RTO)
        if not pending(events, s):
            q_set(events, s, now + ci[CI_RTO_NS], next_seq(state))


@kernel
def dequeue_and_transmit(net, flows, events, cfg, state, h):
    """``QbbNetDevice::DequeueAndTransmit`` at host h's NIC (its port is ready): an ACK, a QP's
    next packet, or a wake-up at the earliest paced QP's next send time."""
    hosts = net.hosts
    p = hosts[h, HT_PORT]
    base = p * NQ
    if net.queues[base + cfg.ints[CI_ACK_Q_IDX], QT_PAUSED] == 0 and net.queues[base, QT_HEAD] != NONE:
        transmit_start(net, flows, events, cfg, state, p, dequeue(net, p, 0))
        return
    res = _next_qp(net, flows, cfg, state, h)
    off = hosts[h, HT_QP_OFF]
    if res >= 0:
        hosts[h, HT_RRLAST] = res
        _send_data(net, flows, events, cfg, state, p, net.qp_order[off + res])
        return
    # nothing eligible: wake up when the earliest paced QP with bytes left may send
    ft = flows.table
    now = state[ST_NOW]
    t = NEVER
    for j in range(hosts[h, HT_QP_COUNT]):
        f = net.qp_order[off + j]
        if ft[f, FT_SIZE] > ft[f, FT_SND_NXT] and ft[f, FT_FLUID] == 0 and ft[f, FT_NEXT_AVAIL] < t:
            t = ft[f, FT_NEXT_AVAIL]
    ws = wake_slot(cfg, h)
    if not pending(events, ws) and t < NEVER and t > now:
        q_set(events, ws, t, next_seq(state))


@kernel
def change_rate(net, flows, events, cfg, state, f, new_rate):
    """``RdmaHw::ChangeRate`` (HPCC): shift the QP's next send time by the new pacing of its last
    packet, and pull the NIC's wake-up earlier if that makes it eligible sooner."""
    ft, ff = flows.table, flows.rates
    old = tx_ns(ft[f, FT_LAST_PKT], np.int64(ff[f, FF_RATE]))
    new = tx_ns(ft[f, FT_LAST_PKT], np.int64(new_rate))
    ft[f, FT_NEXT_AVAIL] += new - old
    ws = wake_slot(cfg, net.nodes[ft[f, FT_SRC], NT_HOST])
    if pending(events, ws) and ft[f, FT_NEXT_AVAIL] < events.slots[ws, QN_TIME]:
        t = ft[f, FT_NEXT_AVAIL]
        if t < state[ST_NOW]:
            t = state[ST_NOW]
        q_set(events, ws, t, next_seq(state))
    ff[f, FF_RATE] = new_rate


@kernel
def start_flow(net, flows, cfg, state, f):
    """``RdmaHw::AddQueuePair`` + ``QbbNetDevice::NewQp``: flow f's QP joins its host's list at
    line rate and may send now; its NIC is asked to transmit."""
    ft, ff = flows.table, flows.rates
    h = net.nodes[ft[f, FT_SRC], NT_HOST]
    hosts = net.hosts
    net.qp_order[hosts[h, HT_QP_OFF] + hosts[h, HT_QP_COUNT]] = f
    hosts[h, HT_QP_COUNT] += 1
    ft[f, FT_STATE] = 1
    ft[f, FT_START] = state[ST_NOW]  # a released flow starts later than its earliest start
    line = ff[f, FF_MAX_RATE]
    ff[f, FF_RATE] = line
    ff[f, FF_TARGET] = line
    ff[f, FF_CUR_RATE] = line
    if cfg.ints[CI_CC_MODE] == CC_HPCC and cfg.ints[CI_MULTI_RATE] != 0:
        for j in range(MAXHOP):
            flows.hop_rates[f, FHF_RC + j] = line
    ft[f, FT_NEXT_AVAIL] = state[ST_NOW]
    kick(net, state, hosts[h, HT_PORT])
