"""The packet-level engine: ``core`` (Numba kernels over the tables of ``layout``), ``heap``
(the event queue), ``build`` (arrays from a topology, flows and config) and ``simulate`` (the
Python facade).

Numba's on-disk cache is invalidated only by changes to the file that defines a kernel, not by
changes to the helpers it calls from other files (numba docs, "Cache invalidation").  So that an
edit to ``heap.py`` or ``layout.py`` can never leave a stale compiled ``core.run`` behind, the
engine keeps a digest of its own sources beside the cache and clears the cache when they change.
"""

import hashlib
from pathlib import Path


def _clear_stale_numba_cache() -> None:
    here = Path(__file__).parent
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in sorted(here.glob("*.py")))).hexdigest()
    cache = here / "__pycache__"
    stamp = cache / "engine-sources.sha256"
    try:
        if stamp.is_file() and stamp.read_text() == digest:
            return
        for f in list(cache.glob("*.nbi")) + list(cache.glob("*.nbc")):
            f.unlink(missing_ok=True)
        cache.mkdir(exist_ok=True)
        stamp.write_text(digest)
    except OSError:  # a read-only install: Numba then caches elsewhere or not at all
        pass


_clear_stale_numba_cache()
