"""A group stopped on the source at a random point continues on the target with the
first record it had not consumed: no record twice, none skipped.

Real mirrors (`kmigrate mirror start`), real consumers on both sides (confluent-kafka,
and Kafka's Java console consumer), `kmigrate groups migrate --apply` in between.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import produce
from kmigrate.models import Record
from tests.helpers import run_cli, unique
from tests.integration.conftest import Clusters
from tests.integration.groups.consumers import (
    assert_exactly_once,
    console_consume,
    consume_and_commit,
    consume_to_end,
    take_cut,
)
from tests.integration.mirror.harness import (
    MirrorProcess,
    compacted_with_gaps,
    mirror_config,
    transactional,
    wait_caught_up,
)

PREFIX = unique("grp")
LINK = "groups"


def _topic(kind: str) -> str:
    return f"{PREFIX}-{kind}"


def _records(topic: str, start: int, n: int, partitions: int) -> list[Record]:
    return [
        Record(f"k{i}".encode(), f"{topic}-{i}".encode(), partition=i % partitions)
        for i in range(start, start + n)
    ]


def _mirror(clusters: Clusters, folder: Path, link: str, *args: str) -> MirrorProcess:
    return MirrorProcess(
        mirror_config(clusters.config_path, folder),
        link,
        ("--source", "source", "--target", "target", "--refresh-interval", "2", *args),
        folder / f"{link}.log",
    )


@pytest.fixture(scope="module")
def mirror(clusters: Clusters, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MirrorProcess]:
    with ClusterAdmin(clusters.source) as admin:
        admin.create_topic(_topic("plain"), 3)
        admin.create_topic(_topic("txn"), 2)
        admin.create_topic(_topic("sync"), 2)
    produce(clusters.source, _topic("plain"), _records(_topic("plain"), 0, 3000, 3))
    produce(clusters.source, _topic("sync"), _records(_topic("sync"), 0, 2000, 2))
    transactional(clusters.source, _topic("txn"), rounds=20)
    compacted_with_gaps(clusters.source, _topic("compact"))
    process = _mirror(
        clusters, tmp_path_factory.mktemp("groups"), LINK, "--topics", f"{PREFIX}-.*"
    ).start()
    process.wait_running()
    yield process
    process.stop()


def _migrate(config: Path, link: str, group: str, *extra: str) -> None:
    result = run_cli(
        "groups", "migrate", "--link", link, "--group", group, "--apply", *extra, config=str(config)
    )
    assert result.code == 0, result.stderr
    assert "committed" in result.stdout or "already" in result.stdout, result.stdout


@pytest.mark.parametrize(
    ("kind", "client"), [("plain", "confluent"), ("compact", "java"), ("txn", "java")]
)
def test_group_continues_exactly_once(
    mirror: MirrorProcess, clusters: Clusters, kind: str, client: str
) -> None:
    topic, group = _topic(kind), unique(f"g-{kind}")
    wait_caught_up(mirror, clusters.source, [topic])
    with ClusterAdmin(clusters.source) as admin:
        marks = admin.watermarks(topic)
    total = len(take_cut(clusters.source, topic, group, []).present)
    assert total > 2, marks
    consumed = consume_and_commit(clusters.source, topic, group, random.randint(1, total - 1))
    if kind == "plain":
        # More records arrive after the group stopped: migrate must wait for the mirror.
        produce(clusters.source, topic, _records(topic, 10_000, 1500, 3))
    cut = take_cut(clusters.source, topic, group, consumed)
    _migrate(mirror.config, LINK, group, "--wait", "--timeout", "120")
    if client == "java":
        continued = console_consume(clusters.target, topic, group, len(cut.expected_rest()))
    else:
        continued = consume_to_end(clusters.target, topic, group)
    assert_exactly_once(cut, continued)


def test_group_continues_across_a_mirror_killed_mid_way(clusters: Clusters, tmp_path: Path) -> None:
    topic, group = unique("grp-restart"), unique("g-restart")
    with ClusterAdmin(clusters.source) as admin:
        admin.create_topic(topic, 4)
    produce(clusters.source, topic, _records(topic, 0, 4000, 4))
    mirror = _mirror(clusters, tmp_path, "restart", "--topics", topic).start()
    mirror.wait_running()
    stop = threading.Event()

    def produce_steadily() -> None:
        start = 4000
        while not stop.is_set():
            produce(clusters.source, topic, _records(topic, start, 200, 4))
            start += 200

    writer = threading.Thread(target=produce_steadily, daemon=True)
    writer.start()
    try:
        consumed = consume_and_commit(clusters.source, topic, group, random.randint(500, 3500))
        stop.wait(random.uniform(0.5, 3.0))
        mirror.kill9()
    finally:
        stop.set()
        writer.join(30)
    mirror.start().wait_running()
    wait_caught_up(mirror, clusters.source, [topic])
    cut = take_cut(clusters.source, topic, group, consumed)
    _migrate(mirror.config, "restart", group)
    assert mirror.stop() == 0, mirror.tail()
    assert_exactly_once(cut, consume_to_end(clusters.target, topic, group))


def test_group_continues_on_a_link_started_at_latest(clusters: Clusters, tmp_path: Path) -> None:
    topic, group = unique("grp-latest"), unique("g-latest")
    with ClusterAdmin(clusters.source) as admin:
        admin.create_topic(topic, 2)
    produce(clusters.source, topic, _records(topic, 0, 300, 2))
    created = run_cli(
        "groups",
        "create",
        "--cluster",
        "source",
        "--group",
        group,
        "--topic",
        topic,
        "--at",
        "latest",
        config=str(clusters.config_path),
    )
    assert created.code == 0, created.stderr
    mirror = _mirror(clusters, tmp_path, "latest", "--topics", topic, "--start", "latest").start()
    mirror.wait_running()
    wait_caught_up(mirror, clusters.source, [topic])
    produce(clusters.source, topic, _records(topic, 300, 700, 2))
    consumed = consume_and_commit(clusters.source, topic, group, random.randint(1, 699))
    cut = take_cut(clusters.source, topic, group, consumed)
    # The map starts at 150 per partition: the target has none of the 300 old records.
    _migrate(mirror.config, "latest", group, "--wait", "--timeout", "120")
    assert mirror.stop() == 0, mirror.tail()
    continued = console_consume(clusters.target, topic, group, len(cut.expected_rest()))
    assert_exactly_once(cut, continued)
    assert not [v for v in cut.consumed + continued if int(v.rsplit(b"-", 1)[1]) < 300]
