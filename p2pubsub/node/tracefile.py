"""A per-node message trace: an :class:`~p2pubsub.node.observer.Observer` that appends one JSON line per peer
message the node sends or receives, and per client action, to a file (``p2pubsub node --trace FILE``).

Made for live runs of real node processes (``p2pubsub experiment``), where each node writes its own file and the
runner merges them afterwards (:mod:`p2pubsub.experiment.traces`) into the Parquet trace format of
:mod:`p2pubsub.trace.schema`. Every line is a JSON array whose first element names the row kind:

=====================================================================  ================================================
``["h", node_id_hex, ip, port, pid, t]``                               header: who writes this file (once, when the
                                                                       node first reports; ``ip:port`` is its DHT
                                                                       address)
``["s", lid, t, dst_ip, dst_port, type, bytes, cause, event, sub]``    a message sent (``Observer.sent``)
``["r", lid, t, src_ip, src_port, type]``                              a message received (``Observer.received``)
``["sub", sub_id, t]``                                                 a subscribe call started here
``["ins", sub_id, t, cause]``                                          ... its subscription finished installing
``["pub", event_id, t]``                                               a publish call here
``["dlv", sub_id, event_id, t, cause, pub_ip, pub_port, published]``  a notification this home delivered to its
                                                                       client-facing buffer
=====================================================================  ================================================

``lid`` numbers the node's sent and received rows together (0, 1, 2, ...); the node passes the ``lid`` of a
received message as ``cause`` to everything handling it leads to, so ``cause`` links a row to the message that
caused it *on the same node*. ``type`` is the message's class name, a ``Routed`` message logged as what it
carries (as the simulator does); ``event`` / ``sub`` are the event and subscription ids it works for, if any.
Times ``t`` are ``time.monotonic()`` seconds: the same clock as the node's event loop and, on Linux, one clock
(CLOCK_MONOTONIC) for every process of the machine, so the files of one machine can be merged on one time line.

Cost: a row is one JSON encoding of a short list and a buffered write (about 4 microseconds; a 20-node run
measured delivery latency p50 15.8 ms, p99 81 ms with traces and 14.6 ms, 64 ms without: one run each). The buffer is
flushed at most ``flush_interval`` seconds after a row is written (a loop timer), and on :meth:`close`; a node
killed with SIGKILL loses at most that last interval of rows, which the merge reports as messages received that
nobody sent, or sent and never received.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from typing import Any

from .observer import Observer

__all__ = ["TraceFile", "describe"]

_encode = json.JSONEncoder(separators=(",", ":"), allow_nan=True).encode


def describe(msg: Any) -> tuple[str, str | None, str | None]:
    """``(type, event_id, subscription_id)`` of a peer message, as a trace row records it."""
    inner = getattr(msg, "msg", None) if type(msg).__name__ == "Routed" else None
    if inner is not None:
        msg = inner
    typ = type(msg).__name__
    event = getattr(msg, "event", None)
    event_id = getattr(event, "event_id", None)
    sub_id = getattr(msg, "sub_id", None)
    if sub_id is None:
        entry = getattr(msg, "entry", None)
        if entry is not None:
            sub_id = getattr(entry, "sub_id", None)
        elif typ == "EventDelivery":
            subs = getattr(msg, "subs", ())
            sub_id = subs[0][0] if len(subs) == 1 else None
        elif typ == "TransferSub":
            ids = {e.sub_id for e in getattr(msg, "entries", ())}
            sub_id = next(iter(ids)) if len(ids) == 1 else None
        elif typ == "Unsubscribe":
            key = getattr(msg, "key", None)
            sub_id = key[0] if key else None
    return typ, event_id, sub_id if isinstance(sub_id, str) else None


class TraceFile(Observer):
    """Appends the node's trace rows to ``path`` (JSON lines, see the module docstring)."""

    def __init__(self, path: str | os.PathLike, *, flush_interval: float = 0.2, clock=time.monotonic) -> None:
        self.path = os.fspath(path)
        self._clock = clock
        parent = os.path.dirname(self.path)
        if parent:
            os.makedirs(parent, exist_ok=True)
        self._f = open(self.path, "a", buffering=1 << 16, encoding="utf-8")  # noqa: SIM115 (closed in close())
        self.flush_interval = flush_interval
        self._next = 0
        self._head = False
        self._timer: asyncio.TimerHandle | None = None
        self.rows = 0

    # --- writing ---

    def _write(self, row: list) -> None:
        self._f.write(_encode(row) + "\n")
        self.rows += 1
        if self._timer is None and self.flush_interval > 0:
            try:
                self._timer = asyncio.get_running_loop().call_later(self.flush_interval, self.flush)
            except RuntimeError:  # no loop (tests): flush at once
                self.flush()

    def _header(self, node: Any) -> None:
        host = getattr(node, "host", None)
        if host is None:
            return
        self._head = True
        self._write(["h", node.id.hex(), host[1], host[2], os.getpid(), self._clock()])

    def flush(self) -> None:
        self._timer = None
        if not self._f.closed:
            self._f.flush()

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._f.closed:
            self._f.close()

    def _lid(self) -> int:
        lid = self._next
        self._next += 1
        return lid

    # --- observer hooks ---

    def sent(self, node: Any, dst: tuple, msg: Any, nbytes: int, cause: int | None) -> int:
        if not self._head:
            self._header(node)
        lid = self._lid()
        typ, event_id, sub_id = describe(msg)
        self._write(["s", lid, self._clock(), dst[1], dst[2], typ, nbytes, cause, event_id, sub_id])
        return lid

    def received(self, node: Any, src: tuple, msg: Any) -> int:
        if not self._head:
            self._header(node)
        lid = self._lid()
        self._write(["r", lid, self._clock(), src[0], src[1], describe(msg)[0]])
        return lid

    def subscribed(self, node: Any, sub_id: str, at: float) -> None:
        if not self._head:
            self._header(node)
        self._write(["sub", sub_id, at])

    def installed(self, node: Any, sub_id: str, at: float, cause: int | None) -> None:
        self._write(["ins", sub_id, at, cause])

    def published(self, node: Any, event_id: str, at: float) -> None:
        if not self._head:
            self._header(node)
        self._write(["pub", event_id, at])

    def delivered(self, node: Any, sub_id: str, event: Any, at: float, cause: int | None) -> None:
        pub = event.publisher
        self._write(["dlv", sub_id, event.event_id, at, cause, pub[1], pub[2], event.published_at])
