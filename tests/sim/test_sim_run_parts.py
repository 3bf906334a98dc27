"""Pieces of `p2pubsub sim`: the oracle against slow matching, trace typing, the msgpack swap, shared frames,
and the level refresh that makes greedy XOR routing agree on who is responsible."""

from __future__ import annotations

import random

import msgpack
import pytest
import umsgpack

from p2pubsub.model import Schema, parse_event, parse_filter
from p2pubsub.node.messages import Routed
from p2pubsub.scenario import parse_scenario
from p2pubsub.sim.kademlia_patch import _FastMsgpack
from p2pubsub.sim.oracle import Oracle
from p2pubsub.sim.runner import Simulation, run_scenario
from p2pubsub.sim.summary import comparable
from p2pubsub.sim.tracing import describe
from p2pubsub.tree import EventDelivery, ProbePub, PubEvent, TreeId
from p2pubsub.tree.space import Space

SCHEMA = {"attributes": {"x": {"type": "float", "min": 0, "max": 100}, "n": {"type": "int", "min": 0, "max": 9},
                         "s": {"type": "string"}}}


@pytest.mark.parametrize("absent", ["no_match", "match"])
def test_oracle_agrees_with_subscription_matches(absent):
    schema = Schema.from_dict("t", {**SCHEMA, "absent": absent})
    rng = random.Random(7)
    oracle = Oracle(schema)
    for i in range(60):
        body = {}
        if rng.random() < 0.7:
            lo = rng.uniform(0, 85)
            body["x"] = {"gt" if rng.random() < 0.3 else "ge": lo, "lt" if rng.random() < 0.3 else "le": lo + 15}
        if rng.random() < 0.4:
            body["n"] = {"eq": rng.randrange(10)}
        if rng.random() < 0.4 or not body:
            body["s"] = {"eq": rng.choice("abc")} if rng.random() < 0.6 else {"prefix": rng.choice(["a", "b", ""])}
        oracle.subscription(f"s{i}", i % 5, parse_filter(schema, body))
    published = {}
    for e in range(80):
        values = {"x": rng.choice([rng.uniform(0, 100), 50.0]), "n": rng.randrange(10),
                  "s": rng.choice(["a", "ab", "c"])}
        for k in list(values):
            if rng.random() < 0.2 and len(values) > 1:
                del values[k]
        oracle.event(f"e{e}", parse_event(schema, values).values)
        published[f"e{e}"] = float(e)
    installed = {f"s{i}": 10.0 + i for i in range(60)}  # subscription i is installed before events 11 + i on
    gone = {3: 50.0}  # node 3 crashed at time 50: its subscriptions are owed events published before
    owed = {(f"e{e}", f"s{i}") for e in range(80) for i in range(60)
            if oracle.matches(e, i) and installed[f"s{i}"] < e and not (i % 5 == 3 and e >= 50)}
    matching = {(f"e{e}", f"s{i}") for e in range(80) for i in range(60) if oracle.matches(e, i)}
    assert len(owed) > 100
    delivered = [*sorted(owed)[5:], sorted(owed)[9], *sorted(matching - owed)[:2]]
    wrong = next((f"e{e}", f"s{i}") for e in range(80) for i in range(60) if not oracle.matches(e, i))
    v = oracle.verdict(installed, published, gone, [*delivered, wrong, ("e0", "nobody")])
    assert v.expected == len(owed)
    assert v.missing == 5 and v.duplicate == 1 and v.false_positive == 1 and v.unknown == 1
    assert v.unexpected == 2
    assert v.delivered == len(set(delivered)) + 1
    assert set(v.examples["missing"]) == set(sorted(owed)[:5])
    missed = sorted(owed)[:5]
    assert v.missing_events == len({e for e, _ in missed})
    assert v.missing_subscriptions == len({s for _, s in missed})
    tenths = [0] * 10
    for e, _ in missed:
        tenths[int(e[1:]) * 10 // 80] += 1
    assert v.missing_by_tenth == tenths and v.as_dict()["missing_by_tenth"] == tenths

    # misses spread over the whole event phase: every tenth counts its own
    spread = sorted(owed, key=lambda p: (int(p[0][1:]), p[1]))[::7]
    v = oracle.verdict(installed, published, gone, sorted(owed - set(spread)))
    assert v.missing == len(spread) and v.missing_events == len({e for e, _ in spread})
    tenths = [0] * 10
    for e, _ in spread:
        tenths[int(e[1:]) * 10 // 80] += 1
    assert v.missing_by_tenth == tenths and sum(t > 0 for t in tenths) >= 8


def test_trace_types_look_inside_routed_messages():
    space = Space("t.x", 0.0, 100.0, 0.01, 25.0)
    event = PubEvent("ev1", "t", {"x": 1.0}, "no_match", 0.0, (b"\0" * 20, "10.0.0.1", 8468))
    probe = ProbePub(TreeId("t.x", "01"), space, "01", None, event)  # the probe area plays no part here
    assert describe(Routed(b"k" * 20, probe, (b"\0" * 20, "10.0.0.1", 1), 2)) == ("ProbePub", "ev1", None)
    assert describe(EventDelivery(event, (("s1", 0),))) == ("EventDelivery", "ev1", "s1")
    assert describe(EventDelivery(event, (("s1", 0), ("s2", 0)))) == ("EventDelivery", "ev1", None)


def test_msgpack_swap_writes_and_reads_what_umsgpack_does():
    rng = random.Random(3)
    contacts = [(rng.randbytes(20), f"10.0.{i}.{i}", 8468) for i in range(20)]
    for value in (["find_node", (rng.randbytes(20), rng.randbytes(20))], ["ping", (rng.randbytes(20),)], contacts,
                  [list(c) for c in contacts], rng.randbytes(20), ["stun", ()], True, None, 2**40, -7, "x" * 40,
                  {"value": b"v"}, 1.25):
        data = umsgpack.packb(value)
        assert _FastMsgpack.packb(value) == data == msgpack.packb(value, use_bin_type=True)
        assert _FastMsgpack.unpackb(data) == umsgpack.unpackb(data)


TINY = """
name = "tiny"
seed = 5
drain_s = 5
[network]
nodes = 60
latency = "synthetic"
join_interval_ms = 5
stabilize_s = 2
[protocol]
leaf_capacity = [3, 6]
replicas = 1
[workload]
kind = "thesis"
subscriptions_per_node = 1
subscribe_interval_ms = 20
events = 60
publish_interval_ms = 20
settle_s = 1
"""


def test_shared_frames_change_nothing(tmp_path):
    sc = parse_scenario(TINY)
    real = run_scenario(sc, tmp_path / "real", share_frames=False)
    shared = run_scenario(sc, tmp_path / "shared", share_frames=True)
    assert comparable(real) == comparable(shared)
    assert real["deliveries"]["missing"] == 0 and real["deliveries"]["expected"] > 20


def test_every_node_knows_every_nonempty_level(tmp_path):
    sim = Simulation(parse_scenario(TINY), tmp_path)
    sim.run()
    ids = [int.from_bytes(n.node.id, "big") for n in sim.nodes]

    def level(a: int, b: int) -> int:
        return 160 - (a ^ b).bit_length()

    for i, n in enumerate(sim.nodes):
        have = {level(ids[i], c) for c, _ in n.node.hood._contacts}
        need = {level(ids[i], ids[j]) for j in range(len(ids)) if j != i}
        assert need <= have, f"node {i} knows no node of levels {sorted(need - have)}"


def test_failed_client_commands_are_counted_by_reason():
    from p2pubsub.node.runtime import NodeError
    from p2pubsub.sim.engine import Counts

    counts = Counts()
    for _ in range(2):
        counts.failed("subscribe", NodeError("subscription not installed within 30.0 s"))
    counts.failed("publish", TimeoutError())
    assert counts.reasons == {"subscribe: NodeError: subscription not installed within 30.0 s": 2,
                              "publish: TimeoutError: ": 1}
