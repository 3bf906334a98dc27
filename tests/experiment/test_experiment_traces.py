"""Per-node trace files (p2pubsub.node.tracefile) and their merge into the Parquet trace format."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pyarrow.parquet as pq
import pytest

from p2pubsub.experiment.traces import TraceSource, merge_traces
from p2pubsub.node.messages import Goodbye, JoinReply, JoinRequest, Resolved, Routed
from p2pubsub.node.tracefile import TraceFile, describe
from p2pubsub.trace import MESSAGES, SCHEMAS
from p2pubsub.tree.messages import SubInstalled
from p2pubsub.tree.treeid import TreeId


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def fake_node(n: int, port: int) -> SimpleNamespace:
    node_id = bytes([n]) * 20
    return SimpleNamespace(id=node_id, host=(node_id, "127.0.0.1", port))


def test_describe_names_what_a_routed_message_carries():
    inner = SubInstalled("sub1", 0, 0, TreeId("s.a", "01"))
    assert describe(Routed(b"k" * 20, inner, ("x", "127.0.0.1", 1), 0)) == ("SubInstalled", None, "sub1")
    assert describe(Goodbye(("x", "127.0.0.1", 1))) == ("Goodbye", None, None)


def test_merge_pairs_kth_sent_with_kth_received_links_causes_and_resolves_reused_ports(tmp_path):
    clock = Clock()
    a, b = fake_node(1, 1001), fake_node(2, 1002)
    c0, c1 = fake_node(3, 1003), fake_node(4, 1003)  # c1 reuses c0's port after c0 died
    files = {k: TraceFile(tmp_path / f"node-{k}.jsonl", flush_interval=0, clock=clock) for k in "ab01"}
    ta, tb, t1 = files["a"], files["b"], files["1"]  # c0 never reads anything
    clock.t = 101.0
    m1 = ta.sent(a, b.host, JoinRequest(a.host), 40, None)
    clock.t = 101.2
    m2 = ta.sent(a, b.host, Resolved(b"k" * 20, a.host), 50, None)
    clock.t = 101.5
    r1 = tb.received(b, ("127.0.0.1", 1001), JoinRequest(a.host))
    m3 = tb.sent(b, a.host, JoinReply(b.host, 2), 30, r1)
    clock.t = 101.6
    tb.received(b, ("127.0.0.1", 1001), Resolved(b"k" * 20, a.host))
    clock.t = 102.0
    r3 = ta.received(a, ("127.0.0.1", 1002), JoinReply(b.host, 2))
    clock.t = 103.0
    ta.sent(a, c0.host, Goodbye(a.host), 20, None)  # c0 crashes before it reads this
    clock.t = 107.0
    ta.sent(a, c1.host, Goodbye(a.host), 20, r3)
    clock.t = 107.1
    t1.received(c1, ("127.0.0.1", 1001), Goodbye(a.host))
    ta.delivered(a, "sub1", SimpleNamespace(event_id="ev1", publisher=b.host, published_at=101.0), 107.2, r3)
    for f in files.values():
        f.close()
    assert (m1, m2, m3, r3) == (0, 1, 1, 2)  # node-local ids: a node's sent and received rows, counted together
    sources = [TraceSource(0, tmp_path / "node-a.jsonl", ("127.0.0.1", 1001), 100.0, math.inf),
               TraceSource(1, tmp_path / "node-b.jsonl", ("127.0.0.1", 1002), 100.0, math.inf),
               TraceSource(2, tmp_path / "node-0.jsonl", ("127.0.0.1", 1003), 100.0, 105.0),
               TraceSource(3, tmp_path / "node-1.jsonl", ("127.0.0.1", 1003), 106.0, math.inf)]
    stats = merge_traces(sources, 100.0, tmp_path / "run")
    msgs = pq.read_table(tmp_path / "run" / "messages.parquet")
    assert msgs.schema.equals(MESSAGES, check_metadata=False)
    rows = msgs.to_pylist()
    assert [(r["type"], r["src"], r["dst"]) for r in rows] == [
        ("JoinRequest", 0, 1), ("Resolved", 0, 1), ("Goodbye", 0, 2), ("Goodbye", 0, 3), ("JoinReply", 1, 0)]
    assert [r["id"] for r in rows] == [0, 1, 2, 3, 4]
    assert [r["received_at"] for r in rows] == pytest.approx([1.5, 1.6, None, 7.1, 2.0])
    assert [r["sent_at"] for r in rows] == pytest.approx([1.0, 1.2, 3.0, 7.0, 1.5])
    assert rows[2]["received_at"] is None and rows[3]["dst"] == 3  # c0 died first; c1 got the later one
    assert rows[4]["parent_id"] == 0 and rows[3]["parent_id"] == 4  # JoinReply <- JoinRequest; Goodbye <- JoinReply
    assert stats["type_mismatches"] == 0
    assert stats["never_received"] == 1 and stats["unmatched_received"] == 0 and stats["parent_linked"] == 2
    deliveries = pq.read_table(tmp_path / "run" / "deliveries.parquet").to_pylist()
    assert deliveries == [{"event_id": "ev1", "subscription_id": "sub1", "subscriber": 0, "publisher": 1,
                           "published_at": 1.0, "delivered_at": pytest.approx(7.2), "cause_id": 4}]
    for name in SCHEMAS:
        assert (tmp_path / "run" / f"{name}.parquet").exists()


def test_merge_counts_receipts_that_do_not_pair_up(tmp_path):
    clock = Clock()
    a, b = fake_node(1, 1001), fake_node(2, 1002)
    ta = TraceFile(tmp_path / "a.jsonl", flush_interval=0, clock=clock)
    tb = TraceFile(tmp_path / "b.jsonl", flush_interval=0, clock=clock)
    ta.sent(a, b.host, Goodbye(a.host), 20, None)
    tb.received(b, ("127.0.0.1", 1001), JoinRequest(a.host))  # not what a sent
    tb.received(b, ("127.0.0.1", 1001), Goodbye(a.host))  # a's row for this one was lost (SIGKILL)
    ta.close()
    tb.close()
    with open(tmp_path / "b.jsonl", "a") as f:
        f.write('["s", 9, 1')  # a line cut short
    sources = [TraceSource(0, tmp_path / "a.jsonl", ("127.0.0.1", 1001), 0.0, math.inf),
               TraceSource(1, tmp_path / "b.jsonl", ("127.0.0.1", 1002), 0.0, math.inf)]
    stats = merge_traces(sources, 100.0, tmp_path / "run")
    assert (stats["type_mismatches"], stats["unmatched_received"], stats["bad_lines"]) == (1, 1, 1)
