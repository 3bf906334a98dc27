"""OctopiA inter-broker messages (§6–§9). Client commands and actions are in :mod:`overlays.messages`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, NamedTuple

from p2pubsub.model import Subscription

from ..messages import Phase, Publication
from ..scot import BrokerId
from .civ import Civ


class AdvUid(NamedTuple):
    """An advertisement's unique identification (Alg. 1 line 10), assigned by the publisher's host broker.

    Only CIV_SET / CIV_UNSET use it to find the advertisement at the host; it is never a routing-tree id.
    """

    host: BrokerId
    seq: int


@dataclass(frozen=True, slots=True)
class Advertisement:
    """Host broker -> its secondary neighbours in the host region (§6, Alg. 1): never forwarded further."""

    PHASE: ClassVar[Phase] = Phase.ADVERTISE
    uid: AdvUid
    filter: Subscription
    civ: Civ  # CIV_a^i as sent: only the host cluster's bit


@dataclass(frozen=True, slots=True)
class Unadvertisement:
    PHASE: ClassVar[Phase] = Phase.ADVERTISE
    uid: AdvUid


@dataclass(frozen=True, slots=True)
class CivSet:
    """Secondary broker of C_j -> host broker: C_j now holds subscriptions overlapping these advertisements.

    The paper's CIV_SET carries the triggering subscription and lets the host re-match it; we carry the uids the
    secondary broker already matched (its CLT holds every advertisement of that host), which costs the same one
    message per iLink and keeps CIV_s^j and CIV_a^i equal bit for bit, so CIV_UNSET stays exact.
    ``phase`` is the phase that caused it: an advertisement meeting stored subscriptions, or a subscription.
    """

    PHASE: ClassVar[Phase] = Phase.SUBSCRIBE
    uids: tuple[AdvUid, ...]
    cluster: int
    phase: Phase = Phase.SUBSCRIBE


@dataclass(frozen=True, slots=True)
class CivUnset:
    """Secondary broker of C_j -> host broker: the last overlapping subscription in C_j left (§8)."""

    PHASE: ClassVar[Phase] = Phase.SUBSCRIBE
    uids: tuple[AdvUid, ...]
    cluster: int


@dataclass(frozen=True, slots=True)
class SubscriptionBroadcast:
    """Cluster-level subscription broadcast over aLinks (§7, Alg. 2)."""

    PHASE: ClassVar[Phase] = Phase.SUBSCRIBE
    sub_id: str
    filter: Subscription


@dataclass(frozen=True, slots=True)
class UnsubscriptionBroadcast:
    PHASE: ClassVar[Phase] = Phase.SUBSCRIBE
    sub_id: str


@dataclass(frozen=True, slots=True)
class PublicationRoute:
    """A publication copy (§9). ``civ_p`` empty: a static copy; else CIV_p^i-D, the TSCs this copy still owes.

    ``origin_cluster`` is i, the publisher's host cluster; ``hops`` counts overlay links crossed so far.
    """

    PHASE: ClassVar[Phase] = Phase.PUBLISH
    publication: Publication
    origin_cluster: int
    civ_p: Civ
    hops: int


OctopiaMessage = (
    Advertisement | Unadvertisement | CivSet | CivUnset | SubscriptionBroadcast | UnsubscriptionBroadcast
    | PublicationRoute
)

__all__ = [
    "AdvUid",
    "Advertisement",
    "CivSet",
    "CivUnset",
    "OctopiaMessage",
    "PublicationRoute",
    "SubscriptionBroadcast",
    "Unadvertisement",
    "UnsubscriptionBroadcast",
]
