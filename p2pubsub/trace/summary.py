"""A run's summary (``summary.json``) from its trace tables, with the definitions of :mod:`.schema`.

The simulator writes its summary through :meth:`p2pubsub.trace.writer.TraceWriter.close`, which calls
:func:`summarize`; `spark/` computes the same quantities at scale and compares. Pure numpy/pyarrow.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .schema import EVENT_PROBE_TYPES, EVENT_TYPES, FILES, PHASES, SUBSCRIPTION_TYPES, TRACE_VERSION, phase_of

__all__ = ["latency_stats", "node_bandwidth", "percentile_stats", "spread", "stats_ms", "summarize", "summarize_run"]


def spread(values: Any) -> dict[str, float | None]:
    """Mean, 90th percentile (linear interpolation) and maximum of `values`; None for an empty sample."""
    a = np.asarray(values, dtype=np.float64)
    if a.size == 0:
        return {"mean": None, "p90": None, "max": None}
    return {"mean": float(a.mean()), "p90": float(np.percentile(a, 90)), "max": float(a.max())}


def latency_stats(seconds: Any) -> dict[str, float | int | None]:
    """Count, mean, median, p90 and max of latencies given in seconds, reported in milliseconds."""
    ms = np.asarray(seconds, dtype=np.float64) * 1000.0
    out: dict[str, float | int | None] = {"count": int(ms.size)}
    if ms.size == 0:
        out.update(mean=None, p50=None, p90=None, max=None)
    else:
        out.update(
            mean=float(ms.mean()),
            p50=float(np.percentile(ms, 50)),
            p90=float(np.percentile(ms, 90)),
            max=float(ms.max()),
        )
    return out


def percentile_stats(a: np.ndarray) -> dict[str, Any]:
    """Count, mean, p50, p90, p99 and max of `a` (None for an empty sample): the simulator's and the live
    experiments' latency blocks (`latency_stats` is the one `spark/` shares, without p99)."""
    out: dict[str, Any] = {"count": int(a.size)}
    if a.size == 0:
        out.update(mean=None, p50=None, p90=None, p99=None, max=None)
        return out
    p50, p90, p99 = np.percentile(a, [50, 90, 99])
    out.update(mean=float(a.mean()), p50=float(p50), p90=float(p90), p99=float(p99), max=float(a.max()))
    return out


def stats_ms(seconds: Any) -> dict[str, Any]:
    """`percentile_stats` of latencies given in seconds, in milliseconds."""
    return percentile_stats(np.asarray(seconds, dtype=np.float64) * 1000.0)


def node_bandwidth(nodes: Any, src: Any, types: Any, sizes: Any) -> dict[str, np.ndarray]:
    """Bytes sent per node and phase: arrays aligned with `nodes` (sorted node ids).

    Keys: ``node``, ``subscription`` (subscription-phase bytes), ``event`` (event-phase bytes), ``probe``
    (event phase without ``EventDelivery``). Messages from nodes missing in `nodes` are ignored.
    """
    node_ids = np.unique(np.asarray(nodes, dtype=np.int64))
    src = np.asarray(src, dtype=np.int64)
    sizes = np.asarray(sizes, dtype=np.int64)
    types = np.asarray(types, dtype=object)
    if node_ids.size:
        pos = np.minimum(np.searchsorted(node_ids, src), node_ids.size - 1)
        known = node_ids[pos] == src
    else:
        pos = np.zeros(src.size, dtype=np.int64)
        known = np.zeros(src.size, dtype=bool)
    out = {"node": node_ids}
    for key, wanted in (
        ("subscription", SUBSCRIPTION_TYPES),
        ("event", EVENT_TYPES),
        ("probe", EVENT_PROBE_TYPES),
    ):
        mask = known & np.isin(types, list(wanted))
        out[key] = np.bincount(pos[mask], weights=sizes[mask], minlength=node_ids.size).astype(np.int64)
    return out


def _col(table: pa.Table, name: str) -> np.ndarray:
    return table.column(name).to_numpy(zero_copy_only=False)


def summarize(tables: Mapping[str, pa.Table]) -> dict[str, Any]:
    """The summary of one run from its tables (keys as in :data:`.schema.SCHEMAS`)."""
    msgs, subs, events = tables["messages"], tables["subscriptions"], tables["events"]
    deliveries, nodes = tables["deliveries"], tables["nodes"]
    n_subs, n_events = subs.num_rows, events.num_rows

    types = _col(msgs, "type")
    sizes = _col(msgs, "bytes").astype(np.int64)
    phases = (
        np.array([phase_of(t) for t in types], dtype=object) if types.size else np.array([], dtype=object)
    )
    by_phase = {
        p: {"count": int((phases == p).sum()), "bytes": int(sizes[phases == p].sum())} for p in PHASES
    }

    installed = _col(subs, "installed_at").astype(np.float64)
    requested = _col(subs, "requested_at").astype(np.float64)
    ok = ~np.isnan(installed)
    delivery_s = _col(deliveries, "delivered_at") - _col(deliveries, "published_at")

    bw = node_bandwidth(_col(nodes, "node"), _col(msgs, "src"), types, sizes)
    per_sub = bw["subscription"] / n_subs if n_subs else np.zeros(0)
    per_event = bw["event"] / n_events if n_events else np.zeros(0)
    per_probe = bw["probe"] / n_events if n_events else np.zeros(0)

    return {
        "trace_version": TRACE_VERSION,
        "nodes": int(nodes.num_rows),
        "subscriptions": int(n_subs),
        "installed": int(ok.sum()),
        "events": int(n_events),
        "deliveries": int(deliveries.num_rows),
        "messages": {
            "total": int(msgs.num_rows),
            "lost": int(msgs.column("received_at").null_count),
            "by_phase": by_phase,
        },
        "latency_ms": {
            "install": latency_stats(installed[ok] - requested[ok]),
            "delivery": latency_stats(delivery_s),
        },
        "bytes_per_node": {
            "per_subscription": spread(per_sub),
            "per_event": spread(per_event),
            "per_event_probe": spread(per_probe),
        },
    }


def summarize_run(run_dir: str | Path) -> dict[str, Any]:
    """:func:`summarize` over the Parquet files of a run directory."""
    run_dir = Path(run_dir)
    tables = {name: pq.read_table(run_dir / FILES[name]) for name in FILES if name != "latency"}
    return summarize(tables)


def write_summary(run_dir: str | Path, summary: Mapping[str, Any]) -> Path:
    """Write `summary` as ``summary.json`` (sorted keys, indented)."""
    path = Path(run_dir) / "summary.json"
    path.write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    return path
