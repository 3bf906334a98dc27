"""The subscriptions of one leaf, matched against an event without a Python loop over them (thesis §3.4.1).

The thesis matches linearly and points to sub-linear algorithms; we keep one numpy column pair per attribute
(the inclusive bounds of every subscription's constraint, ``-inf/inf`` where unconstrained) and evaluate a whole
leaf with a few vectorised comparisons. Open bounds are made inclusive with ``nextafter``, which is exact for
float64 (and ints up to 2**53 are exact floats). Only candidates constraining a string attribute, whose
coordinates may collide, are re-checked exactly in Python: work proportional to the matches, not the leaf.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from ..model import Absent, Range
from ..model.strings import string_coordinate
from .pieces import SubEntry

Key = tuple[str, int, int]
_all_rows = np.logical_and.reduce  # ndarray.all without its Python-level wrapper: matching is a hot path


def coordinate(value: Any) -> float:
    return string_coordinate(value) if isinstance(value, str) else float(value)


def coordinates(values: Mapping[str, Any]) -> dict[str, float]:
    return {k: coordinate(v) for k, v in values.items()}


def _inclusive(lo: float, lo_closed: bool, hi: float, hi_closed: bool) -> tuple[float, float]:
    return (lo if lo_closed else math.nextafter(lo, math.inf)), (hi if hi_closed else math.nextafter(hi, -math.inf))


class LeafStore:
    """Subscription entries of one leaf: a row per entry, and per entry a column of bounds.

    ``_bounds`` has ``2 + 2k`` rows for ``k`` constrained attributes: the lower bounds (the piece's interval on the
    base attribute first, then each attribute's, ``-inf`` where unconstrained), then the *negated* upper bounds in
    the same order (``-inf`` where unconstrained). An event is the column ``(v, ..., -v, ...)`` of its coordinates,
    and an entry matches where every bound is ``<=`` it: one comparison over the whole leaf.
    """

    def __init__(self) -> None:
        self.n = 0
        self._cap = 8
        self._rows: list[SubEntry] = []
        self._index: dict[Key, int] = {}
        self._names: list[str] = []  # the attribute of bound row 1 + j (and k + 2 + j)
        self._bounds = np.full((2, self._cap), -math.inf)
        self._first = np.zeros(self._cap, dtype=bool)  # piece 0: stands for the subscription when base is absent
        self._exact: list[bool] = []  # per row: constrains a string, so candidates are re-checked exactly
        self._n_exact = 0
        self._px = np.zeros(self._cap)
        self._py = np.zeros(self._cap)

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[SubEntry]:
        return iter(self._rows)

    def __contains__(self, key: Key) -> bool:
        return key in self._index

    def get(self, key: Key) -> SubEntry | None:
        row = self._index.get(key)
        return None if row is None else self._rows[row]

    def _grow(self) -> None:
        cap = self._cap * 2
        pad = cap - self._cap
        self._bounds = np.concatenate([self._bounds, np.full((len(self._bounds), pad), -math.inf)], axis=1)
        self._first = np.concatenate([self._first, np.zeros(pad, dtype=bool)])
        self._px = np.concatenate([self._px, np.zeros(pad)])
        self._py = np.concatenate([self._py, np.zeros(pad)])
        self._cap = cap

    def _add_attribute(self, name: str) -> None:
        """A new attribute's pair of bound rows, unconstrained for every entry already here."""
        k = len(self._names)
        free = np.full((1, self._cap), -math.inf)
        b = self._bounds
        self._bounds = np.concatenate([b[: 1 + k], free, b[1 + k :], free])
        self._names.append(name)

    def add(self, entry: SubEntry) -> bool:
        """Store ``entry``; False (and nothing changes) when an entry with its key is already here."""
        if entry.key in self._index:
            return False
        if self.n == self._cap:
            self._grow()
        row = self.n
        constrained = dict(entry.subscription.constraints)
        for name in constrained:
            if name not in self._names:
                self._add_attribute(name)
        k = len(self._names)
        b = self._bounds
        exact = False
        for j, name in enumerate(self._names, 1):
            c = constrained.get(name)
            if c is None:
                lo, hi = -math.inf, math.inf
            elif isinstance(c, Range):
                lo, hi = _inclusive(float(c.lo), c.lo_closed, float(c.hi), c.hi_closed)
            else:
                (lo, hi), exact = c.coords(), True
            b[j, row], b[k + 1 + j, row] = lo, -hi
        lo, hi = _inclusive(entry.piece_lo, True, entry.piece_hi, entry.piece_hi_closed)
        b[0, row], b[k + 1, row] = lo, -hi
        self._first[row] = entry.piece == 0
        self._exact.append(exact)
        self._n_exact += exact
        self._px[row], self._py[row] = entry.point
        self._rows.append(entry)
        self._index[entry.key] = row
        self.n += 1
        return True

    def remove(self, key: Key) -> SubEntry | None:
        row = self._index.pop(key, None)
        if row is None:
            return None
        entry = self._rows[row]
        last = self.n - 1
        if row != last:  # move the last row into the hole
            moved = self._rows[last]
            self._rows[row] = moved
            self._index[moved.key] = row
            self._bounds[:, row] = self._bounds[:, last]
            for arr in (self._first, self._px, self._py):
                arr[row] = arr[last]
        self._n_exact -= self._exact[row]
        self._exact[row] = self._exact[last]
        self._exact.pop()
        self._rows.pop()
        self.n = last
        return entry

    def match(
        self, values: Mapping[str, Any], coords: Mapping[str, float], base: str, absent: Absent
    ) -> list[SubEntry]:
        """Entries whose whole subscription matches the event, counting each subscription once: only the piece
        holding the event's base value (piece 0 when the event omits the base attribute)."""
        n = self.n
        if n == 0:
            return []
        inf = math.inf
        vb = coords.get(base)
        lows = [inf if vb is None else vb]  # an omitted value passes both of its bounds (+inf) ...
        highs = [inf if vb is None else -vb]
        omitted = []
        for name in self._names:
            v = coords.get(name)
            if v is None:
                lows.append(inf)
                highs.append(inf)
                omitted.append(name)
            else:
                lows.append(v)
                highs.append(-v)
        lows += highs
        mask = _all_rows(self._bounds[:, :n] <= np.array(lows)[:, None], axis=0)
        if vb is None:  # ... so the piece is decided by the first-piece flag
            mask &= self._first[:n]
        if omitted and absent is Absent.NO_MATCH:  # ... and a constrained attribute by absent semantics
            for name in omitted:
                mask &= np.isneginf(self._bounds[1 + self._names.index(name), :n])
        entries = self._rows
        rows = mask.nonzero()[0].tolist()
        if not self._n_exact:
            return [entries[r] for r in rows]
        exact = self._exact
        return [entries[r] for r in rows if not exact[r] or entries[r].subscription.matches(values, absent)]

    def partition(self, x_axis: bool, mid: float) -> tuple[list[SubEntry], list[SubEntry]]:
        """Entries below ``mid`` and at or above it on the split axis (Program 3.1 line 42-44)."""
        coord = self._px[: self.n] if x_axis else self._py[: self.n]
        low = (coord < mid).tolist()
        lower = [e for e, lo in zip(self._rows, low, strict=True) if lo]
        upper = [e for e, lo in zip(self._rows, low, strict=True) if not lo]
        return lower, upper
