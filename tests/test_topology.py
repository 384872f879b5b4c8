"""Tests of wormhole_replay.topology: units, builders, the topology.txt reader, routing."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from wormhole_replay.errors import InputError
from wormhole_replay.topology import (
    Topology,
    apply_reference_order,
    build_topology,
    compute_routes,
    ecmp_hash,
    flow_path,
    node_path_to_ports,
    node_to_ip,
    nodes_to_ips,
    pair_metrics,
    parse_rate_bps,
    parse_time_ns,
    read_topology_file,
)


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def reference_runs() -> Path:
    """The reference ns-3 runs (shared/reference-runs beside the repo, or $WORMHOLE_REFERENCE_RUNS)."""
    env = os.environ.get("WORMHOLE_REFERENCE_RUNS")
    folder = Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "reference-runs"
    if not folder.is_dir():
        pytest.skip(f"reference runs not found at {folder} (set WORMHOLE_REFERENCE_RUNS)")
    return folder


def _read_paths(path: Path) -> list[tuple[int, int, int, int, list[int], list[int]]]:
    """(src, dst, sport, dport, data_path, ack_path) per flow of a reference paths.txt."""
    flows = []
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        _, src, dst, sport, dport, _, _, data, ack = line.split()
        flows.append(
            (
                int(src),
                int(dst),
                int(sport),
                int(dport),
                [int(n) for n in data.split("-")],
                [int(n) for n in ack.split("-")],
            )
        )
    return flows


def _assert_same_topology(ours: Topology, ref: Topology) -> None:
    assert ours.n_nodes == ref.n_nodes
    np.testing.assert_array_equal(ours.is_switch, ref.is_switch)
    np.testing.assert_array_equal(ours.switches, ref.switches)
    np.testing.assert_array_equal(ours.link_a, ref.link_a)
    np.testing.assert_array_equal(ours.link_b, ref.link_b)
    np.testing.assert_array_equal(ours.link_rate_bps, ref.link_rate_bps)
    np.testing.assert_array_equal(ours.link_delay_ns, ref.link_delay_ns)
    np.testing.assert_array_equal(ours.link_error_rate, ref.link_error_rate)


def _write(tmp_path: Path, text: str, name: str = "topology.txt") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --------------------------------------------------------------------------- units


@pytest.mark.parametrize(
    "text, bps",
    [
        ("100Gbps", 100_000_000_000),
        ("100Gb/s", 100_000_000_000),
        ("50Mb/s", 50_000_000),
        ("1000Mb/s", 1_000_000_000),
        ("25G", 25_000_000_000),
        ("100G", 100_000_000_000),
        ("400000000000", 400_000_000_000),
        ("10bps", 10),
        ("10b/s", 10),
        ("10kbps", 10_000),
        ("10Kbps", 10_000),
        ("10kb/s", 10_000),
        ("1Tbps", 10**12),
        ("1KB/s", 8_000),
        ("1MB/s", 8_000_000),
        ("12.5GB/s", 100_000_000_000),
        ("2.5Gbps", 2_500_000_000),
        ("1Kib/s", 1024),
    ],
)
def test_parse_rate(text, bps):
    assert parse_rate_bps(text) == bps


@pytest.mark.parametrize("text", ["", "fast", "100Xbps", "Gbps", "-5Gbps", "100 Gbps extra", "1e"])
def test_parse_rate_rejects_garbage(text):
    with pytest.raises(ValueError):
        parse_rate_bps(text)


@pytest.mark.parametrize(
    "text, ns",
    [
        ("0.001ms", 1000),
        ("1000ns", 1000),
        ("1us", 1000),
        ("1e-06s", 1000),
        ("2s", 2_000_000_000),
        ("500ps", 1),  # 0.5 ns rounds half up
        ("400ps", 0),
        ("1600ps", 2),
        ("0.000001", 1000),  # plain number: seconds
        ("3", 3_000_000_000),
        ("0.3us", 300),
    ],
)
def test_parse_time(text, ns):
    assert parse_time_ns(text) == ns


@pytest.mark.parametrize("text", ["", "soon", "1 parsec", "ms", "1xs"])
def test_parse_time_rejects_garbage(text):
    with pytest.raises(ValueError):
        parse_time_ns(text)


# --------------------------------------------------------------------------- builders vs the reference files


def test_fat_tree_k8_matches_s4(reference_runs):
    ref = read_topology_file(reference_runs / "S4_dcqcn" / "topology.txt")
    ours = build_topology("fat-tree:k=8")
    _assert_same_topology(ours, ref)
    assert ours.n_nodes == 208 and ours.n_links == 384
    np.testing.assert_array_equal(ours.hosts, np.arange(128))
    np.testing.assert_array_equal(ours.switches, np.arange(128, 208))


def test_leaf_spine_matches_s2(reference_runs):
    ref = read_topology_file(reference_runs / "S2_dcqcn" / "topology.txt")
    ours = build_topology("leaf-spine:hosts=16,leaves=4,spines=2")
    _assert_same_topology(ours, ref)


def test_star_matches_s1(reference_runs):
    ref = read_topology_file(reference_runs / "S1_dcqcn" / "topology.txt")
    ours = build_topology("leaf-spine:hosts=9,leaves=1,spines=0")
    _assert_same_topology(ours, ref)


def test_build_topology_reads_files(reference_runs):
    path = reference_runs / "S2_dcqcn" / "topology.txt"
    topo = build_topology(str(path))
    assert topo.n_nodes == 22 and topo.name == str(path)


def test_fat_tree_counts():
    for k in (2, 4, 8):
        topo = build_topology(f"fat-tree:k={k}")
        hosts = k**3 // 4
        assert len(topo.hosts) == hosts
        assert len(topo.switches) == k * k + (k // 2) ** 2
        assert topo.n_links == 3 * hosts


def test_rail_counts():
    topo = build_topology("rail:servers=4,gpus_per_server=8")
    assert topo.gpus_per_server == 8
    assert len(topo.hosts) == 32
    assert len(topo.switches) == 16  # 8 rails + 8 spines
    assert topo.n_links == 32 + 8 * 8
    # GPU g of every server is on rail switch 32 + g.
    for h in range(32):
        assert topo.link_a[h] == h and topo.link_b[h] == 32 + h % 8
    topo = build_topology("rail:servers=2,gpus_per_server=4,spines=2")
    assert len(topo.switches) == 6 and topo.n_links == 8 + 4 * 2
    assert build_topology("rail:servers=2", gpus_per_server=4).gpus_per_server == 4


def test_spec_options():
    topo = build_topology("leaf-spine:hosts=4,leaves=2,spines=1,bw=25Gbps,delay=500ns,gpus_per_server=2")
    assert set(topo.link_rate_bps.tolist()) == {25_000_000_000}
    assert set(topo.link_delay_ns.tolist()) == {500}
    assert topo.gpus_per_server == 2
    assert build_topology("fat-tree:k=4").link_delay_ns[0] == 1000


@pytest.mark.parametrize(
    "spec, fragment",
    [
        ("foo:k=4", "unknown topology spec 'foo:k=4'"),
        ("fat-tree:k=5", "k must be even"),
        ("fat-tree:k=0", "k must be >= 2"),
        ("fat-tree:k=four", "k must be an integer"),
        ("fat-tree", "missing parameter k"),
        ("fat-tree:k=4,x=1", "unknown parameter 'x'"),
        ("fat-tree:k=4,k=4", "given twice"),
        ("fat-tree:k", "expected key=value"),
        ("fat-tree:k=4,bw=fast", "bad bw"),
        ("fat-tree:k=4,delay=soon", "bad delay"),
        ("leaf-spine:hosts=10,leaves=4,spines=2", "not a multiple of leaves"),
        ("leaf-spine:hosts=0,leaves=4,spines=2", "hosts must be >= 1"),
        ("leaf-spine:hosts=8,leaves=4,spines=0", "need at least one spine"),
        ("rail:servers=4", "missing parameter gpus_per_server"),
        ("rail:servers=0,gpus_per_server=2", "servers must be >= 1"),
        ("fat-tree:k=4,gpus_per_server=3", "not a multiple of gpus_per_server"),
        ("runs/missing/topology.txt", "no such topology file"),
        ("missing.txt", "no such topology file"),
    ],
)
def test_bad_specs(spec, fragment):
    with pytest.raises(InputError, match=fragment.replace("(", r"\(")):
        build_topology(spec)


def test_unknown_spec_message_lists_kinds():
    with pytest.raises(InputError) as err:
        build_topology("foo:k=4")
    assert "fat-tree:k=K" in str(err.value) and "topology.txt file" in str(err.value)


def test_conflicting_gpus_per_server():
    with pytest.raises(InputError, match="gpus_per_server"):
        build_topology("fat-tree:k=4,gpus_per_server=2", gpus_per_server=4)


# --------------------------------------------------------------------------- the file reader


def test_read_topology_file(tmp_path):
    path = _write(
        tmp_path,
        "4 1 3\n3\n\n0 3 100Gbps 1000ns 0.000000\n1 3 50Mb/s 0.001ms 0\n2 3 25G 1us 0.5\ntrailing junk\n",
    )
    topo = read_topology_file(path)
    assert topo.n_nodes == 4 and topo.name == str(path)
    np.testing.assert_array_equal(topo.hosts, [0, 1, 2])
    np.testing.assert_array_equal(topo.link_rate_bps, [100_000_000_000, 50_000_000, 25_000_000_000])
    np.testing.assert_array_equal(topo.link_delay_ns, [1000, 1000, 1000])
    np.testing.assert_array_equal(topo.link_error_rate, [0, 0, 0.5])


def test_read_simai_header(tmp_path):
    # total_nodes gpus_per_server nvswitch_num switch_num links gpu_type
    path = _write(tmp_path, "5 2 0 1 4 A100\n4\n0 4 100Gbps 1us 0\n1 4 100Gbps 1us 0\n2 4 100Gbps 1us 0\n3 4 100Gbps 1us 0\n")
    topo = read_topology_file(path)
    assert topo.gpus_per_server == 2 and list(topo.switches) == [4]
    with pytest.raises(InputError, match="gpus_per_server"):
        read_topology_file(path, gpus_per_server=4)


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("", "empty file"),
        ("3 1\n", ":1: expected header"),
        ("3 x 2\n", ":1: switch_num must be an integer"),
        ("3 1 2\n2 0\n", ":2: expected 1 switch ids, got 2"),
        ("3 1 2\n7\n", ":2: switch id 7 out of range"),
        ("3 1 2\n2\n0 2 100Gbps 1us\n", ":3: expected 5 fields 'src dst rate delay error_rate', got 4"),
        ("3 1 2\n2\n0 2 100Gbps 1us 0\n", "header promises 2 links, file has 1"),
        ("3 1 2\n2\n0 9 100Gbps 1us 0\n1 2 100Gbps 1us 0\n", ":3: node id 9 out of range 0..2"),
        ("3 1 2\n2\n0 2 fast 1us 0\n1 2 100Gbps 1us 0\n", ":3: not a data rate"),
        ("3 1 2\n2\n0 2 100Gbps 1us 0\n1 2 100Gbps soon 0\n", ":4: not a time"),
        ("3 1 2\n2\n0 2 100Gbps 1us 0\n1 2 100Gbps 1us x\n", ":4: could not convert"),
        ("3 1 2\n2\n0 2 0Gbps 1us 0\n1 2 100Gbps 1us 0\n", ":3: rate must be > 0"),
        ("3 1 2\n2\n0 2 100Gbps 1us 2\n1 2 100Gbps 1us 0\n", ":3: error_rate must be in"),
        ("3 1 2\n2\n2 2 100Gbps 1us 0\n1 2 100Gbps 1us 0\n", ":3: link from node 2 to itself"),
        # host 0 has two NIC links (the second on line 5)
        ("3 1 3\n2\n0 2 100Gbps 1us 0\n1 2 100Gbps 1us 0\n0 2 100Gbps 1us 0\n", ":5: host 0 has 2 links"),
        ("3 1 1\n2\n0 2 100Gbps 1us 0\n", "host 1 has 0 links"),
        # two stars with no link between them
        ("6 2 4\n4 5\n0 4 1G 1us 0\n1 4 1G 1us 0\n2 5 1G 1us 0\n3 5 1G 1us 0\n", "host 0 cannot reach host 2"),
    ],
)
def test_bad_topology_files(tmp_path, text, fragment):
    path = _write(tmp_path, text)
    with pytest.raises(InputError) as err:
        read_topology_file(path)
    assert str(path) in str(err.value)
    assert fragment in str(err.value)


def test_missing_topology_file(tmp_path):
    path = tmp_path / "topology.txt"
    with pytest.raises(InputError, match="topology.txt: no such topology file"):
        read_topology_file(path)


def test_two_hosts_linked_directly():
    topo = Topology(
        n_nodes=2,
        is_switch=[False, False],
        link_a=[0],
        link_b=[1],
        link_rate_bps=[100_000_000_000],
        link_delay_ns=[1000],
        link_error_rate=[0],
    )
    routes = compute_routes(topo)
    assert flow_path(topo, routes, 0, 1, 1, 2) == [0, 1]
    assert pair_metrics(topo, routes, 1000)[0][0, 1] == 2080


def test_topology_validation_messages():
    def make(n_nodes, is_switch, links):
        return Topology(
            n_nodes=n_nodes,
            is_switch=is_switch,
            link_a=[a for a, _ in links],
            link_b=[b for _, b in links],
            link_rate_bps=[1] * len(links),
            link_delay_ns=[0] * len(links),
            link_error_rate=[0] * len(links),
        )

    with pytest.raises(InputError, match="host 5 has 2 links; a host must have exactly one NIC link"):
        make(7, [False] * 6 + [True], [(h, 6) for h in range(6)] + [(5, 6)])
    with pytest.raises(InputError, match="out of range"):
        make(3, [False, False, True], [(0, 2), (1, 3)])
    with pytest.raises(InputError, match="self-link"):
        make(3, [False, False, True], [(0, 2), (1, 2), (2, 2)])
    with pytest.raises(InputError, match="no hosts"):
        make(2, [True, True], [(0, 1)])
    topo = make(3, [False, False, True], [(0, 2), (1, 2)])
    assert topo.link_a.dtype == np.int64 and not topo.link_a.flags.writeable


# --------------------------------------------------------------------------- ports


def test_ports_and_ifindex(reference_runs):
    topo = read_topology_file(reference_runs / "S2_dcqcn" / "topology.txt")
    ports = topo.ports()
    assert ports.n_ports == 48
    # Link 16 is 16-20: port 32 on 16 toward 20, port 33 on 20 toward 16.
    assert (ports.node[32], ports.peer_node[32], ports.peer_port[32]) == (16, 20, 33)
    assert (ports.node[33], ports.peer_node[33], ports.peer_port[33]) == (20, 16, 32)
    # Leaf 16: hosts 0-3 on ifindex 1-4, spines 20, 21 on 5, 6 (routing.txt: "21/6 20/5").
    own = topo.node_ports(16)
    assert ports.peer_node[own].tolist() == [0, 1, 2, 3, 20, 21]
    assert ports.ifindex[own].tolist() == [1, 2, 3, 4, 5, 6]
    # Every host has exactly one port, ifindex 1.
    for h in topo.hosts:
        assert ports.ifindex[topo.node_ports(h)].tolist() == [1]


def test_routing_txt_ifindex_agrees(reference_runs):
    """Every next hop/ifindex the reference printed is one of our ports with that ifindex."""
    topo = read_topology_file(reference_runs / "S2_dcqcn" / "topology.txt")
    routes = compute_routes(topo)
    ports = topo.ports()
    for line in (reference_runs / "S2_dcqcn" / "routing.txt").read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        head, _, tail = line.partition(":")
        node, dst = map(int, head.split())
        ours = dict(routes.next_hops[(node, dst)])
        for item in tail.split():
            nxt, ifindex = map(int, item.split("/"))
            assert ports.ifindex[ours[nxt]] == ifindex
            assert ports.node[ours[nxt]] == node and ports.peer_node[ours[nxt]] == nxt


# --------------------------------------------------------------------------- routing


def test_pair_metrics_s1(reference_runs):
    topo = read_topology_file(reference_runs / "S1_dcqcn" / "topology.txt")
    rtt, bw, bdp = pair_metrics(topo, compute_routes(topo), 1000)
    assert rtt.shape == (9, 9)
    assert rtt[0, 1] == 4160 and rtt[3, 8] == 4160  # 2 * 2 us + 2 * 80 ns
    assert bw[0, 1] == 100_000_000_000
    assert bdp[0, 1] == 4160 * 100_000_000_000 // 10**9 // 8
    assert np.all(np.diag(rtt) == 0) and np.all(np.diag(bw) == 0) and np.all(np.diag(bdp) == 0)


def test_pair_metrics_s2(reference_runs):
    topo = read_topology_file(reference_runs / "S2_dcqcn" / "topology.txt")
    rtt, bw, _ = pair_metrics(topo, compute_routes(topo), 1000)
    assert rtt[0, 1] == 4160  # same leaf
    assert rtt[3, 4] == 8320  # cross-leaf: 4 hops
    assert bw[3, 4] == 100_000_000_000


def test_pair_metrics_bottleneck_and_truncation():
    # host 0 -(10G, 100ns)- switch 2 -(3G, 7ns)- host 1: tx per hop is truncated to whole ns.
    topo = Topology(
        n_nodes=3,
        is_switch=[False, False, True],
        link_a=[0, 1],
        link_b=[2, 2],
        link_rate_bps=[10_000_000_000, 3_000_000_000],
        link_delay_ns=[100, 7],
        link_error_rate=[0, 0],
    )
    rtt, bw, bdp = pair_metrics(topo, compute_routes(topo), 1000)
    tx = 8000 * 10**9 // 10_000_000_000 + 8000 * 10**9 // 3_000_000_000  # 800 + 2666
    assert rtt[0, 1] == rtt[1, 0] == 2 * 107 + tx
    assert bw[0, 1] == 3_000_000_000
    assert bdp[0, 1] == rtt[0, 1] * 3_000_000_000 // 10**9 // 8


def test_next_hops_fat_tree():
    topo = build_topology("fat-tree:k=4")  # 16 hosts, edge 16..23, agg 24..31, core 32..35
    routes = compute_routes(topo)
    # Edge 16 (pod 0) toward host 15 (pod 3): both aggregation switches of pod 0.
    assert [n for n, _ in routes.next_hops[(16, 15)]] == [24, 25]
    # Aggregation 24 (index 0) toward another pod: its cores 32, 33.
    assert [n for n, _ in routes.next_hops[(24, 15)]] == [32, 33]
    # Core 32 toward host 15: aggregation switch index 0 of pod 3 = 30.
    assert routes.next_hops[(32, 15)] == ((30, topo.node_ports(32)[3]),)
    # Each port in a next hop is on the node and points at the next node.
    ports = topo.ports()
    for (node, _dst), hops in routes.next_hops.items():
        for nxt, port in hops:
            assert ports.node[port] == node and ports.peer_node[port] == nxt
    assert (16, 16) not in routes.next_hops  # not a host
    assert routes.dist[topo.hosts, np.arange(16)].tolist() == [0] * 16


def test_s2_paths_match_reference(reference_runs):
    """Our ECMP (next hops by node id) gives paths of the reference's length and end points;
    with the reference's next-hop order (routing.txt) it gives the reference's exact paths."""
    run = reference_runs / "S2_dcqcn"
    topo = read_topology_file(run / "topology.txt")
    routes = compute_routes(topo)
    ordered = apply_reference_order(topo, routes, run / "routing.txt")
    for src, dst, sport, dport, data, ack in _read_paths(run / "paths.txt"):
        path = flow_path(topo, routes, src, dst, sport, dport)
        assert len(path) == len(data) and path[0] == data[0] == src and path[-1] == data[-1] == dst
        back = flow_path(topo, routes, src, dst, sport, dport, ack=True)
        assert len(back) == len(ack) and back[0] == dst and back[-1] == src
        assert flow_path(topo, ordered, src, dst, sport, dport) == data
        assert flow_path(topo, ordered, src, dst, sport, dport, ack=True) == ack
        # Ports round-trip to the same nodes.
        for nodes in (path, back, data, ack):
            ports = node_path_to_ports(topo, nodes)
            assert len(ports) == len(nodes) - 1
            p = topo.ports()
            assert [int(p.node[q]) for q in ports] == nodes[:-1]
            assert [int(p.peer_node[q]) for q in ports] == nodes[1:]


def test_s4_paths_match_reference_exactly(reference_runs):
    """The ECMP hash is bit-exact: with routing.txt's order all 128 S4 flows follow the
    reference's data and ACK paths hop for hop."""
    run = reference_runs / "S4_dcqcn"
    topo = build_topology("fat-tree:k=8")
    routes = apply_reference_order(topo, compute_routes(topo), run / "routing.txt")
    flows = _read_paths(run / "paths.txt")
    assert len(flows) == 128
    for src, dst, sport, dport, data, ack in flows:
        assert flow_path(topo, routes, src, dst, sport, dport) == data
        assert flow_path(topo, routes, src, dst, sport, dport, ack=True) == ack


def test_node_path_to_ports_errors():
    topo = build_topology("leaf-spine:hosts=4,leaves=2,spines=1")
    assert node_path_to_ports(topo, [0]) == []
    with pytest.raises(InputError, match="not linked"):
        node_path_to_ports(topo, [0, 5])
    with pytest.raises(InputError, match="not a host"):
        flow_path(topo, compute_routes(topo), 0, 4, 1, 2)


def test_node_to_ip():
    assert node_to_ip(0) == 0x0B000001
    assert node_to_ip(1) == 0x0B000101
    assert node_to_ip(255) == 0x0B00FF01
    assert node_to_ip(256) == 0x0B010001
    assert node_to_ip(300) == 0x0B012C01
    nodes = np.array([0, 1, 255, 256, 300, 70_000])
    assert nodes_to_ips(nodes).tolist() == [node_to_ip(n) for n in nodes]


def test_ecmp_hash_is_murmur3():
    # Standard MurmurHash3_x86_32 test vectors.
    assert ecmp_hash(b"", 0) == 0
    assert ecmp_hash(b"", 1) == 0x514E28B7
    assert ecmp_hash(b"\xff\xff\xff\xff", 0) == 0x76293B50
    assert ecmp_hash(b"\x21\x43\x65\x87", 0) == 0xF55B516B
    assert ecmp_hash(b"\x21\x43\x65\x87", 0x5082EDEE) == 0x2362F9DE
    assert ecmp_hash(b"\x21\x43\x65", 0) == 0x7E4A8634
    assert ecmp_hash(b"Hello, world!", 1234) == 0xFAF6CDB3
    key = bytes(range(12))
    assert 0 <= ecmp_hash(key, 17) < 2**32


def test_compute_routes_fat_tree_k16():
    """The 1024-host fat-tree's routes (no time bound here: speed is measured by benchmarks, and a
    bound of 4 s failed on this machine at 4.1 s; ``bench_scale``'s 1024-GPU row times them)."""
    topo = build_topology("fat-tree:k=16")
    routes = compute_routes(topo)
    assert routes.dist.shape == (1344, 1024) and routes.dist.max() == 6
    # Edge switch toward a host in another pod: 8 equal-cost aggregation switches.
    assert len(routes.next_hops[(1024, 1023)]) == 8
    rtt, _, _ = pair_metrics(topo, routes, 1000)
    assert rtt[0, 1023] == 2 * 6000 + 6 * 80


def test_the_engine_builds_every_flows_ports_from_its_own_path():
    """``engine.build.port_paths`` computes a path once per (src, dst, sport, dport) and copies it
    to every flow of that 4-tuple: each flow must still get exactly its own data and ACK ports, and a
    virtual flow none."""
    from wormhole_replay.engine.build import port_paths
    from wormhole_replay.workload.flowfile import FlowSet

    topo = build_topology("fat-tree:k=4")
    routes = compute_routes(topo)
    hosts = np.asarray(topo.hosts)
    rng = np.random.default_rng(7)
    n = 300
    src, dst = hosts[rng.integers(0, 16, n)], hosts[rng.integers(0, 16, n)]
    dst = np.where(src == dst, hosts[(np.searchsorted(hosts, src) + 1) % 16], dst)
    duration = np.where(rng.random(n) < 0.3, 1000, -1)  # about a third virtual
    sport = 10000 + rng.integers(0, 5, n)  # few ports: many flows share a 4-tuple
    flows = FlowSet.from_columns(src, dst, [1000] * n, [0] * n, duration_ns=duration, sport=sport)
    paths, data_start, ack_start, longest = port_paths(topo, flows, routes, flows.sport)
    ends = np.append(data_start[1:], len(paths))  # a flow's ACK ports end where the next flow's data ports start
    for f in range(n):
        data, ack = list(paths[data_start[f]:ack_start[f]]), list(paths[ack_start[f]:ends[f]])
        if duration[f] >= 0:
            assert data == [] and ack == []
            continue
        s, d, sp, dp = int(src[f]), int(dst[f]), int(sport[f]), int(flows.dport[f])
        assert data == node_path_to_ports(topo, flow_path(topo, routes, s, d, sp, dp))
        assert ack == node_path_to_ports(topo, flow_path(topo, routes, s, d, sp, dp, ack=True))
    assert longest == max(ack_start - data_start)


@pytest.mark.parametrize("field, value, message", [
    ("dst", 99, "flows: flow 2: destination node 99 does not exist"),
    ("src", 4, "flows: flow 2: source node 4 is a switch, not a host"),
    ("dst", 0, "flows: flow 2: source and destination are the same host (0)"),
    ("size", 0, "flows: flow 2: size must be positive"),
    ("start_ns", -1, "flows: flow 2: start time must not be negative"),
    ("pg", 0, "flows: flow 2: priority group must be 1..7"),
    ("pg", 8, "flows: flow 2: priority group must be 1..7"),
])
def test_a_flow_set_names_its_first_bad_flow(field, value, message):
    """``FlowSet.validate`` checks every flow at once and names the first that fails, with the
    message its first failing rule gives (flow 2 here; flow 3 fails too, by its size)."""
    from wormhole_replay.workload.flowfile import FlowSet

    topo = build_topology("leaf-spine:hosts=4,leaves=2,spines=1")  # hosts 0-3, switches 4-6
    columns = dict(src=[0, 1, 0, 2], dst=[1, 2, 1, 3], pg=[3] * 4, dport=[100] * 4, size=[1000, 1000, 1000, 0],
                   start_ns=[0] * 4)
    FlowSet(**{k: np.array(v[:3], np.int64) for k, v in columns.items()}).validate(topo)  # the first three are fine
    columns[field][2] = value
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        FlowSet(**{k: np.array(v, np.int64) for k, v in columns.items()}).validate(topo)
