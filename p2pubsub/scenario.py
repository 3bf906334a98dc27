"""Scenario files: one TOML format, one parser, shared by ``p2pubsub sim`` and ``p2pubsub experiment``.

A scenario is parsed into frozen dataclasses. Every optional key has a default; unknown keys, wrong types,
out-of-range values and broken cross-field rules raise :class:`ScenarioError` naming the key
(e.g. ``protocol.probe_p: must be in (0, 1], got 1.5``). :meth:`Scenario.to_toml` / :meth:`Scenario.to_dict`
round-trip: ``parse_scenario(s.to_toml()) == s``. Example::

    name = "churn-20"
    seed = 1
    mode = "dht"
    [network]
    nodes = 20
    latency = "ripe"
    [workload]
    kind = "thesis"
    subscribe_interval_ms = 50
    events = 2000
    publish_interval_ms = 10
    [[churn]]
    at_s = 10
    crash = 5

Keys (times are virtual; the workload clock starts once the network has joined and stabilised):

| key | default | meaning |
| --- | --- | --- |
| `name` | file stem | scenario name: letters, digits, `_ - .` |
| `seed` | 1 | seeds every random choice (placement, workload, latency model) |
| `mode` | `"dht"` | `"dht"` (2d-tree over Kademlia), `"scot"` (OctopiA on SCOT), `"padres"` (brokers; both: stocks) |
| `drain_s` | 30 | after the last event, how long the run goes on for deliveries |
| `network.nodes` | required | simulated nodes at start, >= 1 |
| `network.latency` | `"ripe"` | `"ripe"`, `"synthetic"` or `"king:PATH"` (live runs ignore it) |
| `network.access_delay_ms` | model's | mean one-way access delay per node (ripe, synthetic: 2 ms; King: 0) |
| `network.link_capacity_kbps` | unlimited | per-node access link capacity, > 0; set it to model congestion |
| `network.loss` | 0 | probability that a datagram is dropped, in [0, 1) |
| `network.join_interval_ms` | 50 | time between successive node joins at start, >= 0 |
| `network.stabilize_s` | 10 | wait after the last join before the workload starts, >= 0 |
| `protocol.leaf_capacity` | [10, 30] | each node's leaf capacity drawn from `rand(lo, hi)`, 1 <= lo <= hi (Table 4.1) |
| `protocol.min_probe_level` | 2 | RndLeafProbe's lowest probe level (thesis §3.3), 0..64 |
| `protocol.max_probe_level` | 10 | its highest, >= `min_probe_level`, <= 64 |
| `protocol.probe_p` | 0.5 | probe probability, in (0, 1] |
| `protocol.multicast` | true | ProbePubMulticast for publications (false: unicast probes, §4.3) |
| `protocol.cutoff` | true | use the cut-off line y = x + c (thesis §3.4) |
| `protocol.cutoff_fraction` | 0.25 | c as a fraction of each attribute's domain width, in (0, 1] |
| `protocol.replicas` | 3 | copies of each tree node's state in the DHT, 1 <= r <= `network.nodes` |
| `protocol.seen_ttl_s` | 60 | how long message ids are remembered to drop duplicates, > 0 |
| `protocol.tick_interval_s` | 2 | seconds between housekeeping ticks (expiry, hand-off, replica checks), > 0 |
| `workload.kind` | `"thesis"` | `"thesis"` (thesis §4.1) or `"stocks"` (PADRES quotes, seed 001 §5.1) |
| `workload.subscriptions_per_node` | 5 | average subscriptions per node, >= 0 |
| `workload.subscribe_interval_ms` | 2000 | mean exponential gap between subscriptions, >= 0 |
| `workload.events` | 10000 | events to publish, >= 0 |
| `workload.publish_interval_ms` | 1000 | mean exponential gap between events, >= 0 |
| `workload.settle_s` | 10 | gap between the last subscription and the first event, >= 0 |
| `workload.absent` | `"no_match"` | `"no_match"` or `"match"`: events lacking a constrained attribute (§3.4.1) |
| `workload.event_present_prob` | 1.0 | thesis only: each attribute's presence in an event, in (0, 1] |
| `workload.shuffle_subranges` | false | thesis only: Zipf ranks on a seeded permutation of sub-ranges |
| `workload.stock_mix` | [0.70, 0.25, 0.05] | stocks only: low/medium/high-rated shares, summing to 1 |
| `workload.stock_placement` | `"random"` | stocks only: `"random"` or `"clustered"` (high-rated on one hub node) |
| `workload.symbols` | all | stocks only: use the first N symbols by name, >= 1 |
| `[[churn]] at_s` | required | when, on the workload clock; non-decreasing, >= 0 |
| `[[churn]] crash`/`join`/`leave` | one of | how many nodes crash, join or leave gracefully; never below 1 live node |
| `scot.topology` | `"S_e"` | modes scot and padres: a named SCOT topology (OctopiA §10, Fig. 9), or instead: |
| `scot.edges` | none | the acyclic factor's edges `[[a, b], ...]` |
| `scot.clusters` | 4 | clusters (size of the cyclic factor), >= 1 |
| `scot.dynamic` | false | dynamic publication routing: IDR (OctopiA Alg. 4) or TID-D (padres); false: SPR / TID-S |
| `scot.tau` | 10 | IDR congestion threshold τ (OctopiA Eq. 3), > 0 |
| `scot.t_w_ms` | 50 | IDR time window t_w, > 0 |
| `scot.lease_s` | 10 | slot lease of a broker position (renewed every third of it), > 0.1 |
| `scot.advertise_interval_ms` | 20 | gap between advertisements (sent before the workload clock starts), >= 0 |
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

MODES = ("dht", "scot", "padres")
OVERLAY_MODES = ("scot", "padres")  # broker overlays on SCOT positions: OctopiA, and the PADRES-style baseline
KINDS = ("thesis", "stocks")
ABSENT = ("no_match", "match")
PLACEMENTS = ("random", "clustered")
CHURN_ACTIONS = ("crash", "join", "leave")
NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$")
THESIS_ONLY = ("event_present_prob", "shuffle_subranges")
STOCKS_ONLY = ("stock_mix", "stock_placement", "symbols")


class ScenarioError(ValueError):
    """A bad scenario: ``key`` names the offending key (dotted), the message says what is wrong."""

    def __init__(self, key: str, message: str, source: str | None = None) -> None:
        self.key = key
        self.message = message
        self.source = source
        where = f"{source}: " if source else ""
        super().__init__(f"{where}{key}: {message}" if key else f"{where}{message}")


# ---------------------------------------------------------------------------------------------------- values


def _kind(v: Any) -> str:
    return "a boolean" if isinstance(v, bool) else f"{type(v).__name__} {v!r}"[:60]


def _int(key: str, v: Any, lo: int | None = None, hi: int | None = None) -> int:
    if not isinstance(v, int) or isinstance(v, bool):
        raise ScenarioError(key, f"must be an integer, got {_kind(v)}")
    _range(key, v, lo, hi)
    return v


def _float(key: str, v: Any, lo: float | None = None, hi: float | None = None, *, lo_open: bool = False) -> float:
    if not isinstance(v, int | float) or isinstance(v, bool):
        raise ScenarioError(key, f"must be a number, got {_kind(v)}")
    if not math.isfinite(v):
        raise ScenarioError(key, f"must be finite, got {v!r}")
    if lo_open and lo is not None and v <= lo:
        raise ScenarioError(key, f"must be > {lo}, got {v}")
    _range(key, v, None if lo_open else lo, hi)
    return float(v)


def _range(key: str, v: float, lo: float | None, hi: float | None) -> None:
    if lo is not None and v < lo:
        raise ScenarioError(key, f"must be >= {lo}, got {v}")
    if hi is not None and v > hi:
        raise ScenarioError(key, f"must be <= {hi}, got {v}")


def _bool(key: str, v: Any) -> bool:
    if not isinstance(v, bool):
        raise ScenarioError(key, f"must be true or false, got {_kind(v)}")
    return v


def _choice(key: str, v: Any, choices: tuple[str, ...]) -> str:
    if not isinstance(v, str) or v not in choices:
        raise ScenarioError(key, f"must be one of {list(choices)}, got {_kind(v)}")
    return v


def _list(key: str, v: Any, length: int | None = None) -> list[Any]:
    if not isinstance(v, list):
        raise ScenarioError(key, f"must be an array, got {_kind(v)}")
    if length is not None and len(v) != length:
        raise ScenarioError(key, f"must have {length} elements, got {len(v)}")
    return v


def _latency(key: str, v: Any) -> str:
    if not isinstance(v, str):
        raise ScenarioError(key, f"must be a string, got {_kind(v)}")
    if v in ("ripe", "synthetic") or (v.startswith("king:") and len(v) > len("king:")):
        return v
    raise ScenarioError(key, f"must be 'ripe', 'synthetic' or 'king:PATH', got {v!r}")


def _table(key: str, v: Any) -> Mapping[str, Any]:
    if not isinstance(v, Mapping):
        raise ScenarioError(key, f"must be a table, got {_kind(v)}")
    return v


Reader = Callable[[str, Any], Any]


def _read(prefix: str, raw: Mapping[str, Any], readers: Mapping[str, Reader], required: tuple[str, ...] = ()) -> dict:
    """Check the keys of one table against ``readers`` (unknown keys are errors) and convert each value."""
    for k in raw:
        if k not in readers:
            raise ScenarioError(f"{prefix}{k}", f"unknown key; expected one of {sorted(readers)}")
    for k in required:
        if k not in raw:
            raise ScenarioError(f"{prefix}{k}", "is required")
    return {k: readers[k](f"{prefix}{k}", v) for k, v in raw.items()}


# ---------------------------------------------------------------------------------------------------- tables


@dataclass(frozen=True, slots=True)
class Network:
    nodes: int
    latency: str = "ripe"
    access_delay_ms: float | None = None
    link_capacity_kbps: float | None = None
    loss: float = 0.0
    join_interval_ms: float = 50.0
    stabilize_s: float = 10.0

    READERS = {  # noqa: RUF012 (a class-level constant, not a field: slots dataclasses ignore unannotated names)
        "nodes": lambda k, v: _int(k, v, 1, 1_000_000),
        "latency": _latency,
        "access_delay_ms": lambda k, v: _float(k, v, 0.0, 1000.0),
        "link_capacity_kbps": lambda k, v: _float(k, v, 0.0, lo_open=True),
        "loss": lambda k, v: _loss(k, v),
        "join_interval_ms": lambda k, v: _float(k, v, 0.0),
        "stabilize_s": lambda k, v: _float(k, v, 0.0),
    }


def _loss(key: str, v: Any) -> float:
    x = _float(key, v, 0.0)
    if x >= 1.0:
        raise ScenarioError(key, f"must be in [0, 1), got {x}")
    return x


@dataclass(frozen=True, slots=True)
class Protocol:
    leaf_capacity: tuple[int, int] = (10, 30)
    min_probe_level: int = 2
    max_probe_level: int = 10
    probe_p: float = 0.5
    multicast: bool = True
    cutoff: bool = True
    cutoff_fraction: float = 0.25
    replicas: int = 3
    seen_ttl_s: float = 60.0
    tick_interval_s: float = 2.0

    READERS = {  # noqa: RUF012
        "leaf_capacity": lambda k, v: _leaf_capacity(k, v),
        "min_probe_level": lambda k, v: _int(k, v, 0, 64),
        "max_probe_level": lambda k, v: _int(k, v, 0, 64),
        "probe_p": lambda k, v: _fraction_open_closed(k, v),
        "multicast": _bool,
        "cutoff": _bool,
        "cutoff_fraction": lambda k, v: _fraction_open_closed(k, v),
        "replicas": lambda k, v: _int(k, v, 1, 64),
        "seen_ttl_s": lambda k, v: _float(k, v, 0.0, lo_open=True),
        "tick_interval_s": lambda k, v: _float(k, v, 0.0, lo_open=True),
    }


def _leaf_capacity(key: str, v: Any) -> tuple[int, int]:
    lo, hi = (_int(f"{key}[{i}]", x, 1) for i, x in enumerate(_list(key, v, 2)))
    if lo > hi:
        raise ScenarioError(key, f"must be [lo, hi] with lo <= hi, got [{lo}, {hi}]")
    return lo, hi


def _fraction_open_closed(key: str, v: Any) -> float:
    x = _float(key, v)
    if not 0.0 < x <= 1.0:
        raise ScenarioError(key, f"must be in (0, 1], got {x}")
    return x


@dataclass(frozen=True, slots=True)
class WorkloadSpec:
    kind: str = "thesis"
    subscriptions_per_node: int = 5
    subscribe_interval_ms: float = 2000.0
    events: int = 10_000
    publish_interval_ms: float = 1000.0
    settle_s: float = 10.0
    absent: str = "no_match"
    event_present_prob: float = 1.0
    shuffle_subranges: bool = False
    stock_mix: tuple[float, float, float] = (0.70, 0.25, 0.05)
    stock_placement: str = "random"
    symbols: int | None = None

    READERS = {  # noqa: RUF012
        "kind": lambda k, v: _choice(k, v, KINDS),
        "subscriptions_per_node": lambda k, v: _int(k, v, 0, 100_000),
        "subscribe_interval_ms": lambda k, v: _float(k, v, 0.0),
        "events": lambda k, v: _int(k, v, 0, 10**9),
        "publish_interval_ms": lambda k, v: _float(k, v, 0.0),
        "settle_s": lambda k, v: _float(k, v, 0.0),
        "absent": lambda k, v: _choice(k, v, ABSENT),
        "event_present_prob": lambda k, v: _fraction_open_closed(k, v),
        "shuffle_subranges": _bool,
        "stock_mix": lambda k, v: _mix(k, v),
        "stock_placement": lambda k, v: _choice(k, v, PLACEMENTS),
        "symbols": lambda k, v: _int(k, v, 1),
    }


def _mix(key: str, v: Any) -> tuple[float, float, float]:
    low, medium, high = (_float(f"{key}[{i}]", x, 0.0, 1.0) for i, x in enumerate(_list(key, v, 3)))
    if not math.isclose(low + medium + high, 1.0, abs_tol=1e-9):
        raise ScenarioError(key, f"low, medium and high shares must sum to 1, got {low + medium + high:g}")
    return low, medium, high


@dataclass(frozen=True, slots=True)
class ChurnStep:
    at_s: float
    action: str  # "crash" | "join" | "leave"
    count: int


@dataclass(frozen=True, slots=True)
class Scot:
    topology: str | None = "S_e"
    edges: tuple[tuple[int, int], ...] | None = None
    clusters: int = 4
    dynamic: bool = False
    tau: float = 10.0
    t_w_ms: float = 50.0
    lease_s: float = 10.0
    advertise_interval_ms: float = 20.0

    READERS = {  # noqa: RUF012
        "topology": lambda k, v: _name(k, v),
        "edges": lambda k, v: _edges(k, v),
        "clusters": lambda k, v: _int(k, v, 1, 1024),
        "dynamic": _bool,
        "tau": lambda k, v: _float(k, v, 0.0, lo_open=True),
        "t_w_ms": lambda k, v: _float(k, v, 0.0, lo_open=True),
        "lease_s": lambda k, v: _float(k, v, 0.1, lo_open=True),
        "advertise_interval_ms": lambda k, v: _float(k, v, 0.0),
    }


def _name(key: str, v: Any) -> str:
    if not isinstance(v, str) or not NAME_RE.match(v):
        raise ScenarioError(key, f"must be a name of letters, digits, '_', '-' and '.', got {_kind(v)}")
    return v


def _edges(key: str, v: Any) -> tuple[tuple[int, int], ...]:
    out: list[tuple[int, int]] = []
    seen: set[frozenset[int]] = set()
    for i, e in enumerate(_list(key, v)):
        a, b = (_int(f"{key}[{i}][{j}]", x, 0) for j, x in enumerate(_list(f"{key}[{i}]", e, 2)))
        if a == b:
            raise ScenarioError(f"{key}[{i}]", f"an edge joins two brokers, got [{a}, {b}]")
        if frozenset((a, b)) in seen:
            raise ScenarioError(f"{key}[{i}]", f"edge [{a}, {b}] is listed twice")
        seen.add(frozenset((a, b)))
        out.append((a, b))
    if not out:
        raise ScenarioError(key, "must list at least one edge")
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    network: Network
    seed: int = 1
    mode: str = "dht"
    drain_s: float = 30.0
    protocol: Protocol = field(default_factory=Protocol)
    workload: WorkloadSpec = field(default_factory=WorkloadSpec)
    churn: tuple[ChurnStep, ...] = ()
    scot: Scot | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain TOML-shaped data: every key with its value (defaults included), None values left out."""
        out: dict[str, Any] = {"name": self.name, "seed": self.seed, "mode": self.mode, "drain_s": self.drain_s}
        out["network"] = _plain(self.network)
        out["protocol"] = _plain(self.protocol)
        skip = STOCKS_ONLY if self.workload.kind == "thesis" else THESIS_ONLY
        out["workload"] = {k: v for k, v in _plain(self.workload).items() if k not in skip}
        if self.churn:
            out["churn"] = [{"at_s": c.at_s, c.action: c.count} for c in self.churn]
        if self.scot is not None:
            out["scot"] = _plain(self.scot)
        return out

    def to_toml(self) -> str:
        return dumps_toml(self.to_dict())

    def churn_totals(self) -> dict[str, int]:
        totals = dict.fromkeys(CHURN_ACTIONS, 0)
        for c in self.churn:
            totals[c.action] += c.count
        return totals


def _plain(obj: Any) -> dict[str, Any]:
    out = {}
    for f in fields(obj):
        v = getattr(obj, f.name)
        if v is None:
            continue
        out[f.name] = _plain_value(v)
    return out


def _plain_value(v: Any) -> Any:
    if isinstance(v, tuple):
        return [_plain_value(x) for x in v]
    return v


# ---------------------------------------------------------------------------------------------------- parse


def parse_scenario(data: str | Mapping[str, Any], *, source: str | None = None, name: str | None = None) -> Scenario:
    """Parse TOML text (or already-parsed data) into a validated :class:`Scenario`.

    ``name`` is the default scenario name (``load_scenario`` passes the file stem); ``source`` prefixes errors.
    """
    try:
        if isinstance(data, str):
            try:
                data = tomllib.loads(data)
            except tomllib.TOMLDecodeError as e:
                raise ScenarioError("", f"not valid TOML: {e}") from None
        return _parse(data, name)
    except ScenarioError as e:
        if source is None:
            raise
        raise ScenarioError(e.key, e.message, source) from None


def load_scenario(path: str | Path) -> Scenario:
    """Read and parse a scenario file; its name defaults to the file's stem."""
    p = Path(path)
    return parse_scenario(p.read_text(encoding="utf-8"), source=p.name, name=p.stem)


TOP_KEYS = ("name", "seed", "mode", "drain_s", "network", "protocol", "workload", "churn", "scot")


def _parse(raw: Mapping[str, Any], default_name: str | None) -> Scenario:
    for k in raw:
        if k not in TOP_KEYS:
            raise ScenarioError(k, f"unknown key; expected one of {sorted(TOP_KEYS)}")
    if "name" in raw:
        name = _name("name", raw["name"])
    elif default_name is not None:
        name = _name("name", default_name)
    else:
        raise ScenarioError("name", "is required")
    seed = _int("seed", raw.get("seed", 1), 0, 2**63 - 1)
    mode = _choice("mode", raw.get("mode", "dht"), MODES)
    drain_s = _float("drain_s", raw.get("drain_s", 30.0), 0.0)
    if "network" not in raw:
        raise ScenarioError("network", "is required (at least network.nodes)")
    network = Network(**_read("network.", _table("network", raw["network"]), Network.READERS, ("nodes",)))
    protocol = Protocol(**_read("protocol.", _table("protocol", raw.get("protocol", {})), Protocol.READERS))
    workload_raw = _table("workload", raw.get("workload", {}))
    workload = WorkloadSpec(**_read("workload.", workload_raw, WorkloadSpec.READERS))
    churn = _churn(raw.get("churn", []), network.nodes)
    scot = None
    if "scot" in raw:
        if mode not in OVERLAY_MODES:
            raise ScenarioError("scot", f"applies to modes 'scot' and 'padres' only; this scenario's mode is {mode!r}")
        scot_raw = _table("scot", raw["scot"])
        values = _read("scot.", scot_raw, Scot.READERS)
        if "edges" in values and "topology" in values:
            raise ScenarioError("scot.edges", "give either scot.topology or scot.edges, not both")
        if "edges" in values:
            values["topology"] = None
        scot = Scot(**values)
    elif mode in OVERLAY_MODES:
        scot = Scot()

    # cross-field rules
    if protocol.min_probe_level > protocol.max_probe_level:
        raise ScenarioError(
            "protocol.min_probe_level",
            f"must be <= protocol.max_probe_level, got {protocol.min_probe_level} > {protocol.max_probe_level}",
        )
    if protocol.replicas > network.nodes:
        raise ScenarioError("protocol.replicas", f"must be <= network.nodes ({network.nodes}), got {protocol.replicas}")
    wrong = STOCKS_ONLY if workload.kind == "thesis" else THESIS_ONLY
    for k in wrong:
        if k in workload_raw:
            raise ScenarioError(f"workload.{k}", f"does not apply to workload.kind {workload.kind!r}")
    if mode in OVERLAY_MODES and workload.kind != "stocks":
        why = f"mode {mode!r} needs 'stocks' (its publishers advertise), got {workload.kind!r}"
        raise ScenarioError("workload.kind", why)
    if workload.kind == "stocks" and workload.stock_placement == "clustered" and network.nodes < 2:
        raise ScenarioError("workload.stock_placement", "'clustered' needs network.nodes >= 2 (a hub and the rest)")
    return Scenario(name, network, seed, mode, drain_s, protocol, workload, churn, scot)


def _churn(raw: Any, nodes: int) -> tuple[ChurnStep, ...]:
    steps = []
    alive = nodes
    last = 0.0
    for i, step in enumerate(_list("churn", raw)):
        key = f"churn[{i}]"
        step = _table(key, step)
        values = _read(
            f"{key}.",
            step,
            {"at_s": lambda k, v: _float(k, v, 0.0), **{a: (lambda k, v: _int(k, v, 1)) for a in CHURN_ACTIONS}},
            ("at_s",),
        )
        actions = [a for a in CHURN_ACTIONS if a in values]
        if len(actions) != 1:
            raise ScenarioError(key, f"needs exactly one of crash, join, leave; got {actions or 'none'}")
        at, action = values["at_s"], actions[0]
        if at < last:
            raise ScenarioError(f"{key}.at_s", f"churn times must not decrease: {at} after {last}")
        count = values[action]
        alive += count if action == "join" else -count
        if alive < 1:
            raise ScenarioError(
                f"{key}.{action}", f"{action} = {count} would leave no live node ({alive + count} alive before)"
            )
        last = at
        steps.append(ChurnStep(at, action, count))
    return tuple(steps)


# ---------------------------------------------------------------------------------------------------- write


def dumps_toml(data: Mapping[str, Any]) -> str:
    """Write the shapes scenarios use: scalars, arrays, tables, and arrays of tables."""
    lines: list[str] = []
    scalars = {k: v for k, v in data.items() if not isinstance(v, Mapping) and not _is_table_array(v)}
    for k, v in scalars.items():
        lines.append(f"{k} = {_toml_value(v)}")
    for k, v in data.items():
        if isinstance(v, Mapping):
            lines.append("")
            lines.append(f"[{k}]")
            lines.extend(f"{kk} = {_toml_value(vv)}" for kk, vv in v.items())
        elif _is_table_array(v):
            for item in v:
                lines.append("")
                lines.append(f"[[{k}]]")
                lines.extend(f"{kk} = {_toml_value(vv)}" for kk, vv in item.items())
    return "\n".join(lines) + "\n"


def _is_table_array(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(x, Mapping) for x in v)


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)  # shortest repr that reads back to the same float
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)  # JSON's string escapes are all valid TOML basic-string escapes
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


__all__ = [
    "ChurnStep",
    "Network",
    "Protocol",
    "Scenario",
    "ScenarioError",
    "Scot",
    "WorkloadSpec",
    "dumps_toml",
    "load_scenario",
    "parse_scenario",
]
