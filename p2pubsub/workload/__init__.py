"""Workload generators: the thesis' synthetic subscriptions and events (§4.1) and PADRES stock quotes (seed 001)."""

from __future__ import annotations

from dataclasses import replace

from ..scenario import Scenario
from .base import Adv, Pub, Sub, Workload, node_capacities
from .stocks import stocks_workload
from .thesis import THESIS_ATTRIBUTES, AttrSpec, thesis_workload


def from_scenario(scenario: Scenario) -> Workload:
    """The workload a scenario describes: ``[workload]``, node count, seed, and ``protocol.leaf_capacity``.

    Subscribers and publishers are the initial nodes ``0 .. nodes-1``; ``capacities`` also covers the nodes that
    ``[[churn]] join`` steps add later (indices from ``nodes`` on, in joining order).
    """
    w = scenario.workload
    common = {
        "subscriptions_per_node": w.subscriptions_per_node,
        "subscribe_interval_ms": w.subscribe_interval_ms,
        "events": w.events,
        "publish_interval_ms": w.publish_interval_ms,
        "capacity": scenario.protocol.leaf_capacity,
        "settle_s": w.settle_s,
    }
    nodes, seed = scenario.network.nodes, scenario.seed
    if w.kind == "thesis":
        out = thesis_workload(
            nodes, seed, event_present_prob=w.event_present_prob, shuffle_subranges=w.shuffle_subranges, **common
        )
    else:
        out = stocks_workload(
            nodes, seed, mix=w.stock_mix, placement=w.stock_placement, symbols=w.symbols, **common
        )
    hosts = nodes + scenario.churn_totals()["join"]
    capacities = node_capacities(seed, out.schema_name, hosts, scenario.protocol.leaf_capacity)
    return replace(out, schema={**out.schema, "absent": w.absent}, capacities=capacities)


__all__ = [
    "THESIS_ATTRIBUTES",
    "Adv",
    "AttrSpec",
    "Pub",
    "Sub",
    "Workload",
    "from_scenario",
    "stocks_workload",
    "thesis_workload",
]
