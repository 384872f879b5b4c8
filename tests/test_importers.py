"""Importers against other projects' files (skipped where ../shared/external-traces is absent)
and against malformed input."""

import os
from pathlib import Path

import pytest

from wormhole_replay.errors import InputError
from wormhole_replay.replay import replay
from wormhole_replay.workload.importers import import_aicb, import_hpcc_flow

REPO = Path(__file__).resolve().parents[1]
EXTERNAL = Path(os.environ.get("WORMHOLE_EXTERNAL_TRACES", REPO.parent / "shared" / "external-traces"))


@pytest.fixture(scope="module")
def aicb_dir():
    d = EXTERNAL / "aicb"
    if not d.is_dir():
        pytest.skip("external traces not found (../shared/external-traces or $WORMHOLE_EXTERNAL_TRACES)")
    return d


def _node_of_ip(hex_ip: str) -> int:
    """The node id of a reference address ``0x0b000001 + (id/256)*0x10000 + (id%256)*0x100``."""
    x = int(hex_ip, 16) - 0x0B000001
    return (x >> 16) * 256 + ((x >> 8) & 0xFF)


def test_flow_txt_round_trip_reproduces_the_reference(reference_runs):
    """S1's flow.txt imported as a trace and replayed gives the reference's own FCT to each flow
    (matched by source and destination host: every S1 flow has its own sender).  Catches swapped
    hosts or FCTs, which a comparison of sorted FCT lists let through."""
    folder = reference_runs / "S1_dcqcn"
    res = replay(import_hpcc_flow(folder / "flow.txt"), str(folder / "topology.txt"), "dcqcn")
    net = res.flows[~res.flows.virtual]
    ours = {(int(r.src), int(r.dst)): (int(r.size_bytes), int(r.fct_ns)) for r in net.itertuples()}
    ref = {}
    for line in (folder / "fct.txt").read_text().splitlines():
        sip, dip, _, _, size, _, fct = line.split()[:7]
        ref[(_node_of_ip(sip), _node_of_ip(dip))] = (int(size), int(fct))
    assert len(ours) == len(net) == len(ref) == 8
    assert ours == ref


def test_aicb_model_workload(aicb_dir):
    t = import_aicb(aicb_dir / "G13B-M1-C01_GPT13B_megatron_tp8_pp1_mbs1_A100.txt", gpus=16)
    t.validate()
    assert t.meta["layout"]["tp"] == 8 and t.meta["layout"]["dp"] == 2
    coll = t.ops[t.ops.kind == "coll"]
    # the TP all-reduce of GPT-13B at TP 8 (AICB's tp_comm_size): 2 x 1 x 2048 x 5120
    assert (coll[coll.group.str.startswith("tp")].bytes == 20_971_520).any()
    assert set(coll.coll) <= {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"}


def test_aicb_micro_benchmark_replays(aicb_dir, tmp_path):
    t = import_aicb(aicb_dir / "all_reduce.txt", gpus=4)
    small = t.ops[(t.ops.kind != "coll") | (t.ops.bytes <= 65536)]
    # keep the small all-reduces only (the file goes up to 1 GiB); rebuild the chain per rank
    rows = []
    last = {}
    for r in small.itertuples():
        rows.append(dict(op_id=r.op_id, rank=r.rank, kind=r.kind, name=r.name, duration_ns=r.duration_ns, coll=r.coll,
                         group=r.group, bytes=r.bytes, algo=r.algo, deps=last.get(r.rank, [])))
        last[r.rank] = [r.op_id]
    from wormhole_replay.workload.trace import Trace, new_ops

    res = replay(Trace(new_ops(rows), t.meta), "leaf-spine:hosts=4,leaves=2,spines=1", "hpcc")
    assert res.flows.completed.all() and len(res.collectives) == 5


def test_aicb_malformed(tmp_path):
    bad = tmp_path / "w.txt"
    bad.write_text("HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 all_gpus: 4\n2\n"
                   "embedding\t-1\t1\tALLREDUCE\t100\t1\tNONE\t0\t1\tNONE\t0\t1\n")
    with pytest.raises(InputError, match="announces 2 layers"):
        import_aicb(bad)
    bad.write_text("HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 2 all_gpus: 4\n1\n"
                   "embedding\t-1\t1\tALLSCATTER\t100\t1\tNONE\t0\t1\tNONE\t0\t1\n")
    with pytest.raises(InputError, match="unknown collective type"):
        import_aicb(bad)
    bad.write_text("SOMETHING_ELSE\n1\n")
    with pytest.raises(InputError, match="unknown workload type"):
        import_aicb(bad)
    with pytest.raises(InputError, match="no such"):
        import_aicb(tmp_path / "missing.txt")


def test_kineto_capture(tmp_path):
    from wormhole_replay.workload.importers import import_kineto

    path = EXTERNAL / "kineto" / "nccl_data.json.gz"
    if not path.is_file():
        pytest.skip("external traces not found (../shared/external-traces or $WORMHOLE_EXTERNAL_TRACES)")
    t = import_kineto([path])
    t.validate()
    assert t.ranks == 2 and t.meta["groups"] == {"pg0": [0, 1]}
    coll = t.ops[t.ops.kind == "coll"]
    assert len(coll) == 2 * 21  # the capture's 21 NCCL kernels, rank 1 mirrored from rank 0
    # the first all-reduce: 6,637,568 float elements
    assert (coll.bytes == 6_637_568 * 4).any()
    res = replay(t, "leaf-spine:hosts=2,leaves=1,spines=0", "dcqcn")
    assert res.flows.completed.all()


def test_kineto_without_nccl_metadata(tmp_path):
    import json

    from wormhole_replay.workload.importers import import_kineto

    p = tmp_path / "r0.json"
    p.write_text(json.dumps({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "gemm", "ts": 1, "dur": 2, "args": {}}]}))
    with pytest.raises(InputError, match="no NCCL metadata"):
        import_kineto([p])
    p.write_text(json.dumps({"distributedInfo": {"rank": 0, "world_size": 2},
                             "traceEvents": [{"ph": "X", "cat": "kernel", "name": "gemm", "ts": 1, "dur": 2, "args": {}}]}))
    with pytest.raises(InputError, match="no NCCL metadata"):
        import_kineto([p])
    p.write_text("{ truncated")
    with pytest.raises(InputError, match="not a Kineto JSON"):
        import_kineto([p])
    p.write_text(json.dumps({"distributedInfo": {"rank": 0, "world_size": 2}, "traceEvents": 5}))
    with pytest.raises(InputError, match="malformed"):
        import_kineto([p])


def _external(*parts):
    p = EXTERNAL.joinpath(*parts)
    if not p.exists():
        pytest.skip("external traces not found (../shared/external-traces or $WORMHOLE_EXTERNAL_TRACES)")
    return p


def test_chakra_microbenchmarks_replay():
    from wormhole_replay.workload.chakra import import_chakra

    for coll, flows in (("all_reduce", 8 * 2 * 7), ("all_to_all", 8 * 7)):
        t = import_chakra([str(_external("astra-sim-microbenchmarks", coll, "8npus_1MB"))])
        assert t.ranks == 8 and (t.ops.bytes == 1_048_576).all() and (t.ops.coll == coll).all()
        res = replay(t, "leaf-spine:hosts=8,leaves=2,spines=1", "dcqcn")
        assert res.flows.completed.all() and len(res.flows) == flows


def test_chakra_real_capture_skips_cpu_ops():
    from wormhole_replay.workload.chakra import import_chakra

    t = import_chakra([str(_external("chakra-capture", "chakra.0.et"))], world_size=2)
    t.validate()
    per_rank = t.ops[t.ops["rank"] == 0]
    # 3,664 nodes; of its 21 COMM_COLL_NODEs, 14 are CPU-side c10d wrappers (dropped), 2 are
    # broadcast kernels (replayed from their duration) and 5 are all-reduce kernels
    assert (per_rank.kind == "coll").sum() == 5
    assert {8_196_000, 31_502_336} <= set(per_rank[per_rank.kind == "coll"].bytes)
    assert len(per_rank) < 3664
    assert (t.ops[t.ops.kind == "coll"].bytes > 0).all()


def test_chakra_bad_input(tmp_path):
    from wormhole_replay.workload.chakra import import_chakra

    src = _external("astra-sim-microbenchmarks", "all_reduce", "8npus_1MB", "all_reduce.0.et").read_bytes()
    cut = tmp_path / "cut.0.et"
    cut.write_bytes(src[: len(src) // 2])
    with pytest.raises(InputError, match="not a readable Chakra ET"):
        import_chakra([str(cut)])
    d = tmp_path / "ranks"
    d.mkdir()
    for r in (0, 1, 3):
        (d / f"w.{r}.et").write_bytes(src)
    with pytest.raises(InputError, match="no file for rank 2"):
        import_chakra([str(d)])
    with pytest.raises(InputError, match="no such Chakra ET"):
        import_chakra([str(tmp_path / "none.0.et")])


def test_flow_txt_keeps_its_hosts(tmp_path):
    """Flows among a few hosts of a bigger topology replay on those same hosts."""
    f = tmp_path / "flow.txt"
    f.write_text("2\n5 9 3 100 100000 2.0\n12 5 3 100 100000 2.000001\n")
    res = replay(import_hpcc_flow(f), "fat-tree:k=4", "dcqcn")
    net = res.flows[~res.flows.virtual].sort_values("flow_id")
    assert list(zip(net.src, net.dst)) == [(5, 9), (12, 5)]
    with pytest.raises(InputError, match="not a host"):
        replay(import_hpcc_flow(f), "leaf-spine:hosts=8,leaves=2,spines=1", "dcqcn")
