"""Loader for p2psim's King data set (Gummadi et al. 2002; the network model of the thesis, §4.1.1).

The real matrix (1740 DNS servers, mean RTT ≈ 180 ms) is not shipped; users who have it pass ``king:PATH``.
Two formats are read, told apart by the first non-comment line:

**Dense matrix** (the ``kingdata/matrix`` file): ``N`` lines of ``N`` whitespace-separated numbers; entry ``(i, j)``
is the RTT measured from server ``i`` to server ``j`` in **microseconds**; a negative entry means "not measured";
the diagonal is ignored. Blank lines and lines starting with ``#`` are skipped.

**p2psim topology** (``mking-t``/``uking-t`` style; read from p2psim's ``topologies/e2egraph.C`` and
``e2easymgraph.C``, since the files themselves could not be obtained here)::

    topology E2EGraph 1740        # or E2EAsymGraph; the number of nodes
    failure_model NullFailureModel   # any other keyword line: ignored
    node 1                        # node declarations (1-based): range-checked, otherwise ignored
    1,2 45123                     # "i,j latency"

In ``E2EGraph`` a pair line gives the symmetric *one-way* latency (p2psim's generator script writes half the RTT);
in ``E2EAsymGraph`` it gives the RTT measured from ``i`` to ``j`` and p2psim halves it. p2psim does not record the
unit: we assume milliseconds (p2psim's time unit) unless the median entry exceeds 5000, which no millisecond
one-way latency does, in which case the entries are read as microseconds (its King script converts ping times to
them); pass ``unit=`` to override. Negative entries, and entries of 1,000,000 or more (the script's "missing"
stuffing), are missing.

Asymmetric data is kept: ``one_way(i, j) = rtt(i→j) / 2``, so a request/response between ``i`` and ``j`` takes the
mean of both measured RTTs (``symmetric=True`` averages them instead). A pair measured in one direction only takes
that value both ways; a pair measured in neither direction is imputed with network coordinates fitted to the
measured pairs (:mod:`.coords`, the same method as the RIPE model — not shortest paths). Servers without any
measurement are dropped. Nodes are placed on distinct servers (a seeded sample) while there are enough, then
cyclically; two nodes on one server are ``same_site_rtt_ms`` apart (1 ms, as p2psim's King script does).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .base import SiteModel
from .coords import fit_coordinates

TOPOLOGY_KINDS = ("E2EGraph", "E2EAsymGraph")
UNITS = {"us": 1e-3, "ms": 1.0}  # -> milliseconds
MISSING_AT = 1_000_000  # p2psim's King script writes this for unmeasured pairs
AUTO_US_MEDIAN = 5000.0


class KingFormatError(ValueError):
    """A malformed King file, with the file and line."""


@dataclass(frozen=True)
class KingData:
    """Directed RTTs (ms) between servers: row = source; NaN = not measured; the diagonal is NaN."""

    rtt_ms: np.ndarray
    fmt: str  # "matrix" | "E2EGraph" | "E2EAsymGraph"
    unit: str
    source: str

    @property
    def servers(self) -> int:
        return len(self.rtt_ms)


def read_king(path: str | Path, *, unit: str | None = None) -> KingData:
    """Read either format (see the module docstring) with errors naming the file and line."""
    path = Path(path)
    lines = path.read_text(encoding="utf-8").splitlines()
    return parse_king(lines, str(path), unit=unit)


def parse_king(lines: list[str], source: str = "<king>", *, unit: str | None = None) -> KingData:
    if unit is not None and unit not in UNITS:
        raise ValueError(f"unit must be one of {sorted(UNITS)}, got {unit!r}")
    for line in lines:
        words = line.split()
        if words and not words[0].startswith("#"):
            if words[0] == "topology":
                return _parse_topology(lines, source, unit)
            break
    return _parse_matrix(lines, source, unit or "us")


def _number(token: str, where: str) -> float:
    try:
        v = float(token)
    except ValueError:
        raise KingFormatError(f"{where}: {token!r} is not a number") from None
    if not math.isfinite(v):
        raise KingFormatError(f"{where}: {token!r} is not a finite number")
    return v


def _parse_matrix(lines: list[str], source: str, unit: str) -> KingData:
    rows: list[list[float]] = []
    for lineno, line in enumerate(lines, start=1):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        row = [_number(w, f"{source}:{lineno}: column {c}") for c, w in enumerate(words, start=1)]
        if rows and len(row) != len(rows[0]):
            raise KingFormatError(f"{source}:{lineno}: {len(row)} values, but the first row has {len(rows[0])}")
        rows.append(row)
    if not rows:
        raise KingFormatError(f"{source}: no matrix rows")
    if len(rows) != len(rows[0]):
        raise KingFormatError(f"{source}: {len(rows)} rows of {len(rows[0])} values; the matrix must be square")
    m = np.array(rows, dtype=np.float64)
    m[m < 0] = np.nan
    np.fill_diagonal(m, np.nan)
    return KingData(m * UNITS[unit], "matrix", unit, source)


def _parse_topology(lines: list[str], source: str, unit: str | None) -> KingData:
    n = 0
    kind = ""
    entries: dict[tuple[int, int], tuple[float, int]] = {}
    for lineno, line in enumerate(lines, start=1):
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        where = f"{source}:{lineno}"
        if not kind:
            if len(words) != 3 or words[0] != "topology":
                raise KingFormatError(f"{where}: expected 'topology E2EGraph N' first, got {line.strip()!r}")
            if words[1] not in TOPOLOGY_KINDS:
                raise KingFormatError(
                    f"{where}: topology {words[1]!r} carries no latency matrix; expected one of {TOPOLOGY_KINDS}"
                )
            kind = words[1]
            try:
                n = int(words[2])
            except ValueError:
                raise KingFormatError(f"{where}: node count {words[2]!r} is not an integer") from None
            if n < 2:
                raise KingFormatError(f"{where}: need at least 2 nodes, got {n}")
            continue
        if words[0][0].isalpha():  # a keyword line: node declarations are checked, failure_model etc. ignored
            bad_node = len(words) < 2 or not words[1].isdigit() or not 1 <= int(words[1]) <= n
            if words[0] == "node" and bad_node:
                raise KingFormatError(f"{where}: expected 'node I' with 1 <= I <= {n}")
            continue
        if len(words) != 2:
            raise KingFormatError(f"{where}: expected 'I,J LATENCY', got {line.strip()!r}")
        pair = words[0].split(",")
        if len(pair) != 2 or not all(p.isdigit() for p in pair):
            raise KingFormatError(f"{where}: {words[0]!r} is not a pair of node numbers 'I,J'")
        a, b = int(pair[0]), int(pair[1])
        if not (1 <= a <= n and 1 <= b <= n):
            raise KingFormatError(f"{where}: node numbers must lie in [1, {n}], got {a},{b}")
        if a == b:
            raise KingFormatError(f"{where}: a node's latency to itself ({a},{b}) is not a pair")
        value = _number(words[1], where)
        key = (a - 1, b - 1) if kind == "E2EAsymGraph" else (min(a, b) - 1, max(a, b) - 1)
        if key in entries and entries[key][0] != value:
            raise KingFormatError(
                f"{where}: pair {a},{b} already given on line {entries[key][1]} with another latency"
            )
        entries[key] = (value, lineno)
    if not kind:
        raise KingFormatError(f"{source}: no 'topology' line")
    raw = {k: v for k, (v, _) in entries.items() if 0 <= v < MISSING_AT}
    if unit is None:
        med = float(np.median(list(raw.values()))) if raw else 0.0
        unit = "us" if med > AUTO_US_MEDIAN else "ms"
    scale = UNITS[unit]
    m = np.full((n, n), np.nan)
    for (a, b), v in raw.items():
        if kind == "E2EAsymGraph":
            m[a, b] = v * scale  # a directed RTT
        else:
            m[a, b] = m[b, a] = 2.0 * v * scale  # a one-way latency
    return KingData(m, kind, unit, source)


@dataclass(frozen=True)
class KingMatrix:
    """The complete one-way matrix (seconds) over the kept servers, and what imputation did."""

    one_way_s: np.ndarray
    servers: tuple[int, ...]  # original 0-based server numbers kept
    stats: dict[str, float]


def complete(
    data: KingData, *, symmetric: bool = False, same_site_rtt_ms: float = 1.0, seed: int = 0
) -> KingMatrix:
    """Fill one-direction pairs from the other direction, impute the rest, drop unmeasured servers."""
    rtt = data.rtt_ms.copy()
    np.fill_diagonal(rtt, np.nan)
    rtt = np.where(np.isnan(rtt), rtt.T, rtt)  # one direction measured: use it both ways
    measured = ~np.isnan(rtt)
    keep = np.nonzero(measured.any(axis=1))[0]
    if len(keep) < 2:
        raise KingFormatError(f"{data.source}: fewer than two servers with a measured latency")
    rtt = rtt[np.ix_(keep, keep)]
    measured = ~np.isnan(rtt)
    n = len(keep)
    sym = (rtt + rtt.T) / 2.0  # both directions are known (or both missing) by now
    i, j = np.nonzero(np.triu(measured, k=1))
    y = sym[i, j]
    miss_i, miss_j = np.nonzero(np.triu(~measured, k=1))
    imputed_mean = math.nan
    if len(miss_i):
        coords = fit_coordinates(n, i, j, y, seed=seed)
        pred = coords.predict(miss_i, miss_j)
        rtt[miss_i, miss_j] = rtt[miss_j, miss_i] = pred
        imputed_mean = float(pred.mean())
    if symmetric:
        rtt = (rtt + rtt.T) / 2.0
    np.fill_diagonal(rtt, same_site_rtt_ms)
    stats = {
        "servers": float(n),
        "dropped_servers": float(data.servers - n),
        "measured_pairs": float(len(y)),
        "imputed_pairs": float(len(miss_i)),
        "measured_mean_ms": float(y.mean()),
        "imputed_mean_ms": imputed_mean,
    }
    return KingMatrix(rtt / 2000.0, tuple(int(k) for k in keep), stats)


def load_king(
    path: str | Path,
    nodes: int,
    seed: int,
    *,
    unit: str | None = None,
    symmetric: bool = False,
    access_delay_ms: float = 0.0,
) -> SiteModel:
    """A :class:`SiteModel` placing ``nodes`` hosts on King servers (seeded). No access delay by default: the
    King RTTs already run host to host (DNS server to DNS server), as the thesis used them."""
    if nodes < 1:
        raise ValueError(f"nodes must be >= 1, got {nodes}")
    if access_delay_ms < 0:
        raise ValueError(f"access_delay_ms must be >= 0, got {access_delay_ms}")
    data = read_king(path, unit=unit)
    km = complete(data, symmetric=symmetric)
    n = len(km.servers)
    rng = np.random.default_rng([seed, 0x4B])
    # distinct servers while there are enough; beyond, every server again, like p2psim's virtual nodes
    sites = np.resize(rng.permutation(n), nodes)
    access = np.random.default_rng([seed, 0xAC]).uniform(0.5, 1.5, nodes) * (access_delay_ms / 1000.0)
    info = {
        "format": data.fmt,
        "unit": data.unit,
        "symmetric": symmetric,
        **{f"imputation_{k}": round(v, 3) for k, v in km.stats.items()},
    }
    labels = [str(s + 1) for s in km.servers]  # 1-based, as in the files
    return SiteModel("king", km.one_way_s, sites.tolist(), access.tolist(), labels, info)
