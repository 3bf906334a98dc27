"""``summary.json`` of a simulator run: `p2pubsub.trace.summarize` plus what only the simulator knows.

`p2pubsub.trace.summary.summarize` defines the shared figures (counts, install and delivery latency, bytes per
node by phase, messages by phase), so that the simulator and ``spark/`` agree. On top of it the simulator adds:

* ``deliveries``: the oracle's verdict (``expected``, ``delivered``, ``missing``, ``false_positive``,
  ``duplicate``, ``unexpected``, ``unknown``, and the spread of the misses: ``missing_events``,
  ``missing_subscriptions``, ``missing_by_tenth``) and ``rows`` (deliveries to applications);
* ``latency_ms.subscribe`` (install latency with p99) and p99 for ``latency_ms.delivery``; every latency block
  has ``count``, ``mean``, ``p50``, ``p90``, ``p99``, ``max`` in milliseconds;
* ``delivery_vs_direct``: each delivery's latency divided by the latency model's one-way delay from the
  publisher's host to the subscriber's (deliveries a node makes to itself are left out: ``local``);
* ``messages.by_type`` / ``messages.bytes_by_type``; ``churn``, ``failures``, ``node_counters``, ``network``
  (datagram counters, the latency model's summary), ``virtual_s``, ``trace_check``;
* the mode's own fields (`SimulationBase.extend_summary`): the DHT mode's ``tree_check`` (`runner.tree_check`);
* ``wall_s`` and ``peak_rss_mb``, which differ between runs of the same scenario: they are listed under
  ``volatile``, and `comparable` leaves them out.
"""

from __future__ import annotations

import resource
import time
from collections import Counter
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..trace.schema import FILES
from ..trace.summary import percentile_stats as _stats
from ..trace.summary import stats_ms, write_summary

if TYPE_CHECKING:
    from .engine import SimulationBase as Simulation

__all__ = ["VOLATILE", "comparable", "finish_summary", "stats_ms"]

VOLATILE = ("wall_s", "peak_rss_mb")


def comparable(summary: dict[str, Any]) -> dict[str, Any]:
    """The summary without the figures that vary between runs of the same scenario and seed."""
    return {k: v for k, v in summary.items() if k not in VOLATILE and k != "volatile"}


def _record_nodes_and_latency(sim: Simulation) -> None:
    """nodes.parquet (node -> host, country) and the latency matrix over every host pair the run used."""
    writer, model = sim.writer, sim.model
    ripe = getattr(model, "name", "") == "ripe"
    for n in sim.nodes:
        writer.node(n.index, n.index, model.site_of(n.index) if ripe else None)
    lookup = model.lookup()
    for a, b in sorted(sim.observer.pairs):
        writer.latency(a, b, lookup(a, b) * 1000.0)


def finish_summary(sim: Simulation, *, wall_start: float) -> dict[str, Any]:
    """Write the trace and ``summary.json``; ``wall_start`` is the run's ``time.perf_counter()`` at its start."""
    _record_nodes_and_latency(sim)
    summary = sim.writer.close()
    run_dir = sim.out_dir

    subs = pq.read_table(run_dir / FILES["subscriptions"], columns=["requested_at", "installed_at"])
    events = pq.read_table(run_dir / FILES["events"], columns=["event_id", "published_at"])
    deliveries = pq.read_table(
        run_dir / FILES["deliveries"],
        columns=["event_id", "subscription_id", "subscriber", "publisher", "published_at", "delivered_at"],
    )
    messages = pq.read_table(run_dir / FILES["messages"], columns=["type", "bytes"])

    # oracle
    published = dict(
        zip(events.column("event_id").to_pylist(), events.column("published_at").to_pylist(), strict=True)
    )
    gone = {n.index: n.gone_at for n in sim.nodes if n.gone_at is not None}
    pairs = zip(
        deliveries.column("event_id").to_pylist(), deliveries.column("subscription_id").to_pylist(), strict=True
    )
    verdict = sim.oracle.verdict(sim.observer.installs, published, gone, pairs)

    # latencies
    req = subs.column("requested_at").to_numpy()
    inst = subs.column("installed_at").to_numpy(zero_copy_only=False)
    ok = ~np.isnan(inst)
    pub_at = deliveries.column("published_at").to_numpy()
    deliv_at = deliveries.column("delivered_at").to_numpy()
    latency = summary.get("latency_ms", {})
    latency["subscribe"] = stats_ms(inst[ok] - req[ok])
    latency["delivery"] = stats_ms(deliv_at - pub_at)

    # delivery latency / direct one-way latency, publisher's host -> subscriber's host (node i on host i)
    src = deliveries.column("publisher").to_numpy().astype(np.int64)
    dst = deliveries.column("subscriber").to_numpy().astype(np.int64)
    remote = src != dst
    lookup = sim.model.lookup()
    direct = np.array([lookup(a, b) for a, b in zip(src[remote].tolist(), dst[remote].tolist(), strict=True)])
    ratio = _stats((deliv_at[remote] - pub_at[remote]) / direct) if direct.size else _stats(np.zeros(0))
    ratio["local"] = int((~remote).sum())

    # messages by type
    types = messages.column("type")
    counts = pc.value_counts(types).to_pylist()
    by_type = {c["values"]: int(c["counts"]) for c in counts}
    sizes = Counter()
    if messages.num_rows:
        grouped = messages.group_by("type").aggregate([("bytes", "sum")])
        sizes = dict(
            zip(grouped.column("type").to_pylist(), (int(x) for x in grouped.column("bytes_sum").to_pylist()),
                strict=True)
        )
    msg = summary.setdefault("messages", {})
    msg["by_type"] = dict(sorted(by_type.items()))
    msg["bytes_by_type"] = dict(sorted(sizes.items()))

    node_counters: Counter = Counter()
    for n in sim.nodes:
        node_counters.update(n.node.counters)
    net = sim.net
    summary.update(
        scenario=sim.scenario.name,
        seed=sim.scenario.seed,
        deliveries={**verdict.as_dict(), "rows": int(deliveries.num_rows)},
        oracle_examples={k: [list(p) for p in v] for k, v in verdict.examples.items()},
        latency_ms=latency,
        delivery_vs_direct=ratio,
        churn={
            **sim.counts.churn,
            "gone": {str(n.index): {"how": n.how, "at": n.gone_at} for n in sim.nodes if n.gone_at is not None},
            "live_at_end": len(sim.live),
        },
        failures={
            "subscribe": sim.counts.subscribe_failed,
            "subscribe_skipped": sim.counts.subscribe_skipped,
            "publish": sim.counts.publish_failed,
            "join": sim.counts.join_failed,
            "loop_errors": sim.loop_errors,
            "reasons": dict(sim.counts.reasons.most_common(20)),
        },
        node_counters=dict(sorted(node_counters.items())),
        network={
            "latency_model": sim.model.summary(),
            "link_capacity_kbps": sim.scenario.network.link_capacity_kbps,
            "datagrams": asdict(net.stats),
        },
        virtual_s=sim.end_time,
        workload_start_s=sim.t0,
        trace_check={"unmatched_receipts": sim.observer.unmatched, "type_mismatches": sim.observer.mismatches},
        wall_s=round(time.perf_counter() - wall_start, 3),
        peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),  # Linux: KiB
        volatile=list(VOLATILE),
    )
    sim.extend_summary(summary)
    write_summary(run_dir, summary)
    return summary
