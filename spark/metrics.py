"""Metrics of replayed runs: latency distributions and per-node bandwidth (definitions in
:mod:`p2pubsub.trace.schema`).

Spark reduces the big tables; the driver derives the rest from small results:

- each latency table (installs, deliveries) becomes, in one job, a histogram per run with 1 ms buckets
  holding count, sum and max of the replayed latency (plus the original latency's sum and the identity
  replay's largest difference). Means and maxima are exact; percentiles are read off the histogram to
  within 1 ms (linear inside a bucket). Pooling runs is adding histograms, so the output stays
  ``runs x (largest latency in ms)`` rows however many deliveries there are;
- bytes sent per node and phase, in one job (``runs x nodes`` rows).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from p2pubsub.trace.schema import DHT_PREFIX, EVENT_PROBE_TYPES, EVENT_TYPES, SUBSCRIPTION_TYPES
from p2pubsub.trace.summary import spread

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from .load import RunInfo, Traces
    from .replay import Replay

__all__ = ["Hist", "NodeBandwidth", "RunMetrics", "compute_run_metrics", "latency_histograms", "node_bytes"]


@dataclass
class Hist:
    """A latency histogram with 1 ms buckets: bucket b holds latencies in [b, b + 1) ms."""

    buckets: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    counts: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    total_ms: float = 0.0
    max_ms: float | None = None

    @property
    def n(self) -> int:
        return int(self.counts.sum())

    @staticmethod
    def merge(hists: list[Hist]) -> Hist:
        """The pooled histogram of several runs."""
        hists = [h for h in hists if h.n]
        if not hists:
            return Hist()
        b = np.concatenate([h.buckets for h in hists])
        c = np.concatenate([h.counts for h in hists])
        keys, inv = np.unique(b, return_inverse=True)
        return Hist(
            buckets=keys,
            counts=np.bincount(inv, weights=c).astype(np.int64),
            total_ms=sum(h.total_ms for h in hists),
            max_ms=max(h.max_ms for h in hists if h.max_ms is not None),
        )

    def quantile(self, q: float) -> float | None:
        """The q-quantile (ms), linear inside the bucket it falls in."""
        if not self.n:
            return None
        cum = np.cumsum(self.counts)
        rank = q * self.n
        i = int(np.searchsorted(cum, rank, side="left"))
        i = min(i, len(cum) - 1)
        before = cum[i - 1] if i else 0
        frac = (rank - before) / self.counts[i] if self.counts[i] else 0.0
        value = float(self.buckets[i] + min(max(frac, 0.0), 1.0))
        return min(value, self.max_ms) if self.max_ms is not None else value

    def stats(self) -> dict[str, float | int | None]:
        """Count, mean, p50, p90, p99 and max (ms)."""
        n = self.n
        return {
            "count": n,
            "mean": self.total_ms / n if n else None,
            "p50": self.quantile(0.5),
            "p90": self.quantile(0.9),
            "p99": self.quantile(0.99),
            "max": self.max_ms,
        }

    def share_within(self, ms: float) -> float | None:
        """Fraction of latencies below `ms` (bucket resolution)."""
        if not self.n:
            return None
        return float(self.counts[self.buckets < ms].sum() / self.n)

    def binned(self, width: float, nbins: int) -> tuple[np.ndarray, np.ndarray]:
        """Counts in `nbins` bins of `width` ms from 0, plus a last "more" bin: (left edges, counts)."""
        idx = np.clip(np.floor(self.buckets / width), 0, nbins).astype(np.int64)
        counts = np.bincount(idx, weights=self.counts, minlength=nbins + 1).astype(np.int64)
        return np.arange(nbins + 1) * width, counts


@dataclass
class NodeBandwidth:
    """Bytes sent per node of one run, by phase; arrays aligned with `node`."""

    node: np.ndarray
    subscription: np.ndarray
    event: np.ndarray
    probe: np.ndarray
    dht: np.ndarray
    transport: np.ndarray

    def per_subscription(self, n_subs: int) -> np.ndarray:
        return self.subscription / n_subs if n_subs else np.zeros(0)

    def per_event(self, n_events: int) -> np.ndarray:
        return self.event / n_events if n_events else np.zeros(0)

    def probe_per_event(self, n_events: int) -> np.ndarray:
        return self.probe / n_events if n_events else np.zeros(0)


@dataclass
class RunMetrics:
    """Everything the report needs about one run."""

    info: RunInfo
    subscriptions: int
    events: int
    install: Hist
    delivery: Hist
    install_original_mean_ms: float | None
    delivery_original_mean_ms: float | None
    not_installed: int
    identity_max_diff_s: float
    missing_causes: int
    bandwidth: NodeBandwidth

    @property
    def nodes(self) -> int:
        return int(self.bandwidth.node.size)

    def bandwidth_stats(self) -> dict[str, dict[str, float | None]]:
        bw = self.bandwidth
        return {
            "per_subscription": spread(bw.per_subscription(self.subscriptions)),
            "per_event": spread(bw.per_event(self.events)),
            "per_event_probe": spread(bw.probe_per_event(self.events)),
        }


def latency_histograms(df: DataFrame) -> dict[int, dict[str, Any]]:
    """One job: per run, the 1 ms histogram of ``latency_replayed_s`` and side totals.

    `df` is :attr:`Replay.deliveries` or :attr:`Replay.installs`. Rows with a null latency (an install
    that never completed) are counted as ``missing``.
    """
    from pyspark.sql import functions as F

    own_col = "delivered_own" if "delivered_own" in df.columns else "installed_own"
    end_col = "delivered_at" if own_col == "delivered_own" else "installed_at"
    ms = F.col("latency_replayed_s") * 1000.0
    rows = (
        df.withColumn("bucket", F.floor(ms).cast("long"))
        .groupBy("run", "bucket")
        .agg(
            F.count("*").alias("n"),
            F.sum(ms).alias("sum_ms"),
            F.max(ms).alias("max_ms"),
            F.sum(F.col("latency_s") * 1000.0).alias("sum_orig_ms"),
            F.max(F.abs(F.col(own_col) - F.col(end_col))).alias("own_diff"),
            F.sum(F.when(F.col("cause_missing"), 1).otherwise(0)).alias("missing_causes"),
        )
        .collect()
    )
    out: dict[int, dict[str, Any]] = {}
    for r in rows:
        d = out.setdefault(
            r["run"],
            {"b": [], "c": [], "sum": 0.0, "max": None, "orig": 0.0, "diff": 0.0, "missing": 0, "causes": 0},
        )
        d["causes"] += int(r["missing_causes"] or 0)
        if r["bucket"] is None:
            d["missing"] += int(r["n"])
            continue
        d["b"].append(int(r["bucket"]))
        d["c"].append(int(r["n"]))
        d["sum"] += float(r["sum_ms"])
        d["orig"] += float(r["sum_orig_ms"])
        d["max"] = float(r["max_ms"]) if d["max"] is None else max(d["max"], float(r["max_ms"]))
        d["diff"] = max(d["diff"], float(r["own_diff"] or 0.0))
    for d in out.values():
        order = np.argsort(d["b"])
        d["hist"] = Hist(
            buckets=np.asarray(d["b"], np.int64)[order],
            counts=np.asarray(d["c"], np.int64)[order],
            total_ms=d["sum"],
            max_ms=d["max"],
        )
    return out


def node_bytes(traces: Traces) -> dict[int, NodeBandwidth]:
    """One job: bytes sent per node and phase, every node of ``nodes.parquet`` included."""
    from pyspark.sql import functions as F

    t, b = F.col("type"), F.col("bytes").cast("long")

    def total(cond: Any) -> Any:
        return F.coalesce(F.sum(F.when(cond, b)), F.lit(0)).cast("long")

    sent = traces.messages.groupBy("run", F.col("src").alias("node")).agg(
        total(t.isin(sorted(SUBSCRIPTION_TYPES))).alias("subscription"),
        total(t.isin(sorted(EVENT_TYPES))).alias("event"),
        total(t.isin(sorted(EVENT_PROBE_TYPES))).alias("probe"),
        total(t.startswith(DHT_PREFIX)).alias("dht"),
        total(t == "Ack").alias("transport"),
    )
    cols = ["subscription", "event", "probe", "dht", "transport"]
    rows = (
        traces.nodes.select("run", "node")
        .join(sent, ["run", "node"], "left")
        .select("run", "node", *[F.coalesce(F.col(c), F.lit(0)).alias(c) for c in cols])
        .collect()
    )
    per_run: dict[int, list[Any]] = {}
    for r in rows:
        per_run.setdefault(r["run"], []).append(r)
    out = {}
    for run, rs in per_run.items():
        rs.sort(key=lambda r: r["node"])
        out[run] = NodeBandwidth(
            node=np.array([r["node"] for r in rs], np.int64),
            **{c: np.array([r[c] for r in rs], np.int64) for c in cols},
        )
    return out


def compute_run_metrics(rep: Replay, traces: Traces, subs: list[int], events: list[int]) -> list[RunMetrics]:
    """Metrics of every run (three Spark jobs in all)."""
    inst = latency_histograms(rep.installs)
    deli = latency_histograms(rep.deliveries)
    bw = node_bytes(traces)
    empty = {"hist": Hist(), "orig": 0.0, "diff": 0.0, "missing": 0, "causes": 0}
    out = []
    for info in traces.runs:
        i, d = inst.get(info.index, empty), deli.get(info.index, empty)
        n_inst, n_del = i["hist"].n, d["hist"].n
        out.append(
            RunMetrics(
                info=info,
                subscriptions=subs[info.index],
                events=events[info.index],
                install=i["hist"],
                delivery=d["hist"],
                install_original_mean_ms=i["orig"] / n_inst if n_inst else None,
                delivery_original_mean_ms=d["orig"] / n_del if n_del else None,
                not_installed=int(i["missing"]),
                identity_max_diff_s=max(i["diff"], d["diff"]),
                missing_causes=int(i["causes"] + d["causes"]),
                bandwidth=bw.get(info.index, NodeBandwidth(*(np.zeros(0, np.int64) for _ in range(6)))),
            )
        )
    return out
