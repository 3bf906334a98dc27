"""Which node is responsible for a key, as this node sees the network (Kademlia: the closest by XOR).

Pure bookkeeping over a snapshot of the DHT routing table: responsibility (am I the closest node I know of?),
the next hop toward a key (the closest contact, or a cached resolution), and the resolution cache itself,
invalidated when a host fails, so that in steady state a probe costs one overlay hop.
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from collections.abc import Hashable, Iterable

Host = Hashable  # (node_id, ip, port)


class Neighbourhood:
    INCREMENTAL = 256  # cached answers brought up to date when contacts are added (more: recomputed on demand)

    def __init__(self, me: tuple[bytes, str, int], cache_size: int = 65_536) -> None:
        self.me = me
        self._me_int = int.from_bytes(me[0], "big")
        self._contacts: list[tuple[int, tuple]] = []
        self._ids: set[int] = set()
        self.version = -1
        # answers valid for this version: key -> (distance, closest known host), with us / without us
        self._closest: dict[bytes, tuple[int, tuple]] = {}
        self._closest_other: dict[bytes, tuple[int, tuple]] = {}
        # (key, n, leaving) -> the n nearest (distance, host), nearest first, and the hosts alone
        self._nearest: dict[tuple[bytes, int, bool], tuple[list[tuple[int, tuple]], list[tuple]]] = {}
        self._resolved: OrderedDict[bytes, tuple] = OrderedDict()  # key -> host that said it is responsible
        self._cache_size = cache_size
        self.leaving = False  # a leaving node is responsible for nothing

    def update(self, contacts: Iterable[tuple[bytes, str, int]], version: int) -> None:
        if version == self.version:
            return
        self.version = version
        self.update_pairs([(int.from_bytes(c[0], "big"), c) for c in contacts], version)

    def update_pairs(self, pairs: list[tuple[int, tuple]], version: int) -> None:
        """`update` from ``(id as int, contact)`` pairs (the DHT keeps them built: no conversion per call)."""
        self.version = version
        me = self._me_int
        self._contacts = [p for p in pairs if p[0] != me]
        self._ids = {p[0] for p in self._contacts}
        self._closest.clear()
        self._closest_other.clear()
        self._nearest.clear()

    def add_pairs(self, pairs: list[tuple[int, tuple]], version: int) -> None:
        """Catch up with contacts added to the DHT's table since our version (and nothing else changed).

        Added contacts can only displace cached answers, so small caches are brought up to date (the keys this
        node holds are asked about on every tick: while lookups keep adding contacts, recomputing each answer
        from the whole table cost a tenth of a 5000-node simulation); large ones start over."""
        self.version = version
        ids = self._ids
        added = []
        for p in pairs:
            if p[0] not in ids and p[0] != self._me_int:
                ids.add(p[0])
                self._contacts.append(p)
                added.append(p)
        if not added:
            return
        for cache in (self._closest, self._closest_other):
            if len(cache) > self.INCREMENTAL:
                cache.clear()
                continue
            for key, (best_d, _) in cache.items():
                k = int.from_bytes(key, "big")
                for cid, c in added:
                    if cid ^ k < best_d:
                        best_d = cid ^ k
                        cache[key] = (best_d, c)
        if len(self._nearest) > self.INCREMENTAL:
            self._nearest.clear()
            return
        for (key, n, leaving), (ranked, _) in list(self._nearest.items()):
            k = int.from_bytes(key, "big")
            closer = [(cid ^ k, c) for cid, c in added if len(ranked) < n or cid ^ k < ranked[-1][0]]
            if closer:
                ranked = heapq.nsmallest(n, ranked + closer, key=lambda dc: dc[0])
                self._nearest[(key, n, leaving)] = (ranked, [c for _, c in ranked])

    @property
    def contacts(self) -> list[tuple]:
        return [c for _, c in self._contacts]

    def closest(self, key: bytes, exclude_me: bool = False) -> tuple:
        """The node closest to ``key`` among those known (this node included unless leaving or excluded)."""
        mine = not exclude_me and not self.leaving
        cache = self._closest if mine else self._closest_other
        cached = cache.get(key)
        if cached is not None:
            return cached[1]
        k = int.from_bytes(key, "big")
        best, best_d = None, None
        if mine:
            best, best_d = self.me, self._me_int ^ k
        for cid, c in self._contacts:
            d = cid ^ k
            if best_d is None or d < best_d:
                best, best_d = c, d
        if best is not None:
            if len(cache) > self._cache_size:
                cache.clear()
            cache[key] = (best_d, best)
        return best

    def nearest(self, key: bytes, n: int) -> list[tuple]:
        """The ``n`` nodes closest to ``key`` that this node knows, itself included (unless leaving), nearest
        first: the responsible node, then the holders of the key's replicas."""
        # asked for every replicated key on every tick and every replica update: cached until the table changes
        cached = self._nearest.get((key, n, self.leaving))
        if cached is not None:
            return cached[1]
        k = int.from_bytes(key, "big")
        ranked = [(cid ^ k, c) for cid, c in self._contacts]
        if not self.leaving:
            ranked.append((self._me_int ^ k, self.me))
        ranked = heapq.nsmallest(n, ranked, key=lambda dc: dc[0])
        out = [c for _, c in ranked]
        if len(self._nearest) > self._cache_size:
            self._nearest.clear()
        self._nearest[(key, n, self.leaving)] = (ranked, out)
        return out

    def responsible(self, key: bytes) -> bool:
        return self.closest(key) == self.me

    def next_hop(self, key: bytes) -> tuple | None:
        """Where to send a message for ``key`` that this node is not responsible for: the node that said it is
        responsible, if still believed closer than us, else the closest contact (None: no contact at all)."""
        hinted = self._resolved.get(key)
        if hinted is not None:
            return hinted
        best = self.closest(key, exclude_me=True)
        return best

    def learn(self, key: bytes, host: tuple) -> None:
        if host == self.me:
            return
        self._resolved[key] = host
        self._resolved.move_to_end(key)
        if len(self._resolved) > self._cache_size:
            self._resolved.popitem(last=False)

    def forget_host(self, host: tuple) -> int:
        """A host failed: drop every cached resolution that points to it. Returns how many."""
        stale = [k for k, h in self._resolved.items() if h == host]
        for k in stale:
            del self._resolved[k]
        return len(stale)

    def forget_key(self, key: bytes) -> None:
        self._resolved.pop(key, None)

    def cached(self) -> int:
        return len(self._resolved)
