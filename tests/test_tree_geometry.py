"""Logic space mapping, areas, targets, tree identifiers, cut-off pieces and probe selection (thesis §3.2-§3.5)."""

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from p2pubsub.tree import CutOff, Interval, Space, Target, TreeConfig, TreeId, point_of, target_area
from p2pubsub.tree.probes import probe_leaf, probe_region

SPACE = Space("s.a", 0.0, 100.0, margin=0.01)
coord = st.floats(-0.01, 100.01, allow_nan=False)


def test_split_alternates_axes_and_bounds():
    root = SPACE.root_area
    left, right = root.split(0)  # level 0 cuts x
    assert left.x == Interval(-0.01, 50.0, True, False) and right.x == Interval(50.0, 100.01, True, True)
    assert left.y == root.y
    low, high = left.split(1)  # level 1 cuts y
    assert low.x == left.x and low.y.hi == 50.0 and not low.y.hi_closed and high.y.lo_closed
    assert SPACE.area("01") == high
    assert left.contains((49.999, 3.0)) and not left.contains((50.0, 3.0)) and right.contains((50.0, 3.0))


@given(x=coord, y=coord, level=st.integers(0, 40))
def test_path_of_lands_in_the_area_that_holds_the_point(x, y, level):
    path = SPACE.path_of((x, y), level)
    assert len(path) == level
    assert SPACE.area(path).contains((x, y))
    # the sibling never holds it: areas of one level are disjoint
    if path:
        sibling = path[:-1] + ("1" if path[-1] == "0" else "0")
        assert not SPACE.area(sibling).contains((x, y))


@given(v=st.floats(0, 100), x=coord, y=coord, width=st.one_of(st.just(math.inf), st.floats(0, 100)),
       path=st.text("01", max_size=12))
def test_target_hits_is_conservative(v, x, y, width, path):
    """A tree node whose area holds a point of the target is always probed (no miss is possible)."""
    target = Target(v, v, width)
    area = SPACE.area(path)
    if area.contains((x, y)) and target.holds((x, y)) and y >= x:
        assert target.hits(area)


def test_target_area_of_a_value_is_the_ranges_holding_it():
    t = target_area(15.0)
    assert t.holds(point_of(10.0, 80.0)) and t.holds(point_of(15.0, 15.0))
    assert not t.holds(point_of(16.0, 80.0)) and not t.holds(point_of(0.0, 14.9))
    clipped = target_area(15.0, width=10.0)
    assert clipped.holds(point_of(10.0, 20.0)) and not clipped.holds(point_of(10.0, 80.0))
    assert not Target(15, 15).hits(SPACE.area("1"))  # x >= 50 > 15


def test_tree_ids():
    t = TreeId("stocks.price", "0110")
    assert str(t) == "stocks.price/0110" and TreeId.parse(str(t)) == t
    assert t.level == 4 and t.parent() == TreeId("stocks.price", "011") and t.child("1").path == "01101"
    assert t.ancestor(2) == TreeId("stocks.price", "01") and TreeId("stocks.price").is_ancestor_of(t)
    assert not TreeId("stocks.price1").is_ancestor_of(TreeId("stocks.price", "1"))
    assert str(TreeId("s.a1", "0")) != str(TreeId("s.a10"))  # the separator prevents the collision
    with pytest.raises(ValueError):
        TreeId("s.a").parent()
    with pytest.raises(ValueError):
        TreeId.parse("s.a/012")


@given(lo=st.floats(0, 100), width=st.floats(0, 100), c=st.floats(0.5, 60), seed=st.integers(0, 2**32),
       probes=st.lists(st.floats(0, 1), min_size=1, max_size=20))
def test_cutoff_pieces_hold_each_value_exactly_once(lo, width, c, seed, probes):
    hi = min(100.0, lo + width)
    pieces = CutOff(c).pieces(lo, hi, random.Random(seed))
    assert pieces[0][0] == lo and pieces[-1][1] == hi and pieces[-1][2]
    for (a, b, closed), nxt in zip(pieces, [*pieces[1:], None], strict=True):
        assert b - a < c or len(pieces) == 1  # below the cut-off line: y = x + h, h < c
        if nxt is not None:
            assert not closed and nxt[0] == b
    for f in [*probes, 0.0, 1.0]:
        v = lo + f * (hi - lo)
        holders = [p for p in pieces if p[0] <= v < p[1] or (p[2] and v == p[1])]
        assert len(holders) == 1


def test_probe_region_is_a_disjoint_cover_of_the_target():
    rng = random.Random(7)
    config = TreeConfig(min_probe_level=2, max_probe_level=10, probe_p=0.5)
    for _ in range(50):
        v = rng.uniform(0, 100)
        target = Target(v, v, rng.choice([math.inf, 25.02]))
        chosen = probe_region(SPACE, target, config, rng)
        assert all(2 <= len(p) <= 10 for p in chosen)
        assert all(not q.startswith(p) for p in chosen for q in chosen if p != q)  # disjoint
        for _ in range(200):  # every target point falls in exactly one chosen node
            x = rng.uniform(max(0.0, v - target.width), v)
            y = rng.uniform(v, min(100.0, x + target.width))
            assert sum(SPACE.area(p).contains((x, y)) for p in chosen) == 1


def test_probe_region_respects_levels_and_probability():
    rng = random.Random(3)
    always = TreeConfig(min_probe_level=3, max_probe_level=3, probe_p=1.0)
    assert {len(p) for p in probe_region(SPACE, Target(50, 50), always, rng)} == {3}
    deep = TreeConfig(min_probe_level=0, max_probe_level=8, probe_p=0.1)
    shallow = TreeConfig(min_probe_level=0, max_probe_level=8, probe_p=0.9)
    n_deep = sum(len(probe_region(SPACE, Target(50, 50), deep, rng)) for _ in range(50))
    n_shallow = sum(len(probe_region(SPACE, Target(50, 50), shallow, rng)) for _ in range(50))
    assert n_deep > 3 * n_shallow


def test_probe_leaf_picks_a_node_on_the_points_path():
    rng = random.Random(1)
    config = TreeConfig(min_probe_level=2, max_probe_level=10)
    for _ in range(100):
        point = (rng.uniform(0, 50), rng.uniform(50, 100))
        tid = probe_leaf(SPACE, point, config, rng)
        assert 2 <= tid.level <= 10 and SPACE.area(tid.path).contains(point)
