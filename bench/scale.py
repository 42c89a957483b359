"""Cost at scale: the same bytes in 32, 1,000 and 10,000 partitions.

    KMIGRATE_CACHE=$PWD/.cache .venv/bin/python bench/scale.py \\
        [--partitions 32,1000,10000] [--bytes 100MB] [--lag-rate 5000,500] \\
        [--lag-seconds 30] [--groups 500] [--broker-heap 2g] [--max-load 6] [--profile]

Per partition count, fresh one-broker sandbox clusters (bench/.work) and topics of up to
10 partitions (10,000 partitions = 1,000 topics), created 100 per request, loaded with
the same total ``--bytes`` of 1,000 B records spread evenly (100 MB: 3,125 records per
partition at 32, 10 at 10,000) by bench/ScaleProducer.java (Kafka's Java producer puts
every ready partition of a broker in one request; librdkafka sends one per partition).
Then, in order:

1. **first copy**: ``kmigrate mirror start`` (link ``scale``, a process) from launch
   until every target partition ends where its source partition ends (one ListOffsets
   for all partitions per poll);
2. **steady lag**, per ``--lag-rate``: the mirror still running, that many records/s of
   1,000 B for ``--lag-seconds``, round robin over every partition, each stamped with
   its send time (CreateTime, which the mirror keeps); a consumer process on the target,
   assigned to every partition at its end, records produce-to-readable per record (the
   first 2 s are not counted); the source's acknowledgement latency, the mirror's and
   the machine's CPU meanwhile; then the time until the mirror has caught up;
3. the mirror is stopped (SIGTERM): **memory** is the peak of the summed RSS of its
   process tree (the driver, Spark's JVM, the Python workers), sampled every 0.5 s;
   the **store** is the SQLite file (with its -wal);
4. **verify**: ``kmigrate verify --link scale --json``, wall time (every byte of 1 and 2);
5. **groups**: ``--groups`` groups commit on the source (each on 2 topics, at 10-90 % of
   each partition, with AdminClient.alter_consumer_group_offsets, all at once), then
   one ``kmigrate groups migrate --groups REGEX --yes`` moves them all, timed; every
   target commit is checked against the source's (the offsets coincide: no gaps);
6. **source alone**: each lag rate again with no mirror running: the acknowledgement
   latency the source broker gives by itself (the floor under the lag of 2).

Each broker's CPU seconds and heap (``jstat``) are recorded per phase. A phase that fails
is recorded as ``{"error": ...}`` and the case goes on. The goals (issue 33) compare the
largest case with the smallest and are printed with their ratios. ``--profile`` records
the mirror and verify with py-spy (``--subprocesses``, raw collapsed stacks). Logs,
broker logs, verify reports and profiles are kept in /tmp/kmigrate-scale/<partitions>/
(bench/.work is reset per case). Results: bench/results/scale-<date><suffix>.json,
rewritten after every case.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common import (
    HERE,
    WORK,
    Bench,
    TreeSampler,
    cpu_busy,
    java,
    kmigrate,
    kmigrate_commit,
    machine,
    process_cpu_s,
    results_header,
    run_kmigrate_mirror,
    sandbox,
    sandbox_broker_pids,
    stop,
    write_results,
)
from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from kmigrate.sandbox.process import HEAP_ENV

RECORD_BYTES = 1000
PER_TOPIC = 10
PREFIX = "bench-scale-"
LINK = "scale"
GROUP_PREFIX = "bench-scale-g-"
WARMUP_S = 2.0
LOGS = Path("/tmp/kmigrate-scale")
GOAL_RATE = 5000  # records/s at which issue 33 sets the lag goal
Pair = tuple[str, int]


@dataclass(frozen=True)
class Layout:
    """Topics of ``per_topic`` partitions, ``records`` records in each partition."""

    partitions: int
    per_topic: int
    records: int

    @property
    def topics(self) -> list[str]:
        return [f"{PREFIX}{i:05d}" for i in range(self.partitions // self.per_topic)]

    @property
    def pairs(self) -> list[Pair]:
        return [(t, p) for t in self.topics for p in range(self.per_topic)]

    @property
    def bytes(self) -> int:
        return self.partitions * self.records * RECORD_BYTES


def layout(partitions: int, total_bytes: int) -> Layout:
    """At most PER_TOPIC partitions per topic (the largest divisor), bytes spread evenly."""
    per_topic = max(d for d in range(1, PER_TOPIC + 1) if partitions % d == 0)
    records = max(1, round(total_bytes / RECORD_BYTES / partitions))
    return Layout(partitions, per_topic, records)


def parse_bytes(text: str) -> int:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMG]?)B?", text.strip().upper())
    if not match:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 100MB)")
    return int(float(match.group(1)) * {"": 1, "K": 1e3, "M": 1e6, "G": 1e9}[match.group(2)])


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


# -- Kafka, in bulk ---------------------------------------------------------------------


def admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def create_topics(bootstrap: str, lay: Layout) -> float:
    """All topics, 100 per CreateTopics; returns once the broker answers ListOffsets for
    every partition. Metadata names a leader before the broker has created the log (about
    150 logs/s here); a producer writing then is refused and retries."""
    client = admin(bootstrap)
    names = lay.topics
    start = time.monotonic()
    for i in range(0, len(names), 100):
        batch = [
            NewTopic(n, num_partitions=lay.per_topic, replication_factor=1)
            for n in names[i : i + 100]
        ]
        for future in client.create_topics(
            batch, operation_timeout=120, request_timeout=120
        ).values():
            future.result(180)
    while time.monotonic() - start < 900:
        ready = sum(1 for end in end_offsets(admin(bootstrap), lay.pairs).values() if end >= 0)
        if ready == lay.partitions:
            return round(time.monotonic() - start, 2)
        time.sleep(2)
    raise SystemExit(f"source topics: {ready} of {lay.partitions} partitions ready after 900 s")


def end_offsets(client: AdminClient, pairs: list[Pair]) -> dict[Pair, int]:
    """Latest offset of every partition in one ListOffsets call; -1 where it failed
    (a topic the target does not have yet)."""
    request = {TopicPartition(t, p): OffsetSpec.latest() for t, p in pairs}
    ends = {}
    for tp, future in client.list_offsets(request, request_timeout=60).items():
        try:
            ends[(tp.topic, tp.partition)] = future.result(90).offset
        except KafkaException:
            ends[(tp.topic, tp.partition)] = -1
    return ends


def scale_producer(bench: Bench, lay: Layout, mode: str, *args: object) -> dict:
    """bench/ScaleProducer.java (Kafka's Java producer: one request per broker for all
    ready partitions); its JSON line."""
    proc = java(
        bench.kafka_jars,
        str(HERE / "ScaleProducer.java"),
        bench.source_bootstrap,
        mode,
        PREFIX,
        str(len(lay.topics)),
        str(lay.per_topic),
        *(str(a) for a in args),
    )
    out, _ = proc.communicate(timeout=3600)
    print("".join(f"    {line}\n" for line in out.decode().splitlines()), end="", flush=True)
    lines = [line for line in out.decode().splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"ScaleProducer {mode} failed ({proc.returncode}): {out.decode()[-2000:]}")
    result = json.loads(lines[-1])
    if result["failed"]:
        raise SystemExit(
            f"ScaleProducer {mode}: {result['failed']} records failed: {out.decode()[-2000:]}"
        )
    return result


def load_source(bench: Bench, lay: Layout) -> dict:
    """``lay.records`` records per partition, written round robin."""
    done = scale_producer(bench, lay, "load", lay.records, RECORD_BYTES)
    seconds = done["seconds"]
    return {"seconds": seconds, "mb_per_s": round(lay.bytes / seconds / 1e6, 1)}


# -- first copy -------------------------------------------------------------------------


def wait_copied(
    bench: Bench, lay: Layout, want: dict[Pair, int], launched: float, timeout: float
) -> dict:
    """Seconds from the mirror's launch to its first target record and to the target
    ending where the source ends in every partition."""
    client = admin(bench.target_bootstrap)
    every = 0.5 if lay.partitions < 1000 else 1.0
    total = sum(want.values())
    first = None
    last_said = time.monotonic()
    while True:
        have = end_offsets(client, lay.pairs)
        now = time.monotonic()
        copied = sum(min(max(have[tp], 0), n) for tp, n in want.items())
        if first is None and copied > 0:
            first = now
        done = sum(1 for tp, n in want.items() if have[tp] >= n)
        if done == len(want):
            return {
                "total_s": round(now - launched, 2),
                "startup_s": round((first or now) - launched, 2),
                "copy_s": round(now - (first or now), 2),
                "mb_per_s": round(lay.bytes / (now - launched) / 1e6, 2),
            }
        if now - last_said > 15:
            say(f"  copy: {copied:,}/{total:,} records, {done:,}/{len(want):,} partitions complete")
            last_said = now
            if any(v < 0 for v in have.values()):
                client = admin(bench.target_bootstrap)  # a new client sees new topics at once
        if now - launched > timeout:
            raise SystemExit(f"the first copy did not finish within {timeout:.0f}s")
        time.sleep(every)


# -- steady lag -------------------------------------------------------------------------


def lag_reader(bootstrap: str, starts: list[tuple[str, int, int]], ready, done, count, out) -> None:
    """On the target: every partition from ``starts``; (send time, lag ms) per record."""
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-scale-lag",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 100,
        }
    )
    consumer.assign([TopicPartition(t, p, o) for t, p, o in starts])
    samples: list[tuple[int, float]] = []
    consumer.consume(1000, 1.0)
    ready.set()
    while not done.is_set():
        batch = consumer.consume(10_000, 0.1)
        now = time.time() * 1000
        for m in batch:
            if m.error() is None:
                sent = m.timestamp()[1]
                samples.append((sent, now - sent))
        with count.get_lock():
            count.value += len(batch)
    consumer.close()
    out.put(samples)


def measure_lag(
    bench: Bench, lay: Layout, ends: dict[Pair, int], rate: int, seconds: float
) -> dict:
    """``rate`` records/s over every partition for ``seconds``; produce-to-readable on
    the target. Records still unread when none arrived for a minute count as lost to
    the measurement (``received`` says how many were read)."""
    ctx = multiprocessing.get_context("spawn")
    ready, done, count, out = ctx.Event(), ctx.Event(), ctx.Value("q", 0), ctx.Queue()
    starts = [(t, p, ends[(t, p)]) for t, p in lay.pairs]
    reader = ctx.Process(
        target=lag_reader, args=(bench.target_bootstrap, starts, ready, done, count, out)
    )
    reader.start()
    try:
        if not ready.wait(120):
            raise SystemExit("the lag consumer did not start within 120 s")
        time.sleep(2)  # its first fetches are under way
        sent = scale_producer(bench, lay, "steady", rate, seconds, RECORD_BYTES, WARMUP_S)
        wait_read(count, sent["sent"])
        done.set()
        samples = out.get(timeout=120)
    finally:
        done.set()
        reader.join(30)
        if reader.is_alive():
            reader.kill()
    counted = sent["start_ms"] + WARMUP_S * 1000
    return {
        "rate": rate,
        "seconds": seconds,
        "sent": sent["sent"],
        "received": len(samples),
        "source_ack": sent["ack"],
        **percentiles([lag for ts, lag in samples if ts >= counted]),
    }


def wait_read(count: Any, sent: int, quiet_s: float = 60) -> None:
    """Until the reader has read ``sent`` records or read nothing for ``quiet_s``."""
    last, since = -1, time.monotonic()
    while count.value < sent and time.monotonic() - since < quiet_s:
        if count.value != last:
            last, since = count.value, time.monotonic()
        time.sleep(0.5)


def source_alone(bench: Bench, lay: Layout, rate: int, seconds: float) -> dict:
    """The lag phase's producer with no mirror running: how long the source broker alone
    takes to acknowledge ``rate`` records/s over every partition (the floor of the lag)."""
    found: dict = {}
    start = time.monotonic()
    attempt(
        found,
        "ack",
        lambda: scale_producer(bench, lay, "steady", rate, seconds, RECORD_BYTES, WARMUP_S),
    )
    done = found["ack"]
    return {
        "rate": rate,
        "wall_s": round(time.monotonic() - start, 1),
        **({"sent": done["sent"], **done["ack"]} if "ack" in done else done),
    }


def percentiles(lags: list[float]) -> dict:
    if len(lags) < 100:
        return {"p50_ms": None, "p99_ms": None, "max_ms": None}
    cuts = statistics.quantiles(lags, n=100, method="inclusive")
    return {
        "p50_ms": round(cuts[49], 1),
        "p99_ms": round(cuts[98], 1),
        "max_ms": round(max(lags), 1),
    }


# -- verify and groups ------------------------------------------------------------------


def run_verify(bench: Bench, logs: Path, *, spy: bool) -> dict:
    """``verify --link``, wall time (py-spy on it with ``spy``)."""
    out, err = logs / "verify.json", logs / "verify.err"
    start = time.monotonic()
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        proc = subprocess.Popen(
            kmigrate(bench, "verify", "--link", LINK, "--json"), stdout=stdout, stderr=stderr
        )
        profiler = profile(proc.pid, logs / "pyspy-verify.txt") if spy else None
        code = proc.wait(7200)
        end_profile(profiler)
    wall = time.monotonic() - start
    if code != 0:
        raise SystemExit(f"verify exited {code}: {err.read_text()[-2000:]}")
    report = json.loads(out.read_text())
    return {
        "wall_s": round(wall, 2),
        "report_s": report.get("seconds"),
        "ok": report["ok"],
        "records": report["summary"]["records"],
        "mb_per_s": round(report["summary"]["bytes"] / 2 / wall / 1e6, 2),
    }


def group_commits(lay: Layout, ends: dict[Pair, int], groups: int) -> dict[str, dict[Pair, int]]:
    """Group g commits on topics 2g and 2g+1 (mod their number), at 10-90 % of each end."""
    topics = lay.topics
    commits = {}
    for g in range(groups):
        mine = {topics[(2 * g) % len(topics)], topics[(2 * g + 1) % len(topics)]}
        share = (g % 9) + 1
        commits[f"{GROUP_PREFIX}{g:04d}"] = {
            (t, p): ends[(t, p)] * share // 10 for t in sorted(mine) for p in range(lay.per_topic)
        }
    return commits


def commit_groups(bootstrap: str, commits: dict[str, dict[Pair, int]]) -> float:
    """Every group's commits (AdminClient: one group per request, all in flight at once)."""
    client = admin(bootstrap)
    start = time.monotonic()
    futures = []
    for group, offsets in commits.items():
        request = ConsumerGroupTopicPartitions(
            group, [TopicPartition(t, p, o) for (t, p), o in offsets.items()]
        )
        futures += client.alter_consumer_group_offsets([request], request_timeout=120).values()
    for future in futures:
        future.result(180)
    return time.monotonic() - start


def target_commits(bootstrap: str, groups: list[str]) -> dict[str, dict[Pair, int]]:
    client = admin(bootstrap)
    futures = {
        g: f
        for g in groups
        for f in client.list_consumer_group_offsets([ConsumerGroupTopicPartitions(g)]).values()
    }
    found = {}
    for g, future in futures.items():
        answer = future.result(180)
        found[g] = {
            (tp.topic, tp.partition): tp.offset for tp in answer.topic_partitions if tp.offset >= 0
        }
    return found


def migrate_command(bench: Bench) -> list[str]:
    """One command for every group: `groups migrate --groups` when it exists, else one
    `groups sync --once` round (the same translation and commit)."""
    regex = f"{GROUP_PREFIX}.*"
    help_text = subprocess.run(
        kmigrate(bench, "groups", "migrate", "--help"), capture_output=True, text=True, check=False
    ).stdout
    if "--groups" in help_text:
        return kmigrate(
            bench, "groups", "migrate", "--link", LINK, "--groups", regex, "--yes", "--json"
        )
    return kmigrate(bench, "groups", "sync", "--link", LINK, "--groups", regex, "--once", "--json")


def move_groups(bench: Bench, lay: Layout, ends: dict[Pair, int], groups: int, logs: Path) -> dict:
    commits = group_commits(lay, ends, groups)
    setup_s = commit_groups(bench.source_bootstrap, commits)
    say(f"  {groups} groups committed on the source in {setup_s:.1f}s")
    command = migrate_command(bench)
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=3600, check=False)
    seconds = time.monotonic() - start
    (logs / "groups.out").write_text(done.stdout + "\n--- stderr\n" + done.stderr)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[3:])} exited {done.returncode}: {done.stderr[-2000:]}")
    landed = target_commits(bench.target_bootstrap, list(commits))
    exact = sum(1 for g, want in commits.items() if landed.get(g) == want)
    return {
        "groups": groups,
        "partitions_per_group": 2 * lay.per_topic,
        "command": " ".join(command[command.index("groups") :]),
        "setup_s": round(setup_s, 2),
        "migrate_s": round(seconds, 2),
        "exact_groups": exact,
    }


# -- one case ---------------------------------------------------------------------------


def profile(pid: int, out: Path) -> subprocess.Popen:
    py_spy = Path(sys.executable).with_name("py-spy")
    return subprocess.Popen(
        [
            str(py_spy),
            "record",
            "--subprocesses",
            "--nonblocking",
            "-p",
            str(pid),
            "-f",
            "raw",
            "-o",
            str(out),
        ],
        stdout=subprocess.DEVNULL,
        stderr=open(out.with_suffix(".log"), "wb"),
    )


def end_profile(proc: subprocess.Popen | None) -> None:
    if proc is not None and proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        proc.wait(60)


def store_mb() -> float:
    files = [WORK / f"kmigrate.db{s}" for s in ("", "-wal", "-shm")]
    return round(sum(f.stat().st_size for f in files if f.exists()) / 1e6, 2)


class Brokers:
    """CPU seconds each sandbox broker spends per phase, and its heap after it."""

    def __init__(self) -> None:
        self.pids = sandbox_broker_pids()
        self.last = self._now()
        self.phases: dict[str, dict[str, dict]] = {}

    def _now(self) -> dict[str, float]:
        return {name: process_cpu_s(pid) for name, pid in self.pids.items()}

    def phase(self, name: str) -> None:
        now = self._now()
        self.phases[name] = {
            k: {"cpu_s": round(now[k] - self.last[k], 1), "heap": heap(pid)}
            for k, pid in self.pids.items()
        }
        self.last = now


def heap(pid: int) -> dict | str:
    """Old generation use (%), and full and total GC seconds so far (``jstat -gcutil``)."""
    done = subprocess.run(
        ["jstat", "-gcutil", str(pid)], capture_output=True, text=True, check=False
    )
    lines = done.stdout.split("\n")
    if done.returncode != 0 or len(lines) < 2:
        return "gone" if "not found" in done.stderr else done.stderr.strip()[:200]
    row = dict(zip(lines[0].split(), lines[1].split(), strict=False))
    return {"old_pct": float(row["O"]), "full_gcs": int(row["FGC"]), "gc_s": float(row["GCT"])}


def attempt(case: dict, name: str, step: Callable[[], dict]) -> bool:
    """``case[name] = step()``; a failure is recorded there instead, and the case goes on
    (a long run at 10,000 partitions should still report its other phases)."""
    try:
        case[name] = step()
    except (SystemExit, Exception) as exc:  # recorded in the results, not hidden
        case[name] = {"error": str(exc)[-1500:]}
    say(f"  {name}: {json.dumps(case[name])}")
    return "error" not in case[name]


def mirror_phases(
    bench: Bench, lay: Layout, args: argparse.Namespace, logs: Path, brokers: Brokers
) -> dict:
    """First copy and steady lag with one mirror process; its memory and CPU."""
    want = end_offsets(admin(bench.source_bootstrap), lay.pairs)
    launched = time.monotonic()
    mirror = run_kmigrate_mirror(bench, f"{PREFIX}\\d+", LINK)
    sampler = TreeSampler(mirror.pid)
    sampler.start()
    spy = profile(mirror.pid, logs / "pyspy-copy.txt") if args.profile else None
    result: dict = {}
    try:
        copied = attempt(
            result, "first_copy", lambda: wait_copied(bench, lay, want, launched, args.timeout)
        )
        brokers.phase("first_copy")
        end_profile(spy)
        result["store_after_copy_mb"] = store_mb()
        result["mirror_cpu_s_first_copy"] = round(sampler.cpu_s(), 1)
        result["lag"] = []
        for rate in args.lag_rate if copied else ():
            spy = profile(mirror.pid, logs / f"pyspy-lag-{rate}.txt") if args.profile else None
            ends = end_offsets(admin(bench.source_bootstrap), lay.pairs)
            phase = lag_phase(bench, lay, ends, rate, args.lag_seconds, sampler)
            brokers.phase(f"lag_{rate}")
            end_profile(spy)
            ends = end_offsets(admin(bench.source_bootstrap), lay.pairs)
            attempt(
                phase,
                "catch_up",
                lambda ends=ends: wait_copied(bench, lay, ends, time.monotonic(), args.timeout),
            )
            result["lag"].append(phase)
            say(f"  lag at {rate}/s: {json.dumps(phase)}")
    finally:
        end_profile(spy)
        stop(mirror, group=False)
        sampler.stop()
    result["memory"] = sampler.report()
    result["store_mb"] = store_mb()
    say(f"  memory: {json.dumps(result['memory'])}, store {result['store_mb']} MB")
    return result


def lag_phase(
    bench: Bench,
    lay: Layout,
    ends: dict[Pair, int],
    rate: int,
    seconds: float,
    mirror: TreeSampler,
) -> dict:
    """The steady lag at ``rate``, with the mirror's and the machine's CPU use meanwhile."""
    cpu0, busy0, t0 = mirror.cpu_s(), cpu_busy(), time.monotonic()
    found: dict = {}
    attempt(found, "lag", lambda: measure_lag(bench, lay, ends, rate, seconds))
    mirror.sample()
    busy1, wall = cpu_busy(), time.monotonic() - t0
    return {
        "rate": rate,
        **found["lag"],
        "wall_s": round(wall, 1),
        "mirror_cpu_cores": round((mirror.cpu_s() - cpu0) / wall, 2),
        "machine_busy_pct": round(100 * (busy1[0] - busy0[0]) / (busy1[1] - busy0[1]), 1),
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def calm_down(max_load: float | None, patience: float = 1800) -> None:
    """Wait (up to ``patience`` s) for the 1-minute load average to fall below ``max_load``:
    the machine is shared, and a case measured at load 30 measures the neighbours."""
    deadline = time.monotonic() + patience
    while max_load is not None and os.getloadavg()[0] > max_load:
        if time.monotonic() > deadline:
            say(f"  load still {os.getloadavg()[0]:.1f} after {patience:.0f}s: measuring anyway")
            return
        say(f"  load {os.getloadavg()[0]:.1f} > {max_load}: waiting")
        time.sleep(30)


def run_case(partitions: int, args: argparse.Namespace) -> dict:
    lay = layout(partitions, args.bytes)
    calm_down(args.max_load)
    logs = LOGS / str(partitions)
    shutil.rmtree(logs, ignore_errors=True)
    logs.mkdir(parents=True)
    case: dict = {
        "kmigrate_commit": kmigrate_commit(),
        "machine_at_start": machine(),
        "partitions": partitions,
        "topics": len(lay.topics),
        "records_per_partition": lay.records,
        "bytes": lay.bytes,
    }
    say(
        f"{partitions:,} partitions: {len(lay.topics):,} topics, {lay.records:,} records"
        f" each, {lay.bytes / 1e6:.1f} MB (kmigrate {case['kmigrate_commit']})"
    )
    with sandbox() as bench:
        brokers = Brokers()
        try:
            case["create_topics_s"] = create_topics(bench.source_bootstrap, lay)
            case["load"] = load_source(bench, lay)
            say(f"  source loaded: {json.dumps(case['load'])}")
            brokers.phase("load")
            case.update(mirror_phases(bench, lay, args, logs, brokers))
            attempt(case, "verify", lambda: run_verify(bench, logs, spy=args.profile))
            brokers.phase("verify")
            ends = end_offsets(admin(bench.source_bootstrap), lay.pairs)
            attempt(case, "groups", lambda: move_groups(bench, lay, ends, args.groups, logs))
            brokers.phase("groups")
            case["source_alone"] = [
                source_alone(bench, lay, r, args.lag_seconds) for r in args.lag_rate
            ]
            brokers.phase("source_alone")
            case["brokers"] = brokers.phases
        finally:
            if (WORK / "kmigrate-mirror.log").exists():
                shutil.copy(WORK / "kmigrate-mirror.log", logs / "kmigrate-mirror.log")
            for name in ("source", "target"):
                log = WORK / "sandbox" / name / "broker-1" / "broker.log"
                if log.exists():
                    shutil.copy(log, logs / f"broker-{name}.log")
    end_commit = kmigrate_commit()
    if end_commit != case["kmigrate_commit"]:
        case["kmigrate_commit_at_end"] = end_commit  # /work/main moved during the case
    return case


# -- goals ------------------------------------------------------------------------------


def value(case: dict, *path: str) -> float | None:
    """``case[path[0]][path[1]]...``, or None where a phase failed or is missing."""
    found: object = case
    for key in path:
        if not isinstance(found, dict) or key not in found:
            return None
        found = found[key]
    return found if isinstance(found, int | float) else None


def goal(found: float | None, limit: float, *, strict: bool = False) -> dict:
    met = None if found is None else (found < limit if strict else found <= limit)
    return {"value": found, "goal": f"{'<' if strict else '<='} {limit:g}", "met": met}


def ratio(top: float | None, base: float | None) -> float | None:
    return None if top is None or not base else round(top / base, 2)


def lag_at(case: dict, rate: int) -> dict:
    """The case's lag phase at ``rate`` records/s ({} if it did not run)."""
    return next((phase for phase in case.get("lag", []) if phase.get("rate") == rate), {})


def goals(cases: list[dict]) -> dict:
    """Issue 33's goals for the largest case, against the smallest where relative."""
    base, top = cases[0], cases[-1]
    copy = ("first_copy", "total_s")
    return {
        "partitions": [base["partitions"], top["partitions"]],
        "first_copy_ratio": goal(ratio(value(top, *copy), value(base, *copy)), 2),
        f"lag_p99_ms_at_{GOAL_RATE}": goal(value(lag_at(top, GOAL_RATE), "p99_ms"), 2000),
        "memory_mb": goal(value(top, "memory", "peak_tree_rss_mb"), 1000, strict=True),
        "verify_ratio": goal(
            ratio(value(top, "verify", "wall_s"), value(base, "verify", "wall_s")), 2
        ),
        "groups_migrate_s": goal(value(top, "groups", "migrate_s"), 60, strict=True),
    }


def print_table(cases: list[dict]) -> None:
    rates = sorted({phase["rate"] for c in cases for phase in c.get("lag", [])}, reverse=True)
    lags = " | ".join(f"lag p50/p99 ms at {r}/s" for r in rates)
    say(f"partitions | first copy s (MB/s) | {lags} | memory MB | store MB | verify s | groups s")
    for c in cases:
        cells = [
            f"{c['partitions']:>10,}",
            f"{value(c, 'first_copy', 'total_s')} ({value(c, 'first_copy', 'mb_per_s')})",
            *(f"{value(lag_at(c, r), 'p50_ms')}/{value(lag_at(c, r), 'p99_ms')}" for r in rates),
            value(c, "memory", "peak_tree_rss_mb"),
            c.get("store_mb"),
            value(c, "verify", "wall_s"),
            value(c, "groups", "migrate_s"),
        ]
        say(" | ".join(str(cell) for cell in cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", default="32,1000,10000", help="Comma-separated cases.")
    parser.add_argument("--bytes", type=parse_bytes, default=parse_bytes("100MB"), help="Per case.")
    parser.add_argument(
        "--lag-rate",
        type=lambda text: [int(r) for r in text.split(",")],
        default=[5000, 500],
        help="Records/s, one lag phase per rate (comma-separated); the goal is at 5000.",
    )
    parser.add_argument("--lag-seconds", type=float, default=30)
    parser.add_argument("--groups", type=int, default=500)
    parser.add_argument("--timeout", type=float, default=7200, help="For the first copy.")
    parser.add_argument("--broker-heap", help=f"Sandbox brokers' -Xmx (sets {HEAP_ENV}).")
    parser.add_argument("--profile", action="store_true", help="py-spy the mirror.")
    parser.add_argument(
        "--max-load", type=float, help="Wait for the load average to fall below this first."
    )
    parser.add_argument("--suffix", default="", help="Results file name suffix, e.g. -dev.")
    args = parser.parse_args()
    if args.broker_heap:
        os.environ[HEAP_ENV] = args.broker_heap
    results: dict = {
        **results_header(0),
        "kmigrate_commit": kmigrate_commit(),
        "machine": machine(),
        "record_bytes": RECORD_BYTES,
        "bytes_per_case": args.bytes,
        "broker_heap": os.environ.get(HEAP_ENV, "512m"),
        "lag_rate": args.lag_rate,
        "lag_seconds": args.lag_seconds,
        "cases": [],
    }
    del results["partitions"]
    for partitions in sorted(int(p) for p in args.partitions.split(",")):
        results["cases"].append(run_case(partitions, args))
        if len(results["cases"]) > 1:
            results["goals"] = goals(results["cases"])
        say(f"wrote {write_results('scale-', results, args.suffix)}")
    print_table(results["cases"])
    for name, goal in results.get("goals", {}).items():
        say(f"goal {name}: {goal}")


if __name__ == "__main__":
    main()
