"""Who keeps a tree node, and how it survives its host (thesis §3.6): hand-offs between hosts, replicas on the
next closest hosts, promotion of a replica, leases on subscriptions, and bringing back a node lost with all its
replicas.

A mixin of :class:`~p2pubsub.tree.host.TreeHost` (it uses the host's nodes, config and helpers); pure like the
rest of the core. Which hosts hold replicas is the runtime's business: the core only reports changes as
``Replicate`` actions and applies the ``ReplicaUpdate`` messages it receives.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .messages import (
    Action,
    AdoptNode,
    InsertSub,
    LeafUpdate,
    NodeInfo,
    NodeQuery,
    Replicate,
    ReplicaUpdate,
    SendHost,
    SendTree,
)
from .node import TreeNode
from .pieces import SubEntry
from .routing import LeafRoutingTable
from .space import Space
from .treeid import TreeId

Key = tuple[str, int, int]


@dataclass(slots=True)
class Replica:
    """A copy of another host's tree node: whether it is a leaf, and a leaf's subscriptions."""

    space: Space
    leaf: bool
    entries: dict[Key, SubEntry] = field(default_factory=dict)


class Custody:
    # --- hand-offs (DHT responsibility moved: joins, graceful leaves) ---

    def held(self) -> list[TreeId]:
        """Every tree node this host answers for: held, half-received in a transfer, or with messages waiting
        for it (what `release` can give up)."""
        return [*self.nodes, *(key[0] for key in self._partial), *self._parked]

    def release(self, select: Callable[[TreeId], bool], now: float) -> list[Action]:
        """Give up every tree node (and half-received transfer, and waiting message) that ``select`` picks: the
        returned actions send them on, addressed to the tree node, i.e. to its now responsible host."""
        out: list[Action] = []
        for tid in [t for t in self.nodes if select(t)]:
            out.extend(SendTree(tid, m) for m in self._export(self.nodes.pop(tid), now))
        for key in [k for k in self._partial if select(k[0])]:
            out.extend(SendTree(key[0], m) for m in self._partial.pop(key).got.values())
        for tid in [t for t in self._parked if select(t)]:
            out.extend(SendTree(tid, m) for _, m in self._parked.pop(tid))
        return out

    def _export(self, node: TreeNode, now: float) -> list[AdoptNode]:
        seen = tuple((k, t - now) for k, t in node.seen.items() if t > now and isinstance(k, str))
        if node.store is None:
            inner = sorted(node.lrt.inner)
            chunk = self.config.transfer_chunk * 16
            pieces = [tuple(inner[i : i + chunk]) for i in range(0, len(inner), chunk)]
            return [
                AdoptNode(node.id, node.space, i, len(pieces), False, inner=p, seen=seen if i == 0 else ())
                for i, p in enumerate(pieces)
            ]
        entries = list(node.store)
        chunk = self.config.transfer_chunk
        pieces = [tuple(entries[i : i + chunk]) for i in range(0, len(entries), chunk)] or [()]
        return [
            AdoptNode(node.id, node.space, i, len(pieces), True, entries=p, seen=seen if i == 0 else ())
            for i, p in enumerate(pieces)
        ]

    def _adopt(self, msg: AdoptNode, now: float) -> list[Action]:
        parts = self._collect(msg, adopting=True)
        if parts is None:
            return []
        incoming = TreeNode(msg.target, self._space(msg.space))
        if not msg.leaf:
            incoming.store, incoming.lrt = None, LeafRoutingTable(msg.target.path)
        for part in parts:
            incoming.seen.update((k, now + ttl) for k, ttl in part.seen)
            for entry in part.entries:
                incoming.store.add(entry)
            for path in part.inner:
                if path != msg.target.path:
                    incoming.lrt.learn_split(path)
        return self._install(incoming, now)

    def _install(self, incoming: TreeNode, now: float) -> list[Action]:
        """Make ``incoming`` this host's node. If the host has one already (two hosts both thought themselves
        responsible, or a lost node came back before its state did), merge: an internal node wins over a leaf
        (nodes only split, never merge), and the subscriptions of a leaf that lost go down the winner's
        routing table again."""
        tid = incoming.id
        existing = self.nodes.get(tid)
        out: list[Action] = []
        self.replicas.pop(tid, None)
        if existing is None:
            self.nodes[tid] = node = incoming
            lease = self.config.lease
            if lease is not None and node.is_leaf:
                node.leases = {e.key: now + lease for e in node.store}
        else:
            node = existing
            node.seen.update(incoming.seen)
            if node.is_leaf and not incoming.is_leaf:
                out += self._make_internal(node, now)
            if node.is_leaf:
                out += self._take(node, list(incoming.store), now)
            else:
                if not incoming.is_leaf:
                    for path in incoming.lrt.inner:
                        node.lrt.learn_split(path)
                out += self._take(node, list(incoming.store) if incoming.is_leaf else [], now)
        if self.replicate:
            out += [Replicate(u) for u in self.snapshot(tid)]
        return out + self._maybe_split(node, now) + self._flush(tid, now)

    def _take(self, node: TreeNode, entries: list[SubEntry], now: float) -> list[Action]:
        """Subscriptions arriving at ``node``: stored if it is a leaf, sent down its routing table if not."""
        out: list[Action] = []
        lease = self.config.lease
        for entry in entries:
            if node.is_leaf:
                node.store.add(entry)
                if lease is not None:
                    node.leases[entry.key] = now + lease
            else:
                child = TreeId(node.id.root, node.lrt.locate(node.space, entry.point))
                out.append(SendTree(child, InsertSub(child, node.space, entry)))
        return out

    def _make_internal(self, node: TreeNode, now: float) -> list[Action]:
        """A leaf that must be an internal node (its children exist): route its subscriptions to them."""
        entries = list(node.store)
        node.store, node.lrt, node.leases = None, LeafRoutingTable(node.id.path), {}
        out = self._take(node, entries, now)
        if self.replicate:
            out.append(Replicate(ReplicaUpdate(node.id, node.space, False, reset=True)))
        return out

    # --- replicas (thesis §3.6) ---

    def snapshot(self, tid: TreeId) -> list[ReplicaUpdate]:
        """The whole state of a node this host holds, as replica updates (the first one resets)."""
        node = self.nodes[tid]
        if not node.is_leaf:
            return [ReplicaUpdate(tid, node.space, False, reset=True)]
        entries = list(node.store)
        chunk = self.config.transfer_chunk
        parts = [tuple(entries[i : i + chunk]) for i in range(0, len(entries), chunk)] or [()]
        return [ReplicaUpdate(tid, node.space, True, put=p, reset=i == 0) for i, p in enumerate(parts)]

    def apply_replica(self, update: ReplicaUpdate, now: float) -> list[Action]:
        node = self.nodes.get(update.target)
        if node is not None:  # an update from the node's previous host that we took over before it arrived
            return self._late_update(node, update, now)
        replica = self.replicas.get(update.target)
        if update.reset or replica is None:
            replica = self.replicas[update.target] = Replica(self._space(update.space), update.leaf)
        replica.leaf = update.leaf
        if not update.leaf:
            replica.entries.clear()
        for e in update.put:
            replica.entries[e.key] = e
        for key in update.drop:
            replica.entries.pop(key, None)
        return []

    def _late_update(self, node: TreeNode, update: ReplicaUpdate, now: float) -> list[Action]:
        """What the previous host did is true: it split (so must we), it stored or removed subscriptions."""
        out: list[Action] = []
        if node.is_leaf and not update.leaf:
            out += self._make_internal(node, now)
        out += self._take(node, list(update.put), now)
        if node.is_leaf:
            for key in update.drop:
                node.store.remove(key)
                node.leases.pop(key, None)
        if self.replicate and (update.put or update.drop):
            out.append(Replicate(ReplicaUpdate(node.id, node.space, node.is_leaf, update.put, update.drop)))
        return out + self._maybe_split(node, now)

    def drop_replicas(self, select: Callable[[TreeId], bool]) -> int:
        """Forget the replicas ``select`` picks (this host is no longer among their closest hosts)."""
        gone = [t for t in self.replicas if select(t)]
        for t in gone:
            del self.replicas[t]
        return len(gone)

    def promote(self, tid: TreeId, now: float) -> list[Action]:
        """The node's host is gone and this host is now responsible: its replica becomes the node. An internal
        node starts with its two children as its routing table: always right, refined by later LeafUpdates
        (§3.6: probes are forwarded to the children until the table is rebuilt)."""
        replica = self.replicas.pop(tid)
        node = TreeNode(tid, replica.space)
        out: list[Action] = []
        if replica.leaf:
            for e in replica.entries.values():
                node.store.add(e)
            # the news that it split may have died with its host: ask whether its children exist
            out = self._ask_children(tid, replica.space)
        else:
            node.store, node.lrt = None, LeafRoutingTable(tid.path)
        self.stats.promoted += 1
        return out + self._install(node, now)

    def _ask_children(self, tid: TreeId, space: Space) -> list[Action]:
        if tid.level >= self.config.max_level:
            return []
        self._reviving[tid] = {tid.child("0"): None, tid.child("1"): None}
        return [SendTree(c, NodeQuery(c, space, tid, self.host)) for c in self._reviving[tid]]

    # --- leases ---

    def _expire(self, node: TreeNode, now: float) -> list[Action]:
        lapsed = [k for k, t in node.leases.items() if t <= now]
        for k in lapsed:
            del node.leases[k]
            node.store.remove(k)
        self.stats.expired += len(lapsed)
        if lapsed and self.replicate:
            return [Replicate(ReplicaUpdate(node.id, node.space, True, drop=tuple(lapsed)))]
        return []

    # --- nodes lost with every replica ---

    def _revive_lost(self, now: float) -> list[Action]:
        """A node that messages have waited for since ``lost_after``, of which this host (responsible for it)
        has neither state nor replica, was lost. Ask whether its children exist, to bring it back right."""
        out: list[Action] = []
        for tid, waiting in list(self._parked.items()):
            if tid in self.nodes or tid in self.replicas or any(k[0] == tid for k in self._partial):
                continue
            if not waiting or now - waiting[0][0] < self.config.lost_after:
                continue
            asked = self._reviving.get(tid)
            if asked is not None and None not in asked.values():
                continue
            space = self._space_of(tid, waiting)
            if space is None:
                continue
            if any(isinstance(m, LeafUpdate) for _, m in waiting):  # a split below it: it was internal
                node = TreeNode(tid, space, None, LeafRoutingTable(tid.path))
                self.stats.revived += 1
                out += self._install(node, now)
            else:
                out += self._ask_children(tid, space)
        return out

    def _space_of(self, tid: TreeId, waiting: list) -> Space | None:
        for _, m in waiting:
            space = getattr(m, "space", None)
            if space is not None:
                return self._space(space)
        return self._spaces.get(tid.root)

    def _node_query(self, msg: NodeQuery) -> list[Action]:
        tid = msg.target
        exists = (
            tid in self.nodes or tid in self.replicas or tid in self._parked or any(k[0] == tid for k in self._partial)
        )
        return [SendHost(msg.reply_to, NodeInfo(tid, msg.about, exists))]

    def on_node_info(self, msg: NodeInfo, now: float) -> list[Action]:
        answers = self._reviving.get(msg.about)
        if answers is None or msg.target not in answers:
            return []
        answers[msg.target] = msg.exists
        if None in answers.values():
            return []
        del self._reviving[msg.about]
        node = self.nodes.get(msg.about)
        if node is not None:  # a promoted leaf replica: if its children exist, it had split
            return self._make_internal(node, now) if node.is_leaf and any(answers.values()) else []
        waiting = self._parked.get(msg.about)
        space = self._space_of(msg.about, waiting) if waiting else None
        if space is None:
            return []
        node = TreeNode(msg.about, space)
        if any(answers.values()):
            node.store, node.lrt = None, LeafRoutingTable(msg.about.path)
        self.stats.revived += 1
        return self._install(node, now)
