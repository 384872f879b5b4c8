"""HPCC (``CC_MODE 3``), rate form as the reference codes it: ``RdmaHw::UpdateRateHp``.

Each ACK carries the INT its data packet collected (per hop: time, tx bytes, queue length, line
rate; packed as in ``layout``).  Once per RTT (an ACK beyond ``FT_LAST_UPD``) the flow estimates
each hop's utilisation from the bytes and time between this INT and the last one, plus the
standing queue; the most loaded hop (or, with ``MULTI_RATE``, each hop) moves the utilisation
EWMA ``U``, and the rate becomes ``rate / (U / U_TARGET) + RATE_AI`` (multiplicative decrease, or
increase when under target) or, below target for fewer than ``MI_THRESH`` rounds, ``rate +
RATE_AI``.  With ``FAST_REACT`` the rate is also recomputed on every other ACK without committing
the reference rate.  ``SAMPLE_FEEDBACK`` ignores hops with an empty queue on fast reactions.
"""

import numpy as np

from ..kernel import kernel
from ..layout import (CF_MIN_RATE, CF_RATE_AI, CF_U_TARGET, CI_FAST_REACT, CI_INT_MULTI, CI_MI_THRESH, CI_MULTI_RATE,
                      CI_RATE_TABLE, CI_SAMPLE_FEEDBACK, FF_CUR_RATE, FF_MAX_RATE, FF_U, FH_INT, FH_STAGE, FHF_RC,
                      FHF_U, FT_BASE_RTT, FT_INC_STAGE, FT_LAST_UPD, FT_SND_NXT, FT_WIN, INT_BYTE_UNIT,
                      INT_BYTES_MOD, INT_BYTES_SHIFT, INT_QLEN_MOD, INT_QLEN_SHIFT, INT_QLEN_UNIT, INT_RATE_SHIFT,
                      INT_TIME_MOD, MAXHOP, PK_INT, PK_NHOP, PK_SEQ)
from ..nic import change_rate


@kernel(inline="always")
def on_ack(net, flows, events, cfg, state, f, i):
    """An ACK of flow f: a full update once per RTT, a fast reaction otherwise (``FAST_REACT``)."""
    full = net.packets[i, PK_SEQ] > flows.table[f, FT_LAST_UPD]
    if full or cfg.ints[CI_FAST_REACT] != 0:  # one call site: update is compiled once, not per literal
        update(net, flows, events, cfg, state, f, i, not full)


@kernel
def update(net, flows, events, cfg, state, f, i, fast_react):
    """``RdmaHw::UpdateRateHp`` (rate form; ``MULTI_RATE`` 0 or 1) on ACK packet i of flow f.
    ``flows.scratch`` holds, per hop: updated flag [0:5], new rate [5:10], new stage [10:15]."""
    ft, ff, fh, fhf, pk = flows.table, flows.rates, flows.hops, flows.hop_rates, net.packets
    ci, cf, scr = cfg.ints, cfg.floats, flows.scratch
    snd_nxt = ft[f, FT_SND_NXT]
    nhop = pk[i, PK_NHOP]
    if ft[f, FT_LAST_UPD] == 0:  # first RTT: remember the INT
        ft[f, FT_LAST_UPD] = snd_nxt
        for j in range(min(nhop, MAXHOP)):
            fh[f, FH_INT + j] = pk[i, PK_INT + j]
        return
    if nhop > MAXHOP:  # the reference skips an overflowed INT stack (more than 5 switches)
        if not fast_react and snd_nxt > ft[f, FT_LAST_UPD]:
            ft[f, FT_LAST_UPD] = snd_nxt
        return
    multi = ci[CI_INT_MULTI]
    T = ft[f, FT_BASE_RTT]
    win = ft[f, FT_WIN]
    max_rate = ff[f, FF_MAX_RATE]
    multi_rate = ci[CI_MULTI_RATE] != 0
    U = 0.0
    dt = 0
    updated_any = False
    for j in range(nhop):
        scr[j] = 0.0
        w = pk[i, PK_INT + j]
        w0 = fh[f, FH_INT + j]
        qlen = ((w >> INT_QLEN_SHIFT) & (INT_QLEN_MOD - 1)) * INT_QLEN_UNIT * multi
        if ci[CI_SAMPLE_FEEDBACK] != 0 and qlen == 0 and fast_react:
            continue
        scr[j] = 1.0
        updated_any = True
        tau = ((w & (INT_TIME_MOD - 1)) - (w0 & (INT_TIME_MOD - 1))) % INT_TIME_MOD
        db = (((w >> INT_BYTES_SHIFT) & (INT_BYTES_MOD - 1)) - ((w0 >> INT_BYTES_SHIFT) & (INT_BYTES_MOD - 1))) % INT_BYTES_MOD
        line = float(ci[CI_RATE_TABLE + ((w >> INT_RATE_SHIFT) & 7)])
        prev_qlen = ((w0 >> INT_QLEN_SHIFT) & (INT_QLEN_MOD - 1)) * INT_QLEN_UNIT * multi
        qmin = qlen if qlen < prev_qlen else prev_qlen
        u = 0.0
        if tau > 0:
            u = (db * INT_BYTE_UNIT * multi) * 8.0 / (tau * 1e-9) / line
        if win > 0:
            u += qmin * max_rate / line / win
        if not multi_rate:
            if u > U:
                U = u
                dt = tau
        else:
            tt = tau if tau < T else T
            fhf[f, FHF_U + j] = (fhf[f, FHF_U + j] * (T - tt) + u * tt) / T
        fh[f, FH_INT + j] = w
    min_rate = cf[CF_MIN_RATE]
    rai = cf[CF_RATE_AI]
    eta = cf[CF_U_TARGET]
    new_rate = 0.0
    new_stage = 0
    if not multi_rate:
        if updated_any:
            if dt > T:
                dt = T
            ff[f, FF_U] = (ff[f, FF_U] * (T - dt) + U * dt) / T
            c = ff[f, FF_U] / eta
            if c >= 1.0 or ft[f, FT_INC_STAGE] >= ci[CI_MI_THRESH]:
                new_rate = np.floor(ff[f, FF_CUR_RATE] / c) + rai
                new_stage = 0
            else:
                new_rate = ff[f, FF_CUR_RATE] + rai
                new_stage = ft[f, FT_INC_STAGE] + 1
            if new_rate < min_rate:
                new_rate = min_rate
            if new_rate > max_rate:
                new_rate = max_rate
    else:
        new_rate = max_rate
        for j in range(nhop):
            if scr[j] != 0.0:
                c = fhf[f, FHF_U + j] / eta
                if c >= 1.0 or fh[f, FH_STAGE + j] >= ci[CI_MI_THRESH]:
                    r = np.floor(fhf[f, FHF_RC + j] / c) + rai
                    scr[10 + j] = 0
                else:
                    r = fhf[f, FHF_RC + j] + rai
                    scr[10 + j] = fh[f, FH_STAGE + j] + 1
                if r < min_rate:
                    r = min_rate
                if r > max_rate:
                    r = max_rate
                scr[5 + j] = r
                if r < new_rate:
                    new_rate = r
            elif fhf[f, FHF_RC + j] < new_rate:
                new_rate = fhf[f, FHF_RC + j]
    if updated_any:
        change_rate(net, flows, events, cfg, state, f, new_rate)
    if not fast_react:
        if updated_any:
            ff[f, FF_CUR_RATE] = new_rate
            ft[f, FT_INC_STAGE] = new_stage
        if multi_rate:
            for j in range(nhop):
                if scr[j] != 0.0:
                    fhf[f, FHF_RC + j] = scr[5 + j]
                    fh[f, FH_STAGE + j] = np.int64(scr[10 + j])
        if snd_nxt > ft[f, FT_LAST_UPD]:
            ft[f, FT_LAST_UPD] = snd_nxt
