"""Routing tables of the PADRES-style baseline: SRT (advertisements with TIDs) and PRT (subscriptions bound to
TIDs, each binding with its own lasthop)."""

from __future__ import annotations

from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field

from p2pubsub.model import Subscription

from .messages import Tid


@dataclass(slots=True)
class SrtEntry:
    """``{advertisement, TID, lasthop}``: lasthop None marks the publisher's host broker (tree root)."""

    tid: Tid
    filter: Subscription
    lasthop: Hashable | None
    publisher: str | None = None
    adv_id: str | None = None


class SubscriptionRoutingTable:
    def __init__(self) -> None:
        self._entries: dict[Tid, SrtEntry] = {}

    def insert(self, e: SrtEntry) -> None:
        self._entries[e.tid] = e

    def remove(self, tid: Tid) -> SrtEntry | None:
        return self._entries.pop(tid, None)

    def get(self, tid: Tid) -> SrtEntry | None:
        return self._entries.get(tid)

    def __contains__(self, tid: object) -> bool:
        return tid in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[SrtEntry]:
        return iter(self._entries.values())


@dataclass(slots=True)
class PadresPrtEntry:
    """One subscription at one broker: for each advertisement tree it is bound to, the lasthop toward the
    subscriber (None at the subscriber's own broker), and where this broker forwarded it on that tree."""

    sub_id: str
    filter: Subscription
    origin: Hashable
    client: str | None
    bindings: dict[Tid, Hashable | None] = field(default_factory=dict)
    forwarded: dict[Tid, Hashable] = field(default_factory=dict)

    @property
    def is_local(self) -> bool:
        return self.client is not None


class PadresPublicationRoutingTable:
    def __init__(self) -> None:
        self._entries: dict[str, PadresPrtEntry] = {}

    def insert(self, e: PadresPrtEntry) -> None:
        self._entries[e.sub_id] = e

    def remove(self, sub_id: str) -> PadresPrtEntry | None:
        return self._entries.pop(sub_id, None)

    def get(self, sub_id: str) -> PadresPrtEntry | None:
        return self._entries.get(sub_id)

    def __contains__(self, sub_id: object) -> bool:
        return sub_id in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[PadresPrtEntry]:
        return iter(list(self._entries.values()))

    def bindings(self) -> int:
        return sum(len(e.bindings) for e in self._entries.values())


__all__ = ["PadresPrtEntry", "PadresPublicationRoutingTable", "SrtEntry", "SubscriptionRoutingTable"]
