"""PADRES-style baseline: advertisement flooding with TIDs, reverse-path subscriptions, TID-S / TID-D routing."""

from .broker import PadresBroker
from .messages import Tid, TidAdvertisement, TidPublication, TidSubscription, TidUnadvertisement, TidUnsubscription
from .tables import PadresPrtEntry, PadresPublicationRoutingTable, SrtEntry, SubscriptionRoutingTable

__all__ = [
    "PadresBroker",
    "PadresPrtEntry",
    "PadresPublicationRoutingTable",
    "SrtEntry",
    "SubscriptionRoutingTable",
    "Tid",
    "TidAdvertisement",
    "TidPublication",
    "TidSubscription",
    "TidUnadvertisement",
    "TidUnsubscription",
]
