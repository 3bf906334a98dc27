"""The thesis workload (§4.1, Tables 4.1-4.3): distributions with seeded tolerances, validity, determinism."""

from __future__ import annotations

import itertools
import math
import random
import statistics

import pytest

from p2pubsub.model import parse_event, parse_filter
from p2pubsub.workload import THESIS_ATTRIBUTES, thesis_workload
from p2pubsub.workload.thesis import AttributeGenerator
from p2pubsub.workload.zipf import Zipf, harmonic


@pytest.fixture(scope="module")
def w1000():
    return thesis_workload(1000, seed=7)


@pytest.fixture(scope="module")
def events1000(w1000):
    return list(w1000.events())


def three_sigma(p: float, n: int) -> float:
    return 3 * math.sqrt(p * (1 - p) / n)


def test_zipf_cdf_is_the_generalized_harmonic_ratio():
    z = Zipf(100, 0.6)
    for k in (1, 2, 10, 100):
        assert z.cdf(k) == pytest.approx(harmonic(k, 0.6) / harmonic(100, 0.6))
    assert sum(z.pmf(k) for k in range(1, 101)) == pytest.approx(1.0)
    assert z.pmf(1) / z.pmf(2) == pytest.approx(2**0.6)


def test_zipf_rank_frequencies():
    z = Zipf(20, 0.8)
    rng = random.Random(3)
    n = 40_000
    counts = [0] * 21
    for _ in range(n):
        counts[z.sample(rng)] += 1
    assert counts[0] == 0
    for k in (1, 2, 5, 20):
        assert abs(counts[k] / n - z.pmf(k)) < three_sigma(z.pmf(k), n)
    flat = Zipf(4, 0.0)
    assert all(flat.pmf(k) == pytest.approx(0.25) for k in range(1, 5))
    with pytest.raises(ValueError):
        Zipf(0, 1.0)


def test_subrange_and_size_bucket_counts_follow_our_reading_of_table_4_3(w1000):
    # subrange_size is a width: 10000/100, 20000/20, 3000/10, 200/1
    assert w1000.info["subrange_counts"] == {"Attr1": 100, "Attr2": 1000, "Attr3": 300, "Attr4": 200}
    # sizes up to size_bound·width in buckets of subrange_size: 5000/100, 8000/20, 900/10, 40/1
    assert w1000.info["size_buckets"] == {"Attr1": 50, "Attr2": 400, "Attr3": 90, "Attr4": 40}


def test_schema_and_every_subscription_and_event_validate(w1000, events1000):
    schema = w1000.parsed_schema()
    assert schema.names == ("Attr1", "Attr2", "Attr3", "Attr4")
    assert [schema.attribute(a.name).domain for a in THESIS_ATTRIBUTES] == [
        (0.0, 10000.0),
        (-10000.0, 10000.0),
        (0.0, 3000.0),
        (0.0, 200.0),
    ]
    for s in w1000.subscriptions:
        parse_filter(schema, s.filter)
    for e in events1000:
        parse_event(schema, e.attributes)
        assert len(e.attributes) == 4


def test_counts_times_and_nodes(w1000, events1000):
    subs = w1000.subscriptions
    assert len(subs) == 5000 and w1000.event_count == 10_000 and len(events1000) == 10_000
    times = [s.time_s for s in subs]
    assert times == sorted(times)
    assert statistics.mean(b - a for a, b in itertools.pairwise([0.0, *times])) == pytest.approx(2.0, rel=0.05)
    etimes = [e.time_s for e in events1000]
    assert etimes == sorted(etimes)
    assert etimes[0] > times[-1] + 10.0  # events start settle_s after the last subscription
    gaps = [b - a for a, b in itertools.pairwise(etimes)]
    assert statistics.mean(gaps) == pytest.approx(1.0, rel=0.05)
    assert statistics.pstdev(gaps) == pytest.approx(1.0, rel=0.1)  # exponential: sd = mean
    assert {s.node for s in subs} <= set(range(1000))
    assert len({s.node for s in subs}) > 950  # uniformly drawn subscribers: most nodes get some
    assert {e.node for e in events1000} <= set(range(1000))


def test_present_probability_and_nonempty_subscriptions(w1000):
    n = len(w1000.subscriptions)
    assert all(s.filter for s in w1000.subscriptions)
    # each attribute present with 0.5, conditioned on at least one of four present
    p = 0.5 / (1 - 0.5**4)
    for a in THESIS_ATTRIBUTES:
        share = sum(a.name in s.filter for s in w1000.subscriptions) / n
        assert abs(share - p) < three_sigma(p, n)


def test_ranges_lie_in_the_domain_and_respect_the_size_bound(w1000):
    spec = {a.name: a for a in THESIS_ATTRIBUTES}
    for s in w1000.subscriptions:
        for name, pred in s.filter.items():
            a = spec[name]
            assert a.min <= pred["ge"] <= pred["le"] <= a.max
            assert pred["le"] - pred["ge"] <= a.size_bound * a.width + 1e-9


def test_range_sizes_follow_the_size_zipf():
    rng = random.Random(11)
    for a in THESIS_ATTRIBUTES:
        g = AttributeGenerator(a)
        n = 20_000
        sizes = [g.size(rng) for _ in range(n)]
        first = sum(sz <= a.subrange_size for sz in sizes) / n
        assert abs(first - g.sizes.pmf(1)) < three_sigma(g.sizes.pmf(1), n) + 1e-3
        assert max(sizes) <= a.size_bound * a.width
        lo, hi = min(g.range(rng) for _ in range(2000)), max(g.range(rng) for _ in range(2000))
        assert lo[0] >= a.min and hi[1] <= a.max


def test_event_values_follow_the_subrange_zipf(events1000):
    n = len(events1000)
    for a in THESIS_ATTRIBUTES:
        g = AttributeGenerator(a)
        for rank in (1, 2):
            lo, hi = g.subrange(rank)
            share = sum(lo <= e.attributes[a.name] < hi for e in events1000) / n
            assert abs(share - g.values.pmf(rank)) < three_sigma(g.values.pmf(rank), n)


def test_shuffled_subranges_keep_the_distribution_but_move_the_hot_spot():
    plain = thesis_workload(20, seed=3, events=3000)
    shuffled = thesis_workload(20, seed=3, events=3000, shuffle_subranges=True)
    low_plain = sum(e.attributes["Attr1"] < 100 for e in plain.events()) / 3000
    low_shuffled = sum(e.attributes["Attr1"] < 100 for e in shuffled.events()) / 3000
    assert low_plain > 0.05 > low_shuffled  # rank 1 holds ~7.6% of Attr1 values; elsewhere ~1%


def test_capacities_are_rand_10_30(w1000):
    caps = w1000.capacities
    assert len(caps) == 1000 and min(caps) == 10 and max(caps) == 30
    assert statistics.mean(caps) == pytest.approx(20.0, abs=0.6)
    assert thesis_workload(5, seed=1, capacity=(4, 4)).capacities == (4, 4, 4, 4, 4)


def test_same_seed_same_workload_and_streams_are_independent():
    a = thesis_workload(50, seed=1, events=500)
    b = thesis_workload(50, seed=1, events=500)
    c = thesis_workload(50, seed=2, events=500)
    more = thesis_workload(50, seed=1, events=900)
    assert a.subscriptions == b.subscriptions and list(a.events()) == list(b.events())
    assert a.capacities == b.capacities
    assert a.subscriptions != c.subscriptions
    assert list(a.events()) == list(a.events())  # events() restarts the same stream
    assert more.subscriptions == a.subscriptions  # more events do not disturb the subscriptions
    assert list(more.events())[:500] == list(a.events())


def test_partial_events_for_absent_attribute_semantics():
    w = thesis_workload(20, seed=5, events=4000, event_present_prob=0.5)
    schema = w.parsed_schema()
    evs = list(w.events())
    assert all(e.attributes for e in evs)
    p = 0.5 / (1 - 0.5**4)
    share = sum("Attr3" in e.attributes for e in evs) / len(evs)
    assert abs(share - p) < three_sigma(p, len(evs))
    assert any(len(e.attributes) < 4 for e in evs)
    for e in evs[:500]:
        parse_event(schema, e.attributes)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"nodes": 0}, "nodes"),
        ({"events": -1}, "events"),
        ({"event_present_prob": 0.0}, "event_present_prob"),
        ({"capacity": (0, 5)}, "capacity"),
        ({"capacity": (9, 5)}, "capacity"),
        ({"settle_s": -1}, "settle_s"),
        ({"subscribe_interval_ms": -5}, "intervals"),
    ],
)
def test_bad_parameters_are_rejected(kwargs, message):
    args = {"nodes": 5, "seed": 1, **kwargs}
    with pytest.raises(ValueError, match=message):
        thesis_workload(**args)
