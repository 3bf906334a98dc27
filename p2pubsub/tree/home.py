"""The subscriber's and publisher's side of the tree: a node's own subscriptions and events (thesis §3.3,
§3.3.1, §3.4.1, §3.4.3).

A home installs each subscription (every piece, through RndLeafProbe) and reports it ready once every piece is
acknowledged; it publishes an event by RndRegionProbe in every attribute tree the matching semantics require;
and it receives notifications, removing duplicates by (event, subscription) before the application sees them.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from ..model import Absent, Event, Schema, Subscription
from .config import TreeConfig
from .leafstore import coordinate
from .memory import expire_oldest_pairs
from .messages import (
    Action,
    Deliver,
    EventDelivery,
    InsertSub,
    ProbePub,
    ProbeSub,
    PubEvent,
    Ready,
    Removed,
    SendTree,
    SubInstalled,
    Unsubscribe,
    Unsubscribed,
)
from .pieces import SubEntry, make_entries, probe_target, space_of
from .probes import probe_leaf, probe_region
from .space import Space
from .treeid import TreeId


@dataclass(slots=True)
class _Version:
    """One installed form of a subscription; an update installs a new version, then removes the old."""

    number: int
    sub: Subscription
    space: Space
    entries: list[SubEntry]
    leaves: dict[int, TreeId] = field(default_factory=dict)  # piece -> leaf that acknowledged it
    renew_at: float = 0.0  # next lease renewal of every piece (leases on)
    removing: bool = False
    removed: set[int] = field(default_factory=set)

    @property
    def installed(self) -> bool:
        return len(self.leaves) == len(self.entries)


@dataclass(slots=True)
class _Sub:
    sub_id: str
    schema: Schema
    versions: dict[int, _Version]
    current: int
    active: bool = True  # False from the moment it is unsubscribed: nothing more is delivered
    ready: bool = False


@dataclass(slots=True)
class HomeStats:
    delivered: int = 0
    duplicates: int = 0  # the same version notified twice: the tree itself should never do this
    overlaps: int = 0  # both versions of a subscription being updated matched: expected, removed here
    false_positives: int = 0
    late: int = 0  # notifications for subscriptions (or versions) already removed


class Home:
    def __init__(self, host: Hashable, config: TreeConfig, rng: random.Random) -> None:
        self.host = host
        self.config = config
        self.rng = rng
        self.subs: dict[str, _Sub] = {}
        self.stats = HomeStats()
        # per schema, each attribute tree's Space (one per tree: its memoised areas are reused) and root
        self._trees: dict[Schema, dict[str, tuple[Space, TreeId]]] = {}
        # event -> ({sub: version delivered}, expiry): per event, so that a notification costs one lookup of its
        # event and one of each subscription; an event's expiry is its last delivery's plus ``seen_ttl``
        self._delivered: dict[str, tuple[dict[str, int], float]] = {}

    def new_id(self) -> str:
        return f"{self.rng.getrandbits(64):016x}"

    # --- subscriptions ---

    def subscribe(self, schema: Schema, sub: Subscription, now: float, sub_id: str | None = None) -> tuple[str, list]:
        """Install ``sub``; a ``Ready`` action follows once every piece is stored."""
        sub_id = sub_id or self.new_id()
        if sub_id in self.subs:
            raise ValueError(f"subscription {sub_id} exists")
        version = self._version(schema, sub, sub_id, 0, now)
        self.subs[sub_id] = _Sub(sub_id, schema, {0: version}, 0)
        return sub_id, self._install(version)

    def update(self, sub_id: str, sub: Subscription, now: float) -> list[Action]:
        """Change a subscription's filter (§3.3.1): install the new version, then remove the old one. Until the
        new version is ready, events matching either version may be delivered."""
        state = self.subs[sub_id]
        number = max(state.versions) + 1
        version = self._version(state.schema, sub, sub_id, number, now)
        state.versions[number] = version
        state.current = number
        state.ready = False
        return self._install(version)

    def unsubscribe(self, sub_id: str, now: float) -> list[Action]:
        """Stop delivering at once; remove every installed piece; ``Removed`` follows when all are gone."""
        state = self.subs.get(sub_id)
        if state is None or not state.active:
            return []
        state.active = False
        out: list[Action] = []
        for version in state.versions.values():
            out.extend(self._remove(version))
        return out + self._maybe_removed(state)

    def _tree(self, schema: Schema) -> dict[str, tuple[Space, TreeId]]:
        trees = self._trees.get(schema)
        if trees is None:
            if len(self._trees) > 256:
                self._trees.clear()
            trees = self._trees[schema] = {}
            for name in schema.names:
                space = space_of(schema, name, self.config)
                trees[name] = (space, TreeId(space.root))
        return trees

    def _version(self, schema: Schema, sub: Subscription, sub_id: str, number: int, now: float) -> _Version:
        space, entries = make_entries(sub, schema, sub_id, number, self.host, self.config, self.rng)
        return _Version(number, sub, space, entries, renew_at=self._next_renewal(now))

    def _next_renewal(self, now: float) -> float:
        interval = self.config.lease_interval
        if interval is None:
            return float("inf")
        return now + interval * (0.75 + 0.25 * self.rng.random())  # spread out: no synchronised bursts

    def _install(self, version: _Version) -> list[Action]:
        out: list[Action] = []
        for entry in version.entries:
            target = probe_leaf(version.space, entry.point, self.config, self.rng)
            out.append(SendTree(target, ProbeSub(target, version.space, entry)))
        return out

    def _remove(self, version: _Version) -> list[Action]:
        version.removing = True
        out: list[Action] = []
        for entry in version.entries:
            leaf = version.leaves.get(entry.piece)
            if leaf is not None and entry.piece not in version.removed:
                out.append(SendTree(leaf, Unsubscribe(leaf, version.space, entry.key, entry.point, self.host)))
        return out

    def _maybe_removed(self, state: _Sub) -> list[Action]:
        if state.active or any(len(v.removed) < len(v.entries) for v in state.versions.values()):
            return []
        del self.subs[state.sub_id]
        return [Removed(state.sub_id)]

    def on_installed(self, msg: SubInstalled, now: float) -> list[Action]:
        state = self.subs.get(msg.sub_id)
        version = state.versions.get(msg.version) if state else None
        if version is None:
            return []
        if msg.piece in version.leaves:  # a renewal's acknowledgement: the leaf may have split since
            version.leaves[msg.piece] = msg.leaf
            return []
        version.leaves[msg.piece] = msg.leaf
        entry = version.entries[msg.piece]
        if version.removing:  # unsubscribed (or superseded) while this piece was on its way
            return [SendTree(msg.leaf, Unsubscribe(msg.leaf, version.space, entry.key, entry.point, self.host))]
        if not version.installed or msg.version != state.current:
            return []
        state.ready = True
        out: list[Action] = [Ready(msg.sub_id, msg.version)]
        for old in [v for n, v in state.versions.items() if n < msg.version and not v.removing]:
            out.extend(self._remove(old))
        return out

    def on_unsubscribed(self, msg: Unsubscribed, now: float) -> list[Action]:
        state = self.subs.get(msg.sub_id)
        version = state.versions.get(msg.version) if state else None
        if version is None:
            return []
        version.removed.add(msg.piece)
        if state.active and len(version.removed) == len(version.entries):
            del state.versions[msg.version]  # an update's old version is gone
            return []
        return self._maybe_removed(state)

    # --- events ---

    def publish(
        self,
        schema: Schema,
        event: Event,
        now: float,
        event_id: str | None = None,
        published_at: float | None = None,
        holds: Callable[[TreeId], bool] = lambda tid: False,
    ) -> tuple[PubEvent, list]:
        """RndRegionProbe in every attribute tree a matching subscription can live in (§3.4.1): the event's own
        attributes, and under match semantics also the omitted ones, whose whole space is searched.
        ``published_at`` is the time stamp the event carries (a wall clock; default ``now``).

        Random probing spares the root's host the load of every search. A publisher that *is* the root's host
        (``holds``) has nobody to spare: it searches that tree from the root, whose routing table knows every
        leaf, without guessing (small networks, where one node holds most of a tree, gain the most)."""
        stamp = now if published_at is None else published_at
        pub = PubEvent(event_id or self.new_id(), schema.name, event.values, schema.absent, stamp, self.host)
        values = event.values
        trees = self._tree(schema)
        out: list[Action] = []
        for name in (schema.names if schema.absent is Absent.MATCH else values):
            space, root = trees[name]
            value = values.get(name)
            probe = probe_target(space, None if value is None else coordinate(value))
            if holds(root):
                out.append(SendTree(root, ProbePub(root, space, "", probe, pub)))
                continue
            for path in probe_region(space, probe, self.config, self.rng):
                to = TreeId(space.root, path)
                out.append(SendTree(to, ProbePub(to, space, path, probe, pub)))
        return pub, out

    def on_delivery(self, msg: EventDelivery, now: float, check: bool = True) -> list[Action]:
        """Event delivery (§3.4.3): exactly once per (event, subscription), only to live subscriptions.

        ``check``: match the event against the subscription again, a safety net against a faulty remote leaf;
        the core leaves it out for its own leaves' notifications, whose matching was exact."""
        event = msg.event
        eid, values, absent = event.event_id, event.values, event.absent
        subs, stats = self.subs, self.stats
        # re-inserted at every delivery of the event, so that the memory's order stays its expiry order
        memory = self._delivered.pop(eid, None)
        seen = {} if memory is None else memory[0]
        ids: list[str] = []
        for sub_id, version in msg.subs:
            state = subs.get(sub_id)
            live = state.versions.get(version) if state is not None and state.active else None
            if live is None:  # unsubscribed, or a version an update has since removed
                stats.late += 1
                continue
            got = seen.get(sub_id)
            if got is not None:
                if got == version:
                    stats.duplicates += 1
                else:
                    stats.overlaps += 1
                continue
            if check and not live.sub.matches(values, absent):
                stats.false_positives += 1
                continue
            seen[sub_id] = version
            ids.append(sub_id)
        if seen:
            self._delivered[eid] = (seen, now + self.config.seen_ttl)
        if not ids:
            return []
        stats.delivered += len(ids)
        return [Deliver(tuple(ids), event)]

    def tick(self, now: float) -> list[Action]:
        """Forget old (event, subscription) pairs; renew the leases of installed pieces (soft state, thesis §3.6):
        a renewal goes to the leaf that last acknowledged the piece and re-installs it if it was lost; a piece
        never acknowledged (its probe lost with a crashed node) is probed for again."""
        if self._delivered:
            expire_oldest_pairs(self._delivered, now)
        out: list[Action] = []
        if self.config.lease_interval is None:
            return out  # no leases: nothing to renew
        for state in self.subs.values():
            if not state.active:
                continue
            for version in state.versions.values():
                if version.removing or version.renew_at > now:
                    continue
                version.renew_at = self._next_renewal(now)
                for entry in version.entries:
                    leaf = version.leaves.get(entry.piece)
                    if leaf is None:
                        target = probe_leaf(version.space, entry.point, self.config, self.rng)
                        out.append(SendTree(target, ProbeSub(target, version.space, entry)))
                    else:
                        out.append(SendTree(leaf, InsertSub(leaf, version.space, entry, renew=True)))
        return out
