"""OctopiA on a clustered SCOT (paper §5–§9): CLT, PRT with CIV contexts, SPR and IDR routing."""

from .broker import OctopiaBroker
from .civ import Civ
from .clt import CltEntry, ClusterLinkTable
from .messages import (
    Advertisement,
    AdvUid,
    CivSet,
    CivUnset,
    PublicationRoute,
    SubscriptionBroadcast,
    Unadvertisement,
    UnsubscriptionBroadcast,
)
from .prt import PrtEntry, PublicationRoutingTable

__all__ = [
    "AdvUid",
    "Advertisement",
    "Civ",
    "CivSet",
    "CivUnset",
    "CltEntry",
    "ClusterLinkTable",
    "OctopiaBroker",
    "PrtEntry",
    "PublicationRoute",
    "PublicationRoutingTable",
    "SubscriptionBroadcast",
    "Unadvertisement",
    "UnsubscriptionBroadcast",
]
