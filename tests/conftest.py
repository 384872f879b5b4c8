"""Shared fixtures: where the reference runs live, and small helpers to run the engine."""

import os
import secrets
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


PG_SKIP = "WORMHOLE_TEST_POSTGRES_URL is unset (see DEVELOPERS.md)"


def move_memo(source, target, tmp_path) -> None:
    """``memo export`` from database ``source`` and ``memo import`` into ``target``, as a user would."""
    import subprocess
    import sys

    moved = tmp_path / "memo.json"
    for args in (["export", str(moved), "--db", str(source)], ["import", str(moved), "--db", str(target)]):
        p = subprocess.run([sys.executable, "-m", "wormhole_replay", "memo", *args], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr


@pytest.fixture
def pg_url():
    """A Postgres URL whose search_path is a fresh schema, dropped afterwards."""
    import sqlalchemy as sa
    from sqlalchemy.engine import make_url

    base = os.environ.get("WORMHOLE_TEST_POSTGRES_URL")
    if not base:
        pytest.skip(PG_SKIP)
    schema = f"wr_test_{secrets.token_hex(6)}"
    admin = sa.create_engine(base)
    with admin.begin() as c:
        c.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
    try:
        url = make_url(base).update_query_dict({"options": f"-csearch_path={schema}"})
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.begin() as c:
            c.exec_driver_sql(f'DROP SCHEMA "{schema}" CASCADE')
        admin.dispose()
