"""Pure parts of the SCOT node: overlay definitions, placement, slot leases, the wire, termination detection."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from overlays import BrokerId, Scot
from overlays.messages import Phase, Publication
from overlays.octopia import Advertisement, AdvUid, Civ, CivSet, PublicationRoute, SubscriptionBroadcast
from overlays.padres.messages import Tid, TidPublication, TidSubscription, TidUnadvertisement
from overlays.workload import small_schema
from p2pubsub.model import Event, parse_filter
from p2pubsub.node.wire import WireError
from p2pubsub.scot.definition import (
    DefinitionError,
    OverlayDefinition,
    cluster_of,
    id_in_cluster,
    region_order,
    seq_base,
    sub_id,
    tenure_of,
)
from p2pubsub.scot.echo import Echo
from p2pubsub.scot.messages import Hello, SlotReply, Tracked
from p2pubsub.scot.store import GRANTED, LOST, RELEASED, RENEWED, TAKEN, OverlayStore, SlotStore
from p2pubsub.scot.wire import SCOT_REGISTRY, decode, encode

TREE = (("A", "B"), ("B", "C"), ("B", "D"))


def test_definition_is_canonical_and_round_trips():
    a = OverlayDefinition.build(TREE, 3)
    b = OverlayDefinition.build([("D", "B"), ("C", "B"), ("B", "A")], 3)
    assert a == b and a.to_json() == b.to_json()
    assert OverlayDefinition.from_json(a.to_json()) == a
    assert a.scot.describe()["brokers"] == 12
    assert OverlayDefinition.build(TREE, 3, routing="padres").to_json() != a.to_json()
    one = OverlayDefinition.from_cli("X", 2)
    assert one.vertices == ("X",) and one.positions == 2
    se = OverlayDefinition.from_cli("s_e", 4)
    assert se.scot.describe()["brokers"] == Scot.s_e().describe()["brokers"] == 56
    assert OverlayDefinition.from_cli("A-B,B-C,B-D", 2) == OverlayDefinition.build(TREE, 2)


@pytest.mark.parametrize("edges, clusters, words", [
    ((("A", "B"), ("B", "C"), ("C", "A")), 2, "cycle"),
    ((("A", "B"), ("C", "D")), 2, "components"),
    (TREE, 0, "clusters"),
    (TREE, 65, "clusters"),
    ((("A", "B.1"),), 2, "region label"),
    ((("A", "A"),), 2, "self-loop"),
])
def test_definition_errors_name_the_problem(edges, clusters, words):
    with pytest.raises(DefinitionError) as e:
        OverlayDefinition.build(edges, clusters)
    assert words in str(e.value)


def test_definition_doc_errors():
    for doc in ([], {"clusters": 2}, {"acyclic_factor": {"edges": [["A", "B"]]}, "clusters": 2, "x": 1},
                {"acyclic_factor": {"edges": [["A", "B"]]}, "clusters": 2, "routing": "siena"},
                {"acyclic_factor": {"edges": [["A", "B"]]}, "clusters": 2, "tau": -1}):
        with pytest.raises(DefinitionError):
            OverlayDefinition.from_doc(doc)


def test_placement_functions():
    rng = random.Random(1)
    ids = [rng.getrandbits(160).to_bytes(20, "big") for _ in range(4000)]
    counts = Counter(cluster_of(i, 4) for i in ids)
    assert set(counts) == {0, 1, 2, 3} and min(counts.values()) > 850  # uniform ids fill clusters evenly
    for c in range(5):
        assert cluster_of(id_in_cluster(rng.getrandbits(160), c, 5), 5) == c
    assert cluster_of(id_in_cluster((1 << 160) - 1, 4, 5), 5) == 4
    firsts = Counter(region_order(i, "ABCD")[0] for i in ids[:400])
    assert len(firsts) == 4 and min(firsts.values()) > 60  # nodes start at different slots
    assert sorted(region_order(ids[0], "ABCD")) == list("ABCD")


def test_tenure_names():
    b = BrokerId("F", 3)
    sid = sub_id(b, 7, 12)
    assert tenure_of(sid) == (b, 7)
    assert tenure_of("x") is None and tenure_of("a.b.c.d") is None
    assert seq_base(7) >> 32 == 7 and seq_base(8) > seq_base(7) + 10**6


def test_slot_claims_cannot_be_won_twice():
    s = SlotStore()
    a, b = (b"a" * 20, "10.0.0.1", 1), (b"b" * 20, "10.0.0.2", 2)
    status, rec = s.claim("ov/A/0", a, 0, 10.0, now=0.0)
    assert status == GRANTED and rec.epoch == 1 and rec.holder == a
    assert s.claim("ov/A/0", b, 0, 10.0, now=5.0)[0] == TAKEN
    assert s.claim("ov/A/0", a, 0, 10.0, now=5.0)[0] == TAKEN  # a fresh claim by the holder is no renewal
    assert s.claim("ov/A/0", b, 1, 10.0, now=5.0)[0] == LOST  # nobody renews another's tenure
    status, rec = s.claim("ov/A/0", a, 1, 10.0, now=9.0)
    assert status == RENEWED and rec.expires == 19.0 and rec.epoch == 1
    assert s.claim("ov/A/0", b, 0, 10.0, now=18.9)[0] == TAKEN
    status, rec = s.claim("ov/A/0", b, 0, 10.0, now=19.0)  # the lease ran out: a new tenure
    assert status == GRANTED and rec.epoch == 2 and rec.holder == b
    assert s.claim("ov/A/0", a, 1, 10.0, now=19.5)[0] == LOST  # the old tenure cannot come back
    assert s.release("ov/A/0", a[0], 2, now=20.0)[0] != RELEASED
    assert s.release("ov/A/0", b[0], 2, now=20.0)[0] == RELEASED
    status, rec = s.claim("ov/A/0", a, 0, 10.0, now=20.0)
    assert status == GRANTED and rec.epoch == 3


def test_slot_replicas_keep_the_newest_copy_and_never_shorten_a_lease():
    primary, replica = SlotStore(), SlotStore()
    h = (b"h" * 20, "10.0.0.1", 1)
    _, rec = primary.claim("s", h, 0, 10.0, now=100.0)
    grant = rec.to_doc(now=100.0)
    _, rec = primary.claim("s", h, 1, 10.0, now=105.0)
    renewal = rec.to_doc(now=105.5)
    assert replica.adopt("s", renewal, now=3.0)  # another clock: remaining time counts, from the copy's arrival
    assert not replica.adopt("s", grant, now=3.1)  # an older copy arriving late changes nothing
    copy = replica.get("s")
    assert copy.epoch == 1 and copy.holder == h and copy.expires == pytest.approx(3.0 + 9.5)
    primary.release("s", h[0], 1, now=106.0)
    assert replica.adopt("s", primary.get("s").to_doc(106.0), now=3.2)
    assert replica.get("s").live_holder(3.2) is None


def test_overlay_store_is_compare_and_set():
    s = OverlayStore()
    assert s.put("ov", "{1}") == ("created", "{1}")
    assert s.put("ov", "{1}") == ("identical", "{1}")
    assert s.put("ov", "{2}") == ("conflict", "{1}")


def test_every_overlay_message_survives_the_wire():
    schema = small_schema()
    f = parse_filter(schema, {"x": {"ge": 1, "le": 5}, "s": {"prefix": "a"}, "y": {"gt": 2.5}})
    b, c = BrokerId("A", 1), BrokerId("B", 0)
    pub = Publication("e.1@1.5", "n@127.0.0.1:9", Event("T", {"x": 3, "y": 5e-324, "s": "ab"}))
    messages = [
        Advertisement(AdvUid(b, seq_base(3) + 1), f, Civ.of([1])),
        CivSet((AdvUid(b, 1), AdvUid(c, 2)), 2, Phase.ADVERTISE),
        SubscriptionBroadcast("A.1.1.0", f),
        PublicationRoute(pub, 1, Civ(0b101), 2),
        TidSubscription("A.1.1.0", f, b, (Tid(b, 1), Tid(c, 9))),
        TidPublication(pub, Tid(b, 2), (b, c), 1, 3),
        TidPublication(pub, Tid(b, 2), None, 0, 1),
        TidUnadvertisement(Tid(c, seq_base(2))),
        Hello(b, 3, True),
        Tracked(SubscriptionBroadcast("x", f), 7),
        SlotReply(1, "taken", (b"\x01" * 20, "127.0.0.1", 5), 3, 1.0),
        SlotReply(1, "found", None, 0, 0.0),
    ]
    for m in messages:
        back = decode(encode(m))
        assert back == m and type(back) is type(m)
    tid = decode(encode(messages[4])).tids[0]
    assert type(tid) is Tid and type(tid.host) is BrokerId  # NamedTuples come back as themselves
    assert type(decode(encode(messages[5])).destinations[1]) is BrokerId
    assert SCOT_REGISTRY.tag_of(Advertisement) == 70 and SCOT_REGISTRY.tag_of(Hello) == 49
    with pytest.raises(WireError):
        encode(Hello(("A", 1), 3, True))  # a plain tuple is not a BrokerId
    with pytest.raises(WireError):
        decode(encode(Hello(b, 3, True))[:-1])


def test_echo_completes_when_every_branch_answered():
    e = Echo()
    t = e.open("client")
    e.sent(t, "B")
    e.sent(t, "B")
    e.sent(t, "C")
    assert e.settle(t) == (False, None)
    assert e.answered(t, "B") == (False, None)
    assert e.answered(t, "X") == (False, None)  # nothing awaited from X
    assert e.answered(t, "B") == (False, None)
    assert e.answered(t, "C") == (True, "client")
    assert len(e) == 0
    t1, t2 = e.open("one"), e.open("two")
    e.sent(t1, "B")
    e.sent(t2, "B")
    e.sent(t2, "C")
    assert e.release("B") == ["one"]  # B is gone: stop waiting for it
    assert e.answered(t2, "C") == (True, "two")
    t3 = e.open("none")
    assert e.settle(t3) == (True, "none")
