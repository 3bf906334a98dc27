"""When have all consequences of one input been handled? Termination detection on overlay links (pure).

Dijkstra & Scholten's scheme for diffusing computations, on the brokers' FIFO links: a broker handles a *tracked*
input (a client command, or a ``Tracked`` message from a neighbour), sends whatever its core emits as ``Tracked``
messages under a fresh token, and counts them. A neighbour answers ``Echoed(token)`` once *its* handling of that
message, and transitively of everything it caused, is over. When the count of an input reaches zero, the broker
answers its own parent (or completes the client's command). The brokers' cores handle a message completely before
the next, so an echo that reaches the origin means every broker the input touched has handled its part: for a
subscription in OctopiA, every PRT of the cluster holds it and every CIV_SET it caused is applied at the hosts.

Sends to a position with no bound holder are not counted (the holder that takes it gets a snapshot instead), and
unbinding a position releases every wait on it, so a crash never blocks an echo forever.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class _Pending:
    parent: Any
    waiting: Counter = field(default_factory=Counter)


class Echo:
    def __init__(self) -> None:
        self.pending: dict[int, _Pending] = {}
        self._next = 0

    def open(self, parent: Any) -> int:
        """A new tracked input; ``parent`` is returned when it completes."""
        self._next += 1
        self.pending[self._next] = _Pending(parent)
        return self._next

    def sent(self, token: int, to: Hashable) -> None:
        self.pending[token].waiting[to] += 1

    def settle(self, token: int) -> tuple[bool, Any]:
        """After the input's sends: ``(True, parent)`` if nothing is awaited (the input completes now)."""
        p = self.pending.get(token)
        if p is None or +p.waiting:
            return False, None
        del self.pending[token]
        return True, p.parent

    def answered(self, token: int, frm: Hashable) -> tuple[bool, Any]:
        """``Echoed(token)`` from ``frm``: ``(True, parent)`` if that completes the input."""
        p = self.pending.get(token)
        if p is None or p.waiting[frm] <= 0:
            return False, None
        p.waiting[frm] -= 1
        return self.settle(token)

    def release(self, frm: Hashable) -> list[Any]:
        """``frm`` is gone: stop waiting for it. Returns the parents of the inputs that complete."""
        done = []
        for token in list(self.pending):
            p = self.pending[token]
            if p.waiting.pop(frm, 0):
                ok, parent = self.settle(token)
                if ok:
                    done.append(parent)
        return done

    def __len__(self) -> int:
        return len(self.pending)


__all__ = ["Echo"]
