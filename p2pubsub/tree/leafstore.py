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


def coordinate(value: Any) -> float:
    return string_coordinate(value) if isinstance(value, str) else float(value)


def coordinates(values: Mapping[str, Any]) -> dict[str, float]:
    return {k: coordinate(v) for k, v in values.items()}


class _Column:
    __slots__ = ("free", "hi", "lo")

    def __init__(self, cap: int) -> None:
        self.lo = np.full(cap, -math.inf)
        self.hi = np.full(cap, math.inf)
        self.free = np.ones(cap, dtype=bool)

    def grow(self, cap: int) -> None:
        n = len(self.lo)
        self.lo = np.concatenate([self.lo, np.full(cap - n, -math.inf)])
        self.hi = np.concatenate([self.hi, np.full(cap - n, math.inf)])
        self.free = np.concatenate([self.free, np.ones(cap - n, dtype=bool)])

    def set(self, row: int, lo: float, hi: float, free: bool) -> None:
        self.lo[row], self.hi[row], self.free[row] = lo, hi, free

    def move(self, src: int, dst: int) -> None:
        self.lo[dst], self.hi[dst], self.free[dst] = self.lo[src], self.hi[src], self.free[src]


def _inclusive(lo: float, lo_closed: bool, hi: float, hi_closed: bool) -> tuple[float, float]:
    return (lo if lo_closed else math.nextafter(lo, math.inf)), (hi if hi_closed else math.nextafter(hi, -math.inf))


class LeafStore:
    """Subscription entries of one leaf: a row per entry, columns per attribute, plus the base piece."""

    def __init__(self) -> None:
        self.n = 0
        self._cap = 8
        self._rows: list[SubEntry] = []
        self._index: dict[Key, int] = {}
        self._cols: dict[str, _Column] = {}
        self._piece = _Column(self._cap)  # the piece's interval on the base attribute
        self._first = np.zeros(self._cap, dtype=bool)  # piece 0: stands for the subscription when base is absent
        self._exact = np.zeros(self._cap, dtype=bool)  # constrains a string: re-check candidates exactly
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
        for col in (*self._cols.values(), self._piece):
            col.grow(cap)
        pad = cap - self._cap
        self._first = np.concatenate([self._first, np.zeros(pad, dtype=bool)])
        self._exact = np.concatenate([self._exact, np.zeros(pad, dtype=bool)])
        self._px = np.concatenate([self._px, np.zeros(pad)])
        self._py = np.concatenate([self._py, np.zeros(pad)])
        self._cap = cap

    def add(self, entry: SubEntry) -> bool:
        """Store ``entry``; False (and nothing changes) when an entry with its key is already here."""
        if entry.key in self._index:
            return False
        if self.n == self._cap:
            self._grow()
        row = self.n
        constrained = dict(entry.subscription.constraints)
        for name in constrained:
            if name not in self._cols:
                self._cols[name] = _Column(self._cap)
        exact = False
        for name, col in self._cols.items():
            c = constrained.get(name)
            if c is None:
                col.set(row, -math.inf, math.inf, True)
            elif isinstance(c, Range):
                col.set(row, *_inclusive(float(c.lo), c.lo_closed, float(c.hi), c.hi_closed), False)
            else:
                col.set(row, *c.coords(), False)
                exact = True
        self._piece.set(row, *_inclusive(entry.piece_lo, True, entry.piece_hi, entry.piece_hi_closed), False)
        self._first[row] = entry.piece == 0
        self._exact[row] = exact
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
            for col in (*self._cols.values(), self._piece):
                col.move(last, row)
            for arr in (self._first, self._exact, self._px, self._py):
                arr[row] = arr[last]
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
        vb = coords.get(base)
        if vb is None:
            mask = self._first[:n].copy()
        else:
            mask = (self._piece.lo[:n] <= vb) & (self._piece.hi[:n] >= vb)
        for name, col in self._cols.items():
            v = coords.get(name)
            if v is None:
                if absent is Absent.NO_MATCH:
                    mask &= col.free[:n]
                continue
            mask &= col.lo[:n] <= v
            mask &= col.hi[:n] >= v
        rows = np.flatnonzero(mask)
        out = []
        for r in rows.tolist():
            entry = self._rows[r]
            if self._exact[r] and not entry.subscription.matches(values, absent):
                continue
            out.append(entry)
        return out

    def partition(self, x_axis: bool, mid: float) -> tuple[list[SubEntry], list[SubEntry]]:
        """Entries below ``mid`` and at or above it on the split axis (Program 3.1 line 42-44)."""
        coord = self._px[: self.n] if x_axis else self._py[: self.n]
        low = (coord < mid).tolist()
        lower = [e for e, lo in zip(self._rows, low, strict=True) if lo]
        upper = [e for e, lo in zip(self._rows, low, strict=True) if not lo]
        return lower, upper
