"""What a SCOT node needs beyond a DHT node's configuration (:class:`p2pubsub.node.config.NodeConfig`)."""

from __future__ import annotations

from dataclasses import dataclass

from .definition import OverlayDefinition, check_overlay_name


@dataclass(frozen=True)
class ScotConfig:
    """``name``: the overlay to join. ``definition``: what to store under it if nobody has (a node that joins an
    existing overlay may leave it None); it must equal the stored one if given. ``routing`` (``octopia`` or
    ``padres``, the command line's ``--overlay scot|padres``) must match the stored definition's.

    Leases: a slot is held for ``lease`` seconds past each successful renewal, renewed every ``lease / 3``; a
    standby node tries to claim a slot every ``standby_interval`` (default ``lease / 2``), and a broker looks its
    neighbours up in the directory every ``check_interval`` (default ``lease / 2``). A crashed holder's slot is
    therefore taken over within about ``lease + standby_interval`` (plus request time) of its last renewal.
    """

    name: str
    definition: OverlayDefinition | None = None
    routing: str | None = None  # None: whatever the stored definition says
    lease: float = 10.0
    standby_interval: float | None = None
    check_interval: float | None = None
    replicas: int = 3  # copies of every slot record (the responsible node and the next closest)
    ack_timeout: float = 1.0  # how long a slot change waits for its replicas' acknowledgements
    max_overlay_wait: float = 10.0  # a node without a definition waits this long for one to appear

    def __post_init__(self) -> None:
        check_overlay_name(self.name)
        if not self.lease > 0.1:
            raise ValueError(f"lease must exceed 0.1 s, got {self.lease}")
        if self.replicas < 1:
            raise ValueError("replicas must be at least 1")
        if self.routing is not None and self.routing not in ("octopia", "padres"):
            raise ValueError(f"routing must be octopia or padres, got {self.routing!r}")
        if self.definition is not None and self.routing is not None and self.definition.routing != self.routing:
            raise ValueError(f"the definition routes with {self.definition.routing}, not {self.routing}")

    @property
    def renew_interval(self) -> float:
        return self.lease / 3

    @property
    def standby_every(self) -> float:
        return self.standby_interval if self.standby_interval is not None else self.lease / 2

    @property
    def check_every(self) -> float:
        return self.check_interval if self.check_interval is not None else self.lease / 2


__all__ = ["ScotConfig"]
