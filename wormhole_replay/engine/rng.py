"""Random draws: ECN marking draws that match the reference simulator's, and a plain generator.

The reference marks with ``UniformVariable(0, 1).GetValue()`` (ns-3's legacy random-variable
API): every call builds a new ``RngStream`` with the next automatic stream index and uses its
first output.  An ns-3 RngStream is L'Ecuyer's MRG32k3a started at ``A^(stream * 2^127 +
run * 2^76)`` applied to the seed in all six state words.  Python computes the state of the first
stream the marking uses and the matrices that step one stream ahead (``stream_state``,
``stream_jump``, written into the run's configuration by ``build``); the kernel ``ecn_uniform``
draws and steps.  ``ECN_RNG xorshift`` (and link loss) use ``uniform``, a xorshift64* generator.
"""

import numpy as np

from .kernel import kernel
from .layout import CI_ECN_RNG, CI_MRG_JUMP, ST_MRG, ST_RNG

M1 = 4294967087
M2 = 4294944443
_A1 = [[0, 1, 0], [0, 0, 1], [(-810728) % M1, 1403580, 0]]
_A2 = [[0, 1, 0], [0, 0, 1], [(-1370589) % M2, 0, 527612]]


def _matmul(a, b, m):
    return [[sum(a[i][k] * b[k][j] for k in range(3)) % m for j in range(3)] for i in range(3)]


def _matpow(a, e, m):
    r = [[int(i == j) for j in range(3)] for i in range(3)]
    while e:
        if e & 1:
            r = _matmul(r, a, m)
        a = _matmul(a, a, m)
        e >>= 1
    return r


def _matvec(a, v, m):
    return [sum(a[i][k] * v[k] for k in range(3)) % m for i in range(3)]


def stream_state(seed: int, stream: int, run: int) -> list[int]:
    """The six MRG32k3a state words of ns-3's ``RngStream(seed, stream, run)``."""
    e = stream * (1 << 127) + run * (1 << 76)
    return _matvec(_matpow(_A1, e, M1), [seed] * 3, M1) + _matvec(_matpow(_A2, e, M2), [seed] * 3, M2)


def first_ecn_stream(n_nodes: int) -> int:
    """The stream index of the reference's first ECN draw: its set-up (third.cc on ns-3.36)
    creates 8 random streams per node and 2 more before any packet moves.  Found by searching
    the offset that reproduces the reference runs exactly: 82 for S1 (10 nodes) and 1666 for S4
    (208 nodes), both bit for bit."""
    return 8 * n_nodes + 2


def stream_jump() -> list[int]:
    """A1^(2^127) and A2^(2^127), row-major, 18 numbers: one stream ahead."""
    j1, j2 = _matpow(_A1, 1 << 127, M1), _matpow(_A2, 1 << 127, M2)
    return [x for row in j1 for x in row] + [x for row in j2 for x in row]


def first_output(state: list[int]) -> float:
    """RngStream::RandU01 on a fresh stream (for tests)."""
    p1 = (1403580 * state[1] - 810728 * state[0]) % M1
    p2 = (527612 * state[5] - 1370589 * state[3]) % M2
    return ((p1 - p2) if p1 > p2 else (p1 - p2 + M1)) * 2.328306549295728e-10


@kernel
def uniform(state):
    """xorshift64*: a uniform double in [0, 1); its state lives in ``state[ST_RNG]``."""
    x = np.uint64(state[ST_RNG])
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    state[ST_RNG] = np.int64(x)
    y = x * np.uint64(2685821657736338717)
    return float(y >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@kernel
def _mrg_jump(cfg, state, base, row, m):
    """One row of (A^(2^127) . state) mod m for a component of MRG32k3a (products < 2^64)."""
    acc = np.uint64(0)
    for k in range(3):
        acc = (acc + (np.uint64(cfg.ints[CI_MRG_JUMP + base + 3 * row + k])
                      * np.uint64(state[ST_MRG + (base // 3) + k])) % np.uint64(m)) % np.uint64(m)
    return np.int64(acc)


@kernel
def ecn_uniform(cfg, state):
    """A uniform [0, 1) draw for ECN marking.  With CI_ECN_RNG, exactly what the reference's
    ``UniformVariable(0, 1).GetValue()`` returns: a fresh ns-3 RngStream (MRG32k3a) per call, whose
    first output is used, streams numbered consecutively."""
    if cfg.ints[CI_ECN_RNG] == 0:
        return uniform(state)
    s0 = state[ST_MRG]
    s1 = state[ST_MRG + 1]
    s3 = state[ST_MRG + 3]
    s5 = state[ST_MRG + 5]
    p1 = (1403580 * s1 - 810728 * s0) % M1
    p2 = (527612 * s5 - 1370589 * s3) % M2
    if p1 > p2:
        u = (p1 - p2) * 2.328306549295728e-10
    else:
        u = (p1 - p2 + M1) * 2.328306549295728e-10
    # advance to the next stream
    a0 = _mrg_jump(cfg, state, 0, 0, M1)
    a1 = _mrg_jump(cfg, state, 0, 1, M1)
    a2 = _mrg_jump(cfg, state, 0, 2, M1)
    b0 = _mrg_jump(cfg, state, 9, 0, M2)
    b1 = _mrg_jump(cfg, state, 9, 1, M2)
    b2 = _mrg_jump(cfg, state, 9, 2, M2)
    state[ST_MRG] = a0
    state[ST_MRG + 1] = a1
    state[ST_MRG + 2] = a2
    state[ST_MRG + 3] = b0
    state[ST_MRG + 4] = b1
    state[ST_MRG + 5] = b2
    return u
