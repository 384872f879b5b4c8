"""The trace model, its native format, expansion into flows, and replay."""

import json
import subprocess
import sys

import numpy as np
import pytest

from wormhole_replay.errors import InputError
from wormhole_replay.replay import replay
from wormhole_replay.workload.expand import trace_to_flows
from wormhole_replay.workload.trace import Trace, load_trace, new_ops, save_trace
from wormhole_replay.topology import build_topology


def dp_trace(ranks=8, iterations=2, size=8_000_000, compute_ns=50_000):
    """Per rank and iteration: compute, then a data-parallel all-reduce over every rank."""
    rows, oid = [], 0
    last = {r: [] for r in range(ranks)}
    for it in range(iterations):
        for r in range(ranks):
            rows.append(dict(op_id=oid, rank=r, kind="compute", name="fwd_bwd", iteration=it, duration_ns=compute_ns, deps=last[r]))
            last[r] = [oid]
            oid += 1
        for r in range(ranks):
            rows.append(dict(op_id=oid, rank=r, kind="coll", name="grads", iteration=it, coll="all_reduce", group="dp",
                             bytes=size, algo="ring", deps=last[r]))
            last[r] = [oid]
            oid += 1
    return Trace(new_ops(rows), dict(ranks=ranks, groups={"dp": list(range(ranks))}, iterations=iterations))


def test_native_format_round_trip(tmp_path):
    t = dp_trace()
    save_trace(t, tmp_path / "t.parquet")
    u = load_trace(tmp_path / "t.parquet")
    assert u.meta["groups"] == t.meta["groups"]
    assert u.ops.drop(columns="deps").equals(t.ops.drop(columns="deps"))
    assert list(u.ops.deps) == list(t.ops.deps)


def test_bad_traces_are_refused(tmp_path):
    (tmp_path / "x.parquet").write_bytes(b"PAR1 truncated")
    with pytest.raises(InputError, match="not a wormhole-replay trace"):
        load_trace(tmp_path / "x.parquet")
    with pytest.raises(InputError, match="no such trace"):
        load_trace(tmp_path / "missing.parquet")
    t = dp_trace()
    t.ops.loc[8, "coll"] = "all_scatter"  # the first collective op
    with pytest.raises(InputError, match="unknown collective type"):
        t.validate()
    t = dp_trace()
    t.ops = t.ops[~((t.ops.kind == "coll") & (t.ops["rank"] == 3) & (t.ops.iteration == 1))].reset_index(drop=True)
    with pytest.raises(InputError, match="different numbers of collectives"):
        trace_to_flows(t, build_topology("leaf-spine:hosts=8,leaves=2,spines=1"))


def test_too_few_gpus_is_an_error():
    with pytest.raises(InputError, match="needs 8 GPUs"):
        trace_to_flows(dp_trace(), build_topology("leaf-spine:hosts=4,leaves=2,spines=1"))


def test_replay_iterations_and_collectives():
    res = replay(dp_trace(), "leaf-spine:hosts=8,leaves=2,spines=1", "dcqcn")
    assert res.flows.completed.all()
    assert list(res.iterations["index"]) == [0, 1]
    assert len(res.collectives) == 2
    # an iteration takes its compute plus its all-reduce, and the second starts after the first
    it = res.iterations
    assert (it.duration_ns > 50_000).all()
    assert it.start_ns.iloc[1] >= it.start_ns.iloc[0] + 50_000
    # ring over 8 ranks: 2 x 7 steps of 8 flows
    assert (res.collectives.flows == 112).all()


def test_intra_server_traffic_skips_the_packet_network():
    """With 4 GPUs per server, ring steps between neighbours of one server are virtual flows."""
    res = replay(dp_trace(iterations=1), "leaf-spine:hosts=8,leaves=2,spines=1,gpus_per_server=4", "hpcc")
    f = res.flows[res.flows.kind == "coll"]
    same = (f.src // 4) == (f.dst // 4)
    assert f[same].virtual.all() and not f[~same].virtual.any()
    assert (f[same].packets_sent == 0).all()


def test_cli_replay_json(tmp_path):
    save_trace(dp_trace(), tmp_path / "t.parquet")
    p = subprocess.run([sys.executable, "-m", "wormhole_replay", "replay", str(tmp_path / "t.parquet"), "--topology",
                        "leaf-spine:hosts=8,leaves=2,spines=1", "--cc", "dcqcn", "--out", str(tmp_path / "o"), "--json"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)
    assert [i["index"] for i in s["iterations"]] == [0, 1]
    for i in s["iterations"]:
        assert set(i) == {"index", "start_ns", "end_ns", "duration_ns", "wall_seconds", "memo_hits", "memo_lookups"}
    assert {"memo_hits", "memo_misses", "memo_inserts", "memo_entries_at_start"} <= set(s["wormhole"])
    assert sum(i["memo_hits"] for i in s["iterations"]) == s["wormhole"]["memo_hits"]
    assert (tmp_path / "o" / "flows.parquet").exists() and (tmp_path / "o" / "iterations.csv").exists()
    assert (tmp_path / "o" / "memo.sqlite").exists()  # the default memo database, beside the outputs


def test_gpt_generator_layout_and_message_sizes():
    from wormhole_replay.workload.generators import GPT_PRESETS, gpt_trace

    t = gpt_trace(GPT_PRESETS["gpt-175b"], gpus=16, tp=8, pp=1, dp=2, microbatches=1)
    tp_ar = t.ops[(t.ops.kind == "coll") & t.ops["name"].str.contains("_tp_")]
    assert (tp_ar.bytes == 50_331_648).all()  # b*s*h*2 = 1 x 2048 x 12288 x 2
    assert t.meta["groups"]["tp_p0_d1"] == list(range(8, 16))
    assert t.meta["groups"]["dp_p0_t3"] == [3, 11]
    with pytest.raises(InputError, match="impossible layout"):
        gpt_trace(GPT_PRESETS["gpt-13b"], gpus=16, tp=3, pp=2)
    with pytest.raises(InputError, match="impossible MoE layout"):
        from wormhole_replay.workload.generators import MOE_PRESETS

        gpt_trace(MOE_PRESETS["mixtral-8x7b"], gpus=16, tp=2, dp=8, ep=3)


def test_ddp_buckets_fill_tensor_by_tensor_as_pytorch_does():
    """Gradients go into buckets as DDP's compute_bucket_assignment_by_size puts them: tensor by
    tensor in backward order (each layer's MLP matrices, 4h^2, then its projection h^2 and QKV
    3h^2), a bucket closing once it holds its limit: 1 MiB for the first, ``bucket_mb`` after."""
    from wormhole_replay.workload.generators import GPT_PRESETS, GptShape, gpt_trace

    shape = GptShape(layers=2, hidden=1024, seq=128, vocab=1024)
    t = gpt_trace(shape, gpus=2, tp=1, pp=1, dp=2, bucket_mb=10)
    sq = 1024 * 1024 * 2  # one h x h fp16 matrix: 2 MiB
    buckets = t.ops[(t.ops["name"] == "dp_grad_bucket") & (t.ops["rank"] == 0)]
    # layer 1: [4sq] alone (the first bucket, 1 MiB), [4sq + sq], then [3sq + layer 0's 4sq],
    # [4sq + sq], [3sq + the embedding, 1024 x 1024 x 2 = sq]
    assert buckets.bytes.tolist() == [4 * sq, 5 * sq, 7 * sq, 5 * sq, 4 * sq]
    # each is launched right after the backward compute that produced its last tensor
    by_id = t.ops.set_index("op_id")
    assert [by_id.loc[d, "name"] for (d,) in buckets.deps] == ["B_mlp_l1", "B_attn_l1", "B_mlp_l0", "B_attn_l0",
                                                                "B_attn_l0"]
    # at GPT-13B's TP 8 the buckets are about 25 MB (PyTorch's default cap): ring steps of 3.3 MB
    big = gpt_trace(GPT_PRESETS["gpt-13b"], gpus=128, tp=8, pp=2, microbatches=1)
    sizes = big.ops[(big.ops["name"] == "dp_grad_bucket") & (big.ops["rank"] == 0)].bytes
    assert (sizes.iloc[:-1] == 26_214_400).all()


def test_bundled_samples_replay(tmp_path):
    """The GPT and MoE samples in traces/ replay completely on 4 servers x 4 GPUs."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "traces"
    for name in ("gpt-16gpu.trace.parquet", "moe-16gpu.trace.parquet"):
        res = replay(root / name, "rail:servers=4,gpus_per_server=4", "dcqcn")
        assert res.flows.completed.all(), name
        assert len(res.iterations) == 2
        assert (res.iterations.duration_ns > 0).all()


def test_tree_algorithm_hint():
    t = dp_trace(iterations=1)
    t.ops.loc[t.ops.kind == "coll", "algo"] = "tree"
    res = replay(t, "leaf-spine:hosts=8,leaves=2,spines=1", "hpcc")
    assert res.flows.completed.all()
    assert (res.collectives.flows == 4 * 7).all()


def test_intra_server_link_parameters():
    t = dp_trace(iterations=1)
    topo = "leaf-spine:hosts=8,leaves=2,spines=1,gpus_per_server=4"
    fast = replay(t, topo, "dcqcn")
    slow = replay(t, topo, "dcqcn", intra_bw_bps=10e9, intra_latency_ns=5_000)
    f = slow.flows[(slow.flows.kind == "coll") & slow.flows.virtual]
    # a virtual copy takes size / bw + latency
    assert ((f.finish_ns - f.start_ns) == np.ceil(f.size_bytes * 8e9 / 10e9).astype(int) + 5_000).all()
    assert slow.iterations.duration_ns.iloc[0] > fast.iterations.duration_ns.iloc[0]


@pytest.mark.parametrize("args", [
    ["import", "chakra", "/nonexistent/w.0.et"],
    ["import", "kineto", "/nonexistent.json"],
    ["import", "aicb", "/nonexistent.txt"],
    ["replay", "/nonexistent.parquet", "--topology", "fat-tree:k=4", "--cc", "dcqcn"],
    ["gen", "moe", "--model", "mixtral-8x7b", "--gpus", "16", "--ep", "3"],
])
def test_workload_commands_bad_input(tmp_path, args):
    p = subprocess.run([sys.executable, "-m", "wormhole_replay", *args, "-o", str(tmp_path / "t.parquet")]
                       if args[0] != "replay" else [sys.executable, "-m", "wormhole_replay", *args, "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
    assert not (tmp_path / "t.parquet").exists() and not (tmp_path / "o").exists()


def test_generated_programs_are_per_rank_and_peers_adjacent():
    from wormhole_replay.workload.generators import GptShape, gpt_trace

    t = gpt_trace(GptShape(layers=4, hidden=256, seq=128, experts=4, topk=2), gpus=16, tp=2, pp=2, dp=4, ep=2,
                  microbatches=3, iterations=2, bucket_mb=0.1)
    t.validate()
    rank_of = dict(zip(t.ops.op_id, t.ops["rank"]))
    assert all(rank_of[d] == r for r, deps in zip(t.ops["rank"], t.ops.deps) for d in deps)
    p2p = t.ops[t.ops.kind.isin(["send", "recv"])]
    stage = lambda r: r // (4 * 2)
    assert (abs(p2p.peer.map(stage) - p2p["rank"].map(stage)) == 1).all()
    assert ((p2p.peer % 8) == (p2p["rank"] % 8)).all()  # same (d, t) in the next or previous stage
    # every member of a group issues the same collectives in the same order
    coll = t.ops[t.ops.kind == "coll"]
    for g, members in t.meta["groups"].items():
        seqs = {r: list(coll[(coll.group == g) & (coll["rank"] == r)].sort_values("op_id").bytes) for r in members}
        assert len({tuple(v) for v in seqs.values()}) == 1, g


def test_more_iterations_than_the_trace_repeat_its_last_one():
    """--iterations beyond the trace's own repeat its last iteration, chained as the trace chains
    its iterations: a one-iteration trace run twice times like the same job's two-iteration trace."""
    from wormhole_replay.workload.trace import repeat_iterations

    t = dp_trace(iterations=2)
    four = repeat_iterations(t, 4)
    assert four.iterations == 4 and four.ops["op_id"].is_unique
    four.validate()
    for k in (2, 3):
        it = four.ops[four.ops.iteration == k]
        assert len(it) == len(t.ops[t.ops.iteration == 1])
        # each copy's first compute depends on the previous iteration's all-reduce of its rank
        first = it[it.kind == "compute"].iloc[0]
        (dep,) = first["deps"]
        assert int(four.ops.set_index("op_id").loc[dep, "iteration"]) == k - 1
    topo = "leaf-spine:hosts=8,leaves=2,spines=1"
    two = replay(t, topo, "dcqcn", mode="full").iterations
    once = Trace(t.ops[t.ops.iteration == 0], {**t.meta, "iterations": 1})
    again = replay(once, topo, "dcqcn", iterations=2, mode="full").iterations
    assert two["duration_ns"].tolist() == again["duration_ns"].tolist()
