"""The content model: schemas, subscriptions and events, validated with precise errors (pure)."""

from .errors import ValidationError
from .filters import Event, Range, StringEq, StringPrefix, Subscription, parse_event, parse_filter
from .schema import Absent, Attribute, AttrType, Schema, TreeOptions

__all__ = [
    "Absent",
    "AttrType",
    "Attribute",
    "Event",
    "Range",
    "Schema",
    "StringEq",
    "StringPrefix",
    "Subscription",
    "TreeOptions",
    "ValidationError",
    "parse_event",
    "parse_filter",
]
