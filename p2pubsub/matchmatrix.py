"""Many events against many subscriptions at once, as boolean matrices (numpy): what the brute-force delivery
oracles of the simulator (:mod:`p2pubsub.sim.oracle`) and of live experiments (:mod:`p2pubsub.experiment.oracle`)
share.

Matching is exact, with the schema's absent-attribute semantics (thesis §3.4.1), and agrees with
``Subscription.matches``: a numeric attribute is a column of closed/open bounds, a string attribute a column of
equality codes, with prefixes checked one subscription at a time.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .model import Range, StringEq, StringPrefix, Subscription

__all__ = ["PairCounts", "match_matrix", "sub_columns"]


@dataclass
class PairCounts:
    """An oracle's totals over (event, subscription) pairs."""

    expected: int = 0
    delivered: int = 0
    missing: int = 0
    false_positive: int = 0
    duplicate: int = 0
    unexpected: int = 0
    unknown: int = 0  # deliveries naming a subscription or event the oracle never saw


def sub_columns(subs: Sequence[Subscription]) -> list[tuple[str, str, dict[str, Any]]]:
    """Per constrained attribute: (name, "range" | "string", arrays over subscriptions)."""
    n = len(subs)
    names = sorted({a for s in subs for a in s.attributes})
    out = []
    for name in names:
        has = np.zeros(n, bool)
        cons: list[Any] = [None] * n
        for j, s in enumerate(subs):
            for a, c in s.constraints:
                if a == name:
                    has[j], cons[j] = True, c
        kinds = {type(c) for c in cons if c is not None}
        if kinds <= {Range}:
            lo, hi = np.full(n, -np.inf), np.full(n, np.inf)
            loc, hic = np.ones(n, bool), np.ones(n, bool)
            for j, c in enumerate(cons):
                if c is not None:
                    lo[j], hi[j], loc[j], hic[j] = float(c.lo), float(c.hi), c.lo_closed, c.hi_closed
            out.append((name, "range", {"has": has, "lo": lo, "hi": hi, "loc": loc, "hic": hic}))
        else:  # strings: equality by code, prefixes one subscription at a time
            codes: dict[str, int] = {}
            eq = np.full(n, -1, np.int64)
            prefix = np.zeros(n, bool)
            for j, c in enumerate(cons):
                if isinstance(c, StringEq):
                    eq[j] = codes.setdefault(c.value, len(codes))
                elif isinstance(c, StringPrefix):
                    prefix[j] = True
                elif c is not None:
                    raise TypeError(f"attribute {name} mixes constraint kinds: {sorted(k.__name__ for k in kinds)}")
            out.append((name, "string", {"has": has, "eq": eq, "prefix": prefix, "codes": codes, "cons": cons}))
    return out


def match_matrix(columns: list, events: Sequence[Mapping[str, Any]], n_subs: int, absent_match: bool) -> np.ndarray:
    """Boolean matrix ``[events, subscriptions]`` over the subscriptions' ``columns`` (:func:`sub_columns`):
    does event ``i`` match subscription ``j``. ``absent_match``: the schema's ``Absent.MATCH``."""
    m = np.ones((len(events), n_subs), bool)
    for name, kind, col in columns:
        present = np.array([name in v for v in events], bool)[:, None]
        if kind == "range":
            v = np.array([float(ev[name]) if name in ev else math.nan for ev in events])[:, None]
            lo, hi, loc, hic = col["lo"], col["hi"], col["loc"], col["hic"]
            ok = ((lo < v) | (loc & (lo == v))) & ((v < hi) | (hic & (v == hi)))
        else:
            codes = col["codes"]
            v = np.array([codes.get(ev.get(name), -2) if isinstance(ev.get(name), str) else -3
                          for ev in events])[:, None]
            ok = col["eq"][None, :] == v
            for j in np.flatnonzero(col["prefix"]):
                p = col["cons"][j].prefix
                ok[:, j] = [isinstance(ev.get(name), str) and ev[name].startswith(p) for ev in events]
        ok = (ok | ~present) if absent_match else (ok & present)
        m &= ok | ~col["has"][None, :]
    return m
