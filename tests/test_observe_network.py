"""PFC pause intervals from the frame log, network tiers from the topology, and the progress bar
that measures bytes."""

import io

import numpy as np
import pandas as pd
import pytest

from wormhole_replay.api import execute, prepare_direct_run
from wormhole_replay.observe.pfc import pausable_queues, pfc_intervals, read_pfc_txt
from wormhole_replay.observe.progress import MIN_POINTS, ByteProgress, Eta
from wormhole_replay.topology import build_topology
from wormhole_replay.topology.tiers import node_tiers, ports_table
from wormhole_replay.workload.flowfile import FlowSet

from test_cli import cli


def log(*frames):
    return pd.DataFrame(frames, columns=["time_ns", "node", "ifindex", "type"])


def test_pfc_intervals_pair_pause_and_resume_per_port():
    p = pfc_intervals(log((10, 1, 2, 1), (20, 3, 1, 1), (30, 1, 2, 0), (40, 3, 1, 0), (50, 1, 2, 1)), {3})
    assert p.values.tolist() == [[1, 2, 3, 10, 30], [3, 1, 3, 20, 40], [1, 2, 3, 50, -1]]  # the last never resumed
    # two queues pausable: frames may interleave on a port; the interval is "some queue paused"
    p = pfc_intervals(log((10, 1, 2, 1), (15, 1, 2, 1), (20, 1, 2, 0), (25, 1, 2, 0)), {3, 5})
    assert p.values.tolist() == [[1, 2, -1, 10, 25]]
    assert pausable_queues([3, 3], ack_high_prio=True) == {3}
    assert pausable_queues([3, 1], ack_high_prio=False) == {1, 3}
    assert pausable_queues([0], ack_high_prio=True) == set()


def test_pfc_intervals_match_pfc_txt_on_an_incast(tmp_path):
    # 8-to-1 incast into a 1 MB buffer (as tests/test_engine_analytic.py): PFC pauses the senders' ports
    flows = tmp_path / "flow.txt"
    flows.write_text("8\n" + "".join(f"{s} 0 3 100 2000000 0\n" for s in range(1, 9)))
    (tmp_path / "keys.txt").write_text("BUFFER_SIZE 1\n")
    p = cli("simulate", "--topology", "leaf-spine:hosts=9,leaves=1,spines=0", "--flows", flows, "--cc", "dcqcn",
            "--config", tmp_path / "keys.txt", "--out", tmp_path / "out", "--quiet", "--mode", "full")
    assert p.returncode == 0, p.stderr
    frames = read_pfc_txt(tmp_path / "out" / "pfc.txt")
    got = pd.read_parquet(tmp_path / "out" / "pfc_intervals.parquet")
    assert len(frames) > 0 and len(got) == (frames.type == 1).sum()
    assert (got.queue == 3).all() and (got.end_ns > got.start_ns).all()
    for (node, ifindex), g in frames.groupby(["node", "ifindex"]):  # each port's frames alternate P, R, P, R ...
        assert g.type.tolist() == [1, 0] * (len(g) // 2)
        mine = got[(got.node == node) & (got.ifindex == ifindex)]
        assert mine.start_ns.tolist() == g.time_ns[g.type == 1].tolist()
        assert mine.end_ns.tolist() == g.time_ns[g.type == 0].tolist()
    ports = pd.read_csv(tmp_path / "out" / "ports.csv")
    assert set(zip(got.node, got.ifindex)) <= set(zip(ports.node, ports.ifindex))


def test_tiers_by_distance_from_hosts():
    t = build_topology("fat-tree:k=4")
    tiers = node_tiers(t)
    assert (tiers[t.hosts] == "host").all()
    assert {k: int(v) for k, v in zip(*np.unique(tiers[t.switches], return_counts=True))} == \
        {"edge": 8, "aggregation": 8, "core": 4}
    p = ports_table(build_topology("rail:servers=4,gpus_per_server=4"))
    assert p.groupby("tier").size().to_dict() == {"host": 16, "edge": 32, "aggregation": 16}  # rails, then spines
    assert (p[p.tier == "host"].peer_tier == "edge").all()


def test_eta_waits_until_stable():
    e = Eta()
    # a steady run: 1% per second; shown once MIN_POINTS predictions over the window agree
    got = [e.update(t, t / 100) for t in range(1, 10)]
    assert got[: MIN_POINTS - 1] == [None] * (MIN_POINTS - 1)
    assert got[-1] == pytest.approx(91.0)
    # the long flows come last: bytes at the start race, then crawl; the prediction jumps: hidden
    e = Eta()
    fractions = [0.30, 0.50, 0.55, 0.56, 0.57, 0.58, 0.70, 0.71, 0.72]
    assert [e.update(t, f) for t, f in enumerate(fractions, 1)] == [None] * len(fractions)
    assert e.update(10, 1.0) == 0.0


def test_progress_counts_network_bytes():
    # two network flows and one compute op: the bar's total is the bytes the network flows carry
    fs = FlowSet.from_columns([1, 2, 1], [0, 0, 1], [300_000, 700_000, 0], [0, 0, 0], duration_ns=[-1, -1, 5000])
    run = prepare_direct_run("leaf-spine:hosts=3,leaves=1,spines=0", fs, "dcqcn", out=None)
    out = io.StringIO()
    bar = ByteProgress(run.flows, after=0.0, file=out)
    result = execute(run, on_slice=bar)
    assert bar.total == 1_000_000 and bar.by_bytes
    assert bar.bar is not None and bar.bar.n == 1_000_000
    bar.close()
    text = out.getvalue()
    assert "100%" in text and "elapsed" in text and "ms simulated" in text
    assert result.flows.completed.all()
