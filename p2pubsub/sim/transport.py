"""In-memory datagram transport: the asyncio `DatagramTransport` that `SimNetwork` hands to protocols."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from p2pubsub.sim.network import SimNetwork

__all__ = ["SimDatagramTransport"]

Address = tuple[str, int]


class SimDatagramTransport(asyncio.DatagramTransport):
    """A datagram endpoint bound to `(ip, port)` of one simulated host.

    Mirrors asyncio's selector datagram transport where protocols can tell the difference: bytes-like check,
    empty datagrams ignored, a connected endpoint (`remote_addr`) only sends to its peer, `close()` calls
    `connection_lost(None)` on the next loop iteration, sends after close are silently dropped.
    """

    def __init__(
        self,
        network: SimNetwork,
        host: int,
        sockname: Address,
        protocol: asyncio.BaseProtocol,
        peername: Address | None = None,
    ) -> None:
        super().__init__(extra={"sockname": sockname, "peername": peername, "socket": None})
        self._network = network
        self.host = host
        self.sockname = sockname
        self.peername = peername
        self._protocol = protocol
        self._closing = False

    def sendto(self, data: bytes | bytearray | memoryview, addr: Address | None = None) -> None:
        """Send one datagram to `addr` (or to the connected peer)."""
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"data argument must be a bytes-like object, not {type(data).__name__!r}")
        if not data:
            return
        if self.peername is not None:
            if addr is not None and tuple(addr) != self.peername:
                raise ValueError(f"Invalid address: must be None or {self.peername}")
            addr = self.peername
        elif addr is None:
            raise ValueError("sendto() needs an address on an unconnected endpoint")
        if self._closing:
            return
        # Copy mutable buffers, as a real socket would have sent their contents at this instant.
        self._network._send(self, data if type(data) is bytes else bytes(data), addr)

    def close(self) -> None:
        """Release the port; the protocol's `connection_lost(None)` follows on the next loop iteration."""
        if self._closing:
            return
        self._closing = True
        self._network._unbind(self)
        self._network.loop.call_soon(self._protocol.connection_lost, None)

    def abort(self) -> None:
        """Same as `close()`: nothing is ever buffered in the transport."""
        self.close()

    def is_closing(self) -> bool:
        return self._closing

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._protocol

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self._protocol = protocol

    def get_write_buffer_size(self) -> int:
        return 0  # queueing is modelled by the network's links, not by a transport buffer

    def _deliver(self, data: bytes, src: Address) -> None:
        self._protocol.datagram_received(data, src)

    def __repr__(self) -> str:
        state = "closed" if self._closing else "open"
        return f"<SimDatagramTransport host={self.host} {self.sockname[0]}:{self.sockname[1]} {state}>"
