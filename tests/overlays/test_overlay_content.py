"""The advertisement/subscription overlap test is exact: checked against brute-force witness search."""

import itertools
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from overlays.content import conforms, constraint_nonempty, intersect_ranges, overlaps
from overlays.workload import random_filter, small_schema
from p2pubsub.model import Absent, Range, StringEq, StringPrefix, parse_filter

NM = small_schema(Absent.NO_MATCH)
MA = small_schema(Absent.MATCH)


def _candidates(name, constraints, integer):
    out = set()
    for c in constraints:
        if isinstance(c, Range):
            for b in (c.lo, c.hi):
                if integer:
                    out.update({b - 1, b, b + 1})
                else:
                    out.update({b, math.nextafter(b, math.inf), math.nextafter(b, -math.inf)})
        elif isinstance(c, StringEq):
            out.add(c.value)
        else:
            out.update({c.prefix, c.prefix + "q"})
    return sorted(out, key=repr)


def brute_overlap(adv, sub, schema):
    """Search every event built from boundary candidates for one that conforms to adv and matches sub."""
    adv_c, sub_c = dict(adv.constraints), dict(sub.constraints)
    names = list(adv_c)
    pools = [
        _candidates(n, [adv_c[n], *([sub_c[n]] if n in sub_c else [])], schema.attribute(n).type.value == "int")
        for n in names
    ]
    for values in itertools.product(*pools):
        ev = dict(zip(names, values, strict=True))
        if conforms(ev, adv) and sub.matches(ev, schema.absent):
            return True
    return False


@settings(max_examples=400, derandomize=True, deadline=None)
@given(st.integers(0, 2**32), st.sampled_from([NM, MA]))
def test_overlap_matches_brute_force(seed, schema):
    rng = random.Random(seed)
    adv = random_filter(rng, schema, full_numeric=True)
    sub = random_filter(rng, schema)
    assert overlaps(adv, sub, schema.absent) == brute_overlap(adv, sub, schema)


def f(body, schema=NM):
    return parse_filter(schema, body)


@pytest.mark.parametrize(
    ("a", "s", "want"),
    [
        ({"y": {"le": 5.0}}, {"y": {"ge": 5.0}}, True),
        ({"y": {"lt": 5.0}}, {"y": {"ge": 5.0}}, False),
        ({"y": {"le": 5.0}}, {"y": {"gt": 5.0}}, False),
        ({"y": {"lt": math.nextafter(5.0, math.inf)}}, {"y": {"gt": 5.0}}, False),  # no double strictly between
        ({"y": {"lt": math.nextafter(math.nextafter(5.0, math.inf), math.inf)}}, {"y": {"gt": 5.0}}, True),
        ({"x": {"lt": 6}}, {"x": {"gt": 5}}, False),  # ints: le 5 vs ge 6
        ({"x": {"le": 6}}, {"x": {"gt": 5}}, True),
        ({"s": {"prefix": "ab"}}, {"s": {"prefix": "a"}}, True),
        ({"s": {"prefix": "ab"}}, {"s": {"prefix": "b"}}, False),
        ({"s": {"eq": "abc"}}, {"s": {"prefix": "ab"}}, True),
        ({"s": {"eq": "a"}}, {"s": {"prefix": "ab"}}, False),
        ({"s": {"eq": "a"}}, {"s": {"eq": "a"}}, True),
        ({"s": {"prefix": ""}}, {"s": {"eq": "zz"}}, True),
        ({"x": {"ge": 0}}, {"y": {"ge": 1.0}}, False),  # no_match: y is never published
    ],
)
def test_overlap_cases(a, s, want):
    assert overlaps(f(a), f(s)) is want


def test_absent_match_ignores_unadvertised_attributes():
    adv = f({"x": {"ge": 0}}, MA)
    sub = f({"y": {"ge": 1.0}, "x": {"eq": 3}}, MA)
    assert overlaps(adv, sub, Absent.MATCH) and not overlaps(adv, sub, Absent.NO_MATCH)
    small = f({"x": {"le": 2}}, MA)
    assert not overlaps(small, sub, Absent.MATCH)  # the advertised attribute still has to intersect


def test_other_schema_never_overlaps():
    other = small_schema(name="U")
    assert not overlaps(f({"x": {"ge": 0}}), parse_filter(other, {"x": {"ge": 0}}))


def test_empty_float_advertisement_and_helpers():
    lo = 5.0
    empty = Range(lo, math.nextafter(lo, math.inf), False, False)
    assert not constraint_nonempty(empty)
    assert constraint_nonempty(Range(lo, lo, True, True))
    assert intersect_ranges(Range(0.0, 5.0, True, False), Range(5.0, 9.0)) is None
    assert intersect_ranges(Range(0.0, 5.0), Range(5.0, 9.0)) == Range(5.0, 5.0)
    assert constraint_nonempty(StringPrefix("a")) and constraint_nonempty(StringEq(""))


def test_conforms_requires_exactly_the_advertised_attributes():
    adv = f({"x": {"ge": 2, "le": 4}, "s": {"prefix": "a"}})
    assert conforms({"x": 3, "s": "ab"}, adv)
    assert not conforms({"x": 3}, adv)
    assert not conforms({"x": 3, "s": "ab", "y": 1.0}, adv)
    assert not conforms({"x": 5, "s": "ab"}, adv)
