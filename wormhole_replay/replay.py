"""Replay a training trace through the packet-level network: per-flow, per-collective and
per-iteration times."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .api import execute, fast_forward_for, prepare_direct_run
from .engine.fastforward import FastForward
from .errors import InputError
from .files import sha256_file
from .memo.recurring import tolerance_of
from .observe.breakdown import add_bandwidths, iteration_breakdown, layer_breakdown
from .observe.critical import deps_table
from .observe.pfc import pausable_queues, pfc_intervals
from .topology.tiers import ports_table
from .workload.expand import trace_to_flows
from .workload.jobs import JobSpec, jobs_to_flows, parse_job, resolve_jobs, shared_links
from .workload.ports import PORT_MODELS
from .workload.program import instantiate
from .workload.trace import Trace, load_trace, repeat_iterations


@dataclass
class ReplayResult:
    """``flows``: the engine's flows table joined with the op each flow serves (``job, op_id, unit,
    kind, name, coll, iteration, rank, dst_rank``).  ``collectives``: one row per collective
    instance or point-to-point transfer (``unit, kind, name, coll, iteration, op_id, start_ns,
    end_ns, flows, duration_ns, ranks, size_bytes, algbw_GBps, busbw_GBps``: ``observe/breakdown.py``
    says which size).  ``iterations``: ``index, start_ns, end_ns, duration_ns, wall_seconds`` (and
    with a memo ``memo_hits, memo_lookups``: transients taken from the memo, and looked up).
    ``breakdown``: per iteration and rank, compute, communication, exposed communication and idle
    time; ``layers``: the same per op name; ``deps``: the flows' dependency edges (``flow_id,
    dep``); ``ports``: the topology's egress ports and tiers; ``pfc_intervals``: PFC pauses as
    intervals (``observe/pfc.py``)."""

    flows: pd.DataFrame
    collectives: pd.DataFrame
    iterations: pd.DataFrame
    counters: dict = field(default_factory=dict)
    pfc: pd.DataFrame | None = None
    breakdown: pd.DataFrame | None = None
    layers: pd.DataFrame | None = None
    deps: pd.DataFrame | None = None
    ports: pd.DataFrame | None = None
    pfc_intervals: pd.DataFrame | None = None
    memo_hits: pd.DataFrame | None = None  # wormhole with a memo: time_ns, digest, steady, t_conv_ns, flows
    jumps: pd.DataFrame | None = None  # ... every fast-forward: partition, start_ns, end_ns, kind, flows
    spot_checks: pd.DataFrame | None = None  # ... hits simulated instead: expected vs actual bytes, error
    memo_learned: list | None = None  # ... digests of the entries this run learned (the others it hit came from the database)
    jobs: list | None = None  # several jobs: per job {job, name, trace, ranks, hosts, start_ns}
    links: pd.DataFrame | None = None  # with ``monitor``: the link samples (``links.parquet``, engine/monitor.py)
    qlen: str | None = None  # a config with QLEN_MON_FILE: the reference's qlen.txt, to be written as ``qlen_file``
    qlen_file: str | None = None


def with_intra_server(trace: Trace, bw_bps: float | None = None, latency_ns: int | None = None) -> Trace:
    """``trace`` with its intra-server link's rate and/or latency replaced (``None``: the trace's)."""
    if bw_bps is None and latency_ns is None:
        return trace
    intra = dict(trace.meta.get("intra_server") or {})
    if bw_bps is not None:
        if bw_bps <= 0:
            raise InputError("the intra-server bandwidth must be positive")
        intra["bw_bps"] = bw_bps
    if latency_ns is not None:
        if latency_ns < 0:
            raise InputError("the intra-server latency must not be negative")
        intra["latency_ns"] = latency_ns
    return Trace(trace.ops, {**trace.meta, "intra_server": intra})


def replay(trace, topology, cc: str, iterations: int | None = None, config=None,
           progress: bool = False, intra_bw_bps: float | None = None, intra_latency_ns: int | None = None,
           mode: str = "wormhole", fast_forward: FastForward | None = None, memo_db=None,
           memo_shared_prefixes: bool = False, memo_spot_check: int = 0, journal: bool = False,
           memo_episodes: bool = False, memo_recurring: bool | float = False,
           ports: str = "connection", on_slice=None, gpus: int | None = None,
           monitor: int | None = None) -> ReplayResult:
    """Replay ``trace`` (a :class:`Trace`, a native trace file, or a list of jobs replayed together
    on one fabric: ``--job`` texts such as ``"a.parquet@0-15+1ms"`` or ``workload.jobs.JobSpec``)
    on ``topology`` with ``cc``;
    ``intra_bw_bps`` / ``intra_latency_ns`` override the trace's intra-server link; ``mode`` is
    ``wormhole`` (steady partitions fast-forwarded, ``fast_forward`` options) or ``full``;
    ``memo_db`` (wormhole mode) a memo database path or URL to take transients from and add to,
    ``memo_spot_check`` how many hits (of distinct entries) to simulate and check instead of apply;
    ``memo_episodes`` lets the memo take whole iterations that ran alone on the network
    (``memo/episodes.py``; opt-in: hits carry the full run's iteration-to-iteration variation);
    ``memo_recurring`` lets it take a flow from its earlier simulated copies in the run (same hosts,
    ports and size: ``memo/recurring.py``; opt-in), where they agree within 1% (``True``) or within
    the spread given (a number, e.g. a chaotic fabric's noise floor);
    ``journal`` keeps the tables of jumps (and memo hits) even without a memo database; ``ports``
    is the source-port model: ``connection`` (a flow keeps its NCCL connection's port, so its ECMP
    path, across collectives) or ``flow`` (a new port per flow, as ns-3 numbers them), see
    ``workload.ports``; ``on_slice(state)`` is called with the engine state between kernel slices;
    ``gpus`` sizes a trace that leaves its job size open (an AICB file without ``all_gpus``; default:
    every host of the topology).  Every table has a ``job`` column (0 for a single trace).
    ``monitor`` samples the links every that many ns (0: the default interval, 4 base RTTs) into
    ``links``."""
    run = prepare_direct_run(topology, None, cc, config=config, out=None)
    run.fast_forward = fast_forward_for(mode, fast_forward)
    run.memo_db = None if memo_db is None else str(memo_db)
    run.memo_shared_prefixes = memo_shared_prefixes
    run.memo_spot_check = memo_spot_check
    run.memo_recurring = tolerance_of(memo_recurring) if run.memo_db is not None and run.fast_forward is not None else 0.0
    run.journal = journal
    run.monitor_links(monitor)
    if ports not in PORT_MODELS:
        raise InputError(f"unknown port model {ports!r} (choose {' or '.join(PORT_MODELS)})")
    if isinstance(trace, (list, tuple)):  # several jobs on one fabric (workload/jobs.py)
        if gpus is not None:
            raise InputError("--gpus sizes a single trace; with --job give each job's size in its placement "
                             "(a host range, or e.g. spread:64)")
        specs = [s if isinstance(s, JobSpec) else parse_job(str(s)) for s in trace]
        jobs = resolve_jobs(specs, run.topo)
        for job in jobs:
            job.trace = with_intra_server(job.trace, intra_bw_bps, intra_latency_ns)
            if iterations is not None:  # beyond the trace's own, its last iteration repeats
                job.trace = repeat_iterations(job.trace, iterations)
        flows, info = jobs_to_flows(jobs, run.topo, iterations, ports)
        run.source_digest = _jobs_digest(jobs)
        traces = [j.trace for j in jobs]
    else:
        if not isinstance(trace, Trace):
            path, trace = trace, load_trace(trace)
            run.source_digest = sha256_file(path)
        trace = with_intra_server(trace, intra_bw_bps, intra_latency_ns)
        trace = instantiate(trace, gpus, hosts=len(run.topo.hosts))  # a program trace made per-rank
        if iterations is not None:  # beyond the trace's own, its last iteration repeats (new op ids)
            trace = repeat_iterations(trace, iterations)
        flows, info = trace_to_flows(trace, run.topo, iterations, ports)
        info.insert(1, "job", 0)
        traces = [trace]
    run.flows = flows
    # an iteration is (job, iteration): one key per pair, for the wall-clock and memo counts
    span = int(info["iteration"].max()) + 1 if len(info) else 0
    key_of = info["job"].to_numpy() * span + info["iteration"].to_numpy()
    keys = np.unique(key_of)
    done_wall = np.full(len(keys), np.nan)
    flow_key = np.searchsorted(keys, key_of)
    run.iteration_of = flow_key  # recurring flows match a copy to its place in another iteration
    if memo_episodes and run.memo_db is not None and run.fast_forward is not None:
        # one group per (job, iteration), in the order they run; flows by rank, then op (a copy of
        # an iteration numbers its ops in the order of its model's, rank by rank), then id
        by = info.assign(flow=np.arange(len(info))).sort_values(["iteration", "job", "rank", "op_id", "flow"])
        run.memo_episodes = [g["flow"].to_numpy() for _, g in by.groupby(["iteration", "job"], sort=False)]
    flows_of_key = np.bincount(flow_key, minlength=len(keys))
    t0 = time.perf_counter()

    def each_slice(state):  # wall-clock time at which each iteration's last flow was done
        from .engine import layout as L

        # a scan of every flow's state costs 4.5 ms at 2.9 M flows (2.5 s of a 78 s replay): only
        # once enough flows are done for one more iteration to be
        pending = np.isnan(done_wall)
        if pending.any() and state.state[L.ST_FINISHED] >= flows_of_key[~pending].sum() + flows_of_key[pending].min():
            finished = np.bincount(flow_key[state.flows.table[:, L.FT_STATE] == 2], minlength=len(keys))
            done_wall[pending & (finished == flows_of_key)] = time.perf_counter() - t0
        if on_slice is not None:
            on_slice(state)

    result = execute(run, progress=progress, on_slice=each_slice)
    f = result.flows.merge(info, on="flow_id")
    coll = (f[f["kind"] != "compute"].groupby("unit")  # collectives and p2p, intra-server copies included
            .agg(job=("job", "first"), kind=("kind", "first"), name=("name", "first"), coll=("coll", "first"),
                 iteration=("iteration", "first"), op_id=("op_id", "first"),
                 start_ns=("start_ns", "min"), end_ns=("received_ns", "max"), flows=("flow_id", "count"))
            .reset_index())
    coll["duration_ns"] = coll["end_ns"] - coll["start_ns"]
    coll = pd.concat([add_bandwidths(coll[coll["job"] == j].reset_index(drop=True), t.ops, t.meta.get("groups", {}))
                      for j, t in enumerate(traces)], ignore_index=True)
    coll = coll[["job"] + [c for c in coll.columns if c != "job"]]
    it = (f.groupby(["job", "iteration"]).agg(start_ns=("start_ns", "min"), end_ns=("received_ns", "max")).reset_index()
          .rename(columns={"iteration": "index"}))
    it["duration_ns"] = it["end_ns"] - it["start_ns"]
    walls = np.nan_to_num(done_wall, nan=result.counters["wall_seconds"])
    # each iteration's own wall time: from the previous one done (of any job) to its own end
    order = np.argsort(walls, kind="stable")
    spent = np.empty(len(walls))
    spent[order] = np.diff(np.concatenate([[0.0], walls[order]]))
    it["wall_seconds"] = spent[: len(it)]
    if result.memo is not None:  # hits by the iteration of the (lowest) flow they were applied to
        for col, fl in (("memo_hits", result.memo.hit_flows), ("memo_lookups", result.memo.looked_flows)):
            it[col] = np.bincount(flow_key[np.array(fl, np.int64)], minlength=len(keys))[: len(it)]
    journal = {**result.memo.tables(), "memo_learned": [e.digest for e in result.memo.new_entries]} \
        if result.memo is not None else {}
    queues = pausable_queues(flows.pg[~flows.is_virtual], run.cfg.ack_high_prio)
    per_job = [(j, f[f["job"] == j], it[it["job"] == j]) for j in range(len(traces))]
    breakdown = pd.concat([iteration_breakdown(fj, ij).assign(job=j) for j, fj, ij in per_job], ignore_index=True)
    layers = pd.concat([layer_breakdown(fj).assign(job=j) for j, fj, _ in per_job], ignore_index=True)
    if isinstance(trace, (list, tuple)):
        result.counters["shared_links"] = shared_links(f, run.topo, run.routes) if len(traces) > 1 else {}
    return ReplayResult(flows=f, collectives=coll, iterations=it, counters=result.counters, pfc=result.pfc,
                        breakdown=_job_first(breakdown), layers=_job_first(layers), deps=deps_table(flows),
                        ports=ports_table(run.topo), pfc_intervals=pfc_intervals(result.pfc, queues),
                        jobs=[_job_row(j) for j in jobs] if isinstance(trace, (list, tuple)) else None,
                        links=result.links, qlen=result.qlen, qlen_file=run.cfg.qlen_mon_file or None, **journal)


def _job_first(table: pd.DataFrame) -> pd.DataFrame:
    return table[["job"] + [c for c in table.columns if c != "job"]]


def _job_row(job) -> dict:
    """What the summary says of a job: its name, trace, hosts and offset."""
    from .workload.jobs import hosts_text

    src = job.spec.source
    return {"job": job.index, "name": job.name, "trace": src if isinstance(src, str) else None,
            "ranks": int(job.trace.ranks), "hosts": hosts_text(job.hosts), "start_ns": int(job.start_ns)}


def _jobs_digest(jobs) -> str | None:
    """One digest for a multi-job replay's inputs (each trace file's, in order, with its placement)."""
    import hashlib

    if not all(isinstance(j.spec.source, str) for j in jobs):
        return None
    h = hashlib.sha256()
    for j in jobs:
        from .workload.jobs import hosts_text

        h.update(f"{sha256_file(j.spec.source)}@{hosts_text(j.hosts)}+{j.start_ns};".encode())
    return h.hexdigest()
