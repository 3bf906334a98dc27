"""The OctopiA broker core: one state machine per SCOT broker, ``handle(message, now) -> list[Action]``.

* Advertisement broadcast (§6, Alg. 1): the host broker keeps ``{adv, CIV_a^i, publisher}`` in its CLT and sends
  the advertisement to its secondary neighbours only; each keeps ``{adv, CIV_s^j, host}`` and answers CIV_SET
  if its cluster already holds an overlapping subscription.
* Cluster-level subscription broadcast (§7, Alg. 2): the subscription floods the subscriber's cluster (a tree)
  into every PRT; each broker that learns of it sends CIV_SET to the hosts of the advertisements in its CLT
  that it newly overlaps, and CIV_UNSET when the last overlapping subscription of its cluster leaves (§8).
* Static publication routing, SPR (§9.1, Alg. 3): intra-cluster along PRT lasthops, and from the host broker
  one copy per target secondary cluster over the iLink to it (CIV_a^i bits).
* Inter-cluster dynamic routing, IDR (§9.2, Alg. 4), when ``dynamic``: target iLinks overloaded by Eq. 3 get no
  copy; their clusters go into CIV_p^i of one other copy (Case I: the least-loaded uncongested target iLink;
  Case II: else the least-loaded target aLink if uncongested; Case III: else the least-loaded target iLink,
  whose own cluster bit is cleared). Every broker that receives CIV_p^i-D serves its bits the same way, so each
  target cluster is entered exactly once and every cluster is routed as a tree: no loop, no duplicate.

Requirements on the runtime: per-neighbour FIFO delivery (one ordered stream per overlay link) and unique
``sub_id`` values system-wide. Publications are exact once the advertisements and subscriptions they depend on
have quiesced (as in PADRES).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from p2pubsub.model import Schema, Subscription

from ..content import conforms, overlaps
from ..core import CoreBase
from ..lst import CongestionConfig, LinkStatusTable
from ..messages import (
    Action,
    Advertise,
    Deliver,
    FromNeighbour,
    LinkStats,
    Phase,
    Publication,
    Publish,
    Subscribe,
    TableSizes,
    Unadvertise,
    Unsubscribe,
)
from ..scot import BrokerId, Scot
from .civ import Civ
from .clt import CltEntry, ClusterLinkTable
from .messages import (
    Advertisement,
    AdvUid,
    CivSet,
    CivUnset,
    PublicationRoute,
    SubscriptionBroadcast,
    Unadvertisement,
    UnsubscriptionBroadcast,
)
from .prt import PrtEntry, PublicationRoutingTable


class OctopiaBroker(CoreBase):
    """Broker ``B(x, y)`` of a clustered SCOT running OctopiA (SPR, or IDR when ``dynamic``)."""

    def __init__(
        self,
        scot: Scot,
        broker: BrokerId | tuple[str, int],
        schemas: Mapping[str, Schema] | None = None,
        *,
        dynamic: bool = False,
        congestion: CongestionConfig | None = None,
    ) -> None:
        broker = BrokerId(*broker)
        super().__init__(broker, scot.neighbours(broker), schemas)
        self.scot = scot
        self.broker = broker
        self.cluster = broker.cluster
        self.primary: tuple[BrokerId, ...] = tuple(sorted(scot.primary_neighbours(broker)))
        self.secondary: dict[int, BrokerId] = dict(sorted(scot.secondary_neighbours(broker).items()))
        self._primary_set = frozenset(self.primary)
        self._secondary_cluster = {b: c for c, b in self.secondary.items()}
        self.dynamic = dynamic
        self.lst = LinkStatusTable(congestion)
        self.clt = ClusterLinkTable()
        self.prt = PublicationRoutingTable()
        self._adv_seq = 0
        self._local_adverts: dict[tuple[str, str], AdvUid] = {}

    # -- entry point ----------------------------------------------------------------------------------------

    def handle(self, message: Any, now: float) -> list[Action]:
        self.lst.advance(now)
        out: list[Action] = []
        match message:
            case FromNeighbour(sender=sender, message=msg):
                if self._from_neighbour_ok(sender):
                    self.counters.received_by_type[type(msg).__name__] += 1
                    self._on_peer(sender, msg, out)
            case Publish():
                self._on_publish(message, out)
            case Subscribe():
                self._on_subscribe(message, out)
            case Unsubscribe():
                self._on_unsubscribe(message, out)
            case Advertise():
                self._on_advertise(message, out)
            case Unadvertise():
                self._on_unadvertise(message, out)
            case LinkStats(samples=samples):
                self.lst.update(samples, now)
            case _:
                raise TypeError(f"OctopiaBroker cannot handle {type(message).__name__}")
        return out

    def table_sizes(self) -> TableSizes:
        return TableSizes(advertisements=len(self.clt), subscriptions=len(self.prt), prt_entries=len(self.prt))

    def _on_peer(self, sender: BrokerId, msg: Any, out: list[Action]) -> None:
        match msg:
            case PublicationRoute():
                self._on_publication(sender, msg, out)
            case SubscriptionBroadcast() if sender in self._primary_set:
                self._on_subscription(sender, msg, out)
            case UnsubscriptionBroadcast() if sender in self._primary_set:
                self._on_unsubscription(sender, msg, out)
            case Advertisement() if sender in self._secondary_cluster:
                self._on_advertisement(sender, msg, out)
            case Unadvertisement() if sender in self._secondary_cluster:
                if self.clt.remove(msg.uid) is None:
                    self.counters.dropped += 1
            case CivSet() if self.secondary.get(msg.cluster) == sender:
                self._on_civ(msg.uids, msg.cluster, True)
            case CivUnset() if self.secondary.get(msg.cluster) == sender:
                self._on_civ(msg.uids, msg.cluster, False)
            case _:
                self.counters.dropped += 1  # a message on the wrong kind of link

    # -- advertisements (§6, §8, Alg. 1) --------------------------------------------------------------------

    def _on_advertise(self, cmd: Advertise, out: list[Action]) -> None:
        if err := self._filter_error(cmd, cmd.filter, advertisement=True):
            return self._reject(out, cmd, *err)
        key = (cmd.client, cmd.adv_id)
        if key in self._local_adverts:
            return self._reject(out, cmd, "duplicate_id", f"advertisement {cmd.adv_id!r} is already live")
        uid = AdvUid(self.broker, self._adv_seq)
        self._adv_seq += 1
        civ_a = Civ.of([self.cluster])  # CIV_a^i[i] <- 1, every other bit 0
        self.clt.insert(CltEntry(uid, cmd.filter, civ_a, None, cmd.client, cmd.adv_id))
        self._local_adverts[key] = uid
        for n in self.secondary.values():
            self._send(out, n, Advertisement(uid, cmd.filter, civ_a))
        return None

    def _on_unadvertise(self, cmd: Unadvertise, out: list[Action]) -> None:
        uid = self._local_adverts.pop((cmd.client, cmd.adv_id), None)
        if uid is None:
            return self._reject(out, cmd, "unknown_id", f"no live advertisement {cmd.adv_id!r} of {cmd.client!r}")
        self.clt.remove(uid)
        for n in self.secondary.values():
            self._send(out, n, Unadvertisement(uid))
        return None

    def _on_advertisement(self, sender: BrokerId, msg: Advertisement, out: list[Action]) -> None:
        civ_s = msg.civ
        self.counters.overlap_tests += len(self.prt)
        if self.prt.any_overlapping(msg.filter, self.absent(msg.filter.schema)):
            civ_s = civ_s.set(self.cluster)
            self._send(out, sender, CivSet((msg.uid,), self.cluster, Phase.ADVERTISE))
        self.clt.insert(CltEntry(msg.uid, msg.filter, civ_s, sender))

    def _on_civ(self, uids: tuple[AdvUid, ...], cluster: int, value: bool) -> None:
        for uid in uids:
            e = self.clt.get(uid)
            if e is None or not e.is_local:
                self.counters.dropped += 1  # unadvertised meanwhile
                continue
            e.civ = e.civ.set(cluster) if value else e.civ.unset(cluster)

    # -- subscriptions (§7, §8, Alg. 2) ---------------------------------------------------------------------

    def _on_subscribe(self, cmd: Subscribe, out: list[Action]) -> None:
        if err := self._filter_error(cmd, cmd.filter, advertisement=False):
            return self._reject(out, cmd, *err)
        if cmd.sub_id in self.prt:
            return self._reject(out, cmd, "duplicate_id", f"subscription {cmd.sub_id!r} already exists")
        self.prt.insert(PrtEntry(cmd.sub_id, cmd.filter, None, cmd.client))
        for n in self.primary:
            self._send(out, n, SubscriptionBroadcast(cmd.sub_id, cmd.filter))
        self._civ_after_subscribe(cmd.filter, out)
        return None

    def _on_subscription(self, sender: BrokerId, msg: SubscriptionBroadcast, out: list[Action]) -> None:
        if msg.sub_id in self.prt:
            self.counters.dropped += 1
            return
        self.prt.insert(PrtEntry(msg.sub_id, msg.filter, sender))
        for n in self.primary:
            if n != sender:
                self._send(out, n, msg)
        self._civ_after_subscribe(msg.filter, out)

    def _on_unsubscribe(self, cmd: Unsubscribe, out: list[Action]) -> None:
        e = self.prt.get(cmd.sub_id)
        if e is None:
            return self._reject(out, cmd, "unknown_id", f"no subscription {cmd.sub_id!r} here")
        if e.lasthop is not None or e.client != cmd.client:
            return self._reject(out, cmd, "not_owner", f"subscription {cmd.sub_id!r} is not {cmd.client!r}'s")
        self.prt.remove(cmd.sub_id)
        for n in self.primary:
            self._send(out, n, UnsubscriptionBroadcast(cmd.sub_id))
        self._civ_after_unsubscribe(e.filter, out)
        return None

    def _on_unsubscription(self, sender: BrokerId, msg: UnsubscriptionBroadcast, out: list[Action]) -> None:
        e = self.prt.remove(msg.sub_id)
        if e is None:
            self.counters.dropped += 1
            return
        for n in self.primary:
            if n != sender:
                self._send(out, n, msg)
        self._civ_after_unsubscribe(e.filter, out)

    def _civ_after_subscribe(self, sub: Subscription, out: list[Action]) -> None:
        """getDistinctMatchingAdvs + CIV_SET: one message per host broker (iLink) with newly overlapped advs."""
        absent = self.absent(sub.schema)
        newly: dict[BrokerId, list[AdvUid]] = defaultdict(list)
        for e in self.clt:
            if e.lasthop is None or e.civ[self.cluster]:
                continue
            self.counters.overlap_tests += 1
            if overlaps(e.filter, sub, absent):
                e.civ = e.civ.set(self.cluster)
                newly[e.lasthop].append(e.uid)
        for host in sorted(newly):
            self._send(out, host, CivSet(tuple(newly[host]), self.cluster, Phase.SUBSCRIBE))

    def _civ_after_unsubscribe(self, sub: Subscription, out: list[Action]) -> None:
        """CIV_UNSET for advertisements that ``sub`` overlapped and no remaining subscription of C_j does."""
        absent = self.absent(sub.schema)
        gone: dict[BrokerId, list[AdvUid]] = defaultdict(list)
        for e in self.clt:
            if e.lasthop is None or not e.civ[self.cluster] or not overlaps(e.filter, sub, absent):
                continue
            self.counters.overlap_tests += len(self.prt)
            if not self.prt.any_overlapping(e.filter, absent):
                e.civ = e.civ.unset(self.cluster)
                gone[e.lasthop].append(e.uid)
        for host in sorted(gone):
            self._send(out, host, CivUnset(tuple(gone[host]), self.cluster))

    # -- publications (§9, Alg. 3 and 4) --------------------------------------------------------------------

    def _on_publish(self, cmd: Publish, out: list[Action]) -> None:
        ev = cmd.event
        live = [e for e in self.clt.local(cmd.client) if e.filter.schema == ev.schema]
        entries = [e for e in live if conforms(ev.values, e.filter)]
        if not entries:
            return self._reject(
                out, cmd, "no_advertisement", f"{cmd.client!r} has no live advertisement this event conforms to"
            )
        # Every subscription matching the event overlaps every advertisement it conforms to, so the clusters
        # that need it are in the intersection of their CIV_a^i.
        civ_a = entries[0].civ
        for e in entries[1:]:
            civ_a = civ_a & e.civ
        pub = Publication(cmd.pub_id, cmd.client, ev)
        self._route(pub, self.cluster, None, civ_a.unset(self.cluster), 0, out)
        return None

    def _on_publication(self, sender: BrokerId, msg: PublicationRoute, out: list[Action]) -> None:
        self._route(msg.publication, msg.origin_cluster, sender, msg.civ_p.unset(self.cluster), msg.hops, out)

    def _route(
        self,
        pub: Publication,
        origin: int,
        arrived_from: BrokerId | None,
        inter: Civ,
        hops: int,
        out: list[Action],
    ) -> None:
        """Alg. 3 (static) and Alg. 4 (IDR). ``inter``: clusters this broker must get the publication into."""
        ev = pub.event
        self.counters.match_tests += len(self.prt)
        targets: list[BrokerId] = []  # target aLinks: getDistinctSubs, downstream replication
        for e in self.prt.matching(ev.schema, ev.values, self.absent(ev.schema)):
            if e.lasthop is None:
                self.counters.deliveries += 1
                out.append(Deliver(e.client or "", e.sub_id, pub, hops))
            elif e.lasthop != arrived_from and e.lasthop not in targets:
                targets.append(e.lasthop)
        targets.sort()
        copies: dict[BrokerId, Civ] = {n: Civ() for n in targets}
        served: list[BrokerId] = []  # uncongested target iLinks
        pending = Civ()  # CIV_p^i: TSCs whose iLink from here is overloaded
        for j in inter:
            n = self.secondary[j]
            if self.dynamic and self.lst.overloaded(n):
                pending = pending.set(j)
            else:
                copies[n] = Civ()
                served.append(n)
        if pending:
            self.counters.dynamic_diversions += 1
            if served:  # Case I: some target iLink is uncongested
                mu2 = self.lst.least_loaded(served)
                copies[mu2] = copies[mu2] | pending
            elif targets and not self.lst.overloaded(mu1 := self.lst.least_loaded(targets)):  # Case II
                copies[mu1] = copies[mu1] | pending
            else:  # Case III: every target link is overloaded; take the least-loaded target iLink anyway
                mu = self.lst.least_loaded([self.secondary[j] for j in pending])
                copies[mu] = pending.unset(mu.cluster)
        for n in sorted(copies):
            self._send(out, n, PublicationRoute(pub, origin, copies[n], hops + 1))


__all__ = ["OctopiaBroker"]
