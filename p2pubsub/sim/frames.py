"""Skip decoding what the simulation itself encoded: the receiver gets the sender's (immutable) message object.

Every peer message is still encoded for real (`p2pubsub.node.wire`), so sizes, datagrams, packing, windows and
every byte count stay exactly those of a real run. Only the decoding at the receiver is short-cut: while
`shared_frames` is active, `wire.REGISTRY.encode` remembers each frame's message, and `REGISTRY.decode` of the same
bytes hands that message back (once) instead of parsing it again. Messages are frozen dataclasses that no node
mutates, so sharing them is safe; a frame that is not remembered (e.g. two equal frames in flight, or bytes from
elsewhere) is decoded as usual. Decoding was a tenth of a simulation's time.

The swap is process-global for the duration of the block, like `kademlia_patch`: one simulation per process.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..node.wire import REGISTRY, Registry

__all__ = ["shared_frames"]


@contextmanager
def shared_frames(registry: Registry = REGISTRY) -> Iterator[dict[bytes, Any]]:
    """Within the block, ``registry.decode`` returns the message ``registry.encode`` made each frame from."""
    if "encode" in vars(registry) or "decode" in vars(registry):
        raise RuntimeError("shared_frames is already active on this registry")
    encode, decode = registry.encode, registry.decode
    sent: dict[bytes, Any] = {}

    def remembering_encode(message: Any) -> bytes:
        frame = encode(message)
        sent[frame] = message
        return frame

    def shared_decode(data: bytes | bytearray | memoryview) -> Any:
        message = sent.pop(data if type(data) is bytes else bytes(data), None)
        return decode(data) if message is None else message

    registry.encode = remembering_encode
    registry.decode = shared_decode
    try:
        yield sent
    finally:
        del registry.encode
        del registry.decode
