"""What a jump credits a flow: the one formula the thaw (``jump._credit``) and the link monitor's
estimate of a jump still under way (``monitor``) share, so that the estimate never exceeds the
credit."""

import numpy as np
from numba import njit

from ..layout import CI_PAYLOAD, FF_MEMO, FF_STEADY, FT_SIZE, FT_SND_NXT


@njit(cache=True, _nrt=False)
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
