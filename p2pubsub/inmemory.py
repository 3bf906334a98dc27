"""A deterministic in-memory network of pub/sub cores: no sockets, no clock, no sleeps.

Hundreds of hosts run the real :class:`~p2pubsub.tree.PubSubCore`; a tree node lives on the host a simple owner
function picks (a hash of its identifier, standing in for the DHT); messages wait in one pool and a seeded RNG
picks which is delivered next, so every interleaving the network could produce is fair game. ``check`` verifies
the tree's invariants; :class:`Oracle` decides by brute force which deliveries were owed.

Used by the property tests, the benchmarks and ``p2pubsub demo``.
"""

from __future__ import annotations

import random
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from .model import Event, Schema, Subscription
from .tree import (
    TREE_MESSAGES,
    Action,
    AdoptNode,
    Deliver,
    Dropped,
    LeafUpdate,
    Message,
    PubSubCore,
    Ready,
    Removed,
    ReplicaUpdate,
    SendHost,
    SendTree,
    TransferSub,
    TreeConfig,
    TreeId,
)


class InvariantError(AssertionError):
    pass


def crc_owner(hosts: int) -> Callable[[TreeId], int]:
    return lambda tid: zlib.crc32(str(tid).encode()) % hosts


def rendezvous_owner(live: list[int]) -> Callable[[TreeId], int]:
    """Highest-random-weight owner among ``live`` hosts: a membership change moves only the keys it must,
    as a DHT's responsibility does when a node joins or leaves."""
    hosts = tuple(live)
    return lambda tid: max(hosts, key=lambda h: zlib.crc32(f"{tid}|{h}".encode()))


@dataclass(slots=True)
class _InFlight:
    dst: int
    msg: Message
    src: int


@dataclass(slots=True)
class Record:
    """What the network has done, for oracles and benchmarks."""

    messages: Counter = field(default_factory=Counter)  # by type, every message
    remote: Counter = field(default_factory=Counter)  # by type, between two different hosts
    deliveries: list[tuple[int, str, str]] = field(default_factory=list)  # (host, sub_id, event_id)
    ready: dict[tuple[str, int], int] = field(default_factory=dict)  # (sub_id, version) -> step it became ready
    removed: dict[str, int] = field(default_factory=dict)
    dropped: list[Dropped] = field(default_factory=list)


class InMemoryNetwork:
    def __init__(
        self,
        hosts: int,
        config: TreeConfig | None = None,
        seed: int = 0,
        capacity: tuple[int, int] = (10, 30),
        reorder: bool = True,
        owner: Callable[[TreeId], int] | None = None,
        capacities: list[int] | tuple[int, ...] | None = None,
        inline: bool = False,
        replicate: bool = False,
    ) -> None:
        self.config = config or TreeConfig()
        self.rng = random.Random(seed)
        caps = list(capacities) if capacities is not None else [self.rng.randint(*capacity) for _ in range(hosts)]
        self.cores = [
            PubSubCore(i, caps[i], self.config, random.Random(self.rng.getrandbits(64)), inline, replicate)
            for i in range(hosts)
        ]
        self.owner = owner or crc_owner(hosts)
        self.reorder = reorder
        self.check_each_step = False  # check the receiving host's invariants after every step
        self._strict_moves = True  # a piece in transfer is stored nowhere (crashes: a stale copy may split again)
        self.pool: list[_InFlight] = []
        self.record = Record()
        self.step_no = 0
        self.now = 0.0

    # --- client commands ---

    def subscribe(self, host: int, schema: Schema, sub: Subscription) -> str:
        sub_id, actions = self.cores[host].subscribe(schema, sub, self.now)
        self._apply(host, actions)
        return sub_id

    def update(self, host: int, sub_id: str, sub: Subscription) -> None:
        self._apply(host, self.cores[host].update(sub_id, sub, self.now))

    def unsubscribe(self, host: int, sub_id: str) -> None:
        self._apply(host, self.cores[host].unsubscribe(sub_id, self.now))

    def publish(self, host: int, schema: Schema, event: Event) -> str:
        pub, actions = self.cores[host].publish(schema, event, self.now)
        self._apply(host, actions)
        return pub.event_id

    def reassign(self, owner: Callable[[TreeId], int]) -> int:
        """Change which host is responsible for which tree node, as joins and leaves do in a DHT. Every host
        releases what it no longer owns; the new owners adopt the nodes before they handle anything else (a
        joining node is not ready until its state has arrived, thesis §3.6). Returns the nodes moved."""
        self.owner = owner
        moved = []
        for core in self.cores:
            actions = core.tree.release(lambda t, h=core.host: owner(t) != h, self.now)
            moved.extend((core.host, a) for a in actions)
        adopted = 0
        for host, a in moved:
            if isinstance(a.msg, AdoptNode):
                self.record.messages["AdoptNode"] += 1
                adopted += a.msg.part == 0
                self._apply(owner(a.to), self.cores[owner(a.to)].handle(a.msg, self.now))
            else:
                self._apply(host, [a])
        return adopted

    # --- running ---

    def step(self) -> bool:
        """Deliver one in-flight message (a random one when reordering); False when none is left."""
        if not self.pool:
            return False
        item = self._pick()
        self.step_no += 1
        self.now += 0.001
        self._deliver(item)
        return True

    def _pick(self) -> _InFlight:
        if not self.reorder:
            return self.pool.pop(0)
        i = self.rng.randrange(len(self.pool))
        self.pool[i], self.pool[-1] = self.pool[-1], self.pool[i]
        return self.pool.pop()

    def _deliver(self, item: _InFlight) -> None:
        target = item.msg.target if isinstance(item.msg, TREE_MESSAGES) else None
        if target is not None and self.owner(target) != item.dst:
            # responsibility moved while the message was on its way: the DHT routes it on
            self._send(item.dst, self.owner(target), item.msg)
            return
        self._apply(item.dst, self.cores[item.dst].handle(item.msg, self.now))
        if self.check_each_step:
            self.check_host(item.dst)

    def settle(self, max_steps: int = 1_000_000, check_every: int = 0, strict: bool = True) -> int:
        """Run until no message is in flight; check invariants every ``check_every`` steps (0: never) and at
        the end (``strict``; off while a network recovers from nodes lost with every copy, which may leave
        routing tables pointing at nodes that come back only when a message needs them). Raises if the network
        does not settle within ``max_steps`` (a livelock is a bug)."""
        steps = self._drain(max_steps, check_every)
        if strict:
            self.check(quiescent=True)
        return steps

    def _drain(self, max_steps: int, check_every: int) -> int:
        steps = 0
        while self.step():
            steps += 1
            if steps > max_steps:
                raise InvariantError(f"not settled after {max_steps} steps")
            if check_every and steps % check_every == 0:
                self.check(quiescent=False)
        return steps

    def _apply(self, host: int, actions: list[Action]) -> None:
        for a in actions:
            if isinstance(a, SendTree):
                self._send(host, self.owner(a.to), a.msg)
            elif isinstance(a, SendHost):
                self._send(host, a.to, a.msg)
            elif isinstance(a, Deliver):
                self.record.deliveries.extend((host, sub_id, a.event.event_id) for sub_id in a.sub_ids)
            elif isinstance(a, Ready):
                self.record.ready[(a.sub_id, a.version)] = self.step_no
            elif isinstance(a, Removed):
                self.record.removed[a.sub_id] = self.step_no
            elif isinstance(a, Dropped):
                self.record.dropped.append(a)

    def _send(self, src: int, dst: int, msg: Message) -> None:
        kind = type(msg).__name__
        self.record.messages[kind] += 1
        if src != dst:
            self.record.remote[kind] += 1
        self.pool.append(_InFlight(dst, msg, src))

    # --- invariants (thesis §3.2) ---

    def check(self, quiescent: bool) -> None:
        """The distributed 2d-tree's invariants, from a global view no host has.

        Always: every host's own invariants (:meth:`check_host`); a node's parent exists and is internal; no
        subscription piece is stored twice. When quiescent, also: every routing-table entry and every child
        exists, nothing waits, nothing is half transferred.
        """
        in_transfer = {m.msg.target for m in self.pool if isinstance(m.msg, TransferSub)}
        # a replica promoted before its previous host's news arrived: the news (it split) is on its way
        splitting = {m.msg.target for m in self.pool if isinstance(m.msg, ReplicaUpdate) and not m.msg.leaf}
        moving = {e.key for m in self.pool if isinstance(m.msg, TransferSub) for e in m.msg.entries}
        nodes: dict[TreeId, object] = {}
        for core in self.cores:
            self.check_host(core.host)
            nodes.update(core.tree.nodes)
            in_transfer.update(t for t, _ in core.tree._partial)
            if quiescent and (core.tree._parked or core.tree._partial):
                raise InvariantError(f"host {core.host} still has parked/partial messages at quiescence")
        in_transfer |= self._coming()
        stored: set = set()
        for tid, node in nodes.items():
            if not tid.is_root:
                parent = nodes.get(tid.parent())
                late = not quiescent and tid.parent() in splitting
                coming = not quiescent and tid.parent() in in_transfer
                if (parent is None and not coming) or (parent is not None and parent.is_leaf and not late):
                    raise InvariantError(f"{tid} exists but its parent is missing or a leaf")
            if node.is_leaf:
                if tid in splitting and not quiescent:
                    continue  # its copies are on their way down: the news that it split will remove these
                keys = {e.key for e in node.store}
                if keys & stored:
                    raise InvariantError(f"{sorted(keys & stored)[:3]} stored twice")
                stored |= keys
                continue
            for path in node.lrt.entries:
                entry = TreeId(tid.root, path)
                if entry not in nodes and (quiescent or entry not in in_transfer):
                    raise InvariantError(f"routing table of {tid} points to missing {entry}")
            for bit in "01":
                child = tid.child(bit)
                if child not in nodes and (quiescent or child not in in_transfer):
                    raise InvariantError(f"internal {tid} has no child {child}")
        if stored & moving and self._strict_moves:
            raise InvariantError(f"pieces both stored and in transfer: {sorted(stored & moving)[:3]}")

    def _coming(self) -> set[TreeId]:
        """Tree nodes that do not exist yet but are on their way (besides transfers)."""
        return set()

    def check_host(self, host: int) -> None:
        """What one host can be held to: it holds only nodes it owns; a leaf's points lie in its area and do not
        exceed the host's capacity (unless at max level); a routing table partitions its node's subtree."""
        tree = self.cores[host].tree
        for tid, node in tree.nodes.items():
            if self.owner(tid) != host:
                raise InvariantError(f"{tid} held by host {host}, owner is {self.owner(tid)}")
            if not node.is_leaf:
                self._check_lrt(tid, node.lrt)
                continue
            if len(node.store) > tree.capacity and tid.level < self.config.max_level:
                raise InvariantError(f"leaf {tid} holds {len(node.store)} > capacity {tree.capacity}")
            area = node.space.area(tid.path)
            for e in node.store:
                if not area.contains(e.point):
                    raise InvariantError(f"{e.key} at {e.point} outside leaf {tid} {area}")

    @staticmethod
    def _check_lrt(tid: TreeId, lrt) -> None:
        """The known-internal trie is connected, full (both children of each inner node are inner or entries)
        and disjoint from the entries: then the entries are its frontier, a partition of the node's area."""
        if tid.path not in lrt.inner or lrt.entries & lrt.inner:
            raise InvariantError(f"routing table of {tid} is not a trie rooted at its node")
        for path in lrt.inner:
            if path != tid.path and path[:-1] not in lrt.inner:
                raise InvariantError(f"routing table of {tid}: {path} hangs off the trie")
            for bit in "01":
                if path + bit not in lrt.inner and path + bit not in lrt.entries:
                    raise InvariantError(f"routing table of {tid} does not cover {path + bit}")
        for path in lrt.entries:
            if path[:-1] not in lrt.inner:
                raise InvariantError(f"routing table of {tid} lists {path}, outside its trie")

    # --- views ---

    def tree_nodes(self) -> dict[TreeId, object]:
        return {tid: node for core in self.cores for tid, node in core.tree.nodes.items()}

    def leaf_updates_in_flight(self) -> int:
        return sum(isinstance(m.msg, LeafUpdate) for m in self.pool)


@dataclass(slots=True)
class _SubLife:
    host: int
    schema: Schema
    versions: list[tuple[Subscription, int]]  # (filter, step issued); an update appends
    unsubscribed_at: int | None = None


class Oracle:
    """Brute force: which (subscription, event) pairs were owed, which were allowed, and what was delivered.

    An event published at step P is owed to a subscription whose newest version issued by P was ready by P
    and matches it, when no newer version was issued and no unsubscribe was made before the network settled
    after the event. It is allowed for a subscription not yet unsubscribed at P if any version issued before
    settling matches. Nothing else may be delivered, and nothing twice, and only at the subscriber's home.
    """

    def __init__(self, net: InMemoryNetwork) -> None:
        self.net = net
        self.subs: dict[str, _SubLife] = {}
        self.events: dict[str, list] = {}  # event_id -> [schema, event, published step, settled step]

    def subscribe(self, host: int, schema: Schema, sub: Subscription) -> str:
        sub_id = self.net.subscribe(host, schema, sub)
        self.subs[sub_id] = _SubLife(host, schema, [(sub, self.net.step_no)])
        return sub_id

    def update(self, sub_id: str, sub: Subscription) -> None:
        life = self.subs[sub_id]
        if life.unsubscribed_at is None:
            life.versions.append((sub, self.net.step_no))
            self.net.update(life.host, sub_id, sub)

    def unsubscribe(self, sub_id: str) -> None:
        life = self.subs[sub_id]
        if life.unsubscribed_at is None:
            life.unsubscribed_at = self.net.step_no
            self.net.unsubscribe(life.host, sub_id)

    def publish(self, host: int, schema: Schema, event: Event) -> str:
        event_id = self.net.publish(host, schema, event)
        self.events[event_id] = [schema, event, self.net.step_no, None]
        return event_id

    def settle(self, **kw) -> int:
        steps = self.net.settle(**kw)
        for record in self.events.values():
            if record[3] is None:
                record[3] = self.net.step_no
        return steps

    def _owed_allowed(self, sub_id: str, life: _SubLife, event: Event, absent, published: int, settled: int):
        issued = [(n, sub, at) for n, (sub, at) in enumerate(life.versions) if at <= settled]
        gone = life.unsubscribed_at
        allowed = (gone is None or gone > published) and any(s.matches(event.values, absent) for _, s, _ in issued)
        current = [(n, s, at) for n, s, at in issued if at <= published]
        if not current:
            return False, allowed
        n, sub, _ = current[-1]
        ready = self.net.record.ready.get((sub_id, n))
        owed = (
            ready is not None
            and ready <= published
            and sub.matches(event.values, absent)
            and len(issued) == n + 1
            and (gone is None or gone >= settled)
        )
        return owed, allowed

    def verdict(self) -> dict[str, list]:
        delivered = Counter((sub_id, eid) for _, sub_id, eid in self.net.record.deliveries)
        duplicate = [(s, e, n) for (s, e), n in delivered.items() if n > 1]
        misrouted = [(h, s) for h, s, _ in self.net.record.deliveries if self.subs[s].host != h]
        missing, false_positive = [], []
        for eid, (schema, event, published, settled) in self.events.items():
            for sub_id, life in self.subs.items():
                got = (sub_id, eid) in delivered
                if life.schema.name != schema.name:
                    if got:
                        false_positive.append((sub_id, eid))
                    continue
                owed, allowed = self._owed_allowed(sub_id, life, event, schema.absent, published, settled)
                if owed and not got:
                    missing.append((sub_id, eid))
                elif got and not allowed:
                    false_positive.append((sub_id, eid))
        return {"missing": missing, "false_positive": false_positive, "duplicate": duplicate, "misrouted": misrouted}
