"""PyTorch profiler (Kineto) Chrome-trace JSON into the native trace, one file per rank.

Two ways to find the collectives, tried in this order:

* **kernel metadata** (PyTorch 2.1 and later with NCCL info): NCCL kernels carry ``Collective
  name``, ``In msg nelems``, ``dtype`` and ``Process Group Ranks``;
* **CPU annotations** (PyTorch 2.0 and other captures whose kernels carry none): the CPU side's
  ``nccl:all_reduce`` (``nccl:broadcast``, ``nccl:_allgather_base``, ...) ``user_annotation``
  ranges, with ``Input Dims`` and ``Input type`` (recorded with ``record_shapes=True``).  Each NCCL
  kernel on the GPU is matched to the annotation that launched it: the CUDA runtime call whose
  ``correlation`` the kernel carries lies inside the annotation on its thread (or, without
  correlation ids, the k-th NCCL kernel is the k-th annotation's).  Bytes: the tensors' element
  counts times the dtype's size: an all-reduce or broadcast moves all its tensors, an all-gather
  its smallest (the rank's input; the output is ``world`` times that), a reduce-scatter or
  all-to-all its largest (the full input).  The group is the annotation's ``Process Group
  Ranks`` if it has one, else the world.

Either way, per rank, GPU activity (kernels, memcpy, memset) becomes ops: each NCCL kernel a
collective (broadcast modelled as an all-gather of its buffer), each run of other kernels between
two collectives one compute op spanning first start to last end.  Edges: compute ops in order;
collectives in order on the communication stream, each after the last compute op that had ended
when it started; the rank's last op after everything.  Ranks without a file mirror rank 0's
(SPMD), so a single-rank capture replays on the whole job.  ``meta['provenance']['collectives_from']``
says which way was taken (``kernels`` or ``annotations``).

Fields of the communication records (``distributedInfo``, NCCL kernels' and annotations' args)
that are not known here are ignored with one warning per file naming them.
"""

from __future__ import annotations

import bisect
import gzip
import json
from pathlib import Path

from ..errors import InputError, warn_input
from .trace import Trace

COLLECTIVES = {"allreduce": "all_reduce", "all_reduce": "all_reduce", "allgather": "all_gather",
               "all_gather": "all_gather", "_allgather_base": "all_gather", "all_gather_into_tensor": "all_gather",
               "allgather_into_tensor_coalesced": "all_gather",
               "reduce_scatter": "reduce_scatter", "reducescatter": "reduce_scatter",
               "_reduce_scatter_base": "reduce_scatter", "reduce_scatter_tensor": "reduce_scatter",
               "all_to_all": "all_to_all", "alltoall": "all_to_all", "all_to_all_single": "all_to_all",
               "alltoall_base": "all_to_all", "broadcast": "all_gather"}
DTYPE_BYTES = {"float": 4, "float32": 4, "half": 2, "float16": 2, "bfloat16": 2, "double": 8, "float64": 8,
               "int": 4, "int32": 4, "long": 8, "long int": 8, "int64": 8, "char": 1, "byte": 1, "int8": 1,
               "uint8": 1, "unsigned char": 1, "signed char": 1, "bool": 1, "short": 2, "int16": 2,
               "float8_e4m3fn": 1, "float8_e5m2": 1}
GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
ANNOTATION_CATEGORIES = ("user_annotation", "cpu_op")  # not gpu_user_annotation: the GPU-side mirror
# what the communication records may carry; anything else is named in one warning
KNOWN_DISTRIBUTED = {"backend", "rank", "world_size", "pg_count", "pg_config", "nccl_version"}
KNOWN_KERNEL_ARGS = {"External id", "queued", "device", "context", "stream", "correlation", "registers per thread",
                     "shared memory", "blocks per SM", "warps per SM", "grid", "block", "est. achieved occupancy %",
                     "Collective name", "In msg nelems", "Out msg nelems", "Group size", "dtype", "In split size",
                     "Out split size", "Process Group Name", "Process Group Description", "Process Group Ranks"}
KNOWN_ANNOTATION_ARGS = {"External id", "Record function id", "Ev Idx", "Input Dims", "Input type", "Input Strides",
                         "Concrete Inputs", "Sequence number", "Fwd thread id", "Process Group Name",
                         "Process Group Description", "Process Group Ranks"}


def load(path) -> dict:
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
    """Kineto captures, one file per rank (``.json`` or ``.json.gz``): see the module docstring."""
    try:
        return _import([(Path(p), load(p)) for p in paths])
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise InputError(f"kineto: a malformed trace ({e.__class__.__name__}: {str(e)[:80]})") from None


def _ranks_list(value) -> list[int] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [int(x) for x in value.strip("[]").split(",") if x.strip()]
    return [int(x) for x in value]


def _import(docs) -> Trace:
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
        by_rank[int(info["rank"])] = (p, d.get("traceEvents", []), info)
    per_rank_ops, ways = {}, set()
    for rank, (p, events, info) in by_rank.items():
        unknown = set(info) - KNOWN_DISTRIBUTED
        gpu = sorted((e for e in events if e.get("ph") == "X" and e.get("cat") in GPU_CATEGORIES),
                     key=lambda e: float(e["ts"]))
        if any("Collective name" in e.get("args", {}) for e in gpu):
            ways.add("kernels")
            ops = _from_kernels(p, gpu, world, pgs, unknown)
        else:
            ways.add("annotations")
            ops = _from_annotations(p, events, gpu, world, pgs, unknown)
        if unknown:
            warn_input(f"{p}: fields not known here, ignored: {', '.join(sorted(unknown))}")
        per_rank_ops[rank] = ops
    if 0 not in per_rank_ops:
        raise InputError("kineto: no file for rank 0 (needed to mirror the ranks without a capture)")
    rows = _rows(per_rank_ops, world)
    groups = {f"pg{k}": v for k, v in pgs.items()}
    meta = dict(ranks=world, groups=groups, iterations=1,
                provenance=dict(importer="kineto", sources=[str(p) for p, _ in docs],
                                collectives_from="+".join(sorted(ways)),
                                mirrored_from_rank0=sorted(set(range(world)) - set(per_rank_ops))))
    from .trace import new_ops

    return Trace(new_ops(rows), meta)


def _coll(t0, t1, coll, group, size, name):
    return ("coll", t0, t1, coll, group, size, name)


def _times(e):
    t0 = float(e["ts"]) * 1000  # us -> ns
    return t0, t0 + float(e.get("dur", 0)) * 1000


def _group(a, world, pgs) -> str:
    """The group a kernel's or annotation's args name (registered in ``pgs``), else the world."""
    ranks = _ranks_list(a.get("Process Group Ranks"))
    name = str(a.get("Process Group Name", "0"))
    pgs.setdefault(name, ranks or list(range(world)))
    return f"pg{name}"


def _from_kernels(p, gpu, world, pgs, unknown) -> list:
    """GPU activity with NCCL kernels as collectives, from the kernels' own metadata."""
    out = []
    for e in gpu:
        a = e.get("args", {})
        t0, t1 = _times(e)
        if "Collective name" not in a:
            _compute(out, t0, t1)
            continue
        unknown |= set(a) - KNOWN_KERNEL_ARGS
        name = str(a["Collective name"]).lower()
        if name not in COLLECTIVES:
            raise InputError(f"{p}: unknown collective type {a['Collective name']!r}")
        dtype = str(a.get("dtype", "float")).lower()
        if dtype not in DTYPE_BYTES:
            raise InputError(f"{p}: a {name} kernel at ts {e['ts']}: unknown dtype {a.get('dtype')!r}")
        if name in ("all_to_all", "alltoall", "all_to_all_single", "alltoall_base") and a.get("In split size") not in (None, "[]", []):
            unknown.add("In split size (uneven all-to-all splits, replayed as even)")
        size = int(a.get("In msg nelems", 0)) * DTYPE_BYTES[dtype]
        out.append(_coll(t0, t1, COLLECTIVES[name], _group(a, world, pgs), size, name))
    return out


def _compute(out, t0, t1):
    """Add a kernel of [t0, t1] to the run of compute since the last collective."""
    if out and out[-1][0] == "compute":
        out[-1] = ("compute", out[-1][1], max(out[-1][2], t1))
    else:
        out.append(("compute", t0, t1))


def _is_nccl_kernel(e) -> bool:
    return e.get("cat") == "kernel" and "nccl" in str(e.get("name", "")).lower()


def _from_annotations(p, events, gpu, world, pgs, unknown) -> list:
    """GPU activity with NCCL kernels as collectives described by the CPU ``nccl:*`` annotations."""
    anns = sorted((e for e in events if e.get("ph") == "X" and e.get("cat") in ANNOTATION_CATEGORIES
                   and str(e.get("name", "")).startswith("nccl:")), key=lambda e: float(e["ts"]))
    kernels = [e for e in gpu if _is_nccl_kernel(e)]
    if not anns:
        raise InputError(f"{p}: no NCCL metadata on any GPU kernel, and no nccl:* annotation on the CPU side "
                         f"(a capture without NCCL info or record_functions?)")
    owner = _link(p, events, anns, kernels)
    skipped = {}
    out = []
    for e in gpu:
        t0, t1 = _times(e)
        if not _is_nccl_kernel(e):
            _compute(out, t0, t1)
            continue
        ann = owner.get(id(e))
        if ann is None:
            skipped["NCCL kernels no annotation launched"] = skipped.get("NCCL kernels no annotation launched", 0) + 1
            continue
        a = ann.get("args", {})
        unknown |= set(a) - KNOWN_ANNOTATION_ARGS
        name = ann["name"][len("nccl:"):]
        if name not in COLLECTIVES:
            if name in ("send", "recv", "barrier", "_send", "_recv", "recv_any_source"):
                skipped[f"nccl:{name}"] = skipped.get(f"nccl:{name}", 0) + 1  # no peer is recorded
                continue
            raise InputError(f"{p}: {ann['name']} at ts {ann['ts']}: unknown collective type {name!r}")
        size = _annotation_bytes(p, ann, COLLECTIVES[name] if name != "broadcast" else "broadcast")
        out.append(_coll(t0, t1, COLLECTIVES[name], _group(a, world, pgs), size, name))
    used = {id(a) for a in owner.values()}
    alone = sum(1 for a in anns if id(a) not in used)
    if alone:
        skipped["nccl:* annotations without a GPU kernel (outside the capture?)"] = alone
    if skipped:
        warn_input(f"{p}: not replayed: " + ", ".join(f"{n} x{c}" for n, c in sorted(skipped.items())))
    return out


def _link(p, events, anns, kernels) -> dict:
    """``id(kernel) -> annotation``: by the correlation id of the runtime call inside the annotation
    that launched the kernel, else (no correlation ids) by order."""
    by_thread = {}
    for a in anns:
        by_thread.setdefault((a.get("pid"), a.get("tid")), []).append(a)
    starts = {k: [float(a["ts"]) for a in v] for k, v in by_thread.items()}
    launcher = {}  # correlation id -> annotation
    for e in events:
        if e.get("cat") not in ("cuda_runtime", "cuda_driver") or "correlation" not in e.get("args", {}):
            continue
        key = (e.get("pid"), e.get("tid"))
        if key not in by_thread:
            continue
        ts = float(e["ts"])
        i = bisect.bisect_right(starts[key], ts) - 1
        if i >= 0:
            a = by_thread[key][i]
            if ts <= float(a["ts"]) + float(a.get("dur", 0)):
                launcher[e["args"]["correlation"]] = a
    owner = {id(k): launcher[k["args"]["correlation"]] for k in kernels
             if k.get("args", {}).get("correlation") in launcher}
    if owner:
        return owner
    if len(kernels) != len(anns):
        raise InputError(f"{p}: {len(kernels)} NCCL kernels but {len(anns)} nccl:* annotations, and no correlation "
                         f"ids to tell which launched which")
    return {id(k): a for k, a in zip(kernels, anns)}


def _tensors(dims) -> list[int]:
    """Element counts of the tensors an ``Input Dims`` entry describes (a shape, or nested lists of
    shapes for tensor lists)."""
    if not isinstance(dims, list):
        return []
    if all(isinstance(x, int) for x in dims):
        n = 1
        for x in dims:
            n *= x
        return [n] if dims else []
    return [n for d in dims for n in _tensors(d)]


def _annotation_bytes(p, ann, coll) -> int:
    a = ann.get("args", {})
    where = f"{p}: {ann['name']} at ts {ann['ts']}"
    if "Input Dims" not in a:
        raise InputError(f"{where}: no 'Input Dims' (profile with record_shapes=True)")
    counts = _tensors(a["Input Dims"])
    if not counts:
        raise InputError(f"{where}: 'Input Dims' names no tensor")
    types = [str(t).lower().removeprefix("c10::") for t in a.get("Input type", [])]
    dtype = next((t for t in types if t in DTYPE_BYTES), None)
    if dtype is None:
        raise InputError(f"{where}: no known element type in 'Input type' {a.get('Input type')!r}")
    elements = {"all_reduce": sum(counts), "broadcast": sum(counts), "all_gather": min(counts)}.get(coll, max(counts))
    return elements * DTYPE_BYTES[dtype]


def _rows(per_rank_ops: dict, world: int) -> list[dict]:
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
    return rows
