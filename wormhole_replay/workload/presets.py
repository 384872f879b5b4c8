"""Model shapes of the generators' presets (light: the command line lists them without loading
the generators)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import InputError


@dataclass(frozen=True)
class GptShape:
    layers: int
    hidden: int
    seq: int
    vocab: int = 51200
    experts: int = 0  # MoE: experts per layer (0: a dense model)
    topk: int = 0  # MoE: experts each token is routed to (a custom MoE without one: DEFAULT_TOPK)


GPT_PRESETS = {
    "gpt-13b": GptShape(layers=40, hidden=5120, seq=2048),
    "gpt-175b": GptShape(layers=96, hidden=12288, seq=2048),
    "llama-70b": GptShape(layers=80, hidden=8192, seq=4096, vocab=32000),
}
MOE_PRESETS = {
    "mixtral-8x7b": GptShape(layers=32, hidden=4096, seq=4096, vocab=32000, experts=8, topk=2),
    "mixtral-8x22b": GptShape(layers=56, hidden=6144, seq=4096, vocab=32000, experts=8, topk=2),
}


SHAPE_FIELDS = ("layers", "hidden", "seq", "vocab", "experts", "topk")
DEFAULT_TOPK = 2  # Mixtral's: a custom MoE shape (``--experts`` without a preset) routes each token to 2 experts


def model_shape(kind: str, model: str | None = None, **changes) -> GptShape:
    """The shape of preset ``model`` of ``kind`` (``gpt`` or ``moe``), or without a preset a custom
    one (``layers``, ``hidden`` and ``seq`` needed), with ``changes`` (``SHAPE_FIELDS``) applied."""
    presets = GPT_PRESETS if kind == "gpt" else MOE_PRESETS
    changes = {k: v for k, v in changes.items() if v is not None}
    if model:
        if model not in presets:
            raise InputError(f"unknown {kind} model {model!r} (presets: {', '.join(presets)})")
        shape = presets[model]
    else:
        missing = [o for o in ("layers", "hidden", "seq") if o not in changes]
        if missing:
            raise InputError(f"give a model preset or a custom shape (missing {', '.join(missing)})")
        shape = GptShape(layers=changes["layers"], hidden=changes["hidden"], seq=changes["seq"])
    shape = replace(shape, **changes)
    if kind == "moe" and shape.experts < 1:
        raise InputError("an MoE needs experts (or a model preset)")
    if kind == "moe" and shape.topk == 0 and "topk" not in changes:
        shape = replace(shape, topk=min(DEFAULT_TOPK, shape.experts))
    return shape
