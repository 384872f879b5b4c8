"""wormhole-replay: packet-level RDMA network simulation of training traffic, accelerated.

The Python API (imported lazily, so that ``wormhole-replay --version`` stays instant):

* :func:`simulate` (topology spec or file, flow.txt or FlowSet, cc) -> Result with DataFrames;
* :func:`run_config` (a reference ``config.txt``) -> Result.
"""

__version__ = "0.2.0"
__all__ = ["simulate", "run_config"]


def __getattr__(name):
    if name in __all__:
        from . import api

        return getattr(api, name)
    raise AttributeError(name)
