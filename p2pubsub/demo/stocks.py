"""The stock-quote workload both demos share: a schema, a few subscribers' filters, and quotes to publish."""

from __future__ import annotations

import random
from pathlib import Path

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
    {"price": {"ge": 60}},
    {"symbol": {"prefix": "I"}, "volume": {"gt": 5_000_000}},
    {"price": {"ge": 20, "le": 25}},
    {"volume": {"ge": 30_000_000}},
    {"symbol": {"prefix": "Y"}},
    {"price": {"lt": 15}},
]
OPS = {"eq": "=", "ge": ">=", "gt": ">", "le": "<=", "lt": "<", "prefix": "starts with"}


def describe_filter(body: dict) -> str:
    """``{"price": {"ge": 20, "le": 21}}`` as ``price >= 20 and price <= 21``."""
    return " and ".join(f"{name} {OPS.get(op, op)} {_value(v)}" for name, preds in body.items()
                        for op, v in preds.items())


def _value(v: object) -> str:
    return f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v)


def describe_quote(q: dict) -> str:
    return f"{q['symbol']:<5} price {q['price']:>7.2f} volume {q['volume']:>11,}"


SYMBOLS = ["AAPL", "MSFT", "INTC", "IBM", "YHOO", "ORCL"]


def _quote_files() -> list[tuple[str, Path]]:
    base = data_path("stockquotes")
    return [] if base is None else [(sym, base / sym) for sym in SYMBOLS if (base / sym).exists()]


def quote_source() -> str:
    """Where :func:`quotes` takes its quotes from."""
    files = _quote_files()
    return f"PADRES stock quotes ({files[0][1].parent})" if files else "a synthetic market (no shared data folder)"


def quotes(rng: random.Random, count: int) -> list[dict]:
    """Real closing quotes of a few symbols when the data is there (their latest days), random ones otherwise."""
    symbols = SYMBOLS
    out = []
    if files := _quote_files():
        from ..workload.quotes import parse_quote_file

        per_symbol = -(-count // len(files))  # enough for ``count`` quotes even if some symbols' files are absent
        for sym, path in files:
            rows = parse_quote_file(path.read_text(), sym, sym)[0][-per_symbol:]
            out += [{"symbol": sym, "price": min(999.0, r.close), "volume": min(10**9, r.volume)} for r in rows]
    if not out:
        for i in range(count):
            sym = symbols[i % len(symbols)]
            price, volume = round(rng.uniform(10, 150), 2), rng.randint(10**5, 5 * 10**7)
            out.append({"symbol": sym, "price": price, "volume": volume})
    rng.shuffle(out)
    return out[:count]
