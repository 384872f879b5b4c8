"""Importers: other projects' workload files into the native trace.

* ``hpcc-flow``: the reference simulator's ``flow.txt``.  Each flow becomes a send/recv pair
  between ranks (the flow file's node ids, renumbered densely; ``rank_to_node`` keeps the map, so
  a replay uses the same hosts), its start time a compute op before the send.
* ``aicb``: SimAI / AICB workload text (``HYBRID_TRANSFORMER_FWD_IN_BCKWD`` model workloads and
  ``MICRO`` micro-benchmarks); see :func:`import_aicb` for how its columns become ops.

* ``kineto``: PyTorch profiler JSON with NCCL metadata, one file per rank (:func:`import_kineto`).

Chakra ET is in :mod:`.chakra`.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError, read_input_text
from .flowfile import read_flow_file
from .trace import Trace, new_ops


def import_hpcc_flow(path: str | Path) -> Trace:
    """A reference ``flow.txt`` as a trace: flow i is ``compute(start) -> send`` on its source
    rank and a ``recv`` on its destination rank."""
    fs = read_flow_file(path)
    nodes = sorted(set(fs.src.tolist()) | set(fs.dst.tolist()))
    rank_of = {n: r for r, n in enumerate(nodes)}
    t0 = int(fs.start_ns.min()) if len(fs) else 0
    rows = []
    for f in range(len(fs)):
        s, d = rank_of[int(fs.src[f])], rank_of[int(fs.dst[f])]
        if s == d:
            raise InputError(f"{path}: flow {f} goes from node {fs.src[f]} to itself")
        wait = len(rows)
        rows.append(dict(op_id=wait, rank=s, kind="compute", name=f"start_flow{f}", duration_ns=int(fs.start_ns[f]) - t0))
        rows.append(dict(op_id=wait + 1, rank=s, kind="send", name=f"flow{f}", peer=d, bytes=int(fs.size[f]), deps=[wait]))
        rows.append(dict(op_id=wait + 2, rank=d, kind="recv", name=f"flow{f}", peer=s, bytes=int(fs.size[f])))
    meta = dict(ranks=len(nodes), groups={}, iterations=1, rank_to_node=nodes,
                provenance=dict(importer="hpcc-flow", source=str(path), start_offset_ns=t0))
    return Trace(new_ops(rows), meta)


_AICB_TYPES = {"ALLREDUCE": "all_reduce", "ALLGATHER": "all_gather", "REDUCESCATTER": "reduce_scatter",
               "ALLTOALL": "all_to_all"}


def import_aicb(path: str | Path, gpus: int | None = None) -> Trace:
    """SimAI / AICB workload text as a trace.

    Header: ``HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: TP ... pp: PP ... ga: M
    all_gpus: N ...`` (or ``MICRO``, whose GPU count must be given as ``gpus``), then the number
    of layers, then per layer ``name id fwd_ns fwd_comm fwd_bytes ig_ns ig_comm ig_bytes wg_ns
    wg_comm wg_bytes update_ns`` (tab-separated, times in ns).  Following SimAI's reading: per
    micro-batch (``ga`` of them) the forward runs the layers in order (compute, then the
    forward collective), the backward runs them in reverse (input-gradient compute and
    collective, then weight-gradient compute); the weight-gradient collectives run after the
    last micro-batch's backward of that layer.  A collective without suffix uses the TP group in
    the forward/input-gradient columns and the DP group in the weight-gradient column; ``_EP``
    and ``_DP_EP`` select the expert-parallel groups.  Ranks are laid out TP-fastest, as in
    :mod:`.generators`.  Pipeline stages (``pp`` > 1) are not modelled yet: an error.
    """
    text = read_input_text(path, "AICB workload file")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) < 2:
        raise InputError(f"{path}: expected a header line and a layer count")
    head = lines[0].split()
    fields = {head[i].rstrip(":"): head[i + 1] for i in range(1, len(head) - 1) if head[i].endswith(":")}
    try:
        if head[0] == "MICRO":
            if gpus is None:
                raise InputError(f"{path}: a MICRO workload does not say how many GPUs: give --gpus")
            tp, pp, ep, ga, n = 1, 1, 1, 1, gpus
        elif head[0].startswith("HYBRID_TRANSFORMER"):
            tp = int(fields.get("model_parallel_NPU_group", 1))
            pp = int(fields.get("pp", 1))
            ep = int(fields.get("ep", 1))
            ga = int(fields.get("ga", 1))
            n = int(fields["all_gpus"]) if "all_gpus" in fields else gpus
            if n is None:
                raise InputError(f"{path}: the header has no all_gpus: give --gpus")
        else:
            raise InputError(f"{path}:1: unknown workload type {head[0]!r} (expected HYBRID_TRANSFORMER_* or MICRO)")
        n_layers = int(lines[1].split()[0])
    except (ValueError, KeyError) as e:
        raise InputError(f"{path}:1: malformed header ({e})") from None
    if pp > 1:
        raise InputError(f"{path}: pipeline parallelism (pp {pp}) in AICB workloads is not supported yet")
    if tp < 1 or n % tp:
        raise InputError(f"{path}: {n} GPUs do not split into TP groups of {tp}")
    dp = n // tp
    if ep < 1 or dp % ep:
        raise InputError(f"{path}: ep {ep} does not divide dp {dp}")
    if len(lines) - 2 < n_layers:
        raise InputError(f"{path}: the header announces {n_layers} layers, the file has {len(lines) - 2}")
    layers = []
    for k in range(n_layers):
        lineno = k + 3
        t = lines[k + 2].split()
        if len(t) != 12:
            raise InputError(f"{path}:{lineno}: expected 12 fields per layer, got {len(t)}")
        try:
            layers.append((t[0], int(t[2]), t[3], int(t[4]), int(t[5]), t[6], int(t[7]), int(t[8]), t[9], int(t[10]), int(t[11])))
        except ValueError:
            raise InputError(f"{path}:{lineno}: bad number") from None
        for comm in (t[3], t[6], t[9]):
            base = comm.removesuffix("_DP_EP").removesuffix("_EP")
            if comm != "NONE" and base not in _AICB_TYPES and base != "BROADCAST":
                raise InputError(f"{path}:{lineno}: unknown collective type {comm!r}")

    groups = {}
    for d in range(dp):
        groups[f"tp{d}"] = [d * tp + t for t in range(tp)]
    for t in range(tp):
        groups[f"dp{t}"] = [d * tp + t for d in range(dp)]
        for blk in range(dp // ep):
            groups[f"ep{t}_{blk}"] = [(blk * ep + e) * tp + t for e in range(ep)]
        for e in range(ep):
            groups[f"dpep{t}_{e}"] = [(e + j * ep) * tp + t for j in range(dp // ep)]

    def group_of(comm, rank, wg):
        d, t = divmod(rank, tp)
        if comm.endswith("_DP_EP"):
            return f"dpep{t}_{d % ep}"
        if comm.endswith("_EP"):
            return f"ep{t}_{d // ep}"
        return f"dp{t}" if wg else f"tp{d}"

    rows = []
    last = {r: [] for r in range(n)}

    def op(r, **kw):
        oid = len(rows)
        rows.append(dict(op_id=oid, rank=r, deps=list(last[r]), **kw))
        last[r] = [oid]

    def comm_op(r, comm, size, name, wg):
        if comm == "NONE" or size <= 0:
            return
        base = comm.removesuffix("_DP_EP").removesuffix("_EP")
        if base == "BROADCAST":  # a one-to-all of the whole buffer, as a ring all-gather of it
            base, size = "ALLGATHER", max(size // max(len(groups[group_of(comm, r, wg)]), 1), 1)
        g = group_of(comm, r, wg)
        if len(groups[g]) > 1:
            op(r, kind="coll", name=name, coll=_AICB_TYPES[base], group=g, bytes=size, algo="ring")

    for r in range(n):
        for mb in range(ga):
            for name, fwd_ns, fwd_c, fwd_b, *_ in layers:
                op(r, kind="compute", name=f"fwd_{name}", duration_ns=max(fwd_ns, 0))
                comm_op(r, fwd_c, fwd_b, f"fwd_{name}", False)
            for name, _, _, _, ig_ns, ig_c, ig_b, wg_ns, wg_c, wg_b, upd in reversed(layers):
                op(r, kind="compute", name=f"ig_{name}", duration_ns=max(ig_ns, 0))
                comm_op(r, ig_c, ig_b, f"ig_{name}", False)
                op(r, kind="compute", name=f"wg_{name}", duration_ns=max(wg_ns, 0))
                if mb == ga - 1:
                    comm_op(r, wg_c, wg_b, f"wg_{name}", True)
    meta = dict(ranks=n, groups=groups, iterations=1, layout=dict(tp=tp, pp=pp, dp=dp, ep=ep, microbatches=ga),
                provenance=dict(importer="aicb", source=str(path), header=lines[0]))
    return Trace(new_ops(rows), meta)


_KINETO_COLLS = {"allreduce": "all_reduce", "all_reduce": "all_reduce", "allgather": "all_gather",
                 "all_gather": "all_gather", "_allgather_base": "all_gather", "all_gather_into_tensor": "all_gather",
                 "reduce_scatter": "reduce_scatter", "reducescatter": "reduce_scatter",
                 "_reduce_scatter_base": "reduce_scatter", "reduce_scatter_tensor": "reduce_scatter",
                 "all_to_all": "all_to_all", "alltoall": "all_to_all", "all_to_all_single": "all_to_all",
                 "alltoall_base": "all_to_all", "broadcast": "all_gather"}
_DTYPE_BYTES = {"float": 4, "float32": 4, "half": 2, "float16": 2, "bfloat16": 2, "double": 8, "float64": 8,
                "int": 4, "int32": 4, "long": 8, "int64": 8, "char": 1, "byte": 1, "int8": 1, "uint8": 1, "bool": 1}


def _load_kineto(path):
    import gzip
    import json

    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such Kineto trace")
    try:
        opener = gzip.open if p.suffix == ".gz" else open
        with opener(p, "rt", encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError, EOFError) as e:
        raise InputError(f"{p}: not a Kineto JSON trace ({str(e)[:100]})") from None


def import_kineto(paths: list[str | Path]) -> Trace:
    """PyTorch profiler (Kineto) JSON captures, one file per rank (``.json`` or ``.json.gz``),
    with NCCL metadata (``distributedInfo`` and the kernels' ``Collective name``, ``In msg
    nelems``, ``dtype``, ``Process Group Ranks``).

    Per rank, GPU activity (kernels, memcpy, memset) becomes ops: each NCCL kernel a collective
    (broadcast is modelled as an all-gather of its buffer), each run of other kernels between two
    collectives one compute op spanning first start to last end.  Edges: compute ops in order;
    collectives in order on the communication stream, each after the last compute op that had
    ended when it started; the rank's last op after everything.  Ranks without a file mirror
    rank 0's (SPMD), so a single-rank capture replays on the whole job.
    """
    try:
        return _import_kineto([(Path(p), _load_kineto(p)) for p in paths])
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise InputError(f"kineto: a malformed trace ({e.__class__.__name__}: {str(e)[:80]})") from None


def _import_kineto(docs) -> Trace:
    by_rank, world, pgs = {}, None, {}
    for p, d in docs:
        info = d.get("distributedInfo") if isinstance(d, dict) else None
        if not info or "rank" not in info or "world_size" not in info:
            raise InputError(f"{p}: no NCCL metadata (distributedInfo with rank and world_size)")
        w = int(info["world_size"])
        if world is not None and w != world:
            raise InputError(f"{p}: world_size {w} differs from the other files' {world}")
        world = w
        for pg in info.get("pg_config", []):
            pgs[str(pg.get("pg_name"))] = [int(r) for r in pg.get("ranks", [])]
        by_rank[int(info["rank"])] = (p, d.get("traceEvents", []))
    per_rank_ops = {}
    for rank, (p, events) in by_rank.items():
        gpu = sorted((e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")),
                     key=lambda e: float(e["ts"]))
        if not any("Collective name" in e.get("args", {}) for e in gpu):
            raise InputError(f"{p}: no NCCL metadata on any GPU kernel (a capture without record_shapes / NCCL info?)")
        ops, run = [], None
        for e in gpu:
            a = e.get("args", {})
            t0, t1 = float(e["ts"]) * 1000, (float(e["ts"]) + float(e.get("dur", 0))) * 1000  # us -> ns
            if "Collective name" in a:
                name = str(a["Collective name"]).lower()
                if name not in _KINETO_COLLS:
                    raise InputError(f"{p}: unknown collective type {a['Collective name']!r}")
                size = int(a.get("In msg nelems", 0)) * _DTYPE_BYTES.get(str(a.get("dtype", "float")).lower(), 4)
                group_ranks = a.get("Process Group Ranks")
                if isinstance(group_ranks, str):
                    group_ranks = [int(x) for x in group_ranks.strip("[]").split(",") if x.strip()]
                group = f"pg{a.get('Process Group Name', '0')}"
                pgs.setdefault(group[2:], list(group_ranks or range(world)))
                ops.append(("coll", t0, t1, _KINETO_COLLS[name], group, size, name))
            elif run is not None and ops and ops[-1][0] == "compute" and ops[-1] is run:
                run = ("compute", run[1], max(run[2], t1))
                ops[-1] = run
            else:
                run = ("compute", t0, t1)
                ops.append(run)
        per_rank_ops[rank] = ops
    if 0 not in per_rank_ops:
        raise InputError("kineto: no file for rank 0 (needed to mirror the ranks without a capture)")
    rows = []
    for rank in range(world):
        ops = per_rank_ops.get(rank, per_rank_ops[0])
        base = len(rows)
        last_compute, last_coll, computes = None, None, []
        for k, o in enumerate(ops):
            oid = base + k
            if o[0] == "compute":
                deps = [last_compute] if last_compute is not None else []
                rows.append(dict(op_id=oid, rank=rank, kind="compute", name="gpu", duration_ns=int(o[2] - o[1]), deps=deps))
                last_compute = oid
                computes.append((o[2], oid))
            else:
                ended = [c for end, c in computes if end <= o[1]]
                deps = ([last_coll] if last_coll is not None else []) + ended[-1:]
                rows.append(dict(op_id=oid, rank=rank, kind="coll", name=o[6], coll=o[3], group=o[4], bytes=o[5],
                                 algo="ring", deps=deps))
                last_coll = oid
        end = len(rows)
        rows.append(dict(op_id=end, rank=rank, kind="compute", name="end", duration_ns=0,
                         deps=[x for x in (last_compute, last_coll) if x is not None]))
    groups = {f"pg{k}": v for k, v in pgs.items()}
    meta = dict(ranks=world, groups=groups, iterations=1,
                provenance=dict(importer="kineto", sources=[str(p) for p, _ in docs], mirrored_from_rank0=sorted(set(range(world)) - set(per_rank_ops))))
    return Trace(new_ops(rows), meta)
