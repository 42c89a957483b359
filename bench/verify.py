"""kmigrate verify vs one plain consumer per side that reads and hashes the same records.

    .venv/bin/python bench/verify.py [--gb 1,4,10] [--size 1024]

Two sandbox clusters in bench/.work. For each size of ``--gb`` in turn (GB per side,
10^9 bytes), the source topic grows to that size with records of ``--size`` bytes over
8 partitions, kmigrate's mirror copies what is new to the target (link ``bench``), then,
one after the other, over the whole topic:

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

from common import (
    Bench,
    kmigrate,
    perf_producer,
    results_header,
    run_kmigrate_mirror,
    sandbox,
    stop,
    write_results,
)
from confluent_kafka import Consumer, TopicPartition

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
        raise SystemExit(
            f"verify exited {done.returncode}: {done.stderr[-2000:]}{done.stdout[-4000:]}"
        )
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


def measure(bench: Bench, source: ClusterAdmin, records: int, size: int) -> dict:
    """The topic grown by ``records``, mirrored, then verify and the baseline over all."""
    print(f"loading {records:,} more records ...", flush=True)
    perf_producer(bench.kafka_jars, bench.source_bootstrap, TOPIC, records, size)
    mirror = run_kmigrate_mirror(bench, TOPIC, LINK)
    try:
        mirror_s = wait_mirrored(bench, source, 3600)
    finally:
        stop(mirror, group=False)
    ends = {w.partition: w.high for w in source.watermarks(TOPIC)}
    step: dict = {"records": sum(ends.values()), "mirror_s": mirror_s}
    step["gb_per_side"] = step["records"] * size / 1e9
    step["kmigrate_verify"] = run_verify(bench)
    print(f"kmigrate verify: {json.dumps(step['kmigrate_verify'])}", flush=True)
    step["consumer_per_side"] = baseline(bench, ends)
    print(f"consumer per side: {json.dumps(step['consumer_per_side'])}", flush=True)
    step["verify_vs_consumers"] = (
        step["kmigrate_verify"]["mb_per_s"] / step["consumer_per_side"]["mb_per_s"]
    )
    print(f"{step['gb_per_side']:.2f} GB per side: {step['verify_vs_consumers']:.2f}x", flush=True)
    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gb", default="1", help="GB per side to verify at, in turn: 1,4,10")
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--keep", action="store_true", help="Leave the clusters running.")
    args = parser.parse_args()
    sizes = [float(g) for g in args.gb.split(",")]
    results: dict = {**results_header(PARTITIONS), "record_bytes": args.size, "steps": []}
    with (
        sandbox(keep=args.keep) as bench,
        ClusterAdmin(bench.settings.cluster("source")) as source,
    ):
        source.create_topic(TOPIC, PARTITIONS)
        held = 0
        for gb in sizes:
            wanted = int(gb * 1e9 / args.size)
            results["steps"].append(measure(bench, source, wanted - held, args.size))
            held = wanted
    first = results["steps"][0]  # the headline figures, as earlier runs gave them
    results.update(
        {k: first[k] for k in ("kmigrate_verify", "consumer_per_side", "verify_vs_consumers")}
    )
    print(f"wrote {write_results('verify-', results)}")


if __name__ == "__main__":
    main()
