"""The mirror and `groups sync` ride through broker restarts (issue "Ride through broker
restarts"): brokers killed with SIGKILL and started again while records flow, and the
copy still exact record by record, the same process still alive.

These tests kill brokers, so they run on a sandbox of their own (never the session's
clusters): `src` and `dst` with one broker each, and `wide` with three. Each cluster's
timeout_s is 5 s (a user setting), so outages are noticed within seconds.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from harness.helpers import run_cli, unique, wait_for
from kmigrate.config import SANDBOX_CONFIG_NAME, ClusterConfig, load_settings
from kmigrate.errors import KMigrateError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.sandbox import manager
from kmigrate.sandbox.state import load_state
from kmigrate.store import store_for
from kmigrate.store.offsets import load_partitions
from tests.integration.mirror.harness import (
    MirrorProcess,
    assert_exact_copy,
    caught_up,
    mirror_config,
    wait_caught_up,
)

TIMEOUT_S = 5
_QUICK = ("--interval", "2s")


@dataclass(frozen=True)
class Blinking:
    """A sandbox whose brokers the tests kill and start again."""

    directory: Path

    @property
    def clusters_yaml(self) -> Path:
        return self.directory / SANDBOX_CONFIG_NAME

    def cluster(self, name: str) -> ClusterConfig:
        return load_settings(self.clusters_yaml).cluster(name)

    def brokers(self, name: str) -> dict[int, int]:
        """node id -> pid of the cluster's brokers as the sandbox started them."""
        cluster = load_state(self.directory).clusters[name]
        return {b.node_id: b.pid for b in cluster.brokers if b.pid is not None}

    def kill(self, name: str, node_id: int | None = None, sig: int = signal.SIGKILL) -> None:
        """SIGKILL one broker (the only one by default), as a crash does; SIGTERM is a
        controlled shutdown (leaders move away first), as in a rolling restart."""
        brokers = self.brokers(name)
        pid = brokers[node_id if node_id is not None else min(brokers)]
        os.kill(pid, sig)
        wait_for(lambda: not _alive(pid), timeout=60, message=f"broker {pid} of {name} gone")

    def restart(self, name: str) -> None:
        """Start the cluster's dead brokers again, on the same ports and data."""
        count = len(load_state(self.directory).clusters[name].brokers)
        manager.up(self.directory, manager.UpRequest(clusters=[name], brokers=count))


def _alive(pid: int) -> bool:
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture(scope="module")
def blink(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Blinking]:
    directory = tmp_path_factory.mktemp("blink").resolve()
    manager.up(directory, manager.UpRequest(clusters=["src", "dst"]))
    manager.up(directory, manager.UpRequest(clusters=["wide"], brokers=3))
    try:
        yield Blinking(directory)
    finally:
        manager.down(directory, purge=True, grace=10)


def _config(blink: Blinking, folder: Path) -> Path:
    path = mirror_config(blink.clusters_yaml, folder)
    raw = yaml.safe_load(path.read_text())
    for cluster in raw["clusters"].values():
        cluster["timeout_s"] = TIMEOUT_S
    path.write_text(yaml.safe_dump(raw))
    return path


def _mirror(config: Path, link: str, topic: str, target: str, *extra: str) -> MirrorProcess:
    return MirrorProcess(
        config,
        link,
        ("--source", "src", "--target", target, "--topics", topic, *_QUICK, *extra),
        config.parent / f"{link}.log",
    )


class AckedProducer(threading.Thread):
    """Writes numbered records to the source until stopped, riding through its restarts
    (idempotent, long delivery timeout); counts the records the source acknowledged."""

    def __init__(self, cluster: ClusterConfig, topic: str, partitions: int) -> None:
        super().__init__(daemon=True)
        self.topic, self.partitions = topic, partitions
        self.producer = Producer(
            {
                **cluster.as_librdkafka(),
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "message.timeout.ms": 180_000,
            }
        )
        self.acked = 0
        self.failed: list[str] = []
        self.done = threading.Event()

    def _report(self, error: KafkaError | None, _message: Any) -> None:
        if error is None:
            self.acked += 1
        else:
            self.failed.append(error.str())

    def run(self) -> None:
        sent = 0
        while not self.done.is_set():
            for _ in range(50):
                try:
                    self.producer.produce(
                        self.topic,
                        f"value-{sent}".encode(),
                        f"k{sent}".encode(),
                        partition=sent % self.partitions,
                        on_delivery=self._report,
                    )
                except BufferError:  # the source is down and the queue full: wait
                    self.producer.poll(0.5)
                    continue
                sent += 1
            self.producer.poll(0)
            self.done.wait(0.05)  # about 1,000 records/s: steady, not a flood
        self.producer.flush(180)

    def finish(self) -> int:
        self.done.set()
        self.join(timeout=200)
        assert not self.is_alive(), "the producer did not drain"
        assert not self.failed, f"source refused records: {self.failed[:3]}"
        return self.acked


def _status(config: Path, link: str, *extra: str) -> dict[str, Any]:
    result = run_cli("mirror", "status", "--link", link, "--json", *extra, config=str(config))
    assert result.code == 0, result.stderr
    return json.loads(result.stdout)["links"][0]


def _wait_state(mirror: MirrorProcess, state: str, timeout: float = 90) -> dict[str, Any]:
    """Poll `mirror status --offline` (the store only: quick while a cluster is down)
    until the mirror reports ``state``; then the full `mirror status --json` shows it."""

    def reached() -> bool:
        mirror.check_alive()
        return _status(mirror.config, mirror.link, "--offline")["state"] == state

    wait_for(reached, timeout=timeout, interval=0.3, message=f"mirror {state}; {mirror.tail()}")
    return _status(mirror.config, mirror.link)


def _wait_progress(mirror: MirrorProcess, source: ClusterConfig, topic: str) -> None:
    """The mirror copies again: its read positions move past where they are now."""
    store = store_for(load_settings(mirror.config))

    def position() -> int:
        return sum(s.map.source_next for s in load_partitions(store, mirror.link, topic))

    before = position()
    wait_for(
        lambda: mirror.check_alive() or position() > before,
        timeout=90,
        message=f"mirror progress after the outage; {mirror.tail()}",
    )


def test_mirror_and_groups_sync_wait_out_a_target_then_a_source_broker_restart(
    blink: Blinking, tmp_path: Path
) -> None:
    """The issue's report: the target's only broker killed and restarted, later the
    source's. The mirror says it waits (status and its output), goes on by itself, and
    the copy is exact; `groups sync` loses the target group's coordinator (that broker),
    waits, and then commits the source commit made meanwhile. The same processes are
    still running at the end. A second mirror on the same target, with
    `--max-unavailable 3s`, meets the same outage: it stops with one line and resumes
    exactly when started again (_stopped_then_resumed)."""
    topic, group = unique("blink"), unique("g-blink")
    source = blink.cluster("src")
    with ClusterAdmin(source) as admin:
        admin.create_topic(topic, 3)
    config = _config(blink, tmp_path)
    mirror = _mirror(config, "blink", topic, "dst").start()
    producer = AckedProducer(source, topic, 3)
    producer.start()
    strict = _Strict.start(blink, config)
    sync: GroupsSync | None = None
    try:
        mirror.wait_running()
        _wait_progress(mirror, source, topic)
        strict.wait_copying()
        sync = GroupsSync(config, "blink", group)
        _commit(source, group, topic, 100)
        _wait_follows(config, "blink", blink, group, 100, sync)

        blink.kill("dst")
        _commit(source, group, topic, 200)  # while the target group's coordinator is down
        waiting = _wait_state(mirror, "waiting")
        wait_for(
            lambda: sync.said("target cluster 'dst' unavailable since"),
            timeout=60,
            message=f"groups sync says it waits; {sync.lines}",
        )
        strict.code = strict.mirror.wait_exit(timeout=120)
        blink.restart("dst")
        _wait_progress(mirror, source, topic)
        _wait_follows(config, "blink", blink, group, 200, sync)
        assert waiting["reason"].startswith("target cluster 'dst' unavailable since ")
        assert waiting["waiting"]["role"] == "target" and waiting["waiting"]["cluster"] == "dst"
        assert "dst" in waiting["clusters_unavailable"], "status answers during the outage"

        blink.kill("src")
        waiting = _wait_state(mirror, "waiting")
        blink.restart("src")
        _wait_progress(mirror, source, topic)
        assert waiting["waiting"]["role"] == "source" and waiting["waiting"]["cluster"] == "src"
        _commit(source, group, topic, 300)
        _wait_follows(config, "blink", blink, group, 300, sync)
        sync.check_alive()
    except BaseException:
        strict.abandon()
        raise
    finally:
        acked = producer.finish()
        if sync is not None:
            sync.stop()
    assert sync is not None
    _rode_through(blink, mirror, topic, acked, sync)
    _stopped_then_resumed(blink, config, strict)


def _rode_through(
    blink: Blinking, mirror: MirrorProcess, topic: str, acked: int, sync: GroupsSync
) -> None:
    """The waiting mirror caught up by itself, said so, and copied exactly."""
    source, config = blink.cluster("src"), mirror.config
    wait_caught_up(mirror, source, [topic])
    mirror.check_alive()
    assert _status(config, "blink")["state"] == "running"
    compared = assert_exact_copy(config, "blink", source, blink.cluster("dst"), topic)
    assert compared == acked
    log = mirror.log.read_text()
    assert "target cluster 'dst' unavailable since" in log and "retrying" in log
    assert "target cluster 'dst' available again after" in log
    assert "source cluster 'src' unavailable since" in log
    assert sync.said("target cluster 'dst' available again after"), sync.lines
    assert mirror.stop() == 0, mirror.tail()


@dataclass
class _Strict:
    """A mirror that may not wait longer than 3 s for a cluster, and its producer."""

    topic: str
    source: ClusterConfig
    mirror: MirrorProcess
    producer: AckedProducer
    code: int | None = None

    @classmethod
    def start(cls, blink: Blinking, config: Path) -> _Strict:
        topic, source = unique("long"), blink.cluster("src")
        with ClusterAdmin(source) as admin:
            admin.create_topic(topic, 2)
        producer = AckedProducer(source, topic, 2)
        producer.start()
        mirror = _mirror(config, "long", topic, "dst", "--max-unavailable", "3s").start()
        return cls(topic, source, mirror, producer)

    def wait_copying(self) -> None:
        self.mirror.wait_running()
        _wait_progress(self.mirror, self.source, self.topic)

    def abandon(self) -> None:
        """The test failed: leave nothing running."""
        self.producer.done.set()
        if self.mirror.proc is not None and self.mirror.proc.poll() is None:
            self.mirror.kill9()


def _stopped_then_resumed(blink: Blinking, config: Path, strict: _Strict) -> None:
    """What was test_an_outage_longer_than_max_unavailable_stops_the_mirror_resumably:
    the strict mirror stopped in the target's outage with the one-line reason (exit 3),
    its status failed; started again it copies exactly."""
    source, topic, mirror = blink.cluster("src"), strict.topic, strict.mirror
    acked = strict.producer.finish()
    lines = [line for line in mirror.tail().splitlines() if line.startswith("error:")]
    assert strict.code == 3, mirror.tail()
    assert len(lines) == 1, mirror.tail()
    assert lines[0].startswith("error: target cluster 'dst' unavailable for "), lines[0]
    assert "longer than the allowed 3s" in lines[0] and "Traceback" not in mirror.tail()
    failed = _status(config, "long")
    assert failed["state"] == "failed" and "unavailable" in failed["reason"]

    again = _mirror(config, "long", topic, "dst").start()
    again.wait_running()
    wait_caught_up(again, source, [topic])
    assert caught_up(config, "long", source, [topic])
    compared = assert_exact_copy(config, "long", source, blink.cluster("dst"), topic)
    assert compared == acked
    assert again.stop() == 0, again.tail()


def test_mirror_rides_through_a_rolling_restart_of_a_three_broker_target(
    blink: Blinking, tmp_path: Path
) -> None:
    """A rolling restart as operators do it: one broker at a time shut down cleanly
    (its leaders move to the others under the mirror's producers) and started again,
    each back in every ISR before the next."""
    topic = unique("roll")
    source, wide = blink.cluster("src"), blink.cluster("wide")
    with ClusterAdmin(source) as admin:
        admin.create_topic(topic, 6)
    config = _config(blink, tmp_path)
    mirror = _mirror(config, "roll", topic, "wide", "--replication-factor", "3").start()
    producer = AckedProducer(source, topic, 6)
    producer.start()
    try:
        mirror.wait_running()
        _wait_progress(mirror, source, topic)
        for node_id in sorted(blink.brokers("wide")):
            blink.kill("wide", node_id, signal.SIGTERM)
            blink.restart("wide")
            _wait_in_sync(wide, topic)
            _wait_progress(mirror, source, topic)
    finally:
        acked = producer.finish()
    wait_caught_up(mirror, source, [topic])
    mirror.check_alive()
    compared = assert_exact_copy(config, "roll", source, wide, topic)
    assert compared == acked
    assert mirror.stop() == 0, mirror.tail()


class GroupsSync:
    """`kmigrate groups sync` as a user runs it, its stderr lines collected."""

    def __init__(self, config: Path, link: str, group: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kmigrate", "--config", str(config), "groups", "sync",
             "--link", link, "--groups", group, "--interval", "0.3"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self.lines: list[str] = []
        threading.Thread(
            target=lambda: self.lines.extend(self.proc.stderr or ()), daemon=True
        ).start()

    def said(self, text: str) -> bool:
        return any(text in line for line in self.lines)

    def check_alive(self) -> None:
        assert self.proc.poll() is None, f"groups sync exited: {self.lines}"

    def stop(self) -> None:
        self.proc.terminate()
        assert self.proc.wait(30) == 0, self.lines


def _wait_in_sync(cluster: ClusterConfig, topic: str) -> None:
    def full() -> bool:
        try:
            with ClusterAdmin(cluster) as admin:
                described = admin.describe_topic(topic)
        except KMigrateError:  # the restarted broker is still joining
            return False
        return all(len(p.isr) == len(p.replicas) for p in described.partitions)

    wait_for(full, timeout=90, interval=0.5, message=f"{topic} back in sync on {cluster.name}")


_COORDINATOR_MOVING = {
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.REQUEST_TIMED_OUT,
    KafkaError._TRANSPORT,
    KafkaError._TIMED_OUT,
}


def _commit(cluster: ClusterConfig, group: str, topic: str, position: int) -> None:
    """Commit as a group's consumer does; retried, as its client would, while a
    restarted broker's group coordinator is still loading or moving."""
    consumer = Consumer({**cluster.as_librdkafka(), "group.id": group, "enable.auto.commit": False})

    def committed() -> bool:
        try:
            consumer.commit(
                offsets=[TopicPartition(topic, p, position + p) for p in (0, 1)],
                asynchronous=False,
            )
        except KafkaException as exc:
            if exc.args[0].code() not in _COORDINATOR_MOVING:
                raise
            return False
        return True

    try:
        wait_for(committed, timeout=60, interval=0.5, message=f"{group} committed {position}")
    finally:
        consumer.close()


def _committed(cluster: ClusterConfig, group: str) -> dict[tuple[str, int], int]:
    with ClusterAdmin(cluster) as admin:
        return {(o.topic, o.partition): o.committed for o in admin.committed_offsets(group)}


def _follows(
    config: Path,
    link: str,
    source: ClusterConfig,
    target: ClusterConfig,
    group: str,
    at_least: int = 0,
) -> bool:
    """The target group is at the translation of the source group's commits (which are
    at ``at_least`` or past); False while a coordinator is still moving."""
    try:
        commits = _committed(source, group)
        on_target = _committed(target, group)
    except KMigrateError:
        return False
    if not commits or min(commits.values()) < at_least:
        return False
    return on_target == _translated(config, link, commits)


def _wait_follows(
    config: Path, link: str, blink: Blinking, group: str, at_least: int, sync: GroupsSync
) -> None:
    wait_for(
        lambda: _follows(config, link, blink.cluster("src"), blink.cluster("dst"), group, at_least),
        timeout=90,
        message=f"the target group at the translation of source commit {at_least}; {sync.lines}",
    )


def _translated(config: Path, link: str, commits: dict[tuple[str, int], int]) -> dict:
    states = {
        (s.topic, s.partition): s for s in load_partitions(store_for(load_settings(config)), link)
    }
    return {
        key: states[key].map.translate(offset, states[key].target_start).target_offset
        for key, offset in commits.items()
    }
