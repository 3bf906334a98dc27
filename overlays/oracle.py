"""The brute-force oracle: which subscriptions must receive a publication, decided without any routing.

A publication is accepted iff it conforms to a live advertisement of its publisher (else the broker must reject
it); it must then reach exactly the live subscriptions that match it — no miss, no false positive, no duplicate.
A subscription that matches a conforming publication necessarily overlaps that advertisement, so "only the
subscriptions overlapping an advertisement of the publisher are owed the publication" (PADRES' contract) is
built in. Exactness is owed once the advertisements and subscriptions a publication depends on have quiesced.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from p2pubsub.model import Absent, Schema, Subscription

from .content import advertisement_satisfiable, conforms
from .messages import Advertise, Publish, Subscribe, Unadvertise, Unsubscribe


@dataclass
class Oracle:
    schemas: Mapping[str, Schema]
    adverts: dict[tuple[str, str], Subscription] = field(default_factory=dict)
    subs: dict[str, Subscription] = field(default_factory=dict)
    owners: dict[str, str] = field(default_factory=dict)

    def absent(self, schema: str) -> Absent:
        s = self.schemas.get(schema)
        return s.absent if s is not None else Absent.NO_MATCH

    def apply(self, cmd: object) -> bool:
        """Mirror a client command; returns whether a broker must accept it."""
        match cmd:
            case Advertise():
                key = (cmd.client, cmd.adv_id)
                if key in self.adverts or cmd.filter.schema not in self.schemas:
                    return False
                if not advertisement_satisfiable(cmd.filter):
                    return False
                self.adverts[key] = cmd.filter
                return True
            case Unadvertise():
                return self.adverts.pop((cmd.client, cmd.adv_id), None) is not None
            case Subscribe():
                if cmd.sub_id in self.subs or cmd.filter.schema not in self.schemas:
                    return False
                self.subs[cmd.sub_id] = cmd.filter
                self.owners[cmd.sub_id] = cmd.client
                return True
            case Unsubscribe():
                if self.owners.get(cmd.sub_id) != cmd.client:
                    return False
                del self.subs[cmd.sub_id]
                del self.owners[cmd.sub_id]
                return True
            case Publish():
                return self.expected(cmd) is not None
        raise TypeError(f"not a client command: {cmd!r}")

    def expected(self, cmd: Publish) -> set[str] | None:
        """The subscriptions owed this publication, or None if a broker must reject it."""
        ev = cmd.event
        if not any(
            client == cmd.client and adv.schema == ev.schema and conforms(ev.values, adv)
            for (client, _), adv in self.adverts.items()
        ):
            return None
        absent = self.absent(ev.schema)
        return {sid for sid, s in self.subs.items() if s.schema == ev.schema and s.matches(ev.values, absent)}


def compare(
    expected: Mapping[tuple[str, str], set[str]], delivered: Mapping[tuple[str, str], set[str]],
    pubs: Iterable[tuple[str, str]],
) -> list[str]:
    """Human-readable differences (misses and false positives) per publication; empty when exact."""
    problems = []
    for key in pubs:
        want = expected.get(key, set())
        got = delivered.get(key, set())
        if want != got:
            problems.append(
                f"publication {key}: missed {sorted(want - got)}, false positives {sorted(got - want)}"
            )
    return problems


__all__ = ["Oracle", "compare"]
