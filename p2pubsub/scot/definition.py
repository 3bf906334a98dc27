"""A named SCOT overlay as the DHT stores it, and the functions that place nodes on it (OctopiA paper §3–§4).

The definition of overlay ``NAME`` — the acyclic factor G_af as an edge list, the number n of clusters (G_cf is
the complete graph K_n), the routing core (OctopiA, or the PADRES-style baseline on the same graph unclustered)
and its parameters (static or dynamic routing, τ and t_w of Eq. 3) — is one canonical JSON document stored under
the DHT key ``digest("scot:NAME")``, compare-and-set like schemas: the first writer defines it, an identical
definition is accepted, a different one is refused with both documents named.

Placement of a node (documented functions, the same on every node):

* its cluster: :func:`cluster_of` = ``int(node_id) mod n`` (node ids are uniform 160-bit numbers, so clusters
  fill evenly in expectation; a deployment that wants a node in cluster c chooses its id accordingly);
* the order in which it tries the region slots of its cluster: :func:`region_order`, by SHA-1 of
  ``node_id + region`` (different nodes start at different slots, so concurrent claims rarely collide);
* a slot's DHT key: :func:`slot_key` = ``digest("scot-slot:NAME:region:cluster")``.

Identifiers that must outlive a broker's tenure of its slot (epoch ``e``, assigned by the slot's DHT store and
increasing per slot): subscription ids are ``"region.cluster.e.seq"`` (:func:`sub_id`, :func:`tenure_of`), and
the cores' advertisement uids / tree ids count from ``e << 32`` (:func:`seq_base`), so nothing a dead tenure
left behind can be confused with what a later tenure creates.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from kademlia.utils import digest

from overlays import BrokerId, CongestionConfig, Scot, ScotError

LABEL = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
ROUTINGS = ("octopia", "padres")
MAX_CLUSTERS = 64  # CIV bit vectors travel as one 64-bit integer
MAX_BROKERS = 4096

_S_E = "s_e"  # the paper's topology S_e (Fig. 9) as a preset


class DefinitionError(ValueError):
    """An overlay definition that cannot be used; ``code`` is stable (invalid_overlay, overlay_conflict, ...)."""

    def __init__(self, message: str, code: str = "invalid_overlay") -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class OverlayDefinition:
    """G_af (vertices, edges), n clusters, routing core and its parameters; validated on construction."""

    vertices: tuple[str, ...]
    edges: tuple[tuple[str, str], ...]
    clusters: int
    routing: str = "octopia"
    dynamic: bool = False
    tau: float = 10.0
    t_w: float = 0.05

    def __post_init__(self) -> None:
        for v in self.vertices:
            if not isinstance(v, str) or not LABEL.match(v):
                raise DefinitionError(f"region label {v!r} must match {LABEL.pattern}")
        if self.routing not in ROUTINGS:
            raise DefinitionError(f"routing must be one of {ROUTINGS}, got {self.routing!r}")
        if not isinstance(self.dynamic, bool):
            raise DefinitionError("dynamic must be true or false")
        if not isinstance(self.clusters, int) or isinstance(self.clusters, bool):
            raise DefinitionError(f"the number of clusters must be an integer, got {self.clusters!r}")
        if not 1 <= self.clusters <= MAX_CLUSTERS:
            raise DefinitionError(f"the number of clusters must lie in [1, {MAX_CLUSTERS}], got {self.clusters}")
        if len(self.vertices) * self.clusters > MAX_BROKERS:
            raise DefinitionError(f"at most {MAX_BROKERS} broker positions")
        try:
            CongestionConfig(float(self.tau), float(self.t_w))
        except (TypeError, ValueError) as e:
            raise DefinitionError(f"congestion parameters: {e}") from None
        try:
            scot = Scot.build(self.edges, self.clusters, af_vertices=self.vertices)
        except ScotError as e:
            raise DefinitionError(f"not a SCOT: {e}") from None
        if scot.af_vertices != self.vertices or scot.af_edges != self.edges:
            raise DefinitionError("vertices and edges must be given in canonical (sorted) form; use build()")
        object.__setattr__(self, "_scot", scot)

    @classmethod
    def build(cls, edges: Iterable[Sequence[str]], clusters: int, *, vertices: Iterable[str] = (),
              routing: str = "octopia", dynamic: bool = False, tau: float = 10.0,
              t_w: float = 0.05) -> OverlayDefinition:
        """From an edge list in any order (plus isolated vertices for a one-vertex tree)."""
        pairs = []
        for e in edges:
            if isinstance(e, str) or not isinstance(e, Sequence) or len(e) != 2:
                raise DefinitionError(f"an edge must be a pair of region labels, got {e!r}")
            u, v = e
            if not isinstance(u, str) or not isinstance(v, str):
                raise DefinitionError(f"region labels must be strings, got {e!r}")
            pairs.append((min(u, v), max(u, v)))
        verts = {*vertices, *(x for p in pairs for x in p)}
        if not verts:
            raise DefinitionError("the acyclic factor needs at least one region")
        if not all(isinstance(v, str) for v in verts):
            raise DefinitionError("region labels must be strings")
        return cls(tuple(sorted(verts)), tuple(sorted(pairs)), clusters, routing, dynamic,
                   float(tau), float(t_w))

    @classmethod
    def parse_tree(cls, text: str) -> tuple[tuple[str, str], ...] | str:
        """``"A-F,B-F,C-F"`` -> edges; a single label ``"A"`` -> a one-region tree; ``"s_e"`` -> the preset."""
        text = text.strip()
        if text == _S_E:
            return _S_E
        if not text:
            raise DefinitionError("empty tree: give edges as A-B,B-C,...")
        if "-" not in text and "," not in text:
            return text
        edges = []
        for part in text.split(","):
            u, sep, v = part.strip().partition("-")
            if not sep or not u or not v:
                raise DefinitionError(f"edge {part!r} is not LABEL-LABEL (labels: letters, digits, '_')")
            edges.append((u, v))
        return tuple(edges)

    @classmethod
    def from_cli(cls, tree: str, clusters: int, **kw: Any) -> OverlayDefinition:
        parsed = cls.parse_tree(tree)
        if parsed == _S_E:
            s = Scot.s_e()
            return cls.build(s.af_edges, clusters, vertices=s.af_vertices, **kw)
        if isinstance(parsed, str):
            return cls.build((), clusters, vertices=(parsed,), **kw)
        return cls.build(parsed, clusters, **kw)

    # -- views ----------------------------------------------------------------------------------------------

    @property
    def scot(self) -> Scot:
        return self._scot  # type: ignore[attr-defined]

    @property
    def congestion(self) -> CongestionConfig:
        return CongestionConfig(self.tau, self.t_w)

    @property
    def positions(self) -> int:
        return len(self.vertices) * self.clusters

    def to_doc(self) -> dict[str, Any]:
        return {
            "acyclic_factor": {"vertices": list(self.vertices), "edges": [list(e) for e in self.edges]},
            "clusters": self.clusters,
            "routing": self.routing,
            "dynamic": self.dynamic,
            "tau": self.tau,
            "t_w": self.t_w,
        }

    def to_json(self) -> str:
        """Canonical: two equal definitions have equal JSON (compare-and-set compares these strings)."""
        return json.dumps(self.to_doc(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_doc(cls, doc: Any) -> OverlayDefinition:
        if not isinstance(doc, dict):
            raise DefinitionError("an overlay definition is a JSON object")
        unknown = set(doc) - {"acyclic_factor", "clusters", "routing", "dynamic", "tau", "t_w"}
        if unknown:
            raise DefinitionError(f"unknown keys {sorted(unknown)}")
        af = doc.get("acyclic_factor")
        if not isinstance(af, dict) or not isinstance(af.get("edges", []), list):
            raise DefinitionError("acyclic_factor must be {\"vertices\": [...], \"edges\": [[u, v], ...]}")
        try:
            return cls.build(af.get("edges", []), doc.get("clusters"), vertices=af.get("vertices", ()),
                             routing=doc.get("routing", "octopia"), dynamic=doc.get("dynamic", False),
                             tau=doc.get("tau", 10.0), t_w=doc.get("t_w", 0.05))
        except (TypeError, ValueError) as e:
            if isinstance(e, DefinitionError):
                raise
            raise DefinitionError(str(e)) from None

    @classmethod
    def from_json(cls, text: str) -> OverlayDefinition:
        try:
            return cls.from_doc(json.loads(text))
        except json.JSONDecodeError as e:
            raise DefinitionError(f"not JSON: {e}") from None

    def describe(self) -> str:
        mode = "dynamic" if self.dynamic else "static"
        return (f"{self.routing} ({mode}) on {len(self.vertices)} regions x {self.clusters} clusters, "
                f"tau={self.tau:g}, t_w={self.t_w:g}s")


def check_overlay_name(name: Any) -> str:
    if not isinstance(name, str) or not NAME.match(name):
        raise DefinitionError(f"overlay name {name!r} must match {NAME.pattern}", "invalid_name")
    return name


# -- placement ---------------------------------------------------------------------------------------------------


def cluster_of(node_id: bytes, clusters: int) -> int:
    """A node's cluster: its id (a uniform 160-bit number) modulo the number of clusters."""
    return int.from_bytes(node_id, "big") % clusters


def region_order(node_id: bytes, regions: Iterable[str]) -> list[str]:
    """The order in which a node tries its cluster's region slots: by SHA-1 of node id + region label."""
    return sorted(regions, key=lambda r: (hashlib.sha1(node_id + r.encode()).digest(), r))


def id_in_cluster(raw: int, cluster: int, clusters: int) -> bytes:
    """A 160-bit node id near ``raw`` that :func:`cluster_of` places in ``cluster`` (tests and deployments)."""
    raw %= 1 << 160
    base = raw - raw % clusters + cluster
    if base >= 1 << 160:
        base -= clusters
    return base.to_bytes(20, "big")


def overlay_key(name: str) -> bytes:
    return digest(f"scot:{name}")


def slot_name(overlay: str, position: BrokerId) -> str:
    return f"{overlay}/{position.region}/{position.cluster}"


def slot_key(overlay: str, position: BrokerId) -> bytes:
    return digest(f"scot-slot:{overlay}:{position.region}:{position.cluster}")


# -- identifiers that name a tenure ------------------------------------------------------------------------------


def sub_id(position: BrokerId, epoch: int, seq: int) -> str:
    return f"{position.region}.{position.cluster}.{epoch}.{seq}"


def tenure_of(sid: str) -> tuple[BrokerId, int] | None:
    """The broker position and slot epoch a subscription id was issued under (None: not one of ours)."""
    parts = sid.split(".")
    if len(parts) != 4 or not parts[1].isdigit() or not parts[2].isdigit():
        return None
    return BrokerId(parts[0], int(parts[1])), int(parts[2])


def seq_base(epoch: int) -> int:
    """Where a tenure's advertisement uids / tree ids start counting."""
    return epoch << 32


def epoch_of_seq(seq: int) -> int:
    return seq >> 32


__all__ = [
    "LABEL",
    "MAX_CLUSTERS",
    "ROUTINGS",
    "DefinitionError",
    "OverlayDefinition",
    "check_overlay_name",
    "cluster_of",
    "epoch_of_seq",
    "id_in_cluster",
    "overlay_key",
    "region_order",
    "seq_base",
    "slot_key",
    "slot_name",
    "sub_id",
    "tenure_of",
]
