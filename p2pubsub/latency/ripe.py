"""Latency model from RIPE Atlas country-to-country RTTs (the default for evaluation).

Data: ``latency/ripe_atlas_country_rtt_2025.csv.gz`` in the shared data folder, columns
``cty1,cty2,rtt_cnt,rtt_avg,rtt_std,rtt_min,rtt_max`` (one row per unordered country pair; ``cty1 == cty2`` is the
RTT inside a country). The ``None`` pseudo-country is dropped, and so is any country left without a measured pair
to another known country (it cannot be placed).

Missing pairs (about half) are imputed with network coordinates fitted to the measured inter-country pairs
(:mod:`.coords`); measured pairs keep their measured mean. Missing intra-country RTTs take the median measured
intra-country RTT. Shortest paths are *not* used: they would undercut the triangle-inequality-breaking measured
RTTs and flatter every latency figure.

Placement (``assign``):

* ``"uniform"`` (default): each node in a country drawn uniformly. The mean RTT over node pairs is then close to
  the all-country-pairs mean (194.5 ms; 199-202 ms for 1000 nodes with access delays, seeds 1-3, see
  ``bench/latency_report.py``), near the King data set's 180 ms the thesis used (§4.1.1), and it does not copy
  RIPE Atlas' probe placement (56% of its measurements touch the US or Germany), which says where probes
  are, not where peers are.
* ``"measured"``: countries weighted by their measurement count ``rtt_cnt`` — a Europe/US-heavy, lower-latency
  network (≈ 133 ms for 1000 nodes), for sensitivity checks.

Each node gets its own one-way access delay, uniform in ``[0.5, 1.5] × access_delay_ms`` (default 2 ms: a
last-mile hop the country-level averages do not carry), added to every one-way latency it takes part in.
"""

from __future__ import annotations

import csv
import functools
import gzip
import io
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..datadir import data_path, describe_missing
from .base import SiteModel
from .coords import Coordinates, HoldoutReport, fit_coordinates, holdout_error

RIPE_PARTS = ("latency", "ripe_atlas_country_rtt_2025.csv.gz")
COLUMNS = ("cty1", "cty2", "rtt_cnt", "rtt_avg", "rtt_std", "rtt_min", "rtt_max")
UNKNOWN_COUNTRY = "None"
FIT_SEED = 0  # the imputed matrix is a property of the data, not of a run: one fixed seed
FIT_DIMS = 3
ASSIGNMENTS = ("uniform", "measured")


class RipeFormatError(ValueError):
    """A malformed RIPE table, with the file and line."""


@dataclass(frozen=True)
class RipeTable:
    """Measured RTTs between countries: symmetric ``rtt_ms`` with NaN where unmeasured."""

    countries: tuple[str, ...]
    rtt_ms: np.ndarray
    count: np.ndarray  # measurements behind each pair (0 where missing)

    @property
    def measured(self) -> np.ndarray:
        return ~np.isnan(self.rtt_ms)

    def inter_pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(i, j, rtt)`` of measured pairs of distinct countries, each unordered pair once (i < j)."""
        i, j = np.nonzero(np.triu(self.measured, k=1))
        return i, j, self.rtt_ms[i, j]


def read_ripe_table(path: str | Path) -> RipeTable:
    """Parse the CSV (gzip or plain) with precise errors; drop the ``None`` code and unplaceable countries."""
    path = Path(path)
    raw = path.read_bytes()
    text = gzip.decompress(raw).decode("utf-8") if raw[:2] == b"\x1f\x8b" else raw.decode("utf-8")
    return parse_ripe_rows(csv.reader(io.StringIO(text)), str(path))


def parse_ripe_rows(rows: Iterable[list[str]], source: str = "<rows>") -> RipeTable:
    it = iter(rows)
    header = next(it, None)
    if header is None or tuple(h.strip() for h in header) != COLUMNS:
        raise RipeFormatError(f"{source}:1: expected header {','.join(COLUMNS)}, got {header!r}")
    sums: dict[tuple[str, str], list[float]] = {}
    for lineno, row in enumerate(it, start=2):
        if not row:
            continue
        if len(row) != len(COLUMNS):
            raise RipeFormatError(f"{source}:{lineno}: expected {len(COLUMNS)} fields, got {len(row)}")
        a, b = row[0].strip(), row[1].strip()
        if not a or not b:
            raise RipeFormatError(f"{source}:{lineno}: empty country code")
        try:
            cnt = int(row[2])
            avg = float(row[3])
        except ValueError:
            raise RipeFormatError(f"{source}:{lineno}: rtt_cnt {row[2]!r} / rtt_avg {row[3]!r} not numbers") from None
        if cnt < 1 or not math.isfinite(avg) or avg <= 0:
            raise RipeFormatError(f"{source}:{lineno}: need rtt_cnt >= 1 and a positive rtt_avg, got {cnt}, {avg}")
        if UNKNOWN_COUNTRY in (a, b):
            continue
        key = (a, b) if a <= b else (b, a)
        acc = sums.setdefault(key, [0.0, 0.0])
        acc[0] += cnt * avg  # a pair listed twice: count-weighted mean
        acc[1] += cnt
    placeable = {c for (a, b) in sums if a != b for c in (a, b)}
    countries = tuple(sorted(placeable))
    index = {c: k for k, c in enumerate(countries)}
    n = len(countries)
    rtt = np.full((n, n), np.nan)
    count = np.zeros((n, n))
    for (a, b), (total, cnt) in sums.items():
        if a not in index or b not in index:
            continue
        ia, ib = index[a], index[b]
        rtt[ia, ib] = rtt[ib, ia] = total / cnt
        count[ia, ib] = count[ib, ia] = cnt
    if n < 2:
        raise RipeFormatError(f"{source}: fewer than two countries with measured pairs")
    return RipeTable(countries, rtt, count)


@dataclass(frozen=True)
class ImputedRipe:
    """The complete symmetric country RTT matrix and what imputation did to it."""

    table: RipeTable
    rtt_ms: np.ndarray
    coords: Coordinates
    stats: dict[str, float]


def impute(table: RipeTable, *, dims: int = FIT_DIMS, seed: int = FIT_SEED) -> ImputedRipe:
    """Fill the missing pairs: coordinates between countries, the median intra RTT inside a country."""
    n = len(table.countries)
    i, j, y = table.inter_pairs()
    coords = fit_coordinates(n, i, j, y, dims=dims, seed=seed)
    full = table.rtt_ms.copy()
    miss_i, miss_j = np.nonzero(np.triu(~table.measured, k=1))
    pred = coords.predict(miss_i, miss_j)
    full[miss_i, miss_j] = full[miss_j, miss_i] = pred
    diag = np.diag(table.rtt_ms)
    intra_median = float(np.nanmedian(diag))
    full[np.diag_indices(n)] = np.where(np.isnan(diag), intra_median, diag)
    upper = np.triu_indices(n, k=1)
    fitted = coords.predict(i, j)
    stats = {
        "countries": float(n),
        "measured_pairs": float(len(y)),
        "imputed_pairs": float(len(pred)),
        "measured_mean_ms": float(y.mean()),
        "imputed_mean_ms": float(pred.mean()) if len(pred) else math.nan,
        "all_pairs_mean_ms": float(full[upper].mean()),
        "fit_mae_ms": float(np.abs(fitted - y).mean()),
        "intra_median_ms": intra_median,
        "intra_imputed": float(np.isnan(diag).sum()),
    }
    return ImputedRipe(table, full, coords, stats)


def ripe_file() -> Path | None:
    return data_path(*RIPE_PARTS)


@functools.lru_cache(maxsize=4)
def _imputed_cached(path: str, mtime_ns: int) -> ImputedRipe:  # mtime: a changed file is refitted
    return impute(read_ripe_table(path))


def load_imputed(path: str | Path | None = None) -> ImputedRipe:
    """The imputed matrix for the shared data file (or ``path``), fitted once per process."""
    p = Path(path) if path is not None else ripe_file()
    if p is None:
        raise FileNotFoundError(describe_missing(*RIPE_PARTS))
    return _imputed_cached(str(p.resolve()), p.stat().st_mtime_ns)


def build_ripe_model(
    nodes: int,
    seed: int,
    *,
    path: str | Path | None = None,
    assign: str = "uniform",
    access_delay_ms: float = 2.0,
) -> SiteModel:
    """Place ``nodes`` hosts in countries (seeded) over the imputed RIPE matrix."""
    if nodes < 1:
        raise ValueError(f"nodes must be >= 1, got {nodes}")
    if assign not in ASSIGNMENTS:
        raise ValueError(f"assign must be one of {ASSIGNMENTS}, got {assign!r}")
    if access_delay_ms < 0:
        raise ValueError(f"access_delay_ms must be >= 0, got {access_delay_ms}")
    imp = load_imputed(path)
    n_sites = len(imp.table.countries)
    rng = np.random.default_rng([seed, 0x41])  # own stream per purpose: placement
    if assign == "uniform":
        sites = rng.integers(0, n_sites, size=nodes)
    else:
        weight = imp.table.count.sum(axis=1) + np.diag(imp.table.count)  # a pair touches both countries
        sites = rng.choice(n_sites, size=nodes, p=weight / weight.sum())
    acc_rng = np.random.default_rng([seed, 0xAC])
    access = acc_rng.uniform(0.5, 1.5, size=nodes) * (access_delay_ms / 1000.0)
    info: dict[str, Any] = {
        "assign": assign,
        "access_delay_ms": access_delay_ms,
        **{f"imputation_{k}": round(v, 3) for k, v in imp.stats.items()},
    }
    return SiteModel("ripe", imp.rtt_ms / 2000.0, sites.tolist(), access.tolist(), imp.table.countries, info)


def ripe_holdout(path: str | Path | None = None, *, fraction: float = 0.1, seed: int = 1) -> HoldoutReport:
    """Hide ``fraction`` of the measured inter-country pairs, impute them from the rest, report the error."""
    imp = load_imputed(path)
    i, j, y = imp.table.inter_pairs()
    return holdout_error(len(imp.table.countries), i, j, y, fraction=fraction, seed=seed, dims=FIT_DIMS)
