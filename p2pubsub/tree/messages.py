"""Messages between tree hosts and homes, and the actions a core asks its runtime to carry out.

Names follow the thesis (§4.2.1) without the ``Message`` suffix. Tree messages are addressed to a tree node
(``target``), which the runtime resolves to the DHT node responsible for the hash of its identifier; the rest go
straight to a host. All are frozen and slotted: the cores never mutate a message.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any

from ..model import Absent
from .pieces import SubEntry
from .space import Space, Target
from .treeid import TreeId

Host = Hashable


@dataclass(frozen=True, slots=True)
class PubEvent:
    """A published event as it travels: validated values plus the schema's absent-attribute semantics."""

    event_id: str
    schema: str
    values: Mapping[str, Any]
    absent: Absent
    published_at: float
    publisher: Host


# --- subscription installation (§3.3, Program 3.2) and tree maintenance (§3.2.2, Program 3.1) ---


@dataclass(frozen=True, slots=True)
class ProbeSub:
    """A guess at the leaf holding ``entry.point``: a random level first, then binary search upward."""

    target: TreeId
    space: Space
    entry: SubEntry


@dataclass(frozen=True, slots=True)
class InsertSub:
    """Insert into a node known to exist (forwarded from an ancestor's routing table, or a known leaf).

    ``renew``: a lease renewal from the subscriber's home to the leaf it last heard from; that node may have
    split since, or been lost, so a missing node is searched for like a ProbeSub rather than waited for.
    """

    target: TreeId
    space: Space
    entry: SubEntry
    renew: bool = False


@dataclass(frozen=True, slots=True)
class SubInstalled:
    """To the subscriber's home: this piece is stored at ``leaf``."""

    sub_id: str
    version: int
    piece: int
    leaf: TreeId


@dataclass(frozen=True, slots=True)
class TransferSub:
    """A splitting leaf hands its subscriptions to a new child, in parts, with the events it has already
    matched (event id, remaining lifetime) so that the child discards their late probes too."""

    target: TreeId
    space: Space
    entries: tuple[SubEntry, ...]
    seen: tuple[tuple[str, float], ...]
    part: int
    parts: int


@dataclass(frozen=True, slots=True)
class LeafUpdate:
    """Node ``split`` has split; every ancestor up to the root refines its LeafRoutingTable."""

    target: TreeId
    split: str


@dataclass(frozen=True, slots=True)
class AdoptNode:
    """A whole tree node moving to another host (its DHT key has a new responsible node), in parts.

    A leaf carries its subscriptions; an internal node its routing table as the set of internal nodes it knows
    (the entries are that trie's frontier). ``seen`` holds remaining lifetimes of matched events. If the
    receiver already holds the node (two hosts both thought themselves responsible), the two are merged.
    """

    target: TreeId
    space: Space
    part: int
    parts: int
    leaf: bool
    entries: tuple[SubEntry, ...] = ()
    inner: tuple[str, ...] = ()
    seen: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True, slots=True)
class ReplicaUpdate:
    """From a tree node's host to the hosts holding its replicas (thesis §3.6): what changed.

    ``reset`` starts a full snapshot (further parts follow as plain updates: the transport keeps order); a leaf
    carries its subscriptions, an internal node only that it is one (its routing table is not replicated: a
    promoted replica starts from its two children, which is always right, and learns the rest again).
    """

    target: TreeId
    space: Space
    leaf: bool
    put: tuple[SubEntry, ...] = ()
    drop: tuple[tuple[str, int, int], ...] = ()
    reset: bool = False


@dataclass(frozen=True, slots=True)
class NodeQuery:
    """Does ``target`` exist? Asked by the host of ``about``, a node whose state was lost with every replica,
    to decide whether to bring it back as an internal node (its children exist) or as an empty leaf."""

    target: TreeId
    space: Space
    about: TreeId
    reply_to: Host


@dataclass(frozen=True, slots=True)
class NodeInfo:
    target: TreeId
    about: TreeId
    exists: bool


@dataclass(frozen=True, slots=True)
class Unsubscribe:
    target: TreeId
    space: Space
    key: tuple[str, int, int]
    point: tuple[float, float]
    home: Host


@dataclass(frozen=True, slots=True)
class Unsubscribed:
    sub_id: str
    version: int
    piece: int
    found: bool


# --- event publication (§3.4.1, Program 3.3) and delivery (§3.4.3) ---


@dataclass(frozen=True, slots=True)
class ProbePub:
    """Search ``probe`` within the node ``target`` for the part ``scope`` of the space it answers for.

    ``known`` is set when the sender knows ``target`` exists (it came from a routing table), so a host that
    has not received the node's subscriptions yet waits for them instead of jumping upward.
    """

    target: TreeId
    space: Space
    scope: str
    probe: Target
    event: PubEvent
    known: bool = False


@dataclass(frozen=True, slots=True)
class EventDelivery:
    """To a subscriber's home: ``event`` matches these of its subscriptions, as (id, version) pairs."""

    event: PubEvent
    subs: tuple[tuple[str, int], ...]


TreeMessage = ProbeSub | InsertSub | TransferSub | LeafUpdate | Unsubscribe | ProbePub | AdoptNode | NodeQuery
TREE_MESSAGES = (ProbeSub, InsertSub, TransferSub, LeafUpdate, Unsubscribe, ProbePub, AdoptNode, NodeQuery)
HomeMessage = SubInstalled | Unsubscribed | EventDelivery | NodeInfo | ReplicaUpdate  # sent to a host
Message = TreeMessage | HomeMessage


# --- actions ---


@dataclass(frozen=True, slots=True)
class SendTree:
    """Send to whichever host is responsible for tree node ``to``."""

    to: TreeId
    msg: TreeMessage


@dataclass(frozen=True, slots=True)
class SendHost:
    to: Host
    msg: HomeMessage


@dataclass(frozen=True, slots=True)
class Deliver:
    """Hand ``event`` to the local application for each subscription of ``sub_ids`` (deduplicated: exactly once
    per pair). One action per notification message, not per subscription: an event reaches many at once."""

    sub_ids: tuple[str, ...]
    event: PubEvent


@dataclass(frozen=True, slots=True)
class Ready:
    """Subscription ``sub_id`` (version ``version``) is installed: every later event can reach it."""

    sub_id: str
    version: int


@dataclass(frozen=True, slots=True)
class Removed:
    sub_id: str


@dataclass(frozen=True, slots=True)
class Dropped:
    """A message the core gave up on (e.g. it waited for a node that never arrived): never silent."""

    reason: str
    msg: Message


@dataclass(frozen=True, slots=True)
class Replicate:
    """Send ``update`` to the hosts that hold (or should hold) replicas of its tree node: the runtime knows
    which they are (the ``r - 1`` DHT nodes closest to the node's key after its own host)."""

    update: ReplicaUpdate


Action = SendTree | SendHost | Deliver | Ready | Removed | Dropped | Replicate
