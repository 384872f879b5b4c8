"""Issue 16: the traces people bring (AICB with pipelines and without a job size, Kineto without
NCCL metadata on kernels, MoE shapes without a preset) and several jobs on one fabric.  Every
input here is a small file written by the test in the exporter's own format."""

from __future__ import annotations

import pytest

from wormhole_replay.cli import main
from wormhole_replay.errors import InputError


def run_cli(args, capsys):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code, err, match=None):
    """Bad input: exit 2 and exactly one line on stderr, no traceback."""
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    if match:
        assert match in lines[0], lines[0]
    return lines[0]


# --- gen moe without a preset -----------------------------------------------------------------

def test_moe_custom_shape_defaults_topk_to_two(tmp_path, capsys):
    out = tmp_path / "moe.parquet"
    code, _, err = run_cli(["gen", "moe", "--experts", "8", "--layers", "2", "--hidden", "512", "--seq", "256",
                            "--gpus", "8", "--tp", "2", "--ep", "2", "-o", out], capsys)
    assert code == 0, err
    from wormhole_replay.workload.trace import load_trace

    assert load_trace(out).meta["provenance"]["topk"] == 2
    code, _, err = run_cli(["gen", "moe", "--experts", "8", "--topk", "9", "--layers", "2", "--hidden", "512",
                            "--seq", "256", "--gpus", "8", "--ep", "2", "-o", out], capsys)
    one_line_error(code, err, "topk 9")
