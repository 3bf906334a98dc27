"""The trace format: what a simulator run writes and what `spark/` replays. The one source of truth.

A *run directory* holds the files below. Times are virtual seconds (float64) since the start of the run;
latencies in the latency matrix are milliseconds; sizes are bytes. Node ids are the simulator's node numbers
(int32, unique within a run); hosts index the latency model.

``scenario.toml``
    The scenario that produced the run. Keys read by the evaluation: ``name``, ``seed``,
    ``[network] nodes``, ``[protocol] multicast`` (bool), ``[protocol] cutoff`` (bool), ``[workload] kind``.
``summary.json``
    The simulator's own summary, computed with :func:`p2pubsub.trace.summary.summarize` (so it uses the
    definitions below); at least ``nodes``, ``subscriptions``, ``events``, ``latency_ms``, ``bytes_per_node``.
``messages.parquet`` (:data:`MESSAGES`)
    One row per network message. ``id`` is unique in the run. ``parent_id`` is the network message whose
    receipt caused this one, null when the chain starts at a client action (a subscribe or publish call) or
    at a timer. ``received_at`` is null when the message was lost (e.g. sent to a crashed node).
    ``event_id`` / ``subscription_id`` name the event or subscription the message works for, if any.
``subscriptions.parquet`` (:data:`SUBSCRIPTIONS`)
    One row per subscribe call. ``installed_at`` is null if the install never completed; ``cause_id`` is the
    last network message of the causal chain that completed the install (null: completed with no message).
``events.parquet`` (:data:`EVENTS`)
    One row per publish call.
``deliveries.parquet`` (:data:`DELIVERIES`)
    One row per notification delivered to a subscriber; ``cause_id`` is the last network message of the
    chain that produced it (null: publisher, matching and subscriber were all local).
``nodes.parquet`` (:data:`NODES`)
    ``node`` -> ``host`` (row of the latency model) and ``country`` (ISO code, if the model has one).
``latency.parquet`` (:data:`LATENCY`)
    The one-way latency matrix the simulator used, over the hosts in use (ms; a missing pair means the
    simulator never needed it).

Message types and phases (:data:`PHASE_OF_TYPE`, :func:`phase_of`)
------------------------------------------------------------------
- subscription phase: ``ProbeSub``, ``InsertSub``, ``SubInstalled``, ``LeafUpdate``, ``TransferSub``,
  ``Unsubscribe`` (the thesis's Fig. 4.2 counts ProbeSub, InsertSub, LeafUpdate and TransferSub; it has no
  SubInstalled or Unsubscribe messages);
- event phase: ``ProbePub``, ``ProbePubMulticast``, ``EventDelivery`` (thesis §4.3.2, Fig. 4.4);
- ``Ack`` (transport acknowledgements) and ``dht.<rpc>`` (Kademlia traffic, e.g. ``dht.find_node``) belong
  to neither phase; any other type is ``other``.

Bandwidth (thesis §4.3.1, §4.3.2)
---------------------------------
A node's bandwidth *per subscription* is the bytes it **sent** in subscription-phase messages divided by the
number of subscriptions in the run; *per event* is the bytes it sent in event-phase messages divided by the
number of events. *Probe* bandwidth per event leaves out ``EventDelivery``: the thesis's multicast (Figs
4.5, 4.6) and cut-off (Figs 4.7, 4.8) comparisons exclude delivery messages, because they are sent after
matching. Every node of ``nodes.parquet`` counts, including nodes that sent nothing; lost messages count
(they were sent). We report the mean, 90th percentile and maximum over nodes; KB = 1000 bytes.

Latency
-------
Install latency = ``installed_at - requested_at``; delivery latency = ``delivered_at - published_at``.

Re-timing rule (replay against another latency matrix; :mod:`spark.replay`)
---------------------------------------------------------------------------
For message m sent from node s to node t, with hosts h(s), h(t), and original matrix L_orig:

- processing delay ``d(m) = m.sent_at - p.received_at`` for its parent p; for a root message
  ``d(m) = m.sent_at - a`` where a is the action time: the event's ``published_at`` through ``event_id``
  if set, else the subscription's ``requested_at`` through ``subscription_id``; without either, a root
  keeps ``sent_at``;
- queueing ``q(m) = max(0, m.received_at - m.sent_at - L_orig(h(s), h(t)))`` (0 without link capacities);
- replayed ``sent'(m) = (received'(p) if p else a) + d(m)`` and
  ``received'(m) = sent'(m) + L_new(h(s), h(t)) + q(m)``;
- a delivery's ``delivered_at' = received'(cause) + (delivered_at - cause.received_at)``, unchanged when
  ``cause_id`` is null; an install's ``installed_at'`` likewise.

A root's ``sent'`` equals its ``sent_at`` (``a + (sent_at - a)``), so the rule is additive along a chain:
``received'(m) - received(m) = sum over the chain root..m of delta(k)`` with
``delta(k) = L_new(k) + q(k) - (k.received_at - k.sent_at)``. With ``L_new = L_orig`` every delta is 0 and the
replay reproduces the simulator's times (up to rounding, or where the trace disagrees with its own matrix,
which then shows as a difference). A lost message's replayed receipt stays null.

A worked example, small enough to check by hand, is :func:`p2pubsub.trace.synthetic.tiny_run`.
"""

from __future__ import annotations

import pyarrow as pa

__all__ = [
    "DELIVERIES",
    "DHT_PREFIX",
    "EVENTS",
    "EVENT_PROBE_TYPES",
    "EVENT_TYPES",
    "FILES",
    "LATENCY",
    "MESSAGES",
    "NODES",
    "PHASES",
    "PHASE_OF_TYPE",
    "SCENARIO_FILE",
    "SCHEMAS",
    "SUBSCRIPTIONS",
    "SUBSCRIPTION_TYPES",
    "SUMMARY_FILE",
    "TRACE_VERSION",
    "phase_of",
]

#: Written into each Parquet file's metadata under ``p2pubsub.trace``; bump on incompatible changes.
TRACE_VERSION = "1"

_META = {b"p2pubsub.trace": TRACE_VERSION.encode()}


def _schema(*fields: pa.Field) -> pa.Schema:
    return pa.schema(list(fields), metadata=_META)


def _f(name: str, type_: pa.DataType, nullable: bool = False) -> pa.Field:
    return pa.field(name, type_, nullable=nullable)


MESSAGES = _schema(
    _f("id", pa.int64()),
    _f("parent_id", pa.int64(), True),
    _f("type", pa.string()),
    _f("src", pa.int32()),
    _f("dst", pa.int32()),
    _f("bytes", pa.int32()),
    _f("sent_at", pa.float64()),
    _f("received_at", pa.float64(), True),
    _f("event_id", pa.string(), True),
    _f("subscription_id", pa.string(), True),
)

SUBSCRIPTIONS = _schema(
    _f("subscription_id", pa.string()),
    _f("subscriber", pa.int32()),
    _f("requested_at", pa.float64()),
    _f("installed_at", pa.float64(), True),
    _f("cause_id", pa.int64(), True),
)

EVENTS = _schema(
    _f("event_id", pa.string()),
    _f("publisher", pa.int32()),
    _f("published_at", pa.float64()),
)

DELIVERIES = _schema(
    _f("event_id", pa.string()),
    _f("subscription_id", pa.string()),
    _f("subscriber", pa.int32()),
    _f("publisher", pa.int32()),
    _f("published_at", pa.float64()),
    _f("delivered_at", pa.float64()),
    _f("cause_id", pa.int64(), True),
)

NODES = _schema(
    _f("node", pa.int32()),
    _f("host", pa.int32()),
    _f("country", pa.string(), True),
)

LATENCY = _schema(
    _f("src_host", pa.int32()),
    _f("dst_host", pa.int32()),
    _f("one_way_ms", pa.float64()),
)

#: Table name -> schema. The file of table ``t`` is ``f"{t}.parquet"``.
SCHEMAS: dict[str, pa.Schema] = {
    "messages": MESSAGES,
    "subscriptions": SUBSCRIPTIONS,
    "events": EVENTS,
    "deliveries": DELIVERIES,
    "nodes": NODES,
    "latency": LATENCY,
}

#: Table name -> file name inside a run directory.
FILES: dict[str, str] = {name: f"{name}.parquet" for name in SCHEMAS}
SCENARIO_FILE = "scenario.toml"
SUMMARY_FILE = "summary.json"

SUBSCRIPTION_TYPES = frozenset(
    {"ProbeSub", "InsertSub", "SubInstalled", "LeafUpdate", "TransferSub", "Unsubscribe"}
)
EVENT_PROBE_TYPES = frozenset({"ProbePub", "ProbePubMulticast"})
EVENT_TYPES = EVENT_PROBE_TYPES | {"EventDelivery"}

#: The phases, in report order.
PHASES = ("subscription", "event", "transport", "dht", "other")

#: Exact message type -> phase. ``dht.*`` types are matched by prefix in :func:`phase_of`.
PHASE_OF_TYPE: dict[str, str] = {
    **{t: "subscription" for t in sorted(SUBSCRIPTION_TYPES)},
    **{t: "event" for t in sorted(EVENT_TYPES)},
    "Ack": "transport",
}

DHT_PREFIX = "dht."


def phase_of(message_type: str) -> str:
    """The phase a message type counts toward: subscription, event, transport, dht or other."""
    phase = PHASE_OF_TYPE.get(message_type)
    if phase is not None:
        return phase
    return "dht" if message_type.startswith(DHT_PREFIX) else "other"
