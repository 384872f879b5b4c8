"""The reference config.txt reader and the run.py presets."""

import pytest

from wormhole_replay.config import SimConfig, read_config
from wormhole_replay.errors import InputError


def test_reads_reference_config(reference_runs):
    c = read_config(reference_runs / "S1_hpcc" / "config.txt")
    assert c.cc_mode == 3 and c.cc_name == "hpcc"
    assert c.rate_ai_bps == 40_000_000 and c.min_rate_bps == 1_000_000_000
    assert c.kmax_map == {100_000_000_000: 1600, 400_000_000_000: 6400}
    assert c.pmax_map[100_000_000_000] == 0.2
    assert c.int_multi == 4 and c.has_win and c.var_win and c.fast_react and not c.multi_rate
    assert c.buffer_size_mb == 32 and c.simulator_stop_time == 4.0


def test_packet_sizes():
    c = SimConfig(cc_mode=1, seq_num_bytes=4)
    assert (c.data_header_bytes + 1000, c.ack_bytes) == (1048, 60)
    c = SimConfig(cc_mode=3, seq_num_bytes=4)
    assert (c.data_header_bytes + 1000, c.ack_bytes) == (1090, 88)
    c = SimConfig(cc_mode=1, seq_num_bytes=8)
    assert (c.data_header_bytes + 1000, c.ack_bytes) == (1052, 60)
    c = SimConfig(cc_mode=3, seq_num_bytes=8)
    assert (c.data_header_bytes + 1000, c.ack_bytes) == (1094, 92)


def test_direct_presets_match_run_py():
    d = SimConfig.direct("dcqcn", 100_000_000_000)
    assert (d.rate_ai_bps, d.rate_hai_bps, d.rp_timer, d.ewma_gain) == (20_000_000, 200_000_000, 300, 1 / 256)
    assert d.ecn_for_rate(100_000_000_000) == (400_000, 1_600_000, 0.2)
    h = SimConfig.direct("hpcc", 100_000_000_000)
    assert (h.rate_ai_bps, h.int_multi, h.mi_thresh, h.u_target) == (40_000_000, 4, 0, 0.95)
    t = SimConfig.direct("dctcp", 100_000_000_000)
    assert (t.cc_mode, t.ewma_gain, t.dctcp_rate_ai_bps) == (8, 0.0625, 615_000_000)
    assert t.ecn_for_rate(100_000_000_000) == (300_000, 300_000, 1.0)
    with pytest.raises(InputError):
        SimConfig.direct("timely", 100_000_000_000)


def test_bad_config_lines(tmp_path):
    p = tmp_path / "c.txt"
    p.write_text("CC_MODE 1\nKMAX_MAP 2 100000000000 1600\n")
    with pytest.raises(InputError, match=r"c.txt:2: bad value for KMAX_MAP"):
        read_config(p)
    p.write_text("L2_ACK_INTERVAL 0\n")
    with pytest.raises(InputError, match="L2_ACK_INTERVAL"):
        read_config(p)


def test_ns3_rng_matches_lecuyer():
    """MRG32k3a with all six seeds 12345 starts with 0.1270111220 (L'Ecuyer's reference output);
    ns-3 streams are 2^127 steps apart."""
    from wormhole_replay.engine import rng as ns3rng

    assert abs(ns3rng.first_output(ns3rng.stream_state(12345, 0, 0)) - 0.1270111220) < 1e-9
    s0 = ns3rng.stream_state(1, 5, 1)
    j = ns3rng.stream_jump()
    nxt = [sum(j[3 * r + k] * s0[k] for k in range(3)) % ns3rng.M1 for r in range(3)] + \
          [sum(j[9 + 3 * r + k] * s0[3 + k] for k in range(3)) % ns3rng.M2 for r in range(3)]
    assert nxt == ns3rng.stream_state(1, 6, 1)


@pytest.mark.parametrize("name, shifts", [("S1_dcqcn", (-1, 1)), ("S5_dcqcn", (1,))])
def test_ecn_draws_start_at_the_reference_stream(reference_runs, monkeypatch, name, shifts):
    """The first ECN stream (``rng.first_ecn_stream``) by its effect: with the stream the engine
    picks, S1 (10 nodes) and S5 (208 nodes) mark packets and match the reference byte for byte
    (``test_reference_runs``); one stream off, on either node count, they no longer do.  Catches
    an offset right for one network size only, or ECN draws that never reach the results."""
    from wormhole_replay.api import execute, prepare_config_run
    from wormhole_replay.engine import rng as ns3rng
    from wormhole_replay.engine.simulate import format_fct

    folder = reference_runs / name
    expected = (folder / "fct.original-hpcc.txt").read_text()

    def run():
        return execute(prepare_config_run(folder / "config.txt", seq_num_bytes=8, paths=folder / "paths.txt"))

    right = run()
    assert right.counters["ecn_marks"] > 0 and format_fct(right.flows) == expected
    chosen = ns3rng.first_ecn_stream
    for shift in shifts:
        monkeypatch.setattr(ns3rng, "first_ecn_stream", lambda n, s=shift: chosen(n) + s)
        assert format_fct(run().flows) != expected, shift
