"""Running the real `kmigrate mirror start` as a process, and proving its copy exact.

A mirror here is what a user runs: `python -m kmigrate mirror start ...` in its own
process group, killed with SIGKILL or stopped with SIGTERM. Proof reads both clusters
back record by record and checks every record's target offset against the offset map.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

import yaml
from confluent_kafka import Producer

from harness import zygote
from harness.helpers import unique, wait_for
from kmigrate.config import ClusterConfig, load_settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import produce, read_partition
from kmigrate.model.offsets import Exactness
from kmigrate.model.records import Record
from kmigrate.store import store_for
from kmigrate.store.offsets import load_partitions
from kmigrate.store.runs import get_run


def mirror_config(cluster_config: Path, folder: Path, master: str = "local[2]") -> Path:
    """A config with the test clusters and a store of its own in ``folder``."""
    raw = yaml.safe_load(cluster_config.read_text())
    if raw.get("env_file"):
        raw["env_file"] = str((cluster_config.parent / raw["env_file"]).resolve())
    raw["store"] = {"url": f"sqlite:///{folder / 'kmigrate.db'}"}
    raw["spark"] = {"master": master, "conf": {}}
    path = folder / "kmigrate.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


@dataclass
class MirrorProcess:
    config: Path
    link: str
    args: tuple[str, ...]
    log: Path
    proc: zygote.Forked | subprocess.Popen[bytes] | None = None

    def start(self) -> MirrorProcess:
        argv = ["--config", str(self.config), "mirror", "start", "--link", self.link, *self.args]
        self.proc = zygote.spawn(argv, os.environ, self.log)
        return self

    def wait_running(self, timeout: float = 120) -> None:
        settings = load_settings(self.config)
        store = store_for(settings)

        def running() -> bool:
            self.check_alive()
            run = get_run(store, self.link)
            return run is not None and run.pid == self.pid and run.state.value == "running"

        wait_for(running, timeout=timeout, message=f"mirror {self.link} running; {self.tail()}")

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def check_alive(self) -> None:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(f"mirror exited with {self.proc.returncode}: {self.tail()}")

    def kill9(self) -> None:
        """What a crash does: the whole process group (driver, JVM, Python workers) at once."""
        os.killpg(self.pid, signal.SIGKILL)
        assert self.proc is not None
        self.proc.wait(timeout=30)
        # The JVM is a child in the same group; make sure nothing of it writes on.
        wait_for(lambda: not _group_alive(self.pid), timeout=30, message="mirror group gone")

    def stop(self, timeout: float = 60) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            # As `kmigrate mirror stop` does: only the driver; it stops Spark itself.
            os.kill(self.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.pid, signal.SIGKILL)
                self.proc.wait(timeout=30)
        return self.proc.returncode

    def wait_exit(self, timeout: float = 120) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout=timeout)

    def tail(self, lines: int = 15) -> str:
        try:
            text = self.log.read_text(errors="replace").splitlines()
        except OSError:
            return "(no log)"
        return "\n".join(line for line in text if " WARN " not in line)[-3000:] or "(empty log)"


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def caught_up(config: Path, link: str, source: ClusterConfig, topics: list[str]) -> bool:
    """True when the map's read position reached the source's stable end everywhere."""
    states = load_partitions(store_for(load_settings(config)), link)
    mine = {(s.topic, s.partition): s.map.source_next for s in states if s.topic in topics}
    with ClusterAdmin(source) as admin:
        wanted = [(t, p) for t in topics for p in range(admin.describe_topic(t).partition_count)]
        if any(tp not in mine for tp in wanted):
            return False
        ends = admin.partition_offsets(wanted, "latest", committed_only=True)
    return all(mine[tp] >= ends[tp] for tp in wanted)


def wait_caught_up(
    mirror: MirrorProcess, source: ClusterConfig, topics: list[str], timeout: float = 180
) -> None:
    def done() -> bool:
        mirror.check_alive()
        return caught_up(mirror.config, mirror.link, source, topics)

    wait_for(done, timeout=timeout, interval=0.5, message=f"mirror caught up; {mirror.tail()}")


def mirror_until_caught_up(
    mirror: MirrorProcess, source: ClusterConfig, topics: list[str]
) -> MirrorProcess:
    """Start the mirror, let it copy everything the source holds now, stop it cleanly."""
    mirror.start().wait_running()
    wait_caught_up(mirror, source, topics)
    assert mirror.stop() == 0, mirror.tail()
    return mirror


def _content(r: Record) -> tuple[object, ...]:
    return (r.key, r.value, tuple(r.headers), r.timestamp)


def assert_exact_copy(
    config: Path, link: str, source: ClusterConfig, target: ClusterConfig, topic: str
) -> int:
    """Target partition p equals source partition p record by record, and the offset map
    sends every source record to the target offset where that record is. Returns the
    number of records compared."""
    states = {
        s.partition: s for s in load_partitions(store_for(load_settings(config)), link, topic)
    }
    with ClusterAdmin(source) as src, ClusterAdmin(target) as tgt:
        partitions = src.describe_topic(topic).partition_count
        assert tgt.describe_topic(topic).partition_count == partitions
        source_marks = {w.partition: w for w in src.watermarks(topic)}
        target_marks = {w.partition: w for w in tgt.watermarks(topic)}
    compared = 0
    for p in range(partitions):
        state = states[p]
        src_records = read_partition(source, topic, p, state.map.source_start, source_marks[p].high)
        tgt_records = read_partition(target, topic, p, state.target_start, target_marks[p].high)
        assert [_content(r) for r in tgt_records] == [_content(r) for r in src_records], (
            f"{topic}[{p}]: target differs from source "
            f"({len(tgt_records)} vs {len(src_records)} records)"
        )
        for s_rec, t_rec in zip(src_records, tgt_records, strict=True):
            translation = state.map.translate(s_rec.offset or 0, state.target_start)
            assert translation.exactness is Exactness.EXACT
            assert translation.target_offset == t_rec.offset, (
                f"{topic}[{p}]: map sends source {s_rec.offset} to {translation.target_offset}, "
                f"record is at {t_rec.offset}"
            )
        compared += len(src_records)
    return compared


def transactional(cluster: ClusterConfig, topic: str, rounds: int = 6) -> None:
    """Committed and aborted transactions interleaved on 2 partitions (odd rounds abort);
    every value is unique within the topic."""
    producer = Producer({**cluster.as_librdkafka(), "transactional.id": unique("tx")})
    producer.init_transactions(30)
    for round_ in range(rounds):
        producer.begin_transaction()
        for i in range(10):
            producer.produce(topic, f"r{round_}-{i}".encode(), key=b"k", partition=i % 2)
        producer.flush(30)
        if round_ % 2:
            producer.abort_transaction(30)
        else:
            producer.commit_transaction(30)


def compacted_with_gaps(cluster: ClusterConfig, topic: str) -> None:
    """A one-partition compacted topic whose log has offset gaps; values are unique."""
    with ClusterAdmin(cluster) as admin:
        admin.create_topic(
            topic,
            1,
            configs={
                "cleanup.policy": "compact",
                "segment.ms": "100",
                "min.cleanable.dirty.ratio": "0.001",
                "min.compaction.lag.ms": "0",
                "delete.retention.ms": "0",
            },
        )
    rounds = iter(range(10_000))

    def compacted() -> bool:
        # Every round rolls a segment (segment.ms); the cleaner then drops older values.
        n = next(rounds)
        produce(
            cluster,
            topic,
            [
                Record(f"k{i % 4}".encode(), f"c{n}-{i}".encode(), (), None, 0, None)
                for i in range(20)
            ],
        )
        with ClusterAdmin(cluster) as admin:
            mark = admin.watermarks(topic)[0]
        return len(read_partition(cluster, topic, 0, mark.low, mark.high)) < mark.count

    wait_for(compacted, timeout=120, interval=1.0, message=f"{topic} compacted (offset gaps)")


def byte_copy_checked(clusters_yaml: Path, source: str, target: str, folder: Path) -> int:
    """Plain records and committed and aborted transactions on a new topic of cluster
    ``source``, mirrored to ``target`` copying bytes; both compared record by record.
    Returns the records compared."""
    import time

    settings = load_settings(clusters_yaml)
    src, dst = settings.cluster(source), settings.cluster(target)
    with ClusterAdmin(src) as admin:
        topic = admin.create_topic(unique(f"{source}-bytes"), 2).name
    now = int(time.time() * 1000)
    produce(src, topic, [Record(b"k", b"v%d" % i, (), now + i, i % 2) for i in range(300)])
    transactional(src, topic, rounds=4)  # 20 committed, 20 aborted
    config = mirror_config(clusters_yaml, folder)
    args = ("--source", source, "--target", target, "--topics", topic, "--copy", "bytes")
    mirror = MirrorProcess(config, "bytes", args, folder / "mirror.log")
    mirror_until_caught_up(mirror, src, [topic])
    assert "copying record batches as bytes" in (folder / "mirror.log").read_text()
    return assert_exact_copy(config, "bytes", src, dst, topic)
