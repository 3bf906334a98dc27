"""The Kademlia DHT under the node, extended by subclassing the ``kademlia`` library (never forked).

What we change, and why (kademlia 2.2.3 / rpcudp 5.0.1):

* one UDP port per node: datagrams with the peer transport's magic byte go to :class:`PeerTransport`, the
  rest to kademlia;
* malformed datagrams are dropped and counted, never left to raise in an orphaned task;
* a contact is dropped only after ``misses`` consecutive unanswered calls, not after one;
* requests time out after ``rpc_timeout`` (not a fixed 5 s) and a find-node or ping is retried once;
* kademlia's value store is unused and refused: it is unauthenticated and last-writer-wins, and
  ``welcome_if_new`` re-hashes digests when handing values over; schemas and tree nodes travel as our own
  acknowledged messages instead;
* the node id comes from an injected RNG, not the global ``random``; bootstrap accepts host names and fails
  loudly when nobody answers;
* a bucket stays fresh while any of its contacts is heard from (Kademlia §2.2 updates a bucket on every message;
  the library only on new contacts, so in a settled network every bucket looked lonely every hour and each node
  ran one lookup per bucket hourly: a fifth of a 1000-node simulation's datagrams);
* the routing table counts its changes, so responsibility decisions can be cached between changes;
* a node that said goodbye is not taken back into the table for ``DEPARTED_S`` (a lookup while it drains its
  hand-offs would still find it answering, and route its keys back to it), unless it joins again.
"""

from __future__ import annotations

import asyncio
import heapq
import ipaddress
import logging
import random
from collections.abc import Callable

from kademlia.crawling import NodeSpiderCrawl
from kademlia.network import Server
from kademlia.node import Node as Contact
from kademlia.protocol import KademliaProtocol
from kademlia.routing import RoutingTable

log = logging.getLogger(__name__)

REFRESH_S = 3600.0  # the library's refresh period: a bucket not heard from for this long gets a lookup
DEPARTED_S = 300.0  # how long a node that said goodbye stays out of the routing table (unless it joins again)


class BootstrapError(RuntimeError):
    pass


def _first(pair: tuple) -> int:
    return pair[0]


def _block(bucket) -> tuple[int, int, list[tuple[int, Contact]]] | None:
    """A bucket's contacts as ``(start, p, pairs)``: their ids agree above bit ``p`` (``id >> p == start``)."""
    pairs = [(c.long_id, c) for c in bucket.nodes.values()]
    if not pairs:
        return None
    ids = [cid for cid, _ in pairs]
    p = (min(ids) ^ max(ids)).bit_length()
    return ids[0] >> p, p, pairs


class CountingRoutingTable(RoutingTable):
    """kademlia's routing table with a change counter, and a short log of the contacts added, so that a view of
    the table can catch up by adding them instead of copying the whole table at every change; and a
    `find_neighbors` that returns the closest contacts."""

    LOG = 256  # changes remembered

    def find_neighbors(self, node: Contact, k: int | None = None, exclude: Contact | None = None) -> list[Contact]:
        """The ``k`` contacts closest to ``node`` by XOR, from the whole table, nearest first.

        The library's walks the buckets outward from the target's by index and stops at the first ``k`` it meets,
        which are not the closest; and its walk ends early once the buckets on one side run out (it only turns
        left on alternate steps), so a node whose target's neighbourhood is empty in its table may answer with
        none at all. In thesis-5000 one joining node in twenty learned fewer than ten nodes that way: its own
        lookup stalled at a bootstrap node that answered nothing. As the library's, it marks the target's bucket
        as looked up into.

        Every FIND_NODE a node answers asks this, so it visits buckets in order of the least distance any of
        their contacts can have (their ids share a prefix: XOR distance to the target is at least the prefixes'),
        and stops once no bucket left can beat the ``k``-th best: a scan of the whole table was half of a
        5000-node simulation's time during its hourly refresh lookups."""
        k = k or self.ksize
        self.buckets[self.get_bucket_for(node)].touch_last_updated()
        target = node.long_id
        blocks = sorted(((((start ^ (target >> p)) << p), pairs) for start, p, pairs in self._blocks()),
                        key=_first)
        # max-heap of the k best so far: (negated distance, tie-break, contact); ids are unique but for the
        # library's bucket-boundary slip (an id equal to a split point may be filed twice)
        best: list[tuple[int, int, Contact]] = []
        n = 0
        for bound, pairs in blocks:
            if len(best) == k and bound > -best[0][0]:
                break
            for cid, c in pairs:
                if cid == target or (exclude is not None and c.ip == exclude.ip and c.port == exclude.port):
                    continue
                d = cid ^ target
                n -= 1
                if len(best) < k:
                    heapq.heappush(best, (-d, n, c))
                elif d < -best[0][0]:
                    heapq.heapreplace(best, (-d, n, c))
        best.sort(reverse=True)
        return [c for _, _, c in best]

    def _blocks(self) -> list[tuple[int, int, list[tuple[int, Contact]]]]:
        """Per non-empty bucket: its contacts' common id prefix (``start``, ``p`` low bits free) and its
        ``(id, contact)`` pairs. Kept per bucket until it changes: while lookups add contacts every few
        messages, rebuilding them all at each change cost a third of a 5000-node run's refresh lookups."""
        if getattr(self, "_blocks_version", None) == self.version:
            return self._blocks_list
        cache = self._bucket_blocks
        out = []
        for b in self.buckets:
            entry = cache.get(id(b))
            if entry is None or entry[0] is not b or entry[1] != len(b.nodes):
                entry = (b, len(b.nodes), _block(b))  # the bucket itself kept: its id() is not reused
                cache[id(b)] = entry
            if entry[2] is not None:
                out.append(entry[2])
        if len(cache) > 2 * len(self.buckets):  # buckets that split are gone
            live = {id(b) for b in self.buckets}
            for key in [key for key in cache if key not in live]:
                del cache[key]
        self._blocks_version, self._blocks_list = self.version, out
        return out

    def flush(self) -> None:
        super().flush()
        self._bucket_blocks: dict[int, tuple] = {}  # id(bucket) -> (bucket, size, block): see `_blocks`
        self.version = getattr(self, "version", 0) + 1
        self._log: list[tuple[int, Contact | None]] = [(self.version, None)]

    def add_contact(self, node: Contact) -> None:
        super().add_contact(node)
        if self.holds(node):  # not when it only went to a full bucket's replacement cache
            self._change(node)

    def holds(self, node: Contact) -> bool:
        return node.id in self.buckets[self.get_bucket_for(node)].nodes

    def remove_contact(self, node: Contact) -> None:
        # a replacement may take its place: same size, other contacts
        self._bucket_blocks.pop(id(self.buckets[self.get_bucket_for(node)]), None)
        super().remove_contact(node)
        self._change(None)  # a removal (which may promote a replacement): views start over

    def _change(self, added: Contact | None) -> None:
        self.version += 1
        self._log.append((self.version, added))
        if len(self._log) > 2 * self.LOG:
            del self._log[: self.LOG]

    def added_since(self, version: int) -> list[tuple[int, tuple[bytes, str, int]]] | None:
        """`contact_pairs` of the contacts added after ``version``, or None if anything else changed since (or
        the log no longer reaches back that far): then a view must copy the whole table."""
        log = self._log
        if not log or log[0][0] > version + 1:
            return None
        out = []
        for v, node in reversed(log):
            if v <= version:
                break
            if node is None:
                return None
            out.append(_pair(node))
        return out

    def lonely_buckets(self) -> list:
        """The buckets due for a refresh lookup: idle for an hour by the library's measure (no contact added, no
        lookup aimed into it) and none of whose contacts the peer transport heard from (DATA or ACK) within the hour:
        an answer proves the contact alive, the freshness BitTorrent's BEP 5 uses."""
        lonely = super().lonely_buckets()
        heard = getattr(self.protocol, "heard_from_since", None)
        if not lonely or heard is None:
            return lonely
        return [b for b in lonely if not heard(b.nodes.values(), REFRESH_S)]

    def contacts(self) -> list[Contact]:
        return [n for bucket in self.buckets for n in bucket.nodes.values()]

    def contact_pairs(self) -> list[tuple[int, tuple[bytes, str, int]]]:
        """``(id as int, (id, ip, port))`` of every contact, built once per contact (the neighbourhood's view)."""
        return [_pair(n) for bucket in self.buckets for n in bucket.nodes.values()]


def _pair(n: Contact) -> tuple[int, tuple[bytes, str, int]]:
    pair = n.__dict__.get("_pair")
    if pair is None:
        pair = n._pair = (n.long_id, (n.id, n.ip, n.port))
    return pair


class PubSubProtocol(KademliaProtocol):
    def __init__(self, source_node, storage, ksize, *, peers, on_contact: Callable[[Contact], None],
                 rpc_timeout: float, misses: int) -> None:
        super().__init__(source_node, storage, ksize)
        self.router = CountingRoutingTable(self, ksize, source_node)
        self._wait_timeout = rpc_timeout
        self.peers = peers
        self.on_contact = on_contact
        self.misses_allowed = misses
        self.misses: dict[bytes, int] = {}
        self.garbage = 0
        self._tasks: set[asyncio.Future] = set()  # keep datagram tasks referenced until done
        self.departed: dict[bytes, float] = {}  # node id -> when it said goodbye (loop time)

    # --- the shared socket ---

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self.peers.attach(transport)

    def datagram_received(self, data: bytes, addr) -> None:
        if self.peers.datagram_received(data, addr):
            return
        if len(data) < 22 or data[:1] not in (b"\x00", b"\x01"):
            self.garbage += 1
            return
        task = asyncio.ensure_future(self._solve_safely(data, addr))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _solve_safely(self, data: bytes, addr) -> None:
        try:
            await self._solve_datagram(data, addr)
        except Exception:  # umsgpack errors and the like: a bad datagram, not a bad node
            self.garbage += 1

    async def _accept_request(self, msg_id, data, address) -> None:
        try:
            await super()._accept_request(msg_id, data, address)
        except Exception:  # wrong argument counts, malformed packets
            self.garbage += 1

    # --- no value store ---

    def rpc_store(self, sender, nodeid, key, value) -> bool:
        return False

    def rpc_find_value(self, sender, nodeid, key):
        return self.rpc_find_node(sender, nodeid, key)

    def rpc_find_node(self, sender, nodeid, key):
        """The library's, without its per-request log line (it formats the asker's id even when not logged) and
        its per-contact generator: the busiest handler in a refresh storm."""
        source = Contact(nodeid, sender[0], sender[1])
        self.welcome_if_new(source)
        return [(c.id, c.ip, c.port) for c in self.router.find_neighbors(Contact(key), exclude=source)]

    def welcome_if_new(self, node: Contact) -> None:
        if not isinstance(node.id, bytes) or len(node.id) != 20:
            self.garbage += 1
            return
        if not self.router.is_new_node(node):
            return
        if self.departed and node.id in self.departed:
            if asyncio.get_running_loop().time() - self.departed[node.id] < DEPARTED_S:
                return
            del self.departed[node.id]
        self.router.add_contact(node)
        if self.router.holds(node):  # a full bucket keeps it as a replacement only: nothing changed
            self.on_contact(node)

    # --- tolerant failure detection ---

    async def call_find_node(self, node_to_ask, node_to_find):
        result = await self.find_node((node_to_ask.ip, node_to_ask.port), self.source_node.id, node_to_find.id)
        if not result[0]:
            result = await self.find_node((node_to_ask.ip, node_to_ask.port), self.source_node.id, node_to_find.id)
        return self.handle_call_response(result, node_to_ask)

    async def call_ping(self, node_to_ask):
        result = await self.ping((node_to_ask.ip, node_to_ask.port), self.source_node.id)
        if not result[0]:
            result = await self.ping((node_to_ask.ip, node_to_ask.port), self.source_node.id)
        return self.handle_call_response(result, node_to_ask)

    def heard_from_since(self, contacts, span: float) -> bool:
        """Whether any of ``contacts`` was heard from within the last ``span`` seconds (loop time)."""
        since = self.peers.loop.time() - span
        heard = self.peers.heard_since
        return any(heard((c.ip, c.port), since) for c in contacts)

    def handle_call_response(self, result, node):
        if result[0]:
            self.misses.pop(node.id, None)
            self.welcome_if_new(node)
            return result
        missed = self.misses.get(node.id, 0) + 1
        if missed >= self.misses_allowed:
            self.misses.pop(node.id, None)
            self.router.remove_contact(node)
        else:
            self.misses[node.id] = missed
        return result

    def depart(self, node_id: bytes) -> None:
        """The node said goodbye: out of the table, and kept out for a while (see ``DEPARTED_S``)."""
        self.departed[node_id] = asyncio.get_running_loop().time()

    def rejoin(self, node_id: bytes) -> None:
        self.departed.pop(node_id, None)

    def contact_failed(self, node_id: bytes, ip: str, port: int) -> None:
        """The peer transport gave up on this contact: it is gone (its retries already spanned seconds)."""
        self.router.remove_contact(Contact(node_id, ip, port))


class DhtServer(Server):
    protocol_class = PubSubProtocol

    def __init__(self, *, node_id: bytes, peers, on_contact: Callable[[Contact], None], ksize: int = 20,
                 alpha: int = 3, rpc_timeout: float = 2.0, misses: int = 2) -> None:
        super().__init__(ksize=ksize, alpha=alpha, node_id=node_id)
        self._peers = peers
        self._on_contact = on_contact
        self._rpc_timeout = rpc_timeout
        self._misses = misses

    def _create_protocol(self) -> PubSubProtocol:
        return self.protocol_class(self.node, self.storage, self.ksize, peers=self._peers,
                                   on_contact=self._on_contact, rpc_timeout=self._rpc_timeout,
                                   misses=self._misses)

    async def bootstrap(self, addrs: list[tuple[str, int]]) -> list[Contact]:
        """Join through ``addrs`` (host names allowed); raises BootstrapError if none of them answers."""
        resolved = [await resolve(host, port) for host, port in addrs]
        gathered = await asyncio.gather(*(self.bootstrap_node(a) for a in resolved))
        nodes = [n for n in gathered if n is not None]
        if not nodes:
            raise BootstrapError(f"no bootstrap node answered: {', '.join(f'{h}:{p}' for h, p in addrs)}")
        for n in nodes:
            self.protocol.welcome_if_new(n)
        spider = NodeSpiderCrawl(self.protocol, self.node, nodes, self.ksize, self.alpha)
        return await spider.find()

    def contacts(self) -> list[Contact]:
        return self.protocol.router.contacts()

    def contact_pairs(self) -> list[tuple[int, tuple[bytes, str, int]]]:
        return self.protocol.router.contact_pairs()

    def added_since(self, version: int) -> list[tuple[int, tuple[bytes, str, int]]] | None:
        return self.protocol.router.added_since(version)

    @property
    def version(self) -> int:
        return self.protocol.router.version


async def resolve(host: str, port: int) -> tuple[str, int]:
    """An IP address for a bootstrap host (kademlia itself accepts only IP literals)."""
    try:
        ipaddress.ip_address(host)
        return host, port
    except ValueError:
        pass
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=2)  # SOCK_DGRAM
    if not infos:
        raise BootstrapError(f"cannot resolve {host}")
    return infos[0][4][0], port


def new_node_id(rng: random.Random) -> bytes:
    return rng.getrandbits(160).to_bytes(20, "big")


def contact_tuple(c: Contact) -> tuple[bytes, str, int]:
    return (c.id, c.ip, c.port)


__all__ = ["BootstrapError", "Contact", "DhtServer", "PubSubProtocol", "contact_tuple", "new_node_id", "resolve"]
