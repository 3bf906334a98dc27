"""The trace schema: columns, nullability, message phases."""

from __future__ import annotations

import pyarrow as pa

from p2pubsub.trace import schema


def test_phase_of_every_message_type():
    for t in ("ProbeSub", "InsertSub", "SubInstalled", "LeafUpdate", "TransferSub", "Unsubscribe"):
        assert schema.phase_of(t) == "subscription"
    for t in ("ProbePub", "ProbePubMulticast", "EventDelivery"):
        assert schema.phase_of(t) == "event"
    assert schema.phase_of("Ack") == "transport"
    assert schema.phase_of("dht.find_node") == schema.phase_of("dht.store") == "dht"
    assert schema.phase_of("Mystery") == "other"
    assert schema.EVENT_TYPES - {"EventDelivery"} == schema.EVENT_PROBE_TYPES


def test_messages_columns_and_nulls():
    m = schema.MESSAGES
    assert m.names == [
        "id",
        "parent_id",
        "type",
        "src",
        "dst",
        "bytes",
        "sent_at",
        "received_at",
        "event_id",
        "subscription_id",
    ]
    assert m.field("id").type == pa.int64() and not m.field("id").nullable
    assert m.field("parent_id").nullable and m.field("received_at").nullable
    assert m.field("src").type == pa.int32() and m.field("sent_at").type == pa.float64()
    assert m.metadata[b"p2pubsub.trace"] == schema.TRACE_VERSION.encode()


def test_every_table_has_a_file():
    assert set(schema.FILES) == {"messages", "subscriptions", "events", "deliveries", "nodes", "latency"}
    assert (
        schema.DELIVERIES.field("cause_id").nullable and schema.SUBSCRIPTIONS.field("installed_at").nullable
    )
    assert schema.LATENCY.names == ["src_host", "dst_host", "one_way_ms"]
