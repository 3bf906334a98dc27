"""Node-level peer messages: routing toward a key's responsible node, prefix-grouped multicast of probes,
cache hints, joins and hand-offs, and the schema store. The tree core's own messages ride inside them."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from ..tree.messages import PubEvent
from ..tree.space import Space, Target
from ..tree.treeid import TreeId
from .wire import register

Host = Hashable  # (node_id: bytes, ip: str, port: int)


@dataclass(frozen=True, slots=True)
class Routed:
    """A keyed message (a tree message, or a schema request) on its way, hop by hop, to the node responsible for
    ``key``: each hop hands it to the closest node it knows (greedy XOR routing), or handles it if none is
    closer than itself."""

    key: bytes
    msg: Any
    origin: Host
    hops: int


@dataclass(frozen=True, slots=True)
class Probe:
    """One ProbePub of a multicast group, without the event the group shares."""

    target: TreeId
    space: Space
    scope: str
    probe: Target
    known: bool


@dataclass(frozen=True, slots=True)
class ProbePubMulticast:
    """Many probes of one event travelling together (thesis §3.4.2, Program 3.4): at each hop the node keeps
    the probes it is responsible for and regroups the rest by next hop, as Pastry regroups by prefix; here the
    groups are Kademlia's XOR neighbourhoods."""

    event: PubEvent
    probes: tuple[Probe, ...]
    origin: Host
    hops: int


@dataclass(frozen=True, slots=True)
class Resolved:
    """Cache hint to a message's origin: ``host`` is responsible for ``key`` (next time: one hop)."""

    key: bytes
    host: Host


@dataclass(frozen=True, slots=True)
class JoinRequest:
    """A new node asks its neighbours for the state of the keys it is now responsible for (thesis §3.6)."""

    host: Host


@dataclass(frozen=True, slots=True)
class JoinReply:
    """Everything ``host`` had to hand over has been sent before this message (the transport is FIFO)."""

    host: Host
    moved: int


@dataclass(frozen=True, slots=True)
class Goodbye:
    """``host`` is leaving: route nothing more through it. Sent before its hand-offs (the transport is FIFO)."""

    host: Host


@dataclass(frozen=True, slots=True)
class SchemaPut:
    """Create a schema (compare-and-set at the node responsible for its key): created, identical or conflict."""

    name: str
    doc: str  # JSON
    reply_to: Host
    req: int


@dataclass(frozen=True, slots=True)
class SchemaGet:
    name: str
    reply_to: Host
    req: int


@dataclass(frozen=True, slots=True)
class SchemaReply:
    req: int
    status: str  # "created" | "identical" | "conflict" | "found" | "missing"
    doc: str | None


@dataclass(frozen=True, slots=True)
class SchemaHandoff:
    """A schema moving to the node now responsible for its key."""

    name: str
    doc: str


NODE_MESSAGES = {
    Routed: 24,
    Probe: 25,
    ProbePubMulticast: 26,
    Resolved: 27,
    JoinRequest: 28,
    JoinReply: 29,
    SchemaPut: 30,
    SchemaGet: 31,
    SchemaReply: 32,
    SchemaHandoff: 33,
    Goodbye: 34,
}

for _cls, _tag in NODE_MESSAGES.items():
    register(_cls, _tag)
del _cls, _tag
