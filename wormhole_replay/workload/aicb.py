"""SimAI / AICB workload text into a program trace (``workload/program.py``).

The format, as SimAI's workload reader (``astra-sim-alibabacloud``, ``Workload.cc``) takes it:

* line 1, the header: the workload type (``HYBRID_TRANSFORMER_FWD_IN_BCKWD``,
  ``HYBRID_TRANSFORMER`` or ``MICRO``), then ``key: value`` pairs: ``model_parallel_NPU_group``
  (TP), ``ep``, ``pp``, ``vpp``, ``ga`` (gradient-accumulation steps: micro-batches),
  ``all_gpus``, ``checkpoints: N l1 .. lN``, ``checkpoint_initiates: N l1 .. lN`` and
  ``pp_comm`` (the bytes a stage sends the next, per micro-batch chunk; written without a colon).
  Older AICB files stop after ``checkpoint_initiates`` and say nothing of the job size;
* line 2: the number of layer lines;
* per layer: ``name dependency fwd_ns fwd_comm fwd_bytes ig_ns ig_comm ig_bytes wg_ns wg_comm
  wg_bytes update_ns``.  A communication type is ``ALLREDUCE``, ``ALLGATHER``, ``REDUCESCATTER``,
  ``ALLTOALL`` or ``BROADCAST``, optionally suffixed ``_EP`` (the expert-parallel group) or
  ``_DP_EP`` (the DP group of the rank's experts); without a suffix the forward and input-gradient
  columns use the TP group and the weight-gradient column the DP group, as SimAI does.

Every rank runs the file.  AICB writes all ``ga`` micro-batches out (its generator loops over
them), so the layer lines are one whole iteration: forward through every line in order, compute
then its collective (blocking); backward through them in reverse, input-gradient compute and
collective (blocking), then weight-gradient compute and collective (not blocking: the next layer
goes on while it runs, and the iteration ends when it is done), as SimAI's
``iterate_hybrid_parallel_Transformer_fwd_in_bckwd`` runs them.  ``ga`` is therefore metadata,
not a repeat count.

Pipeline parallelism is ours: SimAI's network backend runs every rank on the same file with
PP 1 and adds the pipeline analytically (a bubble, and ``2 x vpp x ga`` exposed messages of
``pp_comm`` bytes).  Here ranks are laid out ``(stage, dp, tp)`` as in ``workload/program.py``
and the stages exchange real messages.  Decided:

* micro-batches are found where AICB starts them, at the ``embedding_layer`` lines (there must be
  ``ga`` of them, equally spaced); the lines before the first are the iteration's head (gradient
  gathers and norms, whose weight-gradient collectives run at the very end of the backward), those
  after the last micro-batch its tail (loss, optimizer);
* each micro-batch's lines are cut into ``vpp`` chunks (of nearly equal line counts); in the
  forward, a stage receives chunk c's activations from the previous stage before running it and
  sends them on to the next when done (``pp_comm`` bytes; the send does not block); in the
  backward the gradients go the other way.  That makes ``2 x vpp x ga`` messages per rank and
  iteration, SimAI's count.  The interleaved schedule's hop from the last stage back to the first
  between virtual chunks is not modelled: chunk c of stage p feeds chunk c of stage p+1;
* the order is the file's (all forwards, then all backwards: GPipe), as SimAI runs it, not 1F1B.

Activation recomputation (``checkpoints``) is read but not replayed: a warning says so.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import InputError, read_input_text, warn_input
from .program import job_shape
from .trace import OpsBuilder, Trace, no_gc

COMM_TYPES = {"ALLREDUCE": "all_reduce", "ALLGATHER": "all_gather", "REDUCESCATTER": "reduce_scatter",
              "ALLTOALL": "all_to_all", "BROADCAST": "broadcast"}
HEADER_INTS = {"model_parallel_NPU_group": "tp", "ep": "ep", "pp": "pp", "vpp": "vpp", "ga": "ga",
               "all_gpus": "all_gpus", "pp_comm": "pp_comm"}
HEADER_LISTS = ("checkpoints", "checkpoint_initiates")  # a count, then that many layer numbers
TYPES = ("HYBRID_TRANSFORMER_FWD_IN_BCKWD", "HYBRID_TRANSFORMER", "MICRO")
LAYER_FIELDS = 12
MICROBATCH_START = "embedding_layer"


def read_header(path, line: str) -> tuple[str, dict, list[str]]:
    """``(type, values, unknown)``: the workload type, the header's known values (``tp, ep, pp,
    vpp, ga, all_gpus, pp_comm, checkpoints, checkpoint_initiates``) and the tokens it does not
    know."""
    tokens = line.split()
    kind = tokens[0]
    if kind not in TYPES:
        raise InputError(f"{path}:1: unknown workload type {kind!r} (expected {', '.join(TYPES)})")
    values, unknown, i = {}, [], 1
    try:
        while i < len(tokens):
            key = tokens[i].rstrip(":")
            if key in HEADER_INTS:
                values[HEADER_INTS[key]] = int(tokens[i + 1])
                i += 2
            elif key in HEADER_LISTS:
                count = int(tokens[i + 1])
                values[key] = [int(x) for x in tokens[i + 2:i + 2 + count]]
                if len(values[key]) != count:
                    raise IndexError
                i += 2 + count
            else:
                unknown.append(tokens[i].rstrip(":"))
                # a key we do not know: skip its value too if it looks like one
                i += 2 if tokens[i].endswith(":") and i + 1 < len(tokens) and not tokens[i + 1].endswith(":") else 1
    except (IndexError, ValueError):
        raise InputError(f"{path}:1: malformed header at {tokens[i]!r} (expected 'key: integer')") from None
    return kind, values, unknown


def import_aicb(path: str | Path, gpus: int | None = None) -> Trace:
    """An AICB workload file as a program trace (see the module docstring).  The job size is
    ``gpus`` if given (it overrides the header's ``all_gpus``, with a warning when they differ),
    else ``all_gpus``, else left open: ``replay`` takes it from the topology or ``--gpus``."""
    text = read_input_text(path, "AICB workload file")
    lines = [(i + 1, ln.split()) for i, ln in enumerate(text.splitlines()) if ln.strip()]
    if len(lines) < 2:
        raise InputError(f"{path}: expected a header line and a layer count")
    kind, h, unknown = read_header(path, text.splitlines()[lines[0][0] - 1])
    micro = kind == "MICRO"
    tp, ep, pp = (1, 1, 1) if micro else (h.get("tp", 1), h.get("ep", 1), h.get("pp", 1))
    vpp, ga = (1, 1) if micro else (h.get("vpp", 1), h.get("ga", 1))
    for name, v in (("model_parallel_NPU_group", tp), ("ep", ep), ("pp", pp), ("vpp", vpp), ("ga", ga)):
        if v < 1:
            raise InputError(f"{path}:1: {name} {v}: must be >= 1")
    pp_comm = h.get("pp_comm", 0)
    if pp > 1 and pp_comm <= 0:
        raise InputError(f"{path}:1: pp {pp} but no pp_comm (the bytes a stage sends the next)")
    n = gpus if gpus is not None else h.get("all_gpus")
    warnings = []
    if unknown:
        warnings.append(f"header fields not known here, ignored: {', '.join(unknown)}")
    if gpus is not None and "all_gpus" in h and gpus != h["all_gpus"]:
        warnings.append(f"the header's all_gpus {h['all_gpus']} replaced by --gpus {gpus}")
    if h.get("checkpoints"):
        warnings.append(f"activation recomputation (checkpoints: {len(h['checkpoints'])} layers) is not replayed")

    lineno, count = lines[1]
    try:
        n_layers = int(count[0])
    except ValueError:
        raise InputError(f"{path}:{lineno}: expected the number of layers, got {' '.join(count)!r}") from None
    body = lines[2:]
    if len(body) < n_layers:
        raise InputError(f"{path}: the header announces {n_layers} layers, the file has {len(body)}")
    layers, linenos, extra = [], [], None
    for lineno, t in body[:n_layers]:
        if len(t) < LAYER_FIELDS:
            raise InputError(f"{path}:{lineno}: expected {LAYER_FIELDS} fields per layer, got {len(t)}")
        if len(t) > LAYER_FIELDS and extra is None:
            extra = lineno
        try:
            row = (t[0], int(t[2]), t[3], int(t[4]), int(t[5]), t[6], int(t[7]), int(t[8]), t[9], int(t[10]))
        except ValueError:
            raise InputError(f"{path}:{lineno}: bad number") from None
        for comm in (row[2], row[5], row[8]):
            if comm != "NONE" and _split_comm(comm)[0] not in COMM_TYPES:
                raise InputError(f"{path}:{lineno}: unknown collective type {comm!r}")
        if min(row[1], row[4], row[7], row[3], row[6], row[9]) < 0:
            raise InputError(f"{path}:{lineno}: a negative time or size")
        layers.append(row)
        linenos.append(lineno)
    if extra is not None:
        warnings.append(f"layer lines with more than {LAYER_FIELDS} fields (from line {extra}): the extra fields are ignored")
    if len(body) > n_layers:
        warnings.append(f"{len(body) - n_layers} line(s) after the {n_layers} announced layers, ignored")

    meta = dict(ranks=n, groups={}, iterations=1, program=dict(tp=tp, pp=pp, ep=ep),
                layout=dict(tp=tp, pp=pp, ep=ep, vpp=vpp, microbatches=ga),
                provenance=dict(importer="aicb", source=str(path), header=text.splitlines()[lines[0][0] - 1].strip(),
                                pp_comm=pp_comm))
    chunks = _chunks(path, layers, pp, vpp, ga)
    with no_gc():
        ops = _programs(path, layers, linenos, tp, pp, ep, n, pp_comm, chunks)
    trace = Trace(ops, meta)
    if n is not None:
        trace.meta["layout"]["dp"] = job_shape(trace, n, str(path))[2]
    for w in warnings:
        warn_input(f"{path}: {w}")
    return trace


def _split_comm(comm: str) -> tuple[str, str | None]:
    """``ALLTOALL_EP`` -> (``ALLTOALL``, ``ep``); no suffix -> (type, None)."""
    for suffix, role in (("_DP_EP", "dp_ep"), ("_EP", "ep")):
        if comm.endswith(suffix):
            return comm[: -len(suffix)], role
    return comm, None


def _chunks(path, layers, pp, vpp, ga) -> list[tuple[int, int, str]]:
    """``(first, last, name)`` of each pipeline chunk (layer indices; ``mb{k}_c{c}``), in forward
    order; none without a pipeline."""
    if pp == 1:
        return []
    starts = [i for i, row in enumerate(layers) if row[0] == MICROBATCH_START]
    if not starts or (ga > 1 and len(starts) != ga):
        raise InputError(f"{path}: pp {pp} and ga {ga}, but {len(starts)} {MICROBATCH_START} line(s): cannot tell "
                         f"the micro-batches apart (AICB starts each with an {MICROBATCH_START})")
    if ga == 1:
        bodies = [(starts[0], len(layers))]
    else:
        size = starts[1] - starts[0]
        if any(b - a != size for a, b in zip(starts, starts[1:])) or starts[-1] + size > len(layers):
            raise InputError(f"{path}: the {ga} micro-batches (from each {MICROBATCH_START}) differ in length")
        bodies = [(s, s + size) for s in starts]
    out = []
    for k, (a, b) in enumerate(bodies):
        for c, part in enumerate(np.array_split(np.arange(a, b), min(vpp, b - a))):
            out.append((int(part[0]), int(part[-1]), f"mb{k}_c{c}"))
    return out


def _programs(path, layers, linenos, tp, pp, ep, n, pp_comm, chunks):
    """The ops of every stage's program (``rank`` is the stage), one builder for all."""
    known = {"tp": tp, "ep": ep}
    if n is not None:
        dp = n // (tp * pp) if n % (tp * pp) == 0 else None
        if dp is not None:
            known.update(dp=dp, dp_ep=dp // ep if dp % ep == 0 else None)
    ops = OpsBuilder()
    first_of = {a: name for a, _, name in chunks}
    last_of = {b: name for _, b, name in chunks}

    for p in range(pp):
        last = []

        def op(off_path=False, **kw):
            nonlocal last
            oid = ops.add(p, deps=last, **kw)
            if not off_path:
                last = [oid]
            return oid

        def compute(name, ns):
            if ns > 0:
                op(kind="compute", name=name, duration_ns=ns)

        def comm(name, ctype, size, wg, i):
            if ctype == "NONE" or size <= 0:
                return
            base, role = _split_comm(ctype)
            role = role or ("dp" if wg else "tp")
            coll = COMM_TYPES[base]
            if coll == "broadcast":  # a one-to-all of the whole buffer, as a ring all-gather of it
                members = known.get(role)
                if members is None:
                    raise InputError(f"{path}:{linenos[i]}: a BROADCAST over the {role} group needs the job "
                                     f"size (give --gpus)")
                coll, size = "all_gather", max(size // max(members, 1), 1)
            op(off_path=wg, kind="coll", name=name, coll=coll, group=role, bytes=size, algo="ring")

        def pipe(kind, name, peer):
            op(off_path=kind == "send", kind=kind, name=name, peer=peer, bytes=pp_comm)

        for i, (name, fwd_ns, fwd_c, fwd_b, *_rest) in enumerate(layers):
            c = first_of.get(i)
            if c is not None and p > 0:
                pipe("recv", f"pp_act_{c}", p - 1)
            compute(f"fwd_{name}", fwd_ns)
            comm(f"fwd_{name}", fwd_c, fwd_b, False, i)
            c = last_of.get(i)
            if c is not None and p < pp - 1:
                pipe("send", f"pp_act_{c}", p + 1)
        for i in reversed(range(len(layers))):
            name, _, _, _, ig_ns, ig_c, ig_b, wg_ns, wg_c, wg_b = layers[i]
            c = last_of.get(i)
            if c is not None and p < pp - 1:
                pipe("recv", f"pp_grad_{c}", p + 1)
            compute(f"ig_{name}", ig_ns)
            comm(f"ig_{name}", ig_c, ig_b, False, i)
            compute(f"wg_{name}", wg_ns)
            comm(f"wg_{name}", wg_c, wg_b, True, i)
            c = first_of.get(i)
            if c is not None and p > 0:
                pipe("send", f"pp_grad_{c}", p - 1)
    return ops.frame()
