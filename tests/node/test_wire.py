"""The wire format: every tree message round-trips exactly, and nothing but WireError comes out of bad input."""

import contextlib
import math
import random
import struct
import time
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from enum import Enum, IntEnum
from typing import Any

import cbor2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from p2pubsub.model import Absent, Schema, parse_event, parse_filter
from p2pubsub.node import wire
from p2pubsub.node.messages import JoinReply, JoinRequest, Probe, ProbePubMulticast, Routed
from p2pubsub.node.wire import MAX_MESSAGE, WIRE_VERSION, MessageTooLarge, Registry, WireError
from p2pubsub.tree import (
    EventDelivery,
    InsertSub,
    LeafUpdate,
    ProbePub,
    ProbeSub,
    PubEvent,
    Space,
    SubInstalled,
    Target,
    TransferSub,
    TreeConfig,
    TreeId,
    Unsubscribe,
    Unsubscribed,
)
from p2pubsub.tree.messages import AdoptNode
from p2pubsub.tree.pieces import make_entries, probe_target, space_of

SCHEMAS = [
    Schema.from_dict(
        "quotes",
        {
            "attributes": {
                "price": {"type": "float", "min": 0, "max": 100},
                "volume": {"type": "int", "min": -50, "max": 10**12},
                "sym": {"type": "string"},
            }
        },
    ),
    Schema.from_dict(
        "sensors",
        {
            "absent": "match",
            "attributes": {
                "temp": {"type": "float", "min": -1, "max": 1},
                "level": {"type": "int", "min": 0, "max": 9},
            },
        },
    ),
]
VALUES = {
    "price": st.one_of(st.sampled_from([0.0, 25.0, 62.5, 100.0]), st.floats(0, 100)),
    "volume": st.integers(-50, 10**12),
    "sym": st.text(max_size=12),
    "temp": st.one_of(st.sampled_from([-1.0, -0.0, 0.0, 1.0]), st.floats(-1, 1)),
    "level": st.integers(0, 9),
}
CONFIG = TreeConfig()

# hosts as the node will have them (node id, ip, port), and the simpler ones of the in-memory harness
hosts = st.one_of(
    st.tuples(
        st.binary(min_size=20, max_size=20), st.sampled_from(["127.0.0.1", "10.0.3.7", "::1"]), st.integers(1, 65535)
    ),
    st.integers(0, 10**6),
    st.text(max_size=8),
)
ids = st.text(min_size=1, max_size=24)
paths = st.text(alphabet="01", max_size=40)
floats = st.floats(allow_nan=False)  # NaN is never equal to itself; tested apart


@st.composite
def subscriptions(draw, schema):
    body = {}
    for attr in schema.attributes:
        if not draw(st.booleans()):
            continue
        if attr.name == "sym":
            op = draw(st.sampled_from(["eq", "prefix"]))
            body["sym"] = {op: draw(st.text(max_size=10))}
            continue
        a, b = sorted((draw(VALUES[attr.name]), draw(VALUES[attr.name])))
        body[attr.name] = draw(
            st.sampled_from([{"ge": a, "le": b}, {"eq": a}, {"gt": a}, {"lt": b} if b > attr.min else {"eq": b}])
        )
    if not body:
        body["sym" if schema.has("sym") else "level"] = {"eq": "x"} if schema.has("sym") else {"ge": 3}
    try:
        return parse_filter(schema, body)
    except ValueError:  # an empty range such as gt max: not what these tests are about
        return parse_filter(schema, {schema.attributes[0].name: {"ge": draw(VALUES[schema.attributes[0].name])}})


@st.composite
def entries(draw):
    schema = draw(st.sampled_from(SCHEMAS))
    sub = draw(subscriptions(schema))
    space, made = make_entries(
        sub, schema, draw(ids), draw(st.integers(0, 2**40)), draw(hosts), CONFIG, random.Random(draw(st.integers()))
    )
    return space, made


@st.composite
def events(draw):
    schema = draw(st.sampled_from(SCHEMAS))
    names = draw(st.sets(st.sampled_from(schema.names), min_size=1))
    event = parse_event(schema, {n: draw(VALUES[n]) for n in sorted(names)})
    return PubEvent(draw(ids), schema.name, event.values, schema.absent, draw(floats), draw(hosts))


tree_ids = st.builds(TreeId, st.sampled_from(["quotes.price", "sensors.temp", "a.b"]), paths)
spaces = st.builds(Space, st.sampled_from(["quotes.price", "x"]), floats, floats, floats)
targets = st.builds(Target, floats, floats, floats)


@st.composite
def probe_pubs(draw):
    schema = SCHEMAS[0]
    space = space_of(schema, "price", CONFIG)
    value = draw(st.one_of(st.none(), VALUES["price"]))
    return ProbePub(
        draw(tree_ids), space, draw(paths), probe_target(space, value), draw(events()), draw(st.booleans())
    )


@st.composite
def messages(draw):
    kind = draw(
        st.sampled_from(
            ["probesub", "insert", "installed", "transfer", "leaf", "unsub", "unsubbed", "pub", "deliver", "adopt",
             "routed", "multicast", "join"]
        )
    )
    if kind == "adopt":
        space, made = draw(entries())
        leaf = draw(st.booleans())
        inner = tuple(draw(st.lists(paths, max_size=5)))
        seen = tuple(draw(st.lists(st.tuples(ids, floats), max_size=3)))
        return AdoptNode(draw(tree_ids), space, 0, 1, leaf, tuple(made) if leaf else (), () if leaf else inner, seen)
    if kind == "routed":
        key = draw(st.binary(min_size=20, max_size=20))
        return Routed(key, draw(probe_pubs()), draw(hosts), draw(st.integers(0, 40)))
    if kind == "multicast":
        probes = tuple(
            Probe(p.target, p.space, p.scope, p.probe, p.known) for p in draw(st.lists(probe_pubs(), max_size=4))
        )
        return ProbePubMulticast(draw(events()), probes, draw(hosts), draw(st.integers(0, 40)))
    if kind == "join":
        return draw(st.sampled_from([JoinRequest(draw(hosts)), JoinReply(draw(hosts), draw(st.integers(0, 99)))]))
    if kind in ("probesub", "insert"):
        space, made = draw(entries())
        cls = ProbeSub if kind == "probesub" else InsertSub
        return cls(draw(tree_ids), space, draw(st.sampled_from(made)))
    if kind == "installed":
        return SubInstalled(draw(ids), draw(st.integers(0, 2**63)), draw(st.integers(0, 1000)), draw(tree_ids))
    if kind == "transfer":
        space, made = draw(entries())
        seen = tuple(draw(st.lists(st.tuples(ids, floats), max_size=4)))
        return TransferSub(draw(tree_ids), space, tuple(made), seen, draw(st.integers(0, 9)), draw(st.integers(1, 9)))
    if kind == "leaf":
        return LeafUpdate(draw(tree_ids), draw(paths))
    if kind == "unsub":
        key = (draw(ids), draw(st.integers(0, 99)), draw(st.integers(0, 99)))
        return Unsubscribe(draw(tree_ids), draw(spaces), key, (draw(floats), draw(floats)), draw(hosts))
    if kind == "unsubbed":
        return Unsubscribed(draw(ids), draw(st.integers(-(2**63), 2**63)), draw(st.integers(0, 9)), draw(st.booleans()))
    if kind == "pub":
        return draw(probe_pubs())
    subs = tuple(draw(st.lists(st.tuples(ids, st.integers(0, 2**32)), max_size=6)))
    return EventDelivery(draw(events()), subs)


def floats_of(obj: Any) -> list[float]:
    """Every float inside a message, in order, to compare bit patterns (-0.0 == 0.0 for ==)."""
    if isinstance(obj, float):
        return [obj]
    if isinstance(obj, (tuple, list)):
        return [f for x in obj for f in floats_of(x)]
    if isinstance(obj, Mapping):
        return [f for k in sorted(obj, key=repr) for f in floats_of(obj[k])]
    if hasattr(obj, "__dataclass_fields__"):
        return [
            f for name in obj.__dataclass_fields__ if not name.startswith("_") for f in floats_of(getattr(obj, name))
        ]
    return []


def bits(fs: list[float]) -> list[bytes]:
    return [struct.pack("!d", f) for f in fs]


# -- round trips -------------------------------------------------------------------------------------------------


@settings(max_examples=400)
@given(messages())
def test_every_message_round_trips_exactly(msg):
    data = wire.encode(msg)
    back = wire.decode(data)
    assert back == msg
    assert type(back) is type(msg)
    assert bits(floats_of(back)) == bits(floats_of(msg))  # bit-exact, -0.0 included
    assert wire.encode(back) == data  # deterministic: a decoded message re-encodes to the same bytes
    assert len(data) <= MAX_MESSAGE


def test_every_tree_message_class_is_registered_and_the_tags_are_the_documented_ones():
    classes = wire.REGISTRY.classes()
    assert [classes[t].__name__ for t in range(1, 10)] == [
        "ProbeSub", "InsertSub", "SubInstalled", "TransferSub", "LeafUpdate",
        "Unsubscribe", "Unsubscribed", "ProbePub", "EventDelivery",
    ]  # fmt: skip
    assert classes[13] is AdoptNode
    assert all(t < 24 for t, c in classes.items() if c.__module__.startswith("p2pubsub.tree"))  # one CBOR byte
    assert all(24 <= t < 64 for t, c in classes.items() if c.__module__ == "p2pubsub.node.messages")


def test_tuples_stay_tuples_and_values_keep_their_types():
    space, made = make_entries(
        parse_filter(SCHEMAS[0], {"volume": {"ge": 3, "le": 7}, "sym": {"prefix": "AA"}}),
        SCHEMAS[0], "s", 1, (b"\x01" * 20, "10.0.0.1", 4000), CONFIG, random.Random(3),
    )  # fmt: skip
    back = wire.decode(wire.encode(TransferSub(TreeId("quotes.volume"), space, tuple(made), (("e", 1.5),), 0, 1)))
    entry = back.entries[0]
    assert isinstance(back.entries, tuple) and isinstance(back.seen[0], tuple)
    assert isinstance(entry.point, tuple) and isinstance(entry.home, tuple) and isinstance(entry.home[0], bytes)
    assert isinstance(entry.subscription.constraints, tuple) and isinstance(entry.subscription.constraints[0], tuple)
    volume = dict(entry.subscription.constraints)["volume"]
    assert type(volume.lo) is int and type(volume.hi) is int  # an int range stays int
    assert back.space._areas == {}  # the memo is not sent


def test_floats_are_exact_and_compact():
    for f in (0.0, -0.0, 1.0, 100.0, 0.1, 1e-310, 5e-324, 1.7976931348623157e308, 63.3, 65504.0, 1 / 3):
        msg = Unsubscribe(TreeId("r"), Space("r", f, -f, f), ("s", 0, 0), (f, f), 0)
        back = wire.decode(wire.encode(msg))
        assert bits(floats_of(back)) == bits(floats_of(msg))
    small = Space("r", 0.0, 100.0, 0.5)  # every coordinate fits a half float: 3 bytes each
    assert len(wire.encode(Unsubscribe(TreeId("r"), small, ("s", 0, 0), (1.0, 2.0), 0))) < 40


def test_nan_and_infinities_do_not_crash():
    inf = PubEvent("e", "quotes", {"price": math.inf, "x": -math.inf}, Absent.MATCH, -math.inf, 1)
    assert wire.decode(wire.encode(inf)) == inf
    nan = PubEvent("e", "quotes", {"price": math.nan}, Absent.MATCH, math.nan, 1)
    back = wire.decode(wire.encode(nan))
    assert math.isnan(back.values["price"]) and math.isnan(back.published_at)


def test_encoded_sizes_of_typical_messages(capsys):
    """The simulator's bandwidth figures: bytes per message, header (1 byte) included."""
    schema = Schema.from_dict(
        "stocks",
        {
            "attributes": {
                "price": {"type": "float", "min": 0, "max": 1000},
                "high": {"type": "float", "min": 0, "max": 1000},
                "volume": {"type": "int", "min": 0, "max": 10**10},
                "sym": {"type": "string"},
            }
        },
    )
    host = (bytes(range(20)), "192.168.17.120", 8468)  # a kademlia node id, an IPv4 address, the DHT port
    event = parse_event(schema, {"sym": "AAPL", "price": 63.3, "high": 64.25, "volume": 10924200})
    pub = PubEvent("9f3c2a1be07d4c55", "stocks", event.values, schema.absent, 1718000000.123, host)
    sub = parse_filter(schema, {"price": {"ge": 60, "le": 65.5}, "sym": {"eq": "AAPL"}})
    space, made = make_entries(sub, schema, "5b7e0d4c1a2f9e83", 1, host, CONFIG, random.Random(1))
    price = space_of(schema, "price", CONFIG)
    node = TreeId(price.root, "0110100")
    table = {
        "ProbePub (4-attribute event)": ProbePub(node, price, "0110", probe_target(price, 63.3), pub),
        "ProbeSub (2 constraints)": ProbeSub(TreeId(space.root, "0110"), space, made[0]),
        "EventDelivery (2 subscriptions)": EventDelivery(pub, (("5b7e0d4c1a2f9e83", 1), ("77aa0d4c1a2f9e84", 3))),
        "SubInstalled": SubInstalled("5b7e0d4c1a2f9e83", 1, 0, node),
        "LeafUpdate": LeafUpdate(node, "0110100"),
        "Unsubscribed": Unsubscribed("5b7e0d4c1a2f9e83", 1, 0, True),
        "TransferSub (64 subscriptions)": TransferSub(node, space, tuple(made) * 64, (), 0, 1),
    }
    sizes = {name: len(wire.encode(m)) for name, m in table.items()}
    with capsys.disabled():
        print("\n  message                              bytes")
        for name, size in sizes.items():
            print(f"  {name:<36} {size:>5}")
    assert sizes["ProbePub (4-attribute event)"] <= 220
    assert sizes["ProbeSub (2 constraints)"] <= 200
    assert sizes["EventDelivery (2 subscriptions)"] <= 180
    assert sizes["TransferSub (64 subscriptions)"] < MAX_MESSAGE / 4  # CONFIG.transfer_chunk fits easily


# -- limits and bad input ----------------------------------------------------------------------------------------


def test_message_too_large_is_raised_by_encode():
    big = LeafUpdate(TreeId("r"), "0" * MAX_MESSAGE)
    with pytest.raises(MessageTooLarge) as info:
        wire.encode(big)
    assert info.value.size > MAX_MESSAGE and isinstance(info.value, WireError)
    fits = LeafUpdate(TreeId("r"), "0" * (MAX_MESSAGE - 20))
    assert wire.decode(wire.encode(fits)) == fits
    assert len(wire.encode(fits)) <= MAX_MESSAGE


def test_oversized_input_is_refused_before_parsing():
    with pytest.raises(WireError, match="above the limit"):
        wire.decode(bytes([WIRE_VERSION]) + b"\x00" * MAX_MESSAGE)


def test_version_mismatch():
    data = bytearray(wire.encode(LeafUpdate(TreeId("r"), "01")))
    data[0] = WIRE_VERSION + 1
    with pytest.raises(WireError, match="unsupported wire version"):
        wire.decode(bytes(data))


def frame(obj: Any) -> bytes:
    return bytes([WIRE_VERSION]) + cbor2.dumps(obj)


def raw(hex_: str) -> bytes:
    return bytes([WIRE_VERSION]) + bytes.fromhex(hex_)


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "truncated"),
        (bytes([WIRE_VERSION]), "truncated"),
        (frame(5), "starts with its tag"),
        (frame([]), "starts with its tag"),
        (frame(["x"]), "starts with its tag"),
        (frame([999, "r", "0"]), "unknown message tag"),
        (frame([5, ["r", ""]]), "has 2 fields, got 1"),  # LeafUpdate, a field short
        (frame([5, ["r", ""], "0", "extra"]), "has 2 fields, got 3"),
        (frame([5, "r", "0"]), "LeafUpdate.target"),  # a TreeId must be an array
        (frame([5, ["r", 7], "0"]), "expected str"),
        (frame([7, "s", 1, 0, 1]), "expected bool"),  # Unsubscribed.found: ints are no booleans
        (frame([7, "s", True, 0, True]), "expected int"),
        (frame([7, "s", 1.5, 0, True]), "expected int"),
        (raw("8507617301001bffffffffffffffff"), "expected bool"),  # 2**64-1 is an int, the last field no bool
        (raw("8507617301c249010000000000000000f5"), "malformed CBOR"),  # a bignum (tag 2)
        (raw("8507617301d81c01f5"), "malformed CBOR"),  # tag 28, shared value
        (raw("9f0507ff"), "malformed CBOR"),  # indefinite length
        (frame([5, ["r", ""], "0"]) + b"\x00", "trailing"),
        (frame([5, ["r", ""], "0"])[:-1], "malformed CBOR"),  # truncated
        (raw("85076173010062"), "malformed CBOR"),  # a string cut short
        (raw("8507617301006180"), "malformed CBOR"),  # invalid UTF-8
        (frame([21, "e", "s", {"a": 1, 2: 3}, "match", 0.0, 1]), "malformed CBOR"),  # int map key
        (frame([21, "e", "s", {"a": 1}, "maybe", 0.0, 1]), "no Absent"),
        (frame([21, "e", "s", {"a": [1]}, "match", 0.0, {"k": 1}]), "not hashable"),  # a host must be hashable
        (frame([21, "e", "s", {"a": 1}, "match", 0.0, {b"\x63": [1]}]), "unknown tag"),
        (frame([21, "e", "s", {"a": 1}, "match", "0", 1]), "expected float"),
        (frame([20] + [0] * 11), "SubEntry.sub_id"),
        (frame([19, "quotes", [["price", [99, 1, 2]]]]), "not one of"),  # a constraint with a foreign tag
        (frame([19, "quotes", [["price", [10, 1]]]]), "Range has 4 fields"),
        (raw("82" * 40 + "00"), "starts with its tag|nested|malformed"),
    ],
)
def test_bad_frames_raise_wire_error_with_a_reason(data, reason):
    with pytest.raises(WireError, match=reason):
        wire.decode(data)


@pytest.mark.parametrize(
    "hex_",
    [
        "9bffffffffffffffff",  # an array claiming 2**64-1 items
        "5bffffffffffffffff",  # bytes claiming 2**64-1 bytes
        "7b00000000ffffffff41",  # text claiming 4 GB
        "bb0000000100000000",  # a map claiming 2**32 pairs
        "81" * 30_000 + "00",  # nested 30,000 deep
        "d9010080",  # stringref namespace
    ],
)
def test_claimed_sizes_and_depth_cost_nothing(hex_):
    start = time.perf_counter()
    with pytest.raises(WireError):
        wire.decode(raw(hex_))
    assert time.perf_counter() - start < 1.0  # generous: it fails on the first bytes, without allocating


@settings(max_examples=2000)
@given(st.binary(max_size=300))
def test_random_bytes_only_ever_raise_wire_error(data):
    for candidate in (data, bytes([WIRE_VERSION]) + data):
        with contextlib.suppress(WireError):
            wire.decode(candidate)


@st.composite
def mutated(draw):
    data = bytearray(wire.encode(draw(messages())))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "set", "cut", "insert", "delete"]))
        i = draw(st.integers(0, max(0, len(data) - 1)))
        if not data:
            data = bytearray(draw(st.binary(min_size=1, max_size=4)))
        elif op == "flip":
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "set":
            data[i] = draw(st.integers(0, 255))
        elif op == "cut":
            del data[i:]
        elif op == "insert":
            data[i:i] = draw(st.binary(min_size=1, max_size=4))
        else:
            del data[i]
    return bytes(data)


@settings(max_examples=1500)
@given(mutated())
def test_mutated_encodings_decode_or_raise_wire_error(data):
    try:
        msg = wire.decode(data)
    except WireError:
        return
    again = wire.decode(wire.encode(msg))  # whatever decodes is a valid message that travels again
    assert type(again) is type(msg)


def test_decode_accepts_bytes_like_and_refuses_other_types():
    data = wire.encode(LeafUpdate(TreeId("r"), "01"))
    assert wire.decode(bytearray(data)) == wire.decode(memoryview(data)) == LeafUpdate(TreeId("r"), "01")
    for bad in (None, 5, "text"):
        with pytest.raises(WireError):
            wire.decode(bad)


def test_encode_refuses_what_the_decoder_would_refuse():
    tid = TreeId("r")
    bad = [
        LeafUpdate(tid, 5),  # an int where a str is declared
        LeafUpdate("r/01", "01"),  # a str where a TreeId is declared
        SubInstalled("s", True, 0, tid),  # a bool is no int
        SubInstalled("s", 2**64, 0, tid),  # beyond 64 bits
        Unsubscribe(tid, Space("r", 0.0, 1.0), ["s", 0, 0], (0.0, 1.0), 1),  # a list where a tuple is declared
        Unsubscribe(tid, Space("r", 0.0, 1.0), ("s", 0), (0.0, 1.0), 1),  # a tuple of the wrong length
        Unsubscribe(tid, Space("r", 0.0, 1.0), ("s", 0, 0), (0.0, 1.0), [1, 2]),  # an unhashable host
        PubEvent("e", "s", {"a": [1]}, Absent.MATCH, 0.0, 1),  # lists would come back as tuples
        PubEvent("e", "s", {1: 1}, Absent.MATCH, 0.0, 1),  # non-str keys
        PubEvent("e", "s", {"a": 1}, "match", 0.0, 1),  # a str where the enum is declared
        PubEvent("e", "s", {"a": "\ud800"}, Absent.MATCH, 0.0, 1),  # a lone surrogate: not UTF-8
        object(),  # not a registered class
    ]
    for msg in bad:
        with pytest.raises(WireError):
            wire.encode(msg)


# -- the registry ------------------------------------------------------------------------------------------------


class Colour(Enum):
    RED = "red"
    BLUE = "blue"


class Level(IntEnum):
    LOW = 1
    HIGH = 2


@dataclass(frozen=True, slots=True)
class Inner:
    name: str
    level: Level


@dataclass(frozen=True, slots=True)
class Envelope:
    """A node-level message as another engineer might write one: untyped payloads, optionals, unions."""

    to: Hashable
    payload: Any
    colour: Colour | None
    inner: Inner | None
    either: int | str
    items: tuple[Inner, ...] = ()
    meta: Mapping[str, float] = field(default_factory=dict)


def registry() -> Registry:
    reg = Registry()
    reg.register(LeafUpdate, 5)
    reg.register(TreeId, 16)
    reg.register(Inner, 30)
    reg.register(Envelope, 31)
    reg.check()
    return reg


def test_node_level_messages_with_untyped_payloads_round_trip():
    reg = registry()
    payloads = [
        None, True, -7, 2.5, "x", b"\x00\xff", (1, (2, "three"), ()),
        LeafUpdate(TreeId("r", "01"), "01"),  # a registered message inside an Any field
        (Inner("a", Level.HIGH), {"not": "hashable but Any allows maps"}),
        {"k": (1, 2), "m": {"n": None}},
    ]  # fmt: skip
    for payload in payloads:
        for colour in (None, Colour.BLUE):
            msg = Envelope(
                ("node", 7), payload, colour, Inner("i", Level.LOW), "s", (Inner("j", Level.HIGH),), {"a": 1.5}
            )
            assert reg.decode(reg.encode(msg)) == msg
    assert reg.decode(reg.encode(Envelope(1, None, None, None, 5))) == Envelope(1, None, None, None, 5)


def test_untyped_fields_refuse_lists_sets_and_unregistered_classes():
    reg = registry()
    for payload in ([1], {1, 2}, Colour.RED, Space("r", 0.0, 1.0), 1 + 2j, bytearray(b"x")):
        with pytest.raises(WireError):
            reg.encode(Envelope(1, payload, None, None, 1))


def test_registration_rules():
    reg = Registry()

    @dataclass
    class Mutable:
        x: int

    @dataclass(frozen=True)
    class Listy:
        xs: list[int]

    @dataclass(frozen=True)
    class Sets:
        xs: frozenset[int]

    @dataclass(frozen=True)
    class IntKeys:
        m: Mapping[int, int]

    @dataclass(frozen=True)
    class Ambiguous:
        x: tuple[int, ...] | Inner

    with pytest.raises(TypeError, match="frozen"):
        reg.register(Mutable, 1)
    with pytest.raises(TypeError, match="not a dataclass"):
        reg.register(int, 1)
    for cls in (Listy, Sets, IntKeys):
        with pytest.raises(TypeError):
            reg.register(cls, 2)
    reg.register(Inner, 3)
    with pytest.raises(TypeError, match="told apart"):
        reg.register(Ambiguous, 4)
    assert reg.register(Inner, 3) is Inner  # idempotent
    with pytest.raises(ValueError, match="already registered"):
        reg.register(Inner, 5)
    with pytest.raises(ValueError, match="already taken"):
        reg.register(TreeId, 3)
    for tag in (0, -1, 2**32, "1", True):
        with pytest.raises(ValueError):
            reg.register(TreeId, tag)
    reg.register(LeafUpdate, 6)
    with pytest.raises(TypeError, match="TreeId, which is not registered"):
        reg.check()
    with pytest.raises(WireError, match="TreeId is not registered"):
        reg.encode(LeafUpdate(TreeId("r"), "0"))


def _unmemoized() -> Registry:
    """The node's registry over again, without `memoize`."""
    plain = Registry()
    for tag, cls in wire.REGISTRY.classes().items():
        with contextlib.suppress(TypeError):  # a union whose members come later: registered on the second pass
            plain.register(cls, tag)
    for tag, cls in wire.REGISTRY.classes().items():
        plain.register(cls, tag)
    return plain


@settings(max_examples=150)
@given(events(), st.lists(st.tuples(ids, st.integers(0, 2**32)), min_size=1, max_size=4))
def test_an_event_shared_by_many_messages_encodes_as_if_each_carried_its_own(event, subs):
    plain = _unmemoized()
    memo = wire.REGISTRY._memo[PubEvent]
    host = (b"h" * 20, "10.0.0.1", 1)
    messages = [EventDelivery(event, (s,)) for s in subs] + [ProbePubMulticast(event, (), host, 0)]
    for m in messages:
        assert wire.encode(m) == plain.encode(m)
    assert memo[id(event)][0] is event  # encoded once, then reused
    assert not plain._memo
