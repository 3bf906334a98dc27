"""The brute-force delivery oracle of a live experiment: every (event, subscription) pair, vectorised with numpy.

Times are the runner's (seconds on the experiment clock): a subscription is *acknowledged* when its
``POST /v1/subscriptions`` answered (the node answers only once every piece is installed); an event is
*published* between its ``POST /v1/events`` request (``req``) and answer (``ack``). A subscription's home is
*gone* from the moment the runner signalled its node (SIGTERM or SIGKILL); ``inf`` if it lived to the end.

A pair (event e, subscription s) is **expected** when

* s matches e (exactly, with the schema's absent-attribute semantics, thesis §3.4.1),
* s was acknowledged before e's request was sent (``s.ack < e.req``; one acknowledged while e's request was
  under way may or may not get e: it is *allowed*, not expected), and
* s's home outlived e by the grace period: ``e.ack <= s.gone - grace``. For a home that crashed or left, only
  events published while it was alive are owed, and the last ``grace`` seconds before the signal are left out:
  a notification still in flight when the node dies cannot reach the client, whose reader died with the node.
  Homes that live to the end owe every later event.

Counted over the deliveries the readers received (``(event, subscription)`` pairs, one per notification read):

* ``delivered``: distinct expected pairs received; ``missing``: expected and not received;
* ``false_positive``: received although s does not match e; ``duplicate``: receipts beyond the first of a pair
  (the home dedupes; this checks it end to end); ``unexpected``: received, matching, not owed (allowed);
  ``unknown``: notifications of events the runner never saw published (e.g. a publish whose answer was lost);
* ``late``: expected pairs not received within ``deadline`` seconds of the publish request (missing ones
  included): delivered in the end, but only after the network noticed a failure, retried and rerouted.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..matchmatrix import PairCounts, match_matrix, sub_columns
from ..model import Absent, Schema, Subscription

__all__ = ["Oracle", "Verdict"]

_CHUNK_CELLS = 4_000_000  # matching matrix cells per chunk


@dataclass
class Verdict(PairCounts):
    """Totals, plus per-event and per-subscription counts for windows (recovery) and splits (departed homes)."""

    late: int = 0  # expected pairs not received within the deadline (missing ones included)
    # per event: expected pairs and missing pairs; per subscription: the same
    event_expected: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    event_missing: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    event_late: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # missing or after the deadline
    sub_expected: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    sub_missing: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    sub_false_positive: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    sub_duplicate: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    examples: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # (event, subscription) indices

    def totals(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in ("expected", "delivered", "missing", "false_positive", "duplicate",
                                             "unexpected", "unknown", "late")}
        out["ratio"] = self.delivered / self.expected if self.expected else None
        return out


class Oracle:
    """Subscriptions and events of a run; :meth:`judge` compares them with what the readers received."""

    def __init__(self, schema: Schema, subs: Sequence[Subscription], events: Sequence[Mapping[str, Any]]) -> None:
        self.schema = schema
        self.absent_match = schema.absent is Absent.MATCH
        self.subs = list(subs)
        self.events = list(events)
        self._columns = sub_columns(self.subs)

    def match_chunk(self, start: int, stop: int) -> np.ndarray:
        """Boolean matrix ``[stop - start, subscriptions]``: does event ``start + i`` match subscription ``j``."""
        return match_matrix(self._columns, self.events[start:stop], len(self.subs), self.absent_match)

    def matches(self, event: int, sub: int) -> bool:
        """One pair the slow way (``Subscription.matches``): for tests."""
        return self.subs[sub].matches(self.events[event], self.schema.absent)

    def judge(
        self,
        sub_ack: Sequence[float],
        sub_gone: Sequence[float],
        event_req: Sequence[float],
        event_ack: Sequence[float],
        received: Iterable[tuple[int, int, float]],
        *,
        grace: float,
        deadline: float = math.inf,
        unknown: int = 0,
        examples: int = 5,
    ) -> Verdict:
        """``sub_ack`` (inf: never acknowledged), ``sub_gone`` (inf: home alive to the end), ``event_req`` /
        ``event_ack`` (NaN ack: the publish failed, nothing is owed), ``received``: (event, subscription,
        receipt time), one per notification read. A pair first received more than ``deadline`` seconds after the
        event's request is *late* (``event_late`` counts expected pairs missing or late)."""
        n_sub, n_ev = len(self.subs), len(self.events)
        ack = np.asarray(sub_ack, np.float64)
        gone = np.asarray(sub_gone, np.float64)
        req = np.asarray(event_req, np.float64)
        pub = np.asarray(event_ack, np.float64)
        pub = np.where(np.isnan(pub), np.inf, pub)  # failed publish: owed to nobody
        out = Verdict(unknown=unknown)
        got_pairs = list(received)
        codes = np.fromiter((e * n_sub + s for e, s, _ in got_pairs), np.int64, len(got_pairs))
        times = np.fromiter((t for _, _, t in got_pairs), np.float64, len(got_pairs))
        uniq, counts = np.unique(codes, return_counts=True)
        if codes.size:  # the earliest receipt of each pair
            earliest = np.full(uniq.size, np.inf)
            np.minimum.at(earliest, np.searchsorted(uniq, codes), times)
            on_time = earliest - req[uniq // n_sub] <= deadline
        else:
            on_time = np.zeros(0, bool)
        timely = uniq[on_time]
        out.event_expected = np.zeros(n_ev, np.int64)
        out.event_missing = np.zeros(n_ev, np.int64)
        out.event_late = np.zeros(n_ev, np.int64)
        out.sub_expected = np.zeros(n_sub, np.int64)
        out.sub_missing = np.zeros(n_sub, np.int64)
        out.sub_false_positive = np.zeros(n_sub, np.int64)
        out.sub_duplicate = np.zeros(n_sub, np.int64)
        dup = counts > 1
        out.duplicate = int((counts[dup] - 1).sum())
        np.add.at(out.sub_duplicate, uniq[dup] % max(n_sub, 1), counts[dup] - 1)
        if dup.any():
            out.examples["duplicate"] = [_pair(int(c), n_sub) for c in uniq[dup][:examples]]
        if n_sub == 0 or n_ev == 0:
            return out
        step = max(1, _CHUNK_CELLS // n_sub)
        ex: dict[str, list] = {"missing": [], "false_positive": []}
        for start in range(0, n_ev, step):
            stop = min(n_ev, start + step)
            m = self.match_chunk(start, stop)
            expected = m & (ack[None, :] < req[start:stop, None]) & (pub[start:stop, None] <= gone[None, :] - grace)
            got = np.zeros_like(m)
            lo, hi = np.searchsorted(uniq, [start * n_sub, stop * n_sub])
            chunk = uniq[lo:hi]
            got[chunk // n_sub - start, chunk % n_sub] = True
            fast = np.zeros_like(m)
            lo, hi = np.searchsorted(timely, [start * n_sub, stop * n_sub])
            chunk = timely[lo:hi]
            fast[chunk // n_sub - start, chunk % n_sub] = True
            missing = expected & ~got
            fp = got & ~m
            out.expected += int(expected.sum())
            out.delivered += int((expected & got).sum())
            out.missing += int(missing.sum())
            out.false_positive += int(fp.sum())
            out.unexpected += int((got & m & ~expected).sum())
            out.event_expected[start:stop] = expected.sum(axis=1)
            out.event_missing[start:stop] = missing.sum(axis=1)
            out.event_late[start:stop] = (expected & ~fast).sum(axis=1)
            out.late += int((expected & ~fast).sum())
            out.sub_expected += expected.sum(axis=0)
            out.sub_missing += missing.sum(axis=0)
            out.sub_false_positive += fp.sum(axis=0)
            for name, mat in (("missing", missing), ("false_positive", fp)):
                if len(ex[name]) < examples and mat.any():
                    rows, cols = np.nonzero(mat)
                    ex[name] += [(int(r) + start, int(c)) for r, c in zip(rows[:examples], cols[:examples],
                                                                          strict=True)]
        out.examples.update({k: v[:examples] for k, v in ex.items() if v})
        return out


def _pair(code: int, n_sub: int) -> tuple[int, int]:
    return code // n_sub, code % n_sub
