"""The in-memory network with crashes, replicas and the passage of time (thesis §3.6), for testing the core's
fault tolerance without sockets.

Responsibility is rendezvous hashing over the live hosts (a DHT's closest node); a tree node's replicas live on
the next ``replicas - 1`` hosts of its ranking. A crash wipes a host: its tree nodes, replicas, subscriptions and
everything it had received are gone; messages still on their way to it are handed back to their senders and sent
to the new responsible host, as the peer transport does. Time moves only through :meth:`advance`, which runs
every host's housekeeping (lease renewals and expiry, revival of lost nodes) and brings replica sets up to date.
"""

from __future__ import annotations

import random
import zlib

from .inmemory import InMemoryNetwork, Oracle, rendezvous_owner
from .model import Schema, Subscription
from .tree import TREE_MESSAGES, Action, PubSubCore, Replicate, ReplicaUpdate, TreeConfig, TreeId


class CrashingNetwork(InMemoryNetwork):
    def __init__(self, hosts: int, config: TreeConfig, seed: int = 0, replicas: int = 3, **kw) -> None:
        self.live = list(range(hosts))
        self.replicas = replicas
        self.crashed: set[int] = set()
        self._replica_sets: dict[TreeId, frozenset[int]] = {}
        super().__init__(hosts, config, seed, owner=rendezvous_owner(self.live), replicate=replicas > 1, **kw)
        self._strict_moves = False

    def ranking(self, tid: TreeId) -> list[int]:
        return sorted(self.live, key=lambda h: zlib.crc32(f"{tid}|{h}".encode()), reverse=True)

    def replica_hosts(self, tid: TreeId) -> frozenset[int]:
        return frozenset(self.ranking(tid)[1 : self.replicas])

    def _apply(self, host: int, actions: list[Action]) -> None:
        plain = []
        for a in actions:
            if isinstance(a, Replicate):
                hosts = self.replica_hosts(a.update.target)
                self._replica_sets[a.update.target] = hosts
                for h in hosts:
                    self._send(host, h, a.update)
            else:
                plain.append(a)
        super()._apply(host, plain)

    def _pick(self):
        i = self.rng.randrange(len(self.pool)) if self.reorder else 0
        if isinstance(self.pool[i].msg, ReplicaUpdate):
            # replica updates rely on the transport's order between two hosts: the oldest goes first
            src, dst = self.pool[i].src, self.pool[i].dst
            i = next(j for j, m in enumerate(self.pool)
                     if isinstance(m.msg, ReplicaUpdate) and m.src == src and m.dst == dst)
        return self.pool.pop(i)

    def _deliver(self, item) -> None:
        tree_msg = isinstance(item.msg, TREE_MESSAGES)
        if item.dst in self.crashed:  # never arrives: the sender's transport hands it back
            if tree_msg:
                self._send(item.src, self.owner(item.msg.target), item.msg)
            return
        target = item.msg.target if tree_msg else None
        core = self.cores[item.dst]
        if (target is not None and self.owner(target) == item.dst and target not in core.tree.nodes
                and target in core.tree.replicas):
            # the responsible host takes over from its replica before it answers (thesis §3.6)
            self._apply(item.dst, core.tree.promote(target, self.now))
        super()._deliver(item)

    def crash(self, *hosts: int) -> None:
        """Kill ``hosts`` at once: all their state is lost."""
        for h in hosts:
            self.live.remove(h)
            self.crashed.add(h)
            old = self.cores[h]
            self.cores[h] = PubSubCore(h, old.tree.capacity, self.config, random.Random(h), old.tree.inline,
                                       self.replicas > 1)
        self.owner = rendezvous_owner(self.live)
        self.promote_all()

    def _drain(self, max_steps: int, check_every: int) -> int:
        """Until quiet, and every replica whose host became responsible promoted (as its tick would)."""
        steps = 0
        while True:
            steps += super()._drain(max_steps, check_every)
            self.promote_all()
            if not self.pool:
                return steps

    def promote_all(self) -> None:
        """Every host takes over the replicas it is now responsible for (the runtime does this on its tick)."""
        for h in self.live:
            tree = self.cores[h].tree
            for tid in [t for t in tree.replicas if self.owner(t) == h and t not in tree.nodes]:
                self._apply(h, tree.promote(tid, self.now))

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` pass: housekeeping on every live host, replica sets brought up to date."""
        self.now += seconds
        self.promote_all()
        for h in self.live:
            self._apply(h, self.cores[h].tick(self.now))
        if self.replicas <= 1:
            return
        for h in self.live:
            tree = self.cores[h].tree
            for tid in list(tree.nodes):
                want = self.replica_hosts(tid)
                new = want - self._replica_sets.get(tid, frozenset())
                if new:
                    for update in tree.snapshot(tid):
                        for r in new:
                            self._send(h, r, update)
                self._replica_sets[tid] = want
            tree.drop_replicas(lambda t, h=h: h not in self.replica_hosts(t))

    def _coming(self) -> set[TreeId]:
        """Replicas their responsible host has not promoted yet (it will at the first message or tick), and
        replica updates on their way."""
        out = {m.msg.target for m in self.pool if isinstance(m.msg, ReplicaUpdate)}
        for h in self.live:
            out.update(t for t in self.cores[h].tree.replicas if self.owner(t) == h)
        return out

    def check_host(self, host: int) -> None:
        if host not in self.crashed:
            super().check_host(host)


class CrashOracle(Oracle):
    """The oracle, told about crashes: a crashed home's subscriptions are gone from that moment (like an
    unsubscribe the network was not told about)."""

    def crash(self, *hosts: int) -> None:
        for life in self.subs.values():
            if life.host in hosts and life.unsubscribed_at is None:
                life.unsubscribed_at = self.net.step_no
        self.net.crash(*hosts)

    def subscribe(self, host: int, schema: Schema, sub: Subscription) -> str:
        assert host not in self.net.crashed
        return super().subscribe(host, schema, sub)
