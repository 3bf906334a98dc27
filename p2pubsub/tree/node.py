"""A node of the distributed 2d-tree as one host holds it, and a multi-part message being received."""

from __future__ import annotations

from dataclasses import dataclass, field

from .leafstore import LeafStore
from .messages import AdoptNode, TransferSub
from .routing import LeafRoutingTable
from .space import Space
from .treeid import TreeId


@dataclass(slots=True)
class TreeNode:
    """A node of the 2d-tree: a leaf with a store, or an internal node with a LeafRoutingTable."""

    id: TreeId
    space: Space
    store: LeafStore | None = field(default_factory=LeafStore)
    lrt: LeafRoutingTable | None = None
    # leaf: events matched here in full (later probes of the same event are discarded, §3.4.1)
    # internal: (event, scope) pairs already forwarded (retransmissions are discarded)
    seen: dict[object, float] = field(default_factory=dict)
    leases: dict[tuple[str, int, int], float] = field(default_factory=dict)  # piece -> expiry (leases on)

    @property
    def is_leaf(self) -> bool:
        return self.store is not None


@dataclass(slots=True)
class Partial:
    """The parts of a TransferSub or AdoptNode received so far: a node exists only once all have arrived."""

    parts: int
    got: dict[int, TransferSub | AdoptNode] = field(default_factory=dict)


