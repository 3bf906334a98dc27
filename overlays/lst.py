"""Link Status Table and the congestion test, OctopiA §9.2, Eq. 3.

An output queue toward neighbour ℓ is *overloaded* when ``Q_ℓ · (1 + Q_in) / (1 + Q_out) > τ``, where Q_ℓ is
its length and Q_in / Q_out the publications that entered / left it in the last window t_w; the ratio is the
congestion element CE. The paper's PADRES baseline uses the same test "for a fair comparison", so both cores
share this table.

The table holds the last sample per neighbour, fed by the runtime (which owns the transport's queues) once per
t_w. A sample older than ``stale_after`` (default 2·t_w) no longer counts: a neighbour with no fresh sample is
congestion-free with Q_ℓ = 0, so a runtime that stops reporting cannot pin traffic away from a link forever.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .messages import LinkSample, Neighbour


@dataclass(frozen=True, slots=True)
class CongestionConfig:
    """τ (threshold of Eq. 3) and t_w (window, seconds). Paper §10 used τ = 10 and t_w = 50 ms."""

    tau: float = 10.0
    t_w: float = 0.05
    stale_after: float | None = None  # default 2·t_w

    def __post_init__(self) -> None:
        if not self.tau >= 0:
            raise ValueError(f"tau must be >= 0, got {self.tau}")
        if not self.t_w > 0:
            raise ValueError(f"t_w must be > 0, got {self.t_w}")

    @property
    def horizon(self) -> float:
        return self.stale_after if self.stale_after is not None else 2 * self.t_w


@dataclass(frozen=True, slots=True)
class LinkStatus:
    queue_length: int
    q_in: int
    q_out: int
    at: float

    @property
    def congestion_element(self) -> float:
        return (1 + self.q_in) / (1 + self.q_out)


class LinkStatusTable:
    """LST: the latest :class:`LinkSample` per neighbour, and Eq. 3 over it."""

    def __init__(self, config: CongestionConfig | None = None) -> None:
        self.config = config or CongestionConfig()
        self._status: dict[Neighbour, LinkStatus] = {}
        self._now = 0.0

    def update(self, samples: Iterable[LinkSample], now: float) -> None:
        self._now = max(self._now, now)
        for s in samples:
            if s.queue_length < 0 or s.q_in < 0 or s.q_out < 0:
                raise ValueError(f"negative link statistics {s}")
            self._status[s.neighbour] = LinkStatus(s.queue_length, s.q_in, s.q_out, now)

    def advance(self, now: float) -> None:
        """Tell the table the time (the core calls this on every input)."""
        self._now = max(self._now, now)

    def status(self, n: Neighbour) -> LinkStatus | None:
        st = self._status.get(n)
        if st is None or self._now - st.at > self.config.horizon:
            return None
        return st

    def queue_length(self, n: Neighbour) -> int:
        st = self.status(n)
        return 0 if st is None else st.queue_length

    def congestion_element(self, n: Neighbour) -> float:
        st = self.status(n)
        return 1.0 if st is None else st.congestion_element

    def overloaded(self, n: Neighbour) -> bool:
        """Eq. 3: Q_ℓ · CE > τ."""
        st = self.status(n)
        return st is not None and st.queue_length * st.congestion_element > self.config.tau

    def least_loaded(self, candidates: Sequence[Neighbour]) -> Neighbour:
        """The candidate with the shortest queue; ties go to the earliest candidate (callers pass them sorted)."""
        if not candidates:
            raise ValueError("no candidate link")
        best = min(range(len(candidates)), key=lambda i: (self.queue_length(candidates[i]), i))
        return candidates[best]

    def __len__(self) -> int:
        return len(self._status)


__all__ = ["CongestionConfig", "LinkStatus", "LinkStatusTable"]
