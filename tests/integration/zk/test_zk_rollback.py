"""`zk migrate --rollback` before the split: a move killed during the switch is rolled
back; the broker is on the old ensemble again, the new one is empty and on its own, and
no acknowledged record is lost or repeated. A sandbox of its own (old and new ensembles
of 3 servers, a 1-broker ZooKeeper-mode cluster)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kmigrate.config import load_settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import read_partition
from tests.helpers import run_cli, unique
from tests.integration.zk.conftest import old_and_new
from tests.integration.zk.test_zk_move import (
    Traffic,
    _kill_during,
    _migrate,
    server_ids_and_root,
)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with old_and_new(tmp_path_factory, "zkback") as directory:
        yield directory


def test_a_move_killed_in_the_switch_rolls_back_to_the_old_ensemble(
    sandbox: Path, tmp_path: Path
) -> None:
    config = sandbox / "clusters.yaml"
    settings = load_settings(config)
    kafka = settings.cluster("legacy")
    topic = unique("zkback")
    with ClusterAdmin(kafka) as admin:
        admin.create_topic(topic, 1)
    plan = tmp_path / "move.yaml"
    planned = run_cli(
        "zk", "plan", "--kafka", "legacy", "--from", "old", "--to", "new", "-o", str(plan),
        config=str(config),
    )  # fmt: skip
    assert planned.code == 0, planned.stderr
    traffic = Traffic(kafka.as_librdkafka(), topic)
    traffic.start()
    log = tmp_path / "migrate.log"
    try:
        _kill_during(config, plan, log, "switch: restarting broker")
        back = _migrate(config, plan, log, "--rollback")
        assert back.wait(300) == 0, log.read_text()[-3000:]
    finally:
        traffic.done.set()
        traffic.join(150)
    assert not traffic.failed, traffic.failed[:3]
    assert "is an empty ensemble of its own again" in log.read_text()

    old, new = settings.ensemble("old").connect, settings.ensemble("new").connect
    props = (sandbox / "legacy" / "broker-1" / "server.properties").read_text()
    assert f"zookeeper.connect={old}/kafka\n" in props
    assert server_ids_and_root(old) == ({"1", "2", "3"}, ["kafka", "zookeeper"])
    assert server_ids_and_root(new) == ({"4", "5", "6"}, ["zookeeper"])
    with ClusterAdmin(kafka) as admin:
        high = admin.watermarks(topic)[0].high
    values = [r.value for r in read_partition(kafka, topic, 0, 0, high)]
    assert len(values) == len(set(values)) and set(values) == traffic.acked

    again = run_cli("zk", "migrate", str(plan), config=str(config))
    assert again.code == 5, again.stderr
    assert "rolled back; write a new plan" in again.stderr
    early = run_cli("zk", "cleanup", "--kafka", "legacy", "--yes", config=str(config))
    assert early.code == 5 and "no finished ZooKeeper move" in early.stderr, early.stderr
