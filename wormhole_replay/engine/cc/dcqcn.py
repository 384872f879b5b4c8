"""DCQCN, the Mellanox variant of the reference (``CC_MODE 1``): ``RdmaHw::cnp_received_mlx``,
``UpdateAlphaMlx``, ``CheckRateDecreaseMlx``, ``RateIncEventTimerMlx``.

An ECN echo on an ACK stands for a CNP (the reference's receiver echoes CE on the ACK, with no
separate CNP pacing).  The first one of a flow cuts its rate and starts the alpha and decrease
timers; from then on alpha is an EWMA of "a CNP came in the last ``ALPHA_RESUME_INTERVAL``", the
rate is cut by ``alpha / 2`` at most once per ``RATE_DECREASE_INTERVAL``, and each ``RP_TIMER``
without a cut raises it toward the target: fast recovery, then additive (``RATE_AI``), then hyper
(``RATE_HAI``) increase.  Rate changes apply at the next pacing decision (DCQCN does not call
``ChangeRate``).
"""

import numpy as np

from ..kernel import kernel
from ..layout import (CF_EWMA, CF_MIN_RATE, CF_RATE_AI, CF_RATE_FIRST_CNP, CF_RATE_HAI, CI_ALPHA_NS, CI_CLAMP,
                      CI_DEC_NS, CI_FAST_RECOVERY, CI_RP_NS, FF_ALPHA, FF_MAX_RATE, FF_RATE, FF_TARGET, FT_ALPHA_CNP,
                      FT_DEC_CNP, FT_FIRST_CNP, FT_RP_STAGE, ST_NOW)
from ..queue import q_set
from ..slots import T_ALPHA, T_DEC, T_RP, next_seq, qp_slot


@kernel
def cnp_received(flows, events, cfg, state, f):
    """``RdmaHw::cnp_received_mlx``."""
    ft, ff = flows.table, flows.rates
    ft[f, FT_ALPHA_CNP] = 1
    ft[f, FT_DEC_CNP] = 1
    if ft[f, FT_FIRST_CNP] != 0:
        now = state[ST_NOW]
        ff[f, FF_ALPHA] = 1.0
        ft[f, FT_ALPHA_CNP] = 0
        q_set(events, qp_slot(cfg, f, T_ALPHA), now + cfg.ints[CI_ALPHA_NS], next_seq(state))
        # +1 ns so that the rate decrease runs after the alpha update
        q_set(events, qp_slot(cfg, f, T_DEC), now + cfg.ints[CI_DEC_NS] + 1, next_seq(state))
        r = np.floor(cfg.floats[CF_RATE_FIRST_CNP] * ff[f, FF_RATE])
        ff[f, FF_RATE] = r
        ff[f, FF_TARGET] = r
        ft[f, FT_FIRST_CNP] = 0


@kernel
def on_timer(flows, events, cfg, state, f, timer):
    """``UpdateAlphaMlx`` (T_ALPHA), ``CheckRateDecreaseMlx`` (T_DEC), ``RateIncEventTimerMlx`` (T_RP)."""
    ft, ff, ci, cf = flows.table, flows.rates, cfg.ints, cfg.floats
    now = state[ST_NOW]
    g = cf[CF_EWMA]
    if timer == T_ALPHA:
        if ft[f, FT_ALPHA_CNP] != 0:
            ff[f, FF_ALPHA] = (1.0 - g) * ff[f, FF_ALPHA] + g
        else:
            ff[f, FF_ALPHA] = (1.0 - g) * ff[f, FF_ALPHA]
        ft[f, FT_ALPHA_CNP] = 0
        q_set(events, qp_slot(cfg, f, T_ALPHA), now + ci[CI_ALPHA_NS], next_seq(state))
    elif timer == T_DEC:
        q_set(events, qp_slot(cfg, f, T_DEC), now + ci[CI_DEC_NS], next_seq(state))
        if ft[f, FT_DEC_CNP] != 0:
            if ci[CI_CLAMP] != 0 or ft[f, FT_RP_STAGE] != 0:
                ff[f, FF_TARGET] = ff[f, FF_RATE]
            r = np.floor(ff[f, FF_RATE] * (1.0 - ff[f, FF_ALPHA] / 2.0))
            ff[f, FF_RATE] = r if r > cf[CF_MIN_RATE] else cf[CF_MIN_RATE]
            ft[f, FT_RP_STAGE] = 0
            ft[f, FT_DEC_CNP] = 0
            q_set(events, qp_slot(cfg, f, T_RP), now + ci[CI_RP_NS], next_seq(state))
    elif timer == T_RP:  # fast recovery, then additive, then hyper increase
        q_set(events, qp_slot(cfg, f, T_RP), now + ci[CI_RP_NS], next_seq(state))
        stage = ft[f, FT_RP_STAGE]
        if stage == ci[CI_FAST_RECOVERY]:
            t = ff[f, FF_TARGET] + cf[CF_RATE_AI]
            ff[f, FF_TARGET] = t if t < ff[f, FF_MAX_RATE] else ff[f, FF_MAX_RATE]
        elif stage > ci[CI_FAST_RECOVERY]:
            t = ff[f, FF_TARGET] + cf[CF_RATE_HAI]
            ff[f, FF_TARGET] = t if t < ff[f, FF_MAX_RATE] else ff[f, FF_MAX_RATE]
        ff[f, FF_RATE] = np.floor(ff[f, FF_RATE] / 2.0) + np.floor(ff[f, FF_TARGET] / 2.0)
        ft[f, FT_RP_STAGE] = stage + 1
