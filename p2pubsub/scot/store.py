"""What the DHT node responsible for a key keeps for SCOT overlays: overlay definitions and slot leases (pure).

Overlay definitions are compare-and-set like schemas (``created`` / ``identical`` / ``conflict``).

A *slot* is one broker position ``BrokerId(region, cluster)`` of an overlay. Its record names the holder (a
node's ``(id, ip, port)``), the *epoch* of the holder's tenure and when the lease ends. The node responsible for
the slot's key decides every claim alone, so a claim cannot be won twice:

* a fresh claim (``epoch == 0``) is granted iff the slot is free: never held, released, or its lease ended; the
  grant opens a new tenure, ``epoch = previous epoch + 1`` (also when the claimant held it before);
* a renewal (``epoch == e > 0``) succeeds iff the claimant holds tenure ``e`` now (lease not ended): the lease
  is extended by ``lease`` seconds from now, the epoch stays;
* a release by the holder of tenure ``e`` frees the slot at once (the epoch is kept, so the next tenure is e+1).

Every record change bumps ``version``; replicas adopt a copy only if it is newer, so a release is never undone by
an older copy of the same tenure. Times are this node's loop clock; a replica receives the *remaining* lease and
adds its own now, so its expiry is never earlier than the primary's.
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

Host = Hashable  # (node_id: bytes, ip: str, port: int)

GRANTED, RENEWED, TAKEN, LOST, RELEASED, UNKNOWN = "granted", "renewed", "taken", "lost", "released", "unknown"
MIN_LEASE, MAX_LEASE = 0.05, 3600.0


@dataclass(slots=True)
class SlotRecord:
    holder: Host | None  # None: free (released or never held)
    epoch: int  # the current (or last) tenure; 0: never held
    expires: float  # loop time at this node when the holder's lease ends
    version: int = 0

    def live_holder(self, now: float) -> Host | None:
        return self.holder if self.holder is not None and now < self.expires else None

    def to_doc(self, now: float) -> str:
        holder = None if self.holder is None else [self.holder[0].hex(), self.holder[1], self.holder[2]]
        return json.dumps({"holder": holder, "epoch": self.epoch, "remaining": max(0.0, self.expires - now),
                           "version": self.version}, separators=(",", ":"))

    @classmethod
    def from_doc(cls, doc: str, now: float) -> SlotRecord:
        d = json.loads(doc)
        h = d["holder"]
        holder = None if h is None else (bytes.fromhex(h[0]), str(h[1]), int(h[2]))
        return cls(holder, int(d["epoch"]), now + float(d["remaining"]), int(d["version"]))


class SlotStore:
    """Slot records this node keeps (as the responsible node, or as a replica holder)."""

    def __init__(self) -> None:
        self.records: dict[str, SlotRecord] = {}

    def claim(self, name: str, claimant: Host, epoch: int, lease: float, now: float) -> tuple[str, SlotRecord]:
        """``(status, record)``: granted (a new tenure), renewed, taken (held by another: record names it) or
        lost (a renewal of a tenure that is over)."""
        lease = min(max(lease, MIN_LEASE), MAX_LEASE)
        rec = self.records.get(name)
        holder = rec.live_holder(now) if rec is not None else None
        if epoch > 0:
            if rec is None or holder is None or holder[0] != claimant[0] or rec.epoch != epoch:
                return LOST, rec if rec is not None else SlotRecord(None, 0, now)
            rec.holder = claimant  # same node; its address may have changed
            rec.expires = now + lease
            rec.version += 1
            return RENEWED, rec
        if holder is not None:
            return TAKEN, rec
        prev = rec.epoch if rec is not None else 0
        version = rec.version + 1 if rec is not None else 1
        rec = self.records[name] = SlotRecord(claimant, prev + 1, now + lease, version)
        return GRANTED, rec

    def release(self, name: str, holder_id: bytes, epoch: int, now: float) -> tuple[str, SlotRecord | None]:
        rec = self.records.get(name)
        if rec is None or rec.holder is None or rec.holder[0] != holder_id or rec.epoch != epoch:
            return UNKNOWN, rec
        rec.holder = None
        rec.expires = now
        rec.version += 1
        return RELEASED, rec

    def get(self, name: str) -> SlotRecord | None:
        return self.records.get(name)

    def adopt(self, name: str, doc: str, now: float) -> bool:
        """Take a copy from the responsible node (replication, hand-off) if it is newer than ours."""
        incoming = SlotRecord.from_doc(doc, now)
        rec = self.records.get(name)
        if rec is not None and rec.version >= incoming.version:
            return False
        self.records[name] = incoming
        return True


class OverlayStore:
    """Overlay definitions (canonical JSON) by name: compare-and-set."""

    def __init__(self) -> None:
        self.docs: dict[str, str] = {}

    def put(self, name: str, doc: str) -> tuple[str, str]:
        stored = self.docs.get(name)
        if stored is None:
            self.docs[name] = doc
            return "created", doc
        return ("identical" if stored == doc else "conflict"), stored

    def get(self, name: str) -> str | None:
        return self.docs.get(name)

    def adopt(self, name: str, doc: str) -> None:
        self.docs.setdefault(name, doc)


def record_view(rec: SlotRecord | None, now: float) -> dict[str, Any]:
    if rec is None:
        return {"holder": None, "epoch": 0, "remaining": 0.0}
    holder = rec.live_holder(now)
    return {"holder": holder, "epoch": rec.epoch, "remaining": max(0.0, rec.expires - now) if holder else 0.0}


__all__ = ["GRANTED", "LOST", "RELEASED", "RENEWED", "TAKEN", "UNKNOWN", "OverlayStore", "SlotRecord", "SlotStore"]
