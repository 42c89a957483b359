"""What every benchmark here needs: two sandbox clusters, Kafka's Java tools, the copiers.

Both contenders run as separate processes: MirrorMaker 2 from the same Kafka release's
jars (bench/pom.xml) and ``kmigrate mirror start``. Everything lives in bench/.work.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from kmigrate.config import Settings, load_settings
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.maven import cache_dir, fetch_jars
from kmigrate.sandbox import manager
from kmigrate.sandbox.jars import DEFAULT_KAFKA_VERSION, ensure_jars

HERE = Path(__file__).resolve().parent
WORK = HERE / ".work"


@dataclass(frozen=True)
class Bench:
    """Two running sandbox clusters and what a benchmark needs to drive them."""

    settings: Settings
    config: Path  # kmigrate's config for the sandbox, store in WORK
    kafka_jars: Path
    mm2_jars: Path

    @property
    def source_bootstrap(self) -> str:
        return self.settings.cluster("source").bootstrap_servers

    @property
    def target_bootstrap(self) -> str:
        return self.settings.cluster("target").bootstrap_servers


@contextmanager
def sandbox(*, keep: bool = False) -> Iterator[Bench]:
    """Fresh clusters in bench/.work (jars fetched on first use); stopped on exit."""
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    kafka_jars = ensure_jars(DEFAULT_KAFKA_VERSION)
    mm2_jars = fetch_jars(
        HERE / "pom.xml",
        cache_dir() / f"mm2-{DEFAULT_KAFKA_VERSION}",
        {"kafka.version": DEFAULT_KAFKA_VERSION},
        "MirrorMaker 2 jars",
    )
    manager.up(WORK / "sandbox", manager.UpRequest())
    try:
        config = WORK / "kmigrate.yaml"
        config.write_text(
            (WORK / "sandbox" / "clusters.yaml")
            .read_text()
            .replace("env_file: secrets.env", f"env_file: {WORK / 'sandbox' / 'secrets.env'}")
            .replace("sqlite:///kmigrate.db", f"sqlite:///{WORK / 'kmigrate.db'}")
        )
        settings = load_settings(WORK / "sandbox" / "clusters.yaml")
        yield Bench(settings, config, kafka_jars, mm2_jars)
    finally:
        if not keep:
            manager.down(WORK / "sandbox", purge=True, grace=10)


def java(
    classpath: Path, main: str, *args: str, log: Path | None = None, heap: str = "1g"
) -> subprocess.Popen:
    out = open(log, "ab") if log else subprocess.PIPE  # noqa: SIM115
    return subprocess.Popen(
        ["java", f"-Xmx{heap}", "-cp", f"{classpath}/*", main, *args],
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def perf_producer(
    jars: Path,
    bootstrap: str,
    topic: str,
    n: int,
    size: int,
    compression: str = "none",
    batch: tuple[int, int] = (1_000_000, 20),
) -> dict:
    """Kafka's ProducerPerformance writing ``n`` records of ``size`` bytes to ``topic``,
    in batches of ``batch`` (batch.size, linger.ms)."""
    proc = java(
        jars,
        "org.apache.kafka.tools.ProducerPerformance",
        "--topic",
        topic,
        "--num-records",
        str(n),
        "--record-size",
        str(size),
        "--throughput",
        "-1",
        "--producer-props",
        f"bootstrap.servers={bootstrap}",
        "acks=all",
        f"linger.ms={batch[1]}",
        f"batch.size={batch[0]}",
        "max.request.size=2000000",
        f"compression.type={compression}",
    )
    text = proc.communicate()[0].decode()
    last = [line for line in text.splitlines() if "records sent" in line][-1]
    rate = float(re.search(r"([\d.]+) records/sec", last).group(1))
    mib = float(re.search(r"\(([\d.]+) MB/sec\)", last).group(1))
    # Kafka's perf tools print MiB/s as "MB/sec"; everything here is 10^6 bytes.
    return {"records_per_s": rate, "mb_per_s": mib * 1.048576}


def reset_target(target: ClusterAdmin, groups: tuple[str, ...] = ()) -> None:
    """Delete the benchmark's topics, MM2's internal topics and ``groups`` on the target."""
    if groups:
        from confluent_kafka.admin import AdminClient

        client = AdminClient(target.cluster.as_librdkafka())
        present = {g.group_id for g in target.list_groups()}
        doomed = [g for g in groups if g in present]
        for future in client.delete_consumer_groups(doomed).values() if doomed else ():
            future.result(30)
    names = [
        t.name
        for t in target.list_topics()
        if t.name.startswith("bench-")
        or "mm2" in t.name
        or t.name.startswith(("mirrormaker", "heartbeats"))
        or ".internal" in t.name
    ]
    if names:
        target.delete_topics(names)
    deadline = time.monotonic() + 60
    while any(t.name in names for t in target.list_topics()) and time.monotonic() < deadline:
        time.sleep(0.5)


def run_mm2(
    bench: Bench, topics: str, *extra: str, tasks: int = 2, heap: str = "1g"
) -> subprocess.Popen:
    """MirrorMaker 2 (dedicated mode) from source to target, with ``tasks`` tasks and a
    heap of ``heap``; ``extra`` are property lines."""
    props = WORK / "mm2.properties"
    props.write_text(
        "\n".join(
            [
                "clusters = src, tgt",
                f"src.bootstrap.servers = {bench.source_bootstrap}",
                f"tgt.bootstrap.servers = {bench.target_bootstrap}",
                "src->tgt.enabled = true",
                f"src->tgt.topics = {topics}",
                "tgt->src.enabled = false",
                "replication.policy.class = "
                "org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
                "replication.factor = 1",
                f"tasks.max = {tasks}",
                "refresh.topics.interval.seconds = 5",
                "sync.topic.acls.enabled = false",
                "emit.heartbeats.enabled = false",
                "checkpoints.topic.replication.factor = 1",
                "heartbeats.topic.replication.factor = 1",
                "offset-syncs.topic.replication.factor = 1",
                "offset.storage.replication.factor = 1",
                "status.storage.replication.factor = 1",
                "config.storage.replication.factor = 1",
                "tgt.producer.acks = all",
                "tgt.producer.linger.ms = 20",
                "tgt.producer.batch.size = 1000000",
                "tgt.producer.max.request.size = 20000000",
                *extra,
                "",
            ]
        )
    )
    return java(
        bench.mm2_jars,
        "org.apache.kafka.connect.mirror.MirrorMaker",
        str(props),
        "--clusters",
        "tgt",
        log=WORK / "mm2.log",
        heap=heap,
    )


def kmigrate(bench: Bench, *args: str) -> list[str]:
    """The ``kmigrate`` command line with the sandbox's config, for subprocess."""
    return [sys.executable, "-m", "kmigrate", "--config", str(bench.config), *args]


def run_kmigrate_mirror(bench: Bench, topics: str, link: str, *extra: str) -> subprocess.Popen:
    log = open(WORK / "kmigrate-mirror.log", "ab")  # noqa: SIM115
    return subprocess.Popen(
        kmigrate(
            bench,
            "mirror",
            "start",
            "--source",
            "source",
            "--target",
            "target",
            "--topics",
            topics,
            "--link",
            link,
            "--interval",
            "5s",
            *extra,
        ),
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop(proc: subprocess.Popen, *, group: bool) -> None:
    """SIGTERM (to the process group for Java launchers), SIGKILL after a minute."""
    if proc.poll() is None:
        (os.killpg if group else os.kill)(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)


def results_header(partitions: int) -> dict:
    """What every results file starts with: when, which Kafka, which machine."""
    return {
        "date": dt.date.today().isoformat(),
        "kafka": DEFAULT_KAFKA_VERSION,
        "machine": {"cores": os.cpu_count()},
        "partitions": partitions,
    }


def write_results(prefix: str, results: dict, suffix: str = "") -> Path:
    out = HERE / "results" / f"{prefix}{results['date']}{suffix}.json"
    out.write_text(json.dumps(results, indent=2) + "\n")
    return out


def kmigrate_commit() -> str:
    """``git log --oneline -1`` of the kmigrate checkout this Python imports."""
    import kmigrate

    repo = Path(kmigrate.__file__).resolve().parents[2]
    done = subprocess.run(
        ["git", "-C", str(repo), "log", "--oneline", "-1"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() or f"unknown ({repo})"


def machine() -> dict:
    """Cores, CPU model, memory and the load average now (the machine may be shared)."""
    cpuinfo = Path("/proc/cpuinfo").read_text()
    model = re.search(r"model name\s*:\s*(.+)", cpuinfo)
    mem = re.search(r"MemTotal:\s*(\d+) kB", Path("/proc/meminfo").read_text())
    return {
        "cores": os.cpu_count(),
        "cpu": model.group(1) if model else None,
        "memory_gb": round(int(mem.group(1)) / 1e6, 1) if mem else None,
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


class TreeSampler(threading.Thread):
    """Samples a process and all its descendants every ``every`` s from /proc: the peak
    of the tree's summed RSS (and per role: the root, ``java``, other processes), each
    process's own peak (VmHWM), and CPU seconds used (dead children keep their last)."""

    def __init__(self, root: int, every: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.root, self.every = root, every
        self.peak_rss = 0
        self.peak_by_role: dict[str, int] = {}
        self.hwm: dict[int, int] = {}
        self.ticks: dict[int, int] = {}
        self.names: dict[int, str] = {}
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            self.sample()
            self._halt.wait(self.every)

    def stop(self) -> None:
        self._halt.set()
        self.join(10)

    def cpu_s(self) -> float:
        return sum(self.ticks.values()) / os.sysconf("SC_CLK_TCK")

    def sample(self) -> None:
        by_role: dict[str, int] = {}
        for pid in _tree(self.root):
            status = _status(pid)
            if status is None:
                continue
            name, rss, hwm, ticks = status
            role = "driver" if pid == self.root else ("jvm" if name == "java" else "workers")
            by_role[role] = by_role.get(role, 0) + rss
            self.hwm[pid] = max(self.hwm.get(pid, 0), hwm)
            self.ticks[pid] = ticks
            self.names[pid] = name
        self.peak_rss = max(self.peak_rss, sum(by_role.values()))
        for role, rss in by_role.items():
            self.peak_by_role[role] = max(self.peak_by_role.get(role, 0), rss)

    def report(self) -> dict:
        """Peaks in MB (10^6 bytes)."""
        return {
            "peak_tree_rss_mb": round(self.peak_rss / 1e6, 1),
            "peak_rss_by_role_mb": {k: round(v / 1e6, 1) for k, v in self.peak_by_role.items()},
            "sum_of_process_peaks_mb": round(sum(self.hwm.values()) / 1e6, 1),
            "processes_seen": len(self.hwm),
        }


def _tree(root: int) -> list[int]:
    """``root`` and its descendants now (from /proc/*/stat)."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry.name}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, ()))
    return found


def _status(pid: int) -> tuple[str, int, int, int] | None:
    """Name, RSS and VmHWM in bytes, and utime+stime ticks of ``pid`` (None if gone)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    kb = lambda key: int(fields.get(key, "0 kB").split()[0]) * 1024  # noqa: E731
    rest = stat.rsplit(")", 1)[1].split()
    return fields["Name"].strip(), kb("VmRSS"), kb("VmHWM"), int(rest[11]) + int(rest[12])


def cpu_busy() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine so far, from /proc/stat."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + values[4]
    return sum(values) - idle, sum(values)


def process_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) ``pid`` has used so far; 0 if it is gone."""
    status = _status(pid)
    return status[3] / os.sysconf("SC_CLK_TCK") if status else 0.0


def sandbox_broker_pids() -> dict[str, int]:
    """The pid of each running sandbox broker in WORK, by cluster name (one broker each)."""
    found = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            args = Path(f"/proc/{entry.name}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        for arg in args:
            match = re.search(rf"{re.escape(str(WORK))}/sandbox/([^/]+)/broker-", arg.decode())
            if match and args[0].endswith(b"java"):
                found[match.group(1)] = int(entry.name)
                break
    return found
