"""Zipf's law over ranks ``1..N``: ``P(k) = k^-s / H_{N,s}``, CDF ``H_{k,s} / H_{N,s}`` (thesis §4.1.2)."""

from __future__ import annotations

import random
from bisect import bisect_right
from itertools import accumulate


def harmonic(n: int, s: float) -> float:
    """The generalized harmonic number ``H_{n,s} = sum_{k=1..n} k^-s``."""
    return sum(k**-s for k in range(1, n + 1))


class Zipf:
    """Sample ranks by inverting the CDF with a bisection over precomputed partial sums."""

    __slots__ = ("_cdf", "n", "s")

    def __init__(self, n: int, s: float) -> None:
        if n < 1:
            raise ValueError(f"a Zipf distribution needs n >= 1 ranks, got {n}")
        if s < 0:
            raise ValueError(f"the Zipf skew must be >= 0, got {s}")
        self.n = n
        self.s = s
        partial = list(accumulate(k**-s for k in range(1, n + 1)))
        total = partial[-1]
        self._cdf = [p / total for p in partial]

    def cdf(self, k: int) -> float:
        """``H_{k,s} / H_{N,s}``."""
        return self._cdf[k - 1]

    def pmf(self, k: int) -> float:
        return self._cdf[k - 1] - (self._cdf[k - 2] if k > 1 else 0.0)

    def sample(self, rng: random.Random) -> int:
        """A rank in ``1..n``; rank 1 is the most likely."""
        # the last partial sum may round just below 1.0: clamp
        return min(bisect_right(self._cdf, rng.random()) + 1, self.n)
