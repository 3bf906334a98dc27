"""Simulator traces: the Parquet format (`schema`), its writer, run summaries, fake runs (`synthetic`)."""

from .schema import (
    DELIVERIES,
    EVENT_PROBE_TYPES,
    EVENT_TYPES,
    EVENTS,
    FILES,
    LATENCY,
    MESSAGES,
    NODES,
    PHASE_OF_TYPE,
    SCHEMAS,
    SUBSCRIPTION_TYPES,
    SUBSCRIPTIONS,
    TRACE_VERSION,
    phase_of,
)
from .summary import summarize, summarize_run
from .writer import TraceWriter

__all__ = [
    "DELIVERIES",
    "EVENTS",
    "EVENT_PROBE_TYPES",
    "EVENT_TYPES",
    "FILES",
    "LATENCY",
    "MESSAGES",
    "NODES",
    "PHASE_OF_TYPE",
    "SCHEMAS",
    "SUBSCRIPTIONS",
    "SUBSCRIPTION_TYPES",
    "TRACE_VERSION",
    "TraceWriter",
    "phase_of",
    "summarize",
    "summarize_run",
]
