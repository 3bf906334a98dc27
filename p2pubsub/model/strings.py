"""Order-preserving embedding of strings into the numeric 2d logic space.

The first ``STRING_BYTES`` bytes of a string's UTF-8 form, read as a big-endian integer, give its coordinate.
UTF-8 byte order is code-point order, so the embedding is monotone: equality becomes a point and a prefix
becomes an interval, and both live in the 2d-tree like numeric ranges. Strings that share their first
``STRING_BYTES`` bytes collide; the leaf's exact check removes the false positives that admits.
"""

from __future__ import annotations

STRING_BYTES = 6  # 48 bits: every coordinate is exactly representable as a float64
STRING_MAX = float((1 << (8 * STRING_BYTES)) - 1)


def string_coordinate(value: str) -> float:
    head = value.encode("utf-8")[:STRING_BYTES]
    return float(int.from_bytes(head.ljust(STRING_BYTES, b"\x00"), "big"))


def prefix_interval(prefix: str) -> tuple[float, float]:
    """Closed coordinate interval holding every string that starts with ``prefix``."""
    head = prefix.encode("utf-8")[:STRING_BYTES]
    lo = int.from_bytes(head.ljust(STRING_BYTES, b"\x00"), "big")
    hi = int.from_bytes(head.ljust(STRING_BYTES, b"\xff"), "big")
    return float(lo), float(hi)

