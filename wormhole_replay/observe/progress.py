"""A progress bar that measures what costs time: the bytes the network still has to deliver.

Counting flows misled: on a GPT replay the long flows (the DP all-reduce's buckets) come last, so a
flow count showed seconds left for the last ten minutes. The bytes every network flow will deliver
are known from the flow set at the start; between kernel slices the bar reads each flow's bytes
received in order (``FT_BYTES_RX``; in wormhole mode a jump credits its bytes there when the
partition thaws, so fast-forwarded bytes count as delivered). Compute ops and copies inside a
server cost the simulator nothing and are not counted; a run with no network flow counts flows.

The time left is shown only once it is stable (:class:`Eta`): the predictions of the whole run's
wall time (elapsed / fraction delivered) made over the last ``WINDOW_S`` seconds (or the last
fifth of the run, if longer) must be at least ``MIN_POINTS`` and agree within ``AGREE``.
"""

from __future__ import annotations

import sys
import time

import numpy as np

WINDOW_S = 5.0
MIN_POINTS = 5
AGREE = 0.10  # (max - min) / mean of the predicted total wall time
SHOW_AFTER_S = 2.0  # the bar appears once a run has lasted this long, as before


class Eta:
    """Seconds left, or ``None`` while the predictions disagree (see the module docstring)."""

    def __init__(self):
        self.points: list[tuple[float, float]] = []  # (elapsed, predicted total)

    def update(self, elapsed: float, fraction: float) -> float | None:
        if fraction <= 0.0 or elapsed <= 0.0:
            return None
        if fraction >= 1.0:
            return 0.0
        since = elapsed - max(WINDOW_S, 0.2 * elapsed)
        self.points = [(t, p) for t, p in self.points if t >= since] + [(elapsed, elapsed / fraction)]
        recent = [p for _, p in self.points]
        if len(recent) < MIN_POINTS:
            return None
        lo, hi = min(recent), max(recent)
        if hi - lo > AGREE * (sum(recent) / len(recent)):
            return None
        return max(recent[-1] - elapsed, 0.0)


def _clock(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


class ByteProgress:
    """An ``on_slice`` callback drawing the bar on ``file`` (tqdm) once the run has lasted
    ``after`` seconds; call :meth:`close` at the end."""

    def __init__(self, flows, after: float = SHOW_AFTER_S, file=None, clock=time.perf_counter):
        from ..engine import layout as L

        self._rx = L.FT_BYTES_RX
        self._state = L.FT_STATE
        self.network = np.flatnonzero(~np.asarray(flows.is_virtual))
        self.size = np.asarray(flows.size, dtype=np.int64)[self.network]
        self.total = int(self.size.sum())
        self.by_bytes = self.total > 0
        if not self.by_bytes:
            self.total = len(flows)
        self.after, self.file, self.clock = after, file, clock
        self.t0 = clock()
        self.eta = Eta()
        self.bar = None

    def done(self, state) -> int:
        """Bytes delivered so far (or flows finished, without network flows)."""
        ft = state.flows.table
        if self.by_bytes:
            return int(np.minimum(ft[self.network, self._rx], self.size).sum())
        return int((ft[:, self._state] == 2).sum())

    def __call__(self, state) -> None:
        from ..engine import layout as L

        elapsed = self.clock() - self.t0
        done = self.done(state)
        left = self.eta.update(elapsed, done / self.total if self.total else 1.0)
        if self.bar is None:
            if elapsed < self.after:
                return
            from tqdm import tqdm

            unit = {"unit": "B", "unit_scale": True, "unit_divisor": 1024} if self.by_bytes else {"unit": "flow"}
            # tqdm's own elapsed time and rate would start at the bar, not the run, and its ETA is the
            # unstable one this replaces: the postfix says both
            self.bar = tqdm(total=self.total, initial=done, desc="simulate", leave=False, dynamic_ncols=True,
                            file=self.file or sys.stderr, delay=1e9,  # drawn by refresh() below, not at creation
                            bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt}{postfix}", **unit)
        st = state.state
        eta = f"{_clock(left)} left" if left is not None else "time left: estimating"
        self.bar.n = done
        self.bar.set_postfix_str(f"{_clock(elapsed)} elapsed, {eta}, {st[L.ST_NOW] / 1e6:.3f} ms simulated, "
                                 f"{st[L.ST_EVENTS] / 1e6:.1f} M events", refresh=False)
        self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
