"""Issue 16: the traces people bring (AICB with pipelines and without a job size, Kineto without
NCCL metadata on kernels, MoE shapes without a preset) and several jobs on one fabric.  Every
input here is a small file written by the test in the exporter's own format."""

from __future__ import annotations

import pytest

from wormhole_replay.cli import main
from wormhole_replay.errors import InputError


def run_cli(args, capsys):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code, err, match=None):
    """Bad input: exit 2 and exactly one line on stderr, no traceback."""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    if match:
        assert match in lines[0], lines[0]
    return lines[0]


# --- gen moe without a preset -----------------------------------------------------------------

def test_moe_custom_shape_defaults_topk_to_two(tmp_path, capsys):
    out = tmp_path / "moe.parquet"
    code, _, err = run_cli(["gen", "moe", "--experts", "8", "--layers", "2", "--hidden", "512", "--seq", "256",
                            "--gpus", "8", "--tp", "2", "--ep", "2", "-o", out], capsys)
    assert code == 0, err
    from wormhole_replay.workload.trace import load_trace

    assert load_trace(out).meta["provenance"]["topk"] == 2
    code, _, err = run_cli(["gen", "moe", "--experts", "8", "--topk", "9", "--layers", "2", "--hidden", "512",
                            "--seq", "256", "--gpus", "8", "--ep", "2", "-o", out], capsys)
    one_line_error(code, err, "topk 9")


# --- AICB: pipelines, expert groups, micro-batches; files without all_gpus ----------------------

def aicb_line(name, fwd_ns=1, fwd="NONE", fwd_b=0, ig_ns=1, ig="NONE", ig_b=0, wg_ns=1, wg="NONE", wg_b=0):
    return "\t".join(str(x) for x in (name, -1, fwd_ns, fwd, fwd_b, ig_ns, ig, ig_b, wg_ns, wg, wg_b, 100))


def analytical_form(tp=2, ep=2, pp=2, vpp=2, ga=2, gpus=16, pp_comm=262144, extra_header="") -> str:
    """A cut-down file of the form of SimAI's analytical example (``HYBRID_TRANSFORMER_FWD_IN_BCKWD
    model_parallel_NPU_group: 2 ep: 16 pp: 12 vpp: 8 ga: 24 all_gpus: 9216 ... pp_comm 50331648``):
    head lines with DP and DP_EP weight-gradient collectives, ``ga`` micro-batches each starting
    at an embedding_layer, MoE all-to-alls in the EP group, a tail."""
    head = (f"HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: {tp} ep: {ep} pp: {pp} vpp: {vpp} ga: {ga} "
            + (f"all_gpus: {gpus} " if gpus else "") + f"checkpoints: 0 checkpoint_initiates: 0 {extra_header} "
            + (f"pp_comm {pp_comm}" if pp_comm else "")).strip()
    lines = [aicb_line("grad_gather", wg="ALLGATHER", wg_b=1_048_576),
             aicb_line("moe_grad_norm1", wg="ALLGATHER_DP_EP", wg_b=524_288)]
    for _ in range(ga):
        lines += [aicb_line("embedding_layer", 20_000, "ALLREDUCE", 262_144, wg_ns=10_000),
                  aicb_line("attention_column", 30_000, "ALLGATHER", 262_144, 15_000, "REDUCESCATTER", 262_144, 15_000),
                  aicb_line("mlp_moelayer", 40_000, "ALLTOALL_EP", 524_288, 40_000, "ALLTOALL_EP", 524_288),
                  aicb_line("final_column", 10_000, "ALLGATHER", 262_144, 10_000, "REDUCESCATTER", 0, 10_000)]
    lines += [aicb_line("cross_entropy1", 0, "ALLREDUCE", 16_384, 0), aicb_line("optimizer1", 0, "ALLREDUCE", 4, 0)]
    return "\n".join([head, str(len(lines))] + lines) + "\n"


def older_form(tp=2, layers=3) -> str:
    """An older AICB model workload: no ep/pp/ga/all_gpus (like G13B-M1-C01_... in AICB's repo)."""
    lines = [aicb_line("norm", 0, "BROADCAST", 16_384),
             aicb_line("grad_norm", 1, "ALLGATHER", 65_536, 1, "NONE", 0, 1, "REDUCESCATTER", 131_072)]
    lines += [aicb_line("attention_layer", 50_000, "ALLREDUCE", 131_072, 50_000, "ALLREDUCE", 131_072, 50_000)] * layers
    head = f"HYBRID_TRANSFORMER_FWD_IN_BCKWD\tmodel_parallel_NPU_group: {tp} checkpoints: 0 checkpoint_initiates: 0"
    return "\n".join([head, str(len(lines))] + lines) + "\n"


def test_aicb_pipeline_expert_groups_and_microbatches(tmp_path):
    from wormhole_replay.replay import replay
    from wormhole_replay.workload.importers import import_aicb
    from wormhole_replay.workload.program import instantiate

    f = tmp_path / "analytical.txt"
    f.write_text(analytical_form())
    prog = import_aicb(f)
    assert prog.is_program and prog.meta["ranks"] == 16 and prog.meta["layout"]["dp"] == 4
    t = instantiate(prog)
    t.validate()
    g = t.meta["groups"]
    # rank = (stage * dp + d) * tp + t: stage 0 holds ranks 0..7, stage 1 ranks 8..15
    assert g["tp_p1_d0"] == [8, 9] and g["dp_p0_t1"] == [1, 3, 5, 7]
    assert g["ep_p0_t0_b1"] == [4, 6] and g["dpep_p0_t0_e1"] == [2, 6]  # EP: consecutive d; DP_EP: same experts
    ops = t.ops
    # pipeline: each rank sends vpp x ga chunks one way (stage 0 activations, stage 1 gradients) ...
    sends = ops[ops.kind == "send"]
    assert (sends.groupby("rank").size() == 2 * 2).all() and sends["rank"].nunique() == 16
    assert set(sends[sends["rank"] < 8].peer - sends[sends["rank"] < 8]["rank"]) == {8}
    assert (sends.bytes == 262_144).all()
    # ... collectives in their groups: the MoE all-to-alls in EP groups, DP_EP gradients, DP gathers
    coll = ops[ops.kind == "coll"]
    assert set(coll[coll.name == "fwd_mlp_moelayer"].group.str[:3]) == {"ep_"}
    assert set(coll[coll.name == "wg_moe_grad_norm1"].group.str[:5]) == {"dpep_"}
    assert set(coll[coll.name == "wg_grad_gather"].group.str[:3]) == {"dp_"}
    # ga micro-batches are in the file already: two forward all-to-alls per rank, not ga x ga
    assert (coll[coll.name == "fwd_mlp_moelayer"].groupby("rank").size() == 2).all()
    res = replay(prog, "fat-tree:k=4,gpus_per_server=2", "dcqcn")
    assert res.flows.completed.all()
    p2p = res.collectives[res.collectives.kind == "p2p"]
    assert len(p2p) == 16 * 4 and (p2p.duration_ns > 0).all()


def test_aicb_without_all_gpus_takes_the_size_from_the_topology(tmp_path, capsys):
    f = tmp_path / "older.txt"
    f.write_text(older_form(tp=2))
    trace = tmp_path / "older.parquet"
    code, out, err = run_cli(["import", "aicb", f, "-o", trace], capsys)
    assert code == 0 and "job size open" in out, out + err
    code, out, err = run_cli(["replay", trace, "--topology", "leaf-spine:hosts=8,leaves=2,spines=1,gpus_per_server=2",
                              "--cc", "dcqcn", "--out", tmp_path / "all", "--json", "--quiet"], capsys)
    assert code == 0, err
    import pandas as pd

    flows = pd.read_parquet(tmp_path / "all" / "flows.parquet")
    assert flows["rank"].nunique() == 8  # every host
    code, out, err = run_cli(["replay", trace, "--topology", "leaf-spine:hosts=8,leaves=2,spines=1,gpus_per_server=2",
                              "--cc", "dcqcn", "--gpus", "4", "--out", tmp_path / "four", "--quiet"], capsys)
    assert code == 0, err
    assert pd.read_parquet(tmp_path / "four" / "flows.parquet")["rank"].nunique() == 4
    # --gpus at import still fixes it
    code, out, err = run_cli(["import", "aicb", f, "--gpus", "4", "-o", tmp_path / "four.parquet"], capsys)
    assert code == 0 and "a job of 4 GPUs" in out


def test_aicb_import_is_bounded_in_the_job_size(tmp_path):
    """The import keeps one program per stage: a 9216-GPU header gives the ops of a 16-GPU one."""
    import time

    from wormhole_replay.workload.importers import import_aicb

    small, big = tmp_path / "small.txt", tmp_path / "big.txt"
    small.write_text(analytical_form(tp=2, ep=16, pp=12, vpp=2, ga=4, gpus=12 * 2 * 16))
    big.write_text(analytical_form(tp=2, ep=16, pp=12, vpp=2, ga=4, gpus=9216))
    t0 = time.perf_counter()
    b = import_aicb(big)
    assert time.perf_counter() - t0 < 5
    assert b.meta["ranks"] == 9216 and b.meta["layout"]["dp"] == 384
    assert len(b.ops) == len(import_aicb(small).ops) < 5000


def test_aicb_unknown_header_fields_warn_once(tmp_path, capsys):
    f = tmp_path / "newer.txt"
    f.write_text(analytical_form(extra_header="sp: 1 moe_router: 7"))
    code, out, err = run_cli(["import", "aicb", f, "-o", tmp_path / "n.parquet"], capsys)
    warnings = [ln for ln in err.splitlines() if "warning" in ln]
    assert code == 0 and len(warnings) == 1 and "sp, moe_router" in warnings[0], err


@pytest.mark.parametrize("text, gpus, message", [
    (analytical_form(pp_comm=0), None, "no pp_comm"),
    (analytical_form(ga=2).replace("embedding_layer", "embedding", 1), None, "cannot tell the micro-batches apart"),
    (analytical_form().replace("vpp: 2", "vpp: two"), None, ":1: malformed header"),
    (analytical_form(gpus=10), None, "10 GPUs do not split into tp 2 x pp 2"),
    (analytical_form(gpus=0), 20, "ep 2 does not divide dp 5"),
    (older_form().replace("ALLREDUCE", "ALLREDUCEALLTOALL", 1), None, ":5: unknown collective type"),
    (older_form().replace("\t100\n", "\n", 1), None, ":3: expected 12 fields"),
])
def test_aicb_bad_input_is_one_line(tmp_path, capsys, text, gpus, message):
    f = tmp_path / "bad.txt"
    f.write_text(text)
    out = tmp_path / "bad.parquet"
    code, _, err = run_cli(["import", "aicb", f, "-o", out] + (["--gpus", gpus] if gpus else []), capsys)
    one_line_error(code, err, message)
    assert not out.exists()


def test_aicb_sizes_that_do_not_fit_the_replay(tmp_path, capsys):
    f = tmp_path / "older.txt"
    f.write_text(older_form(tp=4))
    trace = tmp_path / "t.parquet"
    assert run_cli(["import", "aicb", f, "-o", trace], capsys)[0] == 0
    base = ["replay", trace, "--cc", "dcqcn", "--quiet", "--out", tmp_path / "o"]
    code, _, err = run_cli(base + ["--topology", "leaf-spine:hosts=6,leaves=2,spines=1"], capsys)
    one_line_error(code, err, "6 GPUs do not split into tp 4")
    code, _, err = run_cli(base + ["--topology", "leaf-spine:hosts=8,leaves=2,spines=1", "--gpus", "16"], capsys)
    one_line_error(code, err, "needs 16 GPUs")
    fixed = tmp_path / "fixed.parquet"
    assert run_cli(["import", "aicb", f, "--gpus", "4", "-o", fixed], capsys)[0] == 0
    code, _, err = run_cli(["replay", fixed, "--cc", "dcqcn", "--quiet", "--out", tmp_path / "o",
                            "--topology", "leaf-spine:hosts=8,leaves=2,spines=1", "--gpus", "8"], capsys)
    one_line_error(code, err, "--gpus 8 contradicts")
    assert not (tmp_path / "o").exists()


# --- Kineto without NCCL metadata on kernels: the CPU nccl:* annotations ------------------------

def pytorch20_capture(rank, world=2, colls=(("all_reduce", [[1024, 256]], ["float"]),
                                            ("_allgather_base", [[2048], [1024]], ["c10::BFloat16", "c10::BFloat16"])),
                      correlation=True, dims=True, info_extra=None) -> dict:
    """A PyTorch 2.0 profiler trace as Kineto writes it: GPU kernels without collective args, the
    CPU thread's ``nccl:*`` user annotations with ``Input Dims`` / ``Input type``, each launching
    its NCCL kernel through a runtime call that shares the kernel's correlation id."""
    ev, t, corr = [], 1000.0, 100
    cpu = dict(pid=7, tid=7)
    for i, (name, d, types) in enumerate(colls):
        ev.append(dict(ph="X", cat="kernel", name="sm80_gemm", pid=0, tid=7, ts=t, dur=200.0,
                       args={"correlation": corr, "stream": 7}))
        corr += 1
        args = {"External id": i, "Record function id": i}
        if dims:
            args.update({"Input Dims": d, "Input type": types})
        ev.append(dict(ph="X", cat="user_annotation", name=f"nccl:{name}", ts=t + 150, dur=20.0, args=args, **cpu))
        ev.append(dict(ph="X", cat="cuda_runtime", name="cudaLaunchKernel", ts=t + 160, dur=5.0,
                       args={"correlation": corr if correlation else None}, **cpu))
        ev.append(dict(ph="X", cat="kernel", name=f"ncclKernel_{name}_RING_LL", pid=0, tid=20, ts=t + 250, dur=300.0,
                       args={"correlation": corr if correlation else -1, "stream": 20}))
        corr += 1
        t += 1000
    info = {"backend": "nccl", "rank": rank, "world_size": world, **(info_extra or {})}
    return {"schemaVersion": 1, "distributedInfo": info, "traceEvents": ev}


def write_json(path, doc):
    import json

    path.write_text(json.dumps(doc))
    return path


def test_kineto_from_cpu_annotations(tmp_path, capsys):
    from wormhole_replay.replay import replay
    from wormhole_replay.workload.importers import import_kineto

    files = [write_json(tmp_path / f"rank{r}.json", pytorch20_capture(r)) for r in (0, 1)]
    t = import_kineto(files)
    t.validate()
    assert t.meta["provenance"]["collectives_from"] == "annotations"
    coll = t.ops[t.ops.kind == "coll"]
    assert list(coll[coll["rank"] == 0].coll) == ["all_reduce", "all_gather"]
    # bytes: dims x dtype; an all-gather's input is its smallest tensor
    assert list(coll[coll["rank"] == 0].bytes) == [1024 * 256 * 4, 1024 * 2]
    assert t.meta["groups"] == {"pg0": [0, 1]}
    comp = t.ops[(t.ops.kind == "compute") & (t.ops["rank"] == 0) & (t.ops.name == "gpu")]
    assert list(comp.duration_ns) == [200_000, 200_000]  # the GEMMs between the collectives
    assert replay(t, "leaf-spine:hosts=2,leaves=1,spines=0", "dcqcn").flows.completed.all()
    code, out, err = run_cli(["import", "kineto", *files, "-o", tmp_path / "k.parquet"], capsys)
    assert code == 0 and "CPU nccl:* annotations" in out and not err.strip(), out + err
    # without correlation ids, the k-th NCCL kernel is the k-th annotation's
    plain = [write_json(tmp_path / f"plain{r}.json", pytorch20_capture(r, correlation=False)) for r in (0, 1)]
    u = import_kineto(plain)
    assert list(u.ops[u.ops.kind == "coll"].bytes) == list(coll.bytes)


def test_kineto_annotations_agree_with_kernel_metadata_on_a_real_capture(tmp_path):
    """HTA's capture, with the NCCL metadata moved from its kernels to the annotations that
    launched them (as PyTorch 2.0 would have recorded it): the same collectives either way."""
    import gzip
    import json
    import os
    from pathlib import Path

    from wormhole_replay.workload.importers import import_kineto

    src = Path(os.environ.get("WORMHOLE_EXTERNAL_TRACES", Path(__file__).resolve().parents[2] / "shared" / "external-traces"))
    src = src / "kineto" / "nccl_data.json.gz"
    if not src.is_file():
        pytest.skip("external traces not found (../shared/external-traces or $WORMHOLE_EXTERNAL_TRACES)")
    doc = json.load(gzip.open(src, "rt"))
    launch = {e["args"]["correlation"]: e for e in doc["traceEvents"]
              if e.get("cat") == "cuda_runtime" and "correlation" in e.get("args", {})}
    anns = [e for e in doc["traceEvents"] if e.get("cat") == "user_annotation" and e["name"].startswith("nccl:")]
    for k in doc["traceEvents"]:
        a = k.get("args", {})
        if k.get("cat") == "kernel" and "Collective name" in a:
            r = launch[a["correlation"]]
            ann = next(x for x in anns if x["tid"] == r["tid"] and x["ts"] <= r["ts"] <= x["ts"] + x["dur"])
            ann["args"].update({"Input Dims": [[int(a["In msg nelems"])]], "Input type": [a["dtype"].lower()]})
            for key in [x for x in a if x not in ("correlation", "stream", "External id", "device")]:
                del a[key]
    stripped = write_json(tmp_path / "pt20.json", doc)
    a, b = import_kineto([src]), import_kineto([stripped])
    assert b.meta["provenance"]["collectives_from"] == "annotations"
    cols = ["rank", "kind", "coll", "bytes", "duration_ns"]
    assert a.ops[cols].equals(b.ops[cols])


@pytest.mark.parametrize("doc, message", [
    (pytorch20_capture(0, dims=False), "no 'Input Dims' (profile with record_shapes=True)"),
    (pytorch20_capture(0, colls=(("all_reduce", [[4]], ["quaternion"]),)), "no known element type"),
    (pytorch20_capture(0, colls=(("all_scatter", [[4]], ["float"]),)), "unknown collective type 'all_scatter'"),
])
def test_kineto_annotation_bad_input_is_one_line(tmp_path, capsys, doc, message):
    f = write_json(tmp_path / "r0.json", doc)
    code, _, err = run_cli(["import", "kineto", f, "-o", tmp_path / "k.parquet"], capsys)
    one_line_error(code, err, message)
    assert not (tmp_path / "k.parquet").exists()


def test_kineto_unknown_fields_warn_once(tmp_path, capsys):
    f = write_json(tmp_path / "r0.json", pytorch20_capture(0, info_extra={"pg_timeout": 5, "nvshmem": True}))
    code, out, err = run_cli(["import", "kineto", f, "-o", tmp_path / "k.parquet"], capsys)
    warnings = [ln for ln in err.splitlines() if "warning" in ln]
    assert code == 0 and len(warnings) == 1 and "nvshmem, pg_timeout" in warnings[0], err


# --- Chakra: attributes from a newer exporter -------------------------------------------------

def chakra_file(path, extra_attrs=()):
    """A one-node Chakra ET (schema 0.0.4): a 1 MiB all-reduce, length-prefixed protobuf."""
    from wormhole_replay.workload.chakra import COMM_COLL_NODE, _GlobalMetadata, _Node

    def framed(msg):
        raw, n, out = msg.SerializeToString(), None, bytearray()
        n = len(raw)
        while True:
            out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
            n >>= 7
            if not n:
                return bytes(out) + raw

    meta = _GlobalMetadata(version="0.0.4")
    node = _Node(id=1, name="all_reduce", type=COMM_COLL_NODE, duration_micros=10)
    for name, field, value in (("is_cpu_op", "bool_val", False), ("comm_type", "int64_val", 0),
                               ("comm_size", "uint64_val", 1 << 20), *extra_attrs):
        a = node.attr.add(name=name)
        setattr(a, field, value)
    path.write_bytes(framed(meta) + framed(node))
    return path


def test_chakra_unknown_attributes_warn_once(tmp_path, capsys):
    d = tmp_path / "et"
    d.mkdir()
    for r in (0, 1):
        chakra_file(d / f"w.{r}.et", extra_attrs=(("comm_stream_priority", "int32_val", 3), ("ib_sl", "int32_val", 1)))
    code, out, err = run_cli(["import", "chakra", d, "-o", tmp_path / "c.parquet"], capsys)
    warnings = [ln for ln in err.splitlines() if "warning" in ln]
    assert code == 0 and len(warnings) == 2 and all("comm_stream_priority, ib_sl" in w for w in warnings), err
    chakra_file(d / "w.0.et")
    chakra_file(d / "w.1.et")
    code, out, err = run_cli(["import", "chakra", d, "-o", tmp_path / "c.parquet"], capsys)
    assert code == 0 and not err.strip()


# --- several jobs on one fabric ----------------------------------------------------------------

@pytest.fixture(scope="module")
def dp_trace(tmp_path_factory):
    """A small data-parallel iteration on 8 GPUs: one ring all-reduce of its gradients."""
    out = tmp_path_factory.mktemp("jobs") / "dp8.parquet"
    assert main(["gen", "gpt", "--layers", "1", "--hidden", "512", "--seq", "256", "--vocab", "2048", "--gpus", "8",
                 "--dp", "8", "-o", str(out)]) == 0
    return out


def sharing_placement(trace_path, topo_spec, tries=400):
    """Host lists for two jobs of ``trace_path`` on ``topo_spec`` whose rings share links: tried
    in a fixed pseudo-random order, the first where (by the flows' ECMP paths) neither job alone
    puts two of its connections on one link, and together each job's busiest link carries two."""
    import random

    from wormhole_replay.topology import build_topology, compute_routes
    from wormhole_replay.workload.jobs import JobSpec, job_links, jobs_to_flows, resolve_jobs
    from wormhole_replay.workload.trace import load_trace

    topo = build_topology(topo_spec)
    routes, trace = compute_routes(topo), load_trace(trace_path)
    rng, n = random.Random(0), trace.ranks
    for _ in range(tries):
        hosts = rng.sample(range(len(topo.hosts)), 2 * n)
        jobs = resolve_jobs([JobSpec(trace, hosts[:n]), JobSpec(trace, hosts[n:])], topo)
        fs, info = jobs_to_flows(jobs, topo, None, "connection")
        f = info.flow_id.to_numpy()
        links = job_links(info.assign(src=fs.src[f], dst=fs.dst[f], sport=fs.sport[f], dport=fs.dport[f],
                                      virtual=fs.is_virtual[f]), topo, routes)
        links = links.join(links.groupby(["node", "next_node"]).connections.sum().rename("total"), on=["node", "next_node"])
        worst = links.groupby("job").agg(alone=("connections", "max"), together=("total", "max"))
        if (worst.alone == 1).all() and (worst.together >= 2).all():
            return [",".join(map(str, hosts[:n])), ",".join(map(str, hosts[n:]))]
    raise AssertionError("no placement found whose rings share links")


def test_two_jobs_sharing_core_links_slow_each_other(dp_trace, tmp_path, capsys):
    """Two 8-rank data-parallel jobs on a k=4 fat-tree, placed so that their rings share links
    (of the core among them): each job's iteration is longer than when it runs alone on the same
    hosts."""
    import json

    import pandas as pd

    a, b = sharing_placement(dp_trace, "fat-tree:k=4")
    topo = ["--topology", "fat-tree:k=4", "--cc", "dcqcn", "--quiet", "--json"]
    code, out, err = run_cli(["replay", "--job", f"{dp_trace}@{a}", "--job", f"{dp_trace}@{b}", *topo,
                              "--out", tmp_path / "both"], capsys)
    assert code == 0, err
    both = json.loads(out)
    jobs = both["jobs"]
    assert both["shared_links"].get("core", 0) > 0
    alone = []
    for j in jobs:
        code, out, err = run_cli(["replay", "--job", f"{dp_trace}@{j['hosts']}", *topo, "--out", tmp_path / f"j{j['job']}"],
                                 capsys)
        assert code == 0, err
        alone.append(json.loads(out)["jobs"][0]["iterations_ns"][0])
    shared = [j["iterations_ns"][0] for j in jobs]
    assert all(s > a * 1.2 for s, a in zip(shared, alone)), (shared, alone)
    # the job column everywhere, and the network flows of each job on its own hosts
    d = tmp_path / "both"
    flows = pd.read_parquet(d / "flows.parquet")
    for name in ("collectives.csv", "iterations.csv", "iteration_breakdown.csv", "layer_breakdown.csv"):
        assert list(pd.read_csv(d / name)["job"].unique()) == [0, 1], name
    for job, hosts in enumerate((a, b)):  # k=4: host index = node id
        net = flows[(flows.job == job) & ~flows.virtual]
        assert set(net.src) | set(net.dst) <= {int(h) for h in hosts.split(",")}
    assert flows["flow_id"].is_unique and pd.read_csv(d / "collectives.csv")["unit"].is_unique


def test_jobs_start_offsets_and_packed_placement(dp_trace, tmp_path):
    from wormhole_replay.replay import replay

    res = replay([f"{dp_trace}@packed", f"{dp_trace}@packed+200us"], "fat-tree:k=4", "dcqcn", mode="full")
    assert [j["hosts"] for j in res.jobs] == ["0-7", "8-15"]
    it = res.iterations.set_index("job")
    assert it.loc[0, "start_ns"] == 0 and it.loc[1, "start_ns"] >= 200_000
    again = replay([f"{dp_trace}@packed", f"{dp_trace}@packed+200us"], "fat-tree:k=4", "dcqcn", mode="full")
    cols = ["flow_id", "job", "src", "dst", "sport", "start_ns", "fct_ns"]
    assert res.flows[cols].equals(again.flows[cols])  # deterministic


def test_one_job_equals_a_plain_replay(dp_trace):
    """A single --job on the trace's own hosts is the plain replay, flow for flow."""
    from wormhole_replay.replay import replay

    a = replay(str(dp_trace), "fat-tree:k=4", "dcqcn", mode="full")
    b = replay([f"{dp_trace}@0-7"], "fat-tree:k=4", "dcqcn", mode="full")
    cols = ["flow_id", "job", "src", "dst", "sport", "start_ns", "fct_ns", "unit"]
    assert a.flows[cols].equals(b.flows[cols])
    assert a.iterations.drop(columns="wall_seconds").equals(b.iterations.drop(columns="wall_seconds"))


def test_jobs_of_open_size_and_in_the_audit(tmp_path, capsys):
    """An AICB file without all_gpus placed with spread:N; the audit takes the same jobs."""
    import json

    f = tmp_path / "older.txt"
    f.write_text(older_form(tp=2, layers=1))
    trace = tmp_path / "older.parquet"
    assert run_cli(["import", "aicb", f, "-o", trace], capsys)[0] == 0
    code, out, err = run_cli(["audit", "--job", f"{trace}@spread:4", "--job", f"{trace}@4-7+50us",
                              "--topology", "fat-tree:k=4,gpus_per_server=2", "--cc", "dcqcn", "--out", tmp_path / "a",
                              "--no-memo", "--quiet", "--json"], capsys)
    assert code == 0, err
    audit = json.loads(out)
    assert audit["inputs"]["jobs"] and len(audit["iteration_error"]["iterations"]) == 2
    import pandas as pd

    its = pd.read_csv(tmp_path / "a" / "full" / "iterations.csv")
    assert list(its["index"]) == [0, 1] and list(its["job"]) == [0, 1]


@pytest.mark.parametrize("jobs, message", [
    (["{t}@0-7", "{t}@4-11"], "overlap (both placed on host 4)"),
    (["{t}@0-3"], "4 hosts listed for 8 ranks"),
    (["{t}@8-15", "{t}@packed", "{t}@packed"], "do not fit packed"),
    (["{t}@9-16"], "host 16 does not exist"),
    (["{t}@scattered"], "unknown placement 'scattered'"),
    (["{t}@0-x"], "bad host range '0-x'"),
    (["{t}@packed+soon"], "bad start offset 'soon'"),
    (["{t}@packed:4"], "a trace of 8 ranks, not 4"),
    (["/nonexistent.parquet@packed"], "no such trace file"),
])
def test_bad_jobs_are_one_line(dp_trace, tmp_path, capsys, jobs, message):
    args = ["replay", "--topology", "fat-tree:k=4", "--cc", "dcqcn", "--quiet", "--out", tmp_path / "o"]
    for j in jobs:
        args += ["--job", j.format(t=dp_trace)]
    code, _, err = run_cli(args, capsys)
    one_line_error(code, err, message)
    assert not (tmp_path / "o").exists()


def test_trace_and_jobs_together_is_one_line(dp_trace, tmp_path, capsys):
    code, _, err = run_cli(["replay", dp_trace, "--job", f"{dp_trace}@packed", "--topology", "fat-tree:k=4",
                            "--cc", "dcqcn", "--out", tmp_path / "o"], capsys)
    one_line_error(code, err, "not both")
    code, _, err = run_cli(["replay", "--topology", "fat-tree:k=4", "--cc", "dcqcn", "--out", tmp_path / "o"], capsys)
    one_line_error(code, err, "give a TRACE")
