"""What goes into a broker core and what comes out, shared by OctopiA and the PADRES-style baseline.

Both cores have one entry, ``handle(message, now) -> list[Action]``, and accept the same inputs:

* client commands from a client attached to this broker: :class:`Advertise`, :class:`Unadvertise`,
  :class:`Subscribe`, :class:`Unsubscribe`, :class:`Publish`;
* :class:`FromNeighbour` — a peer message that arrived from an overlay neighbour (the runtime fills in the
  sender from the transport, never from the payload);
* :class:`LinkStats` — per-neighbour output-queue statistics for the congestion test (OctopiA Eq. 3).

and emit the same actions: :class:`Send` (to an overlay neighbour), :class:`Deliver` (to a local subscriber)
and :class:`Rejected` (a client command refused, with a stable code). Everything here is a frozen, slotted
dataclass; peer-message classes live with their core and declare the routing :class:`Phase` they belong to.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, Protocol

from p2pubsub.model import Event, Subscription

Neighbour = Hashable  # a broker label; BrokerId on a SCOT


class Phase(StrEnum):
    """Which evaluation phase an inter-broker message (IM) belongs to (paper §10)."""

    ADVERTISE = "advertise"
    SUBSCRIBE = "subscribe"
    PUBLISH = "publish"


# -- client commands -----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Advertise:
    """A publisher attached to this broker announces what it will publish (``filter`` over one schema)."""

    client: str
    adv_id: str
    filter: Subscription


@dataclass(frozen=True, slots=True)
class Unadvertise:
    client: str
    adv_id: str


@dataclass(frozen=True, slots=True)
class Subscribe:
    """``sub_id`` must be unique system-wide (e.g. prefixed by the node id); it keys every PRT."""

    client: str
    sub_id: str
    filter: Subscription


@dataclass(frozen=True, slots=True)
class Unsubscribe:
    client: str
    sub_id: str


@dataclass(frozen=True, slots=True)
class Publish:
    """The event must conform to one of the client's live advertisements at this broker (else Rejected)."""

    client: str
    pub_id: str
    event: Event


ClientCommand = Advertise | Unadvertise | Subscribe | Unsubscribe | Publish


# -- runtime inputs ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FromNeighbour:
    """A peer message received from overlay neighbour ``sender``."""

    sender: Neighbour
    message: Any


@dataclass(frozen=True, slots=True)
class LinkSample:
    """One output queue's state over the last window t_w (OctopiA §9.2, Eq. 3).

    ``queue_length`` is Q_ℓ now; ``q_in`` / ``q_out`` are the publications that entered / left the queue
    during the last window.
    """

    neighbour: Neighbour
    queue_length: int
    q_in: int
    q_out: int


@dataclass(frozen=True, slots=True)
class LinkStats:
    """A batch of samples, fed by the runtime once per window t_w (and whenever it likes in between)."""

    samples: tuple[LinkSample, ...]


# -- payload and actions -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Publication:
    """What a publisher published: the id is unique per publisher; ``event`` carries schema and values."""

    pub_id: str
    publisher: str
    event: Event


@dataclass(frozen=True, slots=True)
class Send:
    neighbour: Neighbour
    message: Any


@dataclass(frozen=True, slots=True)
class Deliver:
    """Hand ``publication`` to local subscriber ``client`` for subscription ``subscription_id``.

    ``hops`` counts the overlay links the delivering copy crossed from the publisher's broker.
    """

    client: str
    subscription_id: str
    publication: Publication
    hops: int


@dataclass(frozen=True, slots=True)
class Rejected:
    """A client command refused; ``code`` is stable (unknown_schema, duplicate_id, unknown_id, not_owner,
    no_advertisement, unsatisfiable)."""

    command: ClientCommand
    code: str
    reason: str


Action = Send | Deliver | Rejected


class PeerMessage(Protocol):
    PHASE: ClassVar[Phase]


@dataclass(frozen=True, slots=True)
class TableSizes:
    """Routing-table sizes of one broker (paper §10): advertisements (CLT or SRT entries) and subscriptions
    (distinct PRT subscriptions; ``prt_entries`` counts (subscription, tree) bindings where they differ)."""

    advertisements: int
    subscriptions: int
    prt_entries: int


class RoutingCore(Protocol):
    """What the harness and a node runtime need from a broker core."""

    label: Neighbour

    def handle(self, message: Any, now: float) -> list[Action]: ...

    def table_sizes(self) -> TableSizes: ...


def phase_of(message: Any) -> Phase:
    """The evaluation phase of a peer message (a message may override its class's phase, e.g. CivSet)."""
    return getattr(message, "phase", None) or message.PHASE


__all__ = [
    "Action",
    "Advertise",
    "ClientCommand",
    "Deliver",
    "FromNeighbour",
    "LinkSample",
    "LinkStats",
    "Neighbour",
    "PeerMessage",
    "Phase",
    "Publication",
    "Publish",
    "Rejected",
    "RoutingCore",
    "Send",
    "Subscribe",
    "TableSizes",
    "Unadvertise",
    "Unsubscribe",
    "phase_of",
]
