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
broker). kmigrate's plan is first applied and moved back once, unmeasured: the first move
on a fresh cluster pauses producers several times longer, whichever tool makes it
(``--no-warm-up`` measures it). Then it is applied with `--throttle auto --wait` while a
producer (acks=all) writes ``--rate`` records of 1 KB per second to a moving topic;
reported: time to finish, the producer's p99 latency before and during the move (records
sent until 3 s after the apply returns), the slowest acknowledgement per partition, the
topic's leader and ISR changes, throttles left. Then, from the same placement (kmigrate
moves the partitions back first), the same plan file is executed by Kafka's own tool at
the throttle kmigrate chose: `kafka-reassign-partitions --execute --throttle`, then
`--verify` until done (which removes the throttles), then `kafka-leader-election
--election-type preferred` for the plan's partitions (what kmigrate's apply does at its
end); the producer's p99 without and with the election is reported beside kmigrate's.
``--kafka-first`` runs Kafka's tool first instead.
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

from common import WORK, java, results_header, write_results
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from kmigrate.config import load_settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.reassignments import Reassignments
from kmigrate.reassign.observe import read_cluster
from kmigrate.reassign.throttles import auto_rate
from kmigrate.sandbox import manager
from kmigrate.sandbox.jars import DEFAULT_KAFKA_VERSION, ensure_jars
from kmigrate.sandbox.state import load_state

RACKS = ["a", "b", "a", "b", "a"]
# Records sent this long after a tool returns still count as sent during its move: the
# pause of its last leader changes falls on them.
SETTLE_S = 3.0
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


def tuned(directory: Path, configs: dict[str, str], brokers: int) -> None:
    """``configs`` appended to every broker's server.properties that lacks them (static
    broker configs such as replica.fetch.backoff.ms), those brokers restarted."""
    if not configs:
        return
    cluster = load_state(directory).clusters["bench"]
    for broker in cluster.brokers:
        props = manager.broker_properties(directory, cluster, broker)
        text = props.read_text()
        missing = {k: v for k, v in configs.items() if f"\n{k}=" not in text}
        if missing:
            props.write_text(text + "".join(f"\n{k}={v}" for k, v in missing.items()) + "\n")
            manager.stop_broker(directory, "bench", broker.node_id, kill=True)  # holds no data yet
    manager.up(directory, manager.UpRequest(clusters=["bench"], brokers=brokers,
                                            racks=RACKS[:brokers]))  # fmt: skip


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

    mean = sum(size[b] for b in brokers) / len(brokers)

    return {
        "replicas_moved": moved,
        "mib_moved": round(moved_bytes / MIB, 1),
        "replica_spread": spread(replicas),
        "leader_spread": spread(leaders),
        "mib_spread": round(spread(size) / MIB, 1),
        # the broker furthest from the mean bytes, in % of the mean
        "bytes_off_mean_pct": round(100 * max(abs(size[b] - mean) for b in brokers) / mean, 1),
    }


class Leaders(threading.Thread):
    """The leader and in-sync replicas of each partition of ``topic``, asked every
    0.1 s; each change kept with its time."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.topic = topic
        self.admin = AdminClient({"bootstrap.servers": bootstrap})
        self.changes: list[tuple[float, int, int, tuple[int, ...]]] = []
        self.done = threading.Event()

    def run(self) -> None:
        seen: dict[int, tuple[int, tuple[int, ...]]] = {}
        while not self.done.wait(0.1):
            try:
                topic = self.admin.list_topics(self.topic, timeout=5).topics[self.topic]
            except Exception:  # a broker restarting: ask again next time
                continue
            for p, meta in topic.partitions.items():
                now = (meta.leader, tuple(sorted(meta.isrs)))
                if seen.get(p) != now:
                    seen[p] = now
                    self.changes.append((time.monotonic(), p, *now))

    def between(self, since: float, until: float) -> list[str]:
        return [
            f"+{t - since:.1f}s p{p}: leader {leader} isr {','.join(map(str, isr))}"
            for t, p, leader, isr in self.changes if since <= t < until
        ]  # fmt: skip


class Load(threading.Thread):
    def __init__(self, bootstrap: str, topic: str, rate: int) -> None:
        super().__init__(daemon=True)
        self.topic, self.rate = topic, rate
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
        self.latencies: list[tuple[float, float]] = []  # (sent at, seconds to ack)
        self.partitions: list[int] = []  # the partition of each acknowledged record
        self.leaders = Leaders(bootstrap, topic)
        self.done = threading.Event()

    def run(self) -> None:
        self.leaders.start()
        value, n, start = os.urandom(1024), 0, time.monotonic()
        while not self.done.is_set():
            while n < (time.monotonic() - start) * self.rate:
                sent = time.monotonic()
                self.producer.produce(
                    self.topic, value,
                    on_delivery=lambda e, m, s=sent: e or self.acked(s, m.partition()),
                )  # fmt: skip
                n += 1
            self.producer.poll(0.005)
        self.producer.flush(60)
        self.leaders.done.set()

    def acked(self, sent: float, partition: int) -> None:
        self.latencies.append((sent, time.monotonic() - sent))
        self.partitions.append(partition)

    def slowest(self, since: float, until: float, count: int = 12) -> list[str]:
        """The slowest acknowledgement of each partition in the window, slowest first:
        'p<partition> sent at +s: ms'."""
        worst: dict[int, tuple[float, float]] = {}
        for (s, d), p in zip(self.latencies, self.partitions, strict=False):
            if since <= s < until and d > worst.get(p, (0.0, 0.0))[0]:
                worst[p] = (d, s)
        ranked = sorted(worst.items(), key=lambda item: -item[1][0])
        return [f"p{p} +{s - since:.1f}s: {1000 * d:.0f} ms" for p, (d, s) in ranked[:count]]

    def p99_ms(self, since: float, until: float) -> float:
        window = sorted(d for s, d in self.latencies if since <= s < until)
        return round(1000 * window[int(len(window) * 0.99)], 1) if window else float("nan")


def run_case(config: Path, label: str, goal: list[str], brokers: list[int], names: list[str],
             jars: Path, load: Load, apply_args: tuple[str, ...] = (),
             kafka_first: bool = False, warm_up: bool = True) -> dict:  # fmt: skip
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
    before = {(p.topic, p.partition): p.replicas for p in model.partitions}
    if warm_up:  # the first move on a fresh cluster pauses producers longest, by any tool
        result["warm_up_s"] = warmed(config, plan, before)
    if kafka_first:  # the other order: Kafka's tool first, then kmigrate
        result["kafka_execute"] = same_plan_by_kafka(config, plan, jars, load)
        moved_back(config, before, plan)
    result.update(kmigrate_apply(config, plan, load, apply_args))
    with ClusterAdmin(cluster) as admin:
        left = [
            t.name for t in admin.list_topics()
            if any("throttled" in k for k in admin.dynamic_configs("topic", t.name))
        ] + [
            str(b.node_id) for b in admin.describe_cluster().brokers
            if any("throttled" in k for k in admin.dynamic_configs("broker", str(b.node_id)))
        ]  # fmt: skip
    result["throttles_left"] = left
    if not kafka_first:
        moved_back(config, before, plan)
        result["kafka_execute"] = same_plan_by_kafka(config, plan, jars, load)
    print(label, json.dumps(result, indent=2), flush=True)
    return result


def warmed(config: Path, plan: Path, before: dict[tuple[str, int], tuple[int, ...]]) -> float:
    """The plan applied by kmigrate and moved back, unmeasured; its seconds."""
    started = time.monotonic()
    timed_apply(config, plan, started, "--cluster", "bench")
    moved_back(config, before, plan)
    return round(time.monotonic() - started, 1)


def kmigrate_apply(config: Path, plan: Path, load: Load, apply_args: tuple[str, ...]) -> dict:
    """kmigrate applies ``plan`` (--throttle auto), the producer measured before and
    during."""
    before_start = time.monotonic()
    time.sleep(15)  # the producer's latency before the move
    started = time.monotonic()
    events = timed_apply(config, plan, started, *apply_args)
    ended = time.monotonic() + SETTLE_S
    time.sleep(SETTLE_S)
    return {
        "apply_s": round(ended - started, 1),
        "p99_ms_before": load.p99_ms(before_start, started),
        "p99_ms_during": load.p99_ms(started, ended),
        # where the slow acknowledgements fall, next to what the apply was doing then
        "slowest_acks": load.slowest(started, ended),
        "apply_events": events,
        "leader_changes": load.leaders.between(started, ended),
    }


def same_plan_by_kafka(config: Path, plan: Path, jars: Path, load: Load) -> dict:
    """Kafka's tool executes ``plan`` at the throttle kmigrate's ``auto`` picks for the
    producer's rate, the producer measured as for kmigrate."""
    cluster = load_settings(config).cluster("bench")
    throttle = auto_rate(load.rate * 1024)
    quiet_start = time.monotonic()
    time.sleep(15)  # the producer's latency before the move, as for kmigrate
    started = time.monotonic()
    tool_events = kafka_execute(jars, cluster.bootstrap_servers, plan, throttle)
    verified = time.monotonic()
    time.sleep(SETTLE_S)
    executed = verified + SETTLE_S
    # kmigrate's apply ends with the plan's preferred leaders elected; Kafka's tool
    # leaves that to its leader-election tool (or auto.leader.rebalance, minutes later)
    tool_events += kafka_elect(jars, cluster.bootstrap_servers, plan, started)
    ended = time.monotonic() + SETTLE_S
    time.sleep(SETTLE_S)
    return {
        "throttle_bytes_per_s": throttle,
        "apply_s": round(verified - started, 1),
        "p99_ms_before": load.p99_ms(quiet_start, started),
        "p99_ms_during": load.p99_ms(started, executed),
        "slowest_acks": load.slowest(started, executed),
        "with_election_s": round(ended - started, 1),
        "p99_ms_with_election": load.p99_ms(started, ended),
        "slowest_acks_with_election": load.slowest(started, ended),
        "events": tool_events,
        "leader_changes": load.leaders.between(started, ended),
    }


def kafka_elect(jars: Path, bootstrap: str, plan: Path, started: float) -> list[str]:
    """`kafka-leader-election --election-type preferred` for the plan's partitions."""
    partitions = WORK / f"{plan.stem}-elect.json"
    partitions.write_text(json.dumps({"partitions": [
        {"topic": p["topic"], "partition": p["partition"]}
        for p in json.loads(plan.read_text())["partitions"]
    ]}))  # fmt: skip
    run = java(jars, "org.apache.kafka.tools.LeaderElectionCommand",
               "--bootstrap-server", bootstrap, "--election-type", "preferred",
               "--path-to-json-file", str(partitions))  # fmt: skip
    text = run.communicate()[0].decode()
    if run.returncode != 0:
        raise SystemExit(f"kafka-leader-election failed: {text[-2000:]}")
    said = " / ".join(line.strip()[:200] for line in text.splitlines() if line.strip())
    return [f"+{time.monotonic() - started:.1f}s preferred leaders elected: {said}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=40)
    parser.add_argument("--partitions", type=int, default=12)
    parser.add_argument("--rate", type=int, default=1000, help="1 KB records/s during moves")
    parser.add_argument("--max-moves", type=int, default=None,
                        help="kmigrate apply's --max-moves (default: its own)")  # fmt: skip
    parser.add_argument("--no-warm-up", action="store_true",
                        help="measure the first move on the fresh cluster")  # fmt: skip
    parser.add_argument("--broker-config", action="append", default=[], metavar="KEY=VALUE",
                        help="a static broker config for every broker (repeatable)")  # fmt: skip
    parser.add_argument("--kafka-first", action="store_true",
                        help="Kafka's tool runs each plan first")  # fmt: skip
    args = parser.parse_args()
    apply_args = ("--max-moves", str(args.max_moves)) if args.max_moves else ()
    configs = dict(item.split("=", 1) for item in args.broker_config)

    shutil.rmtree(WORK, ignore_errors=True)
    directory = WORK / "sandbox"
    manager.up(directory, manager.UpRequest(clusters=["bench"], brokers=4, racks=RACKS[:4]))
    tuned(directory, configs, 4)
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
                         "max_moves": args.max_moves,
                         "first": "kafka" if args.kafka_first else "kmigrate",
                         "warm_up": not args.no_warm_up, "broker_configs": configs}  # fmt: skip
        manager.up(directory, manager.UpRequest(clusters=["bench"], brokers=5, racks=RACKS))
        tuned(directory, configs, 5)
        results["cases"]["add_broker_5"] = run_case(
            config,
            "add",
            ["--add-brokers", "5"],
            [1, 2, 3, 4, 5],
            names,
            jars,
            load,
            apply_args,
            args.kafka_first,
        )
        results["cases"]["drain_broker_2"] = run_case(
            config,
            "drain",
            ["--drain", "2"],
            [1, 3, 4, 5],
            names,
            jars,
            load,
            apply_args,
            args.kafka_first,
        )
        load.done.set()
        load.join(60)
        results["p99_ms_all"] = round(
            1000 * statistics.quantiles([d for _, d in load.latencies], n=100)[98], 1
        )
        # a variant's results carry a suffix: the benchmark page shows the plain runs
        suffix = f"-max-moves-{args.max_moves}" if args.max_moves else ""
        suffix += "-kafka-first" if args.kafka_first else ""
        suffix += "-tuned" if configs else ""
        suffix += "-no-warm-up" if args.no_warm_up else ""
        print(f"wrote {write_results('reassign-', results, suffix)}")
    finally:
        if load is not None:
            load.done.set()
        manager.down(directory, purge=True, grace=10)


if __name__ == "__main__":
    main()
