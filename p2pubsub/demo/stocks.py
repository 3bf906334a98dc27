"""The stock-quote workload both demos share: a schema, a few subscribers' filters, and quotes to publish."""

from __future__ import annotations

import random

from ..datadir import data_path
from ..model import Schema

ATTRIBUTES = {
    "symbol": {"type": "string"},
    "price": {"type": "float", "min": 0, "max": 1000},
    "volume": {"type": "int", "min": 0, "max": 1_000_000_000},
}
SCHEMA = Schema.from_dict("stocks", {"attributes": ATTRIBUTES})

FILTERS = [
    {"symbol": {"eq": "AAPL"}},
    {"symbol": {"eq": "MSFT"}, "price": {"lt": 27.0}},
    {"price": {"ge": 100}},
    {"symbol": {"prefix": "I"}, "volume": {"gt": 5_000_000}},
    {"price": {"ge": 20, "le": 21}},
    {"volume": {"ge": 30_000_000}},
]


def quotes(rng: random.Random, count: int) -> list[dict]:
    """Real closing quotes of a few symbols when the data is there, a random walk otherwise."""
    symbols = ["AAPL", "MSFT", "INTC", "IBM", "YHOO", "ORCL"]
    out = []
    base = data_path("stockquotes")
    if base is not None:
        from ..workload.quotes import parse_quote_file

        for sym in symbols:
            path = base / sym
            if path.exists():
                rows = parse_quote_file(path.read_text(), sym, sym)[0][-(count // len(symbols) + 1) :]
                out += [{"symbol": sym, "price": min(999.0, r.close), "volume": min(10**9, r.volume)} for r in rows]
    if not out:
        for i in range(count):
            sym = symbols[i % len(symbols)]
            price, volume = round(rng.uniform(10, 150), 2), rng.randint(10**5, 5 * 10**7)
            out.append({"symbol": sym, "price": price, "volume": volume})
    rng.shuffle(out)
    return out[:count]
