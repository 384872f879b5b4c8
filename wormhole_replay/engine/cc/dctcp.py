"""DCTCP in rate form (``CC_MODE 8``): ``RdmaHw::HandleAckDctcp``.

Alpha is updated once per window of ACKs (an EWMA of the fraction that echoed ECN); at most one
cut per window (CWR: ``rate x (1 - alpha / 2)``), and an additive increase of ``DCTCP_RATE_AI``
per window otherwise.  Rate changes apply at the next pacing decision.  No reference run covers
it: it is checked analytically.
"""

import numpy as np

from ..kernel import kernel
from ..layout import (CF_DCTCP_RATE_AI, CF_EWMA, CF_MIN_RATE, CI_PAYLOAD, FF_ALPHA, FF_MAX_RATE, FF_RATE, FT_BATCH,
                      FT_CA_STATE, FT_ECN_CNT, FT_HIGH_SEQ, FT_LAST_UPD, FT_SND_NXT)


@kernel
def on_ack(flows, cfg, f, ack_seq, ecn_echo):
    """An ACK up to ``ack_seq`` of flow f, echoing ECN or not."""
    ft, ff, cf = flows.table, flows.rates, cfg.floats
    new_batch = False
    if ecn_echo:
        ft[f, FT_ECN_CNT] += 1
    mtu = cfg.ints[CI_PAYLOAD]
    if ack_seq > ft[f, FT_LAST_UPD]:
        new_batch = True
        if ft[f, FT_LAST_UPD] == 0:  # first RTT
            ft[f, FT_LAST_UPD] = ft[f, FT_SND_NXT]
            ft[f, FT_BATCH] = ft[f, FT_SND_NXT] // mtu + 1
        else:
            frac = ft[f, FT_ECN_CNT] / ft[f, FT_BATCH]
            if frac > 1.0:
                frac = 1.0
            g = cf[CF_EWMA]
            ff[f, FF_ALPHA] = (1.0 - g) * ff[f, FF_ALPHA] + g * frac
            ft[f, FT_LAST_UPD] = ft[f, FT_SND_NXT]
            ft[f, FT_ECN_CNT] = 0
            ft[f, FT_BATCH] = (ft[f, FT_SND_NXT] - ack_seq) // mtu + 1
    if ft[f, FT_CA_STATE] == 1 and ack_seq > ft[f, FT_HIGH_SEQ]:
        ft[f, FT_CA_STATE] = 0
    if ecn_echo and ft[f, FT_CA_STATE] == 0:
        r = np.floor(ff[f, FF_RATE] * (1.0 - ff[f, FF_ALPHA] / 2.0))
        ff[f, FF_RATE] = r if r > cf[CF_MIN_RATE] else cf[CF_MIN_RATE]
        ft[f, FT_CA_STATE] = 1
        ft[f, FT_HIGH_SEQ] = ft[f, FT_SND_NXT]
    if ft[f, FT_CA_STATE] == 0 and new_batch:
        r = ff[f, FF_RATE] + cf[CF_DCTCP_RATE_AI]
        ff[f, FF_RATE] = r if r < ff[f, FF_MAX_RATE] else ff[f, FF_MAX_RATE]
