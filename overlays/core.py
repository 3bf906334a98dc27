"""What both routing cores share: counters for the evaluation, schema look-ups and client-command checks."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from p2pubsub.model import Absent, Schema, Subscription

from .content import advertisement_satisfiable
from .messages import ClientCommand, Neighbour, Phase, Rejected, Send, phase_of


@dataclass
class Counters:
    """Per-broker accounting (paper §10): inter-broker messages sent by phase and type, work and anomalies."""

    sent: Counter[Phase] = field(default_factory=Counter)
    sent_by_type: Counter[str] = field(default_factory=Counter)
    received_by_type: Counter[str] = field(default_factory=Counter)
    duplicates_discarded: int = 0  # e.g. PADRES advertisement flooding
    dropped: int = 0  # from a non-neighbour, or for state that is gone (documented per core)
    match_tests: int = 0  # subscription-vs-publication evaluations
    overlap_tests: int = 0  # advertisement-vs-subscription evaluations
    deliveries: int = 0
    rejected: int = 0
    dynamic_diversions: int = 0  # publication copies that left the static path (IDR / TID-D)


class CoreBase:
    """Schema handling, the Send helper that counts, and client-command validation."""

    def __init__(self, label: Neighbour, neighbours: Iterable[Neighbour], schemas: Mapping[str, Schema] | None):
        self.label = label
        self.neighbours: tuple[Neighbour, ...] = tuple(sorted(neighbours))
        self._neighbour_set = frozenset(self.neighbours)
        self.schemas = dict(schemas) if schemas is not None else None
        self.counters = Counters()

    def absent(self, schema: str) -> Absent:
        if self.schemas is None or schema not in self.schemas:
            return Absent.NO_MATCH
        return self.schemas[schema].absent

    def _send(self, out: list[Any], neighbour: Neighbour, message: Any) -> None:
        if neighbour not in self._neighbour_set:
            raise AssertionError(f"{self.label} tried to send {type(message).__name__} to non-neighbour {neighbour}")
        self.counters.sent[phase_of(message)] += 1
        self.counters.sent_by_type[type(message).__name__] += 1
        out.append(Send(neighbour, message))

    def _reject(self, out: list[Any], command: ClientCommand, code: str, reason: str) -> None:
        self.counters.rejected += 1
        out.append(Rejected(command, code, reason))

    def _filter_error(
        self, command: ClientCommand, flt: Subscription, *, advertisement: bool
    ) -> tuple[str, str] | None:
        if not isinstance(flt, Subscription):
            return "invalid_filter", "the filter must be a parsed p2pubsub.model.Subscription"
        if self.schemas is not None and flt.schema not in self.schemas:
            return "unknown_schema", f"schema {flt.schema!r} is not known at broker {self.label}"
        if advertisement and not advertisement_satisfiable(flt):
            return "unsatisfiable", "no publication can conform to this advertisement (an empty float range)"
        return None

    def _from_neighbour_ok(self, sender: Neighbour) -> bool:
        if sender in self._neighbour_set:
            return True
        self.counters.dropped += 1
        return False


__all__ = ["CoreBase", "Counters"]
