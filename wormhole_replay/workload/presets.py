"""Model shapes of the generators' presets (light: the command line lists them without loading
the generators)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GptShape:
    layers: int
    hidden: int
    seq: int
    vocab: int = 51200
    experts: int = 0  # MoE: experts per layer (0: a dense model)
    topk: int = 0  # MoE: experts each token is routed to


GPT_PRESETS = {
    "gpt-13b": GptShape(layers=40, hidden=5120, seq=2048),
    "gpt-175b": GptShape(layers=96, hidden=12288, seq=2048),
    "llama-70b": GptShape(layers=80, hidden=8192, seq=4096, vocab=32000),
}
MOE_PRESETS = {
    "mixtral-8x7b": GptShape(layers=32, hidden=4096, seq=4096, vocab=32000, experts=8, topk=2),
    "mixtral-8x22b": GptShape(layers=56, hidden=6144, seq=4096, vocab=32000, experts=8, topk=2),
}
