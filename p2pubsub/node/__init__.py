"""The node runtime: the asyncio adapters that carry the pure cores' actions to the network and back.

- `wire`: the one wire format of peer messages (cbor2): registry of message classes, versioned, size-bounded.
- `transport`: `PeerTransport`, reliable FIFO delivery of peer messages over the DHT's UDP socket.
"""
