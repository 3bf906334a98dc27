"""From a validated subscription to the points stored in the tree (thesis §3.3, §3.5).

A subscription is installed under one base attribute, drawn at random among those it constrains (§3.3). Its
range on that attribute becomes a point of the attribute's 2d space, widened by a small random epsilon so that
no point sits on a corner and equal ranges become distinct points (the corner-point fix of §3.3). With the
cut-off line ``y = x + c`` (§3.5), a range wider than ``c`` is cut into pieces of a random width ``h < c``,
each its own point on ``y = x + h``; the pieces are half-open, so exactly one piece holds any value and each
subscriber still gets each event once.
"""

from __future__ import annotations

import math
import random
from collections.abc import Hashable
from dataclasses import dataclass

from ..model import Schema, Subscription
from .config import TreeConfig
from .space import INF, Space, Target
from .treeid import root_name

Host = Hashable


@dataclass(frozen=True, slots=True)
class CutOff:
    """The cut-off line ``y = x + c`` of one attribute (thesis §3.5)."""

    c: float

    def pieces(self, lo: float, hi: float, rng: random.Random) -> list[tuple[float, float, bool]]:
        """``[lo, hi]`` cut into half-open pieces ``[a, b)`` of one random width ``h`` in ``[c/2, c)``; the
        last piece is closed. A range no wider than ``c`` stays whole."""
        if hi - lo <= self.c:
            return [(lo, hi, True)]
        h = self.c * (0.5 + 0.5 * rng.random())
        cuts = [b for b in (lo + i * h for i in range(math.ceil((hi - lo) / h))) if b < hi] + [hi]
        return [(cuts[i], cuts[i + 1], i == len(cuts) - 2) for i in range(len(cuts) - 1)]


@dataclass(frozen=True, slots=True)
class SubEntry:
    """One stored subscription object (thesis §3.3.1: subscriber handle, sid, subscription).

    ``piece`` of ``pieces`` is the part of the base attribute's range this point stands for, as coordinates
    ``[piece_lo, piece_hi)`` (closed at the top when ``piece_hi_closed``).
    """

    sub_id: str
    version: int
    piece: int
    pieces: int
    home: Host
    subscription: Subscription
    base: str
    piece_lo: float
    piece_hi: float
    piece_hi_closed: bool
    point: tuple[float, float]

    @property
    def key(self) -> tuple[str, int, int]:
        return (self.sub_id, self.version, self.piece)


def space_of(schema: Schema, attribute: str, config: TreeConfig) -> Space:
    """The 2d space of one attribute: its domain, and the schema's tree geometry (the config's defaults for a
    schema that does not fix its own)."""
    lo, hi = schema.attribute(attribute).domain
    if schema.tree is not None:
        cutoff, widen = schema.tree.cutoff, schema.tree.widen
    else:
        cutoff, widen = (config.cutoff_fraction if config.cutoff else None), config.widen_fraction
    cut = INF if cutoff is None else cutoff * (hi - lo)
    return Space(root_name(schema.name, attribute), lo, hi, widen * (hi - lo), cut)


def probe_target(space: Space, value: float | None) -> Target:
    """The area an event's probes search in this attribute's space: the target area of its value, or the
    whole space for an attribute the event omits (match semantics), below the cut-off line when there is one.
    Widening moves points out by up to ``margin`` on both coordinates, hence the ``2 * margin``."""
    width = space.cut + 2.0 * space.margin
    if value is None:
        return Target(INF, -INF, width)
    return Target(value, value, width)


def make_entries(
    sub: Subscription,
    schema: Schema,
    sub_id: str,
    version: int,
    home: Host,
    config: TreeConfig,
    rng: random.Random,
) -> tuple[Space, list[SubEntry]]:
    """Choose the base attribute, cut its range at the cut-off and widen each piece into a point."""
    base = rng.choice(sub.attributes)
    space = space_of(schema, base, config)
    lo, hi = sub.constraint(base).coords()
    parts = CutOff(space.cut).pieces(lo, hi, rng) if space.cut < INF else [(lo, hi, True)]
    entries = []
    for i, (a, b, closed) in enumerate(parts):
        eps = space.margin * (1.0 - rng.random())  # in (0, margin]
        entries.append(
            SubEntry(sub_id, version, i, len(parts), home, sub, base, a, b, closed, (a - eps, b + eps))
        )
    return space, entries
