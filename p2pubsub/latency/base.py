"""The latency model interface the simulator reads, and the site-based model every data set builds.

A model knows ``hosts`` simulated hosts, numbered ``0 .. hosts-1`` (host ``i`` is simulated node ``i``), and
answers :meth:`LatencyModel.one_way` in seconds: deterministic per ordered pair, symmetric unless the data says
otherwise, and :data:`LOOPBACK_S` from a host to itself. :meth:`LatencyModel.lookup` hands the simulator the
fastest equivalent callable (a dense matrix's ``item`` up to :data:`DENSE_LIMIT` hosts).

Most models place hosts at *sites* (a country, a King DNS server, ...): the one-way delay between two hosts is the
sites' one-way delay plus each host's own access delay. :class:`SiteModel` keeps the site matrix as nested Python
lists, so :meth:`~SiteModel.one_way` is a few list indexings with no numpy scalar boxing and its memory grows with
sites², not hosts².
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

LOOPBACK_S = 20e-6  # a host to itself: a local datagram, not zero so ordering by time stays strict
DENSE_LIMIT = 5000  # up to this many hosts, lookup() serves a dense float64 matrix (5000² × 8 B = 200 MB)


class LatencyModel(ABC):
    """One-way delays between simulated hosts, in seconds."""

    name: str = "latency"

    @property
    @abstractmethod
    def hosts(self) -> int:
        """How many hosts the model places (the simulated nodes)."""

    @abstractmethod
    def one_way(self, a: int, b: int) -> float:
        """Seconds a datagram from host ``a`` takes to reach host ``b``."""

    def rtt(self, a: int, b: int) -> float:
        return self.one_way(a, b) + self.one_way(b, a)

    def lookup(self) -> Callable[[int, int], float]:
        """The fastest plain-Python ``(a, b) -> seconds`` for this model, for the simulator's hot path.

        Up to :data:`DENSE_LIMIT` hosts it is the bound ``item`` of a dense float64 matrix, built once (about twice
        as fast as :meth:`one_way`); beyond, :meth:`one_way` itself, whose memory stays O(hosts).
        """
        if self.hosts > DENSE_LIMIT:
            return self.one_way
        dense = getattr(self, "_dense", None)
        if dense is None:
            dense = self.matrix_s()
            dense.setflags(write=False)
            self._dense = dense
        return dense.item

    def matrix_s(self, hosts: Sequence[int] | None = None) -> np.ndarray:
        """Dense one-way matrix (seconds) over ``hosts`` (default: all); row = source, column = destination."""
        idx = list(range(self.hosts)) if hosts is None else list(hosts)
        return np.array([[self.one_way(a, b) for b in idx] for a in idx], dtype=np.float64)

    def mean_rtt_ms(self) -> float:
        """Mean round-trip time over all pairs of distinct hosts, in milliseconds."""
        m = self.matrix_s()
        n = len(m)
        if n < 2:
            return 0.0
        return float(2000.0 * (m.sum() - np.trace(m)) / (n * (n - 1)))

    def export_rows(self, hosts: Sequence[int] | None = None) -> Iterator[tuple[int, int, float]]:
        """``(src_host, dst_host, one_way_ms)`` for every ordered pair over ``hosts``, for traces."""
        idx = list(range(self.hosts)) if hosts is None else list(hosts)
        m = self.matrix_s(idx) * 1000.0
        for r, a in enumerate(idx):
            row = m[r].tolist()
            for c, b in enumerate(idx):
                yield a, b, row[c]

    def to_arrow(self, hosts: Sequence[int] | None = None) -> Any:
        """The exported matrix as a ``pyarrow.Table`` (columns ``src_host, dst_host, one_way_ms``)."""
        import pyarrow as pa  # only trace writers need it

        idx = np.asarray(list(range(self.hosts)) if hosts is None else list(hosts), dtype=np.int64)
        m = self.matrix_s(idx.tolist()) * 1000.0
        n = len(idx)
        return pa.table(
            {
                "src_host": pa.array(np.repeat(idx, n)),
                "dst_host": pa.array(np.tile(idx, n)),
                "one_way_ms": pa.array(m.reshape(-1)),
            }
        )

    def summary(self) -> dict[str, Any]:
        """Name, size and mean RTT: what a trace's metadata records about the network."""
        return {"model": self.name, "hosts": self.hosts, "mean_rtt_ms": round(self.mean_rtt_ms(), 3)}


class SiteModel(LatencyModel):
    """Hosts at sites: ``one_way(a, b) = site[s(a)][s(b)] + access[a] + access[b]`` (``a != b``).

    ``site_one_way_s`` is a square matrix of one-way seconds between sites (its diagonal is the delay between two
    hosts at the same site); ``site_of[h]`` is host ``h``'s site, ``access_s[h]`` its one-way access delay.
    Only the sites in use are kept.
    """

    def __init__(
        self,
        name: str,
        site_one_way_s: np.ndarray,
        site_of: Sequence[int],
        access_s: Sequence[float],
        site_labels: Sequence[str] | None = None,
        info: dict[str, Any] | None = None,
    ) -> None:
        base = np.asarray(site_one_way_s, dtype=np.float64)
        if base.ndim != 2 or base.shape[0] != base.shape[1]:
            raise ValueError(f"site matrix must be square, got shape {base.shape}")
        if not np.isfinite(base).all() or (base < 0).any():
            raise ValueError("site matrix must be finite and non-negative (impute missing pairs first)")
        if len(site_of) != len(access_s):
            raise ValueError(f"{len(site_of)} hosts placed but {len(access_s)} access delays")
        sites = np.asarray(site_of, dtype=np.int64)
        if len(sites) and (sites.min() < 0 or sites.max() >= len(base)):
            raise ValueError(f"site indices must lie in [0, {len(base)})")
        acc = np.asarray(access_s, dtype=np.float64)
        if not np.isfinite(acc).all() or (acc < 0).any():
            raise ValueError("access delays must be finite and non-negative")
        used, compact = np.unique(sites, return_inverse=True)
        self.name = name
        self._sites_np = compact.astype(np.int64)
        self._base_np = base[np.ix_(used, used)]
        self._acc_np = acc
        labels = list(site_labels) if site_labels is not None else [str(s) for s in range(len(base))]
        self.site_labels: tuple[str, ...] = tuple(labels[s] for s in used)
        # the fast path: plain lists, no numpy scalars
        self._base = self._base_np.tolist()
        self._site = self._sites_np.tolist()
        self._acc = acc.tolist()
        self._rows = [self._base[s] for s in self._site]  # each host's site row (shared lists, not copies)
        self.info: dict[str, Any] = dict(info or {})

    @property
    def hosts(self) -> int:
        return len(self._site)

    def one_way(self, a: int, b: int) -> float:
        if a == b:
            return LOOPBACK_S
        # (acc_a + acc_b) first: float addition is commutative, so symmetric sites give a symmetric model
        return self._rows[a][self._site[b]] + (self._acc[a] + self._acc[b])

    def site_of(self, host: int) -> str:
        """The label of a host's site (a country code, a King server number, ...)."""
        return self.site_labels[self._site[host]]

    def matrix_s(self, hosts: Sequence[int] | None = None) -> np.ndarray:
        idx = np.arange(self.hosts) if hosts is None else np.asarray(list(hosts), dtype=np.int64)
        s = self._sites_np[idx]
        acc = self._acc_np[idx]
        m = self._base_np[np.ix_(s, s)] + (acc[:, None] + acc[None, :])
        same = idx[:, None] == idx[None, :]
        m[same] = LOOPBACK_S
        return m

    def mean_rtt_ms(self) -> float:
        # closed form over sites: O(sites²) instead of O(hosts²)
        n = self.hosts
        if n < 2:
            return 0.0
        counts = np.bincount(self._sites_np, minlength=len(self._base_np)).astype(np.float64)
        base_sum = counts @ self._base_np @ counts - float((counts * np.diag(self._base_np)).sum())
        access_sum = 2.0 * (n - 1) * float(self._acc_np.sum())
        mean_one_way = (base_sum + access_sum) / (n * (n - 1))
        # the matrix may be asymmetric, but the mean over ordered pairs counts both directions
        return 2000.0 * mean_one_way

    def summary(self) -> dict[str, Any]:
        out = super().summary()
        out["sites"] = len(self.site_labels)
        out.update(self.info)
        return out
