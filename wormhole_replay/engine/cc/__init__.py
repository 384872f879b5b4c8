"""Congestion control: a file per algorithm, each mirroring its ``RdmaHw`` routines.

``on_ack`` and ``on_timer`` are what the transport calls; they dispatch on ``CI_CC_MODE`` (the
reference's ``CC_MODE``).  Adding an algorithm: a file here with its ACK reaction (and timers, if
any), a branch in each function below, its state columns in ``layout`` (``FT_*``/``FF_*``), and
its mode in ``config.py``.  A rate change takes effect at the QP's next pacing decision
(``nic``), or at once through ``nic.change_rate`` (HPCC, as the reference's ``ChangeRate``).
"""


from ..kernel import kernel
from ..layout import CC_DCQCN, CC_DCTCP, CC_HPCC, CI_CC_MODE, FLAG_CNP, PK_FLAGS, PK_SEQ
from . import dcqcn, dctcp, hpcc


@kernel(inline="always")
def on_ack(net, flows, events, cfg, state, f, i):
    """ACK (or NACK) packet i of active flow f reached its sender (``RdmaHw::ReceiveAck``'s CC part)."""
    mode = cfg.ints[CI_CC_MODE]
    pk = net.packets
    ecn_echo = (pk[i, PK_FLAGS] & FLAG_CNP) != 0
    if mode == CC_DCQCN:
        if ecn_echo:
            dcqcn.cnp_received(flows, events, cfg, state, f)
    elif mode == CC_DCTCP:
        dctcp.on_ack(flows, cfg, f, pk[i, PK_SEQ], ecn_echo)
    elif mode == CC_HPCC:
        hpcc.on_ack(net, flows, events, cfg, state, f, i)


@kernel(inline="always")
def on_timer(flows, events, cfg, state, f, timer):
    """One of flow f's CC timers fired (only DCQCN has any)."""
    dcqcn.on_timer(flows, events, cfg, state, f, timer)
