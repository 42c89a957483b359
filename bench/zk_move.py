"""A whole ZooKeeper ensemble move under load: what the clients see.

    .venv/bin/python bench/zk_move.py [--rate 2000] [--partitions 6]

In bench/.work: ensembles `old` (3 servers, holding Kafka under /kafka and a non-Kafka
client's /app) and `new` (3 servers, empty), and a 3-broker ZooKeeper-mode Kafka 3.9
cluster `legacy` on old/kafka with a topic of ``--partitions`` partitions, replication
factor 3, min.insync.replicas 2. While `kmigrate zk plan` + `zk migrate` run:

- an idempotent acks=all producer writes ``--rate`` numbered records/s;
- a consumer group reads them and commits after every poll;
- a separate ZooKeeper client holds one session on `old` and writes /app every 100 ms.

Reported: each phase's duration; produce requests failed and retried (librdkafka's
statistics); the longest produce pause (no acknowledgement while records waited) and
the slowest acknowledgement; records lost or repeated in the log (every acknowledged
record read back once); the group's coverage and re-deliveries; controller changes
(/controller_epoch); the other client's connection suspensions and session losses.
Results: bench/results/zk-move-<date>.json.

There is no other tool to race: the alternative is the manual procedure of seed 003
(firewall rules, hand-edited configs, a rolling restart by hand), whose client-side
effect is the same rolling restart; the interesting numbers are the pauses and zeros.
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
from kazoo.client import KazooClient, KazooState

from kmigrate.config import load_settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import read_partition
from kmigrate.sandbox import manager

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.append(str(ROOT))  # harness/: the ZooKeeper client shared with the move test
from harness.zookeeper_client import OtherClient  # noqa: E402

TOPIC = "bench-zk-move"
GROUP = "bench-zk-move-group"


def controller_epoch(connect: str) -> int:
    zk = KazooClient(hosts=connect)
    zk.start(timeout=15)
    try:
        return int(zk.get("/kafka/controller_epoch")[0])
    finally:
        zk.stop()
        zk.close()


def run_move(config: Path, plan: Path) -> dict[str, float]:
    """`zk migrate`, its phases timed from its own progress lines."""
    log = WORK / "zk-migrate.log"
    started = time.monotonic()
    marks: list[tuple[str, float]] = []
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kmigrate", "--config", str(config), "zk", "migrate", str(plan)],
            stderr=subprocess.PIPE,
            stdout=out,
            text=True,
        )
        assert proc.stderr is not None
        for line in proc.stderr:
            out.write(line)
            if line.startswith("> phase "):
                marks.append((line.split()[2], time.monotonic()))
        if proc.wait() != 0:
            raise SystemExit(f"zk migrate failed; see {log}")
    ended = time.monotonic()
    phases = {
        name: round((marks[i + 1][1] if i + 1 < len(marks) else ended) - at, 1)
        for i, (name, at) in enumerate(marks)
    }
    return {**phases, "total": round(ended - started, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=2000, help="records/s produced")
    parser.add_argument("--partitions", type=int, default=6)
    args = parser.parse_args()

    shutil.rmtree(WORK, ignore_errors=True)
    directory = WORK / "sandbox"
    manager.up(directory, manager.UpRequest(clusters=[], ensembles=["old", "new"]))
    try:
        manager.up(
            directory, manager.UpRequest(clusters=["legacy"], brokers=3, zookeeper="old/kafka")
        )
        config = directory / "clusters.yaml"
        settings = load_settings(config)
        kafka = settings.cluster("legacy")
        old, new = settings.ensemble("old").connect, settings.ensemble("new").connect
        with ClusterAdmin(kafka) as admin:
            admin.create_topic(
                TOPIC, args.partitions, replication_factor=3, configs={"min.insync.replicas": "2"}
            )
        plan = WORK / "move.yaml"
        subprocess.run(
            [sys.executable, "-m", "kmigrate", "--config", str(config), "zk", "plan", "--cluster",
             "legacy", "--source-ensemble", "old", "--target-ensemble", "new", "-o", str(plan)],
            check=True,
        )  # fmt: skip
        epoch_before = controller_epoch(old)
        load, group, other = (
            Load(kafka.as_librdkafka(), args.rate, TOPIC),
            Group(kafka.as_librdkafka(), TOPIC, GROUP),
            OtherClient(old, alive_node=False),
        )
        for thread in (load, group, other):
            thread.start()
        time.sleep(5)  # steady state before the move starts
        phases = run_move(config, plan)
        time.sleep(5)
        load.done.set()
        load.join(300)
        epoch_after = controller_epoch(new)

        with ClusterAdmin(kafka) as admin:
            marks = admin.watermarks(TOPIC)
        values = [
            r.value for w in marks for r in read_partition(kafka, TOPIC, w.partition, 0, w.high)
        ]
        deadline = time.monotonic() + 120
        while not set(group.seen) >= set(load.acked) and time.monotonic() < deadline:
            time.sleep(0.5)
        group.done.set()
        other.done.set()
        group.join(30)
        other.join(30)
        lost = len(set(load.acked) - set(values))
        results = {
            **results_header(args.partitions),
            "kafka": "3.9.1 (ZooKeeper mode, 3 brokers)",
            "zookeeper": "3.8.4 (3 + 3 servers)",
            "rate_per_s": args.rate,
            "phases_s": phases,
            "produced": len(load.sent),
            "acknowledged": len(load.acked),
            "produce_failed": len(load.failed),
            "produce_retried_requests": load.retries(),
            "longest_produce_pause_s": round(load.longest_pause(), 2),
            "slowest_ack_s": round(load.slowest_ack(), 2),
            "lost": lost,
            "repeated": len(values) - len(set(values)),
            "group_missed": len(set(load.acked) - set(group.seen)),
            "group_redelivered": len(group.seen) - len(set(group.seen)),
            "controller_changes": epoch_after - epoch_before,
            "other_client": {
                "session_losses": other.states.count(KazooState.LOST)
                + (other.zk.client_id is not None and other.zk.client_id[0] != other.session),
                "connection_suspensions": other.states.count(KazooState.SUSPENDED),
                "writes": other.writes,
                "failed_writes": other.failed_writes,
            },
        }
        other.zk.stop()
        other.zk.close()
        print(json.dumps(results, indent=2))
        print(f"wrote {write_results('zk-move-', results)}")
    finally:
        manager.down(directory, purge=True, grace=10)


if __name__ == "__main__":
    main()
