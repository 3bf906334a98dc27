"""Workloads for tests and benchmarks: a small boundary-heavy schema, and stock quotes.

The small generator draws predicates from a few boundary values so that open/closed bounds, equalities and
string prefixes collide often — where an inexact overlap test or routing shortcut would show. The stock workload
reads the PADRES demo quotes from ``../shared/data/stockquotes`` beside the repository when present, and falls
back to a synthetic random walk with the same shape anywhere else.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from p2pubsub.model import (
    Absent,
    Event,
    Range,
    Schema,
    StringEq,
    StringPrefix,
    Subscription,
    ValidationError,
    parse_event,
    parse_filter,
)

# -- small boundary-heavy schema (property tests) ------------------------------------------------------------

SMALL_INTS = (0, 1, 5, 6, 10, 19, 20)
SMALL_FLOATS = (0.0, 2.5, 5.0, math.nextafter(5.0, math.inf), 7.5, 10.0)
SMALL_STRINGS = ("", "a", "ab", "abc", "b", "ba")


def small_schema(absent: Absent = Absent.NO_MATCH, name: str = "T") -> Schema:
    return Schema.from_dict(
        name,
        {
            "attributes": {
                "x": {"type": "int", "min": 0, "max": 20},
                "y": {"type": "float", "min": 0.0, "max": 10.0},
                "s": {"type": "string"},
            },
            "absent": absent.value,
        },
    )


def _numeric_preds(rng: random.Random, values: Sequence[Any]) -> dict[str, Any]:
    kind = rng.randrange(5)
    if kind == 0:
        return {"eq": rng.choice(values)}
    lo, hi = sorted((rng.choice(values), rng.choice(values)))
    if kind == 1:
        return {rng.choice(("ge", "gt")): lo}
    if kind == 2:
        return {rng.choice(("le", "lt")): hi}
    return {rng.choice(("ge", "gt")): lo, rng.choice(("le", "lt")): hi}


def random_filter(
    rng: random.Random, schema: Schema, attributes: Sequence[str] | None = None, *, full_numeric: bool = False
) -> Subscription:
    """A valid filter over ``attributes`` (default: a random non-empty subset)."""
    names = list(schema.names)
    while True:
        attrs = list(attributes) if attributes is not None else rng.sample(names, rng.randint(1, len(names)))
        body: dict[str, Any] = {}
        for a in attrs:
            attr = schema.attribute(a)
            if attr.type.value == "string":
                body[a] = {rng.choice(("eq", "prefix")): rng.choice(SMALL_STRINGS)}
            elif full_numeric and rng.random() < 0.3:
                body[a] = {"ge": attr.min}
            else:
                body[a] = _numeric_preds(rng, SMALL_INTS if attr.type.value == "int" else SMALL_FLOATS)
        try:
            return parse_filter(schema, body)
        except ValidationError:
            continue  # an empty range: draw again


def _value_in(rng: random.Random, c: Any, integer: bool) -> Any | None:
    if isinstance(c, StringEq):
        return c.value
    if isinstance(c, StringPrefix):
        return c.prefix + rng.choice(("", "a", "b", "zz"))
    assert isinstance(c, Range)
    cands: list[Any]
    if integer:
        cands = [c.lo, c.hi, rng.randint(int(c.lo), int(c.hi))] if c.lo <= c.hi else []
    else:
        lo, hi = float(c.lo), float(c.hi)
        cands = [lo, hi, math.nextafter(lo, math.inf), math.nextafter(hi, -math.inf), (lo + hi) / 2,
                 rng.uniform(lo, hi)]
    cands = [v for v in cands if c.contains(v)]
    return rng.choice(cands) if cands else None


def conforming_event(rng: random.Random, schema: Schema, adv: Subscription) -> Event | None:
    """An event carrying exactly ``adv``'s attributes, each inside its constraint (None if none exists)."""
    values = {}
    for name, c in adv.constraints:
        v = _value_in(rng, c, schema.attribute(name).type.value == "int")
        if v is None:
            return None
        values[name] = v
    return parse_event(schema, values)


def random_event(rng: random.Random, schema: Schema, attributes: Sequence[str]) -> Event:
    values: dict[str, Any] = {}
    for a in attributes:
        attr = schema.attribute(a)
        if attr.type.value == "string":
            values[a] = rng.choice(SMALL_STRINGS) + rng.choice(("", "a", "c"))
        elif attr.type.value == "int":
            values[a] = rng.choice(SMALL_INTS)
        else:
            values[a] = rng.choice(SMALL_FLOATS)
    return parse_event(schema, values)


# -- stock quotes (benchmarks) -------------------------------------------------------------------------------

STOCK = Schema.from_dict(
    "STOCK",
    {
        "attributes": {
            "symbol": {"type": "string"},
            "open": {"type": "float", "min": 0.0, "max": 100000.0},
            "high": {"type": "float", "min": 0.0, "max": 100000.0},
            "low": {"type": "float", "min": 0.0, "max": 100000.0},
            "close": {"type": "float", "min": 0.0, "max": 100000.0},
            "volume": {"type": "int", "min": 0, "max": 1 << 40},
        }
    },
)

_QUOTE = re.compile(r"\[(\w+),'?([^'\]]*)'?\]")
PRICE_FIELDS = ("open", "high", "low", "close")


def stockquotes_dir() -> Path:
    """``../shared/data/stockquotes`` beside the repository (may not exist outside this workplace)."""
    return Path(__file__).resolve().parents[1].parent / "shared" / "data" / "stockquotes"


@dataclass(frozen=True, slots=True)
class Quote:
    symbol: str
    open: float
    high: float
    low: float
    close: float
    volume: int

    def values(self) -> dict[str, Any]:
        return {"symbol": self.symbol, "open": self.open, "high": self.high, "low": self.low,
                "close": self.close, "volume": self.volume}


def parse_quote(line: str) -> Quote | None:
    fields = dict(_QUOTE.findall(line))
    try:
        return Quote(fields["symbol"], *(float(fields[f]) for f in PRICE_FIELDS), int(float(fields["volume"])))
    except (KeyError, ValueError):
        return None


def load_quotes(
    n_symbols: int, per_symbol: int, rng: random.Random, root: Path | None = None
) -> dict[str, list[Quote]]:
    """Quotes per symbol: the PADRES demo data when present, else a synthetic random walk (same schema)."""
    root = root if root is not None else stockquotes_dir()
    out: dict[str, list[Quote]] = {}
    if root.is_dir():
        for path in sorted(root.iterdir())[:n_symbols]:
            quotes = []
            with path.open() as f:
                for line in f:
                    q = parse_quote(line)
                    if q is not None:
                        quotes.append(q)
                    if len(quotes) >= per_symbol:
                        break
            if quotes:
                out[path.name] = quotes
        if out:
            return out
    for i in range(n_symbols):
        sym = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(4)) + str(i)
        price, quotes = rng.uniform(1, 100), []
        for _ in range(per_symbol):
            o = price
            c = max(0.01, o * math.exp(rng.gauss(0, 0.02)))
            hi, lo = max(o, c) * (1 + rng.random() * 0.01), min(o, c) * (1 - rng.random() * 0.01)
            quotes.append(Quote(sym, round(o, 2), round(hi, 2), round(lo, 2), round(c, 2), rng.randrange(10**7)))
            price = c
        out[sym] = quotes
    return out


def stock_advertisement(quotes: Sequence[Quote]) -> Subscription:
    """One publisher per symbol: the symbol and the observed price and volume ranges."""
    lo = min(q.low for q in quotes)
    hi = max(q.high for q in quotes)
    body = {"symbol": {"eq": quotes[0].symbol}, "volume": {"ge": 0, "le": max(q.volume for q in quotes)}}
    for f in PRICE_FIELDS:
        body[f] = {"ge": min(lo, *(getattr(q, f) for q in quotes)), "le": max(hi, *(getattr(q, f) for q in quotes))}
    return parse_filter(STOCK, body)


def stock_subscription(rng: random.Random, quotes: Sequence[Quote], selectivity: float = 0.5) -> Subscription:
    """A subscription on one symbol whose close-price window holds about ``selectivity`` of its quotes."""
    closes = sorted(q.close for q in quotes)
    width = max(1, int(len(closes) * selectivity))
    start = rng.randrange(0, len(closes) - width + 1)
    body = {"symbol": {"eq": quotes[0].symbol}, "close": {"ge": closes[start], "le": closes[start + width - 1]}}
    return parse_filter(STOCK, body)


def quote_event(q: Quote) -> Event:
    return parse_event(STOCK, q.values())


def cycle(seq: Sequence[Any]) -> Iterator[Any]:
    while True:
        yield from seq


__all__ = [
    "STOCK",
    "Quote",
    "conforming_event",
    "load_quotes",
    "parse_quote",
    "quote_event",
    "random_event",
    "random_filter",
    "small_schema",
    "stock_advertisement",
    "stock_subscription",
    "stockquotes_dir",
]
