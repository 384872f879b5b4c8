"""Network flows the memo turned into timers (``EngineView.make_timers``: an episode's, a recurring
flow's copies, marked ``FT_MEMO_TIMER``), and the live flows beside them.

A timer crosses no link: beside a flow its copies never met it would neither slow that flow nor be
slowed by it (measured on a 128-GPU DDP iteration on a rail fabric, 2026-12-03: ring steps taken as
timers while a pipeline send crossed their rail link ended 42% early, and the send, alone on the
link, 49% early).  So where a *foreign* flow (one the memo did not make a timer) is live on one of
a timer's ports (data or ACK path, either direction, as partitions are made), the timer is simulated
packet by packet (an episode's timers; a recurring flow's take their share of the links instead,
below):

* a timer due while a foreign flow is live there starts as a packet flow (``start``);
* a foreign flow that starts where timers run makes them packet flows from there on
  (``thaw_beside``): each is credited the bytes its timer had covered, in proportion to the time
  it ran, and goes on from line rate, as a new flow would;
* two timers of different groups (``FT_MEMO_TIMER``: what they were learned with, an episode's
  iteration, or recurring flows, all of one group) whose data would cross one link at once are both
  simulated: the later one starts as a packet flow and the running one is thawed.  An episode's
  flows were learned together, and their overlaps are in its times (the rule applied within an
  episode put a fat-tree iteration's mean FCT 1.6% short); another group's timers are not in them.
  The memo's packet flows of another group than a timer's count the same way, where their data
  meet (``PT_MEMO_DATA`` and its groups, counted by ``membership.count_data``): the flows of
  recurring classes too small to learn (``Recurring.small``, a pipeline send: a group of their
  own) thaw the timers whose data leave a port theirs leave, and a timer due where one's data
  leave starts as a packet flow.

Recurring flows' timers (the negative group) are *paced*: each was learned at its alone pace
(``memo/recurring.py``: a copy's time, moment by moment, at its pace beside the n flows' data that
left the busiest port its data crossed), and covers it at ``pace``, ``min(1, gain / n)`` (1 alone),
n the flows whose data leave the busiest port its own data leaves (``TM_SHARERS``: running timers,
``PT_TIMERS_DATA``, and packet flows, ``PT_LIVE_DATA``), its end moved whenever one starts or ends
there (``repace_beside``): shares of the busiest link, as a flow-level model would, n flows getting
together ``gain`` (``FF_PACE_GAIN``, fitted by the memo on the run's copies) times what one gets
alone there.  And it takes that share of its links as a fluid flow does (``_reserve``, ``share``):
the packet flows beside it get the rest, and HPCC's INT counts its bytes, so that the memo's packet
flows beside it (a class's first copies, a timer simulated after all) feel it as it feels them; a
foreign flow still makes it a packet flow, as above (without that rule the 128-GPU DDP fat-tree
ran 12-13x faster than full, but the colliding rings of ``tests/test_recurring.py`` went beyond
their noise floor).  Two 10 MB flows into one host,
one a paced timer and one of the memo's packet flows, end within 1.5% of full simulation either way
round (``tests/test_recurring.py``).  A packet flow that starts beside running timers is a
newcomer, and under HPCC a newcomer keeps more than an equal share: the timers whose data leave a
port its data leave yield it a newcomer's share there (``yield_to``) until a packet flow beside them
ends; held at equal shares, two timers left a 3.3 MB newcomer 23% late.
Reserving the mean rate of its alone pace (75 Gb/s for a 3.3 MB copy, whose start and end are
slower) made the packet flow beside it 4-8% slow; a share in payload rather than wire bytes, 9%.
Without any reservation, on the 128-GPU DDP
fat-tree iteration (2026-12-03), copies simulated beside timers (the memo's own, which are not
foreign) and the timers beside them each ran as if the other were not there: mean FCT -6.7%.
(Before pacing, each class was a group of its own with its copies' raw times, and two classes'
timers on one link were simulated: on a fat-tree, every colliding copy.)  An episode's timers keep
their times and take no share: their overlaps are in their times.

The memo's own timers simulated after all are not foreign: they are the pattern the timers were
learned in (a ring's steps share their hosts' ports through their ACKs), and counting them made
every later step of that ring simulated too (all 107,008 copies of the iteration above).  The
flows of recurring classes too small to learn are foreign only where their data meet a timer's
(above): beside a timer's ACKs, or on a port only its ACKs cross, the timer runs at its share.
On the 128-GPU DDP fat-tree (HPCC) the 64 last-micro-batch gradient sends ran beside paced timers
that held their steady share from the sends' first byte, where a ring step in full simulation
restarts at line rate every 350 us and squeezes a long send each time: the sends erred by -51%
to +31% (a 1-ns noise draw: -7% to +8%) and each moved a stage-0 rank's DP timeline by
milliseconds; foreign where their data meet, they err within 11% (``DEVELOPERS.md``, "Recurring
flows").  Ports count the foreign flows live on them (``PT_FOREIGN``, ``membership``), the timers
running (``PT_TIMERS``) and those of them whose data crosses them (``PT_TIMERS_DATA``); the timers
running are listed in ``parts.timers``.

A timer *aside* (``FT_TIMER_ASIDE``, ``EngineView.make_timers(aside=True)``) is a flow that took
next to nothing of its links where its time was taken, so that the flows beside it ran as if it
were not there: a pipeline send among ring flows (on the 128-GPU DDP fat-tree under HPCC a 20 MB
send took 4.7 Gb/s beside two ring flows that took 38 Gb/s each; the memo learns rings without
counting it, ``Recurring._flows_on``).  It holds its time, as an episode's does (its overlaps are
in it), and is no one's sharer: it does not count in ``PT_TIMERS_DATA``, so neither its data nor
theirs make it or the memo's flows simulated; only a foreign flow does, as for any timer.  It
reserves the mean rate its time had (``aside_bps``), so that the packet flows beside it still
meet its bytes (where sends take 40% of their line rate, ring steps simulated beside sends that
reserved nothing ran fast); paced timers do not count it, as their classes were learned without
the sends.
"""

import numpy as np

from ..kernel import kernel
from ..layout import (CC_HPCC, CF_U_TARGET, CI_CC_MODE, CI_PAYLOAD, FF_PACE_GAIN, FT_APATH, FT_BASE_RTT, FT_BYTES_RX, FT_DPATH,
                      FT_MEMO_TIMER, FT_PKTS_SENT, FT_RX_EXPECTED, FT_RX_LAST_NACK, FT_SIZE, FT_SKIPPED, FT_SND_NXT, FT_SND_UNA,
                      FT_START, FT_STATE, FT_TIMER_ASIDE, FT_TIMER_AT, FT_VIRTUAL, PT_FOREIGN, PT_LIVE_DATA, PT_MEMO_DATA,
                      PT_MEMO_DATA_GROUPS, PT_MEMO_DATA_GROUPS_SQ, PT_PART, PT_PEER, PT_RATE, PT_TIMERS, PT_TIMERS_DATA,
                      PT_TIMERS_GROUPS, PT_TIMERS_GROUPS_SQ, ST_NOW, ST_WH_EV_SKIPPED, ST_WH_TIMERS, ST_WH_TIMERS_THAWED,
                      TM_ALONE, TM_BPS, TM_DONE, TM_FLOW, TM_LIVE, TM_SHARERS, TM_SINCE, TM_YIELD, WP_STATE)
from ..nic import start_flow
from ..queue import q_remove, q_set
from ..share import accrue, reserve
from ..slots import T_START, next_seq, qp_slot
from .fluid import ack_ratio, wire_ratio
from .jump import thaw
from .membership import count_data, data_meets, flow_started
from .partitions import FROZEN, ports_end


@kernel(inline="always")
def _count(net, flows, f, column, by):
    """Every port flow f's data and ACKs cross (either direction) counts ``by`` more in ``column``."""
    paths, ports = flows.paths, net.ports
    for j in range(flows.table[f, FT_DPATH], ports_end(flows, f)):
        ports[paths[j], column] += by
        ports[ports[paths[j], PT_PEER], column] += by


@kernel(inline="always")
def _crosses(net, flows, f, column):
    """Some port flow f's data or ACKs cross (either direction) counts something in ``column``."""
    paths, ports = flows.paths, net.ports
    for j in range(flows.table[f, FT_DPATH], ports_end(flows, f)):
        if ports[paths[j], column] > 0 or ports[ports[paths[j], PT_PEER], column] > 0:
            return True
    return False


@kernel
def _unskip(flows, cfg, state, f, credited):
    """Flow f is simulated after all, ``credited`` bytes of it as the timer ran: its packets' events
    are no longer counted as avoided."""
    ft = flows.table
    payload = cfg.ints[CI_PAYLOAD]
    hops = ports_end(flows, f) - ft[f, FT_DPATH]
    left = ft[f, FT_SIZE] - credited
    state[ST_WH_EV_SKIPPED] -= (left + payload - 1) // payload * 2 * hops
    ft[f, FT_SKIPPED] = credited
    ft[f, FT_VIRTUAL] = -1
    ft[f, FT_TIMER_ASIDE] = 0  # a packet flow now


@kernel(inline="always")
def _leaving(ports, p):
    """Flows whose data leave port p: running timers' and packet flows'."""
    return ports[p, PT_TIMERS_DATA] + ports[p, PT_LIVE_DATA]


@kernel(inline="always")
def _sharers(net, flows, f):
    """Flows whose data leaves the busiest port flow f's data leaves, running timers and packet
    flows alike (at least 1)."""
    ft, paths, ports = flows.table, flows.paths, net.ports
    most = 1
    for j in range(ft[f, FT_DPATH], ft[f, FT_APATH]):
        most = max(most, _leaving(ports, paths[j]))
    return most


@kernel
def _reserve(net, flows, events, cfg, state, parts, f, was_bps, bps):
    """Running timer f takes ``bps`` of its links instead of ``was_bps`` (payload rates), as a fluid flow does
    (``share``): packets' data get the rest of each link of its data path, and HPCC's INT counts its
    bytes there, its ACKs' share on its ACK path likewise.  A frozen partition there thaws first: its
    jump was planned on the links as they were."""
    ft, paths, ports = flows.table, flows.paths, net.ports
    now = state[ST_NOW]
    for j in range(ft[f, FT_DPATH], ports_end(flows, f)):
        p = paths[j]
        k = ports[p, PT_PART]
        if k >= 0 and parts.table[k, WP_STATE] == FROZEN:
            thaw(net, flows, events, cfg, state, parts, k)
        ratio = wire_ratio(cfg) if j < ft[f, FT_APATH] else ack_ratio(cfg)
        share = np.int64(bps * ratio) - np.int64(was_bps * ratio)  # what it holds stays exact to the bit
        reserve(net, p, share)
        accrue(net, p, share, now)


@kernel(inline="always")
def _share_bps(net, flows, cfg, f):
    """The payload rate running timer f takes of its links: its equal share (in wire bytes) of the
    tightest link of its data path, at the utilisation its CC holds a link to (HPCC's target; all of
    it otherwise).  Not
    its alone pace's mean rate, which its start and end make lower (a 3.3 MB copy alone: 75 Gb/s
    of 100): a packet flow beside a timer reserving that half got 57 Gb/s where both had 47.5."""
    ft, paths, ports = flows.table, flows.paths, net.ports
    u = cfg.floats[CF_U_TARGET] if cfg.ints[CI_CC_MODE] == CC_HPCC else 1.0
    least = np.int64(-1)
    for j in range(ft[f, FT_DPATH], ft[f, FT_APATH]):
        p = paths[j]
        bps = np.int64(ports[p, PT_RATE] * u / max(_leaving(ports, p), 1))
        if least < 0 or bps < least:
            least = bps
    return np.int64(max(least, 0) / wire_ratio(cfg))  # a payload rate: its packets' headers take the rest


MILLION = 1_000_000  # a timer's TM_YIELD when it holds all of its share
NEWCOMER_SHARE = 0.43  # of a link's target rate, a flow joining two or more there keeps (HPCC; newcomer_share), ...
NEWCOMER_FADE_NS = 1_875_000  # ... its lead over an equal share fading in this time over the flows it meets upstream


@kernel(inline="always")
def pace(flows, f, sharers, held):
    """How fast paced timer f covers its alone time beside ``sharers`` flows (itself included) on its
    busiest link, holding ``held`` of its share (1 unless it yielded to a packet flow, ``yield_to``):
    1 alone, else its share of the link against its rate alone, at most 1.  n flows
    on a link get together ``FF_PACE_GAIN`` times what one of them gets alone there: where a flow
    alone does not fill its link (a ring's flow, whose NIC also carries the ACKs of the flow it
    receives), flows sharing it fill it better (a gain above 1); where sharing costs (DCQCN's rate
    cuts), worse (below 1).  The memo fits the gain on the run's own copies
    (``memo/recurring.py``: 1.12 on the 128-GPU DDP fat-tree under HPCC; two flows alone on a
    leaf-spine link take 1.99 times one's time, a gain of 1)."""
    return (1.0 if sharers <= 1 else min(1.0, flows.rates[f, FF_PACE_GAIN] / sharers)) * held


@kernel(inline="always")
def _paced(flows, f):
    """Timer f covers its alone time at its share (a recurring flow's), rather than holding its
    time (an episode's, one aside)."""
    return flows.table[f, FT_MEMO_TIMER] < 0 and flows.table[f, FT_TIMER_ASIDE] == 0


@kernel(inline="always")
def _covered(parts, flows, state, i):
    """Running timer i's time covered by now, at its alone pace (ns)."""
    row = parts.timers[i]
    pace_now = pace(flows, row[TM_FLOW], row[TM_SHARERS], row[TM_YIELD] / MILLION)
    return row[TM_DONE] + np.int64((state[ST_NOW] - row[TM_SINCE]) * pace_now)


@kernel(inline="always")
def _stretched(flows, f, alone_ns, sharers, held):
    """Time paced timer f takes to cover ``alone_ns`` of its alone time beside ``sharers`` flows,
    holding ``held`` of its share."""
    return np.int64(max(alone_ns, 0) / pace(flows, f, sharers, held))


@kernel(inline="always")
def _live(net, flows, f):
    """Packet flows on the ports flow f's data leave, summed over them."""
    ft, paths, ports = flows.table, flows.paths, net.ports
    live = 0
    for j in range(ft[f, FT_DPATH], ft[f, FT_APATH]):
        live += ports[paths[j], PT_LIVE_DATA]
    return live


@kernel
def yield_to(net, flows, events, cfg, state, parts, g):
    """Packet flow g has just started (counted on its ports): under HPCC, the paced timers whose data
    leave a port g's data leave give it a newcomer's share there.  HPCC lets a flow that starts
    beside flows already cut to their shares keep more than its own share for the rest of its life
    (it starts at line rate, and every flow's cut is in proportion to its rate): measured in full
    simulation on a leaf-spine, a 1-8 MB flow joining 2-4 flows into one host took 35-41% of the
    link's target rate throughout (``NEWCOMER_SHARE``), where an equal share was 20-33%; beside one
    flow it takes its half.  How long it keeps it depends on whom it meets before the link they share
    (``newcomer_share``).  Held at equal shares, two timers left a 3.3 MB newcomer 23% late
    (``tests/test_recurring.py``).  Each timer there holds at most what the others get when g has
    that share (an equal part of the rest), a part of its equal share (``TM_YIELD``) that
    ``repace_beside`` applies from now, until a packet flow beside it ends."""
    if cfg.ints[CI_CC_MODE] != CC_HPCC:
        return
    ft, paths, ports = flows.table, flows.paths, net.ports
    u = cfg.floats[CF_U_TARGET]
    for i in range(state[ST_WH_TIMERS]):
        row = parts.timers[i]
        f = row[TM_FLOW]
        if not _paced(flows, f) or row[TM_BPS] <= 0 or state[ST_NOW] - ft[f, FT_START] < ft[f, FT_BASE_RTT]:
            continue  # a timer that started with g has not cut its rate yet: no newcomer there
        most = np.inf  # payload rate it may hold beside g
        for j in range(ft[f, FT_DPATH], ft[f, FT_APATH]):
            p = paths[j]
            for k in range(ft[g, FT_DPATH], ft[g, FT_APATH]):
                if paths[k] == p:
                    others = _leaving(ports, p) - 1  # all but g
                    kept = newcomer_share(net, flows, cfg, g, p)
                    most = min(most, u * ports[p, PT_RATE] * (1.0 - kept) / max(others, 1) / wire_ratio(cfg))
                    break
        share = _share_bps(net, flows, cfg, f)  # its equal share with g counted
        held = MILLION if most >= share else np.int64(most / max(share, 1) * MILLION)
        if held < row[TM_YIELD]:
            _repace(flows, events, cfg, state, parts, i, _sharers(net, flows, f), held)


@kernel(inline="always")
def newcomer_share(net, flows, cfg, g, p):
    """The share of port p's target rate (wire bytes) packet flow g, just started there beside other
    flows, keeps on average over its life under HPCC.  It starts at line rate where the others were
    cut to their shares, and every flow's cut is in proportion to its rate, so it keeps a lead
    (``NEWCOMER_SHARE``).  The lead lasts where p is the one link g shares with them, and fades
    where g also meets other flows on a link before p (measured in full simulation: beside four
    flows into one host an 8 MB newcomer keeps 39% of the link on a leaf-spine of 8 spines, 22-26%
    on one of 2 spines, where it meets three of them on a spine link): ``e + (x0 - e) exp(-t k /
    NEWCOMER_FADE_NS)``, e an equal share at p, k the most flows g meets on one link before p,
    averaged over the time g then takes (at that mean share: a fixed point).  The fade was fitted on
    full simulation of 114 newcomers (``tools/bench_newcomer.py``: 1-8 MB joining 2-4 flows into one
    host on leaf-spines of 2 and 8 spines and the k=8 fat-tree, in and across pods), the lead (0.43)
    on the timers themselves (their newcomer takes about 5% less than they leave it).  The base RTT
    does not set the fade (DEVELOPERS.md, "Newcomers")."""
    ft, paths, ports = flows.table, flows.paths, net.ports
    there = _leaving(ports, p)  # g included
    equal = 1.0 / max(there, 1)
    if NEWCOMER_SHARE <= equal:
        return equal
    upstream = 0  # the most other flows g meets on one link of its data path but p
    for j in range(ft[g, FT_DPATH], ft[g, FT_APATH]):
        q = paths[j]
        if q != p:
            upstream = max(upstream, _leaving(ports, q) - 1)
    if upstream <= 0:
        return NEWCOMER_SHARE
    tau = NEWCOMER_FADE_NS / upstream
    target = cfg.floats[CF_U_TARGET] * ports[p, PT_RATE] / wire_ratio(cfg)  # payload bits per second at a share of 1
    share = NEWCOMER_SHARE
    for _ in range(8):  # its time at its mean share, and its mean share over that time
        life = ft[g, FT_SIZE] * 8e9 / (share * target)
        share = equal + (NEWCOMER_SHARE - equal) * tau / life * (1.0 - np.exp(-life / tau))
    return share


@kernel
def _repace(flows, events, cfg, state, parts, i, sharers, held):
    """Running paced timer i goes on from now beside ``sharers`` flows, holding ``held`` millionths of
    its share: its time covered so far kept, its end (its start slot's second firing) moved."""
    row = parts.timers[i]
    row[TM_DONE] = _covered(parts, flows, state, i)
    row[TM_SINCE] = state[ST_NOW]
    row[TM_SHARERS] = sharers
    row[TM_YIELD] = held
    f = row[TM_FLOW]
    end = state[ST_NOW] + _stretched(flows, f, row[TM_ALONE] - row[TM_DONE], sharers, held / MILLION)
    q_set(events, qp_slot(cfg, f, T_START), end, next_seq(state))


@kernel
def repace_beside(net, flows, events, cfg, state, parts):
    """A timer or a packet flow started or ended: every paced timer whose sharers changed, or the
    part of its share it holds (``yield_to``; all of it again once a packet flow beside it ended),
    goes on at its new share from now, its end (its start slot's second firing) moved to match, and
    its reservation of its links changed to its new rate."""
    for i in range(state[ST_WH_TIMERS]):
        row = parts.timers[i]
        g = row[TM_FLOW]
        if not _paced(flows, g):  # an episode's or one aside: its time holds its overlaps
            continue
        sharers = _sharers(net, flows, g)
        live = _live(net, flows, g)
        held = MILLION if live < row[TM_LIVE] else row[TM_YIELD]
        row[TM_LIVE] = live
        if sharers != row[TM_SHARERS] or held != row[TM_YIELD]:
            _repace(flows, events, cfg, state, parts, i, sharers, held)
        bps = np.int64(_share_bps(net, flows, cfg, g) * (held / MILLION))
        if bps != row[TM_BPS]:
            _reserve(net, flows, events, cfg, state, parts, g, row[TM_BPS], bps)
            row[TM_BPS] = bps


@kernel
def _stop_running(net, flows, events, cfg, state, parts, f):
    """Timer f is no longer running: its links given back, off its ports' counts and out of the list."""
    ft = flows.table
    if parts.timers[ft[f, FT_TIMER_AT], TM_BPS] != 0:
        _reserve(net, flows, events, cfg, state, parts, f, parts.timers[ft[f, FT_TIMER_AT], TM_BPS], 0)
    _count(net, flows, f, PT_TIMERS, -1)
    if ft[f, FT_TIMER_ASIDE] == 0:
        count_data(net, flows, f, PT_TIMERS_DATA, PT_TIMERS_GROUPS, PT_TIMERS_GROUPS_SQ, -1)
    i = ft[f, FT_TIMER_AT]
    n = state[ST_WH_TIMERS] - 1
    last = parts.timers[n, TM_FLOW]
    for col in range(parts.timers.shape[1]):
        parts.timers[i, col] = parts.timers[n, col]
    ft[last, FT_TIMER_AT] = i
    ft[f, FT_TIMER_AT] = -1
    state[ST_WH_TIMERS] = n


@kernel
def start(net, flows, events, cfg, state, parts, f):
    """Flow f's timer slot fired (``FT_VIRTUAL`` >= 0): if it is one of the memo's timers, it
    starts running, or, a foreign flow being live on its ports, becomes a packet flow; or it ends.
    A paced timer's ``FT_VIRTUAL`` becomes its time at its share now (``dag.virtual_flow_event``
    sets its end from it)."""
    ft = flows.table
    if ft[f, FT_MEMO_TIMER] == 0:  # a compute op or an intra-server copy
        return
    if ft[f, FT_STATE] != 0:  # its end
        _stop_running(net, flows, events, cfg, state, parts, f)
        repace_beside(net, flows, events, cfg, state, parts)
        return
    aside = ft[f, FT_TIMER_ASIDE] != 0
    if _crosses(net, flows, f, PT_FOREIGN) or (not aside and (
            data_meets(net, flows, f, PT_TIMERS_DATA, PT_TIMERS_GROUPS, PT_TIMERS_GROUPS_SQ)
            or data_meets(net, flows, f, PT_MEMO_DATA, PT_MEMO_DATA_GROUPS, PT_MEMO_DATA_GROUPS_SQ))):
        _unskip(flows, cfg, state, f, 0)
        return
    _count(net, flows, f, PT_TIMERS, 1)
    if not aside:
        count_data(net, flows, f, PT_TIMERS_DATA, PT_TIMERS_GROUPS, PT_TIMERS_GROUPS_SQ, 1)
    n = state[ST_WH_TIMERS]
    row = parts.timers[n]
    paced = _paced(flows, f)
    row[TM_FLOW] = f
    row[TM_ALONE] = ft[f, FT_VIRTUAL]
    row[TM_DONE] = 0
    row[TM_SINCE] = state[ST_NOW]
    row[TM_SHARERS] = _sharers(net, flows, f) if paced else 1
    row[TM_BPS] = 0
    row[TM_YIELD] = MILLION
    row[TM_LIVE] = _live(net, flows, f)
    ft[f, FT_VIRTUAL] = _stretched(flows, f, row[TM_ALONE], row[TM_SHARERS], 1.0) if paced else row[TM_ALONE]
    ft[f, FT_TIMER_AT] = n
    state[ST_WH_TIMERS] = n + 1
    if paced:  # it takes its share of its links
        row[TM_BPS] = _share_bps(net, flows, cfg, f)
    else:  # it holds the mean rate its time had: the packet flows beside it meet it (``aside_bps``)
        row[TM_BPS] = aside_bps(flows, f, row[TM_ALONE])
    if row[TM_BPS] > 0:
        _reserve(net, flows, events, cfg, state, parts, f, 0, row[TM_BPS])
    if not aside:  # one aside is no one's sharer
        repace_beside(net, flows, events, cfg, state, parts)


@kernel(inline="always")
def aside_bps(flows, f, time_ns):
    """The payload rate a timer aside holds of its links: its size over its time to its last byte
    received, the mean rate it had where that time was taken (an episode's timer holds none).  What it shares
    with nobody is its *time* (no one's sharer, never repaced); its bytes still load its links, so a
    packet flow simulated beside it gets the rest, as beside the flow it stands for.  Without it, on
    the two-stage replay of ``tests/test_recurring.py``, whose sends take 40% of their line rate,
    the ring steps simulated beside sends aside ran fast (DEVELOPERS.md, "The first iteration's
    sends, rescaled")."""
    if flows.table[f, FT_TIMER_ASIDE] == 0:  # an episode's: its overlaps with its own group are in its times
        return np.int64(0)
    return np.int64(flows.table[f, FT_SIZE] * 8e9 / max(time_ns, 1))


@kernel
def running_beside(net, flows, g):
    """Flow g, starting as a packet flow, meets running timers it must not run beside: on any port
    if it is foreign, on its data's ports if it is one of the memo's (a timer simulated after all)."""
    if flows.table[g, FT_MEMO_TIMER] == 0:
        return _crosses(net, flows, g, PT_TIMERS)
    return data_meets(net, flows, g, PT_TIMERS_DATA, PT_TIMERS_GROUPS, PT_TIMERS_GROUPS_SQ)


@kernel
def _share_a_port(net, flows, f, g, data_only):
    """Flows f and g cross a common port: their data leaves from one port (``data_only``), or any
    port of their data and ACK paths, either direction."""
    ft, paths, ports = flows.table, flows.paths, net.ports
    f_end = ft[f, FT_APATH] if data_only else ports_end(flows, f)
    g_end = ft[g, FT_APATH] if data_only else ports_end(flows, g)
    for i in range(ft[f, FT_DPATH], f_end):
        p = paths[i]
        q = p if data_only else ports[p, PT_PEER]
        for j in range(ft[g, FT_DPATH], g_end):
            r = paths[j]
            if r == p or r == q:
                return True
    return False


@kernel
def _to_packets(net, flows, events, cfg, state, parts, f):
    """Running timer f becomes a packet flow now, keeping its start, credited the bytes its timer
    has covered (its size times the share of its time to the last byte received it has covered, in
    whole packets, at least one packet left), from line rate as a new flow."""
    ft = flows.table
    begun = ft[f, FT_START]
    payload = cfg.ints[CI_PAYLOAD]
    i = ft[f, FT_TIMER_AT]
    covered = _covered(parts, flows, state, i) / max(parts.timers[i, TM_ALONE], 1)
    b = np.int64(ft[f, FT_SIZE] * covered) // payload * payload
    if b > ft[f, FT_SIZE] - payload:
        b = max(ft[f, FT_SIZE] - payload, 0) // payload * payload
    _stop_running(net, flows, events, cfg, state, parts, f)
    repace_beside(net, flows, events, cfg, state, parts)
    q_remove(events, qp_slot(cfg, f, T_START))
    _unskip(flows, cfg, state, f, b)
    ft[f, FT_STATE] = 0
    state[ST_WH_TIMERS_THAWED] += 1
    flow_started(net, flows, events, cfg, state, parts, f)
    start_flow(net, flows, cfg, state, f)
    ft[f, FT_START] = begun
    for col in (FT_SND_NXT, FT_SND_UNA, FT_RX_EXPECTED, FT_BYTES_RX, FT_RX_LAST_NACK):
        ft[f, col] += b
    ft[f, FT_PKTS_SENT] += b // payload


@kernel
def thaw_beside(net, flows, events, cfg, state, parts, g):
    """Flow g has just started (``running_beside``): the memo's timers running beside it become
    packet flows (not, beside one of the memo's flows, a timer aside)."""
    group = flows.table[g, FT_MEMO_TIMER]
    data_only = group != 0
    for i in range(state[ST_WH_TIMERS] - 1, -1, -1):  # a timer taken out is replaced by the last one
        f = parts.timers[i, TM_FLOW]
        meets = not data_only or (flows.table[f, FT_MEMO_TIMER] != group and flows.table[f, FT_TIMER_ASIDE] == 0)
        if meets and _share_a_port(net, flows, f, g, data_only):
            _to_packets(net, flows, events, cfg, state, parts, f)
