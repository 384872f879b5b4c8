"""Small array helpers shared by the engine's set-up and the memo."""

from __future__ import annotations

import numpy as np


def unique_rows(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct rows of a 2-D integer array, in lexicographic order, with each row's index among
    them and how many times each occurs: ``np.unique(keys, axis=0, return_inverse=True,
    return_counts=True)``, which sorts the rows as raw bytes and took 1.4 s on the 724 k flows of a
    128-GPU iteration, against 0.3 s for a ``lexsort`` of the columns."""
    keys = np.asarray(keys)
    if len(keys) == 0:
        return keys.reshape(0, keys.shape[1] if keys.ndim == 2 else 0), np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = np.lexsort(keys.T[::-1])  # by the first column, then the second, ...
    ordered = keys[order]
    first = np.r_[True, (ordered[1:] != ordered[:-1]).any(axis=1)]
    inverse = np.empty(len(keys), np.int64)
    inverse[order] = np.cumsum(first) - 1
    counts = np.diff(np.r_[np.flatnonzero(first), len(keys)])
    return ordered[first], inverse, counts
