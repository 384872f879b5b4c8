"""The link monitor: every switch egress port's queue, transmitted bytes and PFC state, sampled in
the core at a fixed interval (``links.parquet``), and the reference's queue-length histogram
(``QLEN_MON_FILE``, ``qlen.txt``).

One slot, ``MONITOR`` (the last of the queue, ``slots.monitor_slot``), fires at the earlier of the
next link sample and the next histogram sample.  It only reads the network, and it leaves no trace
in the simulation: its sequence number ``MON_SEQ`` is above every packet and wormhole event's (so
it runs after everything else of its nanosecond, and never takes a number from ``ST_SEQ``), and it
sets neither the clock (``ST_NOW``), nor ``ST_CUR_SEQ``, nor the event counters: a monitored run's
outputs are bit-identical to an unmonitored one's.

A row of ``log`` is one sample: its time, then ``MV_*`` values per monitored port (``ports``):
queue bytes (all classes), cumulative bytes carried, the part of those not simulated packet by
packet (jumps and fluid flows, wormhole mode), flags (bits 0-7 the paused queues, ``FLAG_FROZEN``
its partition is being fast-forwarded) and the egress bytes of each class of ``classes``.  When
``log`` (or ``hist``) is full the event puts itself back and asks Python to grow it (the run
returns ``RUN_GROW``, as for the packet pool); at each histogram dump it asks Python to copy the
histogram (``SERVE_DUMP``).

Wormhole mode: a frozen port keeps its queue (nothing moves in a frozen partition), and the bytes
its link carries advance at the jump's steady rates: ``est`` is what the jump under way has
carried by the sample (whole packets, computed as ``jump._credit`` will credit them), and at thaw
``wormhole.credit.credit_jump`` adds what was credited to ``PT_JUMP_BYTES``; fluid flows' shares are in
``share.carried_bytes``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .kernel import entry, kernel
from .layout import (CI_WH, FT_APATH, FT_DPATH, FT_FLUID,
                     FT_PNEXT, NQ, PT_FROZEN, PT_JUMP_BYTES, PT_PART, PT_QBYTES, PT_TXBYTES,
                     QT_EGRESS, QT_PAUSED, WP_FLOWS, WP_T0, WP_TCONV)
from .queue import QM_COUNT, QM_HEAP_N, q_set
from .tables import Monitor
from .share import carried_bytes
from .wormhole.credit import jump_credit, wire_bytes
from .wormhole.partitions import ports_end

# above WH_SEQ_BASE + any wormhole event: last of its nanosecond (an int64, not a literal, so that
# q_set is not compiled once more for it)
MON_SEQ = np.int64(1 << 62)

# mon.ints
MN_INTERVAL = 0  # ns between link samples
MN_LINKS = 1  # 1 while link sampling is on
MN_NEXT = 2  # time of the next link sample
MN_ROWS = 3  # samples in log
MN_Q_ON = 4  # 1 while the qlen histogram samples (QLEN_MON_START .. the first sample at or after QLEN_MON_END)
MN_Q_NEXT = 5
MN_Q_END = 6
MN_Q_STEP = 7  # ns between histogram samples (third.cc: qlen_mon_interval, 100 ns)
MN_Q_DUMP = 8  # the histogram is written at multiples of this time (third.cc: qlen_dump_interval, 100 ms)
MN_SERVE = 9  # what Python must do before the run goes on: SERVE_* bits
MN_DUMP_T = 10  # time of the dump to copy
MN_LAST = 11  # time of the last link sample
MN_T0 = 12  # start of the first sampling interval
MN_LEN = 13
SERVE_LOG = 1  # log is full
SERVE_HIST = 2  # a queue outgrew hist's bins
SERVE_DUMP = 4  # copy hist as the dump at MN_DUMP_T

# values per port in a log row
MV_QBYTES = 0
MV_TX = 1  # bytes carried since the start (packets, fluid shares, jumps)
MV_SKIPPED = 2  # ... of which fast-forwarded (jumps and fluid shares)
MV_FLAGS = 3
MV_CLASS0 = 4  # then the egress bytes of each monitored class
FLAG_FROZEN = 1 << NQ
QLEN_BIN = 1000  # third.cc's QlenDistribution: bins of 1000 bytes


@kernel
def _jump_so_far(flows, cfg, parts, k, f, t):
    """Payload bytes frozen partition k's jump has carried of flow f by ``t``: what ``jump._credit``
    would credit if the jump ended now (so the estimate never exceeds the credit at thaw)."""
    return jump_credit(flows, cfg, f, t - parts.table[k, WP_T0], parts.table[k, WP_TCONV])


@kernel
def _estimate_jumps(net, flows, cfg, parts, mon, t, stamp):
    """``est``: per port, the bytes the jumps under way have carried by ``t``."""
    est, ft, paths = mon.est, flows.table, flows.paths
    est[:] = 0
    for m in range(mon.ports.shape[0]):
        p = mon.ports[m]
        if net.ports[p, PT_FROZEN] == 0:
            continue
        k = net.ports[p, PT_PART]
        if mon.seen[k] == stamp:
            continue
        mon.seen[k] = stamp
        f = parts.table[k, WP_FLOWS]
        while f >= 0:
            if ft[f, FT_FLUID] == 0:  # a fluid flow's bytes are its links' reservation (carried_bytes)
                data, ack = wire_bytes(cfg, _jump_so_far(flows, cfg, parts, k, f, t))
                for j in range(ft[f, FT_DPATH], ft[f, FT_APATH]):
                    est[paths[j]] += data
                for j in range(ft[f, FT_APATH], ports_end(flows, f)):
                    est[paths[j]] += ack
            f = ft[f, FT_PNEXT]


@kernel
def _sample_links(net, flows, cfg, parts, mon, t):
    mi, ports, queues = mon.ints, net.ports, net.queues
    s = mi[MN_ROWS]
    row = mon.log[s]
    row[0] = t
    wh = cfg.ints[CI_WH] != 0
    if wh:
        _estimate_jumps(net, flows, cfg, parts, mon, t, s + 1)
    width = MV_CLASS0 + mon.classes.shape[0]
    for m in range(mon.ports.shape[0]):
        p = mon.ports[m]
        b = 1 + m * width
        carried = carried_bytes(net, cfg, p, t) + ports[p, PT_JUMP_BYTES]
        if wh:
            carried += mon.est[p]
        row[b + MV_QBYTES] = ports[p, PT_QBYTES]
        row[b + MV_TX] = carried
        row[b + MV_SKIPPED] = carried - ports[p, PT_TXBYTES]
        flags = FLAG_FROZEN if ports[p, PT_FROZEN] != 0 else 0
        mmu = 0  # queue 0 (ACKs, PFC frames) is outside the MMU: the rest of PT_QBYTES
        for q in range(NQ):
            if queues[p * NQ + q, QT_PAUSED] != 0:
                flags |= 1 << q
            if q != 0:
                mmu += queues[p * NQ + q, QT_EGRESS]
        row[b + MV_FLAGS] = flags
        for j in range(mon.classes.shape[0]):
            c = mon.classes[j]
            row[b + MV_CLASS0 + j] = queues[p * NQ + c, QT_EGRESS] if c != 0 else ports[p, PT_QBYTES] - mmu
    mi[MN_ROWS] = s + 1
    mi[MN_LAST] = t


@kernel
def _egress_bytes(net, p):
    """Egress bytes of port p as the reference's monitor_buffer sums them (the MMU's, all queues)."""
    total = 0
    for q in range(NQ):
        total += net.queues[p * NQ + q, QT_EGRESS]
    return total


@kernel
def _hist_fits(net, mon):
    for m in range(mon.ports.shape[0]):
        if _egress_bytes(net, mon.ports[m]) // QLEN_BIN >= mon.hist.shape[1]:
            return False
    return True


@kernel
def on_event(net, flows, events, cfg, parts, mon, slot, t):
    """The MONITOR slot fired at ``t``: take the samples due; True if Python must act first
    (grow an array, copy a dump), in which case the run returns ``RUN_GROW``."""
    mi = mon.ints
    links = mi[MN_LINKS] != 0 and mi[MN_NEXT] == t
    qlen = mi[MN_Q_ON] != 0 and mi[MN_Q_NEXT] == t
    if links and mi[MN_ROWS] >= mon.log.shape[0]:
        mi[MN_SERVE] |= SERVE_LOG
    if qlen and not _hist_fits(net, mon):
        mi[MN_SERVE] |= SERVE_HIST
    if mi[MN_SERVE] != 0:  # nothing taken: fire again once Python has grown the arrays
        q_set(events, slot, t, MON_SEQ)
        return True
    idle = events.meta[QM_COUNT] == 0 and events.meta[QM_HEAP_N] == 0  # nothing else will ever happen
    if links:
        _sample_links(net, flows, cfg, parts, mon, t)
        if idle:
            mi[MN_LINKS] = 0  # this sample covers the whole run
        else:
            mi[MN_NEXT] = t + mi[MN_INTERVAL]
    if qlen:
        for m in range(mon.ports.shape[0]):
            mon.hist[m, _egress_bytes(net, mon.ports[m]) // QLEN_BIN] += 1
        if t % mi[MN_Q_DUMP] == 0:
            mi[MN_SERVE] |= SERVE_DUMP
            mi[MN_DUMP_T] = t
        if t < mi[MN_Q_END]:
            mi[MN_Q_NEXT] = t + mi[MN_Q_STEP]
        else:
            mi[MN_Q_ON] = 0
    schedule(events, mon, slot)
    return mi[MN_SERVE] != 0


@entry
def schedule(events, mon, slot):
    """Put the MONITOR slot at its next sample (link or histogram), if any."""
    mi = mon.ints
    nxt = -1
    if mi[MN_LINKS] != 0:
        nxt = mi[MN_NEXT]
    if mi[MN_Q_ON] != 0 and (nxt < 0 or mi[MN_Q_NEXT] < nxt):
        nxt = mi[MN_Q_NEXT]
    if nxt >= 0:
        q_set(events, slot, nxt, MON_SEQ)


@entry
def final_sample(net, flows, cfg, parts, mon, t):
    """The run stopped (``SIMULATOR_STOP_TIME``) with link sampling on: a last, partial sample at
    ``t`` (the caller has made room in ``log``)."""
    if mon.ints[MN_LINKS] != 0 and t > mon.ints[MN_LAST] and mon.ints[MN_ROWS] < mon.log.shape[0]:
        _sample_links(net, flows, cfg, parts, mon, t)


# ---------------------------------------------------------------------------- the Python side

DEFAULT_RTTS = 4  # the default interval: 4 base RTTs (the largest between two hosts), to the nearest us
QLEN_STEP_NS = 100  # third.cc: qlen_mon_interval
QLEN_DUMP_NS = 100_000_000  # third.cc: qlen_dump_interval
INITIAL_ROWS = 256
INITIAL_BINS = 64


@dataclass
class MonitorSpec:
    """What to monitor: link samples every ``interval_ns`` (0: the default, ``default_interval``;
    None: none), and the reference's queue-length histogram over ``qlen = (QLEN_MON_START,
    QLEN_MON_END)`` ns (None: none)."""

    interval_ns: int | None = None
    qlen: tuple[int, int] | None = None

    @property
    def on(self) -> bool:
        return self.interval_ns is not None or self.qlen is not None


def default_interval(base_rtt_ns: int) -> int:
    """``DEFAULT_RTTS`` base RTTs, rounded to the nearest microsecond (at least 1 us)."""
    return max(1000, int(round(DEFAULT_RTTS * base_rtt_ns / 1000)) * 1000)


def new_monitor(spec: MonitorSpec | None, topo, ports, events, n_flows: int, n_parts: int, base_rtt: int,
                first_start: int, classes: list[int]) -> Monitor:
    """The monitor's arrays for ``spec`` (empty if it is off), its first sample scheduled."""
    mi = np.zeros(MN_LEN, np.int64)
    if spec is None or not spec.on:
        return Monitor(ints=mi, ports=np.zeros(0, np.int64), classes=np.zeros(0, np.int64),
                       log=np.zeros((1, 1), np.int64), hist=np.zeros((1, 1), np.int64), est=np.zeros(1, np.int64),
                       seen=np.zeros(1, np.int64))
    switches = np.flatnonzero(np.asarray(topo.is_switch, dtype=bool))
    sampled = np.concatenate([topo.node_ports(int(n)) for n in switches]).astype(np.int64) if len(switches) \
        else np.zeros(0, np.int64)
    width = 1 + len(sampled) * (MV_CLASS0 + len(classes))
    if spec.interval_ns is not None:
        interval = spec.interval_ns or default_interval(base_rtt)
        t0 = first_start // interval * interval  # samples on multiples of the interval
        mi[MN_INTERVAL], mi[MN_LINKS], mi[MN_NEXT], mi[MN_T0], mi[MN_LAST] = interval, 1, t0 + interval, t0, t0
    if spec.qlen is not None:
        mi[MN_Q_ON], mi[MN_Q_NEXT], mi[MN_Q_END] = 1, spec.qlen[0], spec.qlen[1]
        mi[MN_Q_STEP], mi[MN_Q_DUMP] = QLEN_STEP_NS, QLEN_DUMP_NS
    mon = Monitor(ints=mi, ports=sampled, classes=np.asarray(classes, np.int64),
                  log=np.zeros((INITIAL_ROWS if spec.interval_ns is not None else 1, width), np.int64),
                  hist=np.zeros((max(len(sampled), 1), INITIAL_BINS if spec.qlen is not None else 1), np.int64),
                  est=np.zeros(max(ports.n_ports, 1), np.int64), seen=np.zeros(max(n_parts, 1), np.int64))
    schedule(events, mon, events.slots.shape[0] - 1)  # MONITOR is the last slot (slots.monitor_slot)
    return mon


def serve(state) -> None:
    """Do what the monitor asked for before the run goes on: grow ``log`` or ``hist``, copy a dump
    (into ``state.qlen_dumps``)."""
    mon = state.mon
    mi = mon.ints
    if mi[MN_SERVE] & SERVE_LOG:
        mon = mon._replace(log=np.concatenate([mon.log, np.zeros_like(mon.log)]))
    if mi[MN_SERVE] & SERVE_HIST:
        q = state.net.queues[:, QT_EGRESS].reshape(-1, NQ).sum(axis=1)[mon.ports]
        bins = mon.hist.shape[1]
        while int(q.max()) // QLEN_BIN >= bins:
            bins *= 2
        hist = np.zeros((mon.hist.shape[0], bins), np.int64)
        hist[:, :mon.hist.shape[1]] = mon.hist
        mon = mon._replace(hist=hist)
    if mi[MN_SERVE] & SERVE_DUMP:
        state.qlen_dumps.append((int(mi[MN_DUMP_T]), mon.hist.copy()))
    mi[MN_SERVE] = 0
    state.mon = mon


def finish(state) -> None:
    """The run is over: if it stopped at its stop time with link sampling on, a last sample at
    the last event's time."""
    from .layout import ST_NOW

    mon = state.mon
    if mon.ints[MN_LINKS] != 0 and state.state[ST_NOW] > mon.ints[MN_LAST]:
        if mon.ints[MN_ROWS] >= mon.log.shape[0]:
            mon = mon._replace(log=np.concatenate([mon.log, np.zeros((1, mon.log.shape[1]), np.int64)]))
            state.mon = mon
        final_sample(state.net, state.flows, state.cfg, state.parts, mon, state.state[ST_NOW])


def links_table(state, topo) -> pd.DataFrame | None:
    """``links.parquet``: one row per sample and sampled port (see the README's Observability)."""
    mon = state.mon
    mi = mon.ints
    if mi[MN_INTERVAL] == 0:
        return None
    ports = topo.ports()
    n, m, c = int(mi[MN_ROWS]), len(mon.ports), len(mon.classes)
    log = mon.log[:n]
    times = log[:, 0]
    v = log[:, 1:].reshape(n, m, MV_CLASS0 + c)
    start = np.concatenate([[mi[MN_T0]], times[:-1]]) if n else times
    dt = (times - start).astype(np.float64)
    first = np.zeros((1, m), np.int64)
    tx = np.diff(v[:, :, MV_TX], axis=0, prepend=first)
    skipped = np.diff(v[:, :, MV_SKIPPED], axis=0, prepend=first)
    rate = ports.rate_bps[mon.ports].astype(np.float64)
    util = np.clip(tx * 8e9 / (rate[None, :] * np.maximum(dt, 1.0)[:, None]), 0.0, 1.0)
    flags = v[:, :, MV_FLAGS]
    table = {
        "time_ns": np.repeat(times, m),
        "node": np.tile(ports.node[mon.ports], n),
        "port": np.tile(ports.ifindex[mon.ports], n),
        "queue_bytes": v[:, :, MV_QBYTES].ravel(),
        "tx_bytes": tx.ravel(),
        "utilisation": util.ravel(),
        "paused": ((flags & (FLAG_FROZEN - 1)) != 0).ravel(),
        "fast_forwarded": (((flags & FLAG_FROZEN) != 0) | (skipped > 0)).ravel(),
        "fast_forwarded_bytes": skipped.ravel(),
    }
    for j, q in enumerate(mon.classes):
        table[f"queue_bytes_q{int(q)}"] = v[:, :, MV_CLASS0 + j].ravel()
    return pd.DataFrame(table)


def qlen_text(state, topo) -> str | None:
    """``qlen.txt`` as third.cc's ``monitor_buffer`` writes it: at each dump, ``time: T``, then per
    switch port ``node ifindex`` and its samples per KB of egress bytes (cumulative, KB 0 up to
    the largest seen)."""
    if state.mon.ints[MN_Q_STEP] == 0:
        return None
    ports = topo.ports()
    node, ifindex = ports.node[state.mon.ports], ports.ifindex[state.mon.ports]
    out = []
    for t, hist in state.qlen_dumps:
        out.append(f"time: {t}\n")
        for i in range(len(node)):
            row = hist[i]
            seen = np.flatnonzero(row)
            counts = row[: seen[-1] + 1] if len(seen) else row[:0]
            out.append(f"{node[i]} {ifindex[i]}" + "".join(f" {x}" for x in counts) + "\n")
    return "".join(out)
