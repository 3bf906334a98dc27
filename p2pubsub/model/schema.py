"""Named schemas with typed attributes (thesis §3.1, §3.3.1).

An attribute is ``int`` or ``float`` over a closed domain ``[min, max]``, or ``string`` (equality and
prefix). Each attribute's domain spans its own 2d logic space (thesis §3.2). Schemas only grow: adding
attributes leaves every installed subscription untouched (§3.3.1), so an extension must keep every
existing attribute exactly as it was.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from .errors import ValidationError
from .strings import STRING_MAX

NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
MAX_ATTRIBUTES = 64
# ints beyond 2**53 would lose exactness as float64 coordinates and columns
INT_LIMIT = 1 << 53


class AttrType(StrEnum):
    INT = "int"
    FLOAT = "float"
    STRING = "string"


class Absent(StrEnum):
    """What an event that omits an attribute means to a subscription constraining it (thesis §3.4.1)."""

    NO_MATCH = "no_match"  # the subscription does not match (the default)
    MATCH = "match"  # the constraint is ignored; every attribute tree must then be searched


def check_name(name: Any, what: str, path: str) -> str:
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise ValidationError(
            "invalid_name",
            f"{what} name {name!r} must match {NAME_RE.pattern} (letters, digits, '_' and '-')",
            path,
        )
    return name


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_finite(value: Any, path: str) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValidationError("not_finite", f"{value!r} is not a finite number", path)


@dataclass(frozen=True, slots=True)
class Attribute:
    name: str
    type: AttrType
    min: float | int | None = None
    max: float | int | None = None

    @property
    def numeric(self) -> bool:
        return self.type is not AttrType.STRING

    @property
    def domain(self) -> tuple[float, float]:
        """The attribute's coordinate domain: one side of its square 2d logic space."""
        if self.type is AttrType.STRING:
            return 0.0, STRING_MAX
        return float(self.min), float(self.max)  # type: ignore[arg-type]

    def check_value(self, value: Any, path: str) -> None:
        """Raise unless ``value`` is a valid value of this attribute (type, finiteness, domain)."""
        if self.type is AttrType.STRING:
            if not isinstance(value, str):
                raise ValidationError("wrong_type", f"{self.name} is a string, got {_kind(value)}", path)
            return
        if self.type is AttrType.INT:
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValidationError("wrong_type", f"{self.name} is an int, got {_kind(value)}", path)
        elif not is_number(value):
            raise ValidationError("wrong_type", f"{self.name} is a float, got {_kind(value)}", path)
        check_finite(value, path)
        if not self.min <= value <= self.max:  # type: ignore[operator]
            raise ValidationError(
                "out_of_domain", f"{self.name}={value!r} is outside its domain [{self.min}, {self.max}]", path
            )

    def to_dict(self) -> dict[str, Any]:
        if self.type is AttrType.STRING:
            return {"type": "string"}
        return {"type": self.type.value, "min": self.min, "max": self.max}

    @classmethod
    def from_dict(cls, name: str, spec: Any, path: str) -> Attribute:
        check_name(name, "attribute", path)
        if not isinstance(spec, Mapping):
            raise ValidationError("invalid_schema", f"attribute {name} must be an object", path)
        unknown = set(spec) - {"type", "min", "max"}
        if unknown:
            raise ValidationError("invalid_schema", f"attribute {name}: unknown keys {sorted(unknown)}", path)
        try:
            kind = AttrType(spec.get("type"))
        except ValueError:
            raise ValidationError(
                "invalid_schema",
                f"attribute {name}: type must be one of int, float, string, got {spec.get('type')!r}",
                f"{path}.type",
            ) from None
        if kind is AttrType.STRING:
            if "min" in spec or "max" in spec:
                raise ValidationError("invalid_schema", f"string attribute {name} takes no min/max", path)
            return cls(name, kind)
        bounds = []
        for key in ("min", "max"):
            if key not in spec:
                raise ValidationError("invalid_schema", f"{kind} attribute {name} needs '{key}'", path)
            v = spec[key]
            if kind is AttrType.INT and (not isinstance(v, int) or isinstance(v, bool)):
                raise ValidationError("wrong_type", f"{name}.{key} must be an int, got {_kind(v)}", f"{path}.{key}")
            if not is_number(v):
                raise ValidationError("wrong_type", f"{name}.{key} must be a number, got {_kind(v)}", f"{path}.{key}")
            check_finite(v, f"{path}.{key}")
            if abs(v) > INT_LIMIT:
                raise ValidationError("out_of_domain", f"{name}.{key}={v} exceeds ±2**53", f"{path}.{key}")
            bounds.append(v if kind is AttrType.INT else float(v))
        lo, hi = bounds
        if not lo < hi:
            raise ValidationError("invalid_schema", f"attribute {name}: min {lo} must be below max {hi}", path)
        return cls(name, kind, lo, hi)


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    return f"{type(value).__name__} {value!r}"[:80]


@dataclass(frozen=True, slots=True)
class TreeOptions:
    """The geometry of a schema's 2d-trees, fixed when the schema is created so that every node agrees on it.

    ``cutoff``: the cut-off line ``y = x + c`` as a fraction of each attribute's domain width (thesis §3.5),
    or None for none; ``widen``: the bound of the corner-point widening epsilon, same unit (§3.3).
    """

    cutoff: float | None = 0.25
    widen: float = 1e-4

    def to_dict(self) -> dict[str, Any]:
        return {"cutoff": self.cutoff, "widen": self.widen}

    @classmethod
    def from_dict(cls, body: Any, path: str = "tree") -> TreeOptions:
        if not isinstance(body, Mapping) or set(body) - {"cutoff", "widen"}:
            raise ValidationError("invalid_schema", "'tree' takes only 'cutoff' and 'widen'", path)
        default = cls()
        cutoff = body.get("cutoff", default.cutoff)
        widen = body.get("widen", default.widen)
        if cutoff is not None and (not is_number(cutoff) or not 0 < cutoff <= 1):
            raise ValidationError("invalid_schema", f"tree.cutoff must be null or in (0, 1], got {cutoff!r}", path)
        if not is_number(widen) or not 0 < widen < 0.01:
            raise ValidationError("invalid_schema", f"tree.widen must be in (0, 0.01), got {widen!r}", path)
        return cls(None if cutoff is None else float(cutoff), float(widen))


@dataclass(frozen=True, slots=True)
class Schema:
    """A named pub/sub schema. ``attributes`` keeps declaration order; look-ups go through :meth:`attribute`."""

    name: str
    attributes: tuple[Attribute, ...]
    absent: Absent = Absent.NO_MATCH
    tree: TreeOptions | None = None  # None: the node's configured defaults apply
    _by_name: dict[str, Attribute] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {a.name: a for a in self.attributes})

    def attribute(self, name: str, path: str | None = None) -> Attribute:
        try:
            return self._by_name[name]
        except KeyError:
            raise ValidationError(
                "unknown_attribute", f"schema {self.name!r} has no attribute {name!r}", path or name
            ) from None

    def has(self, name: str) -> bool:
        return name in self._by_name

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.attributes)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "name": self.name,
            "attributes": {a.name: a.to_dict() for a in self.attributes},
            "absent": self.absent.value,
        }
        if self.tree is not None:
            out["tree"] = self.tree.to_dict()
        return out

    @classmethod
    def from_dict(cls, name: str, body: Any) -> Schema:
        """Parse the JSON form ``{"attributes": {...}, "absent": "no_match"}`` with precise errors."""
        check_name(name, "schema", "name")
        if not isinstance(body, Mapping):
            raise ValidationError("invalid_schema", "a schema must be a JSON object", "")
        unknown = set(body) - {"attributes", "absent", "name", "tree"}
        if unknown:
            raise ValidationError("invalid_schema", f"unknown schema keys {sorted(unknown)}", "")
        if "name" in body and body["name"] != name:
            raise ValidationError("invalid_schema", f"body names schema {body['name']!r}, not {name!r}", "name")
        attrs = body.get("attributes")
        if not isinstance(attrs, Mapping) or not attrs:
            raise ValidationError("invalid_schema", "'attributes' must be a non-empty object", "attributes")
        if len(attrs) > MAX_ATTRIBUTES:
            raise ValidationError("invalid_schema", f"at most {MAX_ATTRIBUTES} attributes", "attributes")
        parsed = tuple(Attribute.from_dict(k, v, f"attributes.{k}") for k, v in attrs.items())
        try:
            absent = Absent(body.get("absent", Absent.NO_MATCH.value))
        except ValueError:
            raise ValidationError(
                "invalid_schema", f"'absent' must be 'no_match' or 'match', got {body.get('absent')!r}", "absent"
            ) from None
        tree = TreeOptions.from_dict(body["tree"]) if body.get("tree") is not None else None
        return cls(name, parsed, absent, tree)

    def extension_error(self, newer: Schema) -> str | None:
        """Why ``newer`` is not a valid growth of this schema, or None if it is (§3.3.1: attributes only added)."""
        if newer.name != self.name:
            return f"schema name differs: {newer.name!r} vs {self.name!r}"
        if newer.absent is not self.absent:
            return "'absent' semantics cannot change once subscriptions exist"
        if newer.tree != self.tree:
            return "the tree geometry ('tree') cannot change once subscriptions exist"
        for a in self.attributes:
            if not newer.has(a.name):
                return f"attribute {a.name!r} cannot be removed"
            if newer.attribute(a.name) != a:
                return f"attribute {a.name!r} cannot change (its domain places installed subscriptions)"
        return None
