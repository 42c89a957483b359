"""Kafka's own performance tools directly against a cluster and through one gateway
instance, in the same run.

    .venv/bin/python bench/gateway.py [--records-1k 200000] [--records-100 1000000]
        [--latency-rate 2000] [--latency-seconds 60] [--profile]

A one-broker sandbox cluster `direct` (Kafka 4.3.1) and a one-server ZooKeeper ensemble
for the gateway's routes, in bench/.work. For 1 KB and 100 B records, each path
(direct, gateway) gets its own topic of 8 partitions:

1. ProducerPerformance at full speed (acks=all, linger.ms=5, idempotent: the Java
   default): records/s, MB/s, p50/p99 latency;
2. ConsumerPerformance reading it back (a group, so the gateway serves the group APIs);
3. ProducerPerformance at half the gateway's full-speed rate, the two paths taking
   turns three times: medians of p50/p99 latency (what the gateway adds when it is not
   the bottleneck; single runs vary too much on a shared 2-core machine).

Then latency where the machine is not saturated (`latency` in the results): 1 KB records
at `--latency-rate` records/s for `--latency-seconds`, the paths taking turns three times,
each turn on topics of its own: ProducerPerformance's acknowledgement latency (Java; whole
ms) and the franz-go client's acknowledgement and end-to-end latency (bench/latency.py;
0.01 ms); medians of the three turns and what the gateway adds (goal: <= 1 ms p50 and
<= 5 ms p99). Only `--latency-seconds 60` or more on an otherwise idle machine gives
figures to publish; `--records-1k 0 --records-100 0` runs this phase alone.

The gateway's CPU (user + system seconds over wall seconds, from /proc) is sampled
around each of its runs. Results: bench/results/gateway-<date>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from common import WORK, java, results_header, write_results
from latency import end_to_end

from kmigrate.config import load_settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.net import free_ports
from kmigrate.sandbox import manager
from kmigrate.sandbox.jars import DEFAULT_KAFKA_VERSION, ensure_jars

PARTITIONS = 8
ROUNDS = 3


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def producer_perf(
    jars: Path, bootstrap: str, topic: str, n: int, size: int, rate: int, warmup: int = 0
) -> dict:
    """ProducerPerformance's summary (the steady-state one when ``warmup`` records are
    left out of it): throughput and acknowledgement latency, whole ms."""
    proc = java(
        jars, "org.apache.kafka.tools.ProducerPerformance", "--topic", topic,
        "--num-records", str(n), "--record-size", str(size), "--throughput", str(rate),
        *(["--warmup-records", str(warmup)] if warmup else []),
        "--producer-props", f"bootstrap.servers={bootstrap}", "acks=all", "linger.ms=5",
    )  # fmt: skip
    text = proc.communicate()[0].decode()
    last = [line for line in text.splitlines() if "records sent" in line][-1]
    number = r"([\d.]+)"
    return {
        "records_per_s": float(re.search(rf"{number} records/sec", last).group(1)),  # type: ignore[union-attr]
        "mb_per_s": round(float(re.search(rf"\({number} MB/sec\)", last).group(1)) * 1.048576, 1),  # type: ignore[union-attr]
        "p50_ms": float(re.search(rf"{number} ms 50th", last).group(1)),  # type: ignore[union-attr]
        "p99_ms": float(re.search(rf"{number} ms 99th", last).group(1)),  # type: ignore[union-attr]
        "avg_ms": float(re.search(rf"{number} ms avg latency", last).group(1)),  # type: ignore[union-attr]
    }


def consumer_perf(jars: Path, bootstrap: str, topic: str, n: int) -> dict:
    proc = java(
        jars, "org.apache.kafka.tools.ConsumerPerformance", "--bootstrap-server", bootstrap,
        "--topic", topic, "--num-records", str(n), "--timeout", "120000",
        "--group", f"perf-{topic}",
    )  # fmt: skip
    text = proc.communicate()[0].decode().strip().splitlines()
    header = [h.strip() for h in text[-2].split(",")]
    row = dict(zip(header, [v.strip() for v in text[-1].split(",")], strict=False))
    return {
        "records_per_s": float(row["fetch.nMsg.sec"]),
        "mb_per_s": round(float(row["fetch.MB.sec"]) * 1.048576, 1),
    }


def measured(gateway_pid: int | None, step: Callable[..., dict], *args: Any) -> dict:
    """``step(*args)``'s result, with the gateway's CPU share while it ran."""
    start, cpu = time.monotonic(), cpu_seconds(gateway_pid) if gateway_pid else 0.0
    result = step(*args)
    if gateway_pid:
        spent = cpu_seconds(gateway_pid) - cpu
        result["gateway_cpu"] = round(spent / (time.monotonic() - start), 2)
    return result


def run_size(
    jars: Path,
    label: str,
    size: int,
    n: int,
    paths: dict[str, str],
    gateway_pid: int,
    profile: bool,
) -> dict:
    """Full speed both ways on both paths, then half the gateway's rate on both."""
    row: dict = {}
    for path, bootstrap in paths.items():
        pid = gateway_pid if path == "gateway" else None
        topic = f"perf-{label}-{path}-full"
        row[f"{path}_produce"] = measured(pid, producer_perf, jars, bootstrap, topic, n, size, -1)
        row[f"{path}_consume"] = measured(pid, consumer_perf, jars, bootstrap, topic, n)
    half = int(row["gateway_produce"]["records_per_s"] / 2)
    count = min(n, half * 20)  # about 20 s
    # Tail latency on a shared 2-core machine moves a lot from run to run: alternate the
    # paths, ROUNDS times each, and compare medians.
    for round_no in range(ROUNDS):
        for path, bootstrap in paths.items():
            pid = gateway_pid if path == "gateway" else None
            topic = f"perf-{label}-{path}-half"
            profiling = profile and pid and round_no == 0
            spy = start_profile(gateway_pid, label) if profiling else None
            result = measured(pid, producer_perf, jars, bootstrap, topic, count, size, half)
            row.setdefault(f"{path}_produce_at_half_runs", []).append(result)
            if spy is not None:
                spy.send_signal(signal.SIGINT)
                spy.wait(60)
    for path in paths:
        runs = row[f"{path}_produce_at_half_runs"]
        row[f"{path}_produce_at_half"] = {
            key: statistics.median(r[key] for r in runs) for key in runs[0]
        }
    row["half_rate_records_per_s"] = half
    for what in ("produce", "consume"):
        row[f"{what}_ratio"] = round(
            row[f"gateway_{what}"]["mb_per_s"] / row[f"direct_{what}"]["mb_per_s"], 2
        )
    row["added_p99_ms_at_half"] = round(
        row["gateway_produce_at_half"]["p99_ms"] - row["direct_produce_at_half"]["p99_ms"], 1
    )
    return row


def latency_topic(path: str, round_no: int, client: str) -> str:
    return f"latency-{path}-{round_no}-{client}"


def run_latency(
    jars: Path, paths: dict[str, str], gateway_pid: int, load: tuple[int, int, int], profile: bool
) -> dict:
    """At ``load`` = (records/s, seconds, record size), the paths taking turns ROUNDS
    times: Java's and franz-go's acknowledgement latency, franz-go's end-to-end latency;
    the medians over the turns, and what the gateway adds to them."""
    rate, seconds, size = load
    runs: dict[str, list[dict]] = {path: [] for path in paths}
    for round_no in range(ROUNDS):
        for path, bootstrap in paths.items():
            pid = gateway_pid if path == "gateway" else None
            profiling = profile and pid and round_no == 0
            spy = start_profile(gateway_pid, "latency") if profiling else None
            topics = {c: latency_topic(path, round_no, c) for c in ("java", "franz")}
            java_run = measured(pid, producer_perf, jars, bootstrap, topics["java"],
                                rate * seconds, size, rate, rate)  # fmt: skip
            franz_run = measured(pid, end_to_end, bootstrap, topics["franz"], rate, seconds, size)
            if spy is not None:
                spy.send_signal(signal.SIGINT)
                spy.wait(60)
            runs[path].append(flat_latency(java_run, franz_run))
            print(f"latency {path} round {round_no}: {json.dumps(runs[path][-1])}", flush=True)
    medians = {
        path: {key: statistics.median(r[key] for r in rows) for key in rows[0]}
        for path, rows in runs.items()
    }
    added = {
        key: round(medians["gateway"][key] - medians["direct"][key], 2)
        for key in medians["direct"]
        if key.endswith("_ms")
    }
    goal = {"p50_ms": 1.0, "p99_ms": 5.0}
    return {
        "records_per_s": rate, "record_bytes": size, "seconds_per_run": seconds,
        "runs": runs, "medians": medians, "added_ms": added, "goal_added_ms": goal,
        "goal_met": {k: v <= goal[k[-6:]] for k, v in added.items() if k[-6:] in goal},
    }  # fmt: skip


def flat_latency(java_run: dict, franz_run: dict) -> dict:
    """One turn's figures, flat: java_ack_*, franz_ack_*, e2e_* (ms), gateway CPU."""
    row: dict = {"records": franz_run["records"], "failed": franz_run["failed"]}
    for key in ("p50_ms", "p99_ms", "avg_ms"):
        row[f"java_ack_{key}"] = java_run[key]
        row[f"franz_ack_{key}"] = franz_run["ack"][key]
        row[f"e2e_{key}"] = franz_run["e2e"][key]
    cpu = [r["gateway_cpu"] for r in (java_run, franz_run) if "gateway_cpu" in r]
    if cpu:
        row["gateway_cpu"] = round(statistics.fmean(cpu), 2)
    return row


def start_profile(pid: int, label: str) -> subprocess.Popen:
    """py-spy sampling the gateway (collapsed stacks in bench/.work)."""
    return subprocess.Popen(
        [str(Path(sys.executable).parent / "py-spy"), "record", "-p", str(pid), "-f", "raw",
         "-r", "200", "-o", str(WORK / f"gateway-profile-{label}.txt")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records-1k", type=int, default=200_000, help="0: skip")
    parser.add_argument("--records-100", type=int, default=1_000_000, help="0: skip")
    parser.add_argument("--latency-rate", type=int, default=2000, help="records/s; 0: skip")
    parser.add_argument("--latency-seconds", type=int, default=60,
                        help="each run's length (6 runs per path)")  # fmt: skip
    parser.add_argument("--profile", action="store_true",
                        help="py-spy the gateway's first half-rate and latency turns")  # fmt: skip
    parser.add_argument("--note", default="", help="stored in the results (e.g. 'smoke run')")
    return parser.parse_args()


def start_gateway(directory: Path) -> tuple[Path, str, subprocess.Popen]:
    """One gateway instance in front of the sandbox's cluster `direct`: its config, its
    address, its process (its own session; log in bench/.work/gateway.log)."""
    body = yaml.safe_load((directory / "clusters.yaml").read_text())
    body["gateway"] = {"group_home": "direct", "zookeeper": "gw"}
    body["store"] = {"url": f"sqlite:///{WORK / 'kmigrate.db'}"}
    config = directory / "gateway.yaml"
    config.write_text(yaml.safe_dump(body))
    (port,) = free_ports(1)
    through = f"127.0.0.1:{port}"
    log = open(WORK / "gateway.log", "ab")  # noqa: SIM115
    gateway = subprocess.Popen(
        [*gateway_cli(config), "start", "--listen", through, "--id", "1"], stdout=log,
        stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    return config, through, gateway


def gateway_cli(config: Path) -> list[str]:
    return [sys.executable, "-m", "kmigrate", "--config", str(config), "gateway"]


def prepare_topics(config: Path, sizes: list[str], latency: bool) -> None:
    """Every topic of the run on `direct`, those of the gateway path routed there."""
    names = [f"perf-{label}-{path}-{phase}" for label in sizes for path in ("direct", "gateway")
             for phase in ("full", "half")]  # fmt: skip
    if latency:
        names += [latency_topic(path, round_no, client) for path in ("direct", "gateway")
                  for round_no in range(ROUNDS) for client in ("java", "franz")]  # fmt: skip
    with ClusterAdmin(load_settings(config).cluster("direct")) as admin:
        for name in names:
            admin.create_topic(name, PARTITIONS)
    for name in (n for n in names if "-gateway-" in n):
        subprocess.run([*gateway_cli(config), "route", "set", "--topic", name,
                        "--cluster", "direct"], check=True, capture_output=True)  # fmt: skip
    time.sleep(2)  # the instance has seen the routes (watches) and registered


def main() -> None:
    args = arguments()
    shutil.rmtree(WORK, ignore_errors=True)
    directory = WORK / "sandbox"
    manager.up(directory, manager.UpRequest(clusters=["direct"], ensembles=["gw"], nodes=1))
    gateway = None
    try:
        config, through, gateway = start_gateway(directory)
        paths = {"direct": load_settings(config).cluster("direct").bootstrap_servers,
                 "gateway": through}  # fmt: skip
        jars = ensure_jars(DEFAULT_KAFKA_VERSION)
        sizes = {"1KB": (1024, args.records_1k), "100B": (100, args.records_100)}
        sizes = {k: v for k, v in sizes.items() if v[1] > 0}
        results: dict = {**results_header(PARTITIONS), "note": args.note, "sizes": {}}
        prepare_topics(config, list(sizes), args.latency_rate > 0)
        for label, (size, n) in sizes.items():
            row = run_size(jars, label, size, n, paths, gateway.pid, args.profile)
            results["sizes"][label] = row
            print(label, json.dumps(row, indent=2), flush=True)
        if args.latency_rate > 0:
            load = (args.latency_rate, args.latency_seconds, 1024)
            results["latency"] = run_latency(jars, paths, gateway.pid, load, args.profile)
            print("latency", json.dumps(results["latency"]["added_ms"], indent=2), flush=True)
        os.killpg(gateway.pid, signal.SIGTERM)
        gateway.wait(30)
        results["gateway_handled"] = [
            line.split("handled ", 1)[1].strip()
            for line in (WORK / "gateway.log").read_text().splitlines()
            if "kmigrate.gateway.server: handled " in line
        ]
        print(f"wrote {write_results('gateway-', results)}")
    finally:
        if gateway is not None and gateway.poll() is None:
            os.killpg(gateway.pid, signal.SIGTERM)
            gateway.wait(30)
        manager.down(directory, purge=True, grace=10)


if __name__ == "__main__":
    main()
