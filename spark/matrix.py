"""Latency matrices to replay traces against.

- the run's own ``latency.parquet`` (the default; ``matrix=None`` in :func:`spark.replay.replay`);
- another matrix in the same Parquet layout (``src_host, dst_host, one_way_ms``), e.g. exported from the
  RIPE-based model: hosts are matched by number; a pair it lacks gets its mean one-way latency;
- a King-format file (p2psim's kingdata): a whitespace-separated dense square matrix of round-trip times
  in microseconds, negative = not measured, ``#`` starts a comment line. One-way = RTT / 2. Host h maps to
  row ``h mod size``. A missing pair is imputed with the reverse direction if that was measured, else with
  the mean of all measured one-way latencies (so the measured distribution's mean is kept; shortest-path
  filling would flatter latencies). Two distinct hosts that fall on the same row get that row's smallest
  measured latency (a near neighbour), a host to itself 0.

This module only holds what Spark needs; the simulator's general loaders live in ``p2pubsub.sim``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["Matrix", "load_matrix", "read_king"]


@dataclass
class Matrix:
    """A replay matrix as a DataFrame ``(a, b, one_way_ms)``.

    Host pair (h1, h2) looks up ``a = h1 % modulo, b = h2 % modulo`` (``modulo`` None: a = h1, b = h2);
    pairs not found get `fill_ms`; with `same_host_zero`, h1 == h2 costs 0.
    """

    label: str
    frame: DataFrame
    rows: int
    fill_ms: float
    modulo: int | None = None
    same_host_zero: bool = False


def read_king(path: str | Path) -> tuple[np.ndarray, np.ndarray, int]:
    """Read a King-format RTT file: (one-way ms, missing pairs imputed; nearest-neighbour ms per row;
    number of pairs that were missing)."""
    rows = []
    with open(path) as fh:
        for line in fh:
            line = line.strip()
            if line and not line.startswith("#"):
                rows.append([float(x) for x in line.split()])
    if not rows or any(len(r) != len(rows) for r in rows):
        raise ValueError(f"{path}: not a square King matrix ({len(rows)} rows)")
    rtt = np.array(rows, dtype=np.float64)
    one_way = rtt / 2.0 / 1000.0  # microseconds RTT -> milliseconds one way
    measured = rtt >= 0
    np.fill_diagonal(measured, False)
    if not measured.any():
        raise ValueError(f"{path}: no measured pair")
    mean = float(one_way[measured].mean())
    filled = np.where(measured, one_way, np.where(measured.T, one_way.T, mean))
    np.fill_diagonal(filled, 0.0)
    masked = np.where(measured, one_way, np.inf)
    nearest = masked.min(axis=1)
    nearest[~np.isfinite(nearest)] = mean
    missing = int((~measured).sum() - rtt.shape[0])  # off-diagonal pairs without a measurement
    return filled, nearest, missing


def _frame(spark: SparkSession, a: np.ndarray, b: np.ndarray, ms: np.ndarray) -> DataFrame:
    table = pa.table(
        {
            "a": pa.array(a, type=pa.int32()),
            "b": pa.array(b, type=pa.int32()),
            "one_way_ms": pa.array(ms, type=pa.float64()),
        }
    )
    return spark.createDataFrame(table)


def load_matrix(
    spark: SparkSession, path: str | Path, hosts: np.ndarray | None = None, fmt: str = "auto"
) -> Matrix:
    """Load a replay matrix. `hosts`: the hosts the runs use (a King matrix is cut down to their rows).

    `fmt` is ``parquet``, ``king`` or ``auto`` (``.parquet`` files and directories are Parquet).
    """
    from pyspark.sql import functions as F

    path = str(path)
    if fmt == "auto":
        fmt = "parquet" if path.endswith(".parquet") or Path(path).is_dir() else "king"
    if fmt == "parquet":
        df = spark.read.parquet(path).select(
            F.col("src_host").cast("int").alias("a"),
            F.col("dst_host").cast("int").alias("b"),
            F.col("one_way_ms").cast("double").alias("one_way_ms"),
        )
        stats = df.agg(F.count("*").alias("n"), F.avg("one_way_ms").alias("mean")).first()
        return Matrix(
            label=f"parquet:{Path(path).name}", frame=df, rows=int(stats["n"]), fill_ms=float(stats["mean"])
        )
    if fmt != "king":
        raise ValueError(f"unknown matrix format {fmt!r} (parquet, king or auto)")
    filled, nearest, missing = read_king(path)
    size = filled.shape[0]
    with_diag = filled.copy()
    np.fill_diagonal(with_diag, nearest)  # distinct hosts on one row; same host is 0 (same_host_zero)
    used = np.arange(size) if hosts is None else np.unique(np.asarray(hosts, dtype=np.int64) % size)
    sub = with_diag[np.ix_(used, used)]
    a = np.repeat(used, used.size)
    b = np.tile(used, used.size)
    measured_mean = float(filled[~np.eye(size, dtype=bool)].mean()) if size > 1 else 0.0
    return Matrix(
        label=f"king:{Path(path).name} ({size} hosts, {missing} of {size * (size - 1)} pairs imputed)",
        frame=_frame(spark, a, b, sub.ravel()),
        rows=int(a.size),
        fill_ms=measured_mean,
        modulo=size,
        same_host_zero=True,
    )
