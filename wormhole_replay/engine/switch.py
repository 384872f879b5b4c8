"""A switch: forwarding, egress scheduling, ECN marking and HPCC's INT (``SwitchNode::SendToDev``,
``SwitchNode::SwitchNotifyDequeue``, ``BEgressQueue::DequeueRR``, ``SwitchMmu::ShouldSendCN``,
``IntHeader::PushHop``).

Forwarding follows the flow's path (ECMP-hashed or pinned when the run was built).  Each egress
port has 8 queues: queue 0 (PFC frames) is served first, the others round-robin, skipping queues
paused by the downstream switch or NIC.  ECN marks at dequeue, RED-style on the egress queue's
bytes: always above Kmax, with probability ``Pmax (bytes - Kmin) / (Kmax - Kmin)`` between.
"""

from .kernel import kernel
from .layout import (CC_HPCC, CI_CC_MODE, CI_ECN, CI_INT_MULTI, FLAG_CE, INT_BYTE_UNIT, INT_BYTES_MOD,
                     INT_BYTES_SHIFT, INT_QLEN_MOD, INT_QLEN_SHIFT, INT_QLEN_UNIT, INT_RATE_SHIFT, INT_TIME_MOD, FT_APATH, FT_DPATH, KIND_DATA, MAXHOP, NQ,
                     PK_FLAGS, PK_FLOW, PK_HOP, PK_INPORT, PK_INT, PK_KIND, PK_NHOP, PK_QUEUE, PK_SIZE, PT_KMAX,
                     PT_KMIN, PT_QBYTES, PT_RATE_IDX, PT_RRLAST, PT_TXBYTES, PTF_PMAX, QT_HEAD, QT_PAUSED,
                     ST_DROPS, ST_ECN_MARKS, ST_NOW)
from .link import transmit_start
from .share import carried_bytes
from .packets import NONE, dequeue, enqueue, free
from .pfc import admit, maybe_resume, release
from .rng import ecn_uniform
from .slots import kick



@kernel(inline="always")
def receive(net, flows, cfg, state, ip, i):
    """``SwitchNode::SendToDev``: packet i arrived on port ``ip``; route it to its next egress
    port, admit it into the shared buffer (or drop it), queue it there."""
    pk = net.packets
    f = pk[i, PK_FLOW]
    off = flows.table[f, FT_DPATH] if pk[i, PK_KIND] == KIND_DATA else flows.table[f, FT_APATH]
    e = flows.paths[off + pk[i, PK_HOP]]
    pk[i, PK_HOP] += 1
    q = pk[i, PK_QUEUE]
    if q != 0 and not admit(net, cfg, state, ip, e, q, pk[i, PK_SIZE]):
        state[ST_DROPS] += 1
        free(net, state, i)
        return
    pk[i, PK_INPORT] = ip
    enqueue(net, e, q, i)
    kick(net, state, e)


@kernel
def _next_queue(net, p):
    """``BEgressQueue::DequeueRR``'s choice: queue 0 if it holds a frame, else the next unpaused,
    non-empty queue after the last one served; -1 if none."""
    queues = net.queues
    base = p * NQ
    if queues[base, QT_HEAD] != NONE:
        return 0
    last = net.ports[p, PT_RRLAST]
    for j in range(1, NQ + 1):
        qq = (j + last) % NQ
        if queues[base + qq, QT_PAUSED] == 0 and queues[base + qq, QT_HEAD] != NONE:
            return qq
    return -1


@kernel
def _ecn_mark(net, cfg, state, p, egress_bytes):
    """``SwitchMmu::ShouldSendCN`` on the egress queue a packet left (it now holds ``egress_bytes``)."""
    kmin = net.ports[p, PT_KMIN]
    kmax = net.ports[p, PT_KMAX]
    if egress_bytes > kmax:
        return True
    if egress_bytes > kmin:
        return ecn_uniform(cfg, state) < net.port_probs[p, PTF_PMAX] * (egress_bytes - kmin) / (kmax - kmin)
    return False


@kernel(inline="always")
def _push_int_hop(net, cfg, state, p, i):
    """``IntHeader::PushHop`` with the reference's field widths; past 5 hops it wraps around."""
    pk, ports = net.packets, net.ports
    h = pk[i, PK_NHOP]
    multi = cfg.ints[CI_INT_MULTI]
    pk[i, PK_INT + h % MAXHOP] = (
        state[ST_NOW] % INT_TIME_MOD
        | ((carried_bytes(net, cfg, p, state[ST_NOW]) // (INT_BYTE_UNIT * multi)) % INT_BYTES_MOD) << INT_BYTES_SHIFT
        | ((ports[p, PT_QBYTES] // (INT_QLEN_UNIT * multi)) % INT_QLEN_MOD) << INT_QLEN_SHIFT
        | ports[p, PT_RATE_IDX] << INT_RATE_SHIFT
    )
    pk[i, PK_NHOP] = h + 1


@kernel(inline="always")
def dequeue_and_transmit(net, flows, events, cfg, state, p):
    """``QbbNetDevice::DequeueAndTransmit`` at a switch port: pick a queue, release the packet's
    buffer (``SwitchNotifyDequeue``: MMU, ECN mark, RESUME), push HPCC's INT hop, transmit."""
    q = _next_queue(net, p)
    if q < 0:
        return
    pk = net.packets
    i = dequeue(net, p, q)
    size = pk[i, PK_SIZE]
    if q != 0:
        net.ports[p, PT_RRLAST] = q
        ip = pk[i, PK_INPORT]
        egress_bytes = release(net, cfg, state, ip, p, q, size)
        if cfg.ints[CI_ECN] != 0 and _ecn_mark(net, cfg, state, p, egress_bytes):
            pk[i, PK_FLAGS] |= FLAG_CE
            state[ST_ECN_MARKS] += 1
        maybe_resume(net, cfg, state, ip, q)
    if pk[i, PK_KIND] == KIND_DATA and cfg.ints[CI_CC_MODE] == CC_HPCC:
        _push_int_hop(net, cfg, state, p, i)
    net.ports[p, PT_TXBYTES] += size
    transmit_start(net, flows, events, cfg, state, p, i)
