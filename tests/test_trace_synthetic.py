"""Fake runs: deterministic, causally consistent, every figure's variants."""

from __future__ import annotations

import pyarrow.parquet as pq

from p2pubsub.trace.synthetic import SyntheticSpec, generate_run, generate_suite


def _tables(d):
    return {
        n: pq.read_table(d / f"{n}.parquet")
        for n in ("messages", "deliveries", "subscriptions", "nodes", "latency")
    }


def test_same_seed_same_run(tmp_path):
    a = generate_run(tmp_path / "a", SyntheticSpec(nodes=8, seed=7))
    b = generate_run(tmp_path / "b", SyntheticSpec(nodes=8, seed=7))
    assert a == b
    ta, tb = _tables(tmp_path / "a"), _tables(tmp_path / "b")
    assert all(ta[n].equals(tb[n]) for n in ta)


def test_times_obey_the_latency_matrix_and_causality(tmp_path):
    generate_run(tmp_path, SyntheticSpec(nodes=10, seed=3, events=15))
    t = _tables(tmp_path)
    host = dict(zip(*t["nodes"].select(["node", "host"]).to_pydict().values(), strict=True))
    lat = {(r["src_host"], r["dst_host"]): r["one_way_ms"] / 1000 for r in t["latency"].to_pylist()}
    msgs = {m["id"]: m for m in t["messages"].to_pylist()}
    for m in msgs.values():
        if m["received_at"] is not None:
            assert m["received_at"] - m["sent_at"] >= lat[(host[m["src"]], host[m["dst"]])] - 1e-12
        if m["parent_id"] is not None:
            parent = msgs[m["parent_id"]]
            assert parent["received_at"] is not None and m["sent_at"] >= parent["received_at"]
    for d in t["deliveries"].to_pylist():
        assert d["delivered_at"] > d["published_at"]
        if d["cause_id"] is not None:
            assert d["delivered_at"] >= msgs[d["cause_id"]]["received_at"]
    types = set(t["messages"].column("type").to_pylist())
    assert {"ProbeSub", "InsertSub", "SubInstalled", "EventDelivery", "Ack", "dht.find_node"} <= types
    assert t["messages"].column("received_at").null_count > 0  # a crashed node loses messages
    assert t["deliveries"].column("cause_id").null_count > 0  # event 0 is delivered locally
    assert t["subscriptions"].column("cause_id").null_count > 0  # subscription 0 is installed locally


def test_suite_has_every_variant(tmp_path):
    dirs = generate_suite(tmp_path, sizes=(8, 10))
    assert [d.name for d in dirs] == ["n8-mc1-co1-s1", "n10-mc1-co1-s2", "n8-mc0-co1-s1", "n8-mc1-co0-s1"]
    types = {d.name: set(pq.read_table(d / "messages.parquet").column("type").to_pylist()) for d in dirs}
    assert "ProbePubMulticast" in types["n8-mc1-co1-s1"] and "ProbePubMulticast" not in types["n8-mc0-co1-s1"]
