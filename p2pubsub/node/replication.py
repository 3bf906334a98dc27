"""Copies of tree nodes and schemas on the ``r`` DHT nodes closest to their keys (thesis §3.6), as one node
keeps them: it sends its own nodes' changes to their replica holders, brings new holders up to date, forgets
copies it should no longer hold, and takes over a copy once it is the node responsible for its key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..tree import ReplicaUpdate, TreeId
from .keys import schema_key, tree_key
from .messages import SchemaHandoff

if TYPE_CHECKING:
    from .runtime import Node


class Replication:
    def __init__(self, node: Node, replicas: int) -> None:
        self.node = node
        self.r = replicas
        self.sets: dict[TreeId, frozenset] = {}  # what each of our nodes' replica holders were last sent
        self.schema_sets: dict[str, frozenset] = {}
        self._settled: tuple | None = None  # what the last reconcile left behind

    def _state(self) -> tuple:
        """Everything ``reconcile`` depends on: the routing table's version and the keys we hold."""
        node, tree = self.node, self.node.core.tree
        return node.hood.version, node.hood.leaving, tuple(tree.nodes), tuple(tree.replicas), tuple(node.schemas.docs)

    @property
    def on(self) -> bool:
        return self.r > 1

    def holders(self, key: bytes) -> frozenset:
        """The other ``r - 1`` nodes closest to ``key``."""
        me = self.node.host
        return frozenset(h for h in self.node.hood.nearest(key, self.r) if h != me)

    def recheck(self) -> None:
        """Reconcile again at the next tick even if nothing `_state` covers has changed."""
        self._settled = None

    def send(self, update: ReplicaUpdate) -> None:
        holders = self.holders(tree_key(update.target))
        self.sets[update.target] = holders
        for h in holders:
            self.node._send(h, update)

    def send_schema(self, name: str, doc: str) -> None:
        holders = self.holders(schema_key(name))
        self.schema_sets[name] = holders
        for h in holders:
            self.node._send(h, SchemaHandoff(name, doc))

    def reconcile(self, now: float) -> None:
        """On every tick: new holders get a full copy; copies we should no longer keep are dropped; copies of
        keys we are now responsible for become ours (their previous node is gone)."""
        if not self.on:
            return
        # a pure function of the state below (changes to a node's content travel as updates, not here): a tick
        # that finds it unchanged has nothing to do, which spares the nearest-node look-ups of every key
        if self._state() == self._settled:
            return
        node, tree = self.node, self.node.core.tree
        for tid in [t for t in tree.replicas if t not in tree.nodes and node.hood.responsible(tree_key(t))]:
            key = tree_key(tid)
            if node.confirmed(key):
                node._execute(tree.promote(tid, now))
            else:  # as for any key we hold no node of (Node._unconfirmed): a lookup first, then `recheck`
                node._confirm_key(key)
        for tid in list(tree.nodes):
            want = self.holders(tree_key(tid))
            new = want - self.sets.get(tid, frozenset())
            if new:
                for update in tree.snapshot(tid):
                    for h in new:
                        node._send(h, update)
            self.sets[tid] = want
        self.sets = {t: s for t, s in self.sets.items() if t in tree.nodes}
        me = node.host
        tree.drop_replicas(lambda t: me not in node.hood.nearest(tree_key(t), self.r))
        for name, doc in list(node.schemas.docs.items()):
            key = schema_key(name)
            if node.hood.responsible(key):
                want = self.holders(key)
                for h in want - self.schema_sets.get(name, frozenset()):
                    node._send(h, SchemaHandoff(name, doc))
                self.schema_sets[name] = want
            elif me not in node.hood.nearest(key, self.r):
                del node.schemas.docs[name]
                self.schema_sets.pop(name, None)
        self._settled = self._state()
