"""The engine's Python facade: build the arrays, run the kernel in slices (growing the packet pool
and reporting progress between slices), and return the results as DataFrames."""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..config import SimConfig
from ..topology.routing import nodes_to_ips
from ..workload.flowfile import FlowSet
from . import layout as L
from .build import STOP_WINDOW_S, build, grow_packets
from .fastforward import FastForward
from .fastforward import counters as wormhole_counters
from .loop import run as _run
from .memo_view import EngineView
from . import monitor as _monitor

SLICE_EVENTS = 1_000_000  # events per kernel call: progress granularity (~0.5 s)
PROGRESS_AFTER = 2.0  # seconds before a progress bar appears


@dataclass
class Result:
    """What a simulation produced.

    ``flows`` has one row per flow in input order: ``flow_id, src, dst, sport, dport, pg,
    size_bytes, start_ns, finish_ns, fct_ns, standalone_fct_ns, completed``.  ``pfc`` has one
    row per PFC frame received: ``time_ns, node, node_type, ifindex, type`` (1 pause, 0 resume).
    ``counters`` holds the run's totals.
    """

    flows: pd.DataFrame
    pfc: pd.DataFrame
    counters: dict = field(default_factory=dict)
    memo: object = None  # the run's MemoSession when the memo was on (what it learned and used)
    links: pd.DataFrame | None = None  # the link monitor's samples (``links.parquet``), if it sampled links
    qlen: str | None = None  # ``qlen.txt`` (the reference's histogram), if the config asked for it


def simulate(topo, flows: FlowSet, cfg: SimConfig, pinned=None, routes=None, progress: bool = False,
             on_slice=None, fast_forward: FastForward | None = None, memo=None, monitor=None) -> Result:
    """Run the packet-level simulation of ``flows`` on ``topo`` with ``cfg``: in full, or with
    steady partitions fast-forwarded (wormhole mode) when ``fast_forward`` is given.

    Parameters
    ----------
    topo : Topology
    flows : FlowSet
    cfg : SimConfig
    pinned : (data_paths, ack_paths), optional
        Node-id paths per flow (from a ``paths.txt``) instead of ECMP hashing.
    progress : bool
        Show a progress bar on stderr (it appears only if the run lasts more than 2 s).
    on_slice : callable, optional
        Called with the engine state after every slice of events (a million or so).
    fast_forward : FastForward, optional
        Wormhole mode and its options (``engine/fastforward.py``); ``None`` simulates in full.
    memo : callable, optional
        Wormhole mode only: ``memo(plan)`` gives the run's memo session (``memo/session.py``),
        which handles the engine's ``RUN_MEMO`` stops.
    monitor : MonitorSpec, optional
        Sample the links (``Result.links``) and / or the reference's queue histogram
        (``Result.qlen``): ``engine/monitor.py``.
    """
    t0 = time.perf_counter()
    flows.validate(topo)
    state, plan = build(topo, flows, cfg, pinned=pinned, routes=routes, fast_forward=fast_forward, monitor=monitor,
                        memo_log=memo is not None)
    t_built = time.perf_counter()
    st = state.state
    session = None
    if memo is not None and plan.fast_forward is not None:
        session = memo(plan)
        view = EngineView(state)
        view.set_log(session.log_bits())
        session.start(view)
    reported = 0
    moved = _progress(state)  # where the flows stood at the last stop (a run without a stop time goes on while they move)
    bar = None  # made only once the run has lasted PROGRESS_AFTER seconds
    while True:
        code = _run(*state.args(), SLICE_EVENTS)
        if code == L.RUN_GROW:
            if state.mon.ints[_monitor.MN_SERVE] != 0:  # the monitor's request: the pool grows only when it asks
                _monitor.serve(state)
                continue
            net = state.net
            if st[L.ST_NFREE] < 1024:
                net = net._replace(packets=grow_packets(net.packets, st))
            if st[L.ST_NPFC] + 64 > net.pfc_log.shape[0]:
                net = net._replace(pfc_log=np.concatenate([net.pfc_log, np.zeros_like(net.pfc_log)]))
            state.net = net
            continue
        if code == L.RUN_MEMO:
            session.handle(view)
            view.set_log(session.log_bits())
            if st[L.ST_EVENTS] - reported < SLICE_EVENTS:  # report about once a slice, as without memo
                continue
        reported = int(st[L.ST_EVENTS])
        if on_slice is not None:
            on_slice(state)
        if progress and bar is None and time.perf_counter() - t0 > PROGRESS_AFTER:
            bar = _progress_bar(len(flows), int(st[L.ST_FINISHED]))
        if bar is not None:
            bar.n = int(st[L.ST_FINISHED])
            bar.set_postfix_str(f"{st[L.ST_NOW] / 1e6:.3f} ms simulated, {st[L.ST_EVENTS] / 1e6:.1f} M events", refresh=False)
            bar.refresh()
        if code == L.RUN_DONE:
            if cfg.simulator_stop_time is not None or not _moved_on(state, moved):
                break
            state.cfg.ints[L.CI_STOP] += int(round(STOP_WINDOW_S * 1e9))  # no stop time: on, where it stopped
            moved = _progress(state)
    if bar is not None:
        bar.close()
    if session is not None:
        session.finish(view)
    _monitor.finish(state)
    state.events = None  # the queue is done with (a third of a large run's memory), before the tables below
    wall = time.perf_counter() - t0
    ft = state.flows.table
    finish = ft[:, L.FT_FINISH].copy()
    done = finish >= 0
    start = np.where(ft[:, L.FT_STATE] > 0, ft[:, L.FT_START], -1)  # actual start (DAG releases)
    fct = np.where(done, finish - start, -1)
    hdr = cfg.fct_header_bytes
    payload = cfg.packet_payload_size
    total_bytes = flows.size + ((flows.size - 1) // payload + 1) * hdr
    standalone = plan.pair_rtt + total_bytes * 8_000_000_000 // np.maximum(plan.pair_bw, 1)
    virtual = flows.is_virtual
    standalone = np.where(virtual, flows.duration_ns if flows.duration_ns is not None else 0, standalone)
    df = pd.DataFrame({
        "flow_id": np.arange(len(flows), dtype=np.int64),
        "src": flows.src, "dst": flows.dst, "sport": plan.sport, "dport": flows.dport, "pg": flows.pg,
        "size_bytes": flows.size, "start_ns": start,
        "finish_ns": finish, "fct_ns": fct, "standalone_fct_ns": standalone, "completed": done,
        "received_ns": ft[:, L.FT_RX_DONE].copy(),
        "virtual": virtual,
        "done_index": np.where(done, ft[:, L.FT_DONE_IDX], -1),
        "packets_sent": ft[:, L.FT_PKTS_SENT].copy(), "bytes_received": ft[:, L.FT_BYTES_RX].copy(),
        "fast_forwarded_bytes": ft[:, L.FT_SKIPPED].copy(),  # credited by jumps (wormhole mode), not simulated
    })
    n = int(st[L.ST_NPFC])
    log = state.net.pfc_log[:n]
    pfc = pd.DataFrame(log, columns=["time_ns", "node", "node_type", "ifindex", "type"])
    counters = {
        "events": int(st[L.ST_EVENTS]),
        "simulated_ns": int(st[L.ST_NOW]),
        "flows": int(len(flows)),
        "flows_completed": int(done.sum()),
        "drops": int(st[L.ST_DROPS]),
        "pfc_pauses": int(st[L.ST_PAUSES]),
        "ecn_marks": int(st[L.ST_ECN_MARKS]),
        "timeouts": int(st[L.ST_TIMEOUTS]),
        "peak_packets": int(st[L.ST_PEAK_PKTS]),
        "packets_alive_at_end": int(st[L.ST_PKTS_ALIVE]),
        "wall_seconds": wall,
        "setup_seconds": t_built - t0,
        "mode": "full" if plan.fast_forward is None else "wormhole",
    }
    if plan.fast_forward is not None:
        counters["wormhole"] = {**wormhole_counters(st), "options": plan.fast_forward.as_dict(),
                                # fluid flows' link shares and byte counts left at the end (0 unless one leaked)
                                "fluid_reserved_bps_at_end": int(state.net.ports[:, L.PT_FLUID].sum()
                                                                 + state.net.ports[:, L.PT_FLUID_ACC].sum()),
                                # the network bytes not simulated packet by packet (jumps, fluid flows,
                                # the memo's timers): exact, where events avoided needs a full run
                                "bytes_fast_forwarded": _share(ft[~virtual, L.FT_SKIPPED], flows.size[~virtual])}
        if session is not None and session.lookups:
            counters["wormhole"].update(session.counters)
    return Result(flows=df, pfc=pfc, counters=counters, memo=session, links=_monitor.links_table(state, topo),
                  qlen=_monitor.qlen_text(state, topo))


def _share(part: np.ndarray, whole: np.ndarray) -> float:
    """``part``'s sum over ``whole``'s (0 where the whole is empty), to 6 digits."""
    total = int(whole.sum())
    return round(int(part.sum()) / total, 6) if total else 0.0


def _progress(state) -> tuple[int, int]:
    """How far the flows have got: flows done, bytes received."""
    return int(state.state[L.ST_FINISHED]), int(state.flows.table[:, L.FT_BYTES_RX].sum())


def _moved_on(state, before: tuple[int, int]) -> bool:
    """The run stopped with flows left, and they moved since ``before``."""
    return bool(state.state[L.ST_FINISHED] < state.flows.table.shape[0] and _progress(state) != before)


def _progress_bar(total: int, done: int):
    from tqdm import tqdm

    # starts at the flows already done, so that its rate counts only what it has seen
    return tqdm(total=total, initial=done, unit="flow", desc="simulate", leave=False, dynamic_ncols=True,
                file=sys.stderr)


# ---------------------------------------------------------------------- reference-format outputs


def format_fct(flows: pd.DataFrame) -> str:
    """``fct.txt`` as the reference writes it: completed flows in completion order,
    ``sip dip sport dport size start_ns fct_ns standalone_fct_ns`` with hex addresses."""
    done = flows[flows["completed"] & ~flows["virtual"]].sort_values("done_index", kind="stable")
    columns = [[f"{ip:08x}" for ip in nodes_to_ips(done[end].to_numpy()).tolist()] for end in ("src", "dst")]
    columns += [map(str, done[c].tolist()) for c in ("sport", "dport", "size_bytes", "start_ns", "fct_ns", "standalone_fct_ns")]
    return "".join(" ".join(row) + "\n" for row in zip(*columns))  # by columns: 4x faster than by rows


def format_pfc(pfc: pd.DataFrame) -> str:
    """``pfc.txt``: ``time_ns node node_type ifindex type`` (1 pause, 0 resume)."""
    return "".join(f"{r.time_ns} {r.node} {r.node_type} {r.ifindex} {r.type}\n" for r in pfc.itertuples(index=False))
