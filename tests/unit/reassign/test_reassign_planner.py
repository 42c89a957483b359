"""The reassignment planner's invariants on random clusters (hypothesis): every goal
reached, racks kept apart, replicas and preferred leaders within one of even, and no
more replicas moved than the goal needs."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from kmigrate.errors import ConfigError, ConflictError
from kmigrate.reassign.model import BrokerNode, ClusterModel, Partition
from kmigrate.reassign.planner import Goal, ReassignPlan, plan_reassignment


@st.composite
def clusters(draw: st.DrawFn, spare: int = 0) -> ClusterModel:
    """3-7 brokers (``spare`` of them empty, as just added), no racks or 2-3 racks of
    as many brokers each, 1-4 topics of 1-8 partitions, replicas anywhere."""
    n = draw(st.integers(3 + spare, 7 + spare))
    racks = draw(st.sampled_from([r for r in (0, 2, 3) if r == 0 or n % r == 0]))
    brokers = tuple(BrokerNode(i, f"r{i % racks}" if racks else None) for i in range(1, n + 1))
    holders = [b.node_id for b in brokers][: n - spare]
    partitions = []
    for t in range(draw(st.integers(1, 4))):
        rf = draw(st.integers(1, min(3, len(holders))))
        for p in range(draw(st.integers(1, 8))):
            replicas = draw(st.permutations(holders).map(lambda h, rf=rf: tuple(h[:rf])))
            size = draw(st.integers(0, 10_000))
            partitions.append(Partition(f"t{t}", p, replicas, size))
    return ClusterModel(brokers, tuple(partitions), "cluster-1")


def _check(model: ClusterModel, plan: ReassignPlan, rf: dict[tuple[str, int], int]) -> None:
    after = {p.key: p.replicas for p in model.partitions}
    for move in plan.moves:
        after[(move.topic, move.partition)] = move.after
    racks = model.racks()
    eligible = set(plan.brokers)
    rack_count = len({racks[b] for b in eligible}) if all(racks[b] for b in eligible) else 0
    for key, replicas in after.items():
        assert len(replicas) == rf[key], (key, replicas)
        assert len(set(replicas)) == len(replicas)
        assert set(replicas) <= eligible, (key, replicas, eligible)
        if rack_count >= len(replicas):
            assert len({racks[b] for b in replicas}) == len(replicas), (key, replicas)
    if rack_count and len({sum(racks[b] == r for b in eligible) for r in racks.values()}) > 1:
        return  # racks of unequal size: keeping replicas apart comes before balance
    counts = Counter(b for r in after.values() for b in r)
    average = sum(counts.values()) / len(eligible)
    for b in eligible:
        assert abs(counts[b] - average) <= 1, (b, counts, average)
    leaders = Counter(r[0] for r in after.values())
    lead_average = len(after) / len(eligible)
    for b in eligible:
        assert abs(leaders[b] - lead_average) <= 1 + _leader_slack(after, eligible), (b, leaders)


def _leader_slack(after: dict[tuple[str, int], tuple[int, ...]], eligible: set[int]) -> int:
    """Leaders can only be spread among a partition's replicas: with single-replica
    partitions a broker may have to lead more than its share."""
    return 0 if all(len(r) > 1 for r in after.values()) else len(after)


def _bound(model: ClusterModel, plan: ReassignPlan, required: int) -> int:
    """Replicas the goal needs moved at most: the required ones (each may push its new
    broker over its share: one more move), plus what balance needs: the larger of the
    brokers' excess over the ceiling of the average and their shortfall below its
    floor. With racks kept apart one unit of balance may take two moves: the only
    brokers an over-full broker's replica may go to can be full themselves, and one of
    them first hands a replica on (the planner's chain)."""
    counts = Counter(b for p in model.partitions for b in p.replicas if b in plan.brokers)
    total = sum(len(p.replicas) for p in model.partitions)
    ceiling = math.ceil(total / len(plan.brokers))
    floor = total // len(plan.brokers)
    excess = sum(max(0, counts[b] - ceiling) for b in plan.brokers)
    shortfall = sum(max(0, floor - counts[b]) for b in plan.brokers)
    racks = model.racks()
    per_unit = 2 if all(racks[b] for b in plan.brokers) else 1
    return 2 * required + per_unit * max(excess, shortfall)


def _rack_repeats(model: ClusterModel, eligible: list[int]) -> int:
    racks = model.racks()
    if not all(racks[b] for b in eligible):
        return 0
    rack_count = len({racks[b] for b in eligible})
    repeats = 0
    for p in model.partitions:
        if rack_count >= len(p.replicas):
            repeats += len(p.replicas) - len({racks[b] for b in p.replicas})
    return repeats


fast = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@fast
@given(clusters())
def test_rebalance_reaches_the_bounds_moving_only_the_excess(model: ClusterModel) -> None:
    plan = plan_reassignment(model, Goal("rebalance", balance="replicas"))
    _check(model, plan, {p.key: len(p.replicas) for p in model.partitions})
    required = _rack_repeats(model, model.live_ids)
    assert plan.replicas_moved <= _bound(model, plan, required)
    again = ClusterModel(model.brokers, tuple(_applied(model, plan)), model.cluster_id)
    assert plan_reassignment(again, Goal("rebalance", balance="replicas")).replicas_moved == 0


@fast
@given(clusters(spare=2))
def test_added_brokers_take_their_share(model: ClusterModel) -> None:
    new = tuple(b.node_id for b in model.brokers[-2:])
    plan = plan_reassignment(model, Goal("add", brokers=new, balance="replicas"))
    _check(model, plan, {p.key: len(p.replicas) for p in model.partitions})
    required = _rack_repeats(model, model.live_ids)
    assert plan.replicas_moved <= _bound(model, plan, required)


@fast
@given(clusters(), st.data())
def test_a_drained_broker_holds_nothing_and_only_its_replicas_must_move(
    model: ClusterModel, data: st.DataObject
) -> None:
    victim = data.draw(st.sampled_from(model.live_ids))
    widest = max(len(p.replicas) for p in model.partitions)
    assume(len(model.live_ids) - 1 >= widest)
    plan = plan_reassignment(model, Goal("drain", brokers=(victim,), balance="replicas"))
    _check(model, plan, {p.key: len(p.replicas) for p in model.partitions})
    assert plan.after.replicas.get(victim, 0) == 0
    on_victim = sum(victim in p.replicas for p in model.partitions)
    eligible = [b for b in model.live_ids if b != victim]
    assert plan.replicas_moved <= _bound(model, plan, on_victim + _rack_repeats(model, eligible))


@fast
@given(clusters(), st.integers(1, 3))
def test_a_replication_factor_change_adds_or_drops_replicas(model: ClusterModel, rf: int) -> None:
    assume(rf <= len(model.live_ids))
    plan = plan_reassignment(model, Goal("replication-factor", replication_factor=rf))
    _check(model, plan, {p.key: rf for p in model.partitions})


@fast
@given(clusters(), st.data())
def test_replicas_on_a_dead_broker_move_to_live_ones(
    model: ClusterModel, data: st.DataObject
) -> None:
    dead = data.draw(st.sampled_from(model.live_ids))
    widest = max(len(p.replicas) for p in model.partitions)
    assume(len(model.live_ids) - 1 >= widest)
    brokers = tuple(BrokerNode(b.node_id, b.rack, b.node_id != dead) for b in model.brokers)
    broken = ClusterModel(brokers, model.partitions, model.cluster_id)
    plan = plan_reassignment(broken, Goal("fix-offline"))
    _check(broken, plan, {p.key: len(p.replicas) for p in model.partitions})
    assert plan.after.replicas.get(dead, 0) == 0


def _applied(model: ClusterModel, plan: ReassignPlan) -> list[Partition]:
    after = {(m.topic, m.partition): m.after for m in plan.moves}
    return [
        Partition(p.topic, p.partition, after.get(p.key, p.replicas), p.size_bytes)
        for p in model.partitions
    ]


def test_the_smallest_replicas_move_first() -> None:
    brokers = tuple(BrokerNode(i) for i in (1, 2, 3))
    partitions = (
        Partition("big", 0, (1,), 1_000_000),
        Partition("small", 0, (1,), 10),
        Partition("mid", 0, (1,), 5_000),
        Partition("x", 0, (2,), 1),
        Partition("y", 0, (3,), 1),
    )
    plan = plan_reassignment(
        ClusterModel(brokers, partitions), Goal("rebalance", balance="replicas")
    )
    assert [(m.topic, len(m.added)) for m in plan.moves] == [("small", 1)]
    assert plan.bytes_to_copy == 10


def test_a_new_broker_gets_followers_not_leaders() -> None:
    """A move that takes a partition's leader away pauses its producers when it ends:
    with a follower to give instead, the planner never moves a current leader."""
    brokers = tuple(BrokerNode(i) for i in (1, 2, 3, 4))
    partitions = tuple(
        Partition("t", p, (1, 2, 3), 100, leader) for p, leader in enumerate((1, 2, 3, 1))
    )
    model = ClusterModel(brokers, partitions)
    plan = plan_reassignment(model, Goal("add", brokers=(4,)))
    assert sum(len(m.added) for m in plan.moves) == 3  # 12 replicas, 3 per broker
    for move in plan.moves:
        assert partitions[move.partition].leader not in move.removed, move


def _grown_cluster() -> ClusterModel:
    """20 brokers in 4 racks of 5, the last 4 (one per rack) just added and empty; 2,000
    partitions of 3 replicas in 3 different racks on the other 16, brokers 5, 10 and 15
    taking twice the others' share; sizes up to 1 GiB, current leaders anywhere."""
    rng = random.Random(33)
    brokers = tuple(BrokerNode(i, f"r{(i - 1) % 4}") for i in range(1, 21))
    by_rack: dict[str, list[int]] = {}
    for b in brokers[:16]:
        by_rack.setdefault(str(b.rack), []).append(b.node_id)
    partitions = []
    for p in range(2_000):
        racks = rng.sample(sorted(by_rack), 3)
        replicas = tuple(
            rng.choices(by_rack[r], [2 if b % 5 == 0 else 1 for b in by_rack[r]])[0] for r in racks
        )
        size, leader = rng.randrange(1 << 30), rng.choice(replicas)
        partitions.append(Partition(f"t{p % 40}", p // 40, replicas, size, leader))
    return ClusterModel(brokers, tuple(partitions), "cluster-1")


def test_two_thousand_partitions_on_twenty_brokers() -> None:
    """At a scale the random clusters above never reach (speed: bench/reassign_scale.py):
    every rule holds, each added broker takes its share, the plan moves no replica more
    than the brokers' excess over the average needs and crosses racks only as far as the
    racks' totals differ from their share, and is the same when made again."""
    model = _grown_cluster()
    added = (17, 18, 19, 20)
    plan = plan_reassignment(model, Goal("add", brokers=added, balance="replicas"))
    _check(model, plan, {p.key: 3 for p in model.partitions})
    assert all(plan.after.replicas[b] in (299, 300, 301) for b in added), plan.after
    counts = Counter(b for p in model.partitions for b in p.replicas)
    excess = sum(max(0, n - 300) for n in counts.values())  # 6,000 replicas, 300 each
    assert plan.replicas_moved <= _bound(model, plan, _rack_repeats(model, model.live_ids))
    assert plan.replicas_moved == excess, "each move takes one replica off an excess"
    racks = model.racks()
    crossing = sum(
        (Counter(racks[b] for b in m.added) - Counter(racks[b] for b in m.removed)).total()
        for m in plan.moves
    )
    rack_totals = Counter(racks[b] for p in model.partitions for b in p.replicas)
    rack_excess = sum(max(0, n - 1_500) for n in rack_totals.values())  # 5 brokers x 300
    assert crossing == rack_excess, "moves within a rack first: racks crossed only as needed"
    assert plan_reassignment(model, Goal("add", brokers=added, balance="replicas")) == plan
    again = ClusterModel(model.brokers, tuple(_applied(model, plan)), model.cluster_id)
    assert plan_reassignment(again, Goal("rebalance", balance="replicas")).replicas_moved == 0


def test_draining_a_broker_of_two_thousand_partitions() -> None:
    model = _grown_cluster()
    plan = plan_reassignment(model, Goal("drain", brokers=(5,), balance="replicas"))
    _check(model, plan, {p.key: 3 for p in model.partitions})
    assert plan.after.replicas.get(5, 0) == 0
    on_victim = sum(5 in p.replicas for p in model.partitions)
    eligible = [b for b in model.live_ids if b != 5]
    assert plan.replicas_moved <= _bound(model, plan, on_victim + _rack_repeats(model, eligible))


@pytest.mark.parametrize(
    ("goal", "says"),
    [
        (Goal("drain", brokers=(9,)), "broker 9 is not in the cluster"),
        (Goal("drain", brokers=(1, 2)), "1 broker\\(s\\) would be left for partitions of 2"),
        (Goal("replication-factor", replication_factor=4), "3 broker\\(s\\) would be left"),
        (Goal("rebalance", topics="nomatch"), "no topic matches"),
        (Goal("file", assignment={("t", 0): (1, 7)}), "broker\\(s\\) 7"),
        (Goal("file", assignment={("u", 0): (1,)}), "u\\[0\\]"),
    ],
)
def test_impossible_goals_are_refused_in_one_line(goal: Goal, says: str) -> None:
    brokers = tuple(BrokerNode(i) for i in (1, 2, 3))
    model = ClusterModel(brokers, (Partition("t", 0, (1, 2)),))
    with pytest.raises((ConflictError, ConfigError), match=says):
        plan_reassignment(model, goal)
