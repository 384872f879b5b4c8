"""Write an AICB / SimAI workload file of the form of SimAI's analytical example (MoE, pipeline,
experts, micro-batches), at any size, for measuring the AICB import and its replay.

    python tools/aicb_workload.py --tp 2 --ep 16 --pp 12 --vpp 8 --ga 24 --gpus 9216 --layers 8 -o big.txt
    python tools/aicb_workload.py --tp 2 --ep 4 --pp 4 --vpp 2 --ga 2 --gpus 128 --layers 2 --hidden 1024 -o cut.txt

The lines follow AICB's Megatron MoE output: a head (gradient gathers and norms in the
weight-gradient column, plain and ``_DP_EP``), then per micro-batch an ``embedding_layer``, per
layer ``attention_column``, ``attention_row`` and the MoE rows (token all-gather, dispatch and
combine all-to-alls in the EP group, expert-parallel gathers), a ``final_column``, then a tail
(loss and optimizer all-reduces).  Sizes come from the shape (fp16, one sequence per
micro-batch: activations ``2 x seq x hidden`` bytes, the header's ``pp_comm``); compute times from
``--layer-us``.  Our own numbers, not AICB's: the form is what matters here.  ``--no-all-gpus``
writes the older header (no ep/pp/ga/all_gpus, no pipeline).
"""

from __future__ import annotations

import argparse


def line(name, fwd_ns=1, fwd="NONE", fwd_b=0, ig_ns=1, ig="NONE", ig_b=0, wg_ns=1, wg="NONE", wg_b=0):
    return "\t".join(str(x) for x in (name, -1, fwd_ns, fwd, fwd_b, ig_ns, ig, ig_b, wg_ns, wg, wg_b, 100))


def workload(tp, ep, pp, vpp, ga, gpus, layers, hidden, seq, topk, layer_us, all_gpus=True) -> str:
    act = 2 * seq * hidden  # one micro-batch's activations, fp16
    t = int(layer_us * 1000)
    dense = 2 * layers * 4 * hidden * hidden // tp  # attention parameters of the stage, fp16
    experts = 2 * layers * 8 * hidden * hidden // tp  # the stage's experts on this rank
    head = [line("grad_gather", wg="ALLGATHER", wg_b=dense), line("grad_param_comm", wg="REDUCESCATTER", wg_b=2 * dense),
            line("grad_param_compute", ig_ns=max(1, t // 4)), line("embedding_grads", ig="ALLREDUCE", ig_b=act)]
    if ep > 1:
        head += [line("moe_grad_norm1", wg="ALLGATHER_DP_EP", wg_b=experts),
                 line("moe_grad_norm2", wg="REDUCESCATTER_DP_EP", wg_b=2 * experts)]
    body = []
    for _ in range(ga):
        body.append(line("embedding_layer", t // 4, "ALLREDUCE", act, 1, "NONE", 0, t))
        for _ in range(layers):
            body += [line("attention_column", t // 2, "ALLGATHER", act, t // 4, "REDUCESCATTER", act, t // 4),
                     line("attention_row", t // 2, "REDUCESCATTER", act, t // 4, "ALLGATHER", act, t // 4),
                     line("mlp_moelayer", t, "ALLGATHER", act // 32, t, "ALLGATHER", act // 32),
                     line("mlp_moelayer", 1, "ALLTOALL_EP", act * topk, 1, "ALLTOALL_EP", act * topk),
                     line("mlp_moelayer", 1, "ALLTOALL_EP", act * topk, 1, "ALLTOALL_EP", act * topk)]
        body.append(line("final_column", t // 2, "ALLGATHER", act, t // 2, "REDUCESCATTER", 0, t // 2))
    tail = [line(f"cross_entropy{i}", 0, "ALLREDUCE", 16384, 0) for i in (1, 2, 3)]
    tail += [line(f"optimizer{i}", 0, "ALLREDUCE", 4, 0) for i in (1, 2, 3, 4)]
    lines = head + body + tail
    if all_gpus:
        header = (f"HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: {tp} ep: {ep} pp: {pp} vpp: {vpp} "
                  f"ga: {ga} all_gpus: {gpus} checkpoints: 0 checkpoint_initiates: 0" + (f" pp_comm {act}" if pp > 1 else ""))
    else:
        header = f"HYBRID_TRANSFORMER_FWD_IN_BCKWD\tmodel_parallel_NPU_group: {tp} checkpoints: 0 checkpoint_initiates: 0"
    return "\n".join([header, str(len(lines))] + lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, default in (("tp", 2), ("ep", 16), ("pp", 12), ("vpp", 8), ("ga", 24), ("gpus", 9216), ("layers", 8),
                          ("hidden", 6144), ("seq", 4096), ("topk", 2)):
        p.add_argument(f"--{name}", type=int, default=default)
    p.add_argument("--layer-us", type=float, default=1750.0, help="forward compute of one layer (us)")
    p.add_argument("--no-all-gpus", action="store_true", help="the older header, without ep/pp/ga/all_gpus")
    p.add_argument("-o", "--output", required=True)
    a = p.parse_args()
    text = workload(a.tp, a.ep, a.pp, a.vpp, a.ga, a.gpus, a.layers, a.hidden, a.seq, a.topk, a.layer_us,
                    not a.no_all_gpus)
    with open(a.output, "w") as f:
        f.write(text)
    print(f"{a.output}: {text.count(chr(10)) - 2} layer lines")


if __name__ == "__main__":
    main()
