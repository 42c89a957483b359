"""kmigrate mirror vs MirrorMaker 2 vs the brokers' own ceiling, on the same data, in one run.

    .venv/bin/python bench/mirror_vs_mm2.py [--small 10000000] [--medium 500000]
        [--large 200000] [--codecs none,lz4] [--shapes 1000000:20,16384:0,1024:0]
        [--turns 3] [--only mm2,kmigrate,kmigrate_bytes] [--lag-seconds 30]

Two sandbox clusters (one broker each) in bench/.work; the source is pre-loaded with
``--small`` records of 100 B, ``--medium`` of 1 KB and ``--large`` of 10 KB over 8
partitions each, once per codec of ``--codecs`` (lz4 topics end in ``-lz4``) and per
batch shape of ``--shapes`` (ProducerPerformance's batch.size:linger.ms; topics of a
shape other than 1 MB batches end in ``-b<batch.size>``: 1024:0 writes ~8 records of
100 B a batch, as busy services with many producers do). Then, one after the other:

1. ceiling: Kafka's ConsumerPerformance reading the source, ProducerPerformance
   writing the same volume to the target (acks=all);
2. MirrorMaker 2 from the same Kafka release's jars (IdentityReplicationPolicy, so
   partition p goes to partition p under the same name), tuned as its docs advise:
   tasks.max = partitions, the target producer batching for throughput (linger.ms 20,
   batch.size 1 MB), max.poll.records 10,000, a 2 GB heap;
3. kmigrate mirror copying record by record (``--copy records``, the mirror before the
   byte copy), its default master: local[2 x cores];
4. kmigrate mirror copying record batches as bytes (``--copy bytes``).

Each copier copies each topic in turn, restarted on an empty target each time; the
whole round is run ``--turns`` times, the contenders' order rotated each turn, and each
figure is the median over the turns. End to end is the command to the target holding
every source record; steady throughput counts from the first record on the target to
the last (start-up reported apart); CPU is the copier's process tree over that second
span, per MB copied. The load average before and after and the kmigrate commit are in
the results.
Then, with the copier still running, a producer writes at a fixed rate for
``--lag-seconds`` and a consumer on the target measures produced-to-readable lag
(CreateTime is kept by both tools). Target topics are deleted between runs.
Results: bench/results/<date>.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path

from common import (
    Bench,
    TreeSampler,
    java,
    kmigrate_commit,
    machine,
    perf_producer,
    reset_target,
    results_header,
    run_kmigrate_mirror,
    run_mm2,
    sandbox,
    stop,
    write_results,
)
from confluent_kafka import Consumer, Producer

from kmigrate.kafka.admin import ClusterAdmin

PARTITIONS = 8
SIZES = {"bench-small": 100, "bench-medium": 1024, "bench-large": 10 * 1024}
COUNTS = {"bench-small": "small", "bench-medium": "medium", "bench-large": "large"}
LAG_TOPIC = "bench-lag"
MM2_HEAP = "2g"
MM2_TUNING = ("src.consumer.max.poll.records = 10000",)
CONTENDERS = {  # results key -> extra `mirror start` options
    "kmigrate": ("--copy", "records"),
    "kmigrate_bytes": ("--copy", "bytes"),
}


DEFAULT_SHAPE = (1_000_000, 20)  # ProducerPerformance's batch.size and linger.ms


def shapes_of(args) -> list[tuple[int, int]]:
    """The source batch shapes asked for: (batch.size, linger.ms)."""
    found = []
    for shape in args.shapes.split(","):
        size, _, linger = shape.partition(":")
        found.append((int(size), int(linger or 0)))
    return found


def topics_of(args) -> dict[str, tuple[int, int, str, tuple[int, int]]]:
    """Topic -> (record size, records, codec, batch shape) for the sizes, codecs and
    shapes asked for."""
    found = {}
    for shape in shapes_of(args):
        for codec in args.codecs.split(","):
            for name, size in SIZES.items():
                n = getattr(args, COUNTS[name])
                if n:
                    topic = name if codec == "none" else f"{name}-{codec}"
                    topic += "" if shape == DEFAULT_SHAPE else f"-b{shape[0]}"
                    found[topic] = (size, n, codec, shape)
    return found


def perf_consumer(jars: Path, bootstrap: str, topic: str, n: int) -> dict:
    proc = java(
        jars,
        "org.apache.kafka.tools.ConsumerPerformance",
        "--bootstrap-server",
        bootstrap,
        "--topic",
        topic,
        "--num-records",
        str(n),
        "--timeout",
        "60000",
    )
    text = proc.communicate()[0].decode().strip().splitlines()
    header = [h.strip() for h in text[-2].split(",")]
    values = [v.strip() for v in text[-1].split(",")]
    row = dict(zip(header, values, strict=False))
    # The fetch rates leave out the group join, like the copy rates below leave out start-up.
    return {
        "records_per_s": float(row["fetch.nMsg.sec"]),
        "mb_per_s": float(row["fetch.MB.sec"]) * 1.048576,
    }


def ends(admin: ClusterAdmin, topics: list[str]) -> dict:
    """End offsets, asked with a short timeout: a topic the copier has not created yet
    must not stall the sampling (the admin layer retries it for the cluster timeout)."""
    from confluent_kafka import TopicPartition

    consumer = Consumer({**admin.cluster.as_librdkafka(), "group.id": "bench-ends"})
    try:
        result = {}
        for t in topics:
            for p in range(PARTITIONS):
                try:
                    _, high = consumer.get_watermark_offsets(TopicPartition(t, p), timeout=2)
                except Exception:
                    high = 0
                result[(t, p)] = high
        return result
    finally:
        consumer.close()


def time_copy(
    source: ClusterAdmin,
    target: ClusterAdmin,
    topics: list[str],
    timeout: float,
    cpu=lambda: 0.0,
) -> dict:
    """Seconds from now to the first target record, and to the target holding everything;
    ``cpu()`` (the copier's CPU seconds so far) spent between the two."""
    wanted = ends(source, topics)
    total = sum(wanted.values())
    start = time.monotonic()
    first = None
    while True:
        got = ends(target, topics)
        if first is None and sum(got.values()) > 0:
            first, cpu_first, at_first = time.monotonic(), cpu(), sum(got.values())
        if got and all(got.get(tp, 0) >= end for tp, end in wanted.items()):
            done = time.monotonic()
            return {
                "records": total,
                # Rates count what was copied between the two moments only (a fast
                # copier may hold many records when first seen).
                "copied_after_first": total - (at_first if first else 0),
                "startup_s": (first or done) - start,
                "copy_s": done - (first or start),
                "cpu_s": cpu() - (cpu_first if first else 0.0),
            }
        if time.monotonic() - start > timeout:
            raise SystemExit(f"copy did not finish within {timeout}s ({sum(got.values())}/{total})")
        time.sleep(0.05)


def measure_lag(
    source_bootstrap: str, target_bootstrap: str, topic: str, rate: int, seconds: float
) -> dict:
    """Fixed-rate producer on the source; a target consumer measures produced-to-readable."""
    lags: list[float] = []
    stop = threading.Event()

    def consume() -> None:
        consumer = Consumer(
            {
                "bootstrap.servers": target_bootstrap,
                "group.id": f"lag-{time.time()}",
                "auto.offset.reset": "latest",
                "enable.auto.commit": False,
            }
        )
        consumer.subscribe([topic])
        while not stop.is_set():
            for msg in consumer.consume(1000, 0.2):
                if msg.error() is None:
                    lags.append(time.time() * 1000 - msg.timestamp()[1])
        consumer.close()

    reader = threading.Thread(target=consume, daemon=True)
    reader.start()
    time.sleep(3)  # let the consumer join before the first measured record
    producer = Producer({"bootstrap.servers": source_bootstrap, "linger.ms": 1, "acks": "all"})
    payload = b"x" * 100
    sent = 0
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        due = int((time.monotonic() - t0) * rate)
        while sent < due:
            producer.produce(
                topic, payload, partition=sent % PARTITIONS, timestamp=int(time.time() * 1000)
            )
            sent += 1
        producer.poll(0.001)
    producer.flush(30)
    deadline = time.monotonic() + 60
    while len(lags) < sent and time.monotonic() < deadline:
        time.sleep(0.2)
    stop.set()
    reader.join(10)
    q = statistics.quantiles(lags, n=100) if len(lags) > 100 else [float("nan")] * 99
    return {"rate": rate, "sent": sent, "received": len(lags), "p50_ms": q[49], "p99_ms": q[98]}


def contender(
    name: str, launch, bench: Bench, source, target, args, *, group: bool, lag: bool, turn: int
) -> dict:
    """One copier on each topic in turn (a fresh target and a fresh copier, with a link
    of its own for ``turn``, each), then (``lag``) the lag measurement while the last one
    still runs."""
    sizes = {}
    topics = topics_of(args)
    # A lag topic of its own, empty until measured: the other copier's lag records
    # (old timestamps) must not be copied into this one's measurement.
    lag_topic = f"{LAG_TOPIC}-{name}"
    if lag_topic not in {t.name for t in source.list_topics()}:
        source.create_topic(lag_topic, PARTITIONS)
    lag_result = None
    for index, (topic, (size, *_)) in enumerate(topics.items()):
        reset_target(target)
        proc = launch(f"{topic}|{lag_topic}", f"bench-{name.replace('_', '-')}-{turn}-{index}")
        sampler = TreeSampler(proc.pid)
        sampler.start()

        def cpu(sampler=sampler) -> float:
            sampler.sample()
            return sampler.cpu_s()

        try:
            copy = time_copy(source, target, [topic], timeout=3600, cpu=cpu)
            volume = copy["copied_after_first"] * size
            end_to_end = copy["startup_s"] + copy["copy_s"]
            sizes[topic] = {
                **copy,
                "records_per_s": copy["copied_after_first"] / copy["copy_s"],
                "mb_per_s": volume / copy["copy_s"] / 1e6,
                "cpu_s_per_mb": copy["cpu_s"] / (volume / 1e6),
                "end_to_end_s": end_to_end,
                "end_to_end_records_per_s": copy["records"] / end_to_end,
            }
            print(f"{name} {topic}: {json.dumps(sizes[topic])}", flush=True)
            if lag and index == len(topics) - 1 and args.lag_seconds > 0:
                lag_result = measure_lag(
                    bench.source_bootstrap,
                    bench.target_bootstrap,
                    lag_topic,
                    args.lag_rate,
                    args.lag_seconds,
                )
        finally:
            sampler.stop()
            stop(proc, group=group)
    records = sum(r["copied_after_first"] for r in sizes.values())
    seconds = sum(r["copy_s"] for r in sizes.values())
    volume = sum(sizes[t]["copied_after_first"] * size for t, (size, *_) in topics.items())
    result = {
        "records": records,
        "startup_s": statistics.mean(r["startup_s"] for r in sizes.values()),
        "copy_s": seconds,
        "records_per_s": records / seconds,
        "mb_per_s": volume / seconds / 1e6,
        "by_size": sizes,
        "lag": lag_result,
    }
    print(f"{name}: {json.dumps(result)}", flush=True)
    return result


def ceiling(bench: Bench, target: ClusterAdmin, args) -> dict:
    target.create_topic("bench-ceiling", PARTITIONS)
    result = {}
    for topic, (size, n, codec, shape) in topics_of(args).items():
        result[topic] = {
            "consumer_source": perf_consumer(bench.kafka_jars, bench.source_bootstrap, topic, n),
            "producer_target": perf_producer(
                bench.kafka_jars, bench.target_bootstrap, "bench-ceiling", n, size, codec, shape
            ),
        }
    print(f"ceiling: {json.dumps(result)}", flush=True)
    return result


MEDIANS = ("startup_s", "copy_s", "records_per_s", "mb_per_s", "cpu_s_per_mb", "end_to_end_s",
           "end_to_end_records_per_s")  # fmt: skip


def medians(turns: list[dict]) -> dict:
    """One contender's turns as one result: per topic, the median of each figure over
    the turns (and every turn's end-to-end seconds); the last turn's lag."""
    by_size = {}
    for topic in turns[0]["by_size"]:
        runs = [turn["by_size"][topic] for turn in turns]
        by_size[topic] = {k: statistics.median(r[k] for r in runs) for k in MEDIANS}
        by_size[topic]["records"] = runs[0]["records"]
        by_size[topic]["end_to_end_s_turns"] = [round(r["end_to_end_s"], 2) for r in runs]
    records = sum(turns[0]["by_size"][t]["copied_after_first"] for t in by_size)
    seconds = sum(r["copy_s"] for r in by_size.values())
    return {
        "turns": len(turns),
        "records_per_s": records / seconds,
        "end_to_end_s": sum(r["end_to_end_s"] for r in by_size.values()),
        "by_size": by_size,
        "lag": next((t["lag"] for t in reversed(turns) if t.get("lag")), None),
    }


def ratios(results: dict) -> dict:
    """Each kmigrate copier against MirrorMaker 2 (steady and end to end) and the
    ceiling, per topic; the byte copy's CPU per MB against the record copier's."""
    out: dict = {}
    theirs = results.get("mm2")
    for name in CONTENDERS:
        mine = results.get(name)
        if mine is None:
            continue
        if theirs is not None:
            out[f"{name}_vs_mm2"] = mine["records_per_s"] / theirs["records_per_s"]
            out[f"{name}_vs_mm2_by_size"] = {
                t: mine["by_size"][t]["records_per_s"] / theirs["by_size"][t]["records_per_s"]
                for t in mine["by_size"]
            }
            out[f"{name}_vs_mm2_end_to_end_by_size"] = {
                t: theirs["by_size"][t]["end_to_end_s"] / mine["by_size"][t]["end_to_end_s"]
                for t in mine["by_size"]
            }
        out[f"{name}_vs_consumer_perf_by_size"] = {
            t: mine["by_size"][t]["records_per_s"]
            / results["ceiling"][t]["consumer_source"]["records_per_s"]
            for t in mine["by_size"]
        }
    if "kmigrate" in results and "kmigrate_bytes" in results:
        before, after = results["kmigrate"]["by_size"], results["kmigrate_bytes"]["by_size"]
        out["bytes_cpu_per_mb_vs_records"] = {
            t: after[t]["cpu_s_per_mb"] / before[t]["cpu_s_per_mb"] for t in after
        }
    if "kmigrate" in results and "bench-large" in results["ceiling"]:
        large = results["ceiling"]["bench-large"]
        ceiling_large = min(
            large["consumer_source"]["mb_per_s"], large["producer_target"]["mb_per_s"]
        )
        out["kmigrate_vs_ceiling_large"] = (
            results["kmigrate"]["by_size"]["bench-large"]["mb_per_s"] / ceiling_large
        )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=10_000_000)
    parser.add_argument("--medium", type=int, default=500_000)
    parser.add_argument("--large", type=int, default=200_000)
    parser.add_argument("--codecs", default="none,lz4", help="Source batch codecs, e.g. none,lz4.")
    parser.add_argument(
        "--shapes",
        default="1000000:20",
        help="Source batch shapes, batch.size:linger.ms, e.g. 1000000:20,16384:0,1024:0.",
    )
    parser.add_argument("--turns", type=int, default=3, help="Rounds of every contender.")
    parser.add_argument(
        "--only", default="", help="Contenders to run (mm2,kmigrate,kmigrate_bytes; default all)."
    )
    parser.add_argument("--lag-rate", type=int, default=5000)
    parser.add_argument("--lag-seconds", type=float, default=30)
    parser.add_argument("--keep", action="store_true", help="Leave the clusters running.")
    args = parser.parse_args()

    results: dict = {
        **results_header(PARTITIONS),
        "command": " ".join(["bench/mirror_vs_mm2.py", *sys.argv[1:]]),
        "kmigrate_commit": kmigrate_commit(),
        "machine_before": machine(),
        "data": {
            "small_100B": args.small,
            "medium_1KB": args.medium,
            "large_10KB": args.large,
            "codecs": args.codecs,
            "shapes": args.shapes,
        },
        "mm2_settings": {"tasks.max": PARTITIONS, "heap": MM2_HEAP, "extra": list(MM2_TUNING)},
    }
    only = set(args.only.split(",")) if args.only else {"mm2", *CONTENDERS}
    with (
        sandbox(keep=args.keep) as bench,
        ClusterAdmin(bench.settings.cluster("source")) as source,
        ClusterAdmin(bench.settings.cluster("target")) as target,
    ):
        print("pre-loading the source ...", flush=True)
        loads = {}
        for topic, (size, n, codec, shape) in topics_of(args).items():
            source.create_topic(topic, PARTITIONS, configs={"max.message.bytes": "2000000"})
            loads[topic] = perf_producer(
                bench.kafka_jars, bench.source_bootstrap, topic, n, size, codec, shape
            )
        results["load"] = loads
        results["ceiling"] = ceiling(bench, target, args)
        launchers = {
            "mm2": (lambda topics, _link: run_mm2(
                bench, topics, *MM2_TUNING, tasks=PARTITIONS, heap=MM2_HEAP), True),
            **{name: (lambda topics, link, extra=extra: run_kmigrate_mirror(
                bench, topics, link, *extra), False) for name, extra in CONTENDERS.items()},
        }  # fmt: skip
        names = [n for n in launchers if n in only]
        turns: dict[str, list[dict]] = {n: [] for n in names}
        for turn in range(args.turns):
            order = names[turn % len(names) :] + names[: turn % len(names)]
            print(f"turn {turn + 1} of {args.turns}: {', '.join(order)}", flush=True)
            for name in order:
                launch, group = launchers[name]
                turns[name].append(contender(name, launch, bench, source, target, args,
                                             group=group, lag=turn == args.turns - 1,
                                             turn=turn))  # fmt: skip
        results["turns"] = turns
        results.update({name: medians(found) for name, found in turns.items()})
    results["machine_after"] = machine()
    results.update(ratios(results))
    out = write_results("", results)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
