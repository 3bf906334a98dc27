"""Peer messages of a SCOT node, besides the DHT node's own (``Routed``, ``Resolved``, joins, schemas) and the
routing cores' (``overlays.octopia.messages``, ``overlays.padres.messages``). Wire tags 40–53 (see :mod:`.wire`).

Keyed (travel inside ``Routed`` to the node responsible for the key, answered directly):

* :class:`OverlayPut` / :class:`OverlayGet` -> :class:`StoreReply`: the overlay definition, compare-and-set;
* :class:`SlotClaim` / :class:`SlotRelease` / :class:`SlotGet` -> :class:`SlotReply`: slot leases and the
  position -> holder directory.

Between DHT nodes: :class:`Replica` (a record's copy for a replica holder or the node now responsible; ``req`` > 0
asks for a :class:`ReplicaAck`), :class:`RecordQuery` (a node about to decide on a slot it has no record of asks
the key's other closest nodes for theirs).

Between brokers on an overlay link (always to a direct SCOT neighbour): :class:`Hello` / :class:`Bye` (binding
a position to an address), :class:`Tracked` (a core message whose consequences are being awaited) and
:class:`Echoed` (they are all handled: termination detection, see :mod:`.echo`). Untracked core messages travel
bare.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from overlays import BrokerId

Host = Hashable  # (node_id: bytes, ip: str, port: int)


@dataclass(frozen=True, slots=True)
class OverlayPut:
    name: str
    doc: str  # canonical JSON of an OverlayDefinition
    reply_to: Host
    req: int


@dataclass(frozen=True, slots=True)
class OverlayGet:
    name: str
    reply_to: Host
    req: int


@dataclass(frozen=True, slots=True)
class StoreReply:
    req: int
    status: str  # "created" | "identical" | "conflict" | "found" | "missing"
    doc: str | None


@dataclass(frozen=True, slots=True)
class SlotClaim:
    """Claim (``epoch`` 0) or renew (``epoch`` = the tenure held) slot ``slot`` for ``lease`` seconds."""

    slot: str
    claimant: Host
    epoch: int
    lease: float
    req: int


@dataclass(frozen=True, slots=True)
class SlotRelease:
    slot: str
    holder: Host
    epoch: int
    req: int


@dataclass(frozen=True, slots=True)
class SlotGet:
    slot: str
    reply_to: Host
    req: int


@dataclass(frozen=True, slots=True)
class SlotReply:
    """``holder`` None: the slot is free; ``epoch``: its current (or last) tenure; ``remaining``: lease left."""

    req: int
    status: str  # granted | renewed | taken | lost | released | unknown | found
    holder: Host
    epoch: int
    remaining: float


@dataclass(frozen=True, slots=True)
class Replica:
    kind: str  # "schema" | "overlay" | "slot"
    name: str
    doc: str
    reply_to: Host
    req: int  # > 0: acknowledge with ReplicaAck(req) to reply_to


@dataclass(frozen=True, slots=True)
class ReplicaAck:
    req: int


@dataclass(frozen=True, slots=True)
class RecordQuery:
    """Do you keep a copy of this record? (answered with StoreReply: found + doc, or missing)"""

    kind: str
    name: str
    reply_to: Host
    req: int


@dataclass(frozen=True, slots=True)
class Hello:
    """The broker at ``position`` (tenure ``epoch``) binds this link; ``resync``: send me your snapshot."""

    position: BrokerId
    epoch: int
    resync: bool


@dataclass(frozen=True, slots=True)
class Bye:
    """The broker at ``position`` ends tenure ``epoch`` (graceful stop, or lost its lease)."""

    position: BrokerId
    epoch: int


@dataclass(frozen=True, slots=True)
class Tracked:
    """A core message whose consequences the sender waits for: answer :class:`Echoed` (``token``) once they
    are all handled (Dijkstra–Scholten termination detection)."""

    msg: Any
    token: int


@dataclass(frozen=True, slots=True)
class Echoed:
    token: int


SCOT_MESSAGES: dict[type, int] = {
    OverlayPut: 40,
    OverlayGet: 41,
    StoreReply: 42,
    SlotClaim: 43,
    SlotRelease: 44,
    SlotGet: 45,
    SlotReply: 46,
    Replica: 47,
    ReplicaAck: 48,
    Hello: 49,
    Bye: 50,
    Tracked: 51,
    Echoed: 52,
    RecordQuery: 53,
}

__all__ = [
    "SCOT_MESSAGES",
    "Bye",
    "Echoed",
    "Hello",
    "OverlayGet",
    "OverlayPut",
    "RecordQuery",
    "Replica",
    "ReplicaAck",
    "SlotClaim",
    "SlotGet",
    "SlotRelease",
    "SlotReply",
    "StoreReply",
    "Tracked",
]
