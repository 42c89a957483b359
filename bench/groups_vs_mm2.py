"""Consumer group switch: MirrorMaker 2's checkpoint translation vs kmigrate's, same data.

    .venv/bin/python bench/groups_vs_mm2.py [--records 50000]

Two sandbox clusters in bench/.work. The source holds two topics of 4 partitions with
``--records`` records each per partition, every value naming its own source offset:

- ``bench-groups``: written from offset 0;
- ``bench-groups-trimmed``: the first fifth of every partition deleted (delete-records),
  the usual state of a topic older than its retention, so target offsets differ from
  source offsets under both tools.

A consumer group, stopped on the source, has processed each partition up to a
different lag behind its end (0, 10, 1,000 and half the partition). For each contender
the target is emptied, the copier copies everything, the group is moved to the target
the tool's own way (MirrorMaker 2: checkpoints with ``sync.group.offsets.enabled``,
waited for until stable; kmigrate: ``groups migrate --yes``), and a consumer on the
target reads from the group's target commit to the end. Every record it reads that the
group had already processed is a repeat; every unprocessed record it does not read is
a skip. Results: bench/results/groups-<date>.json.
"""

from __future__ import annotations

import argparse
import subprocess
import time

from common import (
    WORK,
    Bench,
    kmigrate,
    reset_target,
    results_header,
    run_kmigrate_mirror,
    run_mm2,
    sandbox,
    stop,
    write_results,
)
from confluent_kafka import Consumer, Producer, TopicPartition

from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import read_partition

PARTITIONS = 4
TOPICS = ("bench-groups", "bench-groups-trimmed")
GROUP = "bench-lagging"
LINK = "bench-groups"
MIGRATE = ("--yes", "--wait")
STABLE_S = 10  # MM2's target commits unchanged this long = its translation has settled


def lags(records: int) -> list[int]:
    """The group's lag behind the end, per partition."""
    return [0, 10, 1000, records // 2]


def load_source(bench: Bench, source: ClusterAdmin, records: int) -> dict:
    """Both topics, the trimmed prefix, and the group's commits; returns what was done."""
    producer = Producer(
        {
            "bootstrap.servers": bench.source_bootstrap,
            "linger.ms": 20,
            "queue.buffering.max.messages": 1_000_000,
        }
    )
    for topic in TOPICS:
        source.create_topic(topic, PARTITIONS)
        for p in range(PARTITIONS):
            for i in range(records):
                producer.produce(topic, f"{p}:{i}".encode(), partition=p)
                if i % 10_000 == 0:
                    producer.flush(60)
        producer.flush(60)
    source.delete_records(TOPICS[1], {p: records // 5 for p in range(PARTITIONS)})
    commits = {(topic, p): records - lag for topic in TOPICS for p, lag in enumerate(lags(records))}
    consumer = Consumer({"bootstrap.servers": bench.source_bootstrap, "group.id": GROUP})
    try:
        consumer.commit(
            offsets=[TopicPartition(t, p, c) for (t, p), c in commits.items()],
            asynchronous=False,
        )
    finally:
        consumer.close()
    return commits


def wait_copied(source: ClusterAdmin, target: ClusterAdmin, timeout: float) -> float:
    """Seconds until the target holds as many records per partition as the source."""
    want = {(w.topic, w.partition): w.high - w.low for t in TOPICS for w in source.watermarks(t)}
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        have = {}
        for topic in TOPICS:
            if topic in {t.name for t in target.list_topics()}:
                have.update(
                    {(w.topic, w.partition): w.high - w.low for w in target.watermarks(topic)}
                )
        if all(have.get(tp, -1) >= n for tp, n in want.items()):
            return time.monotonic() - start
        time.sleep(0.5)
    raise SystemExit(f"the copy did not finish within {timeout:.0f}s")


def target_commits(target: ClusterAdmin) -> dict:
    if GROUP not in {g.group_id for g in target.list_groups()}:
        return {}
    return {(c.topic, c.partition): c.committed for c in target.committed_offsets(GROUP)}


def wait_mm2_checkpoints(target: ClusterAdmin, timeout: float) -> dict:
    """MM2's target commits once every partition has one and they stopped changing."""
    start = time.monotonic()
    last: dict = {}
    since = time.monotonic()
    while time.monotonic() - start < timeout:
        now = target_commits(target)
        if now != last:
            last, since = now, time.monotonic()
        elif len(now) == len(TOPICS) * PARTITIONS and time.monotonic() - since >= STABLE_S:
            break
        time.sleep(1)
    return {"commits": last, "settled_s": since - start}


def continue_on_target(bench: Bench, target: ClusterAdmin, commits: dict, records: int) -> dict:
    """Read every partition from the group's target commit to its end; count per partition
    the records read that the group had processed (repeats) and the ones it had not but
    were not read (skips). A partition without a target commit starts at the earliest
    record (auto.offset.reset=earliest, the choice that loses nothing)."""
    placed = target_commits(target)
    cluster = bench.settings.cluster("target")
    rows = []
    for topic in TOPICS:
        ends = {w.partition: w for w in target.watermarks(topic)}
        for p in range(PARTITIONS):
            start = placed.get((topic, p))
            end = ends[p].high
            values = read_partition(cluster, topic, p, ends[p].low if start is None else start, end)
            seen = [int(r.value.decode().split(":")[1]) for r in values]
            processed_below = commits[(topic, p)]
            repeats = sum(1 for i in seen if i < processed_below) + len(seen) - len(set(seen))
            wanted = set(range(processed_below, records))
            rows.append(
                {
                    "topic": topic,
                    "partition": p,
                    "lag": records - processed_below,
                    "source_commit": processed_below,
                    "target_commit": start,
                    "read": len(seen),
                    "repeated": repeats,
                    "skipped": len(wanted - set(seen)),
                }
            )
    return {
        "partitions": rows,
        "repeated": sum(r["repeated"] for r in rows),
        "skipped": sum(r["skipped"] for r in rows),
        "uncommitted_partitions": sum(1 for r in rows if r["target_commit"] is None),
    }


def mm2(bench: Bench, source: ClusterAdmin, target: ClusterAdmin, commits: dict, records: int):
    reset_target(target, (GROUP,))
    proc = run_mm2(
        bench,
        "bench-groups.*",
        "src->tgt.groups = bench-.*",
        "refresh.groups.interval.seconds = 5",
        "emit.checkpoints.interval.seconds = 1",
        "sync.group.offsets.enabled = true",
        "sync.group.offsets.interval.seconds = 1",
    )
    try:
        copy_s = wait_copied(source, target, 600)
        settled = wait_mm2_checkpoints(target, 180)
        result = continue_on_target(bench, target, commits, records)
    finally:
        stop(proc, group=True)
    return {"copy_s": copy_s, "checkpoints_settled_s": settled["settled_s"], **result}


def kmigrate_groups(
    bench: Bench, source: ClusterAdmin, target: ClusterAdmin, commits: dict, records: int
) -> dict:
    reset_target(target, (GROUP,))
    proc = run_kmigrate_mirror(bench, "bench-groups.*", LINK)
    try:
        copy_s = wait_copied(source, target, 600)
        started = time.monotonic()
        moved = subprocess.run(
            kmigrate(bench, "groups", "migrate", "--link", LINK, "--group", GROUP, *MIGRATE),
            check=False,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if moved.returncode != 0:
            raise SystemExit(f"groups migrate failed: {moved.stdout}{moved.stderr}")
        migrate_s = time.monotonic() - started
        result = continue_on_target(bench, target, commits, records)
    finally:
        stop(proc, group=False)
    return {"copy_s": copy_s, "migrate_s": migrate_s, **result}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=50_000, help="Per partition.")
    parser.add_argument("--keep", action="store_true", help="Leave the clusters running.")
    args = parser.parse_args()

    results: dict = {
        **results_header(PARTITIONS),
        "records_per_partition": args.records,
        "trimmed_prefix": args.records // 5,
        "lags": lags(args.records),
    }
    with (
        sandbox(keep=args.keep) as bench,
        ClusterAdmin(bench.settings.cluster("source")) as source,
        ClusterAdmin(bench.settings.cluster("target")) as target,
    ):
        print("loading the source ...", flush=True)
        commits = load_source(bench, source, args.records)
        for name, run in (("mm2", mm2), ("kmigrate", kmigrate_groups)):
            results[name] = run(bench, source, target, commits, args.records)
            r = results[name]
            print(f"{name}: repeated {r['repeated']}, skipped {r['skipped']}", flush=True)
    out = write_results("groups-", results)
    print(f"wrote {out} (logs in {WORK})")


if __name__ == "__main__":
    main()
