"""LeafNodeRoutingTable (thesis §3.2.2, Table 3.1, Program 3.1).

Every internal tree node keeps soft links to leaves of its subtree: identifier suffixes only, no addresses.
It is updated reactively by LeafUpdate messages and may be stale, which costs speed, never correctness: the
entries always partition the node's area into nodes that exist (no merging, §3.2.2), so a stale entry is an
internal node that forwards further.
"""

from __future__ import annotations

from .space import Space, Target


class LeafRoutingTable:
    """``entries``: the suffixes this node routes to (believed leaves); ``inner``: known internal nodes of the
    subtree, the node itself included. Together they form a binary trie whose frontier is ``entries``."""

    __slots__ = ("depth", "entries", "inner", "own")

    def __init__(self, own: str) -> None:
        self.own = own
        self.entries: set[str] = {own + "0", own + "1"}
        self.inner: set[str] = {own}
        self.depth = len(own) + 1

    def __len__(self) -> int:
        return len(self.entries)

    def learn_split(self, split: str) -> bool:
        """Node ``split`` of this subtree has split: replace the entry covering it by the finer partition.

        Every node between that entry and ``split`` exists and is internal (a node exists only once its
        parent split), so the refined entries are real nodes even if their own updates were lost or late.
        """
        if len(split) <= len(self.own) or not split.startswith(self.own) or split in self.inner:
            return False
        start = self.covering(split)
        if start is None:
            return False
        self.entries.discard(start)
        for level in range(len(start), len(split) + 1):
            q = split[:level]
            self.inner.add(q)
            if level < len(split):
                self.entries.add(q + ("1" if split[level] == "0" else "0"))
        self.entries.add(split + "0")
        self.entries.add(split + "1")
        self.depth = max(self.depth, len(split) + 1)
        return True

    def covering(self, path: str) -> str | None:
        """The entry that is ``path`` or one of its ancestors, if any."""
        for level in range(len(self.own) + 1, len(path) + 1):
            q = path[:level]
            if q in self.entries:
                return q
        return None

    def locate(self, space: Space, point: tuple[float, float]) -> str:
        """The entry whose area holds ``point`` (subscription install, Program 3.2 line 59)."""
        entry = self.covering(space.path_of(point, self.depth))
        assert entry is not None, "entries partition the node's area"
        return entry

    def region(self, space: Space, target: Target, scope: str) -> list[tuple[str, str]]:
        """Entries that may hold points of ``target`` within ``scope`` (Program 3.3 line 44-50), each with the
        scope its probe carries: the entry itself, or ``scope`` when the entry covers a deeper scope."""
        start = scope if len(scope) > len(self.own) else self.own
        entry = self.covering(start)
        if entry is not None:
            return [(entry, start)] if target.hits(space.area(start)) else []
        out = []
        stack = [start]
        while stack:
            q = stack.pop()
            if not target.hits(space.area(q)):
                continue
            if q in self.entries:
                out.append((q, q))
            else:
                stack.append(q + "1")
                stack.append(q + "0")
        return out
