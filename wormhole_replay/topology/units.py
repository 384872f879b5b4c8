"""Parsing of ns-3 style data-rate and time strings.

The HPCC ``topology.txt`` stores link rates and delays as ns-3 ``DataRate`` and ``Time``
strings (``100Gbps``, ``0.001ms``). We parse them with :class:`decimal.Decimal` so that
values such as ``0.001ms`` come out as exactly 1000 ns, never 999 or 1001 through float error.

Both functions raise :class:`ValueError` on garbage; callers that know the file and line wrap
it into :class:`~wormhole_replay.errors.InputError`.
"""

from __future__ import annotations

import re
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

# A number: optional sign, digits with optional fraction, optional exponent.
_NUMBER = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"

_RATE_RE = re.compile(rf"^\s*({_NUMBER})\s*([kKmMgGtT]i?)?(bps|b/s|Bps|B/s)?\s*$")
_TIME_RE = re.compile(rf"^\s*({_NUMBER})\s*(s|ms|us|ns|ps|fs|min|h|d|y)?\s*$")

_SI = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40}

# Nanoseconds per ns-3 time unit (ns-3 uses a 365-day year).
_NS_PER_UNIT = {
    "s": Decimal(10**9),
    "ms": Decimal(10**6),
    "us": Decimal(10**3),
    "ns": Decimal(1),
    "ps": Decimal("1e-3"),
    "fs": Decimal("1e-6"),
    "min": Decimal(60 * 10**9),
    "h": Decimal(3600 * 10**9),
    "d": Decimal(86400 * 10**9),
    "y": Decimal(365 * 86400 * 10**9),
}


def _to_int(value: Decimal) -> int:
    """Round a Decimal to the nearest integer (halves away from zero)."""
    return int(value.quantize(Decimal(1), rounding=ROUND_HALF_UP))


def parse_rate_bps(text: str) -> int:
    """Parse an ns-3 ``DataRate`` string into bits per second.

    Parameters
    ----------
    text : str
        For example ``100Gbps``, ``100Gb/s``, ``50Mb/s``, ``25G`` (a bare multiplier means
        bits), ``400000000000`` (a plain number is bits per second), ``10GB/s`` (bytes: x8).
        SI multipliers are powers of 1000 and their letter may be upper or lower case;
        ``Ki``/``Mi``/``Gi``/``Ti`` are the ns-3 binary multipliers (powers of 1024).

    Returns
    -------
    int
        The rate in bit/s, rounded to the nearest integer.

    Raises
    ------
    ValueError
        If ``text`` is not a rate, or is negative.
    """
    match = _RATE_RE.match(str(text))
    if match is None:
        raise ValueError(f"not a data rate: {text!r} (expected e.g. 100Gbps, 50Mb/s, 25G)")
    number, prefix, unit = match.groups()
    try:
        value = Decimal(number)
    except InvalidOperation:  # pragma: no cover - the regex only admits valid numbers
        raise ValueError(f"not a data rate: {text!r}") from None
    if value < 0:
        raise ValueError(f"negative data rate: {text!r}")
    if prefix:
        prefix = prefix.lower()
        value *= _BINARY[prefix] if prefix.endswith("i") else _SI[prefix]
    if unit in ("Bps", "B/s"):
        value *= 8
    return _to_int(value)


def parse_time_ns(text: str) -> int:
    """Parse an ns-3 ``Time`` string into integer nanoseconds.

    Parameters
    ----------
    text : str
        For example ``0.001ms``, ``1000ns``, ``1us``, ``1e-06s``, ``2s``, ``500ps``.
        A plain number is in seconds, as in ns-3.

    Returns
    -------
    int
        The time in ns, rounded to the nearest ns (halves away from zero).

    Raises
    ------
    ValueError
        If ``text`` is not a time.
    """
    match = _TIME_RE.match(str(text))
    if match is None:
        raise ValueError(f"not a time: {text!r} (expected e.g. 1us, 1000ns, 0.001ms)")
    number, unit = match.groups()
    return _to_int(Decimal(number) * _NS_PER_UNIT[unit or "s"])
