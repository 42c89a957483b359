"""The metadata store on a real PostgreSQL server: the same API, the same values back."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy.engine import make_url

from harness.helpers import unique
from kmigrate.errors import ConflictError, NotFoundError, StoreError
from kmigrate.model.groups import GroupPosition
from kmigrate.model.links import Gap, Link, StartPosition, TopicState
from kmigrate.model.offsets import Exactness, OffsetRun, PartitionOffsetMap, PartitionUpdate
from kmigrate.model.runs import RunState
from kmigrate.store import Store, open_store
from kmigrate.store.groups import positions_of, remember_source, remember_target
from kmigrate.store.links import (
    link_topics_of,
    list_links,
    owner_of,
    put_topic,
    require_link,
    save_link,
    set_topic_state,
)
from kmigrate.store.offsets import (
    gaps_of,
    load_partitions,
    record_batch,
    record_gap,
    start_partition,
)
from kmigrate.store.runs import begin_run, get_run, report_run
from tests.integration.store.postgres import free_port

BIG = 3 * 2**31 + 7  # offsets past a 32-bit integer
NOW_MS = 1_767_225_600_000  # a Kafka timestamp (ms): also past 32 bits


@pytest.fixture
def store(postgres_url: str) -> Iterator[Store]:
    store = open_store(postgres_url)
    yield store
    store.close()


def password_of(url: str) -> str:
    password = make_url(url).password
    assert password
    return str(password)


def url_with(url: str, *, port: int | None = None, password: str | None = None) -> str:
    parsed = make_url(url)
    if port is not None:
        parsed = parsed.set(port=port)
    if password is not None:
        parsed = parsed.set(password=password)
    return parsed.render_as_string(hide_password=False)


def test_where_names_the_server_but_not_the_password(postgres_url: str, store: Store) -> None:
    port = make_url(postgres_url).port
    assert store.where.startswith("postgresql+psycopg://kmigrate:")
    assert f"@127.0.0.1:{port}/kmigrate" in store.where
    assert password_of(postgres_url) not in store.where


def test_a_link_round_trips_and_keeps_its_clusters(postgres_url: str, store: Store) -> None:
    name = unique("pg-link")
    link = Link(name, "src", "dst", r"orders\..*", StartPosition("timestamp", NOW_MS), 3)
    assert save_link(store, link) == link
    assert require_link(store, name) == link

    changed = Link(name, "src", "dst", "payments-.*", StartPosition("latest"))
    save_link(store, changed)
    assert require_link(store, name) == changed

    with pytest.raises(ConflictError, match=r"already mirrors src -> dst") as conflict:
        save_link(store, Link(name, "src", "other", "x"))
    assert require_link(store, name) == changed  # the conflicting save changed nothing
    assert password_of(postgres_url) not in str(conflict.value)

    with pytest.raises(NotFoundError, match=f"known links: .*{name}") as missing:
        require_link(store, unique("pg-nope"))
    assert password_of(postgres_url) not in str(missing.value)


def test_link_topics_and_their_owner(store: Store) -> None:
    name, target = unique("pg-owner"), unique("cluster")
    save_link(store, Link(name, "src", target, ".*"))
    put_topic(store, name, "b-topic", 3, TopicState.MIRRORING)
    put_topic(store, name, "a-topic", 1, TopicState.MIRRORING)
    put_topic(store, name, "b-topic", 6, TopicState.MIRRORING)  # partitions grew
    set_topic_state(store, name, "a-topic", TopicState.SOURCE_DELETED)

    topics = link_topics_of(store, name)
    assert [(t.link, t.topic, t.partitions, t.state) for t in topics] == [
        (name, "a-topic", 1, TopicState.SOURCE_DELETED),
        (name, "b-topic", 6, TopicState.MIRRORING),
    ]
    assert owner_of(store, target, "b-topic") == name
    assert owner_of(store, "src", "b-topic") is None
    assert owner_of(store, target, "c-topic") is None


def test_an_offset_map_with_gaps_survives_and_translates_the_same(store: Store) -> None:
    name = unique("pg-map")
    save_link(store, Link(name, "src", "dst", "t"))
    start_partition(store, name, "t", 0, source_start=BIG, target_start=BIG - 100)
    start_partition(store, name, "t", 0, source_start=1, target_start=1)  # exists: no-op
    start_partition(store, name, "t", 1, source_start=0, target_start=0)
    batches = [
        [
            PartitionUpdate("t", 0, (OffsetRun(BIG, BIG - 100, 10),), BIG + 10, NOW_MS),
            PartitionUpdate("t", 1, (OffsetRun(0, 0, 5), OffsetRun(8, 5, 2)), 12, NOW_MS + 1),
        ],
        # continues the last run (merged in the store), then a gap (compaction), then a
        # read position past the last record (a trailing transaction marker)
        [
            PartitionUpdate(
                "t",
                0,
                (OffsetRun(BIG + 10, BIG - 90, 5), OffsetRun(BIG + 20, BIG - 85, 3)),
                BIG + 25,
                None,
            )
        ],
        [PartitionUpdate("t", 0, (OffsetRun(BIG + 30, BIG - 82, 2**33),), BIG + 30 + 2**33, 7)],
    ]
    expected = {
        0: PartitionOffsetMap((), BIG, BIG),
        1: PartitionOffsetMap((), 0, 0),
    }
    for batch in batches:
        record_batch(store, name, batch)
        for update in batch:
            expected[update.partition] = expected[update.partition].extend(
                update.runs, update.source_next
            )

    states = load_partitions(store, name)
    assert [(s.topic, s.partition) for s in states] == [("t", 0), ("t", 1)]
    zero, one = states
    assert zero.map == expected[0]
    assert zero.map.runs == (
        OffsetRun(BIG, BIG - 100, 15),
        OffsetRun(BIG + 20, BIG - 85, 3),
        OffsetRun(BIG + 30, BIG - 82, 2**33),
    )
    assert (zero.target_start, zero.mirrored, zero.last_timestamp) == (
        BIG - 100,
        15 + 3 + 2**33,
        7,
    )
    assert zero.expected_target_end == BIG - 82 + 2**33
    assert zero.records_per_s > 0
    assert one.map == expected[1]
    assert (one.mirrored, one.last_timestamp) == (7, NOW_MS + 1)

    probes = [BIG - 1, BIG, BIG + 14, BIG + 17, BIG + 24, BIG + 25, BIG + 31, BIG + 30 + 2**33]
    probes += [BIG + 31 + 2**33]
    for offset in probes:
        assert zero.map.translate(offset, zero.target_start) == expected[0].translate(
            offset, BIG - 100
        )
    assert zero.map.translate(BIG + 17).target_offset == BIG - 85  # in the gap: next record
    assert zero.map.translate(BIG - 1).exactness is Exactness.BELOW_MAP_START
    assert zero.map.translate(BIG + 31 + 2**33).exactness is Exactness.NOT_YET_MIRRORED

    assert load_partitions(store, name, topic="t") == states
    assert load_partitions(store, name, topic="other") == []


def test_a_gap_is_recorded_once_and_only_widens(store: Store) -> None:
    name = unique("pg-gap")
    reason = "deleted by retention before mirrored: 'quoted' \"text\" ünïcode"
    record_gap(store, name, Gap("t", 2, BIG, BIG + 50, reason))
    record_gap(store, name, Gap("t", 2, BIG, BIG + 40, "narrower: ignored"))
    record_gap(store, name, Gap("t", 2, BIG, BIG + 70, "wider: only the end changes"))
    record_gap(store, name, Gap("a", 0, 5, 6, "another"))
    assert gaps_of(store, name) == [
        Gap("a", 0, 5, 6, "another"),
        Gap("t", 2, BIG, BIG + 70, reason),
    ]


def test_only_the_owning_process_updates_a_run(store: Store) -> None:
    name = unique("pg-run")
    assert get_run(store, name) is None
    begin_run(store, name, 4_000_000, "host-1", "/var/log/kmigrate/mirror.log")
    started = get_run(store, name)
    assert started is not None
    assert (started.pid, started.host, started.state, started.log_path) == (
        4_000_000,
        "host-1",
        RunState.STARTING,
        "/var/log/kmigrate/mirror.log",
    )
    report_run(store, name, 999, RunState.FAILED, reason="not mine")
    report_run(store, name, 4_000_000, RunState.RUNNING, records_per_s=12345.5)
    run = get_run(store, name)
    assert run is not None
    assert (run.state, run.reason, run.records_per_s) == (RunState.RUNNING, None, 12345.5)
    assert run.heartbeat_ms >= run.started_ms == started.started_ms

    report_run(store, name, 4_000_000, RunState.FAILED, reason="source unreachable")
    failed = get_run(store, name)
    assert failed is not None
    assert (failed.state, failed.reason, failed.records_per_s) == (
        RunState.FAILED,
        "source unreachable",
        12345.5,
    )

    begin_run(store, name, 7, "host-2", None)  # a new process replaces the old run
    again = get_run(store, name)
    assert again is not None
    assert (again.pid, again.host, again.state, again.log_path) == (
        7,
        "host-2",
        RunState.STARTING,
        None,
    )


def test_group_positions_round_trip(store: Store) -> None:
    name, group = unique("pg-grp"), "payments-consumer"
    remember_source(store, name, group, [("t", 1, BIG), ("t", 0, 10)])
    remember_source(store, name, group, [("t", 0, 12)])
    remember_target(store, name, group, [("t", 1, BIG + 5, BIG - 95)])
    positions = positions_of(store, name, group)
    assert [(p.topic, p.partition, p.source_offset, p.target_offset) for p in positions] == [
        ("t", 0, 12, None),
        ("t", 1, BIG + 5, BIG - 95),
    ]
    zero, one = positions
    assert zero.committed_ms is None
    assert one.committed_ms is not None and one.committed_ms >= one.seen_ms > 2**31
    assert positions_of(store, name, "other-group") == []
    assert all(isinstance(p, GroupPosition) for p in positions)


def test_reopening_keeps_the_data(postgres_url: str, store: Store) -> None:
    name = unique("pg-reopen")
    save_link(store, Link(name, "src", "dst", "t"))
    again = open_store(postgres_url)  # creating the schema again is a no-op
    try:
        assert require_link(again, name).target == "dst"
    finally:
        again.close()


def test_an_unreachable_server_is_a_one_line_store_error(postgres_url: str) -> None:
    password = password_of(postgres_url)
    with pytest.raises(StoreError) as info:
        list_links(open_store(url_with(postgres_url, port=free_port())))  # opens at first use
    message = str(info.value)
    assert "metadata store postgresql+psycopg://kmigrate:***@127.0.0.1:" in message
    assert password not in message
    assert "\n" not in message
    assert "Traceback" not in message


def test_a_wrong_password_is_a_store_error_without_either_password(postgres_url: str) -> None:
    wrong = "Wr0ng-" + password_of(postgres_url)[::-1]
    with pytest.raises(StoreError, match="password authentication failed") as info:
        list_links(open_store(url_with(postgres_url, password=wrong)))
    message = str(info.value)
    assert wrong not in message
    assert password_of(postgres_url) not in message
    assert "\n" not in message
