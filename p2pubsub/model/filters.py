"""Subscriptions (conjunctions of predicates) and events, parsed against a schema and matched exactly.

A subscription constrains at least one attribute. Numeric predicates ``eq ge gt le lt`` combine by
intersection into one :class:`Range` per attribute; string attributes take ``eq`` or ``prefix``. Events map
attribute names to values. Everything that reaches the 2d-tree has been validated here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import ValidationError
from .schema import Absent, Attribute, AttrType, Schema, is_number
from .strings import prefix_interval, string_coordinate

NUMERIC_OPS = frozenset({"eq", "ge", "gt", "le", "lt"})
STRING_OPS = frozenset({"eq", "prefix"})
MAX_STRING = 1024  # bytes of one string value or prefix


@dataclass(frozen=True, slots=True)
class Range:
    """A numeric interval with explicit open/closed bounds."""

    lo: float | int
    hi: float | int
    lo_closed: bool = True
    hi_closed: bool = True

    def contains(self, v: float | int) -> bool:
        return (self.lo < v or (self.lo_closed and self.lo == v)) and (
            v < self.hi or (self.hi_closed and v == self.hi)
        )

    def coords(self) -> tuple[float, float]:
        return float(self.lo), float(self.hi)

    def to_dict(self) -> dict[str, Any]:
        if self.lo == self.hi:
            return {"eq": self.lo}
        return {"ge" if self.lo_closed else "gt": self.lo, "le" if self.hi_closed else "lt": self.hi}


@dataclass(frozen=True, slots=True)
class StringEq:
    value: str

    def contains(self, v: Any) -> bool:
        return v == self.value

    def coords(self) -> tuple[float, float]:
        c = string_coordinate(self.value)
        return c, c

    def to_dict(self) -> dict[str, Any]:
        return {"eq": self.value}


@dataclass(frozen=True, slots=True)
class StringPrefix:
    prefix: str

    def contains(self, v: Any) -> bool:
        return isinstance(v, str) and v.startswith(self.prefix)

    def coords(self) -> tuple[float, float]:
        return prefix_interval(self.prefix)

    def to_dict(self) -> dict[str, Any]:
        return {"prefix": self.prefix}


Constraint = Range | StringEq | StringPrefix


@dataclass(frozen=True, slots=True)
class Subscription:
    """A validated filter: ``constraints`` maps attribute name -> constraint, sorted by name."""

    schema: str
    constraints: tuple[tuple[str, Constraint], ...]

    def matches(self, values: Mapping[str, Any], absent: Absent = Absent.NO_MATCH) -> bool:
        """Exact match (thesis §3.4.1 for absent attributes)."""
        for name, c in self.constraints:
            if name not in values:
                if absent is Absent.NO_MATCH:
                    return False
                continue
            if not c.contains(values[name]):
                return False
        return True

    @property
    def attributes(self) -> tuple[str, ...]:
        return tuple(n for n, _ in self.constraints)

    def constraint(self, name: str) -> Constraint:
        for n, c in self.constraints:
            if n == name:
                return c
        raise KeyError(name)

    def to_filter(self) -> dict[str, dict[str, Any]]:
        return {n: c.to_dict() for n, c in self.constraints}


@dataclass(frozen=True, slots=True)
class Event:
    schema: str
    values: Mapping[str, Any]


def parse_filter(schema: Schema, body: Any, path: str = "filter") -> Subscription:
    """Validate a JSON filter such as ``{"price": {"ge": 10, "le": 20}, "sym": {"eq": "AAPL"}}``."""
    if not isinstance(body, Mapping):
        raise ValidationError("invalid_filter", "a filter must be an object of attribute -> predicates", path)
    if not body:
        raise ValidationError("empty_filter", "a subscription must constrain at least one attribute", path)
    constraints = []
    for name in sorted(body):
        attr = schema.attribute(name, f"{path}.{name}")
        constraints.append((name, _parse_predicates(attr, body[name], f"{path}.{name}")))
    return Subscription(schema.name, tuple(constraints))


def parse_event(schema: Schema, body: Any, path: str = "attributes") -> Event:
    """Validate an event's attribute -> value map; every value must lie in its attribute's domain."""
    if not isinstance(body, Mapping):
        raise ValidationError("invalid_event", "event attributes must be an object of attribute -> value", path)
    if not body:
        raise ValidationError("empty_event", "an event must carry at least one attribute", path)
    values = {}
    for name, v in body.items():
        attr = schema.attribute(name, f"{path}.{name}")
        attr.check_value(v, f"{path}.{name}")
        if attr.type is AttrType.STRING:
            _check_string_size(v, f"{path}.{name}")
        values[name] = float(v) if attr.type is AttrType.FLOAT else v
    return Event(schema.name, values)


def _check_string_size(v: str, path: str) -> None:
    if len(v.encode("utf-8")) > MAX_STRING:
        raise ValidationError("too_long", f"strings are limited to {MAX_STRING} bytes", path)


def _parse_predicates(attr: Attribute, preds: Any, path: str) -> Constraint:
    if not isinstance(preds, Mapping) or not preds:
        raise ValidationError(
            "invalid_filter", f"predicates on {attr.name} must be a non-empty object such as {{\"eq\": ...}}", path
        )
    ops = NUMERIC_OPS if attr.numeric else STRING_OPS
    for op in preds:
        if op not in ops:
            raise ValidationError(
                "unknown_operator", f"{attr.type} attribute {attr.name} takes {sorted(ops)}, not {op!r}", f"{path}.{op}"
            )
    if not attr.numeric:
        if len(preds) != 1:
            raise ValidationError("invalid_filter", f"string attribute {attr.name} takes one of eq or prefix", path)
        (op, v), = preds.items()
        if not isinstance(v, str):
            got = type(v).__name__
            raise ValidationError("wrong_type", f"{attr.name}.{op} needs a string, got {got}", f"{path}.{op}")
        _check_string_size(v, f"{path}.{op}")
        return StringEq(v) if op == "eq" else StringPrefix(v)
    for op, v in preds.items():
        attr.check_value(v, f"{path}.{op}")
    lo, hi = attr.min, attr.max
    lo_closed = hi_closed = True
    for op, v in preds.items():
        v = float(v) if attr.type is AttrType.FLOAT else v
        if op in ("eq", "ge", "gt") and (v > lo or (v == lo and op == "gt")):
            lo, lo_closed = v, op != "gt"
        if op in ("eq", "le", "lt") and (v < hi or (v == hi and op == "lt")):
            hi, hi_closed = v, op != "lt"
    if attr.type is AttrType.INT:  # integers have no open bounds: gt 5 is ge 6
        if not lo_closed:
            lo, lo_closed = lo + 1, True
        if not hi_closed:
            hi, hi_closed = hi - 1, True
    if lo > hi or (lo == hi and not (lo_closed and hi_closed)):
        raise ValidationError("empty_range", f"the predicates on {attr.name} admit no value: {dict(preds)}", path)
    if attr.type is AttrType.FLOAT:
        lo, hi = float(lo), float(hi)
        assert math.isfinite(lo) and math.isfinite(hi)
    return Range(lo, hi, lo_closed, hi_closed)


__all__ = [
    "Constraint",
    "Event",
    "Range",
    "StringEq",
    "StringPrefix",
    "Subscription",
    "is_number",
    "parse_event",
    "parse_filter",
]
