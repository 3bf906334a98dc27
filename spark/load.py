"""Read run directories (trace format of :mod:`p2pubsub.trace.schema`) into Spark DataFrames.

Each table of each run is read with ``spark.read.parquet``, checked against the schema (missing columns
are an error, types are cast), tagged with an int ``run`` column (the run's position on the command line)
and unioned over the runs. ``scenario.toml`` and ``summary.json`` are small and read on the driver; paths
with a URL scheme (``hdfs://``, ``s3a://``) go through Spark so the job runs on a cluster as well.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.parquet as pq

from p2pubsub.trace.schema import FILES, SCENARIO_FILE, SCHEMAS, SUMMARY_FILE

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["RunInfo", "Traces", "load_runs", "read_text", "row_counts", "spark_schema"]

#: Tables every run must have (``latency`` only when replaying with the run's own matrix).
TABLES = ("messages", "subscriptions", "events", "deliveries", "nodes", "latency")


@dataclass(frozen=True)
class RunInfo:
    """One run directory: where it is and the scenario keys that group runs into comparisons."""

    index: int
    path: str
    name: str
    nodes: int | None
    multicast: bool | None
    cutoff: bool | None
    kind: str
    seed: Any
    scenario: dict[str, Any] = field(repr=False)
    summary: dict[str, Any] = field(repr=False)

    @property
    def config(self) -> tuple[str, int | None, bool | None, bool | None]:
        """The key runs are grouped by: (workload kind, nodes, multicast, cutoff)."""
        return (self.kind, self.nodes, self.multicast, self.cutoff)

    def describe(self) -> dict[str, Any]:
        return {
            "run": self.index,
            "name": self.name,
            "path": self.path,
            "nodes": self.nodes,
            "multicast": self.multicast,
            "cutoff": self.cutoff,
            "kind": self.kind,
            "seed": self.seed,
        }


@dataclass
class Traces:
    """All runs' tables, unioned; every DataFrame has an int ``run`` column first."""

    runs: list[RunInfo]
    messages: DataFrame
    subscriptions: DataFrame
    events: DataFrame
    deliveries: DataFrame
    nodes: DataFrame
    latency: DataFrame
    rows: dict[str, list[int | None]] = field(default_factory=dict)  # table -> rows per run, if known


def _is_url(path: str) -> bool:
    scheme = urlparse(path).scheme
    return len(scheme) > 1 and scheme != "file"


def _join(base: str, name: str) -> str:
    return base.rstrip("/") + "/" + name if _is_url(base) else str(Path(base) / name)


def read_text(spark: SparkSession, path: str) -> str | None:
    """A small text file's content, or None if it does not exist."""
    if not _is_url(path):
        p = Path(path)
        return p.read_text() if p.is_file() else None
    try:
        rows = spark.read.text(path, wholetext=True).collect()
    except Exception:  # Spark raises AnalysisException for a missing path
        return None
    return rows[0][0] if rows else None


def spark_schema(schema: pa.Schema) -> Any:
    """The Spark StructType of a trace schema."""
    from pyspark.sql import types as T

    mapping = {
        pa.int32(): T.IntegerType(),
        pa.int64(): T.LongType(),
        pa.float64(): T.DoubleType(),
        pa.string(): T.StringType(),
        pa.bool_(): T.BooleanType(),
    }
    return T.StructType([T.StructField(f.name, mapping[f.type], f.nullable) for f in schema])


def _check_local(path: str, name: str) -> int:
    """Check a local table's columns and types from its footer (no Spark job); returns its row count."""
    if not Path(path).exists():
        raise FileNotFoundError(f"{path}: missing (not a trace run directory?)")
    meta = pq.ParquetFile(path)
    found = meta.schema_arrow
    for f in SCHEMAS[name]:
        if f.name not in found.names:
            raise ValueError(f"{path}: missing column {f.name!r}")
        got = found.field(f.name).type
        if got != f.type and not (pa.types.is_string(f.type) and pa.types.is_large_string(got)):
            raise ValueError(f"{path}: column {f.name!r} is {got}, the trace schema says {f.type}")
    return int(meta.metadata.num_rows)


def _read_table(spark: SparkSession, run_dir: str, name: str, run: int) -> tuple[DataFrame, int | None]:
    """One table of one run, with the schema given (Spark infers nothing: no job) and a ``run`` column."""
    from pyspark.sql import functions as F

    path = _join(run_dir, FILES[name])
    rows = None if _is_url(path) else _check_local(path, name)
    expected = spark_schema(SCHEMAS[name])
    df = spark.read.schema(expected).parquet(path)
    return df.select(F.lit(run).cast("int").alias("run"), *expected.fieldNames()), rows


def _get(d: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        if not isinstance(d, dict) or key not in d:
            return None
        d = d[key]
    return d


def _info(spark: SparkSession, index: int, run_dir: str) -> RunInfo:
    scenario_text = read_text(spark, _join(run_dir, SCENARIO_FILE))
    summary_text = read_text(spark, _join(run_dir, SUMMARY_FILE))
    scenario = tomllib.loads(scenario_text) if scenario_text else {}
    summary = json.loads(summary_text) if summary_text else {}
    nodes = _get(scenario, "network", "nodes") or summary.get("nodes")
    multicast, cutoff = _get(scenario, "protocol", "multicast"), _get(scenario, "protocol", "cutoff")
    return RunInfo(
        index=index,
        path=run_dir,
        name=str(scenario.get("name") or run_dir.rstrip("/").rsplit("/", 1)[-1]),
        nodes=int(nodes) if nodes is not None else None,
        multicast=bool(multicast) if multicast is not None else None,
        cutoff=bool(cutoff) if cutoff is not None else None,
        kind=str(_get(scenario, "workload", "kind") or "unknown"),
        seed=scenario.get("seed"),
        scenario=scenario,
        summary=summary,
    )


def load_runs(spark: SparkSession, run_dirs: list[str | Path], tables: tuple[str, ...] = TABLES) -> Traces:
    """Load the runs in `run_dirs` (local paths or URLs); `tables` limits which tables are read."""
    if not run_dirs:
        raise ValueError("no run directories given")
    dirs = [d if isinstance(d, str) and _is_url(d) else str(Path(d).resolve()) for d in run_dirs]
    runs = [_info(spark, i, d) for i, d in enumerate(dirs)]
    frames: dict[str, Any] = {}
    rows: dict[str, list[int | None]] = {}
    for name in TABLES:
        if name not in tables:
            frames[name] = None
            continue
        parts = [_read_table(spark, d, name, i) for i, d in enumerate(dirs)]
        df = parts[0][0]
        for part, _ in parts[1:]:
            df = df.unionByName(part)
        frames[name] = df
        rows[name] = [n for _, n in parts]
    return Traces(runs=runs, rows=rows, **frames)


def row_counts(traces: Traces, name: str) -> list[int]:
    """Rows of table `name` per run: from the Parquet footers when local, else one Spark job."""
    known = traces.rows.get(name, [])
    if len(known) == len(traces.runs) and all(n is not None for n in known):
        return [int(n) for n in known]
    counts = {r["run"]: r["count"] for r in getattr(traces, name).groupBy("run").count().collect()}
    return [int(counts.get(i, 0)) for i in range(len(traces.runs))]
