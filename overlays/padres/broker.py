"""PADRES-style TID-based routing on a general (cyclic) overlay, the OctopiA paper's baseline (§2, §10).

* Advertisements are flooded with a tree identifier (TID) assigned by the publisher's broker; a broker keeps the
  first copy in its SRT (lasthop = tree parent) and discards later copies: extra IMs counted as duplicates.
* Subscriptions travel the reverse paths of the matching advertisement trees, bound to their TIDs, into PRTs;
  when a new advertisement reaches a subscriber's broker, its overlapping local subscriptions follow it back.
* TID-S (static): a publication carries the TID of one advertisement it conforms to and follows only PRT bindings
  of that tree, so it walks the tree from the root: no loop, no duplicate.
* TID-D (dynamic, when ``dynamic``): where the next hop on the tree is overloaded (Eq. 3, as the paper applied to
  PADRES), a destination (subscriber broker) may switch to another tree its subscription is bound to at this
  broker, if that tree's next hop is uncongested. Copies that left the static tree name their destinations
  explicitly, every destination is assigned to exactly one copy at every broker, and a copy switches at most
  ``max_switches`` times, then follows its tree to the end: exact and loop-free.

Unadvertisement floods like the advertisement and leaves a tombstone (retired TID) so that a late duplicate of
the advertisement is not taken for a new one; TIDs are never reused. Runtime requirements as for OctopiA:
per-neighbour FIFO, unique ``sub_id`` values.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping
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
    Publication,
    Publish,
    Subscribe,
    TableSizes,
    Unadvertise,
    Unsubscribe,
)
from ..scot import BrokerId, Scot
from .messages import Tid, TidAdvertisement, TidPublication, TidSubscription, TidUnadvertisement, TidUnsubscription
from .tables import PadresPrtEntry, PadresPublicationRoutingTable, SrtEntry, SubscriptionRoutingTable


class PadresBroker(CoreBase):
    """One broker of the baseline; neighbours are plain overlay links (no clusters)."""

    def __init__(
        self,
        label: Hashable,
        neighbours: Iterable[Hashable],
        schemas: Mapping[str, Schema] | None = None,
        *,
        dynamic: bool = False,
        congestion: CongestionConfig | None = None,
        max_switches: int = 2,
    ) -> None:
        super().__init__(label, neighbours, schemas)
        self.dynamic = dynamic
        self.max_switches = max_switches
        self.lst = LinkStatusTable(congestion)
        self.srt = SubscriptionRoutingTable()
        self.prt = PadresPublicationRoutingTable()
        self.retired: set[Tid] = set()
        self._seq = 0
        self._local_adverts: dict[tuple[str, str], Tid] = {}

    @classmethod
    def on_scot(cls, scot: Scot, broker: BrokerId | tuple[str, int], schemas: Mapping[str, Schema] | None = None,
                **kw: Any) -> PadresBroker:
        """The same broker of an *unclustered* SCOT: every aLink and iLink is a plain link."""
        b = BrokerId(*broker)
        return cls(b, scot.neighbours(b), schemas, **kw)

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
                raise TypeError(f"PadresBroker cannot handle {type(message).__name__}")
        return out

    def table_sizes(self) -> TableSizes:
        return TableSizes(advertisements=len(self.srt), subscriptions=len(self.prt), prt_entries=self.prt.bindings())

    def _on_peer(self, sender: Hashable, msg: Any, out: list[Action]) -> None:
        match msg:
            case TidPublication():
                self._route(msg.publication, msg.tid, msg.destinations, sender, msg.switches, msg.hops, out)
            case TidSubscription():
                self._on_subscription(sender, msg, out)
            case TidUnsubscription():
                self._on_unsubscription(sender, msg, out)
            case TidAdvertisement():
                self._on_advertisement(sender, msg, out)
            case TidUnadvertisement():
                if msg.tid in self.srt:
                    self._retire(msg.tid, sender, out)
                else:
                    self.retired.add(msg.tid)
                    self.counters.duplicates_discarded += 1
            case _:
                self.counters.dropped += 1

    # -- advertisements: flooding with TIDs -----------------------------------------------------------------

    def _on_advertise(self, cmd: Advertise, out: list[Action]) -> None:
        if err := self._filter_error(cmd, cmd.filter, advertisement=True):
            return self._reject(out, cmd, *err)
        key = (cmd.client, cmd.adv_id)
        if key in self._local_adverts:
            return self._reject(out, cmd, "duplicate_id", f"advertisement {cmd.adv_id!r} is already live")
        tid = Tid(self.label, self._seq)
        self._seq += 1
        self._local_adverts[key] = tid
        self.srt.insert(SrtEntry(tid, cmd.filter, None, cmd.client, cmd.adv_id))
        for n in self.neighbours:
            self._send(out, n, TidAdvertisement(tid, cmd.filter))
        self._bind_local(tid, cmd.filter, out)
        return None

    def _on_advertisement(self, sender: Hashable, msg: TidAdvertisement, out: list[Action]) -> None:
        if msg.tid in self.srt or msg.tid in self.retired:
            self.counters.duplicates_discarded += 1
            return
        self.srt.insert(SrtEntry(msg.tid, msg.filter, sender))
        for n in self.neighbours:
            if n != sender:
                self._send(out, n, msg)
        self._bind_local(msg.tid, msg.filter, out)

    def _bind_local(self, tid: Tid, adv: Subscription, out: list[Action]) -> None:
        """A new tree reached this broker: send its overlapping local subscriptions back along it."""
        absent = self.absent(adv.schema)
        for e in self.prt:
            if e.is_local:
                self.counters.overlap_tests += 1
                if overlaps(adv, e.filter, absent):
                    self._bind(e, (tid,), None, out)

    def _on_unadvertise(self, cmd: Unadvertise, out: list[Action]) -> None:
        tid = self._local_adverts.pop((cmd.client, cmd.adv_id), None)
        if tid is None:
            return self._reject(out, cmd, "unknown_id", f"no live advertisement {cmd.adv_id!r} of {cmd.client!r}")
        self._retire(tid, None, out)
        return None

    def _retire(self, tid: Tid, sender: Hashable | None, out: list[Action]) -> None:
        self.srt.remove(tid)
        self.retired.add(tid)
        for e in self.prt:
            e.bindings.pop(tid, None)
            e.forwarded.pop(tid, None)
            if not e.bindings and not e.is_local:
                self.prt.remove(e.sub_id)
        for n in self.neighbours:
            if n != sender:
                self._send(out, n, TidUnadvertisement(tid))

    # -- subscriptions: reverse paths of matching advertisement trees ---------------------------------------

    def _on_subscribe(self, cmd: Subscribe, out: list[Action]) -> None:
        if err := self._filter_error(cmd, cmd.filter, advertisement=False):
            return self._reject(out, cmd, *err)
        if cmd.sub_id in self.prt:
            return self._reject(out, cmd, "duplicate_id", f"subscription {cmd.sub_id!r} already exists")
        e = PadresPrtEntry(cmd.sub_id, cmd.filter, self.label, cmd.client)
        self.prt.insert(e)
        absent = self.absent(cmd.filter.schema)
        self.counters.overlap_tests += len(self.srt)
        tids = tuple(a.tid for a in self.srt if overlaps(a.filter, cmd.filter, absent))
        self._bind(e, tids, None, out)
        return None

    def _on_subscription(self, sender: Hashable, msg: TidSubscription, out: list[Action]) -> None:
        e = self.prt.get(msg.sub_id)
        if e is None:
            e = PadresPrtEntry(msg.sub_id, msg.filter, msg.origin, None)
            self.prt.insert(e)
        self._bind(e, msg.tids, sender, out)
        if not e.bindings and not e.is_local:
            self.prt.remove(e.sub_id)  # every tree named was unadvertised meanwhile

    def _bind(self, e: PadresPrtEntry, tids: Iterable[Tid], lasthop: Hashable | None, out: list[Action]) -> None:
        onward: dict[Hashable, list[Tid]] = defaultdict(list)
        for tid in tids:
            adv = self.srt.get(tid)
            if adv is None:
                self.counters.dropped += 1  # retired while the subscription travelled
                continue
            e.bindings[tid] = lasthop
            if adv.lasthop is not None:
                e.forwarded[tid] = adv.lasthop
                onward[adv.lasthop].append(tid)
        for n in sorted(onward):
            self._send(out, n, TidSubscription(e.sub_id, e.filter, e.origin, tuple(onward[n])))

    def _on_unsubscribe(self, cmd: Unsubscribe, out: list[Action]) -> None:
        e = self.prt.get(cmd.sub_id)
        if e is None:
            return self._reject(out, cmd, "unknown_id", f"no subscription {cmd.sub_id!r} here")
        if e.client != cmd.client:
            return self._reject(out, cmd, "not_owner", f"subscription {cmd.sub_id!r} is not {cmd.client!r}'s")
        self.prt.remove(cmd.sub_id)
        self._unbind(e, list(e.bindings), out)
        return None

    def _on_unsubscription(self, sender: Hashable, msg: TidUnsubscription, out: list[Action]) -> None:
        e = self.prt.get(msg.sub_id)
        if e is None:
            self.counters.dropped += 1
            return
        tids = [t for t in msg.tids if t in e.bindings and e.bindings[t] == sender]
        self._unbind(e, tids, out)
        if not e.bindings and not e.is_local:
            self.prt.remove(e.sub_id)

    def _unbind(self, e: PadresPrtEntry, tids: Iterable[Tid], out: list[Action]) -> None:
        onward: dict[Hashable, list[Tid]] = defaultdict(list)
        for tid in tids:
            e.bindings.pop(tid, None)
            nxt = e.forwarded.pop(tid, None)
            if nxt is not None:
                onward[nxt].append(tid)
        for n in sorted(onward):
            self._send(out, n, TidUnsubscription(e.sub_id, tuple(onward[n])))

    # -- publications: TID-S and TID-D ----------------------------------------------------------------------

    def _on_publish(self, cmd: Publish, out: list[Action]) -> None:
        ev = cmd.event
        tids = sorted(
            tid for (client, _), tid in self._local_adverts.items()
            if client == cmd.client and (a := self.srt.get(tid)) is not None and a.filter.schema == ev.schema
            and conforms(ev.values, a.filter)
        )
        if not tids:
            return self._reject(
                out, cmd, "no_advertisement", f"{cmd.client!r} has no live advertisement this event conforms to"
            )
        # Any subscription matching the event overlaps every advertisement it conforms to: one tree suffices.
        self._route(Publication(cmd.pub_id, cmd.client, ev), tids[0], None, None, 0, 0, out)
        return None

    def _route(
        self,
        pub: Publication,
        tid: Tid,
        destinations: tuple[Hashable, ...] | None,
        arrived_from: Hashable | None,
        switches: int,
        hops: int,
        out: list[Action],
    ) -> None:
        ev = pub.event
        absent = self.absent(ev.schema)
        self.counters.match_tests += len(self.prt)
        matched = [e for e in self.prt if e.filter.schema == ev.schema and e.filter.matches(ev.values, absent)]
        static_hops: set[Hashable] = set()
        plan: dict[tuple[Hashable, Tid], set[Hashable]] = defaultdict(set)
        can_switch = self.dynamic and switches < self.max_switches

        def deliver(entries: Iterable[PadresPrtEntry]) -> None:
            for e in entries:
                self.counters.deliveries += 1
                out.append(Deliver(e.client or "", e.sub_id, pub, hops))

        if destinations is None:
            groups: dict[Hashable, set[Hashable]] = defaultdict(set)
            local = []
            for e in matched:
                if tid not in e.bindings:
                    continue
                hop = e.bindings[tid]
                if hop is None:
                    local.append(e)
                elif hop != arrived_from:
                    groups[hop].add(e.origin)
            deliver(local)
            for hop in sorted(groups):
                if not (self.dynamic and self.lst.overloaded(hop)):
                    static_hops.add(hop)
                    continue
                alts = {
                    d: self._alternative(d, matched, tid, {hop, arrived_from}) if can_switch else None
                    for d in sorted(groups[hop])
                }
                if not any(alts.values()):
                    static_hops.add(hop)  # no other tree from here: stay on the static path
                    continue
                for d, alt in alts.items():  # divert the whole group (else the static copy would cover it)
                    plan[alt or (hop, tid)].add(d)
        else:
            for d in destinations:
                if d == self.label:
                    deliver(e for e in matched if e.is_local)
                    continue
                current = next(
                    (e.bindings[tid] for e in matched
                     if e.origin == d and e.bindings.get(tid) is not None),
                    None,
                )
                if current is not None and not (can_switch and self.lst.overloaded(current)):
                    plan[(current, tid)].add(d)
                    continue
                alt = self._alternative(d, matched, tid, {current, arrived_from}) if can_switch else None
                if alt is None and current is None and switches < self.max_switches:
                    alt = self._alternative(d, matched, tid, {arrived_from}, require_uncongested=False)
                if alt is None and current is None:
                    self.counters.dropped += 1  # the subscriptions of d left while the copy travelled
                    continue
                plan[alt or (current, tid)].add(d)
        for hop in sorted(static_hops):
            self._send(out, hop, TidPublication(pub, tid, None, switches, hops + 1))
        for (hop, t) in sorted(plan):
            if t != tid:
                self.counters.dynamic_diversions += 1
            dests = tuple(sorted(plan[(hop, t)]))
            self._send(out, hop, TidPublication(pub, t, dests, switches + (t != tid), hops + 1))

    def _alternative(
        self,
        dest: Hashable,
        matched: list[PadresPrtEntry],
        tid: Tid,
        exclude: set[Hashable | None],
        *,
        require_uncongested: bool = True,
    ) -> tuple[Hashable, Tid] | None:
        """Another tree toward ``dest``: the least-loaded uncongested next hop among the bindings, at this broker,
        of matching subscriptions from ``dest`` to trees other than ``tid``."""
        options = sorted(
            {
                (hop, t)
                for e in matched
                if e.origin == dest
                for t, hop in e.bindings.items()
                if t != tid and hop is not None and hop not in exclude
                and not (require_uncongested and self.lst.overloaded(hop))
            }
        )
        if not options:
            return None
        return min(options, key=lambda o: self.lst.queue_length(o[0]))


__all__ = ["PadresBroker"]
