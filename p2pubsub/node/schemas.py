"""Schemas in the DHT: the node responsible for a schema's key keeps it and decides, atomically, whether a PUT
creates it, repeats it or conflicts with it; every node caches what it has read (schemas only grow).

A schema's tree geometry (cut-off, widening) is fixed when it is created: from the request if it says so, else
from the defaults of the node that created it; a later PUT that does not mention the geometry matches it.
"""

from __future__ import annotations

import json
from typing import Any

from ..model import Schema, TreeOptions


def canonical(schema: Schema) -> str:
    return json.dumps(schema.to_dict(), sort_keys=True, separators=(",", ":"))


class SchemaStore:
    """The schemas this node is responsible for."""

    def __init__(self) -> None:
        self.docs: dict[str, str] = {}

    def put(self, name: str, doc: str, defaults: TreeOptions) -> tuple[str, str]:
        """``(status, stored doc)``: ``created``, ``identical`` or ``conflict``. ``doc`` is already validated."""
        body: dict[str, Any] = json.loads(doc)
        incoming = Schema.from_dict(name, body)
        stored = self.docs.get(name)
        if stored is None:
            if incoming.tree is None:
                incoming = Schema(incoming.name, incoming.attributes, incoming.absent, defaults)
            self.docs[name] = canonical(incoming)
            return "created", self.docs[name]
        current = Schema.from_dict(name, json.loads(stored))
        if incoming.tree is None:
            incoming = Schema(incoming.name, incoming.attributes, incoming.absent, current.tree)
        return ("identical" if incoming == current else "conflict"), stored

    def adopt(self, name: str, doc: str) -> None:
        self.docs.setdefault(name, doc)

    def get(self, name: str) -> str | None:
        return self.docs.get(name)
