"""Importers: other projects' workload files into the native trace.

* ``hpcc-flow``: the reference simulator's ``flow.txt``.  Each flow becomes a send/recv pair
  between ranks (the flow file's node ids, renumbered densely; ``rank_to_node`` keeps the map, so
  a replay uses the same hosts), its start time a compute op before the send.
* ``aicb``: SimAI / AICB workload text, in :mod:`.aicb` (re-exported here).

* ``kineto``: PyTorch profiler JSON with NCCL metadata, one file per rank (:func:`import_kineto`).

Chakra ET is in :mod:`.chakra`.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError
from .aicb import import_aicb  # noqa: F401  (part of this module's API)
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
