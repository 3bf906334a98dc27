"""The PADRES stock-quote workload: the parser's errors, the schema, rated subscriptions, placement, determinism."""

from __future__ import annotations

import collections
import datetime as dt
import random

import pytest

from p2pubsub.datadir import describe_missing
from p2pubsub.model import Schema, parse_event, parse_filter
from p2pubsub.workload import stocks_workload
from p2pubsub.workload.quotes import (
    QUOTES_PARTS,
    Quote,
    QuoteFormatError,
    day_number,
    load_stock_data,
    parse_quote_file,
    parse_quote_line,
    quotes_folder,
)
from p2pubsub.workload.stocks import quote_event, rated_filter, stock_schema

needs_data = pytest.mark.skipif(quotes_folder() is None, reason=describe_missing(*QUOTES_PARTS))

GOOD = (
    "[class,'STOCK'],[symbol,'AAPL'],[open,63.30],[high,64.25],[low,62.05],[close,64.18],"
    "[volume,10924200],[date,'28-Dec-04']"
)


def line(sym="AAPL", o="63.30", h="64.25", lo="62.05", c="64.18", v="10924200", d="28-Dec-04") -> str:
    return f"[class,'STOCK'],[symbol,'{sym}'],[open,{o}],[high,{h}],[low,{lo}],[close,{c}],[volume,{v}],[date,'{d}']"


def test_parse_a_quote_line():
    q = parse_quote_line(GOOD + "\r\n", "AAPL", 1, symbol="AAPL")
    assert q == Quote("AAPL", 63.30, 64.25, 62.05, 64.18, 10924200, (dt.date(2004, 12, 28) - dt.date(1970, 1, 1)).days)
    assert day_number("7-Sep-84") == (dt.date(1984, 9, 7) - dt.date(1970, 1, 1)).days
    # the paper's example publication: highLow%Diff 0.014, openClose%Diff 0.0
    yh = Quote("YH00", 18.37, 18.62, 18.37, 18.37, 6200, 0)
    assert round(yh.high_low_diff, 3) == 0.014 and yh.open_close_diff == 0.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("garbage", "AAPL:3: not a list of \\[key,value\\] fields"),
        (GOOD.replace("[open,", "[opn,"), "AAPL:3: field 3 is 'opn', expected 'open'"),
        (GOOD.rsplit(",[date", 1)[0], "AAPL:3: expected 8 fields"),
        (line(o="6x"), "AAPL:3: open must be a non-negative number, got '6x'"),
        (line(o="-1.0"), "AAPL:3: open must be a non-negative number"),
        (line(v="12.5"), "AAPL:3: volume must be a non-negative integer, got '12.5'"),
        (line(sym="MSFT"), "AAPL:3: symbol 'MSFT' in the file of 'AAPL'"),
        (line(d="28-Foo-04"), "AAPL:3: date '28-Foo-04' has an unknown month 'Foo'"),
        (line(d="32-Dec-04"), "AAPL:3: day is out of range"),
        (line(d="2004-12-28"), "AAPL:3: date '2004-12-28' is not D-Mon-YY"),
        (GOOD.replace("'STOCK'", "'BOND'"), "AAPL:3: class must be 'STOCK'"),
        (GOOD.replace("'AAPL'", "AAPL"), "AAPL:3: symbol must be a quoted string"),
    ],
)
def test_malformed_lines_name_file_line_and_field(text, message):
    with pytest.raises(QuoteFormatError, match=message):
        parse_quote_line(text, "AAPL", 3, symbol="AAPL")
    # the whole-file fast path falls back to the same precise error
    with pytest.raises(QuoteFormatError, match=message):
        parse_quote_file(f"{GOOD}\r\n\r\n{text}\r\n{GOOD}", "AAPL", symbol="AAPL")


def test_file_is_read_oldest_first_and_inconsistent_bars_are_dropped():
    text = "\r\n".join(
        [
            line(d="29-Dec-04"),
            line(o="31007.00", h="9.38", lo="9.38", c="9.38", d="28-Dec-04"),  # the ATCO glitch
            line(d="3-Jan-00"),
        ]
    )
    quotes, dropped = parse_quote_file(text, "AAPL", symbol="AAPL")
    assert [q.day for q in quotes] == sorted(q.day for q in quotes) and len(quotes) == 2
    assert dropped == ["AAPL:2: open 31007.0 / close 9.38 outside [low 9.38, high 9.38]"]


MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")  # not locale's %b


def write_folder(tmp_path, days: int = 60, symbols=("AAA", "BBB", "CCC")):
    """Quote files with varied ratios: prices random-walk, volumes and spreads vary."""
    rng = random.Random(1)
    start = dt.date(2001, 1, 1)
    for sym in symbols:
        rows = []
        price = rng.uniform(5, 50)
        for k in range(days):
            o = round(price, 2)
            c = round(max(0.5, price * rng.uniform(0.95, 1.05)), 2)
            h = round(max(o, c) * rng.uniform(1.0, 1.08), 2)
            lo = round(min(o, c) * rng.uniform(0.92, 1.0), 2)
            d = start + dt.timedelta(days=k)
            rows.append(line(sym, f"{o:.2f}", f"{h:.2f}", f"{lo:.2f}", f"{c:.2f}", str(rng.randrange(100, 10**6)),
                             f"{d.day}-{MONTHS[d.month - 1]}-{d.year % 100:02d}"))
            price = c
        (tmp_path / sym).write_text("\r\n".join(reversed(rows)))  # newest first, like the real files
    return tmp_path


def test_schema_domains_cover_the_data(tmp_path):
    data = load_stock_data(write_folder(tmp_path))
    body = stock_schema(data)
    attrs = body["attributes"]
    assert attrs["class"] == {"type": "string"} and attrs["volume"]["type"] == "int"
    top = max(q.high for qs in data.quotes.values() for q in qs)
    assert top <= attrs["high"]["max"] < 1.1 * top + 1
    assert attrs["date"]["min"] == day_number("1-Jan-01")


def test_rated_filters_sink_their_share(tmp_path):
    data = load_stock_data(write_folder(tmp_path, days=200))
    quotes = data.quotes["BBB"]
    schema = Schema.from_dict("stock", stock_schema(data))
    for rating, share in (("low", 0.1), ("medium", 0.5), ("high", 1.0)):
        sub = parse_filter(schema, rated_filter(rating, "BBB", quotes, share))
        got = sum(sub.matches(parse_event(schema, quote_event(q)).values) for q in quotes) / len(quotes)
        assert got == pytest.approx(share, abs=0.03), rating
    with pytest.raises(ValueError, match="rating"):
        rated_filter("extreme", "BBB", quotes, 0.5)


def test_workload_on_small_files(tmp_path):
    folder = write_folder(tmp_path)
    w = stocks_workload(40, seed=3, folder=folder, events=150, subscriptions_per_node=5)
    schema = w.parsed_schema()
    assert len(w.subscriptions) == 200 and w.event_count == 150
    subs = [parse_filter(schema, s.filter) for s in w.subscriptions]
    evs = list(w.events())
    for e in evs:
        parse_event(schema, e.attributes)
    # one publisher node per symbol, each publishing its own quotes oldest first
    pubs = w.info["publishers"]
    assert len(set(pubs.values())) == 3
    by_symbol = collections.defaultdict(list)
    for e in evs:
        assert e.node == pubs[e.attributes["symbol"]]
        by_symbol[e.attributes["symbol"]].append(e.attributes["date"])
    assert all(days == sorted(days) and len(set(days)) == len(days) for days in by_symbol.values())
    assert [e.time_s for e in evs] == sorted(e.time_s for e in evs)
    assert evs[0].time_s > w.subscriptions[-1].time_s
    # every subscription names a symbol; high-rated ones sink all of it
    for s, sub in zip(w.subscriptions, subs, strict=True):
        assert s.filter["class"] == {"eq": "STOCK"} and "symbol" in s.filter
        if len(s.filter) == 2:
            own = [e for e in evs if e.attributes["symbol"] == s.filter["symbol"]["eq"]]
            assert all(sub.matches(e.attributes) for e in own)


def test_every_event_conforms_to_an_advertisement_of_its_publisher(tmp_path):
    from overlays.content import conforms

    w = stocks_workload(10, seed=4, folder=write_folder(tmp_path, days=40), events=100)
    schema = w.parsed_schema()
    assert len(w.advertisements) == 3  # one per symbol, on the symbol's publisher node
    publishers = {v: k for k, v in w.info["publishers"].items()}
    assert {a.node: a.filter["symbol"]["eq"] for a in w.advertisements} == publishers
    adverts = [(a.node, parse_filter(schema, a.filter)) for a in w.advertisements]
    for e in w.events():
        values = parse_event(schema, e.attributes).values
        assert any(node == e.node and conforms(values, adv) for node, adv in adverts)


def test_streams_stop_when_their_quotes_run_out(tmp_path):
    w = stocks_workload(10, seed=1, folder=write_folder(tmp_path, days=20), events=1000)
    assert w.event_count == 60  # 3 symbols × 20 days
    assert len(list(w.events())) == 60


def test_clustered_placement_puts_high_rated_on_the_hub(tmp_path):
    folder = write_folder(tmp_path)
    w = stocks_workload(30, seed=2, folder=folder, events=60, mix=(0.95, 0.0, 0.05), placement="clustered")
    hub = w.info["hub"]
    high = [s for s in w.subscriptions if len(s.filter) == 2]
    low = [s for s in w.subscriptions if len(s.filter) > 2]
    assert high and all(s.node == hub for s in high)
    assert low and all(s.node != hub for s in low)
    assert not any("openCloseDiff" in s.filter for s in w.subscriptions)  # no medium-rated in this mix


def test_determinism_and_parameter_errors(tmp_path):
    folder = write_folder(tmp_path)
    a = stocks_workload(20, seed=4, folder=folder, events=100)
    b = stocks_workload(20, seed=4, folder=folder, events=100)
    c = stocks_workload(20, seed=5, folder=folder, events=100)
    assert a.subscriptions == b.subscriptions and list(a.events()) == list(b.events())
    assert a.subscriptions != c.subscriptions
    for kwargs, message in [
        ({"mix": (0.5, 0.5, 0.5)}, "mix"),
        ({"placement": "nearby"}, "placement"),
        ({"nodes": 1, "placement": "clustered"}, "clustered"),
        ({"symbols": 0}, "symbols"),
        ({"symbols": ["ZZZ"]}, "no quote files"),
    ]:
        args = {"nodes": 5, "seed": 1, "folder": folder, **kwargs}
        with pytest.raises((ValueError, FileNotFoundError), match=message):
            stocks_workload(**args)


@needs_data
def test_the_shipped_quotes():
    data = load_stock_data()
    assert len(data.symbols) == 100
    assert sum(len(q) for q in data.quotes.values()) == 245_189
    assert data.dropped == ("ATCO:1192: open 31007.0 / close 9.38 outside [low 9.38, high 9.38]",)
    attrs = stock_schema(data)["attributes"]
    assert attrs["open"]["max"] == 750.0  # without the ATCO glitch the largest price is 740.12


@needs_data
def test_padres_random_mix_on_the_shipped_quotes():
    w = stocks_workload(100, seed=1, symbols=20, events=2000)
    schema = w.parsed_schema()
    evs = [parse_event(schema, e.attributes) for e in w.events()]
    by_symbol = collections.defaultdict(list)
    for e in evs:
        by_symbol[e.values["symbol"]].append(e)
    shares: dict[str, list[float]] = collections.defaultdict(list)
    for s in w.subscriptions:
        sub = parse_filter(schema, s.filter)
        own = by_symbol[s.filter["symbol"]["eq"]]
        rating = "high" if len(s.filter) == 2 else "medium" if "openCloseDiff" in s.filter else "low"
        shares[rating].append(sum(sub.matches(e.values) for e in own) / len(own))
    n = len(w.subscriptions)
    assert len(shares["low"]) / n == pytest.approx(0.70, abs=0.07)
    assert len(shares["medium"]) / n == pytest.approx(0.25, abs=0.07)
    assert sum(shares["low"]) / len(shares["low"]) == pytest.approx(0.10, abs=0.02)
    assert sum(shares["medium"]) / len(shares["medium"]) == pytest.approx(0.50, abs=0.05)
    assert set(shares["high"]) == {1.0}
