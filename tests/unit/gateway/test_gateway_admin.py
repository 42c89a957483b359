"""The gateway's admin rules (pure): where config resources go, what a broker's configs
look like when a gateway instance stands for the broker, DescribeTopicPartitions'
paging, which topic changes are refused, DeleteRecords of a moved partition, and the
default route in the routing table."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from kio.schema.errors import ErrorCode

from kmigrate.gateway.control.partition_moves import Migration, Mode, Segment, Status
from kmigrate.gateway.control.placement import Instance
from kmigrate.gateway.control.routes import RoutingTable, parse_table
from kmigrate.gateway.protocol.entities import item_type
from kmigrate.gateway.serving import admin_configs as configs
from kmigrate.gateway.serving.admin_records import delete_point
from kmigrate.gateway.serving.admin_topics import check_create, check_delete, check_partitions
from kmigrate.gateway.serving.cluster import page
from kmigrate.kafka.protocol.wire import request_type, response_type

ME = Instance(2, "127.0.0.1", 19092)
INSTANCES = [Instance(1, "127.0.0.1", 19091), ME]


def _moved(status: Status = Status.MIGRATED, flipped: bool = True) -> Migration:
    return Migration(
        "a", "b", status if flipped else Status.MIGRATING, 3, Mode.SMOOTH,
        100 if flipped else None, 0,
    )  # fmt: skip


def _table() -> RoutingTable:
    table = RoutingTable().with_route("orders", "a").with_route("split", "a")
    table = table.with_route("split", "b", [1]).with_route("moved", "a")
    return table.with_migration("moved", 0, _moved(), replace_last=False)


def _resource(kind: int, name: str) -> SimpleNamespace:
    return SimpleNamespace(resource_type=kind, resource_name=name)


def test_config_resources_go_where_they_live() -> None:
    table = _table()
    where = configs.place_describe(_resource(configs.TOPIC, "split"), table, "home", INSTANCES, 7)
    assert where == configs.Sent(("a",), "split"), "described by the topic's route cluster"
    where = configs.place_alter(_resource(configs.TOPIC, "split"), table, "home")
    assert where == configs.Sent(("a", "b"), "split"), "altered on every cluster holding it"
    where = configs.place_alter(_resource(configs.TOPIC, "moved"), table, "home")
    assert isinstance(where, configs.Sent) and where.clusters == ("a", "b"), "origin not aged"
    broker = configs.place_describe(_resource(configs.BROKER, "2"), table, "home", INSTANCES, 7)
    assert broker == configs.Sent(("home",), "7", 7, ME, standing_in=True)
    assert configs.place_describe(
        _resource(configs.GROUP, "g"), table, "home", INSTANCES, 7
    ) == configs.Sent(("home",), "g")
    refused = [
        configs.place_describe(_resource(configs.TOPIC, "nope"), table, "home", INSTANCES, 7),
        configs.place_describe(_resource(configs.BROKER, "9"), table, "home", INSTANCES, 7),
        configs.place_describe(_resource(configs.BROKER_LOGGER, "1"), table, "h", INSTANCES, 7),
        configs.place_alter(_resource(configs.BROKER, "1"), table, "home"),
    ]
    assert [r.code for r in refused if isinstance(r, configs.Refused)] == [
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.invalid_request,
        ErrorCode.policy_violation,
        ErrorCode.policy_violation,
    ]
    assert "live instances: 1, 2" in str(refused[1])


def test_a_backend_brokers_configs_become_the_instances() -> None:
    result = item_type(response_type(32, 4), "results")
    entry_cls = item_type(result, "configs")
    synonym_cls = item_type(entry_cls, "synonyms")

    def entry(name: str, value: str) -> object:
        synonym = synonym_cls(name=name, value=value, source=5)
        return entry_cls(name=name, value=value, read_only=True, config_source=5,
                         is_sensitive=False, synonyms=(synonym,), config_type=2,
                         documentation=None)  # fmt: skip

    backend = [
        entry("node.id", "1"),
        entry("advertised.listeners", "PLAINTEXT://127.0.0.1:35111"),
        entry("controller.quorum.voters", "1@127.0.0.1:35112"),
        entry("zookeeper.connect", "127.0.0.1:2181"),
        entry("log.retention.hours", "168"),
    ]
    shown = {e.name: e for e in configs.sanitized(backend, ME)}
    assert {n: e.value for n, e in shown.items()} == {
        "node.id": "2",
        "advertised.listeners": "PLAINTEXT://127.0.0.1:19092",
        "log.retention.hours": "168",
    }
    assert shown["node.id"].synonyms[0].value == "2"
    defaults = configs.sanitized(backend, None)
    assert [e.name for e in defaults] == ["log.retention.hours"]


@pytest.mark.parametrize(
    ("cursor", "limit", "pages"),
    [
        (None, 100, ([("a", range(0, 3)), ("b", None), ("c", range(0, 2))], None)),
        (None, 2, ([("a", range(0, 2))], ("a", 2))),
        (("a", 2), 1, ([("a", range(2, 3))], ("b", 0))),  # full at a topic's end
        (("a", 2), 2, ([("a", range(2, 3)), ("b", None), ("c", range(0, 1))], ("c", 1))),
        (("c", 1), 5, ([("c", range(1, 2))], None)),
    ],
)
def test_describe_topic_partitions_pages_like_a_broker(
    cursor: tuple[str, int] | None,
    limit: int,
    pages: tuple[list[tuple[str, range | None]], tuple[str, int] | None],
) -> None:
    assert page([("a", 3), ("b", None), ("c", 2)], cursor, limit) == pages


def test_every_partition_is_paged_exactly_once() -> None:
    topics = [(f"t{n}", n % 4 + 1) for n in range(9)]
    cursor, seen = None, []
    for _ in range(50):
        chosen, cursor = page(topics, cursor, 3)
        seen += [(name, p) for name, which in chosen for p in which or ()]
        if cursor is None:
            break
    assert seen == [(name, p) for name, count in topics for p in range(count)]


def test_topic_changes_the_gateway_refuses_say_why() -> None:
    table = _table()
    topic = SimpleNamespace(name="new", assignments=(), count=4)
    code, why = check_create(topic, table, ["a"]) or (None, "")
    assert code is ErrorCode.policy_violation and "kmigrate gateway route default" in why
    with_default = table.with_default("a")
    assert check_create(topic, with_default, ["a", "b"]) is None
    assert check_create(topic, table.with_default("gone"), ["a"])[0] is ErrorCode.policy_violation  # type: ignore[index]
    exists = SimpleNamespace(name="orders", assignments=())
    assert check_create(exists, with_default, ["a"])[0] is ErrorCode.topic_already_exists  # type: ignore[index]
    assigned = SimpleNamespace(name="new", assignments=(object(),))
    assert check_create(assigned, with_default, ["a"])[0] is ErrorCode.invalid_replica_assignment  # type: ignore[index]

    assert check_delete("orders", table) is None
    assert check_delete("nope", table)[0] is ErrorCode.unknown_topic_or_partition  # type: ignore[index]
    moving = table.with_route("m", "a").with_migration(
        "m", 1, _moved(flipped=False), replace_last=False
    )
    code, why = check_delete("m", moving) or (None, "")
    assert code is ErrorCode.reassignment_in_progress and "partition(s) 1" in why

    grow = SimpleNamespace(name="orders", assignments=None, count=5)
    assert check_partitions(grow, table) is None
    code, why = check_partitions(SimpleNamespace(name="split", assignments=None), table) or (
        None, "",
    )  # fmt: skip
    assert code is ErrorCode.policy_violation and "a, b" in why


def test_delete_records_of_a_moved_partition_maps_offsets_or_refuses() -> None:
    origin_read = [Segment("a", 0, 0, 100), Segment("b", 100, 0, None)]
    aged = [Segment("a", 0, 0, 100, readable=False), Segment("b", 100, 5, None)]
    item_cls = item_type(item_type(request_type(21, 2), "topics"), "partitions")
    item = item_cls(partition_index=0, offset=130)
    assert delete_point(origin_read, item) is ErrorCode.policy_violation
    part = delete_point(aged, item)
    assert not isinstance(part, ErrorCode)
    assert part.cluster == "b" and part.item.offset == 35
    reply_cls = item_type(item_type(response_type(21, 2), "topics"), "partitions")
    reply = reply_cls(partition_index=0, low_watermark=35, error_code=ErrorCode.none)
    assert part.fix(reply).low_watermark == 130
    everything = delete_point(aged, item_cls(partition_index=0, offset=-1))
    assert not isinstance(everything, ErrorCode) and everything.item.offset == -1
    below = delete_point(aged, item_cls(partition_index=0, offset=50))
    assert below is ErrorCode.offset_out_of_range


def test_the_default_route_is_kept_with_the_table() -> None:
    table = RoutingTable().with_route("t", "a").with_default("b")
    again = parse_table(table.to_json(), 3)
    assert again.default == "b" and again.topics == table.topics
    assert parse_table(again.with_default(None).to_json(), 4).default is None
    old = b'{"format": 2, "topics": {}, "shielded": []}'  # written before default routes
    assert parse_table(old, 1).default is None
