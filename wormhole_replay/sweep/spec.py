"""The sweep spec: one TOML file naming a base run and the points that vary it.

    topology = "rail:servers=4,gpus_per_server=4"   # the base run: its fields at the top level,
    cc = "dcqcn"                                    # a generator in [gen], config.txt keys in [config]
    iterations = 1

    [gen]                   # or: trace = "gpt.parquet" (replay), or flows = "flow.txt" (simulate)
    kind = "gpt"
    model = "gpt-13b"
    gpus = 16
    layers = 2

    [config]
    KMAX_MAP = "2 100000000000 1600 400000000000 6400"

    [grid]                  # every combination of these values, the first field varying slowest ...
    tp = [1, 2, 4]
    KMAX_MAP = ["2 100000000000 1600 400000000000 6400", "2 100000000000 800 400000000000 3200"]

    # ... or instead of [grid] an explicit list of points, each a table of fields:
    # [[points]]
    # tp = 2
    # pp = 2

A field is a run field (``RUN_FIELDS``), a generator field (``GEN_FIELDS``, with a ``[gen]`` base) or
a ``config.txt`` key (upper case, ``config.CONFIG_KEYS``; no file-name keys); the same names are used in
``[grid]`` and ``[[points]]``. Paths are relative to the spec's folder. A spec with ``trace`` or
``[gen]`` sweeps ``replay``, one with ``flows`` sweeps ``simulate``.

This module checks the form (known fields, types, choices, non-empty grids); whether the run would
accept each point's values is ``points.resolve``'s business. Both raise ``InputError`` with one line.
"""

from __future__ import annotations

import itertools
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from ..api import MODES
from ..config import CC_MODES, CONFIG_KEYS
from ..errors import InputError
from ..workload.ports import PORT_MODELS


@dataclass(frozen=True)
class Field:
    """One field of a spec: its type (``int``, ``float``, ``str``, ``bool``), the runs it applies to,
    its choices if any, and whether it names a file (relative to the spec)."""

    kind: str
    help: str
    runs: tuple = ("replay", "simulate")
    choices: tuple = ()
    path: bool = False


BOTH, REPLAY, SIMULATE = ("replay", "simulate"), ("replay",), ("simulate",)

RUN_FIELDS = {
    "trace": Field("str", "native trace file (replay)", REPLAY, path=True),
    "flows": Field("str", "reference flow.txt (simulate)", SIMULATE, path=True),
    "topology": Field("str", "topology spec, or a topology.txt"),
    "cc": Field("str", "congestion control preset", choices=tuple(CC_MODES)),
    "iterations": Field("int", "replay the first N iterations (with [gen]: generate N)", REPLAY),
    "mode": Field("str", "wormhole (default) or full", choices=MODES),
    "ports": Field("str", "source-port model (replay's --ports)", REPLAY, choices=PORT_MODELS),
    "intra_bw": Field("str", "intra-server link rate, e.g. 2880Gbps", REPLAY),
    "intra_latency": Field("str", "intra-server link latency, e.g. 25ns", REPLAY),
    "paths": Field("str", "pin each flow's paths (a reference paths.txt)", SIMULATE, path=True),
    "routing": Field("str", "ECMP next-hop order of a reference routing.txt", SIMULATE, path=True),
    "ff_theta": Field("float", "steadiness threshold (--ff-theta)"),
    "ff_samples": Field("int", "samples in the steadiness window (--ff-samples)"),
    "ff_window": Field("str", "steadiness window, e.g. 1ms (--ff-window)"),
    "ff_tail": Field("str", "end of a flow always simulated, e.g. 16us (--ff-tail)"),
    "ff_releaser_share": Field("float", "share of a releasing flow's FCT a contended jump may span (--ff-releaser-share)"),
    "ff_mean_jumps": Field("bool", "jump contended partitions at their flows' mean shares (--ff-mean-jumps)"),
    "memo_shared_prefixes": Field("bool", "--memo-shared-prefixes", REPLAY),
    "memo_episodes": Field("bool", "--memo-episodes: whole iterations from the memo", REPLAY),
    "memo_recurring": Field("spread", "--memo-recurring [SPREAD]: flows from their earlier copies (true: within 1%)",
                            REPLAY),
}
GEN_FIELDS = {
    "kind": Field("str", "gpt or moe", choices=("gpt", "moe")),
    "model": Field("str", "a preset (gen gpt --help)"),
    **{k: Field("int", f"custom shape: {k}") for k in ("layers", "hidden", "seq", "vocab", "experts", "topk")},
    "gpus": Field("int", "GPU count"),
    "tp": Field("int", "tensor parallelism"),
    "pp": Field("int", "pipeline parallelism"),
    "dp": Field("int", "data parallelism (default gpus / (tp x pp))"),
    "ep": Field("int", "expert parallelism (MoE)"),
    "microbatches": Field("int", "micro-batches per iteration"),
    "bucket_mb": Field("float", "DP gradient bucket (MB)"),
    "tflops": Field("float", "sustained TFLOP/s per GPU"),
}
GEN_DEFAULTS = {"kind": "gpt", "tp": 1, "pp": 1, "ep": 1, "microbatches": 1, "bucket_mb": 25.0, "tflops": 150.0}
CONFIG_VALUE = Field("config", "a config.txt value: a number, a string of its tokens, or a list of tokens")
DEFAULTS = {"mode": "wormhole", "ports": "connection", "memo_shared_prefixes": False, "memo_episodes": False,
            "memo_recurring": False}
TABLES = ("gen", "config", "grid", "points")
_FILE_KEYS = {k for k in CONFIG_KEYS if k.endswith("_FILE")}  # named by the spec's own fields instead


@dataclass
class Spec:
    """A checked spec: ``base`` (field -> value; generator fields under ``gen``, config keys under
    ``config``), the kind of run, and ``overrides``: one {field: value} per point, in order."""

    path: Path
    run: str  # replay | simulate
    base: dict
    gen: dict | None
    config: dict
    overrides: list[dict]
    varied: list[str]  # fields that [grid] or [[points]] set, in first-seen order
    text: str = field(repr=False, default="")


def field_of(name: str, gen: bool) -> tuple[str, Field] | None:
    """(where, field) for a field name: ``run``, ``gen`` or ``config``; None if unknown."""
    if name in RUN_FIELDS:
        return "run", RUN_FIELDS[name]
    if name in GEN_FIELDS and gen:
        return "gen", GEN_FIELDS[name]
    if name in CONFIG_KEYS and name not in _FILE_KEYS:
        return "config", CONFIG_VALUE
    return None


def _unknown(where: str, name: str, gen: bool) -> InputError:
    if name in GEN_FIELDS and not gen:
        return InputError(f"{where}: {name} is a generator field, but the base run has no [gen]")
    if name in _FILE_KEYS:
        return InputError(f"{where}: {name} names a file; use the spec's topology, trace or flows instead")
    if name.upper() in CONFIG_KEYS and name != name.upper():
        return InputError(f"{where}: unknown field {name!r} (config.txt keys are upper case: {name.upper()})")
    return InputError(f"{where}: unknown field {name!r} (a run field: {', '.join(RUN_FIELDS)}; a [gen] field; "
                      "or a config.txt key)")


def check_value(where: str, name: str, f: Field, value, base_dir: Path):
    """``value`` checked against ``f`` (a path made absolute against ``base_dir``)."""
    ok = {"int": lambda v: isinstance(v, int) and not isinstance(v, bool),
          "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
          "str": lambda v: isinstance(v, str),
          "bool": lambda v: isinstance(v, bool),
          "spread": lambda v: isinstance(v, bool) or (isinstance(v, (int, float)) and 0 < v <= 1),
          "config": _config_value_ok}[f.kind]
    if not ok(value):
        want = {"int": "a whole number", "float": "a number", "str": "a string", "bool": "true or false",
                "spread": "true, false or a spread above 0 and at most 1",
                "config": "a number, a string or a list of them"}[f.kind]
        raise InputError(f"{where}: {name} = {value!r}: expected {want}")
    if f.choices and value not in f.choices:
        raise InputError(f"{where}: {name} = {value!r}: expected one of {', '.join(map(str, f.choices))}")
    if f.kind == "float":
        value = float(value)
    if f.path or (name == "topology" and ":" not in value):  # a topology spec has a colon, a file not
        value = str((base_dir / value).resolve()) if value else value
    return value


def _config_value_ok(v) -> bool:
    scalar = (str, int, float)
    if isinstance(v, list):
        return bool(v) and all(isinstance(x, scalar) for x in v)
    return isinstance(v, scalar)


def config_tokens(value) -> str:
    """A spec's config value as the tokens of a config.txt line (booleans as 1 / 0)."""
    if isinstance(value, list):
        return " ".join(config_tokens(x) for x in value)
    if isinstance(value, bool):
        return "1" if value else "0"
    return repr(value) if isinstance(value, float) else str(value)


def _table(doc: dict, name: str, where: str) -> dict:
    t = doc.get(name, {})
    if not isinstance(t, dict):
        raise InputError(f"{where}: {name} must be a table ([{name}])")
    return t


def _points(doc: dict, where: str, gen: bool, base_dir: Path) -> list[dict]:
    """One {field: value} per point, from [grid] (the product) or [[points]] (as listed)."""
    if "grid" in doc and "points" in doc:
        raise InputError(f"{where}: give [grid] or [[points]], not both")
    if "grid" in doc:
        grid = _table(doc, "grid", where)
        if not grid:
            raise InputError(f"{where}: [grid] is empty: give each field to vary a list of values")
        axes = []
        for name, values in grid.items():
            found = field_of(name, gen)
            if found is None:
                raise _unknown(f"{where}: [grid]", name, gen)
            if not isinstance(values, list):
                raise InputError(f"{where}: [grid] {name} = {values!r}: expected a list of values")
            if not values:
                raise InputError(f"{where}: [grid] {name} has no values (an empty grid)")
            axes.append([(name, check_value(f"{where}: [grid]", name, found[1], v, base_dir)) for v in values])
        return [dict(combo) for combo in itertools.product(*axes)]
    if "points" in doc:
        listed = doc["points"]
        if not isinstance(listed, list) or not all(isinstance(p, dict) for p in listed):
            raise InputError(f"{where}: points must be an array of tables ([[points]])")
        if not listed:
            raise InputError(f"{where}: [[points]] lists no point")
        out = []
        for i, p in enumerate(listed, 1):
            point = {}
            for name, v in p.items():
                found = field_of(name, gen)
                if found is None:
                    raise _unknown(f"{where}: point {i}", name, gen)
                point[name] = check_value(f"{where}: point {i}", name, found[1], v, base_dir)
            out.append(point)
        return out
    raise InputError(f"{where}: nothing to sweep: add a [grid] (lists of values) or [[points]]")


def load_spec(path: str | Path) -> Spec:
    """Read and check the spec at ``path``; ``InputError`` (one line) on anything wrong with it."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such sweep spec") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: cannot read the sweep spec ({getattr(e, 'strerror', None) or e})") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"{path}: not valid TOML ({e})") from None
    return spec_from_dict(doc, path, text)


def spec_from_dict(doc: dict, path: Path, text: str = "") -> Spec:
    """A ``Spec`` from a parsed TOML document (``path``: where it came from, for messages and paths)."""
    where, base_dir = str(path), path.parent.resolve()
    gen_table = _table(doc, "gen", where) if "gen" in doc else None
    base = {}
    for name, v in doc.items():
        if name in TABLES:
            continue
        if name not in RUN_FIELDS:
            raise _unknown(where, name, gen_table is not None)
        base[name] = check_value(where, name, RUN_FIELDS[name], v, base_dir)
    gen = None
    if gen_table is not None:
        gen = {}
        for name, v in gen_table.items():
            if name not in GEN_FIELDS:
                raise InputError(f"{where}: [gen]: unknown field {name!r} (fields: {', '.join(GEN_FIELDS)})")
            gen[name] = check_value(f"{where}: [gen]", name, GEN_FIELDS[name], v, base_dir)
    config = {}
    for name, v in _table(doc, "config", where).items():
        if name in RUN_FIELDS:
            raise InputError(f"{where}: [config]: {name} is a run field, not a config.txt key (put it at the top level)")
        if field_of(name, False) is None:
            raise _unknown(f"{where}: [config]", name, False)
        config[name] = check_value(f"{where}: [config]", name, CONFIG_VALUE, v, base_dir)
    sources = [k for k, present in (("trace", "trace" in base), ("[gen]", gen is not None), ("flows", "flows" in base))
               if present]
    if len(sources) != 1:
        raise InputError(f"{where}: name one workload: trace = FILE or a [gen] table (replay), or flows = FILE "
                         f"(simulate); {'found ' + ' and '.join(sources) if sources else 'found none'}")
    run = "simulate" if "flows" in base else "replay"
    overrides = _points(doc, where, gen is not None, base_dir)
    for name in dict.fromkeys([*base, *(n for p in overrides for n in p)]):
        f = RUN_FIELDS.get(name)
        if f is not None and run not in f.runs:
            raise InputError(f"{where}: {name} is a {' and '.join(f.runs)} field; this spec sweeps {run}")
    if gen is not None and any("trace" in p for p in overrides):
        raise InputError(f"{where}: trace: the base run generates its trace ([gen])")
    missing = [k for k in ("topology", "cc") if k not in base and not all(k in p for p in overrides)]
    if missing:
        raise InputError(f"{where}: the base run needs {' and '.join(missing)} (or every point must set it)")
    varied = list(dict.fromkeys(name for p in overrides for name in p))
    return Spec(path, run, base, gen, config, overrides, varied, text)
