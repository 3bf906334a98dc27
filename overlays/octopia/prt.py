"""Publication Routing Table (PRT), OctopiA §7.

Cluster-level subscription broadcast stores every subscription of a cluster at every broker of that cluster, as
``{subscription, lasthop}``: the lasthop is the primary neighbour toward the subscriber (or the local
subscriber itself), so within the acyclic cluster a publication follows lasthops to each interested subscriber.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from p2pubsub.model import Absent, Subscription

from ..content import overlaps
from ..scot import BrokerId


@dataclass(frozen=True, slots=True)
class PrtEntry:
    sub_id: str
    filter: Subscription
    lasthop: BrokerId | None  # None: a local subscriber
    client: str | None = None


class PublicationRoutingTable:
    def __init__(self) -> None:
        self._entries: dict[str, PrtEntry] = {}

    def insert(self, entry: PrtEntry) -> None:
        self._entries[entry.sub_id] = entry

    def remove(self, sub_id: str) -> PrtEntry | None:
        return self._entries.pop(sub_id, None)

    def get(self, sub_id: str) -> PrtEntry | None:
        return self._entries.get(sub_id)

    def __contains__(self, sub_id: object) -> bool:
        return sub_id in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[PrtEntry]:
        return iter(self._entries.values())

    def matching(self, schema: str, values: Mapping[str, Any], absent: Absent) -> list[PrtEntry]:
        """getDistinctSubs' input: every entry whose subscription matches the publication."""
        return [e for e in self._entries.values() if e.filter.schema == schema and e.filter.matches(values, absent)]

    def any_overlapping(self, adv: Subscription, absent: Absent) -> bool:
        return any(overlaps(adv, e.filter, absent) for e in self._entries.values())


__all__ = ["PrtEntry", "PublicationRoutingTable"]
