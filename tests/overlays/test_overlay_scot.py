"""SCOT construction, the four properties with precise errors, structure (clusters, regions, links), S_e."""

import random

import pytest

from overlays.scot import ALink, BrokerId, ILink, Scot, ScotError

PATH3 = [("a", "b"), ("b", "c")]


def test_build_path_times_triangle_structure():
    s = Scot.build(PATH3, 3)
    assert len(s.brokers) == 9
    assert s.cluster(1) == (BrokerId("a", 1), BrokerId("b", 1), BrokerId("c", 1))
    assert s.region("b") == (BrokerId("b", 0), BrokerId("b", 1), BrokerId("b", 2))
    assert s.primary_neighbours(BrokerId("b", 2)) == (BrokerId("a", 2), BrokerId("c", 2))
    assert s.secondary_neighbours(BrokerId("a", 0)) == {1: BrokerId("a", 1), 2: BrokerId("a", 2)}
    assert len(s.alinks) == 2 * 3 and len(s.ilinks) == 3 * 3
    assert s.link(BrokerId("a", 0), BrokerId("b", 0)) == ALink(BrokerId("a", 0), BrokerId("b", 0))
    assert s.link(BrokerId("c", 2), BrokerId("c", 0)) == ILink(BrokerId("c", 0), BrokerId("c", 2))
    with pytest.raises(KeyError):
        s.link(BrokerId("a", 0), BrokerId("b", 1))
    assert s.is_edge(BrokerId("a", 0)) and s.is_inner(BrokerId("b", 0)) and not s.is_inner(BrokerId("c", 1))
    assert s.af_diameter() == 2
    assert str(BrokerId("e", 1)) == "B(e,1)"


def test_every_link_is_alink_or_ilink_and_degrees_add_up():
    s = Scot.random(random.Random(3), 9, 4)
    for b in s.brokers:
        ns = s.neighbours(b)
        assert len(ns) == len(s.primary_neighbours(b)) + s.n_clusters - 1
        for n in ns:
            link = s.link(b, n)
            assert isinstance(link, ALink) == (n.cluster == b.cluster)
    assert sum(len(s.neighbours(b)) for b in s.brokers) == 2 * (len(s.alinks) + len(s.ilinks))


def test_s_e_shape():
    s = Scot.s_e()
    d = s.describe()
    assert d["brokers"] == 56 and d["clusters"] == 4 and d["regions"] == 14
    for c in s.clusters:
        inner = {b.region for b in s.inner_brokers(c)}
        assert inner == {"F", "G", "H", "I"}
        assert {b.region for b in s.edge_brokers(c)} == set("ABCDEJKLMN")
    assert d["inner"] == 16 and d["edge"] == 40
    assert d["alinks"] == 13 * 4 and d["ilinks"] == 14 * 6
    # edge brokers have exactly one primary neighbour, all brokers of a region are the same type (§4.2)
    for x in s.af_vertices:
        kinds = {s.is_inner(b) for b in s.region(x)}
        assert len(kinds) == 1


def test_single_broker_clusters_and_single_cluster():
    s = Scot.build([], 3, af_vertices=["solo"])
    assert len(s.brokers) == 3 and not s.alinks and len(s.ilinks) == 3
    t = Scot.build(PATH3, 1)
    assert not t.ilinks and t.secondary_neighbours(BrokerId("a", 0)) == {}


@pytest.mark.parametrize(
    ("edges", "fragment"),
    [
        ([("a", "b"), ("b", "c"), ("c", "a")], "cycle c - b - a - c"),
        ([("a", "b"), ("b", "a")], "appears twice"),
        ([("a", "a")], "self-loop"),
        ([("a", "b"), ("c", "d")], "2 components: [['a', 'b'], ['c', 'd']]"),
    ],
)
def test_acyclic_property(edges, fragment):
    with pytest.raises(ScotError) as e:
        Scot.build(edges, 2)
    assert e.value.prop == "acyclic"
    assert fragment in str(e.value)


def test_connectivity_property():
    with pytest.raises(ScotError) as e:
        Scot.from_factors(PATH3, [0, 1, 2], [(0, 1), (1, 2)])
    assert e.value.prop == "connectivity" and "edge 0-2 is missing" in str(e.value)


@pytest.mark.parametrize(
    ("labels", "fragment"),
    [
        ([1, 2], "missing [0], extra [2]"),
        ([0, 0], "appears twice"),
        (["x", "y"], "'x' is not an integer"),
        ([True, 0], "not an integer"),
        ([], "no vertex"),
    ],
)
def test_index_property(labels, fragment):
    edges = [(labels[0], labels[1])] if len(labels) == 2 and labels[0] != labels[1] else []
    with pytest.raises(ScotError) as e:
        Scot.from_factors(PATH3, labels, edges)
    assert e.value.prop == "index" and fragment in str(e.value)


def test_label_order_property_from_product():
    s = Scot.build(PATH3, 3)
    links = [(link.a, link.b) for link in s.alinks + s.ilinks]
    assert Scot.from_product(links) == s
    reversed_links = [((a[1], a[0]), (b[1], b[0])) for a, b in links]
    with pytest.raises(ScotError) as e:
        Scot.from_product(reversed_links)
    assert e.value.prop == "label_order" and "(cluster index, af vertex)" in str(e.value)


def test_from_product_rejects_non_products_and_reports_factor_properties():
    s = Scot.build(PATH3, 3)
    links = [(link.a, link.b) for link in s.alinks + s.ilinks]
    with pytest.raises(ScotError, match="differs in both label parts"):
        Scot.from_product([*links, (("a", 0), ("b", 1))])
    with pytest.raises(ScotError, match="fibers differ"):
        Scot.from_product([lk for lk in links if lk != (("a", 0), ("b", 0))])
    cyclic = Scot.build([("a", "b"), ("b", "c"), ("c", "d")], 2)
    c_links = [(lk.a, lk.b) for lk in cyclic.alinks + cyclic.ilinks]
    c_links += [(("a", 0), ("d", 0)), (("a", 1), ("d", 1))]
    with pytest.raises(ScotError) as e:
        Scot.from_product(c_links)
    assert e.value.prop == "acyclic"


def test_structure_errors():
    with pytest.raises(ScotError, match="non-empty strings"):
        Scot.build([("a", 1)], 2)
    with pytest.raises(ScotError) as e:
        Scot.build(PATH3, 0)
    assert e.value.prop == "index"
