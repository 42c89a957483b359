"""Exactly once under kill -9, one writer per mirror topic, and loss that is never silent."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from harness.helpers import run_cli, seeded, unique, wait_for
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import produce, read_partition
from kmigrate.mirror.job import DRIVER_OFFSETS_ENV, TASK_BYTES_ENV
from kmigrate.model.records import Record
from tests.integration.conftest import Clusters
from tests.integration.mirror.harness import (
    MirrorProcess,
    assert_exact_copy,
    caught_up,
    mirror_config,
    mirror_until_caught_up,
    wait_caught_up,
)


def _mirror(config: Path, link: str, topic: str, folder: Path, *extra: str) -> MirrorProcess:
    return MirrorProcess(
        config,
        link,
        (
            "--source",
            "source",
            "--target",
            "target",
            "--topics",
            topic,
            "--interval",
            "2s",
            *extra,
        ),
        folder / f"{link}.log",
    )


def _batch(start: int, n: int, partitions: int, pad: int = 0) -> list[Record]:
    now = int(time.time() * 1000)
    return [
        Record(
            f"k{i}".encode(),
            f"value-{i}".encode() * 3 + b"." * pad,
            (("seq", str(i).encode()),),
            now,
            i % partitions,
            None,
        )
        for i in range(start, start + n)
    ]


class SteadyProducer(threading.Thread):
    """Writes numbered records to the source until stopped, so kills land mid-stream."""

    def __init__(self, clusters: Clusters, topic: str, partitions: int, pad: int = 0) -> None:
        super().__init__(daemon=True)
        self.clusters, self.topic, self.partitions, self.pad = clusters, topic, partitions, pad
        self.sent = 0
        self.done = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            while not self.done.is_set():
                batch = _batch(self.sent, 500, self.partitions, self.pad)
                produce(self.clusters.source, self.topic, batch)
                self.sent += 500
                self.done.wait(0.05)
        except BaseException as exc:  # reported by the test
            self.error = exc


def _target_records(clusters: Clusters, topic: str) -> int:
    with ClusterAdmin(clusters.target) as admin:
        try:
            return sum(w.high for w in admin.watermarks(topic))
        except Exception:
            return 0


def test_kill_nines_while_tasks_copy_lose_and_repeat_nothing(
    clusters: Clusters, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """kill -9 at random moments while more copy tasks run than there are cores
    (local[4] on 2 cores, 8 partitions of 1 KB records, so each batch is seconds of
    produce calls whose chunk-edge delivery reports are outstanding), under steady
    production: every source record is on the target exactly once, at the offset the map
    says. Each task may read only 300 KB per batch, so batches are cut short and go on
    where reading stopped, as a long backlog's are. The second run copies every batch in
    the driver (as small batches are), the third every batch on Spark, record by record
    (the first two copy record batches as bytes, their range edges record by record).
    Replay a failure with KMIGRATE_TEST_SEED."""
    monkeypatch.setenv(TASK_BYTES_ENV, str(300_000))
    topic = unique("kill")
    partitions, pad = 8, 1000
    with ClusterAdmin(clusters.source) as admin:
        admin.create_topic(topic, partitions)
    produce(clusters.source, topic, _batch(0, 40_000, partitions, pad))
    config = mirror_config(clusters.config_path, tmp_path, master="local[4]")
    producer = SteadyProducer(clusters, topic, partitions, pad)
    producer.sent = 40_000
    producer.start()
    rng = seeded()
    kills = []
    try:
        for copied_by in ("default", "driver", "spark"):
            driver_offsets = {"default": None, "driver": "1000000", "spark": "0"}[copied_by]
            if driver_offsets is not None:
                monkeypatch.setenv(DRIVER_OFFSETS_ENV, driver_offsets)
            # The last run copies record by record: a link may switch copiers between
            # runs, and the map carries over.
            copier = ("--copy", "records" if copied_by == "spark" else "bytes")
            mirror = _mirror(
                config, "kill", topic, tmp_path, "--max-offsets-per-batch", "2000", *copier
            )
            before = _target_records(clusters, topic)
            mirror.start().wait_running()
            wait_for(
                lambda b=before: _target_records(clusters, topic) > b,
                timeout=120,
                message=f"the mirror writing again; {mirror.tail()}",
            )
            # The kill moment is random on purpose (not a stand-in for a condition):
            # inside producing a batch, waiting for its reports, recording or planning.
            delay = rng.uniform(0.0, 1.5)
            time.sleep(delay)
            mirror.kill9()
            kills.append((copied_by, round(delay, 2)))
    finally:
        producer.done.set()
        producer.join(timeout=60)
    assert producer.error is None, producer.error
    monkeypatch.delenv(DRIVER_OFFSETS_ENV)
    last = mirror_until_caught_up(
        _mirror(config, "kill", topic, tmp_path), clusters.source, [topic]
    )
    compared = assert_exact_copy(config, "kill", clusters.source, clusters.target, topic)
    assert compared == producer.sent, f"kills (copied by, after s): {kills}; {last.tail()}"


def test_foreign_write_stops_the_mirror_naming_topic_and_partition(
    clusters: Clusters, tmp_path: Path
) -> None:
    topic = unique("foreign")
    with ClusterAdmin(clusters.source) as admin:
        admin.create_topic(topic, 2)
    produce(clusters.source, topic, _batch(0, 100, 2))
    config = mirror_config(clusters.config_path, tmp_path)
    mirror = _mirror(config, "foreign", topic, tmp_path).start()
    mirror.wait_running()
    wait_caught_up(mirror, clusters.source, [topic])
    produce(clusters.target, topic, [Record(b"intruder", b"x", (), None, 1, None)])
    produce(clusters.source, topic, _batch(100, 10, 2))
    code = mirror.wait_exit(timeout=120)
    assert code == 9, mirror.tail()
    assert f"{topic}[1]" in mirror.tail() and "other than the mirror" in mirror.tail()
    assert "Traceback" not in mirror.log.read_text(), "the refusal must be one line, no trace"
    status = run_cli("mirror", "status", "--link", "foreign", "--json", config=str(config))
    link = json.loads(status.stdout)["links"][0]
    assert link["state"] == "failed" and f"{topic}[1]" in link["reason"]
    # Restarting does not paper over it either.
    again = _mirror(config, "foreign", topic, tmp_path).start()
    assert again.wait_exit(timeout=120) == 9, again.tail()


def test_retention_loss_is_named_and_gaps_only_when_allowed(
    clusters: Clusters, tmp_path: Path
) -> None:
    topic = unique("loss")
    with ClusterAdmin(clusters.source) as admin:
        admin.create_topic(topic, 1)
    produce(clusters.source, topic, _batch(0, 100, 1))
    config = mirror_config(clusters.config_path, tmp_path)
    mirror_until_caught_up(_mirror(config, "loss", topic, tmp_path), clusters.source, [topic])
    produce(clusters.source, topic, _batch(100, 100, 1))
    with ClusterAdmin(clusters.source) as admin:
        admin.delete_records(topic, {0: 150})

    failed = _mirror(config, "loss", topic, tmp_path).start()
    assert failed.wait_exit(timeout=120) == 9, failed.tail()
    assert f"{topic}[0] offsets 100..149" in failed.tail(), failed.tail()
    with ClusterAdmin(clusters.target) as admin:
        assert admin.watermarks(topic)[0].high == 100, "nothing may be written past a loss"

    mirror_until_caught_up(
        _mirror(config, "loss", topic, tmp_path, "--allow-gaps"), clusters.source, [topic]
    )
    assert caught_up(config, "loss", clusters.source, [topic])
    values = [r.value for r in read_partition(clusters.target, topic, 0, 0, 10**6)]
    expected = [f"value-{i}".encode() * 3 for i in [*range(100), *range(150, 200)]]
    assert values == expected
    status = json.loads(
        run_cli("mirror", "status", "--link", "loss", "--json", config=str(config)).stdout
    )
    gaps = status["links"][0]["gaps"]
    assert [(g["partition"], g["source_start"], g["source_end"]) for g in gaps] == [(0, 100, 150)]


def test_records_an_interrupted_attempt_wrote_are_kept_not_repeated(
    clusters: Clusters, tmp_path: Path
) -> None:
    """What a crash between producing and recording leaves: the target holds the next
    source records, the map does not know them. The mirror must adopt, not repeat, them."""
    topic = unique("resume")
    with ClusterAdmin(clusters.source) as admin:
        admin.create_topic(topic, 1)
    produce(clusters.source, topic, _batch(0, 50, 1))
    config = mirror_config(clusters.config_path, tmp_path)
    mirror_until_caught_up(_mirror(config, "resume", topic, tmp_path), clusters.source, [topic])
    produce(clusters.source, topic, _batch(50, 30, 1))
    unrecorded = read_partition(clusters.source, topic, 0, 50, 62)
    produce(clusters.target, topic, unrecorded)  # same partition, key, value, headers, time

    again = mirror_until_caught_up(
        _mirror(config, "resume", topic, tmp_path), clusters.source, [topic]
    )
    assert assert_exact_copy(config, "resume", clusters.source, clusters.target, topic) == 80
    assert "12 record(s) an interrupted attempt had written" in again.tail(), again.tail()
