"""The RDMA transport at the endpoints (``RdmaHw::ReceiveUdp``, ``ReceiverCheckSeq``,
``ReceiveAck``, ``QpComplete``): in-order receive with go-back-N, per-packet ACKs, completions.

The receiver accepts a packet whose sequence number is the next expected, and ACKs every in-order
packet (the reference resets its ACK milestone to ``L2_ACK_INTERVAL`` on each one, so with the
default 1 every packet is ACKed) and every chunk boundary; a gap is NACKed at most once per
``NACK Generation Interval`` (500 us) for the same expected byte.  The data packet becomes its ACK
in place (it carries the INT back) and takes the receiver NIC's ACK queue.  The sender moves
``snd_una``, completes the QP when everything is acknowledged, rewinds to ``snd_una`` on a NACK
(go-back-N; with ``L2_BACK_TO_ZERO`` to the chunk's start) and hands the ACK to the CC (``cc``).
With ``RTO_US`` (ours, for runs without PFC) a retransmission timer rewinds a QP that heard
nothing for that long.
"""

from . import cc
from .dag import ACTIVE, mark_done, release_successors
from .kernel import kernel
from .layout import (CI_ACK_INTERVAL, CI_ACK_SIZE, CI_BACK_TO_ZERO, CI_CHUNK, CI_NACK_NS, CI_RTO_NS, FLAG_CE, FLAG_CNP,
                     FT_BYTES_RX, FT_DST, FT_FLUID, FT_RX_DONE, FT_RX_EXPECTED, FT_RX_LAST_NACK, FT_RX_NACK_TIMER, FT_SIZE,
                     FT_SND_NXT, FT_SND_UNA, FT_SRC, FT_STATE, HT_PORT, KIND_ACK, KIND_NACK, NT_HOST, PK_FLAGS,
                     PK_FLOW, PK_HOP, PK_KIND, PK_PAYLOAD, PK_SEQ, PK_SIZE, ST_NOW, ST_TIMEOUTS)
from .packets import enqueue, free
from .queue import q_remove, q_set
from .slots import T_RTO, T_START, kick, next_seq, qp_slot


@kernel(inline="always")
def nic_port(net, node):
    """The egress port of host ``node``'s NIC."""
    return net.hosts[net.nodes[node, NT_HOST], HT_PORT]


@kernel(inline="always")
def receive_data(net, flows, events, cfg, state, i):
    """``RdmaHw::ReceiveUdp`` + ``ReceiverCheckSeq``: data packet i reached its receiver; accept it
    in order (the flow is received in full: release its successors), then ACK (or NACK a gap)."""
    ft, pk, ci = flows.table, net.packets, cfg.ints
    f = pk[i, PK_FLOW]
    now = state[ST_NOW]
    seq = pk[i, PK_SEQ]
    expected = ft[f, FT_RX_EXPECTED]
    reply = 0  # 1 ACK, 2 NACK
    if seq == expected:
        ft[f, FT_RX_EXPECTED] = expected + pk[i, PK_PAYLOAD]
        if ft[f, FT_RX_EXPECTED] > ft[f, FT_BYTES_RX]:  # each byte once: L2_BACK_TO_ZERO rewinds the expected seq
            ft[f, FT_BYTES_RX] = ft[f, FT_RX_EXPECTED]
        if ft[f, FT_RX_EXPECTED] >= ft[f, FT_SIZE] and ft[f, FT_RX_DONE] < 0:
            ft[f, FT_RX_DONE] = now
            release_successors(flows, events, cfg, state, f)
        if ft[f, FT_RX_EXPECTED] >= ci[CI_ACK_INTERVAL]:
            reply = 1
        elif ci[CI_CHUNK] > 0 and ft[f, FT_RX_EXPECTED] % ci[CI_CHUNK] == 0:
            reply = 1
    elif seq > expected:
        if now >= ft[f, FT_RX_NACK_TIMER] or ft[f, FT_RX_LAST_NACK] != expected:
            ft[f, FT_RX_NACK_TIMER] = now + ci[CI_NACK_NS]
            ft[f, FT_RX_LAST_NACK] = expected
            if ci[CI_BACK_TO_ZERO] != 0 and ci[CI_CHUNK] > 0:
                ft[f, FT_RX_EXPECTED] = ft[f, FT_RX_EXPECTED] // ci[CI_CHUNK] * ci[CI_CHUNK]
            reply = 2
    if reply == 0:
        free(net, state, i)
        return
    pk[i, PK_KIND] = KIND_ACK if reply == 1 else KIND_NACK
    pk[i, PK_SEQ] = ft[f, FT_RX_EXPECTED]
    pk[i, PK_FLAGS] = FLAG_CNP if (pk[i, PK_FLAGS] & FLAG_CE) != 0 else 0
    pk[i, PK_SIZE] = ci[CI_ACK_SIZE]
    pk[i, PK_PAYLOAD] = 0
    pk[i, PK_HOP] = 1
    p = nic_port(net, ft[f, FT_DST])
    enqueue(net, p, 0, i)
    kick(net, state, p)


@kernel(inline="always")
def receive_ack(net, flows, events, cfg, state, i):
    """``RdmaHw::ReceiveAck``: ACK or NACK packet i reached its sender."""
    ft, pk, ci = flows.table, net.packets, cfg.ints
    f = pk[i, PK_FLOW]
    if ft[f, FT_STATE] != ACTIVE:  # the reference deleted the QP: a late ACK is ignored
        free(net, state, i)
        return
    seq = pk[i, PK_SEQ]
    if ci[CI_BACK_TO_ZERO] != 0 and ci[CI_CHUNK] > 0:
        seq = seq // ci[CI_CHUNK] * ci[CI_CHUNK]
    progressed = seq > ft[f, FT_SND_UNA]
    if progressed:
        ft[f, FT_SND_UNA] = seq
    if ft[f, FT_SND_UNA] >= ft[f, FT_SIZE]:
        _qp_complete(flows, events, cfg, state, f)
    if pk[i, PK_KIND] == KIND_NACK:
        ft[f, FT_SND_NXT] = ft[f, FT_SND_UNA]
    if ft[f, FT_STATE] == ACTIVE and ft[f, FT_FLUID] == 0:  # a fluid flow's CC state stays as it was frozen
        cc.on_ack(net, flows, events, cfg, state, f, i)
        if progressed and ci[CI_RTO_NS] > 0:
            q_set(events, qp_slot(cfg, f, T_RTO), state[ST_NOW] + ci[CI_RTO_NS], next_seq(state))
    free(net, state, i)
    kick(net, state, nic_port(net, ft[f, FT_SRC]))


@kernel
def _qp_complete(flows, events, cfg, state, f):
    """``RdmaHw::QpComplete``: record the completion, cancel the QP's timers."""
    mark_done(flows, state, f)
    for k in range(T_START):
        q_remove(events, qp_slot(cfg, f, k))


@kernel
def retransmission_timeout(net, flows, events, cfg, state, f):
    """Flow f's retransmission timer fired with bytes unacknowledged: go back N and rearm."""
    ft = flows.table
    if ft[f, FT_STATE] == ACTIVE and ft[f, FT_SND_UNA] < ft[f, FT_SND_NXT]:
        state[ST_TIMEOUTS] += 1
        ft[f, FT_SND_NXT] = ft[f, FT_SND_UNA]  # go back N
        kick(net, state, nic_port(net, ft[f, FT_SRC]))
        q_set(events, qp_slot(cfg, f, T_RTO), state[ST_NOW] + cfg.ints[CI_RTO_NS], next_seq(state))
