"""Cluster Link Table (CLT), OctopiA §6 and §8.

One entry per advertisement known at this broker: at the publisher's host broker ``{advertisement, CIV_a^i,
lasthop = the publisher}``, at each secondary broker of the host region ``{advertisement, CIV_s^j, lasthop =
the host broker}``. Advertisements never travel further, so an advertisement tree has length 1 and the table
holds only the advertisements of this broker's own region.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from p2pubsub.model import Absent, Subscription

from ..content import overlaps
from ..scot import BrokerId
from .civ import Civ
from .messages import AdvUid


@dataclass(slots=True)
class CltEntry:
    uid: AdvUid
    filter: Subscription
    civ: Civ
    lasthop: BrokerId | None  # None: a local publisher (this is the host broker)
    publisher: str | None = None
    adv_id: str | None = None

    @property
    def is_local(self) -> bool:
        return self.lasthop is None


class ClusterLinkTable:
    def __init__(self) -> None:
        self._entries: dict[AdvUid, CltEntry] = {}

    def insert(self, entry: CltEntry) -> None:
        self._entries[entry.uid] = entry

    def remove(self, uid: AdvUid) -> CltEntry | None:
        return self._entries.pop(uid, None)

    def get(self, uid: AdvUid) -> CltEntry | None:
        return self._entries.get(uid)

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[CltEntry]:
        return iter(self._entries.values())

    def local(self, publisher: str) -> list[CltEntry]:
        return [e for e in self._entries.values() if e.lasthop is None and e.publisher == publisher]

    def secondary_overlapping(self, sub: Subscription, absent: Absent) -> list[CltEntry]:
        """Entries received from host brokers whose advertisement overlaps ``sub``."""
        return [e for e in self._entries.values() if e.lasthop is not None and overlaps(e.filter, sub, absent)]


__all__ = ["CltEntry", "ClusterLinkTable"]
