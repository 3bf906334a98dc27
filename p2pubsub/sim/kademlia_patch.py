"""Make unmodified `kademlia` 2.2.3 / `rpcudp` 5.0.1 run deterministically on a virtual-time loop.

The libraries read process-global state that a simulation must control. Each is reached through a module
attribute, so we swap the attribute for the duration of a run and put the original back afterwards; the
libraries' source is untouched.

| module | reads | used for | replaced by |
| --- | --- | --- | --- |
| `kademlia.routing` | `time.monotonic()` | bucket age: `lonely_buckets` (hourly refresh) | loop clock |
| `kademlia.storage` | `time.monotonic()` | value age: TTL cull, republish after an hour | loop clock |
| `kademlia.network` | `random.getrandbits` | default node id | seeded Random |
| `kademlia.protocol` | `random.randint` | ids looked up when refreshing lonely buckets | seeded Random |
| `rpcudp.protocol` | `os.urandom` | RPC message ids (bytes on the wire) | seeded bytes |
| `rpcudp.protocol` | `umsgpack` | RPC (de)serialisation | the `msgpack` C extension, if installed |

The last is speed only: pure-Python `umsgpack` costs ~150 µs per find_node reply, `msgpack` ~7 µs, and for the
values RPCs carry (lists and tuples of bytes, str, int, bool, None) both write the same bytes and read back the
same values (`tests/sim/test_sim_kademlia.py` checks). Without `msgpack` the library's own codec stays.

Everything else the libraries schedule goes through the running loop (`call_later`, `ensure_future`).
The swap is process-global: run one simulation at a time per process.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import kademlia.network
import kademlia.protocol
import kademlia.routing
import kademlia.storage
import rpcudp.protocol
import umsgpack

try:
    import msgpack
except ImportError:  # pragma: no cover - msgpack is a dependency; without it the library's codec stays
    msgpack = None

__all__ = ["kademlia_on_loop"]

_active = False


class _ClockModule:
    """Stands in for the `time` module inside a library: `monotonic()` reads the given clock."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.monotonic = clock

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


class _UrandomModule:
    """Stands in for the `os` module inside a library: `urandom(n)` draws from a seeded RNG."""

    def __init__(self, rng: random.Random) -> None:
        self.urandom = rng.randbytes

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)


class _FastMsgpack:
    """Stands in for `umsgpack` inside rpcudp: the same bytes and values through the `msgpack` C extension."""

    @staticmethod
    def packb(obj: Any) -> bytes:
        return msgpack.packb(obj, use_bin_type=True)

    @staticmethod
    def unpackb(data: bytes) -> Any:
        return msgpack.unpackb(data, raw=False, strict_map_key=False)

    def __getattr__(self, name: str) -> Any:
        return getattr(umsgpack, name)


def _replacements(clock: Callable[[], float], seed: int | str) -> list[tuple[object, str, object, Any]]:
    """(module, attribute, expected original, replacement) for every global kademlia/rpcudp reads."""

    def rng(name: str) -> random.Random:
        # One independent stream per use, so a change in one library's draws does not shift the others.
        return random.Random(f"p2pubsub.sim/{seed}/{name}")

    clock_module = _ClockModule(clock)
    return [
        (kademlia.routing, "time", time, clock_module),
        (kademlia.storage, "time", time, clock_module),
        (kademlia.network, "random", random, rng("kademlia.network")),
        (kademlia.protocol, "random", random, rng("kademlia.protocol")),
        (rpcudp.protocol, "os", os, _UrandomModule(rng("rpcudp.protocol"))),
        *([(rpcudp.protocol, "umsgpack", umsgpack, _FastMsgpack())] if msgpack is not None else []),
    ]


@contextmanager
def kademlia_on_loop(loop: Any, seed: int | str = 0) -> Iterator[None]:
    """Within the block, kademlia/rpcudp read `loop.time()` as their clock and seeded RNGs for randomness.

    `loop` is any object with `time()` (normally a `VirtualTimeLoop`). Not reentrant: only one simulation
    per process at a time. Raises if the libraries no longer have the expected attributes (version drift).
    """
    global _active
    if _active:
        raise RuntimeError("kademlia_on_loop is already active: run one simulation at a time per process")
    patches = _replacements(loop.time, seed)
    for module, name, original, _ in patches:
        if getattr(module, name, None) is not original:
            raise RuntimeError(
                f"{module.__name__}.{name} is not the expected {original.__name__!r} module; "
                "kademlia/rpcudp changed, review p2pubsub.sim.kademlia_patch"
            )
    _active = True
    try:
        for module, name, _, replacement in patches:
            setattr(module, name, replacement)
        yield
    finally:
        for module, name, original, _ in patches:
            setattr(module, name, original)
        _active = False
