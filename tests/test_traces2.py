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
