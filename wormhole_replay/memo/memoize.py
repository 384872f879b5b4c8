"""The memo database around one run: open it, hand the engine the entries of this network, write
back what the run learned and used, and record the run.

Writes happen in whole transactions: learned entries every ``FLUSH_SECONDS`` of wall time and at
the end, hit counts and the run record at the end.  A run killed in the middle therefore leaves the
database as its last flush did: valid, and warmer than before.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from . import fcg
from .fingerprint import fingerprint
from .episodes import Episodes
from .recurring import Recurring
from .session import MemoSession
from .store import MemoStore

FLUSH_SECONDS = float(os.environ.get("WORMHOLE_MEMO_FLUSH_SECONDS", 30.0))  # the tests flush at once


class Memoizer:
    """``Memoizer(target)``: the memo database at ``target`` (a path or a URL) for one run."""

    def __init__(self, target: str | Path, shared_prefixes: bool = False, spot_check: int = 0):
        self.target = str(target)
        self.store: MemoStore | None = None  # opened once the run's inputs have proven valid
        self.shared_prefixes = shared_prefixes
        self.spot_check = spot_check
        self.session: MemoSession | None = None
        self.inserted = 0
        self._flushed = 0
        self._last_flush = time.perf_counter()

    def session_for(self, topo, cfg, flows=None, episodes=None, recurring: float = 0.0, iteration_of=None):
        """The engine's ``memo`` argument: makes the run's session once the options are resolved.
        ``episodes``: groups of ``flows`` (a replay's iterations) to take whole from the memo
        (``memo/episodes.py``); ``recurring`` (a spread, 0: off): take flows from their earlier copies
        in the run where those agree within it (``memo/recurring.py``); ``iteration_of``: each flow's
        iteration (a replay's), which places a copy among its class's copies of its iteration."""

        def make(plan) -> MemoSession:
            ff = plan.fast_forward
            fp = fingerprint(topo, cfg, ff)
            self.store = MemoStore.open(self.target)
            whole = None if episodes is None else (lambda known: Episodes(flows, plan.sport, episodes, known))
            self.session = MemoSession(fp, self.store.entries(fp, fcg.SCHEME), ff.interval_ns, ff.samples,
                                       ff.short_samples, shared_prefixes=self.shared_prefixes,
                                       on_learn=self._maybe_flush, spot_check=self.spot_check, episodes=whole,
                                       recurring=(lambda known: Recurring(flows, plan.sport, known, spot_check=self.spot_check,
                                                                          tolerance=recurring, iteration_of=iteration_of,
                                                                          cc=cfg.cc_name))
                                       if recurring else None)
            return self.session

        return make

    def _flush(self) -> None:
        new = self.session.new_entries[self._flushed:]
        if new:
            self.inserted += self.store.insert(new, same=fcg.same_entry)
            self._flushed += len(new)
        self._last_flush = time.perf_counter()

    def _maybe_flush(self) -> None:
        if time.perf_counter() - self._last_flush >= FLUSH_SECONDS:
            self._flush()

    def finish(self, counters: dict, trace_digest: str | None) -> dict:
        """Write back the run's entries, hits and record; the counters for the summary."""
        s = self.session
        if s is None:
            return {}
        self._flush()
        self.store.touch(s.hit_counts, s.jumped)
        memo = {**s.counters, "memo_learned": s.counters["memo_inserts"], "memo_inserts": self.inserted,
                "memo_db": self.store.safe_url}
        self.store.record_run(trace_digest=trace_digest, fingerprint=s.fingerprint,
                              mode=counters.get("mode", "wormhole"),
                              counters={**counters, "wormhole": {**counters.get("wormhole", {}), **memo}},
                              wall_seconds=float(counters.get("wall_seconds", 0.0)))
        return memo

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
