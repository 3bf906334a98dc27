"""Synthetic latency: hosts at random points in a plane plus access delays; for tests and when no data is at hand.

Points are uniform in the unit square; the one-way delay is ``k·distance + access[a] + access[b]`` with ``k``
chosen so the mean RTT over all pairs of distinct hosts equals ``mean_rtt_ms`` exactly (default 180 ms, the King
data set's mean the thesis simulated with, §4.1.1). A plane obeys the triangle inequality, unlike the Internet:
use it for tests and as a fallback, not for figures. Memory is O(hosts); a look-up computes one ``hypot``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .base import LOOPBACK_S, LatencyModel

DEFAULT_MEAN_RTT_MS = 180.0
_CHUNK = 1024  # rows per block when summing all pairwise distances


def _mean_pair_distance(x: np.ndarray, y: np.ndarray) -> float:
    n = len(x)
    if n < 2:
        return 0.0
    total = 0.0
    for start in range(0, n, _CHUNK):
        dx = x[start : start + _CHUNK, None] - x[None, :]
        dy = y[start : start + _CHUNK, None] - y[None, :]
        total += float(np.hypot(dx, dy).sum())
    return total / (n * (n - 1))


class SyntheticModel(LatencyModel):
    """Random points in a plane, scaled to a target mean RTT, plus per-host access delays."""

    name = "synthetic"

    def __init__(
        self, nodes: int, seed: int, *, mean_rtt_ms: float = DEFAULT_MEAN_RTT_MS, access_delay_ms: float = 2.0
    ) -> None:
        if nodes < 1:
            raise ValueError(f"nodes must be >= 1, got {nodes}")
        if access_delay_ms < 0:
            raise ValueError(f"access_delay_ms must be >= 0, got {access_delay_ms}")
        # the access delays alone contribute 4 × their mean to the mean RTT; the plane supplies the rest
        if mean_rtt_ms <= 4.0 * access_delay_ms:
            raise ValueError(f"mean_rtt_ms {mean_rtt_ms} must exceed 4 x access_delay_ms {access_delay_ms}")
        rng = np.random.default_rng([seed, 0x5E])
        x = rng.random(nodes)
        y = rng.random(nodes)
        access = np.random.default_rng([seed, 0xAC]).uniform(0.5, 1.5, nodes) * (access_delay_ms / 1000.0)
        mean_access = float(access.mean()) if nodes else 0.0
        mean_dist = _mean_pair_distance(x, y)
        # one-way mean = k·mean_dist + 2·mean_access (over ordered pairs, each host's access counts twice)
        target_one_way = mean_rtt_ms / 2000.0
        self._k = (target_one_way - 2.0 * mean_access) / mean_dist if mean_dist > 0 else 0.0
        self._x = x.tolist()
        self._y = y.tolist()
        self._acc = access.tolist()
        self._xn, self._yn, self._accn = x, y, access
        self.target_mean_rtt_ms = mean_rtt_ms
        self.access_delay_ms = access_delay_ms

    @property
    def hosts(self) -> int:
        return len(self._x)

    def one_way(self, a: int, b: int) -> float:
        if a == b:
            return LOOPBACK_S
        dist = math.hypot(self._x[a] - self._x[b], self._y[a] - self._y[b])
        return self._k * dist + (self._acc[a] + self._acc[b])

    def matrix_s(self, hosts: Sequence[int] | None = None) -> np.ndarray:
        idx = np.arange(self.hosts) if hosts is None else np.asarray(list(hosts), dtype=np.int64)
        x, y, acc = self._xn[idx], self._yn[idx], self._accn[idx]
        m = self._k * np.hypot(x[:, None] - x[None, :], y[:, None] - y[None, :]) + (acc[:, None] + acc[None, :])
        m[idx[:, None] == idx[None, :]] = LOOPBACK_S
        return m

    def mean_rtt_ms(self) -> float:
        n = self.hosts
        if n < 2:
            return 0.0
        mean_dist = _mean_pair_distance(self._xn, self._yn)
        return 2000.0 * (self._k * mean_dist + 2.0 * float(self._accn.mean()))

    def summary(self) -> dict[str, object]:
        out = super().summary()
        out["access_delay_ms"] = self.access_delay_ms
        return out
