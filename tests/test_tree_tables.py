"""LeafRoutingTable and the vectorised leaf store against brute force."""

import math
import random

from hypothesis import given
from hypothesis import strategies as st

from p2pubsub.model import Absent, Schema, parse_filter
from p2pubsub.tree import Space, SubEntry, Target
from p2pubsub.tree.leafstore import LeafStore, coordinates
from p2pubsub.tree.routing import LeafRoutingTable

SPACE = Space("s.a", 0.0, 100.0, margin=0.01)


def grow(seed: int, own: str, splits: int) -> list[str]:
    """A random sequence of splits in the subtree of ``own`` (each split node is a leaf at that time)."""
    rng = random.Random(seed)
    leaves = [own + "0", own + "1"]
    order = []
    for _ in range(splits):
        leaf = leaves.pop(rng.randrange(len(leaves)))
        order.append(leaf)
        leaves += [leaf + "0", leaf + "1"]
    return order


@given(seed=st.integers(0, 10**6), splits=st.integers(0, 40), drop=st.floats(0, 1), own=st.text("01", max_size=4))
def test_routing_table_partitions_the_subtree_whatever_updates_arrive(seed, splits, drop, own):
    """Updates may be lost or reordered: the table stays a partition of the node's area into real nodes."""
    order = grow(seed, own, splits)
    rng = random.Random(seed)
    delivered = [s for s in order if rng.random() >= drop]
    rng.shuffle(delivered)
    lrt = LeafRoutingTable(own)
    for s in delivered:
        lrt.learn_split(s)
    existing = {own + "0", own + "1"} | {s + b for s in order for b in "01"}
    assert lrt.entries <= existing  # only nodes that exist
    for _ in range(50):  # every point of the node's area is covered by exactly one entry
        point = (rng.uniform(-0.01, 100.01), rng.uniform(-0.01, 100.01))
        if not SPACE.area(own).contains(point):
            continue
        holders = [e for e in lrt.entries if SPACE.area(e).contains(point)]
        assert len(holders) == 1 and lrt.locate(SPACE, point) == holders[0]
    if len(delivered) == len(order):  # with every update, in any order, it knows the true leaves
        assert lrt.entries == existing - set(order)


def test_routing_table_region_query_matches_brute_force():
    rng = random.Random(5)
    lrt = LeafRoutingTable("")
    for s in grow(11, "", 200):
        lrt.learn_split(s)
    for _ in range(100):
        v = rng.uniform(0, 100)
        target = Target(v, v, rng.choice([math.inf, 10.0]))
        scope = "".join(rng.choice("01") for _ in range(rng.randrange(0, 6)))
        got = lrt.region(SPACE, target, scope)
        want = {e for e in lrt.entries if e.startswith(scope) and target.hits(SPACE.area(e))}
        covering = [e for e in lrt.entries if scope.startswith(e)]
        if covering:
            assert got == ([(covering[0], scope)] if target.hits(SPACE.area(scope)) else [])
        else:
            assert {p for p, _ in got} == want and all(p == s for p, s in got)


SCHEMA = Schema.from_dict(
    "s",
    {
        "attributes": {
            "a": {"type": "float", "min": 0, "max": 100},
            "b": {"type": "int", "min": -5, "max": 5},
            "c": {"type": "string"},
        }
    },
)
grid = st.sampled_from([0.0, 12.5, 25.0, 50.0, 99.5, 100.0])
a_preds = st.fixed_dictionaries({}, optional={"ge": grid, "gt": grid, "le": grid, "lt": grid, "eq": grid})
b_preds = st.fixed_dictionaries(
    {}, optional={"ge": st.integers(-5, 5), "lt": st.integers(-5, 5), "eq": st.integers(-5, 5)}
)
c_preds = st.one_of(
    st.builds(lambda s: {"eq": s}, st.sampled_from(["x", "xy", "longer-than-six-bytes", "longer-than-six-bits"])),
    st.builds(lambda s: {"prefix": s}, st.sampled_from(["", "x", "longer-than-six"])),
)


@st.composite
def subscriptions(draw):
    body = {}
    for name, preds in (("a", a_preds), ("b", b_preds), ("c", c_preds)):
        if draw(st.booleans()):
            p = draw(preds)
            if p:
                body[name] = p
    if not body:
        body["a"] = {"ge": 0.0}
    try:
        return parse_filter(SCHEMA, body)
    except ValueError:
        return parse_filter(SCHEMA, {"a": {"le": 50.0}})


events = st.fixed_dictionaries(
    {},
    optional={
        "a": st.one_of(grid, st.floats(0, 100)),
        "b": st.integers(-5, 5),
        "c": st.sampled_from(["x", "xy", "y", "longer-than-six-bytes", "longer-than-six-bits", "longer-than-sixty"]),
    },
)


def entry(i: int, sub, piece=(0.0, 100.0, True), index=0) -> SubEntry:
    return SubEntry(f"s{i}", 0, index, 1, "home", sub, "a", piece[0], piece[1], piece[2], (piece[0], piece[1]))


@given(subs=st.lists(subscriptions(), min_size=1, max_size=60), evs=st.lists(events, min_size=1, max_size=10),
       absent=st.sampled_from(list(Absent)), removals=st.lists(st.integers(0, 59), max_size=20))
def test_leaf_store_matches_exactly_like_the_naive_loop(subs, evs, absent, removals):
    store = LeafStore()
    live = {}
    for i, sub in enumerate(subs):
        e = entry(i, sub)
        assert store.add(e) and not store.add(e)
        live[e.key] = e
    for r in removals:
        key = (f"s{r}", 0, 0)
        assert (store.remove(key) is not None) == (key in live)
        live.pop(key, None)
    assert len(store) == len(live)
    for values in evs:
        got = {e.key for e in store.match(values, coordinates(values), "a", absent)}
        want = {k for k, e in live.items() if e.subscription.matches(values, absent)}
        assert got == want


def test_leaf_store_counts_only_the_piece_holding_the_value():
    sub = parse_filter(SCHEMA, {"a": {"ge": 0.0, "le": 30.0}})
    store = LeafStore()
    pieces = [(0.0, 10.0, False), (10.0, 20.0, False), (20.0, 30.0, True)]
    for i, p in enumerate(pieces):
        store.add(SubEntry("s", 0, i, 3, "h", sub, "a", p[0], p[1], p[2], (p[0], p[1])))
    for v, piece in ((0.0, 0), (10.0, 1), (19.99, 1), (20.0, 2), (30.0, 2)):
        assert [e.piece for e in store.match({"a": v}, {"a": v}, "a", Absent.NO_MATCH)] == [piece]
    # the base attribute absent (match semantics): piece 0 stands for the whole subscription
    assert [e.piece for e in store.match({"b": 1}, {"b": 1.0}, "a", Absent.MATCH)] == [0]
    assert store.match({"b": 1}, {"b": 1.0}, "a", Absent.NO_MATCH) == []


def test_leaf_store_partition_by_axis():
    store = LeafStore()
    sub = parse_filter(SCHEMA, {"a": {"ge": 0.0}})
    for i, (x, y) in enumerate([(10, 80), (60, 70), (49.9, 50), (50, 51)]):
        store.add(SubEntry(f"s{i}", 0, 0, 1, "h", sub, "a", x, y, True, (float(x), float(y))))
    low, high = store.partition(True, 50.0)
    assert {e.sub_id for e in low} == {"s0", "s2"} and {e.sub_id for e in high} == {"s1", "s3"}
    low, high = store.partition(False, 70.0)
    assert {e.sub_id for e in low} == {"s2", "s3"}
