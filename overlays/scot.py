"""Structured Cyclic Overlay Topology (SCOT), OctopiA paper §3–§4.

A SCOT is the Cartesian product ``G_af □ G_cf`` of an *acyclic factor* ``G_af`` (a tree over broker labels)
and a *connectivity factor* ``G_cf`` (a complete graph over cluster indexes ``0..n-1``). Broker ``B(x, y)``
has ``x ∈ V_af`` and ``y ∈ V_cf``. Each ``G_af``-fiber is a *cluster* ``C_y`` (a copy of the tree), each
``G_cf``-fiber a *region* ``R_x`` (a clique). Links inside a cluster are *aLinks*, links inside a region
*iLinks*. Primary neighbours are a broker's neighbours in its cluster, secondary neighbours those in its
region. An *edge* broker has at most one primary neighbour, an *inner* broker at least two.

The four properties (§3.2): *acyclic* (``G_af`` is acyclic; we also require it connected, i.e. a tree, since
a cluster must route as one acyclic overlay), *connectivity* (``G_cf`` complete), *index* (cluster labels are
the integers ``0..n-1``) and *label order* (a broker label is ``(af vertex, cluster index)`` in that order).
Violations raise :class:`ScotError` naming the property and the offending vertices or edges.
"""

from __future__ import annotations

import random
from collections import defaultdict, deque
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

ACYCLIC = "acyclic"
CONNECTIVITY = "connectivity"
INDEX = "index"
LABEL_ORDER = "label_order"
STRUCTURE = "structure"  # not a product graph at all / malformed input


class ScotError(ValueError):
    """A SCOT property is violated; ``prop`` is one of acyclic, connectivity, index, label_order, structure."""

    def __init__(self, prop: str, message: str) -> None:
        super().__init__(f"{prop} property violated: {message}" if prop != STRUCTURE else message)
        self.prop = prop
        self.message = message


class BrokerId(NamedTuple):
    """``B(x, y)``: ``region`` is the acyclic-factor vertex x, ``cluster`` the cluster index y (label order)."""

    region: str
    cluster: int

    def __str__(self) -> str:
        return f"B({self.region},{self.cluster})"


@dataclass(frozen=True, slots=True, order=True)
class ALink:
    """An intra-cluster overlay link between two primary neighbours (endpoints sorted)."""

    a: BrokerId
    b: BrokerId

    @property
    def cluster(self) -> int:
        return self.a.cluster


@dataclass(frozen=True, slots=True, order=True)
class ILink:
    """An inter-cluster overlay link between two secondary neighbours of one region (endpoints sorted)."""

    a: BrokerId
    b: BrokerId

    @property
    def region(self) -> str:
        return self.a.region


Link = ALink | ILink


def _check_tree(vertices: tuple[str, ...], edges: tuple[tuple[str, str], ...]) -> None:
    """Acyclic property (plus connectedness): raise with the cycle or the unreachable vertices."""
    parent: dict[str, str] = {v: v for v in vertices}

    def find(v: str) -> str:
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    adj: dict[str, list[str]] = defaultdict(list)
    for u, v in edges:
        ru, rv = find(u), find(v)
        if ru == rv:
            path = _path(adj, u, v)
            cycle = " - ".join([*path, v])
            raise ScotError(ACYCLIC, f"the acyclic factor has a cycle {cycle} (closed by edge {u}-{v})")
        parent[ru] = rv
        adj[u].append(v)
        adj[v].append(u)
    roots = {find(v) for v in vertices}
    if len(roots) > 1:
        comps: dict[str, list[str]] = defaultdict(list)
        for v in vertices:
            comps[find(v)].append(v)
        parts = sorted(sorted(c) for c in comps.values())
        raise ScotError(
            ACYCLIC, f"the acyclic factor must be one tree, it has {len(parts)} components: {parts}"
        )


def _path(adj: Mapping[str, list[str]], src: str, dst: str) -> list[str]:
    prev: dict[str, str | None] = {src: None}
    todo = deque([src])
    while todo:
        u = todo.popleft()
        if u == dst:
            break
        for w in adj.get(u, ()):
            if w not in prev:
                prev[w] = u
                todo.append(w)
    out: list[str] = []
    cur: str | None = dst
    while cur is not None:
        out.append(cur)
        cur = prev[cur]
    return out


def _check_index(labels: Iterable[Any]) -> tuple[int, ...]:
    labels = list(labels)
    for v in labels:
        if not isinstance(v, int) or isinstance(v, bool):
            raise ScotError(INDEX, f"cluster label {v!r} is not an integer; clusters are indexed 0..n-1")
    seen: set[int] = set()
    for v in labels:
        if v in seen:
            raise ScotError(INDEX, f"cluster index {v} appears twice")
        seen.add(v)
    n = len(labels)
    if n == 0:
        raise ScotError(INDEX, "the connectivity factor has no vertex; at least one cluster is needed")
    if seen != set(range(n)):
        missing = sorted(set(range(n)) - seen)
        extra = sorted(seen - set(range(n)))
        raise ScotError(
            INDEX, f"cluster indexes must be exactly 0..{n - 1} starting from zero; missing {missing}, extra {extra}"
        )
    return tuple(range(n))


def _check_complete(clusters: tuple[int, ...], edges: Iterable[tuple[int, int]]) -> None:
    have = set()
    for u, v in edges:
        if u == v:
            raise ScotError(CONNECTIVITY, f"self-loop on cluster {u}")
        if u not in clusters or v not in clusters:
            raise ScotError(CONNECTIVITY, f"edge {u}-{v} names a cluster outside {list(clusters)}")
        have.add((min(u, v), max(u, v)))
    for i in clusters:
        for j in clusters:
            if i < j and (i, j) not in have:
                raise ScotError(CONNECTIVITY, f"the connectivity factor must be complete; edge {i}-{j} is missing")


@dataclass(frozen=True)
class Scot:
    """A validated SCOT (paper §3–§4). Build with :meth:`build`, :meth:`from_factors`, :meth:`from_product`,
    :meth:`s_e` or :meth:`random`."""

    af_vertices: tuple[str, ...]
    af_edges: tuple[tuple[str, str], ...]
    clusters: tuple[int, ...]
    _af_adj: dict[str, tuple[str, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        adj: dict[str, list[str]] = {v: [] for v in self.af_vertices}
        for u, v in self.af_edges:
            adj[u].append(v)
            adj[v].append(u)
        object.__setattr__(self, "_af_adj", {v: tuple(sorted(ns)) for v, ns in adj.items()})

    # -- construction ---------------------------------------------------------------------------------------

    @classmethod
    def build(
        cls, af_edges: Iterable[tuple[str, str]], n_clusters: int, af_vertices: Iterable[str] | None = None
    ) -> Scot:
        """``G_af`` from an edge list (plus isolated vertices for a one-broker tree) times the complete K_n."""
        if not isinstance(n_clusters, int) or isinstance(n_clusters, bool) or n_clusters < 1:
            raise ScotError(INDEX, f"the number of clusters must be a positive integer, got {n_clusters!r}")
        clusters = tuple(range(n_clusters))
        edges = [(i, j) for i in clusters for j in clusters if i < j]
        return cls.from_factors(af_edges, clusters, edges, af_vertices)

    @classmethod
    def from_factors(
        cls,
        af_edges: Iterable[tuple[str, str]],
        cf_vertices: Iterable[Any],
        cf_edges: Iterable[tuple[Any, Any]],
        af_vertices: Iterable[str] | None = None,
    ) -> Scot:
        """Validate both factors: acyclic property on ``G_af``, index and connectivity properties on ``G_cf``."""
        edges = []
        seen_edges = set()
        verts: list[str] = list(af_vertices or ())
        for e in af_edges:
            if not isinstance(e, tuple | list) or len(e) != 2:
                raise ScotError(STRUCTURE, f"an acyclic-factor edge must be a pair of labels, got {e!r}")
            u, v = e
            for x in (u, v):
                if not isinstance(x, str) or not x:
                    raise ScotError(STRUCTURE, f"acyclic-factor labels must be non-empty strings, got {x!r}")
            if u == v:
                raise ScotError(ACYCLIC, f"self-loop {u}-{u} is a cycle")
            key = (min(u, v), max(u, v))
            if key in seen_edges:
                raise ScotError(ACYCLIC, f"edge {u}-{v} appears twice (a cycle of length 2)")
            seen_edges.add(key)
            edges.append(key)
            verts.extend((u, v))
        vertices = tuple(sorted(set(verts)))
        if not vertices:
            raise ScotError(ACYCLIC, "the acyclic factor has no vertex")
        for x in vertices:
            if not isinstance(x, str) or not x:
                raise ScotError(STRUCTURE, f"acyclic-factor labels must be non-empty strings, got {x!r}")
        _check_tree(vertices, tuple(edges))
        clusters = _check_index(cf_vertices)
        _check_complete(clusters, cf_edges)
        return cls(vertices, tuple(sorted(edges)), clusters)

    @classmethod
    def from_product(cls, links: Iterable[tuple[Any, Any]], brokers: Iterable[Any] = ()) -> Scot:
        """Recover and validate a SCOT from its broker graph, labels ``(af vertex, cluster index)``.

        Checks that the graph is a Cartesian product (every link joins brokers differing in exactly one label
        part, every cluster carries the same tree, every region the same clique), then the four properties. If
        the labels are reversed — ``(cluster index, af vertex)`` — the label order property fails.
        """
        nodes: set[tuple[Any, Any]] = set()
        pairs = []
        for link in links:
            if not isinstance(link, tuple | list) or len(link) != 2:
                raise ScotError(STRUCTURE, f"a link must be a pair of brokers, got {link!r}")
            pairs.append(tuple(link))
            nodes.update(link)
        nodes.update(brokers)
        for b in nodes:
            if not isinstance(b, tuple) or len(b) != 2:
                raise ScotError(STRUCTURE, f"a broker label must be a pair (af vertex, cluster index), got {b!r}")
        firsts = {b[0] for b in nodes}
        seconds = {b[1] for b in nodes}
        if len(nodes) != len(firsts) * len(seconds):
            raise ScotError(STRUCTURE, f"{len(nodes)} brokers are not the full product of their label parts")
        by_first: dict[Any, set[tuple[Any, Any]]] = defaultdict(set)  # second-part edges within a first-fiber
        by_second: dict[Any, set[tuple[Any, Any]]] = defaultdict(set)
        for b1, b2 in pairs:
            if b1 == b2:
                raise ScotError(STRUCTURE, f"self-loop at broker {b1}")
            if b1[0] == b2[0] and b1[1] != b2[1]:
                by_first[b1[0]].add(frozenset((b1[1], b2[1])))
            elif b1[1] == b2[1] and b1[0] != b2[0]:
                by_second[b1[1]].add(frozenset((b1[0], b2[0])))
            else:
                raise ScotError(STRUCTURE, f"link {b1}-{b2} differs in both label parts: not a Cartesian product")
        fiber_1 = {frozenset(by_first.get(f, set())) for f in firsts}
        fiber_2 = {frozenset(by_second.get(s, set())) for s in seconds}
        if len(fiber_1) != 1 or len(fiber_2) != 1:
            raise ScotError(STRUCTURE, "fibers differ: every cluster must carry the same tree and every region "
                            "the same clique (not a Cartesian product)")
        q_edges = [tuple(sorted(e, key=repr)) for e in next(iter(fiber_1))]  # inside a region, over seconds
        p_edges = [tuple(sorted(e, key=repr)) for e in next(iter(fiber_2))]  # inside a cluster, over firsts

        def complete(labels: set[Any], edges: list[tuple[Any, ...]]) -> bool:
            return len(edges) == len(labels) * (len(labels) - 1) // 2

        def tree_sized(labels: set[Any], edges: list[tuple[Any, ...]]) -> bool:
            return len(edges) == len(labels) - 1

        ordered = tree_sized(firsts, p_edges) and complete(seconds, q_edges)
        reversed_ = tree_sized(seconds, q_edges) and complete(firsts, p_edges)
        if reversed_ and not ordered:
            raise ScotError(
                LABEL_ORDER,
                f"broker labels are (cluster index, af vertex), e.g. {min(nodes, key=repr)!r}: the first part "
                "must be the acyclic-factor vertex and the second the cluster index",
            )
        # Validate as ordered: the factor checks name the precise failing property.
        return cls.from_factors(p_edges, sorted(seconds, key=repr), q_edges, af_vertices=firsts)

    @classmethod
    def s_e(cls) -> Scot:
        """Topology S_e (paper §10, Fig. 9): a 14-broker acyclic factor times K_4 (56 brokers).

        The text names the inner brokers F, G, H, I and the edge brokers A–E and J–N but its figure's edges are
        not legible. We use the tree with those properties in which the inner brokers form the path F-G-H-I and
        the edge brokers hang off them in label order: A,B,C-F; D,E-G; J,K-H; L,M,N-I (every inner broker has
        degree 4, diam(G_af) = 5). The paper's total of "54 brokers" does not match its own 16 inner + 40 edge
        = 56 brokers of 14 × 4; we build the 56.
        """
        edges = [
            ("A", "F"), ("B", "F"), ("C", "F"),
            ("D", "G"), ("E", "G"),
            ("J", "H"), ("K", "H"),
            ("L", "I"), ("M", "I"), ("N", "I"),
            ("F", "G"), ("G", "H"), ("H", "I"),
        ]  # fmt: skip
        return cls.build(edges, 4)

    @classmethod
    def random(cls, rng: random.Random, n_af: int, n_clusters: int) -> Scot:
        """A random tree over ``n_af`` labels (random Prüfer-like attachment) times K_n."""
        labels = [f"v{i}" for i in range(n_af)]
        edges = [(labels[i], labels[rng.randrange(i)]) for i in range(1, n_af)]
        return cls.build(edges, n_clusters, af_vertices=labels)

    # -- structure ------------------------------------------------------------------------------------------

    @property
    def n_clusters(self) -> int:
        return len(self.clusters)

    @property
    def brokers(self) -> tuple[BrokerId, ...]:
        return tuple(BrokerId(x, c) for c in self.clusters for x in self.af_vertices)

    def __contains__(self, b: object) -> bool:
        return isinstance(b, tuple) and len(b) == 2 and b[0] in self._af_adj and b[1] in self.clusters

    def _check(self, b: BrokerId) -> BrokerId:
        if b not in self:
            raise KeyError(f"{b!r} is not a broker of this SCOT")
        return BrokerId(*b)

    def cluster(self, index: int) -> tuple[BrokerId, ...]:
        """Cluster ``C_index``: the brokers of one ``G_af``-fiber."""
        if index not in self.clusters:
            raise KeyError(f"no cluster {index!r}")
        return tuple(BrokerId(x, index) for x in self.af_vertices)

    def region(self, vertex: str) -> tuple[BrokerId, ...]:
        """Region ``R_vertex``: the brokers of one ``G_cf``-fiber."""
        if vertex not in self._af_adj:
            raise KeyError(f"no region {vertex!r}")
        return tuple(BrokerId(vertex, c) for c in self.clusters)

    def primary_neighbours(self, b: BrokerId) -> tuple[BrokerId, ...]:
        b = self._check(b)
        return tuple(BrokerId(x, b.cluster) for x in self._af_adj[b.region])

    def secondary_neighbours(self, b: BrokerId) -> dict[int, BrokerId]:
        """Cluster index -> the broker of that cluster in ``b``'s region (one iLink each)."""
        b = self._check(b)
        return {c: BrokerId(b.region, c) for c in self.clusters if c != b.cluster}

    def neighbours(self, b: BrokerId) -> tuple[BrokerId, ...]:
        return (*self.primary_neighbours(b), *self.secondary_neighbours(b).values())

    def is_edge(self, b: BrokerId) -> bool:
        """Edge broker: at most one primary neighbour (§4.2)."""
        return len(self.primary_neighbours(b)) <= 1

    def is_inner(self, b: BrokerId) -> bool:
        """Inner broker: at least two primary neighbours (§4.2)."""
        return len(self.primary_neighbours(b)) >= 2

    def edge_brokers(self, cluster: int | None = None) -> tuple[BrokerId, ...]:
        pool = self.brokers if cluster is None else self.cluster(cluster)
        return tuple(b for b in pool if self.is_edge(b))

    def inner_brokers(self, cluster: int | None = None) -> tuple[BrokerId, ...]:
        pool = self.brokers if cluster is None else self.cluster(cluster)
        return tuple(b for b in pool if self.is_inner(b))

    @property
    def alinks(self) -> tuple[ALink, ...]:
        return tuple(
            ALink(*sorted((BrokerId(u, c), BrokerId(v, c)))) for c in self.clusters for u, v in self.af_edges
        )

    @property
    def ilinks(self) -> tuple[ILink, ...]:
        return tuple(
            ILink(BrokerId(x, i), BrokerId(x, j))
            for x in self.af_vertices
            for i in self.clusters
            for j in self.clusters
            if i < j
        )

    def link(self, b1: BrokerId, b2: BrokerId) -> Link:
        """The overlay link joining two neighbours; KeyError if they are not adjacent."""
        b1, b2 = self._check(b1), self._check(b2)
        lo, hi = sorted((b1, b2))
        if b1.cluster == b2.cluster and b2.region in self._af_adj[b1.region]:
            return ALink(lo, hi)
        if b1.region == b2.region and b1.cluster != b2.cluster:
            return ILink(lo, hi)
        raise KeyError(f"{b1} and {b2} are not neighbours")

    def is_alink(self, b1: BrokerId, b2: BrokerId) -> bool:
        return isinstance(self.link(b1, b2), ALink)

    def adjacency(self) -> dict[BrokerId, tuple[BrokerId, ...]]:
        """The whole broker graph (aLinks and iLinks), e.g. for the PADRES-style baseline."""
        return {b: self.neighbours(b) for b in self.brokers}

    def af_diameter(self) -> int:
        """diam(G_af): the longest shortest path inside a cluster (§9.1)."""
        best = 0
        for src in self.af_vertices:
            dist = {src: 0}
            todo = deque([src])
            while todo:
                u = todo.popleft()
                for w in self._af_adj[u]:
                    if w not in dist:
                        dist[w] = dist[u] + 1
                        todo.append(w)
            best = max(best, *dist.values())
        return best

    def describe(self) -> dict[str, Hashable]:
        return {
            "brokers": len(self.brokers),
            "clusters": self.n_clusters,
            "regions": len(self.af_vertices),
            "alinks": len(self.alinks),
            "ilinks": len(self.ilinks),
            "inner": len(self.inner_brokers()),
            "edge": len(self.edge_brokers()),
            "af_diameter": self.af_diameter(),
        }


__all__ = ["ACYCLIC", "CONNECTIVITY", "INDEX", "LABEL_ORDER", "ALink", "BrokerId", "ILink", "Scot", "ScotError"]
