"""What a jump credits a flow, and what its links carried meanwhile: the formulas the thaw
(``jump._credit``) and the link monitor (``monitor``: its estimate of a jump still under way, and
the bytes a thaw adds to each port) share, so that the estimate never exceeds the credit."""

import numpy as np

from ..kernel import kernel
from ..layout import (CI_ACK_SIZE, CI_DATA_HDR, CI_PAYLOAD, FF_MEMO, FF_STEADY, FT_APATH, FT_DPATH, FT_SIZE,
                      FT_SND_NXT, PT_JUMP_BYTES)
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
    ft, paths = flows.table, flows.paths
    for j in range(ft[f, FT_DPATH], ft[f, FT_APATH]):
        net.ports[paths[j], PT_JUMP_BYTES] += data
    for j in range(ft[f, FT_APATH], ports_end(flows, f)):
        net.ports[paths[j], PT_JUMP_BYTES] += ack
