"""Are the acknowledged subscriptions still installed? An end-to-end check through the network (``subscriptions_lost``).

Checked: every subscription that was acknowledged and whose home is alive at the end. For each:

1. ``GET /v1/subscriptions/{id}`` at its home: a home that no longer knows it has lost it. The answer names the
   subscription's *base* attribute (the one whose 2d-tree stores it, thesis §3.3) and its number of pieces.
2. **Probe events.** A subscription is stored as one point per *piece* of its range on the base attribute (the
   cut-off line, thesis §3.5: a range wider than ``c`` is cut into half-open pieces of one random width
   ``h`` in ``[c/2, c)``, the last one possibly shorter). The check publishes probe events whose base value runs
   over the range at steps of ``0.45 c`` — one inside every piece whatever ``h`` was: the range's ends (just
   inside, ``delta = 1e-9`` of the domain) and every step between; for ints every ``floor(c/2)``-th integer and
   the last one (:func:`probe_points`) — with the other constrained attributes at the
   middle of the subscription's range (its value for ``eq``, the prefix itself for ``prefix``) and the
   unconstrained ones at the middle of their domain. A piece that the tree no longer holds cannot deliver its
   probe: the probe is a normal publication, found by the normal region probes.
3. Each subscription's reader must receive each of its probe events. Probes not received within
   ``verify_timeout_s`` are published once more (a fresh event: region probes are random, thesis §3.4); a
   subscription with a probe missing after that second round is **lost**.

Blind spots, stated: a last piece narrower than ``delta`` holds no probe point; a lost piece of an attribute
that is not the base cannot exist (pieces are cut on the base only); a subscription whose base the home does not
report is probed along every attribute it constrains. As a cross-check the summary also reports the pieces the
homes report against the entries the nodes store (``stored_subscriptions`` of ``GET /v1/node``), which only
means something without replicas and without stale entries of departed homes, so it is reported, not judged.

Probe events are judged by the same oracle (``verify.deliveries``): a probe delivered to a subscription it does
not match is a false positive like any other.
"""

from __future__ import annotations

import asyncio
import math
from typing import TYPE_CHECKING, Any

from ..model import AttrType, Range, StringEq, StringPrefix, Subscription

if TYPE_CHECKING:
    from .runner import EventRecord, Experiment, SubRecord

__all__ = ["probe_points", "probe_values", "verify_installed"]

STEP = 0.45  # probe spacing along the base attribute, a fraction of c (< 1/2: every piece is at least c/2 wide)
DELTA = 1e-9  # how far inside the range's ends the end probes sit, a fraction of the domain width


def _inside(constraint: Any, attr) -> Any:
    """A value the constraint accepts (the middle of a range)."""
    if isinstance(constraint, StringEq):
        return constraint.value
    if isinstance(constraint, StringPrefix):
        return constraint.prefix
    assert isinstance(constraint, Range)
    if attr.type is AttrType.INT:
        lo, hi = math.ceil(constraint.lo), math.floor(constraint.hi)
        lo += 0 if constraint.lo_closed or constraint.lo != lo else 1
        hi -= 0 if constraint.hi_closed or constraint.hi != hi else 1
        return int((lo + hi) // 2)
    return (float(constraint.lo) + float(constraint.hi)) / 2


def probe_points(constraint: Any, attr, cutoff: float | None) -> list[Any]:
    """Values of the base attribute, at least one inside every piece the range may have been cut into.

    Floats: the range's ends (``delta`` inside) and a grid of step ``0.45 c``. Ints: every ``floor(c / 2)``-th
    integer from the lowest accepted one, and the highest (a half-open piece ``[a, a + h)`` with ``h >= c/2``
    holds ``floor(c/2)`` consecutive integers, so one of these). Strings: the value or prefix (one piece)."""
    if not isinstance(constraint, Range):
        return [_inside(constraint, attr)]
    lo_d, hi_d = attr.domain
    lo, hi = float(constraint.lo), float(constraint.hi)
    c = math.inf if cutoff is None else cutoff * (hi_d - lo_d)
    if hi - lo <= c:
        return [_inside(constraint, attr)]
    if attr.type is AttrType.INT:
        first = next(v for v in (math.ceil(lo), math.ceil(lo) + 1) if constraint.contains(v))
        last = next(v for v in (math.floor(hi), math.floor(hi) - 1) if constraint.contains(v))
        points = list(range(first, last + 1, max(1, math.floor(c / 2))))
        return points if points[-1] == last else [*points, last]
    delta = DELTA * (hi_d - lo_d)
    points = [lo + delta]
    x = lo + STEP * c
    while x < hi - delta:
        points.append(x)
        x += STEP * c
    points.append(hi - delta)
    return [p for p in points if constraint.contains(p)]


def probe_values(exp: Experiment, sub: Subscription, base: str, value: Any) -> dict[str, Any]:
    """A full event: ``base = value``, the subscription's other constraints at their middle, the rest mid-domain."""
    out: dict[str, Any] = {}
    for attr in exp.schema.attributes:
        if attr.name == base:
            out[attr.name] = value
        elif attr.name in sub.attributes:
            out[attr.name] = _inside(sub.constraint(attr.name), attr)
        elif attr.type is AttrType.STRING:
            out[attr.name] = "probe"
        elif attr.type is AttrType.INT:
            out[attr.name] = int((attr.min + attr.max) // 2)
        else:
            out[attr.name] = (float(attr.min) + float(attr.max)) / 2
    return out


async def verify_installed(exp: Experiment) -> dict[str, Any]:
    """Check every acknowledged subscription of a live home; the ``verify`` block of the summary."""
    from .runner import EventRecord

    checked = [s for s in exp.subs if s.acked_at is not None and exp.fleet.nodes[s.home].alive]
    cutoff = exp.cutoff_fraction()
    started = exp.clock()

    async def detail(s: SubRecord) -> str | None:
        try:
            info = await exp.clients[s.home].subscription(s.sub_id)
        except Exception as e:
            return f"{type(e).__name__}: {e}"
        if info is None:
            return "unknown at its home"
        node = info.get("node") or {}
        s.base = node.get("base")
        s.pieces = node.get("pieces")
        return None

    answers = await asyncio.gather(*(detail(s) for s in checked))
    lost: dict[int, str] = {s.index: a for s, a in zip(checked, answers, strict=True) if a is not None}
    # requirements: (subscription index, probe attributes)
    need: list[tuple[SubRecord, dict[str, Any]]] = []
    for s in checked:
        if s.index in lost:
            continue
        bases = [s.base] if s.base in s.parsed.attributes else list(s.parsed.attributes)
        for base in bases:
            attr = exp.schema.attribute(base)
            for v in probe_points(s.parsed.constraint(base), attr, cutoff):
                need.append((s, probe_values(exp, s.parsed, base, v)))
    rounds = []
    pending = need
    for round_no in (1, 2):
        if not pending:
            break
        recs: list[tuple[SubRecord, EventRecord]] = []
        for s, values in pending:
            rec = EventRecord(len(exp.probes), -1, values, exp.clock())
            exp.probes.append(rec)
            recs.append((s, rec))
        await _publish(exp, [r for _, r in recs])
        deadline = exp.clock() + exp.opt.verify_timeout_s

        def unmet(recs=recs) -> list[tuple[SubRecord, EventRecord]]:
            return [(s, r) for s, r in recs if r.event_id is None or r.event_id not in s.got]

        while unmet() and exp.clock() < deadline:
            await asyncio.sleep(0.1)  # waiting on a condition (every probe read), with a deadline
        left = unmet()
        rounds.append({"round": round_no, "probes": len(recs), "unmet": len(left),
                       "publish_failed": sum(r.event_id is None for _, r in recs)})
        pending = [(s, r.attributes) for s, r in left]
    for s, _ in pending:
        lost.setdefault(s.index, "probe not delivered in two rounds")
    stored = sum(int(i.get("stored_subscriptions", 0)) for i in (exp.node_info or {}).values())
    return {
        "checked": len(checked),
        "lost": len(lost),
        "lost_subscriptions": [{"index": i, "sub_id": exp.subs[i].sub_id, "home": exp.subs[i].home, "why": why}
                               for i, why in sorted(lost.items())],
        "requirements": len(need),
        "rounds": rounds,
        "pieces_reported": sum(s.pieces or 0 for s in checked),
        "stored_entries_before": stored,
        "cutoff_fraction": cutoff,
        "s": exp.clock() - started,
    }


async def _publish(exp: Experiment, recs: list[EventRecord], rate: float = 100.0, window: int = 16) -> None:
    """Publish probes through random live nodes, at most ``window`` at once and ``rate`` per second."""
    sem = asyncio.Semaphore(window)
    start = exp.clock()

    async def one(k: int, rec: EventRecord) -> None:
        async with sem:
            await exp.publish(rec, exp.place(exp.rng.randrange(1 << 30)))

    tasks = []
    for k, rec in enumerate(recs):
        await exp.sleep_until(start + k / rate)
        tasks.append(asyncio.create_task(one(k, rec)))
    await asyncio.gather(*tasks)
