"""Options of wormhole mode (steady-state fast-forwarding) and their defaults.

The paper (Wormhole, NSDI '26) samples every flow's rate each 1 us and calls a flow steady when
``(max - min) / mean`` of its last ``l = 2000`` samples is below ``theta = 5%``; it asks that the
window cover at least one period of the congestion control's own oscillation, and theta sit just
above its amplitude.  The defaults here follow that rule from the network actually simulated:

* ``window``: several periods of the CC's own oscillation.  DCQCN raises its rate on the
  rate-increase timer (``RP_TIMER``, 300 us in the ``run.py`` presets) and its sawtooth repeats on
  that timer: 4 ``RP_TIMER`` periods.  HPCC and DCTCP update once per RTT: 128 base RTTs.  Measured
  (``tools/bench_wormhole.py`` and the incast cases of the reference runs): flows that share a
  bottleneck under DCQCN or HPCC keep shifting their shares by a few percent per millisecond, which
  a window of one RP_TIMER or 32 RTTs does not see (S1 HPCC: 10% FCT error); these windows do.
  Under DCQCN a window given is at least 2 RP_TIMER periods (``LEAST_RP_TIMERS``): between two
  rate increases a flow's rate does not move, and a shorter window froze flows sharing a link at a
  trough of their sawtooth (two to four flows of 10-30 MB into one host: 51-200% FCT error at
  100 us, up to 12% at one period, exact at two).
* ``samples`` (``l``): 16 per window for HPCC and DCTCP (an interval of 8 base RTTs), 32 for DCQCN
  (37.5 us, 8 per rate-increase period): long enough that one packet more or less in a sample is
  about 1% of a flow's rate at a third of 100 Gb/s (the detector allows one packet of resolution
  per sample), short enough that the short window below is short.
* ``short_samples``: a partition with no shares to settle (``wormhole.settled``: under HPCC, flows
  that cannot contend, no two of them crossing one switch port and none a port slower than its
  NIC; under DCQCN, flows all at line rate with no queue ECN could mark, whether alone or bound by
  their NICs' round-robin) has nothing to drift, so its steady state is taken after this many
  flat samples, and so is a steady state the memo knows.  At least 2 samples, and as many as span
  4 base RTTs for DCQCN (a flow starts at line rate, and a lone one stays there) or 16 for HPCC
  and DCTCP (their window and utilisation estimate settle over that long, and a state frozen
  earlier sets the share the flow gets when a competitor arrives later: a lone HPCC flow frozen
  after 8 RTTs, then joined by a second, finished 6.6% early; after 16 RTTs, 0.1%); 2 with the
  default windows.
  Measured on 4-layer versions of the benchmark's iterations (GPT HPCC / GPT DCQCN / MoE DCQCN):
  events avoided 89% / 92% / 76% with full windows only, 97% / 99.2% / 96.9% with short ones, at
  FCT errors of 0.03% / 0.04% / 0.06% mean.
* ``theta``: 3%, below the paper's 5% (its sensitivity study found 3-7% to give the same error).
  Measured on a 4-layer version of the benchmark's MoE iteration under HPCC, whose all-to-all
  rates wander by a few percent over milliseconds: 5% admits windows whose shares are still moving
  (27% of events avoided at 2.3% mean FCT error; 94% at 1.9% with the memo, which then learns those
  states), 3% and 2% do not (26% at 0.007%, memo or not).  The GPT and DCQCN iterations avoid the
  same events at 2%, 3% and 5%.  ``--ff-theta 0.05`` trades that accuracy for the speed.
* ``first_jump``: 16 windows.  A jump never extrapolates further than the rates have proven to
  hold: the first one after the partition's flows change is at most this long, each later one
  whose re-measured rates match the last within theta / 2 may be twice as long, and no jump is
  longer than the time a rate creeping at the pace seen inside the window would take to drift by
  theta / 10 (``wormhole.DRIFT_BUDGET``).  A partition frozen after a short window (settled) has
  no shares to drift: only that last bound applies to it.
  Measured on a 12-layer version of the GPT benchmark (HPCC): 97.0% of events avoided with the cap,
  98.8% without, FCT error 0.04% mean both ways.
* ``releaser_share``: 1/16.  A contended jump (after a full window) of a flow that releases other
  flows (a trace's DAG), and every flow of a jump at mean shares (``wormhole.jump.
  stationary``: shares that wander sample by sample around means that hold), spans at most this
  share of that flow's expected FCT
  (``wormhole.jump.share_cap``): its completion moves by up to theta x the jump, and every flow
  it releases starts that much earlier or later.  Measured on ``tools/bench_scale.py --only
  ddp16`` (HPCC, ring steps of 7-15 ms on a k=4 fat-tree): without it 11 jumps avoided 0.9% of
  events and put the per-flow p99 at 5.71%, beyond the 5% bound and the run's noise floor (1.97%);
  with it there is no jump and the run is exact.  Where the full simulation is itself chaotic the
  cap costs speed the bounds would allow: see DEVELOPERS.md, "Wormhole mode: the measurements", for the MoE
  iteration under HPCC, and ``--ff-releaser-share 1`` (no cap) after checking a workload with ``audit
  --noise-floor``.
* ``tail``: the last 2 base RTTs of a flow (plus its bytes in flight and two packets) are always
  simulated packet by packet, so its completion, the ACK clocking at its end and what it releases
  are never extrapolated.  Two RTTs beyond the bytes in flight are enough for the ACK clock to
  resume after a thaw.  Measured on the benchmark's GPT iteration (``tools/bench_wormhole.py``),
  4 RTTs against 2: events avoided 98.96% / 99.04% (HPCC) and 99.32% / 99.41% (DCQCN), mean FCT
  error 0.051% / 0.057% and 0.059% / 0.051%; each ring step simulates ~230 us of its ~23 ms, of
  which the tail is ~38 us at 4 RTTs.
* ``min_jump``: one window.  A jump moves the partition's timing by a few ns (whole packets,
  ACK clocking), which on a DAG workload moves later flows' contention, and the full simulation
  amplifies that (its own noise floor: 5-25% per-flow FCT for 1 ns more on one op).  A jump
  shorter than a window saves fewer events than the window already cost, so it is not worth that
  perturbation.  Measured: on the bundled GPT sample (HPCC, 4 iterations) a quarter window
  allowed 26 jumps that avoided 6% of the events and moved per-flow FCTs by 11.8% on average;
  one window allows none (results exact); the benchmark's iterations avoid the same fraction of
  events either way (GPT 99.09%, MoE DCQCN 96.94%, 12- and 4-layer versions).  A settled
  partition's jump (after a short window) needs only one short window (``jump.settled_min_jump``:
  the time it takes to jump again): its flows cannot contend, so a jump does not move their shares.
  Measured (2026-12-01) on a 4-layer DDP GPT-13B iteration on ``rail:servers=8,gpus_per_server=2``
  (16 GPUs, ring steps of 3.3-32.8 MB, 2 iterations, HPCC): a full window 47.8% of events avoided,
  one short window 77.7%, at 0.025% / 0.042% mean FCT error.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from ..errors import InputError
from . import layout as L


WINDOW_RP_TIMERS = 4  # DCQCN: the window spans this many rate-increase periods, ...
LEAST_RP_TIMERS = 2  # ... and a window given (``--ff-window``) at least this many
WINDOW_RTTS = 128  # HPCC, DCTCP: ... this many base RTTs
FIRST_JUMP_WINDOWS = 16  # the first jump after a change spans at most this many windows
SHORT_RTTS = 16  # HPCC, DCTCP: a short window spans at least this many base RTTs
SHORT_RTTS_DCQCN = 4  # ... DCQCN (its flows start at line rate: nothing to settle)
TAIL_RTTS = 2  # a flow's last stretch simulated packet by packet, beyond its bytes in flight


@dataclass(frozen=True)
class FastForward:
    """Wormhole-mode settings; ``None`` fields take the defaults derived by ``resolve``."""

    theta: float = 0.03
    samples: int | None = None
    window_ns: int | None = None
    tail_ns: int | None = None
    min_jump_ns: int | None = None
    first_jump_ns: int | None = None
    short_samples: int | None = None
    # also fast-forward steady data groups inside a partition that is not steady as a whole
    # (wormhole/fluid.py, fluid_groups.py): opt-in (--ff-fluid) until it meets the accuracy bounds
    # by default.  Measured 2026-12-03 (HPCC, DEVELOPERS.md "Fluid flows (from the README)"): on the
    # 128-GPU AICB iteration
    # on fat-tree:k=8 77.8% of events avoided, 4.8x, mean FCT +0.14%, iteration 0.03%, but per-flow
    # 4.29% / 47.4% against a 2-draw noise floor of 2.58% / 37.4%; on flow files cut from it (not
    # chaotic) within the bounds (full size 0.40% / 2.53%); the reference run S9 (HPCC) 1.24% mean;
    # under DCQCN beyond them (a 16-GPU DDP iteration: iteration time 2.75% off; S4 3.79%, S5 4.60%)
    fluid: bool = False
    releaser_share: float = 1.0 / 16
    # jump contended partitions whose shares wander at their window means (wormhole/steadiness.
    # jump.stationary): opt-in (--ff-mean-jumps).  Measured 2026-12-02 (HPCC): within the bounds on
    # flow files, a 16-GPU AICB iteration and the 128-GPU AICB iteration on fat-tree:k=8 (2.05% of
    # events avoided at a per-flow FCT error of 1.82% mean / 23.5% p99, mean FCT -0.12%, iteration
    # 0.08%, against a 1-ns noise floor of 2.58% / 36.6%, iteration 0.11%; DEVELOPERS.md, "Wormhole mode: the measurements").
    # They buy little there (wall time as full's), so the default is not yet changed: doing so is a
    # change of every wormhole run's results where they apply, for its own session's checks
    mean_jumps: bool = False

    @property
    def interval_ns(self) -> int:
        return max(self.window_ns // self.samples, 1)

    def resolve(self, cc_mode: int, rp_timer_us: float, base_rtt_ns: int) -> "FastForward":
        """Fill the unset fields from the CC's period and the network's base RTT."""
        if not 0.0 < self.theta < 1.0:
            raise InputError(f"fast-forward theta must be in (0, 1), not {self.theta}")
        if not 0.0 < self.releaser_share <= 1.0:
            raise InputError(f"fast-forward releaser share must be in (0, 1], not {self.releaser_share}")
        samples = self.samples if self.samples is not None else (32 if cc_mode == 1 else 16)
        if not 2 <= samples <= 4096:
            raise InputError(f"fast-forward samples must be in 2..4096, not {samples}")
        rtt = max(int(base_rtt_ns), 1000)
        window = self.window_ns
        if window is None:
            window = WINDOW_RP_TIMERS * int(rp_timer_us * 1000) if cc_mode == 1 else WINDOW_RTTS * rtt
        elif cc_mode == 1 and window < (least := int(LEAST_RP_TIMERS * rp_timer_us * 1000)):
            # between two rate increases a DCQCN flow's rate does not move: a shorter window reads a
            # trough of its sawtooth as a steady state and freezes it there (README, "Wormhole mode")
            raise InputError(f"fast-forward window of {window} ns is shorter than {LEAST_RP_TIMERS} of DCQCN's "
                             f"rate-increase periods ({least} ns)")
        if window < samples:
            raise InputError(f"fast-forward window must be at least one ns per sample, not {window} ns")
        tail = self.tail_ns if self.tail_ns is not None else TAIL_RTTS * rtt
        min_jump = self.min_jump_ns if self.min_jump_ns is not None else window
        first = self.first_jump_ns if self.first_jump_ns is not None else FIRST_JUMP_WINDOWS * window
        if tail < 0 or min_jump < 0 or first <= 0:
            raise InputError("fast-forward tail and min-jump must not be negative, the first jump must be positive")
        interval = max(int(window) // samples, 1)
        short = self.short_samples
        if short is None:
            rtts = SHORT_RTTS_DCQCN if cc_mode == 1 else SHORT_RTTS
            short = max(2, -(-rtts * rtt // interval))
        if short < 2:
            raise InputError(f"fast-forward short_samples must be at least 2, not {short}")
        return FastForward(self.theta, samples, int(window), int(tail), int(min_jump), int(first), int(short),
                           bool(self.fluid), float(self.releaser_share), bool(self.mean_jumps))

    def as_dict(self) -> dict:
        return {**asdict(self), "interval_ns": self.interval_ns if self.window_ns else None}


def apply(ci: np.ndarray, cf: np.ndarray, ff: FastForward) -> None:
    """Write resolved options into the engine's configuration arrays."""
    ci[L.CI_WH] = 1
    ci[L.CI_WH_TAU] = ff.interval_ns
    ci[L.CI_WH_L] = ff.samples
    ci[L.CI_WH_TAIL] = ff.tail_ns
    ci[L.CI_WH_MIN_JUMP] = ff.min_jump_ns
    ci[L.CI_WH_CAP] = ff.first_jump_ns
    ci[L.CI_WH_SHORT] = ff.short_samples
    ci[L.CI_WH_FLUID] = int(ff.fluid)
    ci[L.CI_WH_MEAN] = int(ff.mean_jumps)
    cf[L.CF_WH_THETA] = ff.theta
    cf[L.CF_WH_RELEASER] = ff.releaser_share


def counters(st: np.ndarray) -> dict:
    """The summary's ``wormhole`` block."""
    return {
        "fast_forwards": int(st[L.ST_WH_FF]),
        "skip_backs": int(st[L.ST_WH_SKIPBACK]),
        "skipped_ns": int(st[L.ST_WH_SKIPPED_NS]),
        "events_skipped_estimate": int(st[L.ST_WH_EV_SKIPPED]),
        "partitions_max": int(st[L.ST_WH_PARTS_MAX]),
        "merges": int(st[L.ST_WH_MERGES]),
        "splits": int(st[L.ST_WH_SPLITS]),
        "bookkeeping_events": int(st[L.ST_WH_EVENTS]),
        "memo_jumps": int(st[L.ST_WH_MEMO_JUMPS]),
        "mean_jumps": int(st[L.ST_WH_MEAN_JUMPS]),
        "fluid_flows": int(st[L.ST_WH_FLUID]),
        "fluid_thawed_early": int(st[L.ST_WH_FLUID_THAWS]),
    }
