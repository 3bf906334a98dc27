"""The brute-force delivery oracle of a simulator run: every (event, subscription) pair, vectorised with numpy.

An event is *expected* at a subscription when the subscription matches it (exactly, with the schema's
absent-attribute semantics, thesis §3.4.1), was installed (acknowledged: its ``Ready``) strictly before the event
was published, and its subscriber was still alive when the event was published (the churn-experiment rule: for a
node that crashed or left, only events published while it was alive are owed).

From the deliveries the nodes handed to their applications it counts:

* ``expected``: pairs owed; ``delivered``: distinct pairs delivered (whatever the oracle thinks of them);
* ``missing``: owed and not delivered; ``false_positive``: delivered although the subscription does not match;
* ``duplicate``: deliveries beyond the first of a pair (the node's ``on_deliver`` must see each pair once);
* ``unexpected``: delivered, matching, but not owed (installed after the event was published, or the
  subscriber left before): allowed, not an error.

How the misses spread, since a few examples say little (they come from the first chunk of events, so they cluster
at the start of the event phase whatever the cause): ``missing_events`` and ``missing_subscriptions`` count the
distinct events and subscriptions with a miss, and ``missing_by_tenth`` the misses of each tenth of the events in
publication order (ten counts; a transient fault shows in one tenth, a steady one in all, a few subscriptions
missing many events point at a few misplaced tree nodes).

5,000 subscriptions × 10,000 events are 50 million pairs: matching runs over chunks of events against all
subscriptions as boolean matrices (a few hundred milliseconds).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..matchmatrix import PairCounts, match_matrix, sub_columns
from ..model import Absent, Schema, Subscription

__all__ = ["Oracle", "Verdict"]

_CHUNK_CELLS = 8_000_000  # events per chunk = this / subscriptions
TENTHS = 10


@dataclass
class Verdict(PairCounts):
    missing_events: int = 0  # distinct events with at least one miss
    missing_subscriptions: int = 0  # distinct subscriptions with at least one miss
    missing_by_tenth: list[int] = field(default_factory=lambda: [0] * TENTHS)  # misses per tenth of the events
    examples: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # a few (event, subscription) pairs

    def as_dict(self) -> dict[str, Any]:
        return {
            "expected": self.expected,
            "delivered": self.delivered,
            "missing": self.missing,
            "false_positive": self.false_positive,
            "duplicate": self.duplicate,
            "unexpected": self.unexpected,
            "unknown": self.unknown,
            "missing_events": self.missing_events,
            "missing_subscriptions": self.missing_subscriptions,
            "missing_by_tenth": list(self.missing_by_tenth),
        }


class Oracle:
    """Collects subscriptions and events during a run, then judges the deliveries (`verdict`)."""

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self.absent_match = schema.absent is Absent.MATCH
        self.sub_ids: list[str] = []
        self.sub_node: list[int] = []
        self.subs: list[Subscription] = []
        self.event_ids: list[str] = []
        self.event_values: list[Mapping[str, Any]] = []

    def subscription(self, sub_id: str, node: int, sub: Subscription) -> None:
        self.sub_ids.append(sub_id)
        self.sub_node.append(node)
        self.subs.append(sub)

    def event(self, event_id: str, values: Mapping[str, Any]) -> None:
        self.event_ids.append(event_id)
        self.event_values.append(values)

    # --- matching ---

    def _sub_columns(self) -> list[tuple[str, str, dict[str, np.ndarray]]]:
        """Per constrained attribute: (name, kind, arrays over subscriptions)."""
        return sub_columns(self.subs)

    def _match_chunk(self, columns, events: list[Mapping[str, Any]]) -> np.ndarray:
        return match_matrix(columns, events, len(self.subs), self.absent_match)

    def matches(self, event_index: int, sub_index: int) -> bool:
        """One pair, the slow way (``Subscription.matches``): for tests and examples."""
        return self.subs[sub_index].matches(self.event_values[event_index], self.schema.absent)

    # --- verdict ---

    def verdict(
        self,
        installed_at: Mapping[str, float],
        published_at: Mapping[str, float],
        gone_at: Mapping[int, float],
        deliveries: Iterable[tuple[str, str]],
        examples: int = 5,
    ) -> Verdict:
        """Judge ``deliveries`` (event_id, sub_id pairs, one per delivery to an application).

        ``installed_at``: sub_id -> install time (missing: never installed); ``published_at``: event_id -> time;
        ``gone_at``: node -> when it crashed or left (missing: alive to the end).
        """
        out = Verdict()
        n_sub, n_ev = len(self.subs), len(self.event_ids)
        sub_index = {s: i for i, s in enumerate(self.sub_ids)}
        ev_index = {e: i for i, e in enumerate(self.event_ids)}
        inst = np.array([installed_at.get(s, math.inf) for s in self.sub_ids], dtype=np.float64)
        gone = np.array([gone_at.get(node, math.inf) for node in self.sub_node], dtype=np.float64)
        pub = np.array([published_at.get(e, math.nan) for e in self.event_ids], dtype=np.float64)

        pairs = []
        for event_id, sub_id in deliveries:
            ei, si = ev_index.get(event_id), sub_index.get(sub_id)
            if ei is None or si is None:
                out.unknown += 1
            else:
                pairs.append(ei * n_sub + si)
        codes = np.asarray(pairs, dtype=np.int64)
        uniq, counts = np.unique(codes, return_counts=True)
        out.delivered = int(uniq.size)
        out.duplicate = int((counts - 1).sum())
        if counts.size and (counts > 1).any():
            out.examples["duplicate"] = [self._pair(int(c), n_sub) for c in uniq[counts > 1][:examples]]

        columns = self._sub_columns()
        step = max(1, _CHUNK_CELLS // max(1, n_sub))
        miss_ex, fp_ex = [], []
        missed_subs = np.zeros(n_sub, bool)
        tenth = np.arange(n_ev, dtype=np.int64) * TENTHS // max(1, n_ev)  # event index -> its tenth
        by_tenth = np.zeros(TENTHS, np.int64)
        for start in range(0, n_ev, step):
            stop = min(n_ev, start + step)
            m = self._match_chunk(columns, self.event_values[start:stop])
            p = pub[start:stop, None]
            expected = m & (inst[None, :] < p) & (p < gone[None, :])
            got = np.zeros_like(m)
            lo, hi = np.searchsorted(uniq, [start * n_sub, stop * n_sub])
            chunk = uniq[lo:hi]
            rows, cols = chunk // n_sub - start, chunk % n_sub
            got[rows, cols] = True
            out.expected += int(expected.sum())
            missing = expected & ~got
            out.missing += int(missing.sum())
            per_event = missing.sum(axis=1)
            out.missing_events += int((per_event > 0).sum())
            missed_subs |= missing.any(axis=0)
            np.add.at(by_tenth, tenth[start:stop], per_event)
            fp = got & ~m
            out.false_positive += int(fp.sum())
            out.unexpected += int((got & m & ~expected).sum())
            if len(miss_ex) < examples:
                miss_ex += self._examples(missing, start, examples)
            if len(fp_ex) < examples:
                fp_ex += self._examples(fp, start, examples)
        out.missing_subscriptions = int(missed_subs.sum())
        out.missing_by_tenth = [int(x) for x in by_tenth]
        if miss_ex:
            out.examples["missing"] = miss_ex[:examples]
        if fp_ex:
            out.examples["false_positive"] = fp_ex[:examples]
        return out

    def _examples(self, mask: np.ndarray, start: int, limit: int) -> list[tuple[str, str]]:
        rows, cols = np.nonzero(mask)
        pairs = zip(rows[:limit].tolist(), cols[:limit].tolist(), strict=True)
        return [(self.event_ids[start + a], self.sub_ids[b]) for a, b in pairs]

    def _pair(self, code: int, n_sub: int) -> tuple[str, str]:
        return self.event_ids[code // n_sub], self.sub_ids[code % n_sub]
