"""Protocol parameters of the 2d-tree. Every node of one network must use the same values."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TreeConfig:
    # RndLeafProbe / RndRegionProbe (thesis §3.3, §3.4.1, Table 4.1: max probe level 10)
    min_probe_level: int = 2
    max_probe_level: int = 10
    probe_p: float = 0.5
    # defaults for schemas that do not fix their own tree geometry (model.TreeOptions):
    # cut-off line y = x + c per attribute, c = cutoff_fraction * domain width (thesis §3.5)
    cutoff: bool = True
    cutoff_fraction: float = 0.25
    # corner-point widening (thesis §3.3): each point moves out by eps ~ U(0, widen_fraction * width], drawn per
    # piece, so that equal ranges become distinct points and splitting always separates them
    widen_fraction: float = 1e-4
    # a leaf this deep never splits again: a backstop against float exhaustion, far below any real depth
    max_level: int = 60
    # how long a tree node remembers an event it has matched (repeated probes are discarded), and how long the
    # subscriber's home remembers (event, subscription) pairs it has delivered
    seen_ttl: float = 120.0
    # messages for a tree node that exists but whose subscriptions are still in transfer wait this long
    pending_ttl: float = 60.0
    # subscriptions per TransferSub message (messages are size-bounded on the wire)
    transfer_chunk: int = 64
    # soft state (thesis §3.6 made explicit): homes renew every installed piece this often, and leaves drop a
    # piece whose lease ran out (its home is gone); None: no leases (the simulator's churn-free runs)
    lease_interval: float | None = None
    lease_ttl: float = 0.0  # 0: three lease intervals
    # a tree node that messages wait for this long, with no state and no replica here, was lost with every
    # replica: it is brought back (internal if its children exist, else an empty leaf that leases refill)
    lost_after: float = 5.0

    def __post_init__(self) -> None:
        if not 0 <= self.min_probe_level <= self.max_probe_level <= self.max_level:
            raise ValueError("need 0 <= min_probe_level <= max_probe_level <= max_level")
        if not 0.0 < self.probe_p <= 1.0:
            raise ValueError("probe_p must lie in (0, 1]")
        if not 0.0 < self.cutoff_fraction <= 1.0:
            raise ValueError("cutoff_fraction must lie in (0, 1]")
        if not 0.0 < self.widen_fraction < 0.01:
            raise ValueError("widen_fraction must lie in (0, 0.01)")
        if self.transfer_chunk < 1:
            raise ValueError("transfer_chunk must be positive")
        if self.lease_interval is not None and not self.lease_interval > 0:
            raise ValueError("lease_interval must be positive (or None: no leases)")
        if self.lease_ttl and self.lease_interval and self.lease_ttl <= 2 * self.lease_interval:
            raise ValueError("lease_ttl must exceed two lease intervals, or one late renewal expires a piece")

    @property
    def lease(self) -> float | None:
        """How long a piece lives at a leaf without renewal (None: forever)."""
        if self.lease_interval is None:
            return None
        return self.lease_ttl or 3 * self.lease_interval
