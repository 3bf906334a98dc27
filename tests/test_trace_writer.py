"""TraceWriter: Parquet files with the schemas, nulls, late receipts, the summary's definitions."""

from __future__ import annotations

import json
import tomllib

import pyarrow.parquet as pq
import pytest

from p2pubsub.trace import SCHEMAS, TraceWriter
from p2pubsub.trace.synthetic import tiny_run


def test_writes_every_table_with_its_schema(tmp_path):
    w = TraceWriter(
        tmp_path, scenario={"name": "t", "network": {"nodes": 2}, "protocol": {"multicast": True}}
    )
    w.node(0, 5, "CA")
    w.node(1, 6, None)
    w.latency(5, 6, 12.5)
    w.subscription("s", 0, 1.0)
    a = w.message("ProbeSub", 0, 1, 99, 1.0, None, None, None, "s")
    b = w.message("Ack", 1, 0, 10, 1.5, 1.6, a)
    w.received(a, 1.2)
    w.installed("s", 1.7, b)
    w.event("e", 1, 2.0)
    lost = w.message("ProbePub", 1, 0, 50, 2.0, None, None, "e")
    w.delivery("e", "s", 0, 1, 2.0, 2.1, None)
    summary = w.close({"wall_s": 3})
    assert (a, b, lost) == (0, 1, 2)
    for name, schema in SCHEMAS.items():
        assert pq.read_schema(tmp_path / f"{name}.parquet").equals(schema, check_metadata=True), name
    msgs = pq.read_table(tmp_path / "messages.parquet").to_pydict()
    assert msgs["parent_id"] == [None, 0, None]
    assert msgs["received_at"] == [1.2, 1.6, None]
    assert msgs["subscription_id"] == ["s", None, None]
    subs = pq.read_table(tmp_path / "subscriptions.parquet").to_pylist()
    assert subs == [
        {"subscription_id": "s", "subscriber": 0, "requested_at": 1.0, "installed_at": 1.7, "cause_id": 1}
    ]
    assert pq.read_table(tmp_path / "nodes.parquet").to_pydict()["country"] == ["CA", None]
    scenario = tomllib.loads((tmp_path / "scenario.toml").read_text())
    assert scenario["network"]["nodes"] == 2 and scenario["protocol"]["multicast"] is True
    assert json.loads((tmp_path / "summary.json").read_text()) == summary
    assert summary["wall_s"] == 3 and summary["messages"]["lost"] == 1


def test_required_column_may_not_be_null(tmp_path):
    w = TraceWriter(tmp_path)
    w.event(None, 0, 1.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"events\.event_id"):
        w.close()


def test_duplicate_subscription_is_refused(tmp_path):
    w = TraceWriter(tmp_path)
    w.subscription("s", 0, 0.0)
    with pytest.raises(ValueError, match="duplicate"):
        w.subscription("s", 1, 0.0)


def test_summary_of_the_tiny_run_by_hand(tmp_path):
    s = tiny_run(tmp_path)
    assert (s["nodes"], s["subscriptions"], s["installed"], s["events"], s["deliveries"]) == (3, 2, 2, 1, 2)
    assert s["latency_ms"]["install"]["mean"] == pytest.approx((69 + 0.5) / 2)
    assert s["latency_ms"]["delivery"]["mean"] == pytest.approx((53 + 21.5) / 2)
    assert s["latency_ms"]["delivery"]["max"] == pytest.approx(53)
    bw = s["bytes_per_node"]
    assert bw["per_subscription"] == pytest.approx({"mean": 350 / 6, "p90": 90.0, "max": 100.0})
    assert bw["per_event"]["mean"] == pytest.approx(650 / 3) and bw["per_event"]["max"] == 450
    assert bw["per_event_probe"]["mean"] == pytest.approx(150.0)
    assert s["messages"]["by_phase"]["dht"] == {"count": 1, "bytes": 100}
    assert s["messages"]["by_phase"]["transport"] == {"count": 1, "bytes": 40}
