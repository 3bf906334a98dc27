"""Inter-broker messages of the PADRES-style TID baseline (Li, Muthusamy, Jacobsen, Middleware 2008)."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

from p2pubsub.model import Subscription

from ..messages import Phase, Publication


class Tid(NamedTuple):
    """Advertisement-tree identifier, assigned by the publisher's host broker: (host label, sequence)."""

    host: Hashable
    seq: int


@dataclass(frozen=True, slots=True)
class TidAdvertisement:
    """Flooded to every broker; the first copy a broker receives fixes its lasthop (tree parent)."""

    PHASE: ClassVar[Phase] = Phase.ADVERTISE
    tid: Tid
    filter: Subscription


@dataclass(frozen=True, slots=True)
class TidUnadvertisement:
    PHASE: ClassVar[Phase] = Phase.ADVERTISE
    tid: Tid


@dataclass(frozen=True, slots=True)
class TidSubscription:
    """Routed toward the publishers along the reverse paths of the matching advertisement trees ``tids``.

    ``origin`` is the subscriber's broker: the destination a dynamically routed publication names.
    """

    PHASE: ClassVar[Phase] = Phase.SUBSCRIBE
    sub_id: str
    filter: Subscription
    origin: Hashable
    tids: tuple[Tid, ...]


@dataclass(frozen=True, slots=True)
class TidUnsubscription:
    PHASE: ClassVar[Phase] = Phase.SUBSCRIBE
    sub_id: str
    tids: tuple[Tid, ...]


@dataclass(frozen=True, slots=True)
class TidPublication:
    """A publication copy on tree ``tid``.

    ``destinations`` None: a static copy (TID-S) for every matching subscription bound to ``tid`` downstream.
    Otherwise the explicit subscriber brokers this copy must reach (TID-D, after a switch of trees);
    ``switches`` counts tree switches so far (bounded, so every copy terminates).
    """

    PHASE: ClassVar[Phase] = Phase.PUBLISH
    publication: Publication
    tid: Tid
    destinations: tuple[Hashable, ...] | None
    switches: int
    hops: int


__all__ = ["Tid", "TidAdvertisement", "TidPublication", "TidSubscription", "TidUnadvertisement", "TidUnsubscription"]
