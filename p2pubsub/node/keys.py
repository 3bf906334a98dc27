"""DHT keys of tree nodes and schemas.

We hash identifiers with the kademlia library's own digest (SHA-1, 160 bits) rather than mmh3: keys must live in
the same 160-bit space as node ids for XOR distance to say which node is responsible, and SHA-1 spreads the
structured identifiers (``stocks.price/0110``, its siblings, its children) uniformly across it.
"""

from __future__ import annotations

from functools import lru_cache

from kademlia.utils import digest

from ..tree import TreeId


@lru_cache(maxsize=1 << 16)  # a pure function of a frozen value, hashed on every routing decision
def tree_key(tid: TreeId) -> bytes:
    return digest(f"tree:{tid}")


def schema_key(name: str) -> bytes:
    return digest(f"schema:{name}")


def as_int(key: bytes) -> int:
    return int.from_bytes(key, "big")
