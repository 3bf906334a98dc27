"""The PADRES stock-quote workload (seed 001, §5.1): one publisher per symbol, low/medium/high-rated subscribers.

Mapping of the paper onto this system:

* **Schema** ``stock``: ``class`` and ``symbol`` (strings), ``open high low close`` (floats over ``[0, M]`` with
  ``M`` the largest price in the data rounded up to 2 significant digits), ``volume`` (int, likewise),
  ``date`` (int day number, the data's first to last day, so ranges over dates work), and the paper's derived
  ``openClose%Diff`` / ``highLow%Diff`` as ``openCloseDiff`` / ``highLowDiff`` (``%`` is not allowed in our
  attribute names; see :class:`~p2pubsub.workload.quotes.Quote` for the formulas).
* **Publishers.** Each symbol is one publisher stream on its own node (seeded; distinct nodes while there are
  enough), publishing its daily bars oldest first. The streams are merged as one Poisson process with mean
  interval ``publish_interval_ms``, each event going to a uniformly drawn symbol that still has quotes — the
  superposition of equal-rate per-symbol Poisson streams. A stream that runs out of quotes stops.
* **Subscribers.** ``nodes × subscriptions_per_node`` subscriptions, each to a uniformly drawn symbol, rated by
  ``mix`` = (low, medium, high) shares — "random" workload (70%, 25%, 5%) by default; the paper's "clustered"
  one is ``mix = (0.95, 0, 0.05)`` with ``placement = "clustered"``.
* **Ratings.** The paper defines them by the share of the publisher's traffic a subscriber sinks: low ≈ 10%,
  medium ≈ 50%, high = all, and gives example filters (low: ``highLow%Diff > 0.15``; medium: ``volume >
  1000000`` and ``openClose%Diff > 0.025``; high: class and symbol only). Fixed thresholds would sink very
  different shares of different stocks' traffic, so we keep the filters' *shape* and calibrate their thresholds
  per subscription on the quotes that symbol will actually publish in this run: a low-rated subscriber draws a
  target share uniformly in [5%, 15%] and gets ``highLowDiff > t`` matching that share; a medium-rated one draws
  [40%, 60%] and gets ``volume > v`` (matching √share) and ``openCloseDiff > t`` (bringing the conjunction to the
  share). Thresholds are data values and the predicates ``>=`` (PADRES writes ``>``; on the calibration window
  both select the same sets, except that ``>=`` can also select every quote — needed where most days have
  ``open == close`` and ``openCloseDiff`` is 0). Where ``highLowDiff`` cannot come near a low share (some old
  quotes have ``high == low`` every day) the low filter thresholds ``volume`` instead. Ties in the data make
  shares approximate.
* **Advertisements** (broker overlays, OctopiA §6): each symbol's publisher advertises ``class``, ``symbol`` and
  every numeric attribute's range over that symbol's whole history, so each of its quotes conforms.
* **Placement.** ``"random"``: every subscriber on a uniformly drawn node. ``"clustered"``: all high-rated
  subscribers on one (seeded) hub node and the others on the remaining nodes, as in the paper.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .base import Adv, Pub, Sub, Workload, arrival_times, check_common, node_capacities, stream_rng
from .quotes import Quote, StockData, load_stock_data

SCHEMA_NAME = "stock"
RATINGS = ("low", "medium", "high")
DEFAULT_MIX = (0.70, 0.25, 0.05)
PLACEMENTS = ("random", "clustered")
LOW_SHARE = (0.05, 0.15)
MEDIUM_SHARE = (0.40, 0.60)


def _ceil_2sig(x: float) -> float:
    """Round up to two significant digits (740.12 -> 750, 580,453,376 -> 590,000,000)."""
    if x <= 0:
        return 1.0
    step = 10.0 ** (math.floor(math.log10(x)) - 1)
    return float(round(math.ceil(x / step) * step, 12))


def stock_schema(data: StockData) -> dict[str, Any]:
    """The ``stock`` schema body with domains derived from ``data``."""
    top = data.maxima
    price = _ceil_2sig(top["high"])
    return {
        "attributes": {
            "class": {"type": "string"},
            "symbol": {"type": "string"},
            **{k: {"type": "float", "min": 0.0, "max": price} for k in ("open", "high", "low", "close")},
            "volume": {"type": "int", "min": 0, "max": int(_ceil_2sig(top["volume"]))},
            "date": {"type": "int", "min": int(top["first_day"]), "max": int(max(top["day"], top["first_day"] + 1))},
            "openCloseDiff": {"type": "float", "min": 0.0, "max": _ceil_2sig(top["open_close_diff"])},
            "highLowDiff": {"type": "float", "min": 0.0, "max": _ceil_2sig(top["high_low_diff"])},
        }
    }


def quote_event(q: Quote) -> dict[str, Any]:
    """A publication: the quote's fields plus PADRES' derived ratios."""
    return {
        "class": "STOCK",
        "symbol": q.symbol,
        "open": q.open,
        "high": q.high,
        "low": q.low,
        "close": q.close,
        "volume": q.volume,
        "date": q.day,
        "openCloseDiff": q.open_close_diff,
        "highLowDiff": q.high_low_diff,
    }


NUMERIC = ("open", "high", "low", "close", "volume", "date", "openCloseDiff", "highLowDiff")


def advertisement(symbol: str, quotes: Sequence[Quote]) -> dict[str, dict[str, Any]]:
    """What the publisher of ``symbol`` announces: its class, its symbol, each numeric attribute's range."""
    events = [quote_event(q) for q in quotes]
    out: dict[str, dict[str, Any]] = {"class": {"eq": "STOCK"}, "symbol": {"eq": symbol}}
    for a in NUMERIC:
        values = [e[a] for e in events]
        out[a] = {"ge": min(values), "le": max(values)}
    return out


def best_threshold(values: Sequence[float] | np.ndarray, target: int) -> tuple[float, int]:
    """The threshold ``t`` whose count of ``values >= t`` is closest to ``target``, and that count.

    Candidates are the distinct values, so ties in the data are handled exactly (and ``t`` stays in the domain).
    """
    v = np.sort(np.asarray(values, dtype=np.float64))
    cand = v[np.concatenate(([True], v[1:] != v[:-1]))]  # distinct values of a sorted array
    at_least = len(v) - np.searchsorted(v, cand, side="left")
    best = int(np.argmin(np.abs(at_least - target)))
    return float(cand[best]), int(at_least[best])


def rated_filter(rating: str, symbol: str, quotes: Sequence[Quote], share: float) -> dict[str, dict[str, Any]]:
    """The filter of a ``rating`` subscriber to ``symbol`` sinking about ``share`` of ``quotes``."""
    if rating not in RATINGS:
        raise ValueError(f"rating must be one of {RATINGS}, got {rating!r}")
    return _rated_filter(rating, symbol, quotes, round(share * len(quotes)))


def _rated_filter(rating: str, symbol: str, quotes: Sequence[Quote], target: int) -> dict[str, dict[str, Any]]:
    f: dict[str, dict[str, Any]] = {"class": {"eq": "STOCK"}, "symbol": {"eq": symbol}}
    m = len(quotes)
    if rating == "low":
        t, got = best_threshold([q.high_low_diff for q in quotes], target)
        if abs(got - target) <= max(1, target // 2):
            f["highLowDiff"] = {"ge": t}
        else:  # e.g. high == low every day (old, illiquid quotes): the share is what defines the rating
            tv, _ = best_threshold([q.volume for q in quotes], target)
            f["volume"] = {"ge": int(tv)}
    elif rating == "medium":
        share = target / m
        volume = np.array([q.volume for q in quotes], dtype=np.float64)
        ocd = np.array([q.open_close_diff for q in quotes])
        best: tuple[int, int, float] | None = None  # (error, volume threshold, diff threshold)
        # the volume predicate passes a share a (sqrt(share) first: both predicates then cut about equally);
        # the diff predicate brings the conjunction to `share`; the pair closest to it wins
        for a in [math.sqrt(share), *np.linspace(share, 1.0, 8)]:
            tv, _ = best_threshold(volume, round(a * m))
            busy = ocd[volume >= tv]
            t, got = best_threshold(busy, target) if len(busy) else (0.0, 0)
            if best is None or abs(got - target) < best[0]:
                best = (abs(got - target), int(tv), t)
        assert best is not None
        f["volume"] = {"ge": best[1]}
        f["openCloseDiff"] = {"ge": best[2]}
    return f


def stocks_workload(
    nodes: int,
    seed: int,
    *,
    subscriptions_per_node: int = 5,
    subscribe_interval_ms: float = 2000.0,
    events: int = 10_000,
    publish_interval_ms: float = 1000.0,
    capacity: tuple[int, int] = (10, 30),
    mix: tuple[float, float, float] = DEFAULT_MIX,
    placement: str = "random",
    symbols: int | Sequence[str] | None = None,
    settle_s: float = 10.0,
    data: StockData | None = None,
    folder: str | Path | None = None,
) -> Workload:
    """The PADRES stock workload for ``nodes`` nodes over the shared quote files (or ``data``)."""
    check_common(nodes, subscriptions_per_node, events, subscribe_interval_ms, publish_interval_ms)
    if len(mix) != 3 or any(w < 0 for w in mix) or not math.isclose(sum(mix), 1.0, abs_tol=1e-9):
        raise ValueError(f"mix must be three non-negative shares (low, medium, high) summing to 1, got {mix}")
    if placement not in PLACEMENTS:
        raise ValueError(f"placement must be one of {PLACEMENTS}, got {placement!r}")
    if placement == "clustered" and nodes < 2:
        raise ValueError("clustered placement needs at least 2 nodes (a hub and the rest)")
    if settle_s < 0:
        raise ValueError(f"settle_s must be >= 0, got {settle_s}")
    data = data if data is not None else load_stock_data(folder, symbols)
    names = data.symbols
    streams = [data.quotes[s] for s in names]

    pub_rng = stream_rng(seed, SCHEMA_NAME, "publishers")
    if nodes >= len(names):
        publishers = pub_rng.sample(range(nodes), len(names))
    else:
        publishers = [pub_rng.randrange(nodes) for _ in names]

    # which symbol publishes each event, fixed up front so subscriptions can be calibrated on what is published
    order = _publication_order(stream_rng(seed, SCHEMA_NAME, "publication-order"), [len(s) for s in streams], events)
    published = [0] * len(names)
    for k in order:
        published[k] += 1

    sub_rng = stream_rng(seed, SCHEMA_NAME, "subscriptions")
    hub = sub_rng.randrange(nodes)
    count = nodes * subscriptions_per_node
    subs = []
    ratings_drawn = dict.fromkeys(RATINGS, 0)
    calibrated: dict[tuple[int, str, int], dict[str, dict[str, Any]]] = {}
    for t in arrival_times(sub_rng, count, subscribe_interval_ms / 1000.0):
        k = sub_rng.randrange(len(names))
        rating = sub_rng.choices(RATINGS, weights=mix)[0]
        ratings_drawn[rating] += 1
        window = streams[k][: published[k]] or streams[k]  # nothing published: calibrate on the whole history
        share = 1.0
        if rating == "low":
            share = sub_rng.uniform(*LOW_SHARE)
        elif rating == "medium":
            share = sub_rng.uniform(*MEDIUM_SHARE)
        node = _subscriber_node(sub_rng, nodes, rating, placement, hub)
        key = (k, rating, round(share * len(window)))  # calibration depends on the share only through this count
        if key not in calibrated:
            calibrated[key] = _rated_filter(rating, names[k], window, key[2])
        subs.append(Sub(t, node, {a: dict(p) for a, p in calibrated[key].items()}))
    events_start = (subs[-1].time_s if subs else 0.0) + settle_s

    def event_stream() -> Iterator[Pub]:
        rng = stream_rng(seed, SCHEMA_NAME, "event-times")
        nxt = [0] * len(names)
        for k, t in zip(order, arrival_times(rng, len(order), publish_interval_ms / 1000.0, events_start), strict=True):
            q = streams[k][nxt[k]]
            nxt[k] += 1
            yield Pub(t, publishers[k], quote_event(q))

    info = {
        "kind": "stocks",
        "symbols": len(names),
        "publishers": dict(zip(names, publishers, strict=True)),
        "hub": hub if placement == "clustered" else None,
        "placement": placement,
        "mix": list(mix),
        "ratings": ratings_drawn,
        "events_start_s": events_start,
        "dropped_quotes": list(data.dropped),
    }
    adverts = tuple(Adv(publishers[k], advertisement(names[k], streams[k])) for k in range(len(names)) if streams[k])
    return Workload(
        SCHEMA_NAME,
        stock_schema(data),
        tuple(subs),
        node_capacities(seed, SCHEMA_NAME, nodes, capacity),
        len(order),
        event_stream,
        info,
        adverts,
    )


def _publication_order(rng: random.Random, lengths: list[int], events: int) -> list[int]:
    """Symbol index of each event: uniform over the symbols that still have quotes."""
    remaining = list(lengths)
    active = [k for k, n in enumerate(remaining) if n > 0]
    order: list[int] = []
    while len(order) < events and active:
        pos = rng.randrange(len(active))
        k = active[pos]
        order.append(k)
        remaining[k] -= 1
        if remaining[k] == 0:
            active[pos] = active[-1]  # O(1) removal; the order of `active` only matters to this seeded stream
            active.pop()
    return order


def _subscriber_node(rng: random.Random, nodes: int, rating: str, placement: str, hub: int) -> int:
    if placement == "random":
        return rng.randrange(nodes)
    if rating == "high":
        return hub
    node = rng.randrange(nodes - 1)  # any node but the hub
    return node + 1 if node >= hub else node


__all__ = ["RATINGS", "advertisement", "rated_filter", "stock_schema", "stocks_workload"]
