"""``/metrics`` in the Prometheus text format, with ``prometheus-client``.

Exported: HTTP request counts and latency histograms by route template, method and status
(``p2pubsub_http_requests_total``, ``p2pubsub_http_request_duration_seconds``), open SSE streams and waiting long
polls, the delivery registry's figures (``p2pubsub_delivery_*``) and whatever the node's ``service.metrics()``
returns (``p2pubsub_node_*``). Each app has its own ``CollectorRegistry``, so several apps live in one process.

Without ``prometheus-client`` installed the API still runs; ``/metrics`` then answers 501 ``metrics_unavailable``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

log = logging.getLogger(__name__)

try:
    import prometheus_client as prom
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
except ImportError:  # pragma: no cover - exercised only where the dependency is missing
    prom = None

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
_NAME_BAD = re.compile(r"[^a-zA-Z0-9_]")


def metric_name(prefix: str, name: str) -> str:
    return prefix + _NAME_BAD.sub("_", str(name)).strip("_").lower()


class _NumbersCollector:
    """Exports a ``{name: number | {label: number}}`` dict as gauges (counters for names ending in _total)."""

    def __init__(self, prefix: str, source: Callable[[], Mapping[str, Any]], what: str) -> None:
        self.prefix = prefix
        self.source = source
        self.what = what

    def describe(self) -> list:
        return []  # names are only known when collected

    def collect(self) -> Iterator[Any]:
        try:
            numbers = self.source()
        except Exception:  # a broken source must not take /metrics down
            log.exception("%s metrics failed", self.what)
            return
        seen: set[str] = set()
        for name, value in numbers.items():
            full = metric_name(self.prefix, name)
            if full in seen or full == self.prefix:
                continue
            seen.add(full)
            counter = full.endswith("_total")
            doc = f"{self.what}: {name}"
            if isinstance(value, Mapping):
                samples = [(str(k), v) for k, v in value.items() if _is_number(v)]
                family = (CounterMetricFamily(full[: -len("_total")], doc, labels=["key"]) if counter
                          else GaugeMetricFamily(full, doc, labels=["key"]))
                for label, v in samples:
                    family.add_metric([label], float(v))
                yield family
            elif _is_number(value):
                yield (CounterMetricFamily(full[: -len("_total")], doc, value=float(value)) if counter
                       else GaugeMetricFamily(full, doc, value=float(value)))


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float)  # booleans count as 0 and 1


class ApiMetrics:
    """Request counters and histograms of one app, plus collectors over the node and the delivery registry."""

    def __init__(self, service_metrics: Callable[[], Mapping[str, Any]],
                 delivery_metrics: Callable[[], Mapping[str, Any]]) -> None:
        self.available = prom is not None
        self._children: dict[tuple[str, str, int], tuple[Any, Any]] = {}
        self.streams = 0  # open SSE streams
        self.polls = 0  # long polls waiting
        if prom is None:
            return
        self.registry = prom.CollectorRegistry(auto_describe=False)
        self.requests = prom.Counter("p2pubsub_http_requests", "HTTP requests answered",
                                     ["route", "method", "status"], registry=self.registry)
        self.latency = prom.Histogram("p2pubsub_http_request_duration_seconds",
                                      "HTTP request handling time (an SSE stream: its whole life)",
                                      ["route", "method", "status"], buckets=BUCKETS, registry=self.registry)
        self.registry.register(_NumbersCollector("p2pubsub_node_", service_metrics, "node"))
        self.registry.register(_NumbersCollector("p2pubsub_delivery_", delivery_metrics, "delivery"))
        self.registry.register(_NumbersCollector(
            "p2pubsub_http_", lambda: {"sse_streams": self.streams, "long_polls_waiting": self.polls}, "http"))

    def observe(self, route: str, method: str, status: int, seconds: float) -> None:
        if not self.available:
            return
        key = (route, method, status)
        children = self._children.get(key)
        if children is None:
            labels = (route, method, str(status))
            children = self._children[key] = (self.requests.labels(*labels), self.latency.labels(*labels))
        children[0].inc()
        children[1].observe(seconds)

    def render(self) -> bytes:
        return prom.generate_latest(self.registry)


__all__ = ["CONTENT_TYPE", "ApiMetrics", "metric_name"]
