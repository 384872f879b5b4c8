"""Shared fixtures: where the reference runs live, and small helpers to run the engine."""

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def reference_runs_dir() -> Path | None:
    env = os.environ.get("WORMHOLE_REFERENCE_RUNS")
    candidates = [Path(env)] if env else [REPO.parent / "shared" / "reference-runs"]
    for c in candidates:
        if c.is_dir():
            return c
    return None


@pytest.fixture(scope="session")
def reference_runs() -> Path:
    d = reference_runs_dir()
    if d is None:
        pytest.skip("reference runs not found (../shared/reference-runs or $WORMHOLE_REFERENCE_RUNS)")
    return d
