"""A ZooKeeper-mode cluster taken to KRaft under load: what the clients see.

    .venv/bin/python bench/kraft_migration.py [--rate 2000] [--topics 20] [--controllers 1]

In bench/.work: a 3-server ZooKeeper ensemble and a 3-broker ZooKeeper-mode Kafka 3.9.1
cluster `legacy` (Kafka's AclAuthorizer) with ``--topics`` topics of 3 partitions
(replication factor 3, min.insync.replicas 2, a config each), ACLs and idle consumer
groups. While `kmigrate kraft plan` + `kraft migrate` + `kraft finalize --yes` run:

- an idempotent acks=all producer writes ``--rate`` numbered records/s to one more topic;
- a consumer group reads them and commits after every poll.

Reported: each phase's duration (controllers, roll1, dual-write, roll2, finalize);
produce requests failed and retried; the longest produce pause (no acknowledgement while
records waited) and the slowest acknowledgement; records lost or repeated in the log
(every acknowledged record read back once); the group's coverage and re-deliveries; and
whether the metadata snapshot (topics, partitions, replicas, configs, ACLs, idle groups'
offsets) reads identically before and after. Results: bench/results/kraft-migration-<date>.json.

The alternative a user would pick is Kafka's own procedure by hand (the same two rolling
restarts and controller provisioning); its client-side effect is the same rolls, so the
numbers to watch are the pauses and the zeros, not a ratio.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from clients import Group, Load
from common import WORK, results_header, write_results

from kmigrate.config import load_settings
from kmigrate.errors import TopicNotFoundError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import read_partition
from kmigrate.kraft import snapshot
from kmigrate.model.cluster import AclEntry, TopicPartitionOffset
from kmigrate.sandbox import manager

TOPIC = "bench-kraft-load"
GROUP = "bench-kraft-group"


def kraft(config: Path, *args: str, marks: list[tuple[str, float]] | None = None) -> None:
    """A `kmigrate kraft` command; its '> phase X' lines timed into ``marks``."""
    log = WORK / "kraft.log"
    with open(log, "a") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kmigrate", "--config", str(config), "kraft", *args],
            stderr=subprocess.PIPE, stdout=out, text=True,
        )  # fmt: skip
        assert proc.stderr is not None
        for line in proc.stderr:
            out.write(line)
            if marks is not None and line.startswith("> phase "):
                marks.append((line.split()[2], time.monotonic()))
        if proc.wait() != 0:
            raise SystemExit(f"kmigrate kraft {args[0]} failed; see {log}")


def metadata(config: Path, topics: int) -> snapshot.Snapshot:
    """Topics with a config each, ACLs, idle groups; the snapshot once all are listed."""
    kafka = load_settings(config).cluster("legacy")
    with ClusterAdmin(kafka) as admin:
        for i in range(topics):
            admin.create_topic(f"kept-{i:02}", 3, replication_factor=3,
                               configs={"retention.ms": str(86_400_000 + i)})  # fmt: skip
        for i in range(topics):
            offsets = [TopicPartitionOffset(f"kept-{i:02}", p, 0) for p in range(3)]
            for _ in range(60):  # until the coordinator's broker knows the new topic
                try:
                    admin.alter_group_offsets(f"idle-{i:02}", offsets)
                    break
                except TopicNotFoundError:
                    time.sleep(0.5)
        admin.create_acls(
            [AclEntry("TOPIC", f"kept-{i:02}", "LITERAL", f"User:app-{i}", "*", "READ", "ALLOW")
             for i in range(topics)]
            # PLAINTEXT: this bench (and kmigrate's checks) read as User:ANONYMOUS, which
            # an ACL on a topic would otherwise hide the topic from
            + [AclEntry("TOPIC", "kept-", "PREFIXED", "User:ANONYMOUS", "*", "ALL", "ALLOW")]
        )  # fmt: skip
        admin.create_topic(TOPIC, 6, replication_factor=3, configs={"min.insync.replicas": "2"})
    for _ in range(60):  # until the metadata lists every new topic
        with ClusterAdmin(kafka) as admin:  # a new client: the first one's cache lags
            found = snapshot.take(admin)
        if len(found.topics) > topics:
            break
        time.sleep(0.5)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=2000, help="records/s produced")
    parser.add_argument("--topics", type=int, default=20)
    # Three, as production runs: this PLAINTEXT cluster's brokers give the quorum no super
    # user, so the controller listener gets kmigrate's own principal (kraft.trust).
    parser.add_argument("--controllers", type=int, default=3)
    args = parser.parse_args()

    shutil.rmtree(WORK, ignore_errors=True)
    directory = WORK / "sandbox"
    manager.up(directory, manager.UpRequest(clusters=["legacy"], brokers=3, zookeeper="zk/kafka"))
    try:
        config = directory / "clusters.yaml"
        kafka = load_settings(config).cluster("legacy")
        before = metadata(config, args.topics)
        plan = WORK / "kraft.yaml"
        kraft(config, "plan", "--cluster", "legacy", "--controllers", str(args.controllers),
              "-o", str(plan))  # fmt: skip
        load = Load(kafka.as_librdkafka(), args.rate, TOPIC)
        group = Group(kafka.as_librdkafka(), TOPIC, GROUP)
        load.start()
        group.start()
        time.sleep(5)  # steady state first
        marks: list[tuple[str, float]] = []
        started = time.monotonic()
        kraft(config, "migrate", str(plan), marks=marks)
        marks.append(("finalize", time.monotonic()))
        kraft(config, "finalize", str(plan), "--yes")
        ended = time.monotonic()
        time.sleep(5)
        load.done.set()
        load.join(300)

        with ClusterAdmin(kafka) as admin:
            marks_end = admin.watermarks(TOPIC)
            after = snapshot.take(admin)
        values = [
            r.value for w in marks_end for r in read_partition(kafka, TOPIC, w.partition, 0, w.high)
        ]
        deadline = time.monotonic() + 120
        while not set(group.seen) >= set(load.acked) and time.monotonic() < deadline:
            time.sleep(0.5)
        group.done.set()
        group.join(30)
        phases = {
            name: round((marks[i + 1][1] if i + 1 < len(marks) else ended) - at, 1)
            for i, (name, at) in enumerate(marks)
        }
        before.groups.pop(GROUP, None)
        after.groups.pop(GROUP, None)
        changed = snapshot.differences(before, after)
        results = {
            **results_header(6),
            "kafka": "3.9.1 (ZooKeeper mode -> KRaft, 3 brokers)",
            "controllers": args.controllers,
            "zookeeper": "3.8.4 (3 servers)",
            "rate_per_s": args.rate,
            "metadata": before.summary,
            "phases_s": {**phases, "total": round(ended - started, 1)},
            "produced": len(load.sent),
            "acknowledged": len(load.acked),
            "produce_failed": len(load.failed),
            "produce_retried_requests": load.retries(),
            "longest_produce_pause_s": round(load.longest_pause(), 2),
            "slowest_ack_s": round(load.slowest_ack(), 2),
            "lost": len(set(load.acked) - set(values)),
            "repeated": len(values) - len(set(values)),
            "group_missed": len(set(load.acked) - set(group.seen)),
            "group_redelivered": len(group.seen) - len(set(group.seen)),
            "metadata_identical": not changed,
            "metadata_differences": changed[:10],
        }
        print(json.dumps(results, indent=2))
        print(f"wrote {write_results('kraft-migration-', results)}")
    finally:
        manager.down(directory, purge=True, grace=10)


if __name__ == "__main__":
    main()
