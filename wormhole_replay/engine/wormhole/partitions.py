"""Partition bookkeeping: rows of ``parts.table``, the live list, each partition's lists of flows
and ports, merges, the memo's log, and the sampling clock.

A partition's flows and ports are doubly linked lists threaded through the flows' and ports' own
rows (``FT_PART``/``FT_PNEXT``/``FT_PPREV``, ``PT_PART``/...), so joining, leaving and merging cost
O(moved rows), and a port knows its partition in one load.  Free partition rows are a list too
(``WP_NEXT_FREE``); live ones (simulated packet by packet) are in ``parts.live``.
"""

from ..kernel import kernel
from ..layout import (CI_MEMO, CI_WH_TAU, FT_DPATH, FT_PART, FT_PNEXT, FT_PPREV, ML_CHANGED, ML_GEN, ML_KIND,
                      ML_PART, ML_TIME, PT_PART, PT_PNEXT, PT_PPREV, ST_ML_N, ST_NOW, ST_WH_FREE, ST_WH_MERGES,
                      ST_WH_NLIVE, ST_WH_NPARTS, ST_WH_PARTS_MAX, WP_ALONE, WP_FLOWS, WP_FRESH, WP_GEN, WP_LIVEPOS,
                      WP_NEXT_FREE, WP_NFLOWS, WP_NPORTS, WP_NSAMP, WP_PORTS, WP_STATE)
from ..queue import pending, q_set
from ..slots import sample_slot, wh_seq

FREE = 0  # WP_STATE
LIVE = 1
FROZEN = 2


@kernel(inline="always")
def ports_end(flows, f):
    """End of flow f's ports in ``flows.paths`` (its data path, then its ACK path)."""
    ft = flows.table
    return ft[f + 1, FT_DPATH] if f + 1 < ft.shape[0] else flows.paths.shape[0]


@kernel
def live_add(parts, state, k):
    n = state[ST_WH_NLIVE]
    parts.live[n] = k
    parts.table[k, WP_LIVEPOS] = n
    state[ST_WH_NLIVE] = n + 1


@kernel
def live_remove(parts, state, k):
    wp, wl = parts.table, parts.live
    n = state[ST_WH_NLIVE] - 1
    i = wp[k, WP_LIVEPOS]
    last = wl[n]
    wl[i] = last
    wp[last, WP_LIVEPOS] = i
    wp[k, WP_LIVEPOS] = -1
    state[ST_WH_NLIVE] = n


@kernel
def part_new(parts, state):
    """A new, empty, live partition."""
    wp = parts.table
    k = state[ST_WH_FREE]
    state[ST_WH_FREE] = wp[k, WP_NEXT_FREE]
    wp[k, WP_STATE] = LIVE
    wp[k, WP_NFLOWS] = 0
    wp[k, WP_FLOWS] = -1
    wp[k, WP_NPORTS] = 0
    wp[k, WP_PORTS] = -1
    wp[k, WP_NEXT_FREE] = -1
    wp[k, WP_FRESH] = 1
    wp[k, WP_NSAMP] = 0
    wp[k, WP_ALONE] = -1
    live_add(parts, state, k)
    state[ST_WH_NPARTS] += 1
    if state[ST_WH_NPARTS] > state[ST_WH_PARTS_MAX]:
        state[ST_WH_PARTS_MAX] = state[ST_WH_NPARTS]
    return k


@kernel
def part_free(parts, state, k):
    wp = parts.table
    if wp[k, WP_STATE] == LIVE:
        live_remove(parts, state, k)
    wp[k, WP_STATE] = FREE
    wp[k, WP_NEXT_FREE] = state[ST_WH_FREE]
    state[ST_WH_FREE] = k
    state[ST_WH_NPARTS] -= 1


@kernel
def _link(wp, tab, part, nxt, prv, head, count, k, x):
    """Put row x of ``tab`` (flows or ports) at the head of partition k's list."""
    h = wp[k, head]
    tab[x, part] = k
    tab[x, prv] = -1
    tab[x, nxt] = h
    if h >= 0:
        tab[h, prv] = x
    wp[k, head] = x
    wp[k, count] += 1


@kernel
def _unlink(wp, tab, part, nxt, prv, head, count, x):
    """Take row x of ``tab`` out of its partition's list."""
    k = tab[x, part]
    n = tab[x, nxt]
    pv = tab[x, prv]
    if pv >= 0:
        tab[pv, nxt] = n
    else:
        wp[k, head] = n
    if n >= 0:
        tab[n, prv] = pv
    tab[x, part] = -1
    wp[k, count] -= 1


@kernel(inline="always")
def flow_link(parts, flows, k, f):
    _link(parts.table, flows.table, FT_PART, FT_PNEXT, FT_PPREV, WP_FLOWS, WP_NFLOWS, k, f)


@kernel(inline="always")
def flow_unlink(parts, flows, f):
    _unlink(parts.table, flows.table, FT_PART, FT_PNEXT, FT_PPREV, WP_FLOWS, WP_NFLOWS, f)


@kernel(inline="always")
def port_link(parts, net, k, p):
    _link(parts.table, net.ports, PT_PART, PT_PNEXT, PT_PPREV, WP_PORTS, WP_NPORTS, k, p)


@kernel(inline="always")
def port_unlink(parts, net, p):
    _unlink(parts.table, net.ports, PT_PART, PT_PNEXT, PT_PPREV, WP_PORTS, WP_NPORTS, p)


@kernel
def merge(parts, net, flows, state, into, other):
    """Move every flow and port of partition ``other`` into ``into``."""
    wp = parts.table
    f = wp[other, WP_FLOWS]
    while f >= 0:
        nx = flows.table[f, FT_PNEXT]
        flow_link(parts, flows, into, f)
        f = nx
    p = wp[other, WP_PORTS]
    while p >= 0:
        nx = net.ports[p, PT_PNEXT]
        port_link(parts, net, into, p)
        p = nx
    wp[other, WP_FLOWS] = -1
    wp[other, WP_PORTS] = -1
    part_free(parts, state, other)
    state[ST_WH_MERGES] += 1


@kernel
def record(parts, state, kind, k, gen):
    """Append a memo log record (a full log only costs the memo a lookup)."""
    ml = parts.memo_log
    n = state[ST_ML_N]
    if n < ml.shape[0]:
        ml[n, ML_KIND] = kind
        ml[n, ML_PART] = k
        ml[n, ML_GEN] = gen
        ml[n, ML_TIME] = state[ST_NOW]
        state[ST_ML_N] = n + 1


@kernel
def log(parts, cfg, state, kind, k):
    """A memo log record for partition k (only when the memo is on)."""
    if cfg.ints[CI_MEMO] != 0:
        record(parts, state, kind, k, parts.table[k, WP_GEN])


@kernel
def transient(parts, cfg, state, k):
    """Partition k's flows changed: a transient begins (its current log record is the last one)."""
    parts.table[k, WP_GEN] += 1
    log(parts, cfg, state, ML_CHANGED, k)


@kernel
def changed(parts, cfg, state, k):
    """Partition k's flows changed: their steadiness windows restart, and a transient begins."""
    wp = parts.table
    wp[k, WP_FRESH] = 1
    wp[k, WP_NSAMP] = 0
    wp[k, WP_ALONE] = -1
    transient(parts, cfg, state, k)


@kernel
def ensure_sampling(events, cfg, state, n_flows):
    """Keep the ``SAMPLE`` event pending (at the next multiple of tau) while a partition is live."""
    s = sample_slot(cfg, n_flows)
    if not pending(events, s) and state[ST_WH_NLIVE] > 0:
        tau = cfg.ints[CI_WH_TAU]
        q_set(events, s, (state[ST_NOW] // tau + 1) * tau, wh_seq(state))
