"""kmigrate verify vs one plain consumer per side that reads and hashes the same records.

    .venv/bin/python bench/verify.py [--records 1000000] [--size 1024]

Two sandbox clusters in bench/.work. The source gets ``--records`` records of ``--size``
bytes over 8 partitions (1 GB by default), kmigrate's mirror copies them to the target
(link ``bench``), then, one after the other:

1. ``kmigrate verify --link bench --json`` (local[*]; wall time includes Spark start-up,
   the report's own time is given too);
2. the baseline: one confluent-kafka consumer per cluster, both at once (two processes),
   each reading every partition from start to end and hashing key, value, headers and
   timestamp of every record with BLAKE2b, in order.

MB/s is bytes of key and value per side over wall time (MB = 10^6 bytes).
Results: bench/results/verify-<date>.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import subprocess
import time

from confluent_kafka import Consumer, TopicPartition
from harness import (
    Bench,
    kmigrate,
    perf_producer,
    results_header,
    run_kmigrate_mirror,
    sandbox,
    stop,
    write_results,
)

from kmigrate.config import load_settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.store import store_for
from kmigrate.store.offsets import load_partitions

PARTITIONS = 8
TOPIC = "bench-verify"
LINK = "bench"


def wait_mirrored(bench: Bench, source: ClusterAdmin, timeout: float) -> float:
    """Seconds until the link's offset map covers every source record."""
    want = {w.partition: w.high for w in source.watermarks(TOPIC)}
    store = store_for(load_settings(bench.config))
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        have = {s.partition: s.map.source_next for s in load_partitions(store, LINK, TOPIC)}
        if all(have.get(p, -1) >= n for p, n in want.items()):
            return time.monotonic() - start
        time.sleep(1)
    raise SystemExit(f"the mirror did not copy {TOPIC} within {timeout:.0f}s")


def hash_side(bootstrap: str, ends: dict[int, int], out: multiprocessing.Queue) -> None:
    """Read every partition from 0 to its end with one consumer; hash in order."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-verify-{time.time()}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "fetch.max.bytes": 64 * 1024 * 1024,
            "max.partition.fetch.bytes": 8 * 1024 * 1024,
        }
    )
    start = time.monotonic()
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in ends])
    hashers = {p: hashlib.blake2b(digest_size=16) for p in ends}
    left = {p for p, end in ends.items() if end > 0}
    records = size = 0
    while left:
        for m in consumer.consume(10_000, 1.0):
            if m.error() is not None or m.partition() not in left:
                continue
            h = hashers[m.partition()]
            key, value = m.key() or b"", m.value() or b""
            h.update(len(key).to_bytes(4, "little") + key + len(value).to_bytes(4, "little"))
            h.update(value)
            for hk, hv in m.headers() or ():
                h.update(hk.encode() + (hv or b""))
            h.update(m.timestamp()[1].to_bytes(8, "little", signed=True))
            records += 1
            size += len(key) + len(value)
            if m.offset() + 1 >= ends[m.partition()]:
                left.discard(m.partition())
    consumer.close()
    out.put({"records": records, "bytes": size, "seconds": time.monotonic() - start})


def baseline(bench: Bench, ends: dict[int, int]) -> dict:
    queue: multiprocessing.Queue = multiprocessing.Queue()
    start = time.monotonic()
    procs = [
        multiprocessing.Process(target=hash_side, args=(b, ends, queue))
        for b in (bench.source_bootstrap, bench.target_bootstrap)
    ]
    for p in procs:
        p.start()
    sides = [queue.get(timeout=3600) for _ in procs]
    for p in procs:
        p.join()
    wall = time.monotonic() - start
    per_side = sides[0]["bytes"]
    return {"sides": sides, "wall_s": wall, "mb_per_s": per_side / wall / 1e6}


def run_verify(bench: Bench) -> dict:
    start = time.monotonic()
    done = subprocess.run(
        kmigrate(bench, "verify", "--link", LINK, "--json"),
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )
    wall = time.monotonic() - start
    if done.returncode != 0:
        raise SystemExit(f"verify exited {done.returncode}: {done.stderr[-2000:]}")
    report = json.loads(done.stdout)
    per_side = report["summary"]["bytes"] / 2
    return {
        "wall_s": wall,
        "report_s": report["seconds"],
        "records": report["summary"]["records"],
        "ok": report["ok"],
        "mb_per_s": per_side / wall / 1e6,
        "mb_per_s_report_time": per_side / report["seconds"] / 1e6,  # incl. Spark start
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--keep", action="store_true", help="Leave the clusters running.")
    args = parser.parse_args()
    results: dict = {
        **results_header(PARTITIONS),
        "records": args.records,
        "record_bytes": args.size,
        "gb_per_side": args.records * args.size / 1e9,
    }
    with (
        sandbox(keep=args.keep) as bench,
        ClusterAdmin(bench.settings.cluster("source")) as source,
    ):
        source.create_topic(TOPIC, PARTITIONS)
        print("loading the source ...", flush=True)
        perf_producer(bench.kafka_jars, bench.source_bootstrap, TOPIC, args.records, args.size)
        mirror = run_kmigrate_mirror(bench, TOPIC, LINK)
        try:
            results["mirror_s"] = wait_mirrored(bench, source, 3600)
        finally:
            stop(mirror, group=False)
        ends = {w.partition: w.high for w in source.watermarks(TOPIC)}
        results["kmigrate_verify"] = run_verify(bench)
        print(f"kmigrate verify: {json.dumps(results['kmigrate_verify'])}", flush=True)
        results["consumer_per_side"] = baseline(bench, ends)
        print(f"consumer per side: {json.dumps(results['consumer_per_side'])}", flush=True)
    results["verify_vs_consumers"] = (
        results["kmigrate_verify"]["mb_per_s"] / results["consumer_per_side"]["mb_per_s"]
    )
    print(f"wrote {write_results('verify-', results)}")


if __name__ == "__main__":
    main()
