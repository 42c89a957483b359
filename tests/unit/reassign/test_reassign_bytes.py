"""The planner's byte balance (``--balance bytes``, the default): replica counts as even as
before, bytes per broker within 10 % of the mean when exchanges can get there, and never
a plan that an exchange could still improve (hypothesis and a cluster shaped like
bench/reassign.py's)."""

from __future__ import annotations

from collections import Counter

from hypothesis import given

from kmigrate.reassign.byte_spread import TOLERANCE
from kmigrate.reassign.holdings import fits
from kmigrate.reassign.model import BrokerNode, ClusterModel, Partition
from kmigrate.reassign.planner import Goal, ReassignPlan, plan_reassignment
from tests.unit.reassign.test_reassign_planner import (
    _applied,
    _check,
    _grown_cluster,
    clusters,
    fast,
)

Key = tuple[str, int]


def _after(model: ClusterModel, plan: ReassignPlan) -> dict[Key, tuple[int, ...]]:
    return {p.key: p.replicas for p in _applied(model, plan)}


def _loads(model: ClusterModel, after: dict[Key, tuple[int, ...]], brokers: tuple[int, ...]):
    sizes = {p.key: p.size_bytes for p in model.partitions}
    load = dict.fromkeys(brokers, 0)
    for key, replicas in after.items():
        for b in replicas:
            load[b] += sizes[key]
    return load


def _improvable(model: ClusterModel, plan: ReassignPlan) -> str | None:
    """An exchange the balance should have made, found by brute force: a broker outside
    the band, another, and a replica (or two swapped) whose move narrows their gap with
    counts kept within floor and ceiling and racks kept apart."""
    after = _after(model, plan)
    brokers = plan.brokers
    load = _loads(model, after, brokers)
    mean = sum(load.values()) / len(brokers)
    counts = Counter(b for r in after.values() for b in r)
    floor, ceiling = min(counts[b] for b in brokers), max(counts[b] for b in brokers)
    racks = model.racks()
    rack_count = len({racks[b] for b in brokers}) if all(racks[b] for b in brokers) else 0
    sizes = {p.key: p.size_bytes for p in model.partitions}
    held = {b: [k for k, r in after.items() if b in r] for b in brokers}

    def may(key: Key, src: int, dst: int) -> bool:
        return fits(after[key], dst, racks, rack_count, leaving=src)

    low, high = (1 - TOLERANCE) * mean, (1 + TOLERANCE) * mean
    outside = {b for b in brokers if not low <= load[b] <= high}
    for heavy in brokers:
        for light in brokers:
            gap = load[heavy] - load[light]
            if gap <= 0 or not {heavy, light} & outside:
                continue
            single = counts[heavy] == ceiling > floor == counts[light]
            for key in held[heavy]:
                if sizes[key] <= 0 or not may(key, heavy, light):
                    continue
                if single and sizes[key] < gap:
                    return f"{key} alone {heavy}->{light}"
                for back in held[light]:
                    if 0 < sizes[key] - sizes[back] < gap and may(back, light, heavy):
                        return f"{key} {heavy}->{light} for {back}"
    return None


@fast
@given(clusters(spare=1))
def test_bytes_end_within_the_band_or_where_no_exchange_helps(model: ClusterModel) -> None:
    new = (model.brokers[-1].node_id,)
    plan = plan_reassignment(model, Goal("add", brokers=new))
    _check(model, plan, {p.key: len(p.replicas) for p in model.partitions})
    assert _improvable(model, plan) is None
    again = ClusterModel(model.brokers, tuple(_applied(model, plan)), model.cluster_id)
    assert plan_reassignment(again, Goal("rebalance")).replicas_moved == 0, "stable"


def _skewed() -> ClusterModel:
    """bench/reassign.py's cluster: 4 brokers in racks a, b, a, b holding 40 topics of 12
    partitions (every fourth topic 20x larger), broker 1 twice its share, broker 5 (rack
    a) just added; the first replica leads."""
    brokers = tuple(BrokerNode(i, "ab"[(i - 1) % 2]) for i in range(1, 6))
    weights = [1, 1, 1, 1, 2, 3, 4, 2, 3, 4]
    partitions = []
    for t in range(40):
        for p in range(12):
            first = 1 if weights[(t + p) % 10] in (1, 2) else 2 + (t + p) % 3
            others = [b for b in (1, 2, 3, 4) if b != first]
            rest = others[(t + p) % 3 :] + others[: (t + p) % 3]
            size = 350_000 if t % 4 == 0 else 17_000
            partitions.append(Partition(f"bench-r{t:02d}", p, (first, *rest[:2]), size, first))
    return ClusterModel(brokers, tuple(partitions), "bench")


def test_an_added_broker_takes_its_share_of_bytes_not_only_of_replicas() -> None:
    model = _skewed()
    counted = plan_reassignment(model, Goal("add", brokers=(5,), balance="replicas"))
    plan = plan_reassignment(model, Goal("add", brokers=(5,)))
    _check(model, plan, {p.key: 3 for p in model.partitions})
    brokers = plan.brokers
    mean = sum(plan.after.bytes.values()) / len(brokers)
    assert counted.after.bytes[5] < 0.5 * mean, "counts alone leave the new broker light"
    for b in brokers:
        assert abs(plan.after.bytes[b] - mean) <= TOLERANCE * mean, (b, plan.after.bytes, mean)
    # exchanges among the old brokers add few moves, and little is copied beyond what
    # the new broker must receive
    assert plan.replicas_moved <= 1.05 * counted.replicas_moved, plan.replicas_moved
    assert plan.bytes_to_copy <= 1.1 * plan.after.bytes[5], (plan.bytes_to_copy, plan.after)
    leaders = {p.key: p.leader for p in model.partitions}

    def moved_leaders(plan: ReassignPlan) -> int:
        return sum(leaders[(m.topic, m.partition)] in m.removed for m in plan.moves)

    assert moved_leaders(plan) <= moved_leaders(counted), "exchanges move followers first"
    assert plan_reassignment(model, Goal("add", brokers=(5,))) == plan, "deterministic"


def test_two_thousand_partitions_spread_by_bytes() -> None:
    model = _grown_cluster()
    plan = plan_reassignment(model, Goal("add", brokers=(17, 18, 19, 20)))
    _check(model, plan, {p.key: 3 for p in model.partitions})
    mean = sum(plan.after.bytes.values()) / len(plan.brokers)
    spread = {b: round(plan.after.bytes[b] / mean, 3) for b in plan.brokers}
    assert all(abs(v - 1) <= TOLERANCE for v in spread.values()), spread
