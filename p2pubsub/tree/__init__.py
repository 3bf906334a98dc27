"""The distributed 2d-tree of Wei Li's thesis (chapter 3) as a pure protocol core: messages in, actions out.

No asyncio, sockets, cbor2 or clock reads here: time (``now``) and randomness (``random.Random``) are
parameters, so the same core runs inside the real node, the simulator and the in-memory test harness.
"""

from .config import TreeConfig
from .core import PubSubCore
from .messages import (
    TREE_MESSAGES,
    Action,
    AdoptNode,
    Deliver,
    Dropped,
    EventDelivery,
    InsertSub,
    LeafUpdate,
    Message,
    NodeInfo,
    NodeQuery,
    ProbePub,
    ProbeSub,
    PubEvent,
    Ready,
    Removed,
    Replicate,
    ReplicaUpdate,
    SendHost,
    SendTree,
    SubInstalled,
    TransferSub,
    Unsubscribe,
    Unsubscribed,
)
from .pieces import CutOff, SubEntry
from .space import Area, Interval, Space, Target, point_of, target_area
from .treeid import TreeId

__all__ = [
    "TREE_MESSAGES",
    "Action",
    "AdoptNode",
    "Area",
    "CutOff",
    "Deliver",
    "Dropped",
    "EventDelivery",
    "InsertSub",
    "Interval",
    "LeafUpdate",
    "Message",
    "NodeInfo",
    "NodeQuery",
    "ProbePub",
    "ProbeSub",
    "PubEvent",
    "PubSubCore",
    "Ready",
    "Removed",
    "ReplicaUpdate",
    "Replicate",
    "SendHost",
    "SendTree",
    "Space",
    "SubEntry",
    "SubInstalled",
    "Target",
    "TransferSub",
    "TreeConfig",
    "TreeId",
    "Unsubscribe",
    "Unsubscribed",
    "point_of",
    "target_area",
]
