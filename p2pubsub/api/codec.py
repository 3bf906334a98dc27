"""Request bodies in, responses out: JSON, or CBOR when the client asks for it, checked to the JSON data model.

Whatever a client sends is decoded strictly (UTF-8 JSON without NaN/Infinity or duplicate keys; one complete CBOR
item without trailing bytes or duplicate keys) and then checked to hold only what JSON can say: objects with
string keys, arrays, strings of valid Unicode, finite numbers, booleans, null, nested at most ``MAX_DEPTH`` deep.
CBOR tags (dates, decimals, bignum fractions, ...), byte strings, ``undefined``, NaN and infinities are refused
with a precise error, so that nothing past this module meets a value the JSON API could not have sent.
"""

from __future__ import annotations

import io
import json
import math
from typing import Any

import cbor2
from aiohttp import web

from ..model import ValidationError

JSON = "application/json"
CBOR = "application/cbor"
EVENT_STREAM = "text/event-stream"
MAX_DEPTH = 32


class ApiError(Exception):
    """An HTTP-level error: ``status`` plus the stable ``code`` and ``message`` of the JSON error shape."""

    def __init__(self, status: int, code: str, message: str, path: str | None = None,
                 headers: dict[str, str] | None = None, extra: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.path = path
        self.headers = headers or {}
        self.extra = extra or {}

    def body(self) -> dict[str, Any]:
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.path is not None:
            err["path"] = self.path
        err.update(self.extra)
        return {"error": err}


# --- decoding ---


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise ValueError(f"duplicate key {dup!r}")
    return out


# built once: json.loads/json.dumps with options build a new decoder/encoder on every call
_DECODER = json.JSONDecoder(parse_constant=_no_constant, object_pairs_hook=_pairs)
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def decode_json(raw: bytes) -> Any:
    try:
        text = raw.decode("utf-8")
        value = _DECODER.decode(text)
    except RecursionError:
        raise ApiError(400, "malformed_json", f"JSON nested deeper than {MAX_DEPTH} levels") from None
    except UnicodeDecodeError as exc:
        raise ApiError(400, "malformed_json", f"request body is not UTF-8: {exc.reason} at byte {exc.start}") from None
    except ValueError as exc:  # JSONDecodeError, huge int literals, NaN/Infinity, duplicate keys
        raise ApiError(400, "malformed_json", f"request body is not valid JSON: {str(exc)[:200]}") from None
    check_plain(value)
    return value


def decode_cbor(raw: bytes) -> Any:
    fp = io.BytesIO(raw)
    try:
        value = cbor2.CBORDecoder(fp, max_depth=MAX_DEPTH + 1, allow_duplicate_keys=False).decode()
    except RecursionError:
        raise ApiError(400, "malformed_cbor", f"CBOR nested deeper than {MAX_DEPTH} levels") from None
    except Exception as exc:  # CBORDecodeError and whatever a semantic decoder raises on nonsense
        raise ApiError(400, "malformed_cbor", f"request body is not valid CBOR: {str(exc)[:200]}") from None
    if fp.tell() != len(raw):
        raise ApiError(400, "malformed_cbor", f"{len(raw) - fp.tell()} bytes after the CBOR item")
    check_plain(value)
    return value


def check_plain(value: Any, path: str = "", depth: int = 0) -> None:
    """Raise ValidationError unless ``value`` is in the JSON data model (see module docstring)."""
    t = type(value)
    if t is str:
        _check_text(value, path)
    elif t is float:
        if not math.isfinite(value):
            raise ValidationError("not_finite", f"{value!r} is not a finite number", path or None)
    elif t is dict:
        if depth >= MAX_DEPTH:
            raise ValidationError("too_deep", f"values nest at most {MAX_DEPTH} levels", path or None)
        for k, v in value.items():
            if type(k) is not str:
                raise ValidationError("invalid_key", f"object keys must be strings, got {_cbor_kind(k)}", path or None)
            _check_text(k, path)
            check_plain(v, f"{path}.{k}" if path else k, depth + 1)
    elif t is list:
        if depth >= MAX_DEPTH:
            raise ValidationError("too_deep", f"values nest at most {MAX_DEPTH} levels", path or None)
        for i, v in enumerate(value):
            check_plain(v, f"{path}[{i}]", depth + 1)
    elif not (value is None or t is bool or t is int):
        raise ValidationError("unsupported_value", f"{_cbor_kind(value)} has no JSON equivalent", path or None)


def _check_text(s: str, path: str) -> None:
    if not s.isascii():
        try:
            s.encode("utf-8")
        except UnicodeEncodeError:
            raise ValidationError("invalid_string", "strings must be valid Unicode (no lone surrogates)",
                                  path or None) from None


def _cbor_kind(value: Any) -> str:
    if isinstance(value, cbor2.CBORTag):
        return f"CBOR tag {value.tag}"
    if isinstance(value, bytes | bytearray):
        return "a byte string"
    if value is cbor2.undefined:
        return "undefined"
    return f"a {type(value).__name__}"


def body_format(request: web.Request) -> str:
    """JSON or CBOR from the Content-Type; none at all means JSON. Anything else is 415."""
    if "Content-Type" not in request.headers:
        return JSON
    ctype = request.content_type
    if ctype == JSON or (ctype.startswith("application/") and ctype.endswith("+json")):
        return JSON
    if ctype == CBOR:
        return CBOR
    raise ApiError(415, "unsupported_media_type",
                   f"Content-Type {ctype!r} is not supported: send {JSON} or {CBOR}")


async def read_body(request: web.Request) -> Any:
    kind = body_format(request)
    raw = await request.read()  # aiohttp enforces client_max_size (413)
    if not raw:
        code = "malformed_cbor" if kind == CBOR else "malformed_json"
        raise ApiError(400, code, "the request needs a body")
    return decode_cbor(raw) if kind == CBOR else decode_json(raw)


# --- encoding and negotiation ---


def _accepts(header: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for part in header.split(","):
        fields = part.strip().split(";")
        media = fields[0].strip().lower()
        if not media:
            continue
        q = 1.0
        for param in fields[1:]:
            key, _, val = param.strip().partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(val)
                except ValueError:
                    q = 0.0
                if not 0.0 <= q <= 1.0:
                    q = 0.0
        out[media] = max(q, out.get(media, 0.0))
    return out


def response_format(request: web.Request) -> str:
    """CBOR when the Accept header prefers it, or when it does not say and the request body was CBOR."""
    header = request.headers.get("Accept", "")
    if "cbor" not in header and "json" not in header:  # the common case, cheaply: no preference stated
        return CBOR if request.headers.get("Content-Type", "").split(";")[0].strip().lower() == CBOR else JSON
    accepts = _accepts(header)
    cbor_q = accepts.get(CBOR, 0.0)
    json_q = accepts.get(JSON, 0.0)
    return CBOR if cbor_q > 0 and cbor_q >= json_q else JSON


def wants_event_stream(request: web.Request) -> bool:
    return _accepts(request.headers.get("Accept", "")).get(EVENT_STREAM, 0.0) > 0


def dump_json(data: Any) -> bytes:
    return _ENCODER.encode(data).encode()


def respond(request: web.Request, data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    if response_format(request) == CBOR:
        return web.Response(body=cbor2.dumps(data), status=status, content_type=CBOR, headers=headers)
    return web.Response(body=dump_json(data), status=status, content_type=JSON, headers=headers)


__all__ = [
    "CBOR",
    "EVENT_STREAM",
    "JSON",
    "MAX_DEPTH",
    "ApiError",
    "body_format",
    "check_plain",
    "decode_cbor",
    "decode_json",
    "dump_json",
    "read_body",
    "respond",
    "response_format",
    "wants_event_stream",
]
