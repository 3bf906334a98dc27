"""The node runtime: the asyncio adapters that carry the pure cores' actions to the network and back.

- `wire`: the one wire format of peer messages (cbor2): registry of message classes, versioned, size-bounded.
- `transport`: `PeerTransport`, reliable FIFO delivery of peer messages over the DHT's UDP socket.
- `dht`: the kademlia library extended by subclassing (shared socket, tolerant failure detection, no value store).
- `neighbourhood`: which node is responsible for a key, next hops, the resolution cache.
- `messages`: node-level messages (routing envelopes, multicast, joins, hand-offs, schema store).
- `schemas`: the schema store of the node responsible for a schema's key.
- `member`: `DhtMember`, what every DHT member shares (life cycle, joins, schema requests, work queue); the
  SCOT node's `KeyedPeer` is one too.
- `runtime`: `Node`, the pub/sub core driven by asyncio over all of the above.
"""
