"""The link monitor (``engine/monitor.py``, ``--monitor``): what the samples say, worked out from
the flows; that sampling changes nothing; sampling through wormhole jumps; the reference's
``qlen.txt``; bad intervals."""

import dataclasses
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from wormhole_replay.api import execute, prepare_config_run
from wormhole_replay.cli import main
from wormhole_replay.engine.monitor import default_interval
from wormhole_replay.engine.simulate import format_fct, format_pfc
from wormhole_replay.observe.pfc import pfc_intervals
from wormhole_replay.replay import replay
from wormhole_replay.workload.generators import gpt_trace
from wormhole_replay.workload.presets import GPT_PRESETS

REPO = Path(__file__).resolve().parents[1]
S1_SWITCH, S1_RECEIVER_PORT = 9, 1  # S1: hosts 0-8 on switch 9; host 0 (every flow's receiver) on its ifindex 1


def monitored(folder, interval=0, config=None):
    run = prepare_config_run(config or folder / "config.txt", seq_num_bytes=8, paths=folder / "paths.txt")
    run.monitor_links(interval)
    return run, execute(run)


def wire_bytes(flows, cfg):
    """Bytes a switch port sends for these flows' data: payload plus a header per packet (the
    last one short), each packet once (no drop, no retransmission)."""
    packets = -(-flows["size_bytes"] // cfg.packet_payload_size)
    return int((flows["size_bytes"] + packets * cfg.data_header_bytes).sum())


def port(links, node, ifindex):
    return links[(links["node"] == node) & (links["port"] == ifindex)].reset_index(drop=True)


@pytest.mark.parametrize("name", ["S1_dcqcn", "S1_hpcc"])
def test_receiver_port_carries_exactly_the_incast(reference_runs, name):
    run, r = monitored(reference_runs / name)
    assert r.counters["drops"] == 0 and r.counters["timeouts"] == 0
    assert (r.flows["packets_sent"] == -(-r.flows["size_bytes"] // run.cfg.packet_payload_size)).all()
    rx = port(r.links, S1_SWITCH, S1_RECEIVER_PORT)
    # every flow goes to host 0: its switch port sends all their data and nothing else (ACKs go
    # the other way; S1 sends no PFC frame); 8 x 8000 packets of 1052 B (DCQCN) or 1094 B (HPCC)
    assert int(rx["tx_bytes"].sum()) == wire_bytes(r.flows, run.cfg) == 8 * 8000 * (1000 + run.cfg.data_header_bytes)
    # the samples cover the run: 4 base RTTs apart, from the first start to after the last event
    t = rx["time_ns"].to_numpy()
    assert (np.diff(t) == default_interval(4160)).all() and t[0] - default_interval(4160) <= r.flows["start_ns"].min()
    assert t[-1] >= r.flows["finish_ns"].max()
    assert not r.links["fast_forwarded"].any() and not r.links["paused"].any()


def test_incast_port_sits_at_full_utilisation(reference_runs, tmp_path):
    """S1 with ECN off: DCQCN never cuts, PFC keeps the switch lossless, so the receiver's port
    sends back to back from the first packet's arrival to the last (the reference's presets do
    not: DCQCN falls to its 1 Gb/s minimum, HPCC aims at 95%)."""
    src = reference_runs / "S1_dcqcn"
    for f in ("topology.txt", "flow.txt", "trace.txt", "paths.txt"):
        shutil.copy(src / f, tmp_path / f)
    (tmp_path / "config.txt").write_text((src / "config.txt").read_text().replace("ENABLE_QCN 1", "ENABLE_QCN 0"))
    run, r = monitored(tmp_path)
    assert r.counters["pfc_pauses"] > 0 and r.counters["drops"] == 0
    rx = port(r.links, S1_SWITCH, S1_RECEIVER_PORT)
    assert int(rx["tx_bytes"].sum()) == wire_bytes(r.flows, run.cfg)
    start, end = r.flows["start_ns"].min(), r.flows["finish_ns"].max()
    interval = int(np.diff(rx["time_ns"])[0])
    busy = rx[(rx["time_ns"] > start + interval) & (rx["time_ns"] <= end)]  # all but the first, partial interval
    assert len(busy) >= (end - start) // interval - 1
    # back to back: at least the interval's worth of bytes less the one packet a boundary may cut
    need = 100e9 * interval / 8e9 - (1000 + run.cfg.data_header_bytes)
    assert (busy["tx_bytes"] >= need).all() and (busy["utilisation"] > 0.99).all()


def test_monitor_changes_no_output_and_pause_flags_match_pfc(reference_runs):
    """S6 (PFC pauses fire), full mode, with and without the monitor: every output identical;
    a port's ``paused`` flag is set exactly inside its pause intervals."""
    folder = reference_runs / "S6_hpcc"
    plain = execute(prepare_config_run(folder / "config.txt", seq_num_bytes=8, paths=folder / "paths.txt"))
    run, mon = monitored(folder, interval=1000)  # every microsecond: many samples among the events
    assert format_fct(mon.flows) == format_fct(plain.flows) and format_pfc(mon.pfc) == format_pfc(plain.pfc)
    pd.testing.assert_frame_equal(mon.flows, plain.flows)
    drop = ("wall_seconds", "setup_seconds")
    assert {k: v for k, v in mon.counters.items() if k not in drop} == \
        {k: v for k, v in plain.counters.items() if k not in drop}
    iv = pfc_intervals(mon.pfc)
    switch_iv = iv[iv["node"].isin(mon.links["node"].unique())]
    assert len(switch_iv) > 0, "S6 pauses some switch port"
    paused = np.zeros(len(mon.links), bool)
    for i in switch_iv.itertuples():  # paused from the PAUSE's ns (sampled after it) to the RESUME's
        end = i.end_ns if i.end_ns >= 0 else np.iinfo(np.int64).max
        paused |= ((mon.links["node"] == i.node) & (mon.links["port"] == i.ifindex)
                   & (mon.links["time_ns"] >= i.start_ns) & (mon.links["time_ns"] < end)).to_numpy()
    assert (mon.links["paused"].to_numpy() == paused).all()


def test_qlen_txt_as_the_reference_writes_it(reference_runs, tmp_path):
    """QLEN_MON_START = END (the reference runs): one sample at 2 s, when the flows have just
    started and every queue is empty: one count in the 0 KB bin of each of switch 9's ports.
    Over 2.0-2.1 s the histogram is written at both multiples of 100 ms, cumulative: 1,000,001
    samples 100 ns apart at the second."""
    folder = reference_runs / "S1_hpcc"
    r = execute(prepare_config_run(folder / "config.txt", seq_num_bytes=8, paths=folder / "paths.txt"))
    assert r.qlen == "time: 2000000000\n" + "".join(f"9 {j} 1\n" for j in range(1, 10))
    text = (folder / "config.txt").read_text().replace("QLEN_MON_END 2000000000", "QLEN_MON_END 2100000000")
    (tmp_path / "config.txt").write_text(text)
    for f in ("topology.txt", "flow.txt", "trace.txt", "paths.txt"):
        shutil.copy(folder / f, tmp_path / f)
    r2 = execute(prepare_config_run(tmp_path / "config.txt", seq_num_bytes=8, paths=tmp_path / "paths.txt"))
    assert format_fct(r2.flows) == format_fct(r.flows)
    dumps = r2.qlen.split("time: ")[1:]
    assert [d.split("\n")[0] for d in dumps] == ["2000000000", "2100000000"]
    rows = [line.split() for line in dumps[1].strip().split("\n")[1:]]
    assert [(a, b) for a, b, *_ in rows] == [("9", str(j)) for j in range(1, 10)]
    assert all(sum(int(x) for x in counts) == 1_000_001 for *_, counts in [(a, b, c) for a, b, *c in rows])
    receiver = [int(x) for x in rows[0][2:]]
    assert len(receiver) > 1, "the receiver's port queued more than 1 KB at some sample"


def test_wormhole_replay_samples_every_interval_of_the_gpt_sample():
    r = replay(str(REPO / "traces" / "gpt-16gpu.trace.parquet"), "rail:servers=4,gpus_per_server=4", "dcqcn",
               iterations=1, mode="wormhole", monitor=0)
    t = np.sort(r.links["time_ns"].unique())
    interval = int(t[1] - t[0])
    assert (np.diff(t) == interval).all(), "no interval missing"
    it = r.iterations.iloc[0]
    assert t[0] - interval <= it["start_ns"] and t[-1] >= it["end_ns"]
    n_ports = r.links.groupby(["node", "port"]).ngroups
    assert len(r.links) == len(t) * n_ports


def test_fast_forwarded_samples_carry_frozen_queues_and_steady_bytes():
    """A GPT-13B layer on 16 GPUs (long ring steps: partitions jump): samples inside jumps are
    flagged, keep their queue, and every host's switch port still sends exactly the bytes of
    its flows' data and of the ACKs of the flows it sends, simulated or credited."""
    shape = dataclasses.replace(GPT_PRESETS["gpt-13b"], layers=1)
    trace = gpt_trace(shape, 16, tp=4, bucket_mb=800, name="gpt-13b")
    r = replay(trace, "rail:servers=4,gpus_per_server=4", "dcqcn", mode="wormhole", monitor=0, journal=True)
    assert r.counters["wormhole"]["fast_forwards"] > 0
    links = r.links.sort_values(["node", "port", "time_ns"]).reset_index(drop=True)
    ff = links["fast_forwarded"].to_numpy()
    assert ff.sum() > 0 and (links.loc[ff, "fast_forwarded_bytes"] > 0).any()
    # a frozen queue does not move: between two consecutive flagged samples of a port it stays
    same_port = (links[["node", "port"]].shift() == links[["node", "port"]]).all(axis=1).to_numpy()
    both = ff & np.roll(ff, 1) & same_port
    q = links["queue_bytes"].to_numpy()
    assert (q[both] == np.roll(q, 1)[both]).mean() > 0.95 and (q[ff] > 0).any()
    # jumps run the ring steps at line rate (DCQCN, nothing to share): full utilisation
    assert links.loc[ff & (links["fast_forwarded_bytes"] > 0).to_numpy(), "utilisation"].median() > 0.99
    from wormhole_replay.config import SimConfig
    from wormhole_replay.topology import build_topology

    cfg, topo = SimConfig.direct("dcqcn", 100_000_000_000), build_topology("rail:servers=4,gpus_per_server=4")
    p = topo.ports()
    tx = links.groupby(["node", "port"])["tx_bytes"].sum()
    net = r.flows[~r.flows["virtual"]]
    packets = -(-net["size_bytes"] // cfg.packet_payload_size)
    for h in topo.hosts:
        sw = p.peer_port[topo.node_ports(int(h))[0]]
        expected = wire_bytes(net[net["dst"] == h], cfg) + int(packets[net["src"] == h].sum()) * cfg.ack_bytes
        assert tx[(int(p.node[sw]), int(p.ifindex[sw]))] == expected


@pytest.mark.parametrize("value", ["0us", "-5us", "fast", "10"])
def test_bad_monitor_interval_is_one_line_and_exit_2(value, capsys):
    code = main(["simulate", str(REPO / "traces" / "examples" / "incast" / "config.txt"), f"--monitor={value}",
                 "--out", "/nonexistent/never-written"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--monitor" in err
