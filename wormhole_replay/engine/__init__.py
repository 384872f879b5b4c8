"""The packet-level engine.  A folder per concern, a file per mechanism:

* the model (Numba kernels over the structures of ``tables``, columns named in ``layout``):
  ``link`` (wires), ``switch`` (forwarding, egress queues, ECN, INT), ``pfc`` (shared buffer, PFC),
  ``nic`` (QP scheduling, pacing, windows), ``transport`` (receive, ACK, NACK, completion),
  ``cc/`` (DCQCN, HPCC, DCTCP), ``dag`` (flow starts and dependency release), ``rng``;
* the event machinery: ``loop`` (the event loop and dispatch), ``queue`` + ``heap`` (the event
  queue), ``slots`` (what each event slot is), ``packets`` (the packet pool and queue lists);
* ``wormhole/`` (partitions, steadiness, jumps) and ``fastforward`` (its options);
* the Python facade: ``build`` (arrays from a topology, flows and config), ``simulate`` (runs the
  kernel in slices, returns DataFrames), ``memo_view`` (what the memo may read and do).

Numba's on-disk cache is invalidated only by changes to the file that defines a kernel, not by
changes to the helpers it calls from other files (numba docs, "Cache invalidation").  So that an
edit to ``heap.py`` or ``layout.py`` can never leave a stale compiled ``loop.run`` behind, the
engine keeps a digest of its own sources beside the cache and clears every cache of the engine's
folders when they change.
"""

import hashlib
from pathlib import Path


def _clear_stale_numba_cache() -> None:
    here = Path(__file__).parent
    sources = sorted(here.rglob("*.py"))
    digest = hashlib.sha256(b"".join(p.relative_to(here).as_posix().encode() + p.read_bytes() for p in sources)).hexdigest()
    cache = here / "__pycache__"
    stamp = cache / "engine-sources.sha256"
    try:
        if stamp.is_file() and stamp.read_text() == digest:
            return
        for d in {p.parent / "__pycache__" for p in sources}:
            for f in list(d.glob("*.nbi")) + list(d.glob("*.nbc")):
                f.unlink(missing_ok=True)
        cache.mkdir(exist_ok=True)
        stamp.write_text(digest)
    except OSError:  # a read-only install: Numba then caches elsewhere or not at all
        pass


_clear_stale_numba_cache()
