"""What a jump credits a flow, and what its links carried meanwhile: the formulas the thaw
(``jump._credit``) and the link monitor (``monitor``: its estimate of a jump still under way, and
the bytes a thaw adds to each port) share, so that the estimate never exceeds the credit; and the
bytes HPCC's INT counters carry over a jump (``count_in_int``)."""

import numpy as np

from ..kernel import kernel
from ..layout import (CI_ACK_SIZE, CI_DATA_HDR, CI_INT_MULTI, CI_PAYLOAD, FF_MEMO, FF_STEADY, FH_INT, FT_APATH,
                      FT_CREDIT, FT_DPATH, FT_PART, FT_PNEXT, FT_SIZE, FT_SND_NXT, INT_BYTE_UNIT, INT_BYTES_MOD,
                      INT_BYTES_SHIFT, MAXHOP, NQ, PK_FLOW, PK_INT, PK_NEXT, PK_NHOP, PT_FLUID_BYTES, PT_JUMP_BYTES,
                      PT_LN_HEAD, PT_PNEXT, QT_HEAD, ST_NOW, WP_FLOWS, WP_PORTS)
from ..share import carried_bytes
from .partitions import ports_end


@kernel
def jump_credit(flows, cfg, f, shift, t_conv):
    """Payload bytes flow f sent over a jump of ``shift`` ns, in whole packets, short of its tail: a
    memoized transient's bytes over ``t_conv`` (``FF_MEMO``; 0: none), then its steady rate."""
    ft, ff = flows.table, flows.rates
    payload = cfg.ints[CI_PAYLOAD]
    if t_conv > 0:
        b = np.int64(ff[f, FF_MEMO] * min(shift, t_conv) / t_conv
                     + ff[f, FF_STEADY] * max(shift - t_conv, 0) / 8e9) // payload * payload
    else:
        b = np.int64(ff[f, FF_STEADY] * shift / 8e9) // payload * payload
    room = ft[f, FT_SIZE] - ft[f, FT_SND_NXT] - payload
    if b > room:
        b = room if room > 0 else 0
    return b


@kernel(inline="always")
def wire_bytes(cfg, b):
    """Bytes a flow's data path and its ACK path carry for ``b`` payload bytes (an ACK per packet,
    as ``transport.receive_data`` sends them)."""
    payload = cfg.ints[CI_PAYLOAD]
    pkts = (b + payload - 1) // payload
    return b + pkts * cfg.ints[CI_DATA_HDR], pkts * cfg.ints[CI_ACK_SIZE]


@kernel
def credit_jump(net, flows, cfg, f, b):
    """A jump credited flow f ``b`` payload bytes (``jump._credit``): its links carried them."""
    data, ack = wire_bytes(cfg, b)
    add_to_paths(net, flows, f, PT_JUMP_BYTES, data, ack)


@kernel
def add_to_paths(net, flows, f, column, data, ack):
    """Port column ``column`` grows by ``data`` at each port of flow f's data path and by ``ack``
    at each of its ACK path (bytes its links carried, or count for INT)."""
    ft, paths = flows.table, flows.paths
    for j in range(ft[f, FT_DPATH], ft[f, FT_APATH]):
        net.ports[paths[j], column] += data
    for j in range(ft[f, FT_APATH], ports_end(flows, f)):
        net.ports[paths[j], column] += ack


@kernel(inline="always")
def _shifted(flows, f, h, word, units):
    """INT word ``word`` of flow f's hop h with its tx-bytes field moved by ``units[port]``."""
    j = flows.table[f, FT_DPATH] + 1 + h  # INT hop h: the h-th switch of its data path
    if j >= flows.table[f, FT_APATH]:
        return word
    field = (word >> INT_BYTES_SHIFT) & (INT_BYTES_MOD - 1)
    moved = (field + units[flows.paths[j]]) % INT_BYTES_MOD
    return word - (field << INT_BYTES_SHIFT) + (moved << INT_BYTES_SHIFT)


@kernel
def count_in_int(net, flows, cfg, state, parts, k):
    """Partition k's jump has just been credited (``jump.thaw``): its links' INT byte counters count
    the credited packets, data and ACKs, and every INT record its flows hold (their last one, and
    those in their packets in flight) moves by as many counter units, so that the next utilisation
    each flow computes spans no jumped bytes.  HPCC takes per ACK the largest of its hops' byte
    deltas in units of 512 B (at 100G), so where a flow settles depends on how its hops' counters
    stand against each other modulo that unit: counters left short of the jumped bytes, each by a
    different fraction of a unit, made a later flow on those links settle lower (the same effect
    as fluid flows' counts, ``fluid._count_exactly``).

    Called with fluid flows on only (``--ff-fluid``), where it was measured to help: flow files cut
    from the AICB fat-tree iteration at collectives / 10, per-flow FCT error 0.69% -> 0.52% mean,
    5.96% -> 3.32% p99 (250-300 ms) and 1.03% -> 0.61%, 6.37% -> 5.43% (320-400 ms).  Without fluid
    flows it changed nothing on the reference runs, and the phases it sets moved chaotic cases
    both ways (2026-12-03: the small GPT trace's audit with memo hits, ``test_audit``, iteration
    error 0.68% -> 1.31% against a 1.11% noise floor; flow 4 of the mean-jump skip-back case of
    ``test_wormhole``, 3.1% -> 7.9%, and 2.1-8.8% with 300-900 B more counted per flow): the
    default mode is left as it was measured until it is judged on more of them."""
    ports, ft, fh, pk, wp = net.ports, flows.table, flows.hops, net.packets, parts.table
    unit = INT_BYTE_UNIT * cfg.ints[CI_INT_MULTI]
    now = state[ST_NOW]
    units = parts.scratch_ints  # per port: its counter in units, then how many the jump added
    p = wp[k, WP_PORTS]
    while p >= 0:
        units[p] = carried_bytes(net, cfg, p, now) // unit
        p = ports[p, PT_PNEXT]
    f = wp[k, WP_FLOWS]
    while f >= 0:
        if ft[f, FT_CREDIT] > 0:
            data, ack = wire_bytes(cfg, ft[f, FT_CREDIT])
            add_to_paths(net, flows, f, PT_FLUID_BYTES, data, ack)
        f = ft[f, FT_PNEXT]
    p = wp[k, WP_PORTS]
    while p >= 0:
        units[p] = carried_bytes(net, cfg, p, now) // unit - units[p]
        p = ports[p, PT_PNEXT]
    f = wp[k, WP_FLOWS]
    while f >= 0:
        for h in range(MAXHOP):
            fh[f, FH_INT + h] = _shifted(flows, f, h, fh[f, FH_INT + h], units)
        f = ft[f, FT_PNEXT]
    p = wp[k, WP_PORTS]
    while p >= 0:
        for q in range(NQ + 1):  # its queues, and then its link
            i = net.queues[p * NQ + q, QT_HEAD] if q < NQ else ports[p, PT_LN_HEAD]
            while i >= 0:
                g = pk[i, PK_FLOW]
                if g >= 0 and ft[g, FT_PART] == k:
                    for h in range(min(pk[i, PK_NHOP], MAXHOP)):
                        pk[i, PK_INT + h] = _shifted(flows, g, h, pk[i, PK_INT + h], units)
                i = pk[i, PK_NEXT]
        p = ports[p, PT_PNEXT]
