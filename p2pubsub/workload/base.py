"""What a workload generator hands the simulator: plain data, deterministic under a seed.

* ``schema``: the body for ``Schema.from_dict(schema_name, schema)``;
* ``subscriptions``: ``Sub(time_s, node, filter)`` — ``filter`` is JSON that ``parse_filter`` accepts;
* ``events()``: a fresh lazy iterator of ``Pub(time_s, node, attributes)`` each call (``parse_event`` accepts
  the attributes), so millions of events never sit in memory;
* ``capacities``: each node's subscription capacity (the leaf capacity of the 2d-tree, thesis Table 4.1);
* ``advertisements``: ``Adv(node, filter)``, what each publisher announces before it publishes (broker overlays,
  OctopiA §6): every event of ``node`` conforms to one of its advertisements (empty for workloads without them).

Times are seconds from the start of the workload (after the network has formed, thesis §4.1.1 stage 1):
subscriptions arrive first, then, ``settle_s`` after the last subscription, the events. ``node`` is the index of
the node that subscribes or publishes; a simulator with churn maps it onto a live node.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ..model import Schema


class Sub(NamedTuple):
    time_s: float
    node: int
    filter: dict[str, dict[str, Any]]


class Adv(NamedTuple):
    node: int
    filter: dict[str, dict[str, Any]]


class Pub(NamedTuple):
    time_s: float
    node: int
    attributes: dict[str, Any]


@dataclass(frozen=True)
class Workload:
    schema_name: str
    schema: dict[str, Any]
    subscriptions: tuple[Sub, ...]
    capacities: tuple[int, ...]
    event_count: int  # how many events :meth:`events` yields
    _events: Callable[[], Iterator[Pub]] = field(repr=False)
    info: dict[str, Any] = field(default_factory=dict)
    advertisements: tuple[Adv, ...] = ()

    def events(self) -> Iterator[Pub]:
        """A fresh iterator over the events, in time order (the same sequence every call)."""
        return self._events()

    def parsed_schema(self) -> Schema:
        return Schema.from_dict(self.schema_name, self.schema)


def stream_rng(seed: int, workload: str, purpose: str) -> random.Random:
    """An independent, seeded stream per purpose, so more events never change the subscriptions.

    String seeds are hashed with SHA-512 by ``random.Random``: stable across runs and ``PYTHONHASHSEED``.
    """
    return random.Random(f"p2pubsub:{workload}:{purpose}:{seed}")


def arrival_times(rng: random.Random, count: int, mean_interval_s: float, start_s: float = 0.0) -> Iterator[float]:
    """A Poisson process: exponential inter-arrival times with the given mean (thesis §4.1.1)."""
    t = start_s
    for _ in range(count):
        t += rng.expovariate(1.0 / mean_interval_s) if mean_interval_s > 0 else 0.0
        yield t


def node_capacities(seed: int, workload: str, nodes: int, capacity: tuple[int, int]) -> tuple[int, ...]:
    """``rand(lo, hi)`` per node, inclusive (thesis Table 4.1: ``node_capacity = rand(10, 30)``)."""
    lo, hi = capacity
    if not 1 <= lo <= hi:
        raise ValueError(f"capacity must be [lo, hi] with 1 <= lo <= hi, got {list(capacity)}")
    rng = stream_rng(seed, workload, "capacity")
    return tuple(rng.randint(lo, hi) for _ in range(nodes))


def check_common(nodes: int, subscriptions_per_node: float, events: int, sub_ms: float, pub_ms: float) -> None:
    if nodes < 1:
        raise ValueError(f"nodes must be >= 1, got {nodes}")
    if subscriptions_per_node < 0:
        raise ValueError(f"subscriptions_per_node must be >= 0, got {subscriptions_per_node}")
    if events < 0:
        raise ValueError(f"events must be >= 0, got {events}")
    if sub_ms < 0 or pub_ms < 0:
        raise ValueError("subscribe and publish intervals must be >= 0")
