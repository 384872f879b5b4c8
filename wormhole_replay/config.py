"""Simulation settings: the reference simulator's ``config.txt`` keys, their defaults, and the
``run.py`` presets.

A config file is ``KEY value...`` lines (the reference's ``mix/config.txt``).  Every key the
reference reads is accepted; keys it would ignore are ignored here too (with a warning, since a
typo would otherwise go unnoticed).  Defaults for absent keys are the reference's (``third.cc``
globals, or the ``RdmaHw`` attribute default where the global is unset or broken, e.g. ``RP_TIMER``
and ``EWMA_GAIN = 1 / 16`` which C++ evaluates to 0).

Keys of ours, beyond the reference:

* ``SEQ_NUM_BYTES`` (4): the sequence-number width in the data header and ACK.  4 is the original
  HPCC header (data 1048 B / 1090 B with INT); 8 is the 64-bit fork that produced the reference
  runs (1052 B / 1094 B, ACKs 60 B / 92 B).
* ``ENABLE_PFC`` (1): 0 turns PAUSE generation off; the shared buffer then drops on overflow.
* ``RTO_US`` (0 with PFC on, 1000 with PFC off): a retransmission timeout (go-back-N from the last
  ACK) so that tail losses recover.  The reference has none: with PFC on nothing is lost, so it
  never matters there.
* ``RNG_SEED`` (1): seed of the ECN marking draws (ns-3's ``RngSeed`` with ``ECN_RNG ns3``).
* ``ECN_RNG`` (ns3): ``ns3`` draws exactly the numbers the reference draws (ns-3's legacy
  ``UniformVariable``: a new MRG32k3a stream per call); ``xorshift`` a plain seeded generator.
* ``NS3_RNG_FIRST_STREAM`` (8 x nodes + 2) and ``NS3_RNG_RUN`` (1): the ns-3 stream index of the
  first marking draw, i.e. how many random streams the reference's set-up consumed before it
  (8 per node and 2, found by matching the reference runs S1 and S4 exactly), and ns-3's RngRun.

``SimConfig.direct(cc, nic_bps)`` gives the ``run.py --bw`` preset used by the reference runs, for
runs given as ``--topology/--flows/--cc`` rather than a config file, except where it stops:
run.py stops at 4 s of simulated time, which cut a 128-GPU MoE iteration and the fourth iteration
of a 4-iteration DDP replay short (2026-12-04); a direct run has no stop time (``None``): it runs 4 s
at a time for as long as its flows moved in the last 4 (a byte received or a flow done), so it ends
when its flows are done, or stuck (lost packets without a retransmission timer, a deadlock), and
the command line warns of flows a run left unfinished.  A ``--config`` with ``SIMULATOR_STOP_TIME``
(or ``replace(cfg, simulator_stop_time=...)``) sets a stop that holds.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation
from pathlib import Path

from .errors import InputError, read_input_text
from .topology.units import parse_rate_bps

CC_MODES = {"dcqcn": 1, "hpcc": 3, "dctcp": 8}
CC_NAMES = {v: k for k, v in CC_MODES.items()}


@dataclass
class SimConfig:
    cc_mode: int = 1
    enable_qcn: bool = True
    use_dynamic_pfc_threshold: bool = True
    packet_payload_size: int = 1000
    topology_file: str = ""
    flow_file: str = ""
    trace_file: str = ""
    trace_output_file: str = ""
    fct_output_file: str = "fct.txt"
    pfc_output_file: str = "pfc.txt"
    qlen_mon_file: str = ""  # with it, the run writes the reference's queue histogram (engine/monitor.py)
    qlen_mon_start: int = 2_000_000_000  # ns (third.cc's defaults)
    qlen_mon_end: int = 2_100_000_000
    simulator_stop_time: float | None = 3.01  # seconds; None: until the flows are done or stuck (engine/simulate.py)
    alpha_resume_interval: float = 55.0  # us
    rate_decrease_interval: float = 4.0  # us
    clamp_target_rate: bool = False
    rp_timer: float = 1500.0  # us
    ewma_gain: float = 1.0 / 16
    fast_recovery_times: int = 5
    rate_ai_bps: int = 5_000_000
    rate_hai_bps: int = 50_000_000
    min_rate_bps: int = 100_000_000
    dctcp_rate_ai_bps: int = 1_000_000_000
    error_rate_per_link: float = 0.0
    l2_chunk_size: int = 0
    l2_ack_interval: int = 1
    l2_back_to_zero: bool = False
    has_win: bool = True
    global_t: bool = True
    var_win: bool = False
    fast_react: bool = True
    u_target: float = 0.95
    mi_thresh: int = 5
    int_multi: int = 1
    multi_rate: bool = True
    sample_feedback: bool = False
    pint_log_base: float = 1.05
    pint_prob: float = 1.0
    rate_bound: bool = True
    ack_high_prio: bool = False
    link_down: tuple = (0, 0, 0)
    enable_trace: bool = True
    kmax_map: dict = field(default_factory=dict)  # bps -> KB
    kmin_map: dict = field(default_factory=dict)
    pmax_map: dict = field(default_factory=dict)
    buffer_size_mb: int = 16
    pause_time_us: float = 5.0
    # ours
    seq_num_bytes: int = 4
    enable_pfc: bool = True
    rto_us: float | None = None  # None: 0 with PFC on, 1000 with PFC off
    rng_seed: int = 1
    ecn_rng: str = "ns3"  # the reference's draws (engine/rng.py), or "xorshift"
    ns3_rng_first_stream: int | None = None  # ns-3 stream of the first ECN draw; None: 8 x nodes + 2
    ns3_rng_run: int = 1  # ns-3 RngRun

    # ---------------------------------------------------------------- derived sizes
    @property
    def cc_name(self) -> str:
        return CC_NAMES.get(self.cc_mode, str(self.cc_mode))

    @property
    def int_bytes(self) -> int:
        """INT header bytes carried by data packets and ACKs (HPCC: 5 hops x 8 B + 2 B)."""
        return 42 if self.cc_mode == 3 else 0

    @property
    def data_header_bytes(self) -> int:
        """Wire bytes of a data packet beyond its payload: PPP 14, IPv4 20, UDP 8, SeqTs, INT."""
        return 14 + 20 + 8 + (self.seq_num_bytes + 2) + self.int_bytes

    @property
    def fct_header_bytes(self) -> int:
        """Per-packet header of ``standalone_fct`` (no INT), as third.cc ``qp_finish`` computes."""
        return 14 + 20 + 8 + (self.seq_num_bytes + 2)

    @property
    def ack_bytes(self) -> int:
        """PPP + IPv4 + qbbHeader (ports, flags, pg: 8 B, the sequence number, INT), padded to
        60 B as RdmaHw::ReceiveUdp does: 60 / 88 B with 4-byte sequence numbers, 60 / 92 B with 8."""
        qbb = 8 + self.seq_num_bytes + self.int_bytes
        return 14 + 20 + qbb + max(60 - 14 - 20 - qbb, 0)

    @property
    def rto_ns(self) -> int:
        us = self.rto_us if self.rto_us is not None else (0.0 if self.enable_pfc else 1000.0)
        return int(round(us * 1000))

    def ecn_for_rate(self, bps: int) -> tuple[int, int, float]:
        """(kmin bytes, kmax bytes, pmax) for a link rate; run.py's rule when the map lacks it."""
        if bps in self.kmin_map and bps in self.kmax_map and bps in self.pmax_map:
            return self.kmin_map[bps] * 1000, self.kmax_map[bps] * 1000, self.pmax_map[bps]
        return int(100_000 * bps / 25e9), int(400_000 * bps / 25e9), 0.2

    def validate(self, where: str = "config") -> None:
        if self.cc_mode not in CC_NAMES:
            raise InputError(f"{where}: CC_MODE {self.cc_mode} is not supported (1: DCQCN, 3: HPCC, 8: DCTCP)")
        if self.packet_payload_size <= 0:
            raise InputError(f"{where}: PACKET_PAYLOAD_SIZE must be positive")
        if self.l2_ack_interval < 1:
            raise InputError(f"{where}: L2_ACK_INTERVAL must be >= 1 (0 disables ACKs and no flow could finish)")
        if self.seq_num_bytes not in (4, 8):
            raise InputError(f"{where}: SEQ_NUM_BYTES must be 4 or 8")
        if self.int_multi < 1:
            raise InputError(f"{where}: INT_MULTI must be >= 1")
        if self.ecn_rng not in ("xorshift", "ns3"):
            raise InputError(f"{where}: ECN_RNG must be 'xorshift' or 'ns3', not {self.ecn_rng!r}")
        if self.ecn_rng == "ns3" and not 0 < self.rng_seed < 4294944443:
            raise InputError(f"{where}: RNG_SEED must be in 1..4294944442 for ns-3's generator")
        if self.qlen_mon_file and (self.qlen_mon_start < 0 or self.qlen_mon_end < 0):
            raise InputError(f"{where}: QLEN_MON_START and QLEN_MON_END must not be negative")
        if self.link_down[0] > 0:
            raise InputError(f"{where}: LINK_DOWN (taking a link down mid-run) is not supported yet; set it to '0 0 0'")
        for name in ("alpha_resume_interval", "rate_decrease_interval", "rp_timer"):
            if getattr(self, name) <= 0:
                raise InputError(f"{where}: {name.upper()} must be positive")

    # ---------------------------------------------------------------- presets
    @classmethod
    def direct(cls, cc: str, nic_bps: int) -> "SimConfig":
        """HPCC's ``run.py`` preset (``dcqcn``, ``hp`` or ``dctcp``) for NIC bandwidth ``nic_bps``,
        with the 64-bit sequence numbers of the reference runs."""
        if cc not in CC_MODES:
            raise InputError(f"unknown CC mode '{cc}' (expected one of: {', '.join(CC_MODES)})")
        bw = nic_bps / 1e9
        ecn_rates = (nic_bps, 4 * nic_bps)
        c = cls(
            cc_mode=CC_MODES[cc], packet_payload_size=1000, l2_chunk_size=4000, l2_ack_interval=1,
            l2_back_to_zero=False, global_t=True, multi_rate=False, sample_feedback=False,
            rate_bound=True, min_rate_bps=1_000_000_000, buffer_size_mb=int(16 * bw / 50),
            simulator_stop_time=None, kmin_map={r: int(100 * r / 25e9) for r in ecn_rates},
            kmax_map={r: int(400 * r / 25e9) for r in ecn_rates}, pmax_map={r: 0.2 for r in ecn_rates},
            seq_num_bytes=8, enable_qcn=True,
        )
        if cc == "dcqcn":
            return replace(c, alpha_resume_interval=1, rate_decrease_interval=4, rp_timer=300,
                           ewma_gain=1 / 256, fast_recovery_times=1, rate_ai_bps=int(5 * bw / 25 * 1e6),
                           rate_hai_bps=int(50 * bw / 25 * 1e6), has_win=False, var_win=False,
                           fast_react=False, ack_high_prio=True)
        if cc == "dctcp":  # run.py: K = 30 KB x bw/10G for both thresholds, marking certain above it
            k = {r: int(30 * r / 10e9) for r in ecn_rates}
            return replace(c, ewma_gain=0.0625, dctcp_rate_ai_bps=615_000_000,
                           kmin_map=k, kmax_map=dict(k), pmax_map={r: 1.0 for r in ecn_rates},
                           has_win=True, var_win=True, ack_high_prio=False)
        return replace(c, rate_ai_bps=int(10 * bw / 25 * 1e6), rate_hai_bps=int(10 * bw / 25 * 1e6),
                       u_target=0.95, mi_thresh=0, int_multi=max(1, int(bw / 25)), has_win=True,
                       var_win=True, fast_react=True, ack_high_prio=False)


# key -> (attribute, kind); kinds: int, float, bool, str, rate (bps), map
_KEYS = {
    "ENABLE_QCN": ("enable_qcn", "bool"),
    "USE_DYNAMIC_PFC_THRESHOLD": ("use_dynamic_pfc_threshold", "bool"),
    "PACKET_PAYLOAD_SIZE": ("packet_payload_size", "int"),
    "TOPOLOGY_FILE": ("topology_file", "str"),
    "FLOW_FILE": ("flow_file", "str"),
    "TRACE_FILE": ("trace_file", "str"),
    "TRACE_OUTPUT_FILE": ("trace_output_file", "str"),
    "FCT_OUTPUT_FILE": ("fct_output_file", "str"),
    "PFC_OUTPUT_FILE": ("pfc_output_file", "str"),
    "QLEN_MON_FILE": ("qlen_mon_file", "str"),
    "QLEN_MON_START": ("qlen_mon_start", "int"),
    "QLEN_MON_END": ("qlen_mon_end", "int"),
    "SIMULATOR_STOP_TIME": ("simulator_stop_time", "float"),
    "CC_MODE": ("cc_mode", "int"),
    "ALPHA_RESUME_INTERVAL": ("alpha_resume_interval", "float"),
    "RATE_DECREASE_INTERVAL": ("rate_decrease_interval", "float"),
    "CLAMP_TARGET_RATE": ("clamp_target_rate", "bool"),
    "RP_TIMER": ("rp_timer", "float"),
    "EWMA_GAIN": ("ewma_gain", "float"),
    "FAST_RECOVERY_TIMES": ("fast_recovery_times", "int"),
    "RATE_AI": ("rate_ai_bps", "rate"),
    "RATE_HAI": ("rate_hai_bps", "rate"),
    "MIN_RATE": ("min_rate_bps", "rate"),
    "DCTCP_RATE_AI": ("dctcp_rate_ai_bps", "rate"),
    "ERROR_RATE_PER_LINK": ("error_rate_per_link", "float"),
    "L2_CHUNK_SIZE": ("l2_chunk_size", "int"),
    "L2_ACK_INTERVAL": ("l2_ack_interval", "int"),
    "L2_BACK_TO_ZERO": ("l2_back_to_zero", "bool"),
    "HAS_WIN": ("has_win", "bool"),
    "GLOBAL_T": ("global_t", "bool"),
    "VAR_WIN": ("var_win", "bool"),
    "FAST_REACT": ("fast_react", "bool"),
    "U_TARGET": ("u_target", "float"),
    "MI_THRESH": ("mi_thresh", "int"),
    "INT_MULTI": ("int_multi", "int"),
    "MULTI_RATE": ("multi_rate", "bool"),
    "SAMPLE_FEEDBACK": ("sample_feedback", "bool"),
    "PINT_LOG_BASE": ("pint_log_base", "float"),
    "PINT_PROB": ("pint_prob", "float"),
    "RATE_BOUND": ("rate_bound", "bool"),
    "ACK_HIGH_PRIO": ("ack_high_prio", "bool"),
    "LINK_DOWN": ("link_down", "triple"),
    "ENABLE_TRACE": ("enable_trace", "bool"),
    "KMAX_MAP": ("kmax_map", "map_int"),
    "KMIN_MAP": ("kmin_map", "map_int"),
    "PMAX_MAP": ("pmax_map", "map_float"),
    "BUFFER_SIZE": ("buffer_size_mb", "int"),
    "PAUSE_TIME": ("pause_time_us", "float"),
    "DATA_RATE": (None, "str"),
    "LINK_DELAY": (None, "str"),
    "SEQ_NUM_BYTES": ("seq_num_bytes", "int"),
    "ENABLE_PFC": ("enable_pfc", "bool"),
    "RTO_US": ("rto_us", "float"),
    "RNG_SEED": ("rng_seed", "int"),
    "ECN_RNG": ("ecn_rng", "str"),
    "NS3_RNG_FIRST_STREAM": ("ns3_rng_first_stream", "int"),  # negative: automatic
    "NS3_RNG_RUN": ("ns3_rng_run", "int"),
}
CONFIG_KEYS = frozenset(_KEYS)  # every key a config.txt may set (the sweep spec checks its keys against it)


def _parse_value(kind: str, toks: list[str]):
    if kind == "int":
        v = Decimal(toks[0])
        if v != v.to_integral_value():
            raise ValueError("not an integer")
        return int(v)
    if kind == "float":
        return float(toks[0])
    if kind == "bool":
        return int(Decimal(toks[0])) != 0
    if kind == "str":
        return toks[0]
    if kind == "rate":
        return parse_rate_bps(toks[0])
    if kind == "triple":
        if len(toks) != 3:
            raise ValueError("expected 3 values 't a b'")
        return tuple(int(t) for t in toks)
    if kind in ("map_int", "map_float"):
        n = int(toks[0])
        if len(toks) != 1 + 2 * n:
            raise ValueError(f"expected a count then {n} (rate value) pairs")
        conv = int if kind == "map_int" else float
        return {parse_rate_bps(toks[1 + 2 * j]): conv(Decimal(toks[2 + 2 * j])) for j in range(n)}
    raise AssertionError(kind)


def read_config(path: str | Path, base: SimConfig | None = None) -> SimConfig:
    """Read a reference-style ``config.txt`` on top of ``base`` (default: the reference defaults)."""
    path = Path(path)
    text = read_input_text(path, "config file")
    cfg = replace(base) if base is not None else SimConfig()
    for lineno, line in enumerate(text.splitlines(), 1):
        toks = line.split("#", 1)[0].split()
        if not toks:
            continue
        key, vals = toks[0], toks[1:]
        if key not in _KEYS:
            print(f"warning: {path}:{lineno}: unknown key {key} ignored", file=sys.stderr)
            continue
        attr, kind = _KEYS[key]
        if not vals:
            raise InputError(f"{path}:{lineno}: {key} has no value")
        try:
            value = _parse_value(kind, vals)
        except (ValueError, InvalidOperation, IndexError) as e:
            raise InputError(f"{path}:{lineno}: bad value for {key}: {' '.join(vals)!r} ({e})") from None
        if attr is not None:
            setattr(cfg, attr, value)
    cfg.validate(str(path))
    return cfg
