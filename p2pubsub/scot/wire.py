"""The wire registry of a SCOT node: the node's registry (same frame, same checks, same tags) plus the routing
cores' messages and this package's own, with support for the cores' ``NamedTuple`` labels.

The cores label brokers, advertisements and trees with ``NamedTuple`` classes (``BrokerId``, ``AdvUid``, ``Tid``)
that ``p2pubsub.node.wire.Registry`` does not take (it registers frozen dataclasses only, and its untyped fields
take only plain tuples). :class:`ScotRegistry` extends it, by subclassing, with ``NamedTuple`` classes that travel
exactly like registered dataclasses: positionally, typed by their annotations, tagged inside untyped fields
(``Tid.host``, ``TidSubscription.origin`` hold a ``BrokerId``), decoded back to the same class.

Tags: the node registry's (1–34) unchanged; this package's node-level messages 40–53 (:mod:`.messages`); the
cores' value types and messages 64–81 (:data:`OVERLAY_TAGS`). It also lets a tuple travel in a union with
``None`` (``tuple[X, ...] | None``), which the base registry cannot encode.
"""

from __future__ import annotations

import typing
from typing import Any

from overlays.messages import Publication
from overlays.octopia import (
    Advertisement,
    AdvUid,
    Civ,
    CivSet,
    CivUnset,
    PublicationRoute,
    SubscriptionBroadcast,
    Unadvertisement,
    UnsubscriptionBroadcast,
)
from overlays.padres.messages import (
    Tid,
    TidAdvertisement,
    TidPublication,
    TidSubscription,
    TidUnadvertisement,
    TidUnsubscription,
)
from overlays.scot import BrokerId
from p2pubsub.model import Event

from ..node import messages as _node_messages  # noqa: F401  (registers the node-level messages in REGISTRY)
from ..node.wire import REGISTRY, Registry, _ClassSpec
from .messages import SCOT_MESSAGES


def is_namedtuple(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, tuple) and hasattr(tp, "_fields")


class ScotRegistry(Registry):
    """A :class:`~p2pubsub.node.wire.Registry` that also registers ``NamedTuple`` classes."""

    def register(self, cls: type, tag: int) -> type:
        if not is_namedtuple(cls):
            return super().register(cls, tag)
        if not self._registered(cls, tag):
            self._install(_ClassSpec(cls, tag, tuple(cls._fields), typing.get_type_hints(cls)))
        return cls

    def _codec(self, tp: Any) -> Any:
        if is_namedtuple(tp):
            if tp not in self._by_cls:
                raise TypeError(f"{tp.__name__} must be registered before a class that names it")
            return self._dataclass_codec(tp)
        return super()._codec(tp)

    def _union(self, members: list[Any], tp: Any) -> Any:
        """The base class dispatches a union's encoding on ``_KIND``, which has no entry for ``tuple``: a field
        such as ``tuple[Hashable, ...] | None`` (``TidPublication.destinations``) could not be encoded. Tuples go
        to the union's one array member here; decoding already finds it (a tuple arrives as an array)."""
        codec = super()._union(members, tp)
        arrays = [c for c in members if c.kind == "array"]
        if len(arrays) == 1:
            array_enc, base_enc = arrays[0].enc, codec.enc

            def enc(v: Any, depth: int) -> Any:
                return array_enc(v, depth) if type(v) is tuple else base_enc(v, depth)

            codec.enc = enc
        return codec


OVERLAY_TAGS: dict[type, int] = {
    Event: 64,
    Publication: 65,
    Civ: 66,
    BrokerId: 67,
    AdvUid: 68,
    Tid: 69,
    Advertisement: 70,
    Unadvertisement: 71,
    CivSet: 72,
    CivUnset: 73,
    SubscriptionBroadcast: 74,
    UnsubscriptionBroadcast: 75,
    PublicationRoute: 76,
    TidAdvertisement: 77,
    TidUnadvertisement: 78,
    TidSubscription: 79,
    TidUnsubscription: 80,
    TidPublication: 81,
}


def _build() -> ScotRegistry:
    reg = ScotRegistry(REGISTRY.max_size)
    for tag, cls in REGISTRY.classes().items():
        reg.register(cls, tag)
    for cls, tag in OVERLAY_TAGS.items():  # BrokerId before AdvUid / Tid before the messages naming them
        reg.register(cls, tag)
    for cls, tag in SCOT_MESSAGES.items():
        reg.register(cls, tag)
    reg.check()
    return reg


SCOT_REGISTRY = _build()
encode = SCOT_REGISTRY.encode
decode = SCOT_REGISTRY.decode

__all__ = ["OVERLAY_TAGS", "SCOT_REGISTRY", "ScotRegistry", "decode", "encode", "is_namedtuple"]
