"""Time-limited memories (events seen at a tree node, notifications delivered at a home) and their expiry.

Entries are written with an expiry of ``now + ttl`` on a clock that never goes back, so a dict's insertion order
is its expiry order: expiring scans from the oldest entry and stops at the first live one, costing what it
forgets, not what it keeps (a full sweep on every tick cost the simulator a fifth of its time). Entries merged in
from another node may sit behind younger ones; they are forgotten at most one ttl late, never early.
"""

from __future__ import annotations

from typing import Any


def expire_oldest(memory: dict[Any, float], now: float) -> None:
    """Forget the entries of ``memory`` (key -> expiry) whose expiry has passed."""
    stale = []
    for key, until in memory.items():
        if until > now:
            break
        stale.append(key)
    for key in stale:
        del memory[key]


def expire_oldest_pairs(memory: dict[Any, tuple[Any, float]], now: float) -> None:
    """`expire_oldest` for a memory whose values are ``(anything, expiry)``."""
    stale = []
    for key, (_, until) in memory.items():
        if until > now:
            break
        stale.append(key)
    for key in stale:
        del memory[key]
