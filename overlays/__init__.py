"""Structured broker overlays: SCOT with OctopiA routing, and a PADRES-style baseline (pure cores).

See ``overlays/README.md`` for the runtime contract (what to feed a core, what to do with its actions).
"""

from .content import conforms, overlaps
from .lst import CongestionConfig, LinkStatusTable
from .messages import (
    Advertise,
    Deliver,
    FromNeighbour,
    LinkSample,
    LinkStats,
    Phase,
    Publication,
    Publish,
    Rejected,
    Send,
    Subscribe,
    TableSizes,
    Unadvertise,
    Unsubscribe,
)
from .octopia import OctopiaBroker
from .padres import PadresBroker
from .scot import ALink, BrokerId, ILink, Scot, ScotError

__all__ = [
    "ALink",
    "Advertise",
    "BrokerId",
    "CongestionConfig",
    "Deliver",
    "FromNeighbour",
    "ILink",
    "LinkSample",
    "LinkStats",
    "LinkStatusTable",
    "OctopiaBroker",
    "PadresBroker",
    "Phase",
    "Publication",
    "Publish",
    "Rejected",
    "Scot",
    "ScotError",
    "Send",
    "Subscribe",
    "TableSizes",
    "Unadvertise",
    "Unsubscribe",
    "conforms",
    "overlaps",
]
