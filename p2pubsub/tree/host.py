"""The tree nodes one DHT node is responsible for, and how they answer messages (thesis §3.2–§3.4).

A ``TreeHost`` is pure: ``handle(message, now)`` returns actions. It does not know which host is responsible
for which key; it answers for the tree nodes it holds and treats any other identifier addressed to it as a
node that does not exist (yet).
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Hashable
from dataclasses import dataclass

from .config import TreeConfig
from .custody import Custody, Replica
from .leafstore import coordinates
from .memory import expire_oldest
from .messages import (
    Action,
    AdoptNode,
    Dropped,
    EventDelivery,
    InsertSub,
    LeafUpdate,
    NodeQuery,
    ProbePub,
    ProbeSub,
    Replicate,
    ReplicaUpdate,
    SendHost,
    SendTree,
    SubInstalled,
    TransferSub,
    TreeMessage,
    Unsubscribe,
    Unsubscribed,
)
from .node import Partial, TreeNode
from .routing import LeafRoutingTable
from .space import Space
from .treeid import TreeId


@dataclass(slots=True)
class HostStats:
    probes_discarded: int = 0
    binary_search_jumps: int = 0
    parked: int = 0
    dropped: int = 0
    splits: int = 0
    matches: int = 0
    promoted: int = 0  # replicas that became nodes
    revived: int = 0  # nodes lost with every replica, brought back
    expired: int = 0  # pieces whose lease ran out


class TreeHost(Custody):
    def __init__(
        self, host: Hashable, capacity: int, config: TreeConfig, inline: bool = False, replicate: bool = False
    ) -> None:
        if capacity < 1:
            raise ValueError("leaf capacity must be positive")
        self.host = host
        self.capacity = capacity
        self.config = config
        self.nodes: dict[TreeId, TreeNode] = {}
        # handle messages to tree nodes this host holds at once instead of returning them as sends: a hop that
        # costs no message anyway (small networks hold many related nodes); the test harness can turn it off
        # to exercise every interleaving
        self.inline = inline
        self.replicate = replicate  # report every change of a tree node as a Replicate action (thesis §3.6)
        self.replicas: dict[TreeId, Replica] = {}
        self._reviving: dict[TreeId, dict[TreeId, bool | None]] = {}  # lost node -> its children: exist?
        self.stats = HostStats()
        self._spaces: dict[str, Space] = {}
        self._coords: tuple[str | None, dict[str, float]] = (None, {})
        self._partial: dict[tuple[TreeId, bool], Partial] = {}  # (node, adopting?) -> parts so far
        self._parked: dict[TreeId, list[tuple[float, TreeMessage]]] = defaultdict(list)  # (since, message)

    # --- entry point ---

    def handle(self, msg: TreeMessage, now: float) -> list[Action]:
        out = self._handle(msg, now)
        if not self.inline:
            return out
        nodes = self.nodes
        for a in out:
            if type(a) is SendTree and a.to in nodes:
                break
        else:
            return out
        done: list[Action] = []
        queue = deque(out)
        while queue:
            a = queue.popleft()
            if isinstance(a, SendTree) and a.to in self.nodes:
                queue.extend(self._handle(a.msg, now))
            else:
                done.append(a)
        return done

    def _handle(self, msg: TreeMessage, now: float) -> list[Action]:
        if isinstance(msg, ProbePub):
            return self._probe_pub(msg, now)
        if isinstance(msg, ProbeSub | InsertSub):
            return self._insert(msg, now)
        if isinstance(msg, TransferSub):
            return self._transfer(msg, now)
        if isinstance(msg, LeafUpdate):
            return self._leaf_update(msg, now)
        if isinstance(msg, Unsubscribe):
            return self._unsubscribe(msg, now)
        if isinstance(msg, AdoptNode):
            return self._adopt(msg, now)
        if isinstance(msg, NodeQuery):
            return self._node_query(msg)
        raise TypeError(f"not a tree message: {type(msg).__name__}")

    def tick(self, now: float) -> list[Action]:
        """Housekeeping: forget expired event memories, expire lapsed leases, bring back nodes lost with all
        their replicas, and drop (visibly) messages that waited too long for their node."""
        out: list[Action] = []
        for node in self.nodes.values():
            if node.seen:
                expire_oldest(node.seen, now)
            if node.leases:
                out.extend(self._expire(node, now))
        out.extend(self._revive_lost(now))
        for tid in list(self._parked):
            keep = []
            for since, msg in self._parked[tid]:
                if since + self.config.pending_ttl > now:
                    keep.append((since, msg))
                else:
                    self.stats.dropped += 1
                    out.append(Dropped(f"tree node {tid} never arrived", msg))
            if keep:
                self._parked[tid] = keep
            else:
                del self._parked[tid]
        return out

    # --- helpers ---

    def _space(self, space: Space) -> Space:
        """One Space object per tree, so its memoised areas are shared by all messages."""
        known = self._spaces.get(space.root)
        if known is None or known != space:
            self._spaces[space.root] = known = space
        return known

    def _node(self, msg: TreeMessage, known: bool, now: float) -> TreeNode | None:
        """The addressed node, or None after parking the message (``known``) for when the node arrives.

        The root always exists: its host creates it, empty, on first contact.
        """
        node = self.nodes.get(msg.target)
        if node is not None:
            return node
        if msg.target.is_root:
            node = self.nodes[msg.target] = TreeNode(msg.target, self._space(msg.space))
            return node
        if known:
            self.stats.parked += 1
            self._parked[msg.target].append((now, msg))
        return None

    def _jump(self, target: TreeId) -> TreeId:
        """Guessed too deep: binary search upward to the ancestor at half the level (Program 3.2 line 66), or
        straight to the deepest ancestor this host holds, if it holds one: any existing ancestor can answer
        (a leaf holds the whole area, an internal node routes down), and it costs no message."""
        self.stats.binary_search_jumps += 1
        half = target.level // 2
        for level in range(target.level - 1, half, -1):
            held = target.ancestor(level)
            if held in self.nodes:
                return held
        return target.ancestor(half)

    # --- subscriptions ---

    def _insert(self, msg: ProbeSub | InsertSub, now: float) -> list[Action]:
        known = isinstance(msg, InsertSub) and not msg.renew
        node = self._node(msg, known, now)
        entry = msg.entry
        if node is None:
            if known:
                return []
            up = self._jump(msg.target)
            return [SendTree(up, ProbeSub(up, msg.space, entry))]
        if node.store is None:
            child = TreeId(node.id.root, node.lrt.locate(node.space, entry.point))
            return [SendTree(child, InsertSub(child, node.space, entry))]
        out: list[Action] = []
        if node.store.add(entry) and self.replicate:  # a retransmission or renewal: acknowledge again
            out.append(Replicate(ReplicaUpdate(node.id, node.space, True, put=(entry,))))
        lease = self.config.lease
        if lease is not None:
            node.leases[entry.key] = now + lease
        out += self._maybe_split(node, now)
        leaf = node.id
        if not node.is_leaf:  # split just now: name the child that holds it
            leaf = TreeId(leaf.root, node.lrt.locate(node.space, entry.point))
        out.append(SendHost(entry.home, SubInstalled(entry.sub_id, entry.version, entry.piece, leaf)))
        return out

    def _unsubscribe(self, msg: Unsubscribe, now: float) -> list[Action]:
        node = self._node(msg, True, now)
        if node is None:
            return []
        if node.store is None:
            child = TreeId(node.id.root, node.lrt.locate(node.space, msg.point))
            return [SendTree(child, Unsubscribe(child, node.space, msg.key, msg.point, msg.home))]
        removed = node.store.remove(msg.key)
        node.leases.pop(msg.key, None)
        sub_id, version, piece = msg.key
        out: list[Action] = [SendHost(msg.home, Unsubscribed(sub_id, version, piece, removed is not None))]
        if removed is not None and self.replicate:
            out.append(Replicate(ReplicaUpdate(node.id, node.space, True, drop=(msg.key,))))
        return out

    def _maybe_split(self, node: TreeNode, now: float) -> list[Action]:
        """Leaf node split (Program 3.1): halve the area, hand each half's subscriptions to the new child, turn
        into an internal node with a routing table, and tell the ancestors. Never merged back (§3.2.2)."""
        store = node.store
        if store is None or len(store) <= self.capacity or node.id.level >= self.config.max_level:
            return []
        self.stats.splits += 1
        area = node.space.area(node.id.path)
        x_axis = node.id.level % 2 == 0
        side = area.x if x_axis else area.y
        halves = store.partition(x_axis, (side.lo + side.hi) / 2.0)
        # remaining lifetimes, not deadlines: hosts' clocks differ
        seen = tuple((k, t - now) for k, t in node.seen.items() if t > now and isinstance(k, str))
        node.store = None
        node.lrt = LeafRoutingTable(node.id.path)
        node.seen = {}
        node.leases = {}
        out: list[Action] = []
        if self.replicate:
            out.append(Replicate(ReplicaUpdate(node.id, node.space, False, reset=True)))
        chunk = self.config.transfer_chunk
        for bit, entries in zip("01", halves, strict=True):
            child = node.id.child(bit)
            parts = max(1, -(-len(entries) // chunk))
            for i in range(parts):
                part = tuple(entries[i * chunk : (i + 1) * chunk])
                out.append(SendTree(child, TransferSub(child, node.space, part, seen if i == 0 else (), i, parts)))
        if not node.id.is_root:
            parent = node.id.parent()
            out.append(SendTree(parent, LeafUpdate(parent, node.id.path)))
        return out

    def _collect(self, msg: TransferSub | AdoptNode, adopting: bool) -> list | None:
        """Gather the parts of a multi-part message; all of them, in order, once the last has arrived."""
        key = (msg.target, adopting)
        partial = self._partial.setdefault(key, Partial(msg.parts))
        partial.got.setdefault(msg.part, msg)  # a retransmitted part changes nothing
        if len(partial.got) < partial.parts:
            return None
        del self._partial[key]
        return [partial.got[i] for i in range(partial.parts)]

    def _transfer(self, msg: TransferSub, now: float) -> list[Action]:
        """A new child's subscriptions from its splitting parent. If the node is here already (a retransmission,
        or a node brought back after it was lost), the subscriptions are merged into it."""
        parts = self._collect(msg, adopting=False)
        if parts is None:
            return []
        node = TreeNode(msg.target, self._space(msg.space))
        for part in parts:
            node.seen.update((k, now + ttl) for k, ttl in part.seen)
            for entry in part.entries:
                node.store.add(entry)
        return self._install(node, now)

    def _flush(self, tid: TreeId, now: float) -> list[Action]:
        """Hand the messages that waited for ``tid`` to it, now that it exists."""
        out: list[Action] = []
        for _, waiting in self._parked.pop(tid, ()):
            out.extend(self.handle(waiting, now))
        return out

    def _leaf_update(self, msg: LeafUpdate, now: float) -> list[Action]:
        node = self._node(msg, True, now)
        if node is None:
            return []
        out: list[Action] = []
        if node.lrt is None:  # a split below a leaf: this node was lost and came back as a leaf by mistake
            out = self._make_internal(node, now)
        node.lrt.learn_split(msg.split)
        if node.id.is_root:
            return out
        parent = node.id.parent()
        return [*out, SendTree(parent, LeafUpdate(parent, msg.split))]

    # --- events ---

    def _probe_pub(self, msg: ProbePub, now: float) -> list[Action]:
        node = self._node(msg, msg.known, now)
        if node is None:
            if msg.known:
                return []
            up = self._jump(msg.target)
            return [SendTree(up, ProbePub(up, msg.space, msg.scope, msg.probe, msg.event))]
        event = msg.event
        expiry = now + self.config.seen_ttl
        if node.store is None:
            key = (event.event_id, msg.scope)
            if key in node.seen:
                self.stats.probes_discarded += 1
                return []
            node.seen[key] = expiry
            out: list[Action] = []
            for path, scope in node.lrt.region(node.space, msg.probe, msg.scope):
                to = TreeId(node.id.root, path)
                out.append(SendTree(to, ProbePub(to, node.space, scope, msg.probe, event, known=True)))
            return out
        # a leaf answers for its whole area at the first probe of an event and discards the rest (§3.4.1)
        if event.event_id in node.seen:
            self.stats.probes_discarded += 1
            return []
        node.seen[event.event_id] = expiry
        if self._coords[0] != event.event_id:  # an event visits several leaves here in a row
            self._coords = (event.event_id, coordinates(event.values))
        matched = node.store.match(event.values, self._coords[1], node.space.base, event.absent)
        if not matched:
            return []
        self.stats.matches += len(matched)
        by_home: dict[Hashable, list[tuple[str, int]]] = {}
        for entry in matched:
            ids = by_home.get(entry.home)
            if ids is None:
                ids = by_home[entry.home] = []
            ids.append((entry.sub_id, entry.version))
        return [SendHost(home, EventDelivery(event, tuple(ids))) for home, ids in by_home.items()]
