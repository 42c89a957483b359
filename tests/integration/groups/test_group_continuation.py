"""A group stopped on the source at a random point continues on the target with the
first record it had not consumed: no record twice, none skipped.

Real mirrors (`kmigrate mirror start`), real consumers on both sides (confluent-kafka,
and Kafka's Java console consumer), `kmigrate groups migrate --yes` in between.
"""

from __future__ import annotations

import random
import threading
from pathlib import Path

import pytest

from harness.helpers import run_cli, unique
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import produce
from tests.integration.conftest import Clusters
from tests.integration.groups.conftest import LINK, new_mirror, records, topic_of
from tests.integration.groups.consumers import (
    assert_exactly_once,
    console_consume,
    consume_and_commit,
    consume_to_end,
    take_cut,
)
from tests.integration.mirror.harness import MirrorProcess, wait_caught_up


def migrate(config: Path, link: str, group: str, *extra: str) -> None:
    result = run_cli(
        "groups", "migrate", "--link", link, "--group", group, "--yes", *extra, config=str(config)
    )
    assert result.code == 0, result.stderr
    assert "committed" in result.stdout or "already" in result.stdout, result.stdout


@pytest.mark.parametrize(
    ("kind", "client"), [("plain", "confluent"), ("compact", "java"), ("txn", "java")]
)
def test_group_continues_exactly_once(
    mirror: MirrorProcess, clusters: Clusters, kind: str, client: str
) -> None:
    topic, group = topic_of(kind), unique(f"g-{kind}")
    wait_caught_up(mirror, clusters.source, [topic])
    with ClusterAdmin(clusters.source) as admin:
        marks = admin.watermarks(topic)
    total = len(take_cut(clusters.source, topic, group, []).present)
    assert total > 2, marks
    consumed = consume_and_commit(clusters.source, topic, group, random.randint(1, total - 1))
    if kind == "plain":
        # More records arrive after the group stopped: migrate must wait for the mirror.
        produce(clusters.source, topic, records(topic, 10_000, 1500, 3))
    cut = take_cut(clusters.source, topic, group, consumed)
    migrate(mirror.config, LINK, group, "--wait", "--timeout", "120")
    if client == "java":
        continued = console_consume(clusters.target, topic, group, len(cut.expected_rest()))
    else:
        continued = consume_to_end(clusters.target, topic, group)
    assert_exactly_once(cut, continued)


def test_group_continues_across_a_mirror_killed_mid_way(clusters: Clusters, tmp_path: Path) -> None:
    topic, group = unique("grp-restart"), unique("g-restart")
    with ClusterAdmin(clusters.source) as admin:
        admin.create_topic(topic, 4)
    produce(clusters.source, topic, records(topic, 0, 4000, 4))
    mirror = new_mirror(clusters, tmp_path, "restart", "--topics", topic).start()
    mirror.wait_running()
    stop = threading.Event()

    def produce_steadily() -> None:
        start = 4000
        while not stop.is_set():
            produce(clusters.source, topic, records(topic, start, 200, 4))
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
    migrate(mirror.config, "restart", group)
    assert mirror.stop() == 0, mirror.tail()
    assert_exactly_once(cut, consume_to_end(clusters.target, topic, group))


def test_group_continues_on_a_link_started_at_latest(clusters: Clusters, tmp_path: Path) -> None:
    topic, group = unique("grp-latest"), unique("g-latest")
    with ClusterAdmin(clusters.source) as admin:
        admin.create_topic(topic, 2)
    produce(clusters.source, topic, records(topic, 0, 300, 2))
    created = run_cli(
        "groups",
        "create",
        "--cluster",
        "source",
        "--group",
        group,
        "--topics",
        topic,
        "--from",
        "latest",
        config=str(clusters.config_path),
    )
    assert created.code == 0, created.stderr
    mirror = new_mirror(clusters, tmp_path, "latest", "--topics", topic, "--from", "latest").start()
    mirror.wait_running()
    wait_caught_up(mirror, clusters.source, [topic])
    produce(clusters.source, topic, records(topic, 300, 700, 2))
    consumed = consume_and_commit(clusters.source, topic, group, random.randint(1, 699))
    cut = take_cut(clusters.source, topic, group, consumed)
    # The map starts at 150 per partition: the target has none of the 300 old records.
    migrate(mirror.config, "latest", group, "--wait", "--timeout", "120")
    assert mirror.stop() == 0, mirror.tail()
    continued = console_consume(clusters.target, topic, group, len(cut.expected_rest()))
    assert_exactly_once(cut, continued)
    assert not [v for v in cut.consumed + continued if int(v.rsplit(b"-", 1)[1]) < 300]
