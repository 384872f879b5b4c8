"""Which flows go fluid (``fluid``), together with which, and when they thaw: data groups.

At each rate sample of a live partition that is not steady as a whole (``fluid_pass``), its live
flows are cut into *data groups*: flows whose data paths share a nearly full link (``FULL`` of its
rate, a NIC's included), transitively (``_data_groups``).  A link less loaded bounds none of the
rates crossing it.  A group goes fluid as a whole, when every flow of it is steady over its own
window since its neighbourhood last changed, or not at all, and it thaws as a whole
(``thaw_group``): a link then carries the data of live flows or the fixed reservations of fluid
ones, never both where it is full, and only ACKs cross between them.  A live HPCC flow beside a
fixed reservation on its own bottleneck settles below the share it would split with a live
neighbour (each live flow's additive increase lifts the link above eta, and a fluid one no longer
adds its own: measured in the skip-back case of ``test_wormhole``, 44.9-45.6 Gb/s against 46.6);
on the 128-GPU AICB iteration on a k=8 fat-tree (HPCC, collectives / 10), flows made fluid one by
one with the live flows bound by their bottleneck left the live flows beside them 2.7% late on
average.  The groups are small there: 1.7 flows on average against 54 for a port partition (a NIC
carries its own data and the ACKs of the flow it receives, which chains a whole ring into one
partition), and each flow's group changes 3.1 times in its life against 129 for its partition
(measured from the full run's flows and ECMP paths, 2026-12-03).

A flow is steady (``_fluid_plan``) when its window is flat (``jump.window_stats``: the full window,
or the short one if it cannot contend, ``_cannot_contend``), or, on a full window, when its samples
wander around a mean that holds (``jump.stationary``; it then goes at that mean for at most
``releaser_share`` of its expected FCT).  A group goes for the shortest of its flows' plans, if
that is no shorter than any of them needs (``_min_jump``).

A fluid group thaws:

* at its planned end (a flow's tail, the first-jump cap doubling while the rates hold, the drift
  bound, the FCT share);
* when a flow starts with data on one of its links, or finishes with data on one of its full
  links or on a member's bottleneck, or with ACKs across a member's bottleneck
  (``neighbourhood_changed``);
* when, at a rate sample, the load of a member's bottleneck, or of another of its links now nearly
  full, has moved by more than theta of the link's rate since it went fluid (``fluid_pass``'s
  watch): the shares there moved, so would its own.

A group thawed only because the load around it moved (the watch, or a neighbour's ACKs across its
bottleneck: no flow's data came or went on its links) keeps its flows' shares of each other, and
its new level shows in a short window once its bottleneck is nearly full again (``FT_REFLUID``;
while the load that left is being taken up HPCC climbs by additive steps, and a short window would
catch the climb).  Measured 2026-12-03 on a cut of the full-size AICB iteration (190 flows of 406
MB, ``bench_contention --cut``): 77.6% -> 81.0% of events avoided, per-flow 0.40% / 2.70% p99 ->
0.40% / 2.53%.

What it gets wrong: the share a flow would have lost or won as its neighbours drift by less than
theta, the queues its packets would have built on links it shares with live flows' data, and the
packet-by-packet structure of its bytes in the INT counters (``share``): HPCC's utilisation is the
largest, over the hops, of quantised byte deltas, so the live flows beside a fluid one see a
smoother load than its packets made.  Measured 2026-12-03: on a flow file cut from that AICB
iteration (its 1,920 network flows at their full-run start times, HPCC), fluid flows avoided 37%
of the events at a per-flow FCT error of 1.87% mean, 11.1% p99, mean FCT +1.06% (a 1 us shift of
one flow moves that file's FCTs by 0.15% / 1.9% p99: it is not chaotic); on the iteration itself,
whose full run is chaotic, within its noise floor's mean FCT (README, "Fluid flows").
"""

import numpy as np

from ..dag import FINISHED
from ..kernel import kernel
from ..layout import (CC_DCQCN, CC_HPCC, CF_WH_THETA, CI_CC_MODE, CI_PAYLOAD, CI_RP_NS, CI_WH_CAP, CI_WH_L, CI_WH_MIN_JUMP,
                      CI_WH_SHORT, CI_WH_TAIL, CI_WH_TAU, FF_MAX_RATE, FF_RATE, FF_STEADY, FT_APATH, FT_BNECK, FT_DPATH,
                      FT_FLUID, FT_FLUID_CAP, FT_GROUP, FT_GROUP_PLAN, FT_NSAMP, FT_PART, FT_PNEXT, FT_REFLUID,
                      FT_RP_STAGE, FT_SIZE, FT_SND_NXT, FT_SND_UNA, FT_STATE, FT_WINDOW, FT_WSAMP, PT_IS_HOST, PT_KMIN,
                      PT_PNEXT, PT_QBYTES, PT_RATE, WP_FLOWS, WP_PORTS)
from .fluid import ack_ratio, go_fluid, thaw_fluid, wire_ratio
from .jump import (DRIFT_BUDGET, HOLD_EVERY, NEVER, SHARE_WANDER, half_change, quarters, settled_min_jump, share_cap,
                   stationary, window_stats)
from .partitions import ports_end

LOAD = 0  # parts.port_scratch columns: the port's load (bps, live flows' recent rates and fluid ones)
DATA = 1  # ... data paths crossing it
MARK = 2  # ... scratch mark (neighbourhood_changed: 1 the changing flow's data crosses it, 2 its ACKs)
FULL = 0.9  # a link this loaded may bound the rates of the flows crossing it
# a flow goes fluid at a mean that holds only for a plan of at least this many windows: each such
# plan, a sixteenth of its FCT, is followed by a new window, and waiting for a flat window may
# give a longer one (measured 2026-12-03 with the 100 us windows of tests/test_fluid.py, two flows
# out of and two into one host: 529 k events of the full run's 770 k when any plan was taken, 257 k
# when none was)
WANDER_WINDOWS = 2


@kernel
def thaw_group(net, flows, events, cfg, state, parts, f, early, again):
    """Fluid flow f and every flow that went fluid with it (its data group, ``FT_GROUP``) send
    packets again: a group is fluid as a whole or not at all, so that no live flow's data ever
    shares a link with a fixed reservation (``fluid_pass``).  ``again``: it thaws only because the
    load around it moved, so a short window may show its new level (``FT_REFLUID``)."""
    wp, ft = parts.table, flows.table
    group = ft[f, FT_GROUP]
    g = wp[ft[f, FT_PART], WP_FLOWS]
    while g >= 0:
        nx = ft[g, FT_PNEXT]
        if ft[g, FT_FLUID] != 0 and ft[g, FT_GROUP] == group:
            thaw_fluid(net, flows, events, cfg, state, g, early)
            ft[g, FT_REFLUID] = 1 if again else 0
        g = nx


@kernel
def neighbourhood_changed(net, flows, events, cfg, state, parts, k, f):
    """Flow f of partition k starts or finishes (``FT_STATE`` finished): the flows whose data shares a link
    with f's data restart their windows (their shares are about to move), and fluid ones thaw with
    their groups, as do fluid flows whose bottleneck (``FT_BNECK``) f's ACKs cross.  A finishing
    flow moves only the flows it shared a nearly full link with (``FULL``, as loaded at the last
    sample), or whose bottleneck it crossed: a link less loaded bounded none of their rates, but
    two HPCC flows settle their shared link at about 90% of its rate, ACKs and headers included, on
    the edge of ``FULL`` (measured 2026-12-03: a flow fluid at 41 Gb/s beside one that finished on
    such a link, at 89.7%, stayed at 41 where full simulation had it at 74, 35% late). A change
    elsewhere on their paths leaves them fluid: if it loads one of their links enough to matter, the
    next sample's watch thaws them (``fluid_pass``)."""
    wp, ft, paths, ports, mark = parts.table, flows.table, flows.paths, net.ports, parts.port_scratch
    starting = ft[f, FT_STATE] != FINISHED
    ft[f, FT_WSAMP] = 0
    for j in range(ft[f, FT_APATH], ports_end(flows, f)):
        mark[paths[j], MARK] = 2.0
    for j in range(ft[f, FT_DPATH], ft[f, FT_APATH]):
        p = paths[j]
        if starting or mark[p, LOAD] >= FULL * ports[p, PT_RATE]:
            mark[p, MARK] = 1.0
        else:  # a finish on a link less loaded: it moves only a fluid flow bound there
            mark[p, MARK] = 3.0
    g = wp[k, WP_FLOWS]
    while g >= 0:
        nx = ft[g, FT_PNEXT]
        shares = mark[ft[g, FT_BNECK], MARK] == 3.0  # data gone from the link that bounds it
        for j in range(ft[g, FT_DPATH], ft[g, FT_APATH]):
            if mark[paths[j], MARK] == 1.0:
                shares = True
                break
        if shares:
            ft[g, FT_WSAMP] = 0
            ft[g, FT_REFLUID] = 0
        if ft[g, FT_FLUID] != 0 and (shares or mark[ft[g, FT_BNECK], MARK] != 0.0):
            thaw_group(net, flows, events, cfg, state, parts, g, True, not shares)
        g = nx
    for j in range(ft[f, FT_DPATH], ports_end(flows, f)):
        mark[paths[j], MARK] = 0.0


@kernel
def _recent_rate(flows, parts, cfg, f):
    """Flow f's mean delivered rate over its last few samples (0 before its first one)."""
    sr, l = parts.samples, cfg.ints[CI_WH_L]
    n = flows.table[f, FT_NSAMP] - 1
    m = max(4, l // 4)
    if n < m:
        m = n
    if m <= 0:
        return 0.0
    s = 0.0
    for j in range(m):
        s += sr[f, (n - 1 - j) % l]
    return s / m


@kernel
def _cannot_contend(net, flows, cfg, parts, f):
    """Flow f has no share to settle, so a short window shows its steady state: no other flow's data
    crosses its switch ports (``parts.port_scratch[:, DATA]``) and none is slower than its NIC;
    under DCQCN, besides, it is at line rate with no queue ECN could mark on its path
    (``steadiness.settled``, for one flow).  Not merely alone in its data group: two HPCC flows on
    a link loaded below ``FULL`` still move each other (measured 2026-12-03 on 16 colliding 30 MB
    flows of a k=4 fat-tree: per-flow FCT error 1.35% mean with short windows for those, 0.51%
    without); and two DCQCN flows at line rate on one link, before its queue reaches the marking
    threshold, are about to be cut.  Nor may a queue above that threshold delay its ACKs: its
    delivered rate, which the samples measure, is then not what it sends (the same flows under
    DCQCN: one alone on its data path, sending at line rate, whose ACKs queued behind the others'
    data, was made fluid 112 us after it started at the 62 Gb/s its ACKs then showed, and ended 48%
    late)."""
    ft, paths, ports = flows.table, flows.paths, net.ports
    mode = cfg.ints[CI_CC_MODE]
    nic = ports[paths[ft[f, FT_DPATH]], PT_RATE]
    for j in range(ft[f, FT_DPATH], ft[f, FT_APATH]):
        p = paths[j]
        if ports[p, PT_IS_HOST] != 0:
            continue
        if ports[p, PT_RATE] < nic or parts.port_scratch[p, DATA] > 1.0:
            return False
        if mode == CC_DCQCN and ports[p, PT_QBYTES] > ports[p, PT_KMIN]:
            return False
    for j in range(ft[f, FT_APATH], ports_end(flows, f)):  # its ACKs come back without delay
        p = paths[j]
        if ports[p, PT_IS_HOST] == 0 and ports[p, PT_QBYTES] > ports[p, PT_KMIN]:
            return False
    if mode == CC_DCQCN:
        return flows.rates[f, FF_RATE] >= flows.rates[f, FF_MAX_RATE]
    return mode == CC_HPCC


@kernel
def _climbing(flows, cfg, f, n):
    """A DCQCN flow below line rate whose rate has not been cut over its window of ``n`` samples:
    it climbs back on its rate-increase timer, flat between the timer's steps and faster as its
    stages go on (additive, then hyper increase), whatever its window looks like, and is no steady
    state (measured 2026-12-03: 16 colliding 30 MB flows of a k=4 fat-tree under DCQCN, a flow made
    fluid at 63 Gb/s while it climbed, which in full ran at 93 on average, ended 48% late)."""
    if cfg.ints[CI_CC_MODE] != CC_DCQCN or flows.rates[f, FF_RATE] >= flows.rates[f, FF_MAX_RATE]:
        return False
    window = n * cfg.ints[CI_WH_TAU]
    return flows.table[f, FT_RP_STAGE] * cfg.ints[CI_RP_NS] >= window


@kernel
def _window_flat(flows, parts, cfg, f, n, resolution):
    """Flow f's last ``n`` samples are flat (as ``steadiness._flat``): (flat, mean, drift)."""
    sr, l, theta = parts.samples, cfg.ints[CI_WH_L], cfg.floats[CF_WH_THETA]
    oldest = (flows.table[f, FT_NSAMP] - 1 - n) % l
    s_old, s_new, lo, hi = window_stats(sr, f, oldest, n, l)
    s = s_old + s_new
    if s <= 0.0:
        return False, 0.0, 0.0
    mean = s / n
    change = half_change(s_old, s_new, n, resolution)
    flat = hi - lo - resolution <= theta * mean and change <= 0.25 * theta * mean
    return flat, mean, max(change, 0.0) / mean


@kernel
def _fluid_plan(flows, cfg, state, parts, f, n, resolution):
    """Whether flow f may become fluid at its window's mean rate, and for how long: as long as
    ``jump.freeze`` would jump a partition, to its tail, at most the first-jump cap (doubling while
    its rate holds; none after a short window) and the drift bound.  (ok, rate, plan_ns, cap);
    whether the plan is long enough is its group's to say (``_min_jump``).

    A flow that contends (a full window) but whose samples wander around a mean that holds (its
    window's quarter means within ``SHARE_WANDER`` x theta, halves within a quarter of that:
    ``jump.stationary``, the per-flow test of a partition's mean jump) may go at that mean, for at
    most ``releaser_share`` of its expected FCT (``jump.share_cap``): flows sharing a bottleneck
    under HPCC trade a few percent of it sample by sample (on ``tools/bench_contention.py``'s rings
    a flow's 100 us samples spread by 6% of their mean) and rarely pass the per-sample test."""
    ft, ff, ci, theta = flows.table, flows.rates, cfg.ints, cfg.floats[CF_WH_THETA]
    flat, r, drift = _window_flat(flows, parts, cfg, f, n, resolution)
    wander = False
    if not flat and n >= ci[CI_WH_L] and r > 0.0:
        s0, s1, s2, s3 = quarters(parts.samples, f, (ft[f, FT_NSAMP] - 1 - n) % ci[CI_WH_L], n, ci[CI_WH_L])
        wander = stationary(s0, s1, s2, s3, n, SHARE_WANDER * theta, 0.25 * SHARE_WANDER * theta, resolution)
        drift = 0.0  # bounded by the FCT share instead
    if not (flat or wander) or r <= 0.0:
        return False, 0.0, np.int64(0), np.int64(0)
    payload = ci[CI_PAYLOAD]
    una = ft[f, FT_SND_UNA]
    left = ft[f, FT_SIZE] - una - ((ft[f, FT_SND_NXT] - una) + 2 * payload + r * ci[CI_WH_TAIL] / 8e9)
    if left <= 0.0:
        return False, 0.0, np.int64(0), np.int64(0)
    jump = np.int64(left * 8e9 / r)
    prev = ff[f, FF_STEADY]
    confirmed = ft[f, FT_FLUID_CAP] > 0 and prev > 0.0 and abs(r - prev) <= 0.5 * theta * prev
    cap = 2 * ft[f, FT_FLUID_CAP] if confirmed else np.int64(ci[CI_WH_CAP])
    if (n < ci[CI_WH_L] and ft[f, FT_REFLUID] == 0) or cap > NEVER // 4:
        cap = NEVER // 4
    if drift > 0.0:
        limit = DRIFT_BUDGET * theta * (n - n // 2) * ci[CI_WH_TAU] / drift
        if limit < cap:
            cap = np.int64(limit)
    if wander:  # ... a sixteenth of its FCT, if that is worth the next window it will take
        cap = min(cap, share_cap(flows, cfg, state, f, ft[f, FT_SIZE] - una, r, HOLD_EVERY))
        if cap < WANDER_WINDOWS * ci[CI_WH_MIN_JUMP]:
            return False, 0.0, np.int64(0), np.int64(0)
    if jump > cap:
        jump = cap
    return True, r, jump, cap


@kernel
def _min_jump(cfg, n):
    """The shortest fluid jump worth taking after a window of ``n`` samples: as a partition's, one
    window if its shares had to settle, one short window if it cannot contend (``jump.freeze``)."""
    return cfg.ints[CI_WH_MIN_JUMP] if n >= cfg.ints[CI_WH_L] else settled_min_jump(cfg)


@kernel
def _bottleneck(net, flows, parts, f):
    """The port of flow f's data path that bounds its rate: the most loaded for its rate."""
    ft, paths, ports, ps = flows.table, flows.paths, net.ports, parts.port_scratch
    best, best_u = paths[ft[f, FT_DPATH]], -1.0
    for j in range(ft[f, FT_DPATH], ft[f, FT_APATH]):
        p = paths[j]
        u = ps[p, LOAD] / ports[p, PT_RATE]
        if u > best_u:
            best, best_u = p, u
    return best


@kernel
def _root(ft, f):
    """Flow f's data group during a fluid pass (a union-find over ``FT_GROUP``)."""
    while ft[f, FT_GROUP] != f:
        ft[f, FT_GROUP] = ft[ft[f, FT_GROUP], FT_GROUP]
        f = ft[f, FT_GROUP]
    return f


@kernel
def _data_groups(net, flows, parts, k):
    """Each live flow of partition k into its data group: flows whose data paths share a nearly
    full port (``FULL`` of its rate loaded, a NIC's included), transitively; the root of each is its
    smallest flow id.  A link less loaded bounds none of the rates crossing it, so they do not move
    each other there (the watch thaws a fluid group whose link fills up: ``fluid_pass``)."""
    wp, ft, paths, ports, ps = parts.table, flows.table, flows.paths, net.ports, parts.port_scratch
    owner = parts.scratch_ints  # per port: a live flow whose data crosses it
    p = wp[k, WP_PORTS]
    while p >= 0:
        owner[p] = -1
        p = ports[p, PT_PNEXT]
    f = wp[k, WP_FLOWS]
    while f >= 0:
        if ft[f, FT_FLUID] == 0:
            ft[f, FT_GROUP] = f
            ft[f, FT_GROUP_PLAN] = NEVER  # no plan yet (fluid_pass: the shortest of its flows')
        f = ft[f, FT_PNEXT]
    f = wp[k, WP_FLOWS]
    while f >= 0:
        if ft[f, FT_FLUID] == 0:
            for j in range(ft[f, FT_DPATH], ft[f, FT_APATH]):
                p = paths[j]
                if ps[p, LOAD] < FULL * ports[p, PT_RATE]:
                    continue
                if owner[p] < 0:
                    owner[p] = f
                else:
                    a, b = _root(ft, f), _root(ft, owner[p])
                    if a < b:
                        ft[b, FT_GROUP] = a
                    elif b < a:
                        ft[a, FT_GROUP] = b
        f = ft[f, FT_PNEXT]


@kernel
def fluid_pass(net, flows, events, cfg, state, parts, k):
    """At a rate sample of live partition k (not steady as a whole): thaw the fluid groups whose
    links' loads moved, and make fluid the data groups whose every flow is steady.

    A data group (``_data_groups``) is the unit: all its flows go fluid together and thaw together
    (``thaw_group``), so a link carries either packets of live flows' data or fixed reservations,
    never both; only ACKs cross between them.  A live HPCC flow beside a fixed reservation on its
    bottleneck settles below the share it would split with a live neighbour (each live flow's
    additive increase lifts the link above eta, and a fluid one no longer adds its own; measured in
    the skip-back case of test_wormhole: 44.9-45.6 Gb/s against 46.6), and on the AICB fat-tree
    iteration flows fluid one by one (a flow together with the live flows bound by its bottleneck
    only) left the live flows beside them 2.7% late on average.  On that iteration the data groups
    are small (1.7 flows on average, against 54 for a port partition: a NIC carries its own data
    and the ACKs of the flow it receives, which chains a whole ring into one partition), and each
    flow's group changes 3.1 times in its life against 129 for its partition."""
    wp, ft, ff, paths, ports, ps = parts.table, flows.table, flows.rates, flows.paths, net.ports, parts.port_scratch
    ci, theta = cfg.ints, cfg.floats[CF_WH_THETA]
    l, n_short = ci[CI_WH_L], ci[CI_WH_SHORT]
    resolution = ci[CI_PAYLOAD] * 8e9 / ci[CI_WH_TAU]
    wire, acks = wire_ratio(cfg), ack_ratio(cfg)
    p = wp[k, WP_PORTS]
    while p >= 0:
        ps[p, LOAD] = 0.0
        ps[p, DATA] = 0.0
        p = ports[p, PT_PNEXT]
    # each link's load: live flows' recent rates, fluid flows' reservations
    f = wp[k, WP_FLOWS]
    while f >= 0:
        r = ff[f, FF_STEADY] if ft[f, FT_FLUID] != 0 else _recent_rate(flows, parts, cfg, f)
        for j in range(ft[f, FT_DPATH], ft[f, FT_APATH]):
            ps[paths[j], LOAD] += r * wire
            ps[paths[j], DATA] += 1.0
        for j in range(ft[f, FT_APATH], ports_end(flows, f)):
            ps[paths[j], LOAD] += r * acks
        f = ft[f, FT_PNEXT]
    # a fluid group thaws when the load of a member's bottleneck, or of another of its links now
    # nearly full, moved by more than theta of the link's rate since it became fluid
    f = wp[k, WP_FLOWS]
    while f >= 0:
        nx = ft[f, FT_PNEXT]
        if ft[f, FT_FLUID] != 0:
            for j in range(ft[f, FT_DPATH], ft[f, FT_APATH]):
                p = paths[j]
                rate = ports[p, PT_RATE]
                moved = abs(ps[p, LOAD] - parts.watch[f, j - ft[f, FT_DPATH]]) > theta * rate
                if moved and (p == ft[f, FT_BNECK] or ps[p, LOAD] >= FULL * rate):
                    thaw_group(net, flows, events, cfg, state, parts, f, True, True)
                    break
        f = nx
    # each live flow's bottleneck, and whether it is steady over its window (full, or short if it
    # cannot contend or its group thawed only for the load around it, now taken up) for long enough
    # to go fluid; a group goes if every flow of it may, for the shortest of their jumps
    _data_groups(net, flows, parts, k)
    f = wp[k, WP_FLOWS]
    while f >= 0:
        ft[f, FT_WINDOW] = 0
        if ft[f, FT_FLUID] == 0:
            ft[f, FT_BNECK] = _bottleneck(net, flows, parts, f)
            root = _root(ft, f)
            if ft[root, FT_GROUP_PLAN] >= 0:
                b = ft[f, FT_BNECK]
                back = ft[f, FT_REFLUID] != 0 and ps[b, LOAD] >= FULL * ports[b, PT_RATE]
                n = n_short if back or _cannot_contend(net, flows, cfg, parts, f) else l
                ok = ft[f, FT_WSAMP] >= n and ft[f, FT_NSAMP] - 1 >= n and not _climbing(flows, cfg, f, n)
                if ok:
                    ok, _, jump, _ = _fluid_plan(flows, cfg, state, parts, f, n, resolution)
                if ok:
                    ft[f, FT_WINDOW] = n
                    ft[root, FT_GROUP_PLAN] = min(ft[root, FT_GROUP_PLAN], jump)
                else:
                    ft[root, FT_GROUP_PLAN] = -1
        f = ft[f, FT_PNEXT]
    f = wp[k, WP_FLOWS]
    while f >= 0:  # ... and no shorter than any of them needs
        if ft[f, FT_FLUID] == 0 and ft[f, FT_WINDOW] > 0:
            root = _root(ft, f)
            if ft[root, FT_GROUP_PLAN] < _min_jump(cfg, ft[f, FT_WINDOW]):
                ft[root, FT_GROUP_PLAN] = -1
        f = ft[f, FT_PNEXT]
    f = wp[k, WP_FLOWS]
    while f >= 0:
        if ft[f, FT_FLUID] == 0:
            root = _root(ft, f)
            if ft[root, FT_GROUP_PLAN] > 0:
                _, r, _, cap = _fluid_plan(flows, cfg, state, parts, f, ft[f, FT_WINDOW], resolution)
                ft[f, FT_GROUP] = root
                for j in range(ft[f, FT_DPATH], ft[f, FT_APATH]):  # what the watch compares with
                    parts.watch[f, j - ft[f, FT_DPATH]] = ps[paths[j], LOAD]
                go_fluid(net, flows, events, cfg, state, f, r, ft[root, FT_GROUP_PLAN], cap)
        f = ft[f, FT_PNEXT]
