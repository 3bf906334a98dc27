"""What a broker tells a neighbour position that gets a (new) holder, and what it forgets of the old one (pure).

Brokers keep no state of their own that survives them: a broker that takes over a slot starts with empty tables.
Its neighbours bring it up to date with messages of the core's own protocol (a *snapshot*), and forget what the
previous holder's clients had installed (a *purge*: messages the core would have received, had that holder left
gracefully, fed in as if from the position). Both are computed from the neighbour's routing tables:

OctopiA (a snapshot keeps the broadcast's lasthops right: each primary neighbour sends the subscriptions of its
side of the cluster tree, each secondary neighbour the advertisements it hosts):

* snapshot to a primary neighbour Q: ``SubscriptionBroadcast`` of every PRT entry whose lasthop is not Q;
  to a secondary neighbour Q: ``Advertisement`` of every local (hosted) advertisement, CIV with our bit only;
* purge of Q's tenures before ``epoch``: subscriptions homed at Q under those tenures (their ids name the
  tenure) leave the cluster as ``UnsubscriptionBroadcast`` from Q; advertisements Q hosted leave the CLT as
  ``Unadvertisement`` from Q; our hosted advertisements' CIV bit of Q's cluster is cleared by a ``CivUnset``
  from Q (the new holder recomputes it from the snapshot and answers ``CivSet``).

PADRES-style baseline (first copy of a flooded advertisement fixes the tree, so a broker must never take as
parent a neighbour whose tree path runs through its own position):

* purge: subscriptions of Q's past tenures leave as ``TidUnsubscription`` from Q; every advertisement tree whose
  parent here is Q is retired (``TidUnadvertisement`` from Q floods and removes it everywhere); the hosts of those
  trees advertise again under new tree ids (:class:`~.broker.Broker` notices), which rebinds every overlapping
  subscription along the new trees;
* snapshot to Q: ``TidAdvertisement`` of every tree whose parent here is not Q (none of them runs through Q
  after the purge), then ``TidSubscription`` of every subscription this broker forwarded toward Q.

Known limit: an unsubscription (OctopiA) flooded while a position of its cluster is vacant stops there; the far
side keeps the entry. That costs publication copies toward the subscriber's broker, never a false delivery: only
the home broker delivers, and it has removed the subscription.
"""

from __future__ import annotations

from typing import Any

from overlays import BrokerId, OctopiaBroker, PadresBroker
from overlays.octopia import Advertisement, Civ, CivUnset, SubscriptionBroadcast, Unadvertisement
from overlays.octopia import UnsubscriptionBroadcast as OctUnsubscription
from overlays.padres.messages import TidAdvertisement, TidSubscription, TidUnadvertisement, TidUnsubscription

from .definition import epoch_of_seq, tenure_of


def _dead_sub(sub_id: str, q: BrokerId, below: int) -> bool:
    t = tenure_of(sub_id)
    return t is not None and t[0] == q and t[1] < below


def octopia_purge(core: OctopiaBroker, q: BrokerId, below: int) -> list[Any]:
    out: list[Any] = []
    if q in core.primary:
        out += [OctUnsubscription(e.sub_id) for e in core.prt if e.lasthop == q and _dead_sub(e.sub_id, q, below)]
    if q.region == core.broker.region and q != core.broker:
        out += [Unadvertisement(e.uid) for e in core.clt
                if e.lasthop == q and epoch_of_seq(e.uid.seq) < below]
        mine = tuple(e.uid for e in core.clt if e.is_local and e.civ[q.cluster])
        if mine:
            out.append(CivUnset(mine, q.cluster))
    return out


def octopia_snapshot(core: OctopiaBroker, q: BrokerId) -> list[Any]:
    out: list[Any] = []
    if q in core.primary:
        out += [SubscriptionBroadcast(e.sub_id, e.filter) for e in core.prt if e.lasthop != q]
    if q.region == core.broker.region and q != core.broker:
        own = Civ.of([core.cluster])
        out += [Advertisement(e.uid, e.filter, own) for e in core.clt if e.is_local]
    return out


def padres_purge(core: PadresBroker, q: BrokerId, below: int) -> list[Any]:
    out: list[Any] = []
    for e in core.prt:
        if e.origin == q and _dead_sub(e.sub_id, q, below):
            tids = tuple(sorted(t for t, hop in e.bindings.items() if hop == q))
            if tids:
                out.append(TidUnsubscription(e.sub_id, tids))
    out += [TidUnadvertisement(a.tid) for a in core.srt if a.lasthop == q]
    return out


def padres_snapshot(core: PadresBroker, q: BrokerId) -> list[Any]:
    out: list[Any] = [TidAdvertisement(a.tid, a.filter) for a in core.srt if a.lasthop != q]
    for e in core.prt:
        tids = tuple(sorted(t for t, nxt in e.forwarded.items() if nxt == q))
        if tids:
            out.append(TidSubscription(e.sub_id, e.filter, e.origin, tids))
    return out


def purge(core: Any, q: BrokerId, below: int) -> list[Any]:
    """Messages to feed ``core`` as from ``q``: forget what Q's tenures before ``below`` installed."""
    return octopia_purge(core, q, below) if isinstance(core, OctopiaBroker) else padres_purge(core, q, below)


def snapshot(core: Any, q: BrokerId) -> list[Any]:
    """Messages to send to ``q``'s (new) holder so that its tables agree with ours."""
    return octopia_snapshot(core, q) if isinstance(core, OctopiaBroker) else padres_snapshot(core, q)


def hosted_adverts(core: Any) -> set[str]:
    """The client advertisement ids live at this broker (the core's own view)."""
    if isinstance(core, OctopiaBroker):
        return {e.adv_id for e in core.clt if e.is_local}
    return {a.adv_id for a in core.srt if a.lasthop is None}


__all__ = ["hosted_adverts", "octopia_purge", "octopia_snapshot", "padres_purge", "padres_snapshot", "purge",
           "snapshot"]
