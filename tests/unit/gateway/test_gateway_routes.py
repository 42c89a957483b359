"""The gateway's routing table and what clients are told about its instances (pure)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kmigrate.errors import ConfigError
from kmigrate.gateway.control.placement import Instance, leader_of, topic_id
from kmigrate.gateway.control.routes import RoutingTable, parse_table

names = st.text("abcdefghij-._", min_size=1, max_size=12)


def test_a_topic_routes_whole_then_with_partition_exceptions() -> None:
    table = RoutingTable().with_route("orders", "a")
    assert [table.cluster_of("orders", p) for p in range(3)] == ["a", "a", "a"]
    table = table.with_route("orders", "b", [1, 2])
    assert [table.cluster_of("orders", p) for p in range(3)] == ["a", "b", "b"]
    table = table.with_route("orders", "a", [2])  # back to the topic's own cluster
    assert table.topics["orders"].partitions == {1: "b"}
    assert table.cluster_of("other", 0) is None
    with pytest.raises(ConfigError, match="route the whole topic first"):
        RoutingTable().with_route("new", "a", [0])
    assert "orders" not in table.without("orders").topics


@given(st.dictionaries(names, st.tuples(names, st.dictionaries(st.integers(0, 99), names))))
def test_the_table_reads_back_from_its_znode(routes: dict[str, tuple[str, dict[int, str]]]) -> None:
    table = RoutingTable()
    for topic, (cluster, exceptions) in routes.items():
        table = table.with_route(topic, cluster)
        for partition, other in exceptions.items():
            table = table.with_route(topic, other, [partition])
    again = parse_table(table.to_json(), 7)
    assert again.version == 7
    assert again.topics == table.topics


@pytest.mark.parametrize("raw", [b"{", b'{"format": 9, "topics": {}}', b'{"format": 1}'])
def test_an_unreadable_table_is_one_line(raw: bytes) -> None:
    with pytest.raises(ConfigError, match="routing table is not readable"):
        parse_table(raw, 1)


@given(st.sets(st.integers(0, 50), min_size=1, max_size=6), names)
def test_leaders_spread_over_live_instances_and_stay_put(ids: set[int], topic: str) -> None:
    instances = [Instance(i, "127.0.0.1", 9000 + i) for i in ids]
    leaders = [leader_of(topic, p, instances) for p in range(len(ids) * 4)]
    counts = {i: sum(1 for leader in leaders if leader == i) for i in instances}
    assert set(counts.values()) == {4}, "every instance leads the same share"
    assert leaders == [leader_of(topic, p, list(reversed(instances))) for p in range(len(leaders))]
    assert topic_id(topic) == topic_id(topic) and topic_id(topic) != topic_id(topic + "x")
