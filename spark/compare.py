"""Group runs by scenario and pick the runs behind each thesis figure (pure Python, no Spark).

Runs with the same (workload kind, nodes, multicast, cutoff) form a *group*; a group pools its runs (e.g.
several seeds): latency histograms add up, per-node values are concatenated.

- headline (Figs 4.1-4.4): multicast and cut-off on, the size nearest the thesis's 1,000 nodes;
- multicast (Figs 4.5, 4.6): unicast vs multicast, same kind, size and cut-off (preferring the headline's);
- cut-off (Figs 4.7, 4.8): none vs cut-off, same kind, size and multicast;
- scalability (Figs 4.9, 4.10): the headline's kind and protocol at every size (two sizes at least).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from p2pubsub.trace.summary import spread

from .metrics import Hist, RunMetrics

__all__ = ["THESIS_NODES", "Group", "make_groups", "pick_headline", "pick_pair", "scalability_series"]

#: Network size of the thesis's main experiments (§4.3.1, §4.3.2).
THESIS_NODES = 1000


def _flag(v: bool | None) -> str:
    return "?" if v is None else ("on" if v else "off")


@dataclass
class Group:
    """Runs that share a scenario configuration, pooled."""

    key: tuple[str, int | None, bool | None, bool | None]
    runs: list[RunMetrics]

    @property
    def kind(self) -> str:
        return self.key[0]

    @property
    def nodes(self) -> int | None:
        return self.key[1]

    @property
    def multicast(self) -> bool | None:
        return self.key[2]

    @property
    def cutoff(self) -> bool | None:
        return self.key[3]

    @property
    def label(self) -> str:
        mc, co = _flag(self.multicast), _flag(self.cutoff)
        return f"{self.kind}, {self.nodes} nodes, multicast {mc}, cut-off {co}"

    @property
    def slug(self) -> str:
        return f"{self.kind}-n{self.nodes}-mc{_flag(self.multicast)}-co{_flag(self.cutoff)}"

    @cached_property
    def install(self) -> Hist:
        return Hist.merge([r.install for r in self.runs])

    @cached_property
    def delivery(self) -> Hist:
        return Hist.merge([r.delivery for r in self.runs])

    def per_subscription(self) -> np.ndarray:
        return np.concatenate([r.bandwidth.per_subscription(r.subscriptions) for r in self.runs])

    def per_event(self) -> np.ndarray:
        return np.concatenate([r.bandwidth.per_event(r.events) for r in self.runs])

    def probe_per_event(self) -> np.ndarray:
        return np.concatenate([r.bandwidth.probe_per_event(r.events) for r in self.runs])

    def summary(self) -> dict[str, Any]:
        return {
            "group": self.slug,
            "label": self.label,
            "kind": self.kind,
            "nodes": self.nodes,
            "multicast": self.multicast,
            "cutoff": self.cutoff,
            "runs": [r.info.name for r in self.runs],
            "install_latency_ms": self.install.stats(),
            "delivery_latency_ms": self.delivery.stats(),
            "bytes_per_node": {
                "per_subscription": spread(self.per_subscription()),
                "per_event": spread(self.per_event()),
                "per_event_probe": spread(self.probe_per_event()),
            },
        }


def make_groups(runs: list[RunMetrics]) -> list[Group]:
    """Groups in order of their first run."""
    groups: dict[tuple[Any, ...], Group] = {}
    for r in runs:
        groups.setdefault(r.info.config, Group(key=r.info.config, runs=[])).runs.append(r)
    return list(groups.values())


def _size_rank(g: Group) -> tuple[float, int]:
    distance = abs(g.nodes - THESIS_NODES) if g.nodes is not None else float("inf")
    return (distance, -len(g.runs))


def pick_headline(groups: list[Group]) -> Group | None:
    """The group for Figs 4.1-4.4: multicast and cut-off on (else any), size nearest 1,000 nodes."""
    if not groups:
        return None
    full = [g for g in groups if g.multicast and g.cutoff]
    return min(full or groups, key=_size_rank)


def pick_pair(groups: list[Group], flag: str, headline: Group | None) -> tuple[Group, Group] | None:
    """(off, on) groups that differ only in `flag` ("multicast" or "cutoff"), or None."""
    index = {"multicast": 2, "cutoff": 3}[flag]
    other = 5 - index  # the other flag's position
    pairs = []
    for on in groups:
        if on.key[index] is not True:
            continue
        want = list(on.key)
        want[index] = False
        off = next((g for g in groups if g.key == tuple(want)), None)
        if off is not None:
            pairs.append((off, on))
    if not pairs:
        return None

    def rank(pair: tuple[Group, Group]) -> tuple[Any, ...]:
        on = pair[1]
        same_base = headline is not None and (on.kind, on.nodes) == (headline.kind, headline.nodes)
        return (not same_base, on.key[other] is not True, *_size_rank(on))

    return min(pairs, key=rank)


def scalability_series(groups: list[Group], headline: Group | None) -> list[Group]:
    """The headline's configuration at every network size, by size; empty if fewer than two sizes."""
    if headline is None:
        return []
    same = [
        g
        for g in groups
        if (g.kind, g.multicast, g.cutoff) == (headline.kind, headline.multicast, headline.cutoff)
        and g.nodes is not None
    ]
    series = sorted(same, key=lambda g: g.nodes)
    return series if len(series) >= 2 else []
