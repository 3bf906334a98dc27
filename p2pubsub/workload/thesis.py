"""The thesis' synthetic workload: schema Table 4.2, attribute parameters Table 4.3, timing Table 4.1 (§4.1).

How we read §4.1.2 where it is terse:

* **Sub-ranges.** ``subrange_size`` is a *width* in the attribute's units, not a count: the domain is cut into
  ``ceil(width / subrange_size)`` sub-ranges (Attr1: 10,000 / 100 = 100; Attr2: 20,000 / 20 = 1,000;
  Attr3: 3,000 / 10 = 300; Attr4: 200 / 1 = 200). Read as a count, Attr4 would have a single sub-range and its
  skew factor would mean nothing.
* **Zipf over sub-ranges.** Rank ``k`` is the ``k``-th sub-range from the bottom of the domain (the thesis gives no
  permutation), drawn with ``P(k) = k^-s / H_{N,s}`` (the CDF ``H_{k,s}/H_{N,s}`` of the text); the value is
  uniform inside it. ``shuffle_subranges=True`` maps ranks to a seeded permutation of sub-ranges instead.
* **Range sizes.** "The distribution of the sizes ... obeys a Zipfian distribution with skew factor
  size_skew_factor", bounded by ``size_bound`` (a fraction of the domain width). We draw sizes like values:
  ``[0, size_bound·width]`` is cut into buckets of ``subrange_size`` (Attr1: 50, Attr2: 400, Attr3: 90,
  Attr4: 40), a bucket is drawn by Zipf(``size_skew``) — small ranges most likely — and the size is uniform in it.
* **Combining point and size.** The range is centred on the point and, where it would cross the domain's edge,
  shifted inside (so it keeps its size and still contains the point; ``size ≤ bound ≤ 50%`` of the width always
  fits).
* **Presence.** Each attribute is in a subscription with ``present_prob``; a subscription with none is redrawn
  (a filter must constrain something). Events carry every attribute unless ``event_present_prob < 1``, which
  drops each attribute independently (redrawn if none is left) to exercise absent-attribute semantics (§3.4.1).
* **Who and when.** Each subscriber and publisher is a uniformly drawn node ("randomly drawn from all the nodes",
  §4.1.1), so 5 subscriptions per node is an average; inter-arrival times are exponential (means 2000 ms and
  1000 ms, Table 4.1); capacities are ``rand(10, 30)``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from .base import Pub, Sub, Workload, arrival_times, check_common, node_capacities, stream_rng
from .zipf import Zipf

SCHEMA_NAME = "thesis"


@dataclass(frozen=True, slots=True)
class AttrSpec:
    """One attribute of Table 4.2 with its generation parameters from Table 4.3."""

    name: str
    min: float
    max: float
    present_prob: float
    subrange_skew: float
    subrange_size: float  # width of one sub-range, attribute units
    size_skew: float
    size_bound: float  # largest range size, fraction of the domain width

    @property
    def width(self) -> float:
        return self.max - self.min


THESIS_ATTRIBUTES: tuple[AttrSpec, ...] = (
    AttrSpec("Attr1", 0.0, 10_000.0, 0.5, 0.6, 100.0, 0.8, 0.50),
    AttrSpec("Attr2", -10_000.0, 10_000.0, 0.5, 0.5, 20.0, 0.6, 0.40),
    AttrSpec("Attr3", 0.0, 3_000.0, 0.5, 0.4, 10.0, 0.5, 0.30),
    AttrSpec("Attr4", 0.0, 200.0, 0.5, 0.3, 1.0, 0.4, 0.20),
)


class AttributeGenerator:
    """Draws values (events, subscription points) and range sizes for one attribute."""

    def __init__(self, spec: AttrSpec, permutation_rng: random.Random | None = None) -> None:
        if not spec.min < spec.max:
            raise ValueError(f"{spec.name}: min must be below max")
        if not (spec.subrange_size > 0 and 0 < spec.size_bound <= 1 and 0 <= spec.present_prob <= 1):
            raise ValueError(f"{spec.name}: need subrange_size > 0, 0 < size_bound <= 1, 0 <= present_prob <= 1")
        self.spec = spec
        self.subranges = math.ceil(spec.width / spec.subrange_size)
        self.values = Zipf(self.subranges, spec.subrange_skew)
        self.bound = spec.size_bound * spec.width
        self.size_buckets = max(1, math.ceil(self.bound / spec.subrange_size))
        self.sizes = Zipf(self.size_buckets, spec.size_skew)
        order = list(range(self.subranges))
        if permutation_rng is not None:
            permutation_rng.shuffle(order)
        self._order = order

    def subrange(self, rank: int) -> tuple[float, float]:
        """The interval of the sub-range holding Zipf rank ``rank``."""
        s = self.spec
        k = self._order[rank - 1]
        lo = s.min + k * s.subrange_size
        return lo, min(lo + s.subrange_size, s.max)

    def value(self, rng: random.Random) -> float:
        lo, hi = self.subrange(self.values.sample(rng))
        return rng.uniform(lo, hi)

    def size(self, rng: random.Random) -> float:
        k = self.sizes.sample(rng)
        step = self.spec.subrange_size
        return rng.uniform((k - 1) * step, min(k * step, self.bound))

    def range(self, rng: random.Random) -> tuple[float, float]:
        s = self.spec
        point = self.value(rng)
        size = self.size(rng)
        lo, hi = point - size / 2, point + size / 2
        if lo < s.min:
            lo, hi = s.min, s.min + size
        elif hi > s.max:
            lo, hi = s.max - size, s.max
        lo, hi = max(lo, s.min), min(hi, s.max)  # rounding must not leave the domain
        return lo, max(lo, hi)


def thesis_schema(attributes: tuple[AttrSpec, ...] = THESIS_ATTRIBUTES) -> dict[str, Any]:
    """Table 4.2 as a ``Schema.from_dict`` body: four float attributes."""
    return {"attributes": {a.name: {"type": "float", "min": a.min, "max": a.max} for a in attributes}}


def thesis_workload(
    nodes: int,
    seed: int,
    *,
    subscriptions_per_node: int = 5,
    subscribe_interval_ms: float = 2000.0,
    events: int = 10_000,
    publish_interval_ms: float = 1000.0,
    capacity: tuple[int, int] = (10, 30),
    event_present_prob: float = 1.0,
    settle_s: float = 10.0,
    shuffle_subranges: bool = False,
    attributes: tuple[AttrSpec, ...] = THESIS_ATTRIBUTES,
) -> Workload:
    """The thesis workload for ``nodes`` nodes (defaults: Table 4.1)."""
    check_common(nodes, subscriptions_per_node, events, subscribe_interval_ms, publish_interval_ms)
    if not 0 < event_present_prob <= 1:
        raise ValueError(f"event_present_prob must be in (0, 1], got {event_present_prob}")
    if settle_s < 0:
        raise ValueError(f"settle_s must be >= 0, got {settle_s}")
    if not any(a.present_prob > 0 for a in attributes):
        raise ValueError("at least one attribute needs present_prob > 0, or no subscription can be drawn")
    perm = stream_rng(seed, SCHEMA_NAME, "subrange-order") if shuffle_subranges else None
    gens = tuple(AttributeGenerator(a, perm) for a in attributes)

    sub_rng = stream_rng(seed, SCHEMA_NAME, "subscriptions")
    count = nodes * subscriptions_per_node
    subs = []
    for t in arrival_times(sub_rng, count, subscribe_interval_ms / 1000.0):
        subs.append(Sub(t, sub_rng.randrange(nodes), _subscription(gens, sub_rng)))
    events_start = (subs[-1].time_s if subs else 0.0) + settle_s

    def event_stream() -> Iterator[Pub]:
        rng = stream_rng(seed, SCHEMA_NAME, "events")
        for t in arrival_times(rng, events, publish_interval_ms / 1000.0, events_start):
            yield Pub(t, rng.randrange(nodes), _event(gens, rng, event_present_prob))

    info = {
        "kind": "thesis",
        "subrange_counts": {g.spec.name: g.subranges for g in gens},
        "size_buckets": {g.spec.name: g.size_buckets for g in gens},
        "events_start_s": events_start,
        "event_present_prob": event_present_prob,
        "shuffle_subranges": shuffle_subranges,
    }
    return Workload(
        SCHEMA_NAME,
        thesis_schema(attributes),
        tuple(subs),
        node_capacities(seed, SCHEMA_NAME, nodes, capacity),
        events,
        event_stream,
        info,
    )


def _subscription(gens: tuple[AttributeGenerator, ...], rng: random.Random) -> dict[str, dict[str, float]]:
    while True:  # a subscription must constrain at least one attribute: redraw an empty one
        present = [g for g in gens if rng.random() < g.spec.present_prob]
        if present:
            break
    out = {}
    for g in present:
        lo, hi = g.range(rng)
        out[g.spec.name] = {"ge": lo, "le": hi}
    return out


def _event(gens: tuple[AttributeGenerator, ...], rng: random.Random, present_prob: float) -> dict[str, float]:
    if present_prob >= 1.0:
        return {g.spec.name: g.value(rng) for g in gens}
    while True:
        present = [g for g in gens if rng.random() < present_prob]
        if present:
            return {g.spec.name: g.value(rng) for g in present}
