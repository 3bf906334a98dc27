"""Reader for the PADRES stock-quote files (seed 001, §5.1): one file per symbol, one daily bar a line::

    [class,'STOCK'],[symbol,'AAPL'],[open,63.30],[high,64.25],[low,62.05],[close,64.18],[volume,10924200],[date,'28-Dec-04']

Files list the newest day first; we return quotes oldest first. Malformed lines raise :class:`QuoteFormatError`
naming the file, line and field. A well-formed line whose prices contradict each other (``open`` or ``close``
outside ``[low, high]``, or a price <= 0) is dropped and recorded in :attr:`StockData.dropped`, not fatal: the
shipped data has one (``ATCO`` line 1192, ``open`` 31007.00 with ``high`` 9.38), and keeping it would stretch the
``open`` domain 40-fold.

Dates become integer day numbers (days since 1970-01-01) so subscriptions can take ranges over them; two-digit
years pivot at 70 (``'84'`` is 1984, ``'04'`` is 2004; the data spans 1984-2004).
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from ..datadir import data_path, describe_missing

QUOTES_PARTS = ("stockquotes",)
FIELDS = ("class", "symbol", "open", "high", "low", "close", "volume", "date")
_FIELD_RE = re.compile(r"\[([^\[\],]*),([^\[\]]*)\]")
_NUMBER_RE = re.compile(r"^[0-9]+(\.[0-9]+)?$")
_STRING_RE = re.compile(r"^'([^']*)'$")
_DATE_RE = re.compile(r"^(\d{1,2})-([A-Z][a-z]{2})-(\d{2})$")
# the fast path: one regex over a whole file; if any line does not match, the field-by-field parser names it
_FILE_RE = re.compile(
    r"^\[class,'STOCK'\],\[symbol,'([^'\[\],]+)'\],\[open,([0-9]+(?:\.[0-9]+)?)\],\[high,([0-9]+(?:\.[0-9]+)?)\],"
    r"\[low,([0-9]+(?:\.[0-9]+)?)\],\[close,([0-9]+(?:\.[0-9]+)?)\],\[volume,([0-9]+)\],\[date,'([^']*)'\]\s*$",
    re.MULTILINE,
)
_MONTHS = {
    m: i for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), 1)
}
_EPOCH = dt.date(1970, 1, 1)


class QuoteFormatError(ValueError):
    """A malformed quote line: ``file:line: message``."""


class Quote(NamedTuple):
    symbol: str
    open: float
    high: float
    low: float
    close: float
    volume: int
    day: int  # days since 1970-01-01

    @property
    def open_close_diff(self) -> float:
        """PADRES' ``openClose%Diff``: ``|close − open| / open`` (0.0 in the paper's example)."""
        return abs(self.close - self.open) / self.open

    @property
    def high_low_diff(self) -> float:
        """PADRES' ``highLow%Diff``: ``(high − low) / low`` (18.62 vs 18.37 gives the paper's 0.014)."""
        return (self.high - self.low) / self.low


@functools.lru_cache(maxsize=16384)  # ~5,000 distinct trading days, shared by every symbol
def day_number(text: str) -> int:
    """``'28-Dec-04'`` -> days since 1970-01-01; raises ValueError on a bad date."""
    m = _DATE_RE.match(text)
    if not m:
        raise ValueError(f"date {text!r} is not D-Mon-YY")
    day, mon, yy = int(m.group(1)), m.group(2), int(m.group(3))
    if mon not in _MONTHS:
        raise ValueError(f"date {text!r} has an unknown month {mon!r}")
    year = 2000 + yy if yy < 70 else 1900 + yy
    return (dt.date(year, _MONTHS[mon], day) - _EPOCH).days


def parse_quote_line(line: str, source: str = "<quotes>", lineno: int = 1, symbol: str | None = None) -> Quote:
    """Parse one line; ``symbol``, when given, is the symbol the file name promises."""
    text = line.strip()
    where = f"{source}:{lineno}"
    fields = _FIELD_RE.findall(text)
    if not fields or ",".join(f"[{k},{v}]" for k, v in fields) != text:
        raise QuoteFormatError(f"{where}: not a list of [key,value] fields: {text[:80]!r}")
    if len(fields) != len(FIELDS):
        raise QuoteFormatError(f"{where}: expected {len(FIELDS)} fields {list(FIELDS)}, got {len(fields)}")
    values: dict[str, str] = {}
    for pos, ((key, value), want) in enumerate(zip(fields, FIELDS, strict=True), start=1):
        if key != want:
            raise QuoteFormatError(f"{where}: field {pos} is {key!r}, expected {want!r}")
        values[key] = value

    def string(key: str) -> str:
        m = _STRING_RE.match(values[key])
        if not m:
            raise QuoteFormatError(f"{where}: {key} must be a quoted string, got {values[key]!r}")
        return m.group(1)

    def number(key: str) -> float:
        if not _NUMBER_RE.match(values[key]):
            raise QuoteFormatError(f"{where}: {key} must be a non-negative number, got {values[key]!r}")
        return float(values[key])

    if string("class") != "STOCK":
        raise QuoteFormatError(f"{where}: class must be 'STOCK', got {values['class']!r}")
    sym = string("symbol")
    if not sym:
        raise QuoteFormatError(f"{where}: empty symbol")
    if symbol is not None and sym != symbol:
        raise QuoteFormatError(f"{where}: symbol {sym!r} in the file of {symbol!r}")
    if not values["volume"].isdigit():
        raise QuoteFormatError(f"{where}: volume must be a non-negative integer, got {values['volume']!r}")
    try:
        day = day_number(string("date"))
    except ValueError as e:
        raise QuoteFormatError(f"{where}: {e}") from None
    return Quote(sym, number("open"), number("high"), number("low"), number("close"), int(values["volume"]), day)


def inconsistency(q: Quote) -> str | None:
    """Why a well-formed quote cannot be a daily bar, or None."""
    if min(q.open, q.high, q.low, q.close) <= 0:
        return "a price is zero"
    if not (q.low <= q.open <= q.high and q.low <= q.close <= q.high):
        return f"open {q.open} / close {q.close} outside [low {q.low}, high {q.high}]"
    return None


def parse_quote_file(text: str, source: str, symbol: str | None = None) -> tuple[list[Quote], list[str]]:
    """A file's quotes oldest first, and ``file:line: reason`` of each dropped line."""
    numbered = [(n, ln) for n, ln in enumerate(text.splitlines(), start=1) if ln.strip()]
    found = _FILE_RE.findall(text)
    fast = len(found) == len(numbered) and (symbol is None or all(f[0] == symbol for f in found))
    if fast:
        try:
            parsed = [
                Quote(sym, float(o), float(h), float(lo), float(c), int(v), day_number(d))
                for sym, o, h, lo, c, v, d in found
            ]
        except ValueError:
            fast = False  # a bad date: the line-by-line parser names it
    if not fast:
        parsed = [parse_quote_line(ln, source, n, symbol) for n, ln in numbered]
    quotes: list[Quote] = []
    dropped: list[str] = []
    for (lineno, _), q in zip(numbered, parsed, strict=True):
        why = inconsistency(q)
        if why:
            dropped.append(f"{source}:{lineno}: {why}")
        else:
            quotes.append(q)
    quotes.sort(key=lambda q: q.day)  # stable: same-day duplicates keep file order
    return quotes, dropped


@dataclass(frozen=True)
class StockData:
    """Quotes per symbol (oldest first), symbols sorted by name."""

    quotes: dict[str, tuple[Quote, ...]]
    dropped: tuple[str, ...]

    @property
    def symbols(self) -> tuple[str, ...]:
        return tuple(self.quotes)

    @functools.cached_property
    def maxima(self) -> dict[str, float]:
        """Largest ``high``, ``volume``, ``day``, ratios, and the first day: what the schema's domains need."""
        qs = [q for quotes in self.quotes.values() for q in quotes]
        return {
            "high": max(q.high for q in qs),
            "volume": float(max(q.volume for q in qs)),
            "day": float(max(q.day for q in qs)),
            "first_day": float(min(q.day for q in qs)),
            "open_close_diff": max(q.open_close_diff for q in qs),
            "high_low_diff": max(q.high_low_diff for q in qs),
        }


def quotes_folder() -> Path | None:
    return data_path(*QUOTES_PARTS)


def load_stock_data(folder: str | Path | None = None, symbols: int | Sequence[str] | None = None) -> StockData:
    """Read the quote files: all of them, the first ``symbols`` by name, or the named ones. Cached per process."""
    root = Path(folder) if folder is not None else quotes_folder()
    if root is None or not root.is_dir():
        raise FileNotFoundError(describe_missing(*QUOTES_PARTS) if folder is None else f"no folder {folder}")
    names = sorted(p.name for p in root.iterdir() if p.is_file() and not p.name.startswith("."))
    if isinstance(symbols, int):
        if symbols < 1:
            raise ValueError(f"symbols must be >= 1, got {symbols}")
        names = names[:symbols]
    elif symbols is not None:
        missing = sorted(set(symbols) - set(names))
        if missing:
            raise FileNotFoundError(f"no quote files for {missing} in {root}")
        names = sorted(set(symbols))
    if not names:
        raise FileNotFoundError(f"no quote files in {root}")
    return _load(str(root.resolve()), tuple(names))


@functools.lru_cache(maxsize=8)
def _load(root: str, names: tuple[str, ...]) -> StockData:
    quotes: dict[str, tuple[Quote, ...]] = {}
    dropped: list[str] = []
    for name in names:
        path = Path(root) / name
        qs, bad = parse_quote_file(path.read_text(encoding="utf-8"), name, symbol=name)
        if not qs:
            raise QuoteFormatError(f"{name}: no usable quotes")
        quotes[name] = tuple(qs)
        dropped.extend(bad)
    return StockData(quotes, tuple(dropped))
