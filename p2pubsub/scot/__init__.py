"""SCOT overlay mode: OctopiA (and the PADRES-style baseline) broker cores run on real p2pubsub nodes.

Nodes take broker positions of a named SCOT through the DHT and run the pure cores of ``overlays/`` there.

- :mod:`.definition`: the overlay definition stored under its name (compare-and-set), placement functions
  (cluster from node id, slot order, keys), tenure-naming identifiers.
- :mod:`.store`: what a responsible DHT node keeps: overlay definitions, slot leases (claims that cannot be won
  twice, renewals, releases, epochs).
- :mod:`.keyed`: :class:`~.keyed.KeyedPeer`, the DHT side (membership, keyed requests, replication, hand-offs).
- :mod:`.broker`: :class:`~.broker.Broker`, one tenure of a position: core, links to the SCOT neighbours.
- :mod:`.repair`: snapshots and purges that bring a position's new holder and its neighbours into agreement.
- :mod:`.echo`: termination detection: when a command is installed.
- :mod:`.runtime`: :class:`~.runtime.ScotNode`, the node: slots, standby, client commands.
- :mod:`.service`: :class:`~.service.ScotApiService`, the REST API's view of a node (plus advertisements).
- :mod:`.messages`, :mod:`.wire`: peer messages (tags 40–53) and the registry with the cores' messages (64–81).
- :mod:`.main`: ``serve_scot``, what ``p2pubsub node --overlay scot|padres`` runs.
"""

from .config import ScotConfig
from .definition import DefinitionError, OverlayDefinition, cluster_of
from .errors import CommandRejected, NodeError
from .runtime import ScotNode

__all__ = ["CommandRejected", "DefinitionError", "NodeError", "OverlayDefinition", "ScotConfig", "ScotNode",
           "cluster_of"]
