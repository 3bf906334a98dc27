"""Latency models for the simulated network: RIPE Atlas countries (default), King (p2psim), synthetic plane.

Every model numbers its hosts ``0 .. nodes-1`` (host ``i`` is simulated node ``i``) and answers
``one_way(a, b)`` in seconds; see :class:`LatencyModel`. :func:`load_model` builds one from a scenario's
``[network] latency`` spec.
"""

from __future__ import annotations

import logging

from ..datadir import describe_missing
from ..scenario import Scenario
from .base import LOOPBACK_S, LatencyModel, SiteModel
from .king import KingFormatError, load_king
from .ripe import RIPE_PARTS, build_ripe_model, ripe_file
from .synthetic import SyntheticModel

log = logging.getLogger(__name__)

SPECS = ("ripe", "synthetic", "king:PATH")


def load_model(spec: str, nodes: int, seed: int, *, access_delay_ms: float | None = None) -> LatencyModel:
    """Build the latency model named by ``spec``: ``"ripe"``, ``"synthetic"`` or ``"king:PATH"``.

    ``"ripe"`` falls back to ``"synthetic"`` (with a logged warning) when the shared data folder is absent, so a
    scenario runs anywhere. ``access_delay_ms`` is each host's mean one-way access delay (default: 2 ms for
    ripe and synthetic, 0 for King, whose RTTs already run host to host).
    """
    if not isinstance(spec, str):
        raise ValueError(f"latency spec must be a string, one of {SPECS}")
    if spec == "ripe":
        acc = 2.0 if access_delay_ms is None else access_delay_ms
        if ripe_file() is None:
            log.warning("latency 'ripe': %s; falling back to the synthetic model", describe_missing(*RIPE_PARTS))
            return SyntheticModel(nodes, seed, access_delay_ms=acc)
        return build_ripe_model(nodes, seed, access_delay_ms=acc)
    if spec == "synthetic":
        return SyntheticModel(nodes, seed, access_delay_ms=2.0 if access_delay_ms is None else access_delay_ms)
    if spec.startswith("king:"):
        path = spec[len("king:") :]
        if not path:
            raise ValueError("latency 'king:PATH' needs a path after 'king:'")
        return load_king(path, nodes, seed, access_delay_ms=0.0 if access_delay_ms is None else access_delay_ms)
    raise ValueError(f"unknown latency spec {spec!r}; expected one of {SPECS}")


def from_scenario(scenario: Scenario) -> LatencyModel:
    """The model for a scenario's ``[network]``, with hosts for the initial nodes and every node that joins later."""
    net = scenario.network
    hosts = net.nodes + scenario.churn_totals()["join"]
    return load_model(net.latency, hosts, scenario.seed, access_delay_ms=net.access_delay_ms)


__all__ = [
    "LOOPBACK_S",
    "KingFormatError",
    "LatencyModel",
    "SiteModel",
    "SyntheticModel",
    "build_ripe_model",
    "from_scenario",
    "load_king",
    "load_model",
]
