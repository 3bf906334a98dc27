"""The one wire format of peer messages: compact, versioned, size-bounded CBOR (RFC 8949, via cbor2).

Frame::

    version (1 byte, WIRE_VERSION) | one CBOR item: [tag, field_1, ..., field_n]

A message is a frozen dataclass registered under a small integer tag (`register(cls, tag)`). Its fields travel
positionally in declaration order, so field names cost nothing; fields declared ``init=False`` (such as the
memo ``Space._areas``) are not sent. How a field is written follows its type annotation:

- ``str``, ``bytes``, ``bool``, ``None``, ``int`` (64-bit): the CBOR type of the same name. ``float`` (an ``int`` is
  accepted too, as in typing): the shortest CBOR float that holds the value exactly, so ``-0.0`` stays ``-0.0``
  and ``100.0`` costs 3 bytes; NaN and infinities pass.
- an ``Enum`` (e.g. ``Absent``): its value.
- a registered dataclass named by the annotation: the array of its fields, without a tag since the type is
  known; inside a union (``Range | StringEq | StringPrefix``) the array starts with the member's tag.
- ``tuple[X, ...]``, ``tuple[A, B]``: an array, a tuple again on decode. ``Mapping[str, V]``, ``dict[str, V]``: a
  map, a dict on decode.
- ``Any``, ``object``, ``Hashable`` (e.g. a host ``(node_id, ip, port)``): self-described values: scalars, tuples,
  maps with str keys (not under ``Hashable``), and registered dataclasses as the one-entry map
  ``{bytes([tag]): [fields]}``. Lists and other types are refused: they would not come back equal.

Tags: 1–9 tree messages, 10–15 union members (a tag under 24 is one CBOR byte), 16–23 other values, 24–63
node-level messages, 64 and above free.

Decoding trusts nothing. The input is at most `MAX_MESSAGE` bytes, so no string or container can be longer;
nesting is capped at `MAX_DEPTH`; CBOR tags, indefinite lengths and duplicate or non-string map keys are refused
(no shared references, no bignums, no string references that could amplify the input); the decoded items may not
outnumber the input's bytes; every field is checked against its annotation. Whatever is wrong raises `WireError`,
never another exception. `encode` applies the same rules, so whatever it produces decodes: a message the other end
could not read fails loudly at the sender instead of vanishing at the receiver.
"""

from __future__ import annotations

import dataclasses
import enum
import io
import types
import typing
from collections.abc import Callable, Hashable, Mapping
from operator import attrgetter
from typing import Any

import cbor2

from ..model import Range, StringEq, StringPrefix, Subscription
from ..tree.messages import (
    AdoptNode,
    EventDelivery,
    InsertSub,
    LeafUpdate,
    NodeInfo,
    NodeQuery,
    ProbePub,
    ProbeSub,
    PubEvent,
    ReplicaUpdate,
    SubInstalled,
    TransferSub,
    Unsubscribe,
    Unsubscribed,
)
from ..tree.pieces import SubEntry
from ..tree.space import Space, Target
from ..tree.treeid import TreeId

__all__ = [
    "MAX_DEPTH",
    "MAX_MESSAGE",
    "REGISTRY",
    "WIRE_VERSION",
    "MessageTooLarge",
    "Registry",
    "WireError",
    "decode",
    "encode",
    "register",
]

WIRE_VERSION = 1
#: Largest encoded message (header included): fits one UDP datagram with the transport's header.
MAX_MESSAGE = 60_000
#: Deepest nesting of arrays and maps; the tree's messages need 7.
MAX_DEPTH = 24
_MEMO_SIZE = 256  # objects remembered per memoized class (see Registry.memoize)
_INT_MIN, _INT_MAX = -(1 << 64), (1 << 64) - 1  # what CBOR holds without bignum tags


class WireError(Exception):
    """A message that cannot be encoded, or bytes that are not a valid message; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class MessageTooLarge(WireError):
    """The encoded message would exceed the size limit."""

    def __init__(self, size: int, limit: int = MAX_MESSAGE) -> None:
        super().__init__(f"encoded message is {size} bytes, above the limit of {limit}")
        self.size = size
        self.limit = limit


# -- decoder options ---------------------------------------------------------------------------------------------


def _refuse_tag(*_args: Any) -> Any:
    raise ValueError("CBOR tags are not part of the wire format")


def _decoder_options() -> dict[str, Any]:
    """The strictest options this cbor2 offers; checks after decoding keep older versions safe too."""
    wanted: dict[str, Any] = {
        "max_depth": MAX_DEPTH + 4,  # slack: our own depth checks are the ones that count
        "allow_indefinite": False,
        "allow_duplicate_keys": False,
        "strict_hashable_types": True,  # map keys str/bytes only: no crafted hash collisions
        # refuse the tags cbor2 would otherwise interpret itself (shared values, string references, bignums,
        # decimals, regexps, ...); any other tag comes back as a CBORTag, which the checks refuse
        "semantic_decoders": dict.fromkeys((*range(300), 1004, 55799), _refuse_tag),
    }
    options = {}
    for key, value in wanted.items():
        try:
            cbor2.CBORDecoder(io.BytesIO(b""), **{key: value})
        except TypeError:
            continue
        options[key] = value
    return options


_LOAD_OPTIONS = _decoder_options()


class _Budget:
    """Decoded items left: at most one per input byte, so nothing decodes to more than its input."""

    __slots__ = ("left",)

    def __init__(self, left: int) -> None:
        self.left = left

    def take(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            raise WireError("more items than the input can hold (shared references?)")


Enc = Callable[[Any, int], Any]
Dec = Callable[[Any, _Budget, int], Any]

# CBOR kinds as cbor2 decodes them, for dispatching unions
_KIND = {
    type(None): "none",
    bool: "bool",
    int: "int",
    float: "float",
    str: "str",
    bytes: "bytes",
    list: "array",
    dict: "map",
}


@dataclasses.dataclass(slots=True)
class _Codec:
    enc: Enc
    dec: Dec
    kind: str  # the CBOR kind it writes; "dataclass" for a registered class (an array)
    cls: type | None = None
    inline: str | None = None  # a check the generated field code does in place (see _field_functions)


def _kind_name(p: Any) -> str:
    return type(p).__name__


def _deep(depth: int) -> None:
    if depth > MAX_DEPTH:
        raise WireError(f"nested deeper than {MAX_DEPTH}")


# -- scalar codecs -----------------------------------------------------------------------------------------------


def _exact(t: type, kind: str) -> _Codec:
    name = t.__name__

    def enc(v: Any, depth: int) -> Any:
        if type(v) is not t:
            raise WireError(f"expected {name}, got {_kind_name(v)}")
        return v

    def dec(p: Any, budget: _Budget, depth: int) -> Any:
        if type(p) is not t:
            raise WireError(f"expected {name}, got {_kind_name(p)}")
        return p

    return _Codec(enc, dec, kind, inline=name)


def _check_int(v: Any) -> int:
    if not _INT_MIN <= v <= _INT_MAX:
        raise WireError(f"integer {v} does not fit 64 bits")
    return v


def _int_codec() -> _Codec:
    def enc(v: Any, depth: int) -> Any:
        if type(v) is not int:
            raise WireError(f"expected int, got {_kind_name(v)}")
        return _check_int(v)

    def dec(p: Any, budget: _Budget, depth: int) -> Any:
        if type(p) is not int:
            raise WireError(f"expected int, got {_kind_name(p)}")
        return _check_int(p)

    return _Codec(enc, dec, "int", inline="int")


def _float_codec() -> _Codec:
    def enc(v: Any, depth: int) -> Any:
        t = type(v)
        if t is float:
            return v
        if t is int:
            return _check_int(v)
        raise WireError(f"expected float, got {_kind_name(v)}")

    def dec(p: Any, budget: _Budget, depth: int) -> Any:
        t = type(p)
        if t is float:
            return p
        if t is int:
            return _check_int(p)
        raise WireError(f"expected float, got {_kind_name(p)}")

    return _Codec(enc, dec, "float", inline="float")


def _none_codec() -> _Codec:
    def enc(v: Any, depth: int) -> Any:
        if v is not None:
            raise WireError(f"expected None, got {_kind_name(v)}")
        return None

    def dec(p: Any, budget: _Budget, depth: int) -> Any:
        if p is not None:
            raise WireError(f"expected null, got {_kind_name(p)}")
        return None

    return _Codec(enc, dec, "none")


def _enum_codec(e: type[enum.Enum]) -> _Codec:
    value_types = {type(m.value) for m in e}
    if len(value_types) != 1 or not value_types <= {str, int}:
        raise TypeError(f"enum {e.__name__}: values must all be str or all int to go on the wire")
    (vt,) = value_types
    name = e.__name__

    def enc(v: Any, depth: int) -> Any:
        if type(v) is not e:
            raise WireError(f"expected {name}, got {_kind_name(v)}")
        return v.value

    def dec(p: Any, budget: _Budget, depth: int) -> Any:
        if type(p) is not vt:
            raise WireError(f"expected a {name} value, got {_kind_name(p)}")
        try:
            return e(p)
        except ValueError:
            raise WireError(f"{p!r} is no {name}") from None

    return _Codec(enc, dec, "str" if vt is str else "int")


# -- container codecs --------------------------------------------------------------------------------------------


def _tuple_of(item: _Codec) -> _Codec:
    ie, idec = item.enc, item.dec

    def enc(v: Any, depth: int) -> Any:
        if type(v) is not tuple:
            raise WireError(f"expected tuple, got {_kind_name(v)}")
        _deep(depth)
        return [ie(x, depth + 1) for x in v]

    def dec(p: Any, budget: _Budget, depth: int) -> Any:
        if type(p) is not list:
            raise WireError(f"expected array, got {_kind_name(p)}")
        _deep(depth)
        budget.take(len(p))
        return tuple([idec(x, budget, depth + 1) for x in p])

    return _Codec(enc, dec, "array")


def _fixed_tuple(items: list[_Codec]) -> _Codec:
    n = len(items)
    encs = [c.enc for c in items]
    decs = [c.dec for c in items]

    def enc(v: Any, depth: int) -> Any:
        if type(v) is not tuple or len(v) != n:
            raise WireError(f"expected a tuple of {n}, got {_kind_name(v)}")
        _deep(depth)
        return [e(x, depth + 1) for e, x in zip(encs, v, strict=True)]

    def dec(p: Any, budget: _Budget, depth: int) -> Any:
        if type(p) is not list or len(p) != n:
            raise WireError(f"expected an array of {n}, got {_kind_name(p)}")
        _deep(depth)
        budget.take(n)
        return tuple([d(x, budget, depth + 1) for d, x in zip(decs, p, strict=True)])

    return _Codec(enc, dec, "array")


def _check_key(k: Any) -> str:
    if type(k) is not str:
        raise WireError(f"map keys must be str, got {_kind_name(k)}")
    return k


def _mapping_of(value: _Codec) -> _Codec:
    ve, vd = value.enc, value.dec

    def enc(v: Any, depth: int) -> Any:
        if not isinstance(v, Mapping):
            raise WireError(f"expected a mapping, got {_kind_name(v)}")
        _deep(depth)
        return {_check_key(k): ve(x, depth + 1) for k, x in v.items()}

    def dec(p: Any, budget: _Budget, depth: int) -> Any:
        if type(p) is not dict:
            raise WireError(f"expected map, got {_kind_name(p)}")
        _deep(depth)
        budget.take(len(p))
        return {_check_key(k): vd(x, budget, depth + 1) for k, x in p.items()}

    return _Codec(enc, dec, "map")


# -- the registry ------------------------------------------------------------------------------------------------


class _ClassSpec:
    """A registered class: its tag, the fields that travel, and their codecs (compiled on first use)."""

    __slots__ = ("cls", "codecs", "dec", "enc", "get", "hints", "names", "tag", "tag_key")

    def __init__(self, cls: type, tag: int, names: tuple[str, ...], hints: dict[str, Any]) -> None:
        self.cls = cls
        self.tag = tag
        self.tag_key = tag.to_bytes((tag.bit_length() + 7) // 8 or 1, "big")  # in untyped fields
        self.names = names
        self.hints = hints
        self.codecs: list[_Codec] | None = None
        self.enc: Callable[[Any, int], list[Any]] | None = None  # fields -> list, generated
        self.dec: Callable[[list[Any], int, _Budget, int], Any] | None = None  # list from index -> instance
        if len(names) == 1:
            only = names[0]
            self.get = lambda obj: (getattr(obj, only),)
        else:
            self.get = attrgetter(*names) if names else (lambda obj: ())


class Registry:
    """Message classes and their tags, with the encoder and decoder they define.

    `REGISTRY` is the node's; a separate instance serves tests or another protocol.
    """

    def __init__(self, max_size: int = MAX_MESSAGE) -> None:
        self.max_size = max_size
        self._by_cls: dict[type, _ClassSpec] = {}
        self._by_tag: dict[int, _ClassSpec] = {}
        self._by_key: dict[bytes, _ClassSpec] = {}
        self._header = bytes([WIRE_VERSION])
        self._memo: dict[type, dict[int, tuple[Any, int, list[Any]]]] = {}  # see memoize

    # -- registration ------------------------------------------------------------------------------------------

    def register(self, cls: type, tag: int) -> type:
        """Give the frozen dataclass ``cls`` the wire tag ``tag`` (a positive int); returns ``cls``.

        Raises TypeError when ``cls`` is no frozen dataclass or a field's annotation cannot go on the wire, and
        ValueError when the tag or the class is already taken by another registration.
        """
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
            raise TypeError(f"{cls!r} is not a dataclass")
        if not cls.__dataclass_params__.frozen:  # type: ignore[attr-defined]
            raise TypeError(f"{cls.__name__} must be frozen: messages are never mutated")
        if self._registered(cls, tag):
            return cls
        fields = [f for f in dataclasses.fields(cls) if f.init]
        try:
            hints = typing.get_type_hints(cls)
        except Exception as exc:
            raise TypeError(f"cannot resolve the annotations of {cls.__name__}: {exc}") from exc
        self._install(_ClassSpec(cls, tag, tuple(f.name for f in fields), hints))
        return cls

    def _registered(self, cls: type, tag: int) -> bool:
        """True if ``cls`` already has ``tag``; False if both are free; ValueError for a bad or taken tag."""
        if type(tag) is not int or not 0 < tag < (1 << 32):
            raise ValueError(f"tag must be an int in [1, 2**32), got {tag!r}")
        old = self._by_cls.get(cls)
        if old is not None:
            if old.tag == tag:
                return True
            raise ValueError(f"{cls.__name__} is already registered under tag {old.tag}")
        if tag in self._by_tag:
            raise ValueError(f"tag {tag} is already taken by {self._by_tag[tag].cls.__name__}")
        return False

    def _install(self, spec: _ClassSpec) -> None:
        self._compile_spec(spec)  # unsupported annotations fail here, at registration
        self._by_cls[spec.cls] = spec
        self._by_tag[spec.tag] = spec
        self._by_key[spec.tag_key] = spec

    def tag_of(self, cls: type) -> int:
        return self._by_cls[cls].tag

    def classes(self) -> dict[int, type]:
        """Tag -> class, in tag order."""
        return {t: self._by_tag[t].cls for t in sorted(self._by_tag)}

    def check(self) -> None:
        """Raise TypeError if a registered class names a dataclass that is not registered."""
        for spec in self._by_cls.values():
            for name in spec.names:
                for cls in _dataclasses_in(spec.hints[name]):
                    if cls not in self._by_cls:
                        raise TypeError(f"{spec.cls.__name__}.{name} uses {cls.__name__}, which is not registered")

    # -- encoding ----------------------------------------------------------------------------------------------

    def encode(self, message: Any) -> bytes:
        """The frame of ``message``; raises `MessageTooLarge` above `max_size`, `WireError` for a message that
        breaks its annotations or is not registered."""
        spec = self._by_cls.get(type(message))
        if spec is None:
            raise WireError(f"{type(message).__name__} is not a registered message class")
        plain = self._enc_fields(spec, message, 1, tagged=True)
        try:
            body = cbor2.dumps(plain, canonical=True)  # canonical: the shortest exact float encodings
        except Exception as exc:  # e.g. a str with lone surrogates, which UTF-8 cannot carry
            raise WireError(f"{spec.cls.__name__}: cannot encode: {exc}") from None
        size = len(body) + 1
        if size > self.max_size:
            raise MessageTooLarge(size, self.max_size)
        return self._header + body

    def _enc_fields(self, spec: _ClassSpec, obj: Any, depth: int, tagged: bool = False) -> list[Any]:
        _deep(depth)
        enc = spec.enc if spec.enc is not None else self._compile_spec(spec)[0]
        inner = depth + 1
        try:
            out = enc(obj, inner)
        except WireError as exc:
            raise WireError(
                f"{spec.cls.__name__}.{_culprit(spec, spec.get(obj), inner, encoding=True)}: {exc.reason}"
            ) from None
        if tagged:
            out.insert(0, spec.tag)
        return out

    # -- decoding ----------------------------------------------------------------------------------------------

    def decode(self, data: bytes | bytearray | memoryview) -> Any:
        """The message in the frame ``data``; raises `WireError` (and nothing else) unless it is exactly one valid,
        registered message of this wire version."""
        try:
            n = len(data)
            if n > self.max_size:
                raise WireError(f"frame is {n} bytes, above the limit of {self.max_size}")
            if n < 2:
                raise WireError("truncated frame")
            if data[0] != WIRE_VERSION:
                raise WireError(f"unsupported wire version {data[0]} (this node speaks {WIRE_VERSION})")
            stream = io.BytesIO(data)
            stream.seek(1)
            try:
                plain = cbor2.CBORDecoder(stream, **_LOAD_OPTIONS).decode()
            except Exception as exc:
                raise WireError(f"malformed CBOR: {exc}") from None
            if stream.tell() != n:
                raise WireError(f"{n - stream.tell()} trailing bytes after the message")
            if type(plain) is not list or not plain or type(plain[0]) is not int:
                raise WireError("a message is an array that starts with its tag")
            spec = self._by_tag.get(plain[0])
            if spec is None:
                raise WireError(f"unknown message tag {plain[0]}")
            return self._dec_fields(spec, plain, 1, _Budget(n), 1)
        except WireError:
            raise
        except Exception as exc:  # a bug in a check must still surface as a WireError, never escape as another type
            raise WireError(f"undecodable: {type(exc).__name__}: {exc}") from None

    def _dec_fields(self, spec: _ClassSpec, p: Any, start: int, budget: _Budget, depth: int) -> Any:
        cls = spec.cls
        if type(p) is not list:
            raise WireError(f"{cls.__name__}: expected array, got {_kind_name(p)}")
        if len(p) - start != len(spec.names):
            raise WireError(f"{cls.__name__} has {len(spec.names)} fields, got {len(p) - start}")
        _deep(depth)
        budget.take(len(p))
        dec = spec.dec if spec.dec is not None else self._compile_spec(spec)[1]
        try:
            return dec(p, start, budget, depth + 1)
        except WireError as exc:
            values = p[start:]
            raise WireError(
                f"{cls.__name__}.{_culprit(spec, values, depth + 1, encoding=False)}: {exc.reason}"
            ) from None
        except Exception as exc:  # a constructor's own validation
            raise WireError(f"{cls.__name__}: {type(exc).__name__}: {exc}") from None

    # -- codecs ------------------------------------------------------------------------------------------------

    def _compile_spec(self, spec: _ClassSpec) -> tuple[Callable[..., Any], Callable[..., Any]]:
        codecs = []
        for name in spec.names:
            try:
                codecs.append(self._codec(spec.hints[name]))
            except TypeError as exc:
                raise TypeError(f"{spec.cls.__name__}.{name}: {exc}") from None
        spec.codecs = codecs
        spec.enc, spec.dec = _field_functions(spec.cls, spec.names, codecs)
        return spec.enc, spec.dec

    def _codec(self, tp: Any) -> _Codec:
        if tp is Any or tp is object:
            return self._dynamic(hashable=False)
        if tp is Hashable:
            return self._dynamic(hashable=True)
        if tp is None or tp is type(None):
            return _none_codec()
        if tp is bool:
            return _exact(bool, "bool")
        if tp is int:
            return _int_codec()
        if tp is float:
            return _float_codec()
        if tp is str:
            return _exact(str, "str")
        if tp is bytes:
            return _exact(bytes, "bytes")
        if isinstance(tp, type) and issubclass(tp, enum.Enum):
            return _enum_codec(tp)
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            return self._dataclass_codec(tp)
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if origin is tuple:
            if len(args) == 2 and args[1] is Ellipsis:
                return _tuple_of(self._codec(args[0]))
            if not args or args == ((),):
                return _fixed_tuple([])
            return _fixed_tuple([self._codec(a) for a in args])
        if origin in (Mapping, dict):
            if len(args) != 2 or args[0] is not str:
                raise TypeError(f"only Mapping[str, V] / dict[str, V] go on the wire, not {tp!r}")
            return _mapping_of(self._codec(args[1]))
        if origin in (typing.Union, types.UnionType):
            return self._union([self._codec(a) for a in args], tp)
        raise TypeError(f"{tp!r} cannot go on the wire (lists: use tuples)")

    def memoize(self, cls: type) -> None:
        """Remember the encoding of the last few ``cls`` objects encoded as fields, by identity, so that one
        object sent inside many messages (an event in every notification and probe about it) is encoded once.
        Only for classes whose values are never mutated, mappings inside included."""
        self._memo[cls] = {}

    def _dataclass_codec(self, cls: type) -> _Codec:
        name = cls.__name__

        def lookup() -> _ClassSpec:
            spec = self._by_cls.get(cls)
            if spec is None:
                raise WireError(f"{name} is not registered")
            return spec

        def enc(v: Any, depth: int) -> Any:
            if type(v) is not cls:
                raise WireError(f"expected {name}, got {_kind_name(v)}")
            memo = self._memo.get(cls)
            if memo is None:
                return self._enc_fields(lookup(), v, depth)
            hit = memo.get(id(v))
            if hit is not None and hit[0] is v and hit[1] == depth:  # the plain list is shared, never mutated
                return hit[2]
            plain = self._enc_fields(lookup(), v, depth)
            if len(memo) >= _MEMO_SIZE:
                memo.clear()
            memo[id(v)] = (v, depth, plain)
            return plain

        def dec(p: Any, budget: _Budget, depth: int) -> Any:
            return self._dec_fields(lookup(), p, 0, budget, depth)

        return _Codec(enc, dec, "dataclass", cls)

    def _union(self, members: list[_Codec], tp: Any) -> _Codec:
        classes = {c.cls: c for c in members if c.kind == "dataclass"}
        others = {}
        for c in members:
            if c.kind == "dataclass":
                continue
            if c.kind in others or c.kind == "any" or (c.kind == "array" and classes):
                raise TypeError(f"the members of {tp!r} cannot be told apart on the wire")
            others[c.kind] = c
        by_kind = dict(others)
        if "float" in others and "int" not in others:
            by_kind["int"] = others["float"]  # a float field may hold an int
        if classes:
            for cls in classes:
                if cls not in self._by_cls:
                    raise TypeError(f"{cls.__name__} must be registered before a union that names it")

        def enc(v: Any, depth: int) -> Any:
            if type(v) in classes:
                return self._enc_fields(self._by_cls[type(v)], v, depth, tagged=True)
            kind = _KIND.get(type(v))
            codec = by_kind.get(kind) if kind is not None else None
            if codec is None and isinstance(v, enum.Enum):
                codec = by_kind.get("str" if isinstance(v.value, str) else "int")
            if codec is None:
                raise WireError(f"{_kind_name(v)} is not one of {tp}")
            return codec.enc(v, depth)

        def dec(p: Any, budget: _Budget, depth: int) -> Any:
            kind = _KIND.get(type(p))
            if kind == "array" and classes:
                tag = p[0] if p else None
                spec = self._by_tag.get(tag) if type(tag) is int else None
                if spec is None or spec.cls not in classes:
                    raise WireError(f"tag {tag!r} is not one of {tp}")
                return self._dec_fields(spec, p, 1, budget, depth)
            codec = by_kind.get(kind) if kind is not None else None
            if codec is None:
                raise WireError(f"{_kind_name(p)} is not one of {tp}")
            return codec.dec(p, budget, depth)

        return _Codec(enc, dec, "union")

    def _dynamic(self, hashable: bool) -> _Codec:
        """Self-described values for ``Any`` / ``Hashable`` fields."""

        def enc(v: Any, depth: int) -> Any:
            t = type(v)
            if t is str or t is float or t is bool or t is bytes or v is None:
                return v
            if t is int:
                return _check_int(v)
            _deep(depth)
            if t is tuple:
                return [enc(x, depth + 1) for x in v]
            spec = self._by_cls.get(t)
            if spec is not None:
                return {spec.tag_key: self._enc_fields(spec, v, depth + 1)}
            if not hashable and isinstance(v, Mapping):
                return {_check_key(k): enc(x, depth + 1) for k, x in v.items()}
            raise WireError(f"a {t.__name__} cannot go in an untyped field (annotate it, or use a tuple)")

        def dec(p: Any, budget: _Budget, depth: int) -> Any:
            t = type(p)
            if t is str or t is float or t is bool or t is bytes or p is None:
                return p
            if t is int:
                return _check_int(p)
            _deep(depth)
            if t is list:
                budget.take(len(p))
                return tuple([dec(x, budget, depth + 1) for x in p])
            if t is dict:
                budget.take(len(p))
                if len(p) == 1:
                    ((key, value),) = p.items()
                    if type(key) is bytes:
                        spec = self._by_key.get(key)
                        if spec is None:
                            raise WireError(f"unknown tag {key.hex()} in an untyped field")
                        return self._dec_fields(spec, value, 0, budget, depth + 1)
                if hashable:
                    raise WireError("a map is not hashable")
                return {_check_key(k): dec(x, budget, depth + 1) for k, x in p.items()}
            raise WireError(f"unexpected {t.__name__} in an untyped field")

        return _Codec(enc, dec, "any")


def _wrong(expected: str, value: Any) -> None:
    raise WireError(f"expected {expected}, got {_kind_name(value)}")


# the checks generated code makes in place, for the scalar fields that dominate messages
_INLINE = {
    "str": "type({v}) is not str",
    "bytes": "type({v}) is not bytes",
    "bool": "type({v}) is not bool",
    "int": "type({v}) is not int or not _INT_MIN <= {v} <= _INT_MAX",
    "float": "type({v}) is not float and (type({v}) is not int or not _INT_MIN <= {v} <= _INT_MAX)",
}


def _field_functions(cls: type, names: tuple[str, ...], codecs: list[_Codec]) -> tuple[Any, Any]:
    """Straight-line encoder and decoder of one class's fields, generated once: a loop over per-field codec
    calls costs about twice as much, and the fields of the tree's messages are what every message is made of.

    ``enc(obj, depth) -> [field values]`` and ``dec(array, start, budget, depth) -> instance``; they raise
    `WireError` without naming the field (the caller finds it again, see `_culprit`).
    """
    namespace: dict[str, Any] = {"cls": cls, "_wrong": _wrong, "_INT_MIN": _INT_MIN, "_INT_MAX": _INT_MAX}
    enc_lines, dec_lines = [], []
    for i, (name, codec) in enumerate(zip(names, codecs, strict=True)):
        namespace[f"e{i}"], namespace[f"d{i}"] = codec.enc, codec.dec
        if codec.inline is not None:
            test = _INLINE[codec.inline].format(v=f"v{i}")
            enc_lines += [f"    v{i} = obj.{name}", f"    if {test}: _wrong({codec.inline!r}, v{i})"]
            dec_lines += [f"    v{i} = p[s + {i}]", f"    if {test}: _wrong({codec.inline!r}, v{i})"]
        else:
            enc_lines.append(f"    v{i} = e{i}(obj.{name}, depth)")
            dec_lines.append(f"    v{i} = d{i}(p[s + {i}], budget, depth)")
    values = ", ".join(f"v{i}" for i in range(len(names)))
    enc_source = ["def enc(obj, depth):", *enc_lines, f"    return [{values}]"]
    dec_source = ["def dec(p, s, budget, depth):", *dec_lines, f"    return cls({values})"]
    source = "\n".join([*enc_source, "", *dec_source])
    exec(compile(source, f"<wire fields of {cls.__qualname__}>", "exec"), namespace)
    return namespace["enc"], namespace["dec"]


def _culprit(spec: _ClassSpec, values: Any, depth: int, encoding: bool) -> str:
    """The name of the first field that fails (errors are rare: finding it again is cheaper than tracking it)."""
    assert spec.codecs is not None
    for name, codec, value in zip(spec.names, spec.codecs, values, strict=False):
        try:
            if encoding:
                codec.enc(value, depth)
            else:
                codec.dec(value, _Budget(1 << 62), depth)
        except WireError:
            return name
    return "?"


def _dataclasses_in(tp: Any) -> list[type]:
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return [tp]
    return [c for a in typing.get_args(tp) if a is not Ellipsis for c in _dataclasses_in(a)]


# -- the node's registry -----------------------------------------------------------------------------------------

REGISTRY = Registry()
register = REGISTRY.register
encode = REGISTRY.encode
decode = REGISTRY.decode

# union members first: a union checks its members are registered
for _cls, _tag in (
    (Range, 10),
    (StringEq, 11),
    (StringPrefix, 12),
    (TreeId, 16),
    (Space, 17),
    (Target, 18),
    (Subscription, 19),
    (SubEntry, 20),
    (PubEvent, 21),
    (ProbeSub, 1),
    (InsertSub, 2),
    (SubInstalled, 3),
    (TransferSub, 4),
    (LeafUpdate, 5),
    (Unsubscribe, 6),
    (Unsubscribed, 7),
    (ProbePub, 8),
    (EventDelivery, 9),
    (AdoptNode, 13),  # the tree messages' 1-9 are taken; these are free and still one CBOR byte
    (ReplicaUpdate, 14),
    (NodeQuery, 15),
    (NodeInfo, 22),
):
    register(_cls, _tag)
REGISTRY.check()
REGISTRY.memoize(PubEvent)  # one event travels in every probe and notification about it
del _cls, _tag
