"""Logic space mapping (thesis §3.2, Fig. 3.1) and the geometry of the 2d-tree (§3.2.1, Fig. 3.2).

A range ``[v1, v2]`` of an attribute becomes the point ``(v1, v2)`` of a square whose sides are the attribute's
domain; an event value ``v`` becomes the target area ``{[min, v], [v, max]}``: exactly the points of the
ranges that contain ``v``. A tree node's area is a dyadic box: splitting halves it along x at even levels and
along y at odd levels, the lower half open at the cut (``[lo, mid)``) and the upper half closed (``[mid, hi]``).

The square is the domain widened by ``margin`` on every side so that widened subscription points (see
:mod:`p2pubsub.tree.pieces`) still fall inside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

INF = math.inf


@dataclass(frozen=True, slots=True)
class Interval:
    """An interval with explicit bounds; the lower bound of a tree area is always closed."""

    lo: float
    hi: float
    lo_closed: bool = True
    hi_closed: bool = True

    def contains(self, v: float) -> bool:
        return (self.lo < v or (self.lo_closed and v == self.lo)) and (v < self.hi or (self.hi_closed and v == self.hi))

    def halves(self) -> tuple[Interval, Interval]:
        mid = (self.lo + self.hi) / 2.0
        return Interval(self.lo, mid, self.lo_closed, False), Interval(mid, self.hi, True, self.hi_closed)

    def __str__(self) -> str:
        return f"{'[' if self.lo_closed else '('}{self.lo:g}, {self.hi:g}{']' if self.hi_closed else ')'}"


@dataclass(frozen=True, slots=True)
class Area:
    x: Interval
    y: Interval

    def contains(self, point: tuple[float, float]) -> bool:
        return self.x.contains(point[0]) and self.y.contains(point[1])

    def split(self, level: int) -> tuple[Area, Area]:
        """Children of a node at ``level``: cut on x at even levels, on y at odd ones (Program 3.1)."""
        if level % 2 == 0:
            a, b = self.x.halves()
            return Area(a, self.y), Area(b, self.y)
        a, b = self.y.halves()
        return Area(self.x, a), Area(self.x, b)

    def __str__(self) -> str:
        return f"{{{self.x}, {self.y}}}"


@dataclass(frozen=True, slots=True)
class Target:
    """The points an event's probe must reach: ``x <= xmax``, ``y >= ymin`` and ``y - x <= width``.

    ``target_area(v)`` is ``Target(v, v, inf)``; a cut-off clips ``width`` (thesis §3.5); an attribute the
    event omits, under match semantics, searches everything: ``Target(inf, -inf, width)`` (§3.4.1).
    """

    xmax: float
    ymin: float
    width: float = INF

    def hits(self, area: Area) -> bool:
        """Whether ``area`` may hold a point of the target. Conservative: never False when it does.

        Only the upper-left triangle ``y >= x`` ever holds points (a range has ``v1 <= v2``).
        """
        x1, x2, y1, y2 = area.x.lo, area.x.hi, area.y.lo, area.y.hi
        if x1 > self.xmax or y2 < self.ymin or y2 < x1:
            return False
        return max(y1, self.ymin) - min(x2, self.xmax) <= self.width

    def holds(self, point: tuple[float, float]) -> bool:
        x, y = point
        return x <= self.xmax and y >= self.ymin and y - x <= self.width


def point_of(lo: float, hi: float) -> tuple[float, float]:
    """Range ``[lo, hi]`` -> point ``(lo, hi)`` (thesis §3.2)."""
    return (lo, hi)


def target_area(value: float, width: float = INF) -> Target:
    """Event value ``v`` -> target area ``{[min, v], [v, max]}``, clipped below ``y = x + width``."""
    return Target(value, value, width)


@dataclass(frozen=True, slots=True)
class Space:
    """The 2d logic space of one attribute of one schema: the geometry shared by every node of its tree.

    ``root`` is the schema-qualified attribute name (``"stocks.price"``), the tree's root identifier; ``margin``
    how far widened points may lie outside the domain; ``cut`` the cut-off line's ``c`` (inf: none).
    """

    root: str
    lo: float
    hi: float
    margin: float = 0.0
    cut: float = INF  # the cut-off line's c (thesis §3.5); inf: no cut-off
    _areas: dict[str, Area] = field(default_factory=dict, init=False, repr=False, compare=False, hash=False)
    base: str = field(init=False, repr=False, compare=False, hash=False)  # the attribute: ``root`` without schema

    def __post_init__(self) -> None:
        object.__setattr__(self, "base", self.root.partition(".")[2])

    @property
    def root_area(self) -> Area:
        side = Interval(self.lo - self.margin, self.hi + self.margin)
        return Area(side, side)

    def area(self, path: str) -> Area:
        """The area of the node whose identifier is ``root`` + ``path`` (memoised: paths recur constantly)."""
        cached = self._areas.get(path)
        if cached is not None:
            return cached
        area = self.root_area if not path else self.area(path[:-1]).split(len(path) - 1)[path[-1] == "1"]
        if len(self._areas) < 100_000:
            self._areas[path] = area
        return area

    def path_of(self, point: tuple[float, float], level: int) -> str:
        """The identifier suffix of the level-``level`` node whose area holds ``point`` (Program 3.2)."""
        a = self.root_area
        xlo, xhi, ylo, yhi = a.x.lo, a.x.hi, a.y.lo, a.y.hi
        x, y = point
        bits = []
        for lvl in range(level):
            if lvl % 2 == 0:
                mid = (xlo + xhi) / 2.0
                if x < mid:
                    xhi = mid
                    bits.append("0")
                else:
                    xlo = mid
                    bits.append("1")
            else:
                mid = (ylo + yhi) / 2.0
                if y < mid:
                    yhi = mid
                    bits.append("0")
                else:
                    ylo = mid
                    bits.append("1")
        return "".join(bits)
