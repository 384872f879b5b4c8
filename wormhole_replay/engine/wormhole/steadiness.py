"""Steadiness: sampling every live partition's flows and freezing the steady ones.

Every ``tau`` ns (the ``SAMPLE`` event) each flow of every live partition is sampled: its
delivered rate over the last interval (acknowledged payload bytes x 8 / tau).  A partition is
steady over a full window of ``l`` samples when every flow is flat: ``(max - min) / mean`` of its
samples below theta, after allowing one packet per sample of measurement resolution (a sample
counts whole packets), and its window's halves agree (no drift; ``_flat``).  With mean jumps
(``CI_WH_MEAN``, opt-in), it is also steady when the means of each flow's window quarters agree
within ``SHARE_WANDER`` x theta and those of the partition's total within theta
(``jump.stationary``).  Delivered rate rather than the CC's rate variable: DCQCN's rate variable saws
up and down by design while the throughput it yields is flat, and delivered rate is what the
flow's completion time depends on.  The window restarts whenever the partition's flows change.  A
partition with no shares to settle (``settled``) needs only a short window (``CI_WH_SHORT``
samples) on which every flow is flat: under HPCC its flows cannot contend (``alone``), under DCQCN
they all still send at line rate with no queue ECN could mark (``_idle``); its jump then has no
first-jump cap.
"""

from ..kernel import entry, kernel
from ..layout import (CC_DCQCN, CC_HPCC, CF_WH_THETA, CI_CC_MODE, CI_MEMO, CI_PAYLOAD, CI_WH_L, CI_WH_SHORT,
                      CI_WH_TAU, CI_WH_FLUID, CI_WH_MEAN, FF_MAX_RATE, FF_RATE, FT_APATH, FT_DPATH, FT_FLUID,
                      FT_NSAMP, FT_PNEXT, FT_SAMP_T, FT_WSAMP,
                      FT_SAMP_UNA, FT_SND_UNA, MEMO_SAMPLES, MEMO_SHORT, ML_SAMPLED, ML_SHORT, ML_STEADY,
                      PT_IS_HOST, PT_KMIN, PT_PNEXT, PT_QBYTES, PT_RATE, ST_NOW, ST_WH_MEAN_JUMPS, ST_WH_NLIVE,
                      WP_ALONE, WP_FLOWS, WP_NFLOWS, WP_NSAMP, WP_PORTS)
from .fluid_groups import fluid_pass
from .jump import SHARE_WANDER, freeze, half_change, quarters, stationary, window_stats
from .partitions import ensure_sampling, log, record


@kernel
def _flat(samples, f, oldest, n, l, theta, resolution):
    """Flow f's window is steady: its samples spread less than theta of their mean (beyond one
    packet of resolution), and its older and newer halves agree within theta / 4 (no drift: a
    rate creeping by a few percent per window would pass the spread test, then be extrapolated
    over a long jump)."""
    s_old, s_new, lo, hi = window_stats(samples, f, oldest, n, l)
    s = s_old + s_new
    if s <= 0.0 or hi - lo - resolution > theta * s / n:
        return False
    return half_change(s_old, s_new, n, resolution) <= 0.25 * theta * s / n


@kernel
def alone(net, flows, parts, k):
    """No two flows of partition k share a switch port, and none crosses a switch port slower than
    its NIC (cached in ``WP_ALONE`` until the flows change).  Such flows have no shares to settle:
    each one's rate is set by its own CC and its NIC, which divides itself evenly between the
    flows of one host, so a steady state shows in a few samples and cannot drift."""
    wp, ft, paths, ports, count = parts.table, flows.table, flows.paths, net.ports, parts.scratch_floats
    if wp[k, WP_ALONE] < 0:
        wp[k, WP_ALONE] = 1
        p = wp[k, WP_PORTS]
        while p >= 0:
            count[p] = 0.0
            p = ports[p, PT_PNEXT]
        f = wp[k, WP_FLOWS]
        while f >= 0 and wp[k, WP_ALONE] == 1:
            nic = ports[paths[ft[f, FT_DPATH]], PT_RATE]
            for j in range(ft[f, FT_DPATH], ft[f, FT_APATH]):
                p = paths[j]
                if ports[p, PT_IS_HOST] == 0:
                    count[p] += 1.0
                    if count[p] > 1.0 or ports[p, PT_RATE] < nic:
                        wp[k, WP_ALONE] = 0
            f = ft[f, FT_PNEXT]
    return wp[k, WP_ALONE] == 1


@kernel
def _idle(net, flows, cfg, parts, k):
    """DCQCN sends every flow of partition k at its NIC's line rate (no flow has been cut by a CNP
    for ~10 ms, the time a cut rate takes to climb back to exactly line rate), and no switch port
    of the partition holds a queue ECN could mark: the CC is idle and stays so, and the shares are
    the NICs' round-robin ones, which do not drift (an all-to-all whose senders' NICs are its
    bottleneck).  Without the queue test, flows that have just met at a port, still at line rate
    while the queue they build has yet to be marked, would pass."""
    if cfg.ints[CI_CC_MODE] != CC_DCQCN:
        return False
    wp, ports = parts.table, net.ports
    p = wp[k, WP_PORTS]
    while p >= 0:
        if ports[p, PT_IS_HOST] == 0 and ports[p, PT_QBYTES] > ports[p, PT_KMIN]:
            return False
        p = ports[p, PT_PNEXT]
    f = wp[k, WP_FLOWS]
    while f >= 0:
        if flows.rates[f, FF_RATE] < flows.rates[f, FF_MAX_RATE]:
            return False
        f = flows.table[f, FT_PNEXT]
    return True


@entry
def settled(net, flows, cfg, parts, k):
    """Partition k has no shares to settle, so a short window shows its steady state and its jump
    needs no first-jump cap: under HPCC its flows cannot contend (``alone``); under DCQCN its CC is
    idle (``_idle``: every flow at line rate, no queue to mark), whether its flows are alone or
    bound by their NICs.  A lone DCQCN flow climbing back from a cut is not: its rate steps up on a
    300 us timer, flat between steps (measured: frozen at its cut rate, a 6 MB flow of the bundled
    sample took 5.9 ms instead of 0.5 ms).  DCTCP never is (its window grows by a packet per RTT)."""
    if cfg.ints[CI_CC_MODE] == CC_HPCC:
        return alone(net, flows, parts, k)
    return _idle(net, flows, cfg, parts, k)


@kernel
def sample(net, flows, events, cfg, state, parts):
    """The SAMPLE event: one rate sample per flow of every live partition; freeze the steady ones."""
    ci, wp, ft, sr = cfg.ints, parts.table, flows.table, parts.samples
    tau = ci[CI_WH_TAU]
    l = ci[CI_WH_L]
    theta = cfg.floats[CF_WH_THETA]
    resolution = ci[CI_PAYLOAD] * 8e9 / tau  # a sample counts whole packets
    i = 0
    while i < state[ST_WH_NLIVE]:
        k = parts.live[i]
        m = wp[k, WP_NSAMP]
        steady = m >= l  # a full window since the flows last changed
        # ... or a short one, for a settled partition, or for the memo (a steady state it may know)
        n_short = ci[CI_WH_SHORT]
        short = n_short <= m < l
        free = short and settled(net, flows, cfg, parts, k)
        known = short and (free or (ci[CI_MEMO] & MEMO_SHORT) != 0)
        wp[k, WP_NSAMP] += 1
        flat = steady  # every flow flat sample by sample (_flat) ...
        wander = steady and ci[CI_WH_MEAN] != 0  # ... or each one's quarter means held, and the total's
        t0 = t1 = t2 = t3 = 0.0
        n_fluid = 0
        f = wp[k, WP_FLOWS]
        while f >= 0:
            if ft[f, FT_FLUID] != 0:  # fast-forwarded on its own (fluid): steady by definition
                n_fluid += 1
                f = ft[f, FT_PNEXT]
                continue
            n = ft[f, FT_NSAMP]
            una = ft[f, FT_SND_UNA]
            if n > 0:
                sr[f, (n - 1) % l] = (una - ft[f, FT_SAMP_UNA]) * 8e9 / tau
                ft[f, FT_WSAMP] += 1
            ft[f, FT_SAMP_UNA] = una
            ft[f, FT_SAMP_T] = state[ST_NOW]
            ft[f, FT_NSAMP] = n + 1
            # a flow's own window must be full too: a fluid flow that thawed starts a new one
            # (its ring still holds samples from before it went fluid), its partition's does not
            if flat:
                flat = n >= l and _flat(sr, f, n % l, l, l, theta, resolution)
            if wander and n < l:
                wander = False
            if wander:
                s0, s1, s2, s3 = quarters(sr, f, n % l, l, l)
                t0 += s0
                t1 += s1
                t2 += s2
                t3 += s3
                wander = stationary(s0, s1, s2, s3, l, SHARE_WANDER * theta, 0.25 * SHARE_WANDER * theta,
                                     resolution)
            if known:
                known = n >= n_short and _flat(sr, f, (n - n_short) % l, n_short, l, theta, resolution)
            f = ft[f, FT_PNEXT]
        # ... and what the partition carries in all must hold within theta
        wander = wander and not flat and stationary(t0, t1, t2, t3, l, theta, 0.25 * theta, resolution)
        steady = flat or wander
        if known and not free and n_fluid == 0:  # flat over a short window: the memo may know this steady state
            log(parts, cfg, state, ML_SHORT, k)
        n = l if steady else n_short
        if (steady or (known and free)) and n_fluid < wp[k, WP_NFLOWS] and freeze(net, flows, events, cfg, state,
                                                                                   parts, k, n, wander):
            log(parts, cfg, state, ML_STEADY, k)
            if wander:
                state[ST_WH_MEAN_JUMPS] += 1
            continue  # k left the live list; live[i] is now another partition
        if ci[CI_WH_FLUID] != 0:  # not steady as a whole: steady flows among steady neighbours
            fluid_pass(net, flows, events, cfg, state, parts, k)
        i += 1
    if (ci[CI_MEMO] & MEMO_SAMPLES) != 0:  # the memo snapshots the transients it is learning
        record(parts, state, ML_SAMPLED, -1, 0)
    ensure_sampling(events, cfg, state, ft.shape[0])
