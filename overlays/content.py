"""Advertisements against subscriptions and publications: the exact overlap test routing needs.

An advertisement is a filter over a schema (a :class:`~p2pubsub.model.Subscription` value) describing what one
publisher will publish. Its semantics, fixed here and used by both routing cores and the oracle:

* A publication *conforms* to an advertisement iff it carries exactly the advertised attributes and every value
  satisfies the advertised constraint (PADRES: a publication must match an advertisement of its publisher).
* An advertisement *overlaps* a subscription iff some conforming publication matches the subscription, under
  the schema's ``absent`` semantics (thesis §3.4.1): with ``no_match`` every constrained attribute of the
  subscription must be advertised; with ``match`` unadvertised attributes are simply absent and ignored.

The test is exact over the values a publication can carry: integers for ``int`` attributes, IEEE-754 doubles
for ``float`` attributes (so ``(1.0, nextafter(1.0))`` open on both sides is empty), any string for strings.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from p2pubsub.model import Absent, Range, StringEq, StringPrefix, Subscription
from p2pubsub.model.filters import Constraint


def _range_nonempty(lo: float, hi: float, lo_closed: bool, hi_closed: bool, integer: bool) -> bool:
    if integer:
        lo_i = math.floor(lo) + 1 if (not lo_closed and float(lo).is_integer()) else math.ceil(lo)
        hi_i = math.ceil(hi) - 1 if (not hi_closed and float(hi).is_integer()) else math.floor(hi)
        return lo_i <= hi_i
    if lo_closed and hi_closed:
        return lo <= hi
    if lo_closed or hi_closed:
        return lo < hi
    return math.nextafter(float(lo), math.inf) < hi


def _is_integer_range(*ranges: Range) -> bool:
    """Integer attributes keep int bounds (the model normalises them to closed int ranges)."""
    return all(isinstance(r.lo, int) and isinstance(r.hi, int) for r in ranges)


def constraint_nonempty(c: Constraint) -> bool:
    """Whether some publishable value satisfies ``c`` (a float range open on both sides may hold no double)."""
    if isinstance(c, Range):
        return _range_nonempty(c.lo, c.hi, c.lo_closed, c.hi_closed, _is_integer_range(c))
    return True


def intersect_ranges(a: Range, b: Range) -> Range | None:
    """The intersection of two ranges, or None when no publishable value lies in both."""
    if a.lo > b.lo:
        lo, lo_closed = a.lo, a.lo_closed
    elif b.lo > a.lo:
        lo, lo_closed = b.lo, b.lo_closed
    else:
        lo, lo_closed = a.lo, a.lo_closed and b.lo_closed
    if a.hi < b.hi:
        hi, hi_closed = a.hi, a.hi_closed
    elif b.hi < a.hi:
        hi, hi_closed = b.hi, b.hi_closed
    else:
        hi, hi_closed = a.hi, a.hi_closed and b.hi_closed
    if not _range_nonempty(lo, hi, lo_closed, hi_closed, _is_integer_range(a, b)):
        return None
    return Range(lo, hi, lo_closed, hi_closed)


def constraints_intersect(a: Constraint, b: Constraint) -> bool:
    """Whether one value satisfies both constraints (same attribute, so both numeric or both string)."""
    if isinstance(a, Range) and isinstance(b, Range):
        return intersect_ranges(a, b) is not None
    if isinstance(a, StringEq):
        return b.contains(a.value)
    if isinstance(b, StringEq):
        return a.contains(b.value)
    if isinstance(a, StringPrefix) and isinstance(b, StringPrefix):
        return a.prefix.startswith(b.prefix) or b.prefix.startswith(a.prefix)
    raise TypeError(f"constraints of different kinds on one attribute: {a!r} vs {b!r}")


def advertisement_satisfiable(adv: Subscription) -> bool:
    """Whether any publication conforms to ``adv`` (every advertised constraint admits a value)."""
    return all(constraint_nonempty(c) for _, c in adv.constraints)


def overlaps(adv: Subscription, sub: Subscription, absent: Absent = Absent.NO_MATCH) -> bool:
    """Exact: some publication conforming to ``adv`` matches ``sub`` (module docstring)."""
    if adv.schema != sub.schema or not advertisement_satisfiable(adv):
        return False
    advertised = dict(adv.constraints)
    for name, c in sub.constraints:
        a = advertised.get(name)
        if a is None:
            if absent is Absent.NO_MATCH:
                return False
            continue
        if not constraints_intersect(a, c):
            return False
    return True


def conforms(values: Mapping[str, Any], adv: Subscription) -> bool:
    """A publication's attribute values conform to ``adv``: exactly the advertised attributes, each inside."""
    if len(values) != len(adv.constraints):
        return False
    return all(name in values and c.contains(values[name]) for name, c in adv.constraints)


__all__ = [
    "advertisement_satisfiable",
    "conforms",
    "constraint_nonempty",
    "constraints_intersect",
    "intersect_ranges",
    "overlaps",
]
