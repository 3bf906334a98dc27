"""p2pubsub: peer-to-peer content-based publish/subscribe.

Subscriptions live in a distributed 2d-tree over a Kademlia DHT (Wei Li's thesis, seed 004); a second,
structured overlay mode (SCOT clusters with OctopiA routing, seed 000) lives in :mod:`overlays`.
"""

__version__ = "0.1.0"
