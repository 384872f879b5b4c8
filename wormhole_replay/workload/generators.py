"""Synthetic training iterations: Megatron-style GPT with tensor, pipeline and data parallelism.

Layout (Megatron's rank order, tensor-parallel fastest): ``rank = (p * dp + d) * tp + t`` for
pipeline stage p, data-parallel index d, tensor-parallel index t; TP groups are consecutive ranks
(one server when ``tp <= gpus_per_server``), DP groups share (p, t), pipeline neighbours share (d, t).

Per layer and micro-batch (b sequences of s tokens, hidden h, fp16 activations):

* forward: attention and MLP compute, each followed by a TP all-reduce of ``b*s*h*2`` bytes
  (GPT-175B at TP 8, b=1, s=2048: 50,331,648 bytes);
* backward: twice the forward compute, and the same two all-reduces.

Compute time is FLOPs / (``tflops`` per GPU): ``24*b*s*h^2 + 4*b*s^2*h`` per layer forward
(Megatron's count), divided by TP.  Pipeline stages pass ``b*s*h*2``-byte activations forward and
gradients backward (send/recv), in the 1F1B schedule: ``pp - p - 1`` warm-up forwards, then one
forward and one backward in turn, then the remaining backwards.  Data-parallel gradients
(``12*h^2`` parameters per layer, plus the ``V*h`` embedding on the first and last stages, fp16,
divided by TP) are all-reduced in buckets, each launched as soon as the last micro-batch's
backward has produced it (overlapped with the rest of the backward); the optimizer step waits for
all of them, and the next iteration for the optimizer step.  Buckets are filled as PyTorch DDP
fills them (``compute_bucket_assignment_by_size``): gradient tensor by tensor in the order the
backward produces them (a layer's MLP, its two ``4h^2`` matrices, then its attention, the
output projection ``h^2`` and the fused QKV ``3h^2``; last the embedding), a bucket closing once it
holds at least its limit: 1 MiB for an iteration's first bucket (DDP's ``first_bucket_bytes``),
``bucket_mb`` after it.  So a tensor larger than the limit is a bucket of its own, and buckets
close inside a layer: GPT-13B at TP 8 (128 GPUs, PP 2) gives all-reduces of 26.2 MB (the first:
one MLP matrix), then 26.2 MB each (the other, then projection and QKV together), ring steps of
3.3 MB over its DP 8.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import InputError
from .presets import GPT_PRESETS, MOE_PRESETS, GptShape  # noqa: F401  (part of this module's API)
from .program import replicate
from .trace import OpsBuilder, Trace, no_gc


def gpt_trace(shape: GptShape, gpus: int, tp: int = 1, pp: int = 1, dp: int | None = None, microbatches: int = 1,
              iterations: int = 1, bucket_mb: float = 25.0, micro_batch_size: int = 1, tflops: float = 150.0,
              ep: int = 1, name: str = "gpt") -> Trace:
    """A GPT (or, with ``shape.experts``, MoE) training trace; see the module docstring.

    MoE (Mixtral-like, every layer): the MLP becomes an expert-parallel all-to-all dispatch of
    the tokens (``b*s*h*2*topk`` bytes per rank), the experts' compute (``topk`` times a dense
    MLP), and an all-to-all combine, forward and backward.  Expert-parallel groups of ``ep`` ranks
    sit inside the data-parallel group (as in Megatron): attention gradients are all-reduced over
    DP, expert gradients (``8*h^2`` parameters per expert, ``experts/ep`` experts per rank) over
    the ``dp/ep`` ranks holding the same experts."""
    with no_gc():
        return _gpt_trace(shape, gpus, tp, pp, dp, microbatches, iterations, bucket_mb, micro_batch_size, tflops, ep, name)


def generate(kind: str, gpus: int, model: str | None = None, tp: int = 1, pp: int = 1, dp: int | None = None,
             ep: int = 1, microbatches: int = 1, iterations: int = 1, bucket_mb: float = 25.0, tflops: float = 150.0,
             **shape) -> Trace:
    """What ``gen gpt|moe`` writes: the trace of preset ``model`` of ``kind`` (or of a custom
    ``shape``: ``presets.SHAPE_FIELDS``) on ``gpus`` GPUs laid out tp x pp x dp (x ep)."""
    from .presets import model_shape

    for name, v in (("gpus", gpus), ("tp", tp), ("pp", pp), ("microbatches", microbatches), ("iterations", iterations)):
        if v < 1:
            raise InputError(f"{name} must be >= 1")
    return gpt_trace(model_shape(kind, model, **shape), gpus, tp, pp, dp, microbatches, iterations, bucket_mb,
                     tflops=tflops, ep=ep, name=f"{kind} {model or 'custom'}")


def _gpt_trace(shape, gpus, tp, pp, dp, microbatches, iterations, bucket_mb, micro_batch_size, tflops, ep, name):
    dp = dp if dp is not None else gpus // max(tp * pp, 1)
    if tp < 1 or pp < 1 or dp < 1 or tp * pp * dp != gpus:
        raise InputError(f"impossible layout: tp {tp} x pp {pp} x dp {dp} != {gpus} GPUs")
    moe = shape.experts > 0
    if moe and (ep < 1 or dp % ep or shape.experts % ep or not 1 <= shape.topk <= shape.experts):
        raise InputError(f"impossible MoE layout: ep {ep} must divide dp {dp} and the {shape.experts} experts, "
                         f"and 1 <= topk {shape.topk} <= experts")
    if shape.layers % pp:
        raise InputError(f"{shape.layers} layers do not split into {pp} pipeline stages")
    if microbatches < 1 or iterations < 1 or bucket_mb <= 0:
        raise InputError("microbatches and iterations must be >= 1, bucket_mb > 0")
    b, s, h = micro_batch_size, shape.seq, shape.hidden
    act_bytes = b * s * h * 2
    fwd_flops = (24 * b * s * h * h + 4 * b * s * s * h) / tp
    fwd_ns = max(1, int(fwd_flops / (tflops * 1e12) * 1e9))
    half_fwd = max(1, fwd_ns // 2)  # attention and MLP halves
    layers_per_stage = shape.layers // pp
    square = h * h * 2 // tp  # one h x h fp16 gradient matrix, split by TP
    # gradient tensors in the order the backward produces them, per part of a layer (MoE: its
    # experts are reduced apart, over their own group)
    part_grads = {"mlp": () if moe else (4 * square, 4 * square), "attn": (square, 3 * square)}
    expert_grad_bytes = 8 * h * h * 2 * (shape.experts // ep) // tp if moe else 0
    a2a_bytes = b * s * h * 2 * shape.topk
    emb_grad_bytes = shape.vocab * h * 2 // tp
    bucket = int(bucket_mb * 1024 * 1024)
    first_bucket = min(FIRST_BUCKET_BYTES, bucket)

    def rank(p, d, t):
        return (p * dp + d) * tp + t

    groups = {}
    for p in range(pp):
        for d in range(dp):
            groups[f"tp_p{p}_d{d}"] = [rank(p, d, t) for t in range(tp)]
        for t in range(tp):
            groups[f"dp_p{p}_t{t}"] = [rank(p, d, t) for d in range(dp)]
            if moe:
                for blk in range(dp // ep):
                    groups[f"ep_p{p}_t{t}_b{blk}"] = [rank(p, blk * ep + e, t) for e in range(ep)]
                for e in range(ep):
                    groups[f"edp_p{p}_t{t}_e{e}"] = [rank(p, e + j * ep, t) for j in range(dp // ep)]

    # Every rank of a stage runs the same program; only its groups and pipeline peers differ, and
    # every dependency is within the rank.  So write one rank's program per stage, with group
    # and peer *roles*, then replicate it over the stage's (d, t) ranks with NumPy.
    tables = []
    next_id = 0
    for p in range(pp):
        prog = OpsBuilder()
        last = []
        pending = []

        def op(extra=(), **kw):
            nonlocal last
            oid = prog.add(0, deps=last + list(extra), **kw)
            last = [oid]
            return oid

        def off_path(**kw):  # a non-blocking send, or a gradient bucket overlapped with the backward
            nonlocal last
            before = last
            oid = op(**kw)
            last = before
            return oid

        def reduce_grads(group, grad_bytes, it):  # a gradient all-reduce, overlapped with the backward
            pending.append(off_path(kind="coll", name="dp_grad_bucket", iteration=it, coll="all_reduce",
                                    group=group, bytes=int(grad_bytes), algo="ring"))

        def produced(grad_bytes, it):
            """A gradient tensor is ready: into the open bucket, launched once it is full."""
            nonlocal ready, limit
            ready += grad_bytes
            if ready >= limit:
                reduce_grads("dp", ready, it)
                ready, limit = 0, bucket

        for it in range(iterations):
            ready, limit = 0, first_bucket
            for kind, mb in _one_f_one_b(pp, p, microbatches):
                fwd = kind == "F"
                if fwd and p > 0:
                    op(kind="recv", name=f"act_mb{mb}", iteration=it, peer=_PREV, bytes=act_bytes)
                if not fwd and p < pp - 1:
                    op(kind="recv", name=f"grad_mb{mb}", iteration=it, peer=_NEXT, bytes=act_bytes)
                for layer in (range(layers_per_stage) if fwd else reversed(range(layers_per_stage))):
                    for part in (("attn", "mlp") if fwd else ("mlp", "attn")):  # the backward runs in reverse
                        if moe and part == "mlp" and ep > 1:
                            op(kind="coll", name=f"{kind}_dispatch_l{layer}", iteration=it, coll="all_to_all",
                               group="ep", bytes=a2a_bytes, algo="direct")
                        work = half_fwd * (shape.topk if moe and part == "mlp" else 1)
                        op(kind="compute", name=f"{kind}_{part}_l{layer}", iteration=it, duration_ns=work if fwd else 2 * work)
                        if not fwd and mb == microbatches - 1 and dp > 1:
                            for grad_bytes in part_grads[part]:
                                produced(grad_bytes, it)
                        if not fwd and mb == microbatches - 1 and moe and part == "mlp" and dp // ep > 1:
                            reduce_grads("edp", expert_grad_bytes, it)
                        if moe and part == "mlp" and ep > 1:
                            op(kind="coll", name=f"{kind}_combine_l{layer}", iteration=it, coll="all_to_all",
                               group="ep", bytes=a2a_bytes, algo="direct")
                        if tp > 1:
                            op(kind="coll", name=f"{kind}_{part}_tp_l{layer}", iteration=it, coll="all_reduce",
                               group="tp", bytes=act_bytes, algo="ring")
                    if not fwd and mb == microbatches - 1 and dp > 1 and layer == 0 and p == 0:
                        produced(emb_grad_bytes, it)  # the input embedding's, last of the backward
                if fwd and p < pp - 1:
                    off_path(kind="send", name=f"act_mb{mb}", iteration=it, peer=_NEXT, bytes=act_bytes)
                if not fwd and p > 0:
                    off_path(kind="send", name=f"grad_mb{mb}", iteration=it, peer=_PREV, bytes=act_bytes)
            if dp > 1 and (ready > 0 or (p == pp - 1 and pp > 1 and emb_grad_bytes)):
                extra = emb_grad_bytes if (p == pp - 1 and pp > 1) else 0
                reduce_grads("dp", ready + extra, it)
            # the optimizer step waits for every gradient bucket of this rank
            op(kind="compute", name="optimizer", iteration=it, duration_ns=max(1, fwd_ns // 10), extra=pending)
            pending = []
        replicas = [(d, t) for d in range(dp) for t in range(tp)]
        names = {
            "tp": [f"tp_p{p}_d{d}" for d, t in replicas], "dp": [f"dp_p{p}_t{t}" for d, t in replicas],
            "ep": [f"ep_p{p}_t{t}_b{d // ep}" for d, t in replicas], "edp": [f"edp_p{p}_t{t}_e{d % ep}" for d, t in replicas],
        }
        ranks = np.array([rank(p, d, t) for d, t in replicas], dtype=np.int64)
        peers = {_PREV: np.array([rank(p - 1, d, t) for d, t in replicas]) if p > 0 else None,
                 _NEXT: np.array([rank(p + 1, d, t) for d, t in replicas]) if p < pp - 1 else None}
        tables.append(replicate(prog.frame(), ranks, names, peers, next_id))
        next_id += len(prog) * len(replicas)
    ops = pd.concat(tables, ignore_index=True) if len(tables) > 1 else tables[0]
    meta = dict(
        ranks=gpus, groups=groups, iterations=iterations,
        layout=dict(tp=tp, pp=pp, dp=dp, ep=ep, microbatches=microbatches, micro_batch_size=b),
        provenance=dict(generator=f"wormhole-replay gen {name}", revision=REVISION, layers=shape.layers, hidden=h, seq=s,
                        vocab=shape.vocab, experts=shape.experts, topk=shape.topk, ep=ep, tflops=tflops,
                        bucket_mb=bucket_mb),
    )
    return Trace(ops, meta)


_PREV, _NEXT = -2, -3  # pipeline peer roles in a stage's program
# what the generator makes of the same arguments (the traces' provenance records it): 2 since its
# DDP buckets are filled tensor by tensor (before: one bucket closed per layer)
REVISION = 2
FIRST_BUCKET_BYTES = 1024 * 1024  # PyTorch DDP's first_bucket_bytes (dist._DEFAULT_FIRST_BUCKET_BYTES)


def _one_f_one_b(pp: int, p: int, m: int) -> list[tuple[str, int]]:
    """The 1F1B order of forwards (F) and backwards (B) of stage p."""
    warm = min(pp - p - 1, m)
    seq = [("F", i) for i in range(warm)]
    f, bwd = warm, 0
    while f < m:
        seq.append(("F", f))
        f += 1
        seq.append(("B", bwd))
        bwd += 1
    seq += [("B", i) for i in range(bwd, m)]
    return seq
