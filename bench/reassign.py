"""kmigrate's reassignment plans against `kafka-reassign-partitions --generate`, and a
throttled apply under load.

    .venv/bin/python bench/reassign.py [--topics 40] [--partitions 12] [--rate 1000]

A 4-broker sandbox cluster (Kafka 4.3.1, racks a, b, a, b) in bench/.work holding
``--topics`` topics of ``--partitions`` partitions, replication factor 3, placed with a
skew (broker 1 holds about twice its share) and some topics much larger than others.
Then, in turn:

(a) a 5th broker (rack a) is added;  (b) broker 2 is drained.

For each, both tools plan on the same cluster: kmigrate (`reassign plan --add-brokers 5`
/ `--drain 2`) and Kafka's own `kafka-reassign-partitions --generate` (all topics, the
broker list without the drained one). Reported per plan: replicas moved, bytes moved,
and the resulting spread (most minus fewest replicas, preferred leaders and MiB per
broker). kmigrate's plan is then applied with `--throttle auto --wait` while a producer
(acks=all) writes ``--rate`` records of 1 KB per second to a moving topic; reported: time
to finish, the producer's p99 latency before and during the move, throttles left.
Then the same plan file is executed by Kafka's own tool from the same starting point
(kmigrate moves the partitions back first), with the throttle kmigrate chose:
`kafka-reassign-partitions --execute --throttle`, then `--verify` until done (which
removes the throttles); the producer's p99 during it is reported beside kmigrate's.
Results: bench/results/reassign-<date>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from harness import WORK, java, results_header, write_results

from kmigrate.config import load_settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.reassignments import Reassignments
from kmigrate.reassign.observe import read_cluster
from kmigrate.sandbox import manager
from kmigrate.sandbox.jars import DEFAULT_KAFKA_VERSION, ensure_jars

RACKS = ["a", "b", "a", "b", "a"]
MIB = 2**20


def kmigrate(config: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "kmigrate", "--config", str(config), *args],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"kmigrate {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def moved_back(config: Path, before: dict[tuple[str, int], tuple[int, ...]], plan: Path) -> None:
    """The plan's partitions on their replicas of before the plan, moved by kmigrate."""
    planned = json.loads(plan.read_text())["partitions"]
    back = WORK / f"{plan.stem}-back.json"
    back.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": p["topic"], "partition": p["partition"],
         "replicas": list(before[(p["topic"], p["partition"])])}
        for p in planned
    ]}))  # fmt: skip
    timed_apply(config, back, time.monotonic(), "--cluster", "bench")


def kafka_execute(jars: Path, bootstrap: str, plan: Path, throttle: int) -> list[str]:
    """Kafka's tool runs ``plan`` with ``throttle`` B/s, then --verify until it is done
    (the verify that finds it done removes the throttles); its output lines, timed."""
    started, events = time.monotonic(), []
    common = ["--bootstrap-server", bootstrap, "--reassignment-json-file", str(plan)]
    run = java(jars, TOOL, *common, "--execute", "--throttle", str(throttle))
    text = run.communicate()[0].decode()
    if run.returncode != 0:
        raise SystemExit(f"kafka-reassign-partitions --execute failed: {text[-2000:]}")
    events.append(f"+{time.monotonic() - started:.1f}s executed")
    while True:
        check = java(jars, TOOL, *common, "--verify")
        text = check.communicate()[0].decode()
        if "still in progress" not in text and check.returncode == 0:
            events.append(f"+{time.monotonic() - started:.1f}s verified complete")
            return events
        time.sleep(1)  # the tool's own poll: it has no --wait


def timed_apply(config: Path, plan: Path, started: float, *extra: str) -> list[str]:
    """`reassign apply --throttle auto --wait`, its report lines with the time they came."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "kmigrate", "--config", str(config), "reassign", "apply",
         str(plan), "--throttle", "auto", "--wait", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    events = []
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.strip() and "partitions moved," not in line:  # progress repeats
            events.append(f"+{time.monotonic() - started:.1f}s {line.strip()[:160]}")
    if proc.wait() != 0:
        raise SystemExit(f"reassign apply failed: {events[-3:]}")
    return events


def skewed_topics(bootstrap: str, topics: int, partitions: int) -> list[str]:
    """Replica lists over brokers 1-4 with broker 1 in about twice its share."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    names, new = [], []
    weights = [1, 1, 1, 1, 2, 3, 4, 2, 3, 4]  # broker 1 appears in most lists
    for t in range(topics):
        assignment = []
        for p in range(partitions):
            first = 1 if weights[(t + p) % len(weights)] in (1, 2) else 2 + (t + p) % 3
            others = [b for b in (1, 2, 3, 4) if b != first]
            rest = others[(t + p) % 3 :] + others[: (t + p) % 3]
            assignment.append([first, *rest[:2]])
        name = f"bench-r{t:02d}"
        names.append(name)
        new.append(NewTopic(name, len(assignment), replica_assignment=assignment))
    for future in admin.create_topics(new).values():
        future.result(60)
    return names


def fill(bootstrap: str, names: list[str]) -> None:
    """Some topics much larger: every fourth gets 4 MiB, the others 0.2 MiB."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": "all"})
    value = os.urandom(1024)
    for i, name in enumerate(names):
        for _ in range(4096 if i % 4 == 0 else 200):
            producer.produce(name, value)
            producer.poll(0)
    producer.flush(120)


TOOL = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"


def kafka_generate(jars: Path, bootstrap: str, names: list[str], brokers: list[int]) -> dict:
    topics = WORK / "topics.json"
    topics.write_text(json.dumps({"version": 1, "topics": [{"topic": n} for n in names]}))
    proc = java(
        jars, "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
        "--bootstrap-server", bootstrap, "--topics-to-move-json-file", str(topics),
        "--broker-list", ",".join(map(str, brokers)), "--generate",
    )  # fmt: skip
    text = proc.communicate()[0].decode()
    proposed = text.split("Proposed partition reassignment configuration", 1)[1]
    return json.loads(proposed.strip().splitlines()[0])


def score(
    model: Any, assignment: dict[tuple[str, int], tuple[int, ...]], brokers: list[int]
) -> dict:
    """Replicas and bytes moved by ``assignment``, and the spread it leads to."""
    sizes = {p.key: p.size_bytes for p in model.partitions}
    current = {p.key: p.replicas for p in model.partitions}
    moved = moved_bytes = 0
    replicas, leaders, size = Counter(), Counter(), Counter()
    for key, before in current.items():
        after = assignment.get(key, before)
        added = [b for b in after if b not in before]
        moved += len(added)
        moved_bytes += len(added) * sizes[key]
        for i, b in enumerate(after):
            replicas[b] += 1
            size[b] += sizes[key]
            if i == 0:
                leaders[b] += 1

    def spread(counter: Counter) -> int:
        return max(counter[b] for b in brokers) - min(counter[b] for b in brokers)

    return {
        "replicas_moved": moved,
        "mib_moved": round(moved_bytes / MIB, 1),
        "replica_spread": spread(replicas),
        "leader_spread": spread(leaders),
        "mib_spread": round(spread(size) / MIB, 1),
    }


class Load(threading.Thread):
    def __init__(self, bootstrap: str, topic: str, rate: int) -> None:
        super().__init__(daemon=True)
        self.topic, self.rate = topic, rate
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
        self.latencies: list[tuple[float, float]] = []  # (sent at, seconds to ack)
        self.done = threading.Event()

    def run(self) -> None:
        value, n, start = os.urandom(1024), 0, time.monotonic()
        while not self.done.is_set():
            while n < (time.monotonic() - start) * self.rate:
                sent = time.monotonic()
                self.producer.produce(
                    self.topic, value,
                    on_delivery=lambda e, _m, s=sent: e or self.latencies.append(
                        (s, time.monotonic() - s)),
                )  # fmt: skip
                n += 1
            self.producer.poll(0.005)
        self.producer.flush(60)

    def slowest(self, since: float, until: float, count: int = 12) -> list[str]:
        """The slowest acknowledgements of the window: 'sent at +s: ms'."""
        window = sorted(((d, s) for s, d in self.latencies if since <= s < until), reverse=True)
        return [f"+{s - since:.1f}s: {1000 * d:.0f} ms" for d, s in window[:count]]

    def p99_ms(self, since: float, until: float) -> float:
        window = sorted(d for s, d in self.latencies if since <= s < until)
        return round(1000 * window[int(len(window) * 0.99)], 1) if window else float("nan")


def run_case(config: Path, label: str, goal: list[str], brokers: list[int], names: list[str],
             jars: Path, load: Load, apply_args: tuple[str, ...] = ()) -> dict:  # fmt: skip
    settings = load_settings(config)
    cluster = settings.cluster("bench")
    with ClusterAdmin(cluster) as admin, Reassignments(cluster) as kafka:
        model = read_cluster(admin, kafka)
    plan = WORK / f"{label}.json"
    kmigrate(config, "reassign", "plan", "--cluster", "bench", *goal, "-o", str(plan), "--force")
    mine = {
        (p["topic"], p["partition"]): tuple(p["replicas"])
        for p in json.loads(plan.read_text())["partitions"]
    }
    theirs_json = kafka_generate(jars, cluster.bootstrap_servers, names, brokers)
    theirs = {(p["topic"], p["partition"]): tuple(p["replicas"]) for p in theirs_json["partitions"]}
    result = {
        "kmigrate": score(model, mine, brokers),
        "kafka_generate": score(model, theirs, brokers),
    }
    before_start = time.monotonic()
    time.sleep(15)  # the producer's latency before the move
    started = time.monotonic()
    events = timed_apply(config, plan, started, *apply_args)
    ended = time.monotonic()
    result["apply_s"] = round(ended - started, 1)
    result["p99_ms_before"] = load.p99_ms(before_start, started)
    result["p99_ms_during"] = load.p99_ms(started, ended)
    # where the slow acknowledgements fall, next to what the apply was doing then
    result["slowest_acks"] = load.slowest(started, ended)
    result["apply_events"] = events
    with ClusterAdmin(cluster) as admin:
        left = [
            t.name for t in admin.list_topics()
            if any("throttled" in k for k in admin.dynamic_configs("topic", t.name))
        ] + [
            str(b.node_id) for b in admin.describe_cluster().brokers
            if any("throttled" in k for k in admin.dynamic_configs("broker", str(b.node_id)))
        ]  # fmt: skip
    result["throttles_left"] = left
    result["kafka_execute"] = same_plan_by_kafka(config, plan, model, events, jars, load)
    print(label, json.dumps(result, indent=2), flush=True)
    return result


def same_plan_by_kafka(
    config: Path, plan: Path, model: Any, events: list[str], jars: Path, load: Load
) -> dict:
    """The plan moved back by kmigrate, then executed by Kafka's tool at kmigrate's
    throttle, the producer measured as for kmigrate."""
    cluster = load_settings(config).cluster("bench")
    before = {(p.topic, p.partition): p.replicas for p in model.partitions}
    moved_back(config, before, plan)
    said = [e for e in events if "throttle " in e and "MiB/s per broker" in e]
    throttle = int(float(said[0].split("throttle ", 1)[1].split(" MiB/s")[0]) * MIB)
    quiet_start = time.monotonic()
    time.sleep(15)  # the producer's latency before the move, as for kmigrate
    started = time.monotonic()
    tool_events = kafka_execute(jars, cluster.bootstrap_servers, plan, throttle)
    ended = time.monotonic()
    return {
        "throttle_bytes_per_s": throttle,
        "apply_s": round(ended - started, 1),
        "p99_ms_before": load.p99_ms(quiet_start, started),
        "p99_ms_during": load.p99_ms(started, ended),
        "slowest_acks": load.slowest(started, ended),
        "events": tool_events,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=40)
    parser.add_argument("--partitions", type=int, default=12)
    parser.add_argument("--rate", type=int, default=1000, help="1 KB records/s during moves")
    parser.add_argument("--max-moves", type=int, default=None,
                        help="kmigrate apply's --max-moves (default: its own)")  # fmt: skip
    args = parser.parse_args()
    apply_args = ("--max-moves", str(args.max_moves)) if args.max_moves else ()

    shutil.rmtree(WORK, ignore_errors=True)
    directory = WORK / "sandbox"
    manager.up(directory, manager.UpRequest(clusters=["bench"], brokers=4, racks=RACKS[:4]))
    load = None
    try:
        config = directory / "clusters.yaml"
        body = config.read_text().replace(
            "sqlite:///kmigrate.db", f"sqlite:///{WORK / 'kmigrate.db'}"
        )
        config.write_text(body)
        bootstrap = load_settings(config).cluster("bench").bootstrap_servers
        names = skewed_topics(bootstrap, args.topics, args.partitions)
        fill(bootstrap, names)
        time.sleep(5)  # log-dir sizes settle
        jars = ensure_jars(DEFAULT_KAFKA_VERSION)
        load = Load(bootstrap, names[0], args.rate)
        load.start()
        results: dict = {**results_header(args.partitions), "topics": args.topics, "cases": {},
                         "max_moves": args.max_moves}  # fmt: skip
        manager.up(directory, manager.UpRequest(clusters=["bench"], brokers=5, racks=RACKS))
        results["cases"]["add_broker_5"] = run_case(
            config, "add", ["--add-brokers", "5"], [1, 2, 3, 4, 5], names, jars, load, apply_args
        )
        results["cases"]["drain_broker_2"] = run_case(
            config, "drain", ["--drain", "2"], [1, 3, 4, 5], names, jars, load, apply_args
        )
        load.done.set()
        load.join(60)
        results["p99_ms_all"] = round(
            1000 * statistics.quantiles([d for _, d in load.latencies], n=100)[98], 1
        )
        # a run with another --max-moves is a comparison, not the benchmark page's table
        prefix = f"reassign-max-moves-{args.max_moves}-" if args.max_moves else "reassign-"
        print(f"wrote {write_results(prefix, results)}")
    finally:
        if load is not None:
            load.done.set()
        manager.down(directory, purge=True, grace=10)


if __name__ == "__main__":
    main()
