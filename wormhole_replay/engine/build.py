"""Turn a topology, a flow set and a config into the engine's arrays (the QuantEcon-style facade
validates and allocates here; the kernels in ``core`` only compute)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..arrays import unique_rows
from ..config import SimConfig
from ..errors import InputError
from ..topology.routing import compute_routes, flow_path, node_path_to_ports, pair_metrics
from ..workload.flowfile import FlowSet
from ..workload.ports import SPORT_BASE  # third.cc: portNumder[src][dst] starts at 10000 for every host pair
from . import layout as L
from . import rng
from .fastforward import apply as apply_fast_forward
from .queue import new_queue, q_set
from .slots import n_slots
from .monitor import new_monitor
from .tables import Config, Flows, Monitor, Network, Partitions

INITIAL_PACKETS = 4096
STOP_WINDOW_S = 4.0  # a run without a stop time runs this much simulated time at a time (engine/simulate.py)
INITIAL_PFC_LOG = 1024


def _i64(x):
    return np.array(x, dtype=np.int64)  # always a fresh, writable, C-contiguous copy


@dataclass
class EngineState:
    """The structures the kernels work on (``tables``), in the order ``loop.run`` takes them.
    ``state`` is the run's mutable scalars (``ST_*``: clock, sequence numbers, counters)."""

    net: Network
    flows: Flows
    events: Events
    cfg: Config
    state: np.ndarray
    parts: Partitions
    mon: Monitor  # the link monitor (``monitor``); empty when the run is not monitored
    qlen_dumps: list = field(default_factory=list)  # the monitor's qlen.txt dumps: (time, histogram)

    def args(self) -> tuple:
        return (self.net, self.flows, self.events, self.cfg, self.state, self.parts, self.mon)


@dataclass
class Plan:
    """What the engine was given, in the form output writers need."""

    sport: np.ndarray  # int64[F]
    pair_rtt: np.ndarray  # int64[F] base RTT of the flow's host pair
    pair_bw: np.ndarray  # int64[F] bottleneck bps of the pair
    base_rtt: int = 0  # ns, the largest base RTT between two hosts
    fast_forward: object = None  # the resolved FastForward options in wormhole mode


def _pinned(topo, flows: FlowSet, pinned):
    """The ports of a ``paths.txt``'s data and ACK path of each flow (node ids, checked against the
    flow's endpoints)."""
    data_paths, ack_paths = pinned
    for f in np.flatnonzero(~flows.is_virtual):
        s, d = int(flows.src[f]), int(flows.dst[f])
        if data_paths[f][0] != s or data_paths[f][-1] != d or ack_paths[f][0] != d or ack_paths[f][-1] != s:
            raise InputError(f"paths: flow {f} ({s}->{d}) is pinned to a path with other endpoints")
    return [(node_path_to_ports(topo, d), node_path_to_ports(topo, a)) for d, a in zip(data_paths, ack_paths)]


def port_paths(topo, flows: FlowSet, routes, sport, pinned=None):
    """Every flow's data-path ports then ACK-path ports, end to end in one array (``Flows.paths``):
    ``(paths, data_start, ack_start, max_data_path)``, flow f's data ports being
    ``paths[data_start[f]:ack_start[f]]``; ECMP-hashed (``routes``, ``sport``), or ``pinned``
    (node-id paths per flow, from a ``paths.txt``).

    An ECMP path depends only on a flow's (source, destination, source port, destination port), so
    it is computed once per distinct 4-tuple: the flows of one NCCL connection share it.  At 1024
    GPUs (2.2 M flows) one list per flow took 2.4 GB and 84 s to build; this takes 2 s."""
    F = len(flows)
    if pinned is not None:  # a paths.txt: one path per flow, as given
        segs = _pinned(topo, flows, pinned)
        which = np.arange(F, dtype=np.int64)
    else:
        keys = np.stack([flows.src, flows.dst, sport, flows.dport], axis=1)
        keys[flows.is_virtual, 2:] = -1  # no packets: no path, whatever its ports
        uniq, which, _ = unique_rows(keys)
        segs = []
        for s, d, sp, dp in uniq.tolist():
            if sp < 0:
                segs.append(([], []))
                continue
            segs.append((node_path_to_ports(topo, flow_path(topo, routes, s, d, sp, dp, ack=False)),
                         node_path_to_ports(topo, flow_path(topo, routes, s, d, sp, dp, ack=True))))
    data_len = np.array([len(d) for d, _ in segs], dtype=np.int64)
    both_len = data_len + np.array([len(a) for _, a in segs], dtype=np.int64)
    flat = np.array([p for d, a in segs for p in (*d, *a)], dtype=np.int64)
    flat_start = np.cumsum(both_len) - both_len
    # each flow's segment is its 4-tuple's, copied into place
    length = both_len[which]
    start = np.cumsum(length) - length
    total = int(length.sum())
    paths = flat[np.repeat(flat_start[which] - start, length) + np.arange(total)] if total else np.zeros(1, np.int64)
    max_data_path = int(data_len[which].max()) if F else 1
    return paths, start, start + data_len[which], max_data_path


def source_ports(flows: FlowSet) -> np.ndarray:
    """Source port of every flow, numbered as the reference's ``third.cc`` does: a counter per
    (source, destination) pair from 10000, taken in the order flows start (``portNumder[src][dst]++``
    in ``ScheduleFlowInputs``), so that the ECMP hash sees the reference's 5-tuples."""
    sport = np.zeros(len(flows), dtype=np.int64)
    nxt: dict[tuple[int, int], int] = {}
    for f in np.argsort(flows.start_ns, kind="stable"):
        pair = (int(flows.src[f]), int(flows.dst[f]))
        sport[f] = nxt.get(pair, SPORT_BASE)
        nxt[pair] = sport[f] + 1
    return sport


def build(topo, flows: FlowSet, cfg: SimConfig, pinned=None, routes=None, fast_forward=None, monitor=None,
          memo_log: bool = False):
    """Allocate every engine array; return ``(EngineState, Plan)``.  ``fast_forward`` (a
    ``FastForward``) turns on wormhole mode, ``monitor`` (a ``monitor.MonitorSpec``) the link
    monitor; ``memo_log`` sizes the log a memo session reads (wormhole mode)."""
    cfg.validate()
    ports = topo.ports()
    P = ports.n_ports
    N = topo.n_nodes
    hosts = topo.hosts
    H = len(hosts)
    F = len(flows)
    host_index = np.asarray(topo.host_index(), dtype=np.int64)
    is_switch = np.asarray(topo.is_switch, dtype=np.bool_)
    port_is_host = ~is_switch[ports.node]

    # --- ports, nodes, hosts ------------------------------------------------------------------
    host_port = np.zeros(H, dtype=np.int64)
    for p in np.nonzero(port_is_host)[0]:
        host_port[host_index[ports.node[p]]] = p
    nic_rate = int(ports.rate_bps[host_port[0]]) if H else 1
    pt = np.zeros((P, L.PT_LEN), np.int64)
    ptf = np.zeros((P, L.PTF_LEN), np.float64)
    pt[:, L.PT_NODE] = ports.node
    pt[:, L.PT_PEER] = ports.peer_port
    pt[:, L.PT_RATE] = ports.rate_bps
    pt[:, L.PT_DELAY] = ports.delay_ns
    pt[:, L.PT_IFINDEX] = ports.ifindex
    pt[:, L.PT_IS_HOST] = port_is_host
    pt[:, L.PT_BUSY_UNTIL] = -1
    pt[:, L.PT_LN_HEAD] = -1
    pt[:, L.PT_LN_TAIL] = -1
    pt[:, L.PT_PART] = -1
    for p in np.nonzero(~port_is_host)[0]:
        rate, delay = int(ports.rate_bps[p]), int(ports.delay_ns[p])
        kmin, kmax, ptf[p, L.PTF_PMAX] = cfg.ecn_for_rate(rate)
        pt[p, L.PT_KMIN], pt[p, L.PT_KMAX] = kmin, kmax
        pt[p, L.PT_HEADROOM] = rate * delay // 8 // 1_000_000_000 * 3  # 3x one-way BDP (third.cc)
        shift = 3  # dynamic threshold alpha = 1/8, halved per doubling of rate above the NIC's
        while rate > nic_rate and shift > 0:
            shift -= 1
            rate //= 2
        pt[p, L.PT_PFC_SHIFT] = shift
    rate_table = sorted(set(int(r) for r in ports.rate_bps))
    if cfg.cc_mode == 3 and len(rate_table) > 8:
        raise InputError(f"HPCC's INT encodes a link rate in 3 bits: at most 8 distinct link rates, the topology has {len(rate_table)}")
    pt[:, L.PT_RATE_IDX] = np.searchsorted(rate_table, ports.rate_bps) if len(rate_table) <= 8 else 0
    link_error = np.asarray(topo.link_error_rate, dtype=np.float64)
    ptf[:, L.PTF_ERROR] = np.repeat(link_error, 2)
    reserve = 4 * 1024
    nt = np.zeros((N, L.NT_LEN), np.int64)
    nt[:, L.NT_IS_SWITCH] = is_switch
    nt[:, L.NT_HOST] = host_index
    np.add.at(nt[:, L.NT_TOTAL_HDRM], ports.node, pt[:, L.PT_HEADROOM])
    np.add.at(nt[:, L.NT_TOTAL_RSRV], ports.node, np.where(port_is_host, 0, reserve))
    qt = np.zeros((P * L.NQ, L.QT_LEN), np.int64)
    qt[:, L.QT_HEAD] = -1
    qt[:, L.QT_TAIL] = -1

    # --- flows and paths ----------------------------------------------------------------------
    if routes is None:
        routes = compute_routes(topo)
    sport = flows.sport if flows.sport is not None else source_ports(flows)
    paths, data_start, ack_start, max_data_path = port_paths(topo, flows, routes, sport, pinned)
    ft = np.zeros((F, L.FT_LEN), np.int64)
    ft[:, L.FT_DPATH] = data_start
    ft[:, L.FT_APATH] = ack_start

    rtt, bw, bdp = pair_metrics(topo, routes, cfg.packet_payload_size)
    si, di = host_index[flows.src], host_index[flows.dst]
    pair_rtt, pair_bw, pair_bdp = rtt[si, di], bw[si, di], bdp[si, di]
    max_rtt, max_bdp = (int(rtt.max()), int(bdp.max())) if H > 1 else (0, 0)
    ft[:, L.FT_SRC] = flows.src
    ft[:, L.FT_DST] = flows.dst
    ft[:, L.FT_SIZE] = flows.size
    ft[:, L.FT_START] = flows.start_ns
    ft[:, L.FT_PG] = flows.pg
    ft[:, L.FT_BASE_RTT] = max_rtt if cfg.global_t else pair_rtt
    if cfg.has_win:
        ft[:, L.FT_WIN] = max_bdp if cfg.global_t else pair_bdp
    ft[:, L.FT_FINISH] = -1
    ft[:, L.FT_PART] = -1
    ft[:, L.FT_TIMER_AT] = -1
    ft[:, L.FT_FIRST_CNP] = 1
    ff = np.zeros((F, L.FF_LEN), np.float64)
    line = ports.rate_bps[host_port[si]] if F else 0
    for col in (L.FF_MAX_RATE, L.FF_RATE, L.FF_TARGET, L.FF_CUR_RATE):
        ff[:, col] = line
    ff[:, L.FF_ALPHA] = 1.0
    ff[:, L.FF_U] = 1.0
    ff[:, L.FF_PACE_GAIN] = 1.0
    rows = F if cfg.cc_mode == 3 else 1
    fh = np.zeros((rows, L.FH_LEN), np.int64)
    fhf = np.zeros((rows, L.FHF_LEN), np.float64)
    fhf[:, L.FHF_U:L.FHF_U + L.MAXHOP] = 1.0
    # dependency DAG: predecessor counts, compute gaps, successors (CSR by predecessor)
    if flows.deps_ptr is not None and len(flows.deps):
        n_preds = np.diff(flows.deps_ptr)
        owner = np.repeat(np.arange(F), n_preds)
        by_pred = np.argsort(flows.deps, kind="stable")
        succ = _i64(owner[by_pred])
        ft[:, L.FT_SUCC] = np.searchsorted(flows.deps[by_pred], np.arange(F))
        ft[:, L.FT_PREDS_LEFT] = n_preds
    else:
        succ = np.zeros(0, np.int64)
        ft[:, L.FT_SUCC] = 0
    if flows.delay_ns is not None:
        ft[:, L.FT_DELAY] = flows.delay_ns
    ft[:, L.FT_RX_DONE] = -1
    ft[:, L.FT_VIRTUAL] = flows.duration_ns if flows.duration_ns is not None else -1
    roots = np.flatnonzero(ft[:, L.FT_PREDS_LEFT] == 0)
    order = _i64(roots[np.argsort(flows.start_ns[roots], kind="stable")])

    ht = np.zeros((H, L.HT_LEN), np.int64)
    ht[:, L.HT_PORT] = host_port
    per_host = np.bincount(si, minlength=H) if F else np.zeros(H, np.int64)
    ht[1:, L.HT_QP_OFF] = np.cumsum(per_host)[:-1]
    qpl = np.zeros(max(F, 1), np.int64)

    # --- configuration ------------------------------------------------------------------------
    ci = np.zeros(L.CI_LEN, np.int64)
    us = lambda v: int(round(v * 1000))
    ci[L.CI_CC_MODE] = cfg.cc_mode
    ci[L.CI_PAYLOAD] = cfg.packet_payload_size
    ci[L.CI_DATA_HDR] = cfg.data_header_bytes
    ci[L.CI_ACK_SIZE] = cfg.ack_bytes
    ci[L.CI_PFC_SIZE] = 14 + 20 + 9  # PPP + IPv4 + PauseHeader
    ci[L.CI_ACK_INTERVAL] = cfg.l2_ack_interval
    ci[L.CI_CHUNK] = cfg.l2_chunk_size
    ci[L.CI_BACK_TO_ZERO] = cfg.l2_back_to_zero
    ci[L.CI_VAR_WIN] = cfg.var_win
    ci[L.CI_FAST_REACT] = cfg.fast_react
    ci[L.CI_MI_THRESH] = cfg.mi_thresh
    ci[L.CI_MULTI_RATE] = cfg.multi_rate
    ci[L.CI_SAMPLE_FEEDBACK] = cfg.sample_feedback
    ci[L.CI_RATE_BOUND] = cfg.rate_bound
    ci[L.CI_ACK_Q_IDX] = 0 if cfg.ack_high_prio else 3
    ci[L.CI_ECN] = cfg.enable_qcn
    ci[L.CI_PFC] = cfg.enable_pfc
    ci[L.CI_ALPHA_NS] = us(cfg.alpha_resume_interval)
    ci[L.CI_DEC_NS] = us(cfg.rate_decrease_interval)
    ci[L.CI_RP_NS] = us(cfg.rp_timer)
    ci[L.CI_FAST_RECOVERY] = cfg.fast_recovery_times
    ci[L.CI_NACK_NS] = 500_000  # RdmaHw "NACK Generation Interval", 500 us
    ci[L.CI_STOP] = int(round((STOP_WINDOW_S if cfg.simulator_stop_time is None else cfg.simulator_stop_time) * 1e9))
    ci[L.CI_INT_MULTI] = cfg.int_multi
    ci[L.CI_CLAMP] = cfg.clamp_target_rate
    ci[L.CI_RTO_NS] = cfg.rto_ns
    ci[L.CI_BUFFER] = cfg.buffer_size_mb * 1024 * 1024
    ci[L.CI_RESERVE] = reserve
    ci[L.CI_RESUME_OFFSET] = 3 * 1024
    ci[L.CI_N_PORTS] = P
    ci[L.CI_N_HOSTS] = H
    ci[L.CI_RATE_TABLE:L.CI_RATE_TABLE + min(len(rate_table), 8)] = rate_table[:8]
    cf = np.zeros(L.CF_LEN, np.float64)
    cf[L.CF_EWMA] = cfg.ewma_gain
    cf[L.CF_RATE_AI] = cfg.rate_ai_bps
    cf[L.CF_RATE_HAI] = cfg.rate_hai_bps
    cf[L.CF_MIN_RATE] = cfg.min_rate_bps
    cf[L.CF_U_TARGET] = cfg.u_target
    cf[L.CF_RATE_FIRST_CNP] = 1.0
    cf[L.CF_DCTCP_RATE_AI] = cfg.dctcp_rate_ai_bps

    # --- dynamic state ------------------------------------------------------------------------
    with_int = cfg.cc_mode == 3
    pk = new_packets(INITIAL_PACKETS, with_int)
    st = np.zeros(L.ST_LEN, np.int64)
    st[L.ST_FREE] = 0
    st[L.ST_NFREE] = INITIAL_PACKETS
    st[L.ST_RNG] = (cfg.rng_seed * 0x9E3779B97F4A7C15 + 0x2545F4914F6CDD1D) & 0x7FFFFFFFFFFFFFFF or 1
    if cfg.ecn_rng == "ns3":
        ci[L.CI_ECN_RNG] = 1
        ci[L.CI_MRG_JUMP:L.CI_MRG_JUMP + 18] = rng.stream_jump()
        first = cfg.ns3_rng_first_stream
        if first is None or first < 0:
            first = rng.first_ecn_stream(N)
        st[L.ST_MRG:L.ST_MRG + 6] = rng.stream_state(cfg.rng_seed, first, cfg.ns3_rng_run)
    events = new_queue(n_slots(P, H, F))
    if len(order):  # the first flow start: the reference's ScheduleFlowInputs (the FLOWS slot, slots.py)
        q_set(events, 2 * P + H, int(flows.start_ns[order[0]]), 0)
        st[L.ST_SEQ] = 1
    net = Network(ports=pt, port_probs=ptf, queues=qt, nodes=nt, hosts=ht, qp_order=qpl, packets=pk,
                  kicks=np.zeros(max(P, 1), np.int64), pfc_log=np.zeros((INITIAL_PFC_LOG, 5), np.int64))
    flow_tables = Flows(table=ft, rates=ff, hops=fh, hop_rates=fhf, paths=paths, successors=succ, start_order=order,
                        scratch=np.zeros(16, np.float64))
    samples = 1
    if fast_forward is not None:
        fast_forward = fast_forward.resolve(cfg.cc_mode, cfg.rp_timer, max_rtt)
        apply_fast_forward(ci, cf, fast_forward)
        samples = fast_forward.samples
    # Partitions never outnumber the network flows running (virtual flows join none), and a full
    # run has none; only a memo session (or a jump journal) reads the memo log, and only fluid
    # flows watch their links.  At 1024 GPUs (2.2 M flows) sizing all three by every flow cost 730 MB.
    wormhole = fast_forward is not None
    K = max(int(np.count_nonzero(~flows.is_virtual)), 1) if wormhole else 1
    wp = np.zeros((K, L.WP_LEN), np.int64)
    wp[:, L.WP_NEXT_FREE] = np.arange(1, K + 1)
    wp[-1, L.WP_NEXT_FREE] = -1
    wp[:, L.WP_LIVEPOS] = -1
    parts = Partitions(table=wp, live=np.zeros(K, np.int64),
                       samples=np.zeros((F if wormhole else 1, samples), np.float64),
                       scratch_ints=np.zeros(2 * P + 1, np.int64), scratch_floats=np.zeros(max(P, 1), np.float64),
                       # one instant logs fewer records than this
                       memo_log=np.zeros((3 * F + 2 * K + 16 if wormhole and memo_log else 1, L.ML_LEN), np.int64),
                       watch=np.zeros((F if wormhole and fast_forward.fluid else 1, max_data_path), np.float64),
                       port_scratch=np.zeros((max(P, 1), 3), np.float64), timers=np.zeros((K, L.TM_LEN), np.int64))
    first_start = int(flows.start_ns[order[0]]) if len(order) else 0
    mon = new_monitor(monitor, topo, ports, events, F, K, max_rtt, first_start, _monitored_classes(flows, cfg))
    state = EngineState(net=net, flows=flow_tables, events=events, cfg=Config(ints=ci, floats=cf), state=st, parts=parts,
                        mon=mon)
    plan = Plan(sport=sport, pair_rtt=_i64(pair_rtt), pair_bw=_i64(pair_bw), base_rtt=max_rtt, fast_forward=fast_forward)
    return state, plan


def _monitored_classes(flows: FlowSet, cfg: SimConfig) -> list[int]:
    """The queue classes the run uses: its flows' priority groups and the ACKs' queue."""
    pgs = flows.pg[~flows.is_virtual] if len(flows) else np.zeros(0, np.int64)
    return sorted({int(q) for q in np.unique(pgs)} | {0 if cfg.ack_high_prio else 3})


def new_packets(cap: int, with_int: bool) -> np.ndarray:
    """A packet table of ``cap`` free packets (free list 0 -> 1 -> ... -> cap-1)."""
    pk = np.zeros((cap, L.PK_LEN_INT if with_int else L.PK_LEN), np.int64)
    pk[:, L.PK_NEXT] = np.arange(1, cap + 1)
    pk[-1, L.PK_NEXT] = -1
    return pk


def grow_packets(pk: np.ndarray, st: np.ndarray) -> np.ndarray:
    """Double the packet table; the new packets go on the front of the free list."""
    cap = pk.shape[0]
    new = np.zeros((2 * cap, pk.shape[1]), np.int64)
    new[:cap] = pk
    new[cap:, L.PK_NEXT] = np.arange(cap + 1, 2 * cap + 1)
    new[-1, L.PK_NEXT] = st[L.ST_FREE]
    st[L.ST_FREE] = cap
    st[L.ST_NFREE] += cap
    return new
