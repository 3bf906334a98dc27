import math

import pytest

from p2pubsub.model import (
    Absent,
    Range,
    Schema,
    StringEq,
    StringPrefix,
    ValidationError,
    parse_event,
    parse_filter,
)
from p2pubsub.model.strings import prefix_interval, string_coordinate

STOCKS = {
    "attributes": {
        "price": {"type": "float", "min": 0, "max": 1000},
        "sym": {"type": "string"},
        "vol": {"type": "int", "min": 0, "max": 10**9},
    }
}


@pytest.fixture
def schema() -> Schema:
    return Schema.from_dict("stocks", STOCKS)


def code_of(fn, *args) -> tuple[str, str | None]:
    with pytest.raises(ValidationError) as info:
        fn(*args)
    return info.value.code, info.value.path


def test_schema_round_trip_and_defaults(schema):
    assert schema.absent is Absent.NO_MATCH
    assert schema.names == ("price", "sym", "vol")
    assert Schema.from_dict("stocks", schema.to_dict()) == schema
    assert schema.attribute("price").domain == (0.0, 1000.0)
    assert schema.attribute("vol").min == 0 and isinstance(schema.attribute("vol").min, int)


@pytest.mark.parametrize(
    ("body", "code", "path"),
    [
        ([], "invalid_schema", ""),
        ({"attributes": {}}, "invalid_schema", "attributes"),
        ({"attributes": {"p": {"type": "double"}}}, "invalid_schema", "attributes.p.type"),
        ({"attributes": {"p": {"type": "float", "min": 0}}}, "invalid_schema", "attributes.p"),
        ({"attributes": {"p": {"type": "float", "min": 5, "max": 5}}}, "invalid_schema", "attributes.p"),
        ({"attributes": {"p": {"type": "float", "min": 0, "max": float("inf")}}}, "not_finite", "attributes.p.max"),
        ({"attributes": {"p": {"type": "int", "min": 0.5, "max": 3}}}, "wrong_type", "attributes.p.min"),
        ({"attributes": {"p": {"type": "float", "min": True, "max": 3}}}, "wrong_type", "attributes.p.min"),
        ({"attributes": {"p": {"type": "int", "min": 0, "max": 2**60}}}, "out_of_domain", "attributes.p.max"),
        ({"attributes": {"p": {"type": "string", "min": 0}}}, "invalid_schema", "attributes.p"),
        ({"attributes": {"p": {"type": "float", "min": 0, "max": 1, "step": 1}}}, "invalid_schema", "attributes.p"),
        ({"attributes": {"bad name": {"type": "string"}}}, "invalid_name", "attributes.bad name"),
        ({"attributes": {"p": {"type": "string"}}, "absent": "maybe"}, "invalid_schema", "absent"),
        ({"attributes": {"p": {"type": "string"}}, "extra": 1}, "invalid_schema", ""),
    ],
)
def test_schema_errors_are_precise(body, code, path):
    assert code_of(Schema.from_dict, "s", body) == (code, path)


def test_schema_name_checked():
    assert code_of(Schema.from_dict, "a.b", STOCKS)[0] == "invalid_name"


def test_extension_only_adds_attributes(schema):
    bid = {"type": "float", "min": 0, "max": 1}
    grown = Schema.from_dict("stocks", {"attributes": {**STOCKS["attributes"], "bid": bid}})
    assert schema.extension_error(grown) is None
    shrunk = Schema.from_dict("stocks", {"attributes": {"price": STOCKS["attributes"]["price"]}})
    assert "removed" in schema.extension_error(shrunk)
    moved = Schema.from_dict(
        "stocks", {"attributes": {**STOCKS["attributes"], "price": {"type": "float", "min": 0, "max": 2000}}}
    )
    assert "cannot change" in schema.extension_error(moved)
    flipped = Schema.from_dict("stocks", {**STOCKS, "absent": "match"})
    assert "absent" in schema.extension_error(flipped)


def test_filter_normalisation(schema):
    sub = parse_filter(schema, {"vol": {"gt": 5, "lt": 10}, "price": {"ge": 10, "lt": 20}, "sym": {"prefix": "AA"}})
    assert sub.attributes == ("price", "sym", "vol")  # sorted
    assert sub.constraint("vol") == Range(6, 9)  # integer bounds closed
    assert sub.constraint("price") == Range(10.0, 20.0, True, False)
    assert sub.constraint("sym") == StringPrefix("AA")
    only_ge = parse_filter(schema, {"price": {"ge": 990}})
    assert only_ge.constraint("price") == Range(990.0, 1000.0)
    eq = parse_filter(schema, {"price": {"eq": 5, "ge": 1}, "sym": {"eq": "X"}})
    assert eq.constraint("price") == Range(5.0, 5.0) and eq.constraint("sym") == StringEq("X")
    assert parse_filter(schema, eq.to_filter()) == eq


@pytest.mark.parametrize(
    ("body", "code", "path"),
    [
        ({}, "empty_filter", "filter"),
        ([], "invalid_filter", "filter"),
        ({"nope": {"eq": 1}}, "unknown_attribute", "filter.nope"),
        ({"price": {}}, "invalid_filter", "filter.price"),
        ({"price": 5}, "invalid_filter", "filter.price"),
        ({"price": {"between": [1, 2]}}, "unknown_operator", "filter.price.between"),
        ({"price": {"eq": "5"}}, "wrong_type", "filter.price.eq"),
        ({"price": {"eq": None}}, "wrong_type", "filter.price.eq"),
        ({"vol": {"eq": 5.5}}, "wrong_type", "filter.vol.eq"),
        ({"vol": {"eq": True}}, "wrong_type", "filter.vol.eq"),
        ({"price": {"ge": math.nan}}, "not_finite", "filter.price.ge"),
        ({"price": {"le": -math.inf}}, "not_finite", "filter.price.le"),
        ({"price": {"ge": -1}}, "out_of_domain", "filter.price.ge"),
        ({"price": {"ge": 30, "le": 20}}, "empty_range", "filter.price"),
        ({"price": {"gt": 20, "lt": 20}}, "empty_range", "filter.price"),
        ({"price": {"gt": 1000}}, "empty_range", "filter.price"),
        ({"price": {"eq": 5, "gt": 5}}, "empty_range", "filter.price"),
        ({"vol": {"gt": 5, "lt": 6}}, "empty_range", "filter.vol"),
        ({"sym": {"ge": "A"}}, "unknown_operator", "filter.sym.ge"),
        ({"sym": {"eq": 3}}, "wrong_type", "filter.sym.eq"),
        ({"sym": {"eq": "A", "prefix": "A"}}, "invalid_filter", "filter.sym"),
        ({"sym": {"eq": "x" * 2000}}, "too_long", "filter.sym.eq"),
    ],
)
def test_filter_errors_are_precise(schema, body, code, path):
    assert code_of(parse_filter, schema, body) == (code, path)


@pytest.mark.parametrize(
    ("body", "code", "path"),
    [
        ({}, "empty_event", "attributes"),
        ("x", "invalid_event", "attributes"),
        ({"nope": 1}, "unknown_attribute", "attributes.nope"),
        ({"price": "1"}, "wrong_type", "attributes.price"),
        ({"price": math.inf}, "not_finite", "attributes.price"),
        ({"price": 1000.5}, "out_of_domain", "attributes.price"),
        ({"vol": 1.0}, "wrong_type", "attributes.vol"),
        ({"vol": False}, "wrong_type", "attributes.vol"),
        ({"sym": b"AAPL"}, "wrong_type", "attributes.sym"),
    ],
)
def test_event_errors_are_precise(schema, body, code, path):
    assert code_of(parse_event, schema, body) == (code, path)


def test_event_values_keep_their_type(schema):
    ev = parse_event(schema, {"price": 10, "vol": 3, "sym": "A"})
    assert ev.values == {"price": 10.0, "vol": 3, "sym": "A"}
    assert isinstance(ev.values["price"], float) and isinstance(ev.values["vol"], int)


def test_matching_and_absent_semantics(schema):
    sub = parse_filter(schema, {"price": {"gt": 10, "le": 20}, "sym": {"prefix": "AA"}})
    assert sub.matches({"price": 20.0, "sym": "AAPL"})
    assert not sub.matches({"price": 10.0, "sym": "AAPL"})  # open bound
    assert not sub.matches({"price": 15.0, "sym": "ABC"})
    assert not sub.matches({"price": 15.0})  # default: an absent constrained attribute does not match
    assert sub.matches({"price": 15.0}, Absent.MATCH)  # match semantics: the constraint is ignored
    assert not sub.matches({"price": 25.0}, Absent.MATCH)


def test_string_coordinates_are_order_preserving():
    words = ["", "A", "AA", "AAPL", "AB", "B", "Zürich", "a", "é", "\U0001f600"]
    coords = [string_coordinate(w) for w in sorted(words)]
    assert coords == sorted(coords)
    lo, hi = prefix_interval("AA")
    assert lo <= string_coordinate("AA") <= string_coordinate("AAPL") <= string_coordinate("AAZZZZZZ") <= hi
    assert not lo <= string_coordinate("AB") <= hi


def test_tree_options_are_part_of_the_schema():
    s = Schema.from_dict("t", {**STOCKS, "tree": {"cutoff": None, "widen": 0.001}})
    assert s.tree.cutoff is None and s.tree.widen == 0.001
    assert Schema.from_dict("t", s.to_dict()) == s
    assert Schema.from_dict("t", {**STOCKS, "tree": {}}).tree.cutoff == 0.25
    for bad in ({"cutoff": 0}, {"cutoff": 2}, {"widen": 0.5}, {"widen": "x"}, {"other": 1}, []):
        assert code_of(Schema.from_dict, "t", {**STOCKS, "tree": bad}) == ("invalid_schema", "tree")
    plain = Schema.from_dict("t", STOCKS)
    assert "tree geometry" in plain.extension_error(s.__class__("t", plain.attributes, plain.absent, s.tree))
