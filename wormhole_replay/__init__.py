"""wormhole-replay: packet-level RDMA network simulation of training traffic, accelerated."""

__version__ = "0.1.0"
