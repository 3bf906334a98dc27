"""Tree node identifiers (thesis §3.2.1).

The root's identifier is the schema-qualified attribute name; a child appends ``0`` or ``1``. We write a ``/``
between the two (``"stocks.price/0110"``) where the thesis writes them together, so that an attribute whose
name ends in a digit cannot collide with a child of another attribute's root. The identifier string is what
the node runtime hashes to a DHT key.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TreeId:
    root: str
    path: str = ""

    @property
    def level(self) -> int:
        return len(self.path)

    @property
    def is_root(self) -> bool:
        return not self.path

    def parent(self) -> TreeId:
        if not self.path:
            raise ValueError(f"{self} is a root")
        return TreeId(self.root, self.path[:-1])

    def child(self, bit: str) -> TreeId:
        return TreeId(self.root, self.path + bit)

    def ancestor(self, level: int) -> TreeId:
        return TreeId(self.root, self.path[:level])

    def is_ancestor_of(self, other: TreeId) -> bool:
        """True when ``other`` lies in this node's subtree (a node is its own ancestor)."""
        return self.root == other.root and other.path.startswith(self.path)

    def __str__(self) -> str:
        return f"{self.root}/{self.path}"

    @classmethod
    def parse(cls, text: str) -> TreeId:
        root, sep, path = text.rpartition("/")
        if not sep or not root or path.strip("01"):
            raise ValueError(f"not a tree identifier: {text!r}")
        return cls(root, path)


def root_name(schema: str, attribute: str) -> str:
    return f"{schema}.{attribute}"
