"""FIFO transmission queues: how a capacity-limited link serialises datagrams.

A link of `capacity` bytes/s sends one datagram at a time, in arrival order. A datagram of `n` bytes
offered at `now` starts when the link is free and leaves `n / capacity` seconds later:
`done = max(now, free_at) + n / capacity`. The network adds propagation latency after that.
"""

from __future__ import annotations

from collections import deque
from typing import NamedTuple

__all__ = ["Backlog", "TransmitQueue"]


class Backlog(NamedTuple):
    """Datagrams (and their bytes) accepted by a queue or the network but not yet through it."""

    datagrams: int
    nbytes: int


class TransmitQueue:
    """One FIFO queue in front of a link of fixed capacity, with an optional drop-tail buffer."""

    __slots__ = ("_nbytes", "_pending", "capacity", "free_at", "limit_bytes")

    def __init__(self, capacity: float, limit_bytes: int | None = None) -> None:
        if capacity <= 0:
            raise ValueError(f"capacity must be positive, got {capacity}")
        self.capacity = float(capacity)
        self.limit_bytes = limit_bytes
        self.free_at = 0.0
        self._pending: deque[tuple[float, int]] = deque()  # (transmission done at, nbytes), FIFO
        self._nbytes = 0

    def admit(self, now: float, nbytes: int) -> float | None:
        """Queue a datagram offered at `now`; return when it has left, or None if the buffer is full."""
        self._expire(now)
        if self.limit_bytes is not None and self._nbytes + nbytes > self.limit_bytes:
            return None
        done = max(now, self.free_at) + nbytes / self.capacity
        self.free_at = done
        self._pending.append((done, nbytes))
        self._nbytes += nbytes
        return done

    def backlog(self, now: float) -> Backlog:
        """Datagrams waiting or being transmitted at `now`."""
        self._expire(now)
        return Backlog(len(self._pending), self._nbytes)

    def _expire(self, now: float) -> None:
        pending = self._pending
        while pending and pending[0][0] <= now:
            self._nbytes -= pending.popleft()[1]
