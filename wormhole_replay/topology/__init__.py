"""Network topologies and routing.

- :func:`build_topology` builds a :class:`Topology` from a spec (``fat-tree:k=8``,
  ``leaf-spine:hosts=16,leaves=4,spines=2``, ``rail:servers=4,gpus_per_server=8``) or reads
  an HPCC ``topology.txt`` (:func:`read_topology_file`).
- :func:`compute_routes` gives every node's equal-cost next hops toward every host, as the
  HPCC ns-3 reference computes them; :func:`flow_path` applies the reference's ECMP hash;
  :func:`pair_metrics` gives each host pair's base RTT, bottleneck rate and BDP.
- :func:`parse_rate_bps` and :func:`parse_time_ns` parse ns-3 rate and time strings.
"""

from wormhole_replay.topology.builders import build_topology
from wormhole_replay.topology.hpcc_file import read_topology_file
from wormhole_replay.topology.model import Ports, Topology
from wormhole_replay.topology.routing import (
    NextHops,
    Routes,
    apply_reference_order,
    compute_routes,
    ecmp_hash,
    ecmp_key,
    flow_path,
    node_path_to_ports,
    node_to_ip,
    nodes_to_ips,
    pair_metrics,
)
from wormhole_replay.topology.units import parse_rate_bps, parse_time_ns

__all__ = [
    "NextHops",
    "Ports",
    "Routes",
    "Topology",
    "apply_reference_order",
    "build_topology",
    "compute_routes",
    "ecmp_hash",
    "ecmp_key",
    "flow_path",
    "node_path_to_ports",
    "node_to_ip",
    "nodes_to_ips",
    "pair_metrics",
    "parse_rate_bps",
    "parse_time_ns",
    "read_topology_file",
]
