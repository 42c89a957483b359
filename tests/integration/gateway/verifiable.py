"""Clients kmigrate did not choose, driven through the gateway and accounted for.

Every producer here speaks Apache Kafka's VerifiableProducer language: one JSON object
per line, ``producer_send_success`` (partition, offset, value) for each acknowledged
record and ``producer_send_error`` for each failed one, values being "<prefix>.<n>" with
n the send order 0, 1, 2, ... (several producers share a topic, each with its prefix).
Every consumer gives (partition, offset, value) per record read. The
checks are what a user of any client expects of a broker: every acknowledged record read
exactly once, at the offset its producer was told, in send order within its partition;
no failed send; the producer id assigned once (no epoch bump).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from harness.ecosystems import franz
from harness.gateway import Gateway
from harness.helpers import java_on, wait_for
from kmigrate.sandbox.jars import DEFAULT_KAFKA_VERSION, ensure_jars
from tests.integration.conftest import Clusters

Record = tuple[int, int, int]  # partition, offset, n (the record's place in send order)
Read = tuple[int, int, str]  # partition, offset, value as read

# The Java producer logs each producer id and epoch it is given (TransactionManager, INFO).
JAVA_LOG4J = """\
status = error
appender.err.type = Console
appender.err.name = ERR
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = %d{HH:mm:ss,SSS} %p %c{1}: %m%n
rootLogger.level = WARN
rootLogger.appenderRef.err.ref = ERR
logger.txn.name = org.apache.kafka.clients.producer.internals.TransactionManager
logger.txn.level = INFO
"""
_JAVA_EPOCH = re.compile(r"ProducerId set to (-?\d+) with epoch (-?\d+)")


@dataclass
class Client:
    """A client process whose stdout is read line by line as it runs."""

    argv: Sequence[str]
    log: Path
    parse: Callable[[str], None]
    proc: subprocess.Popen[str] | None = None
    _reader: threading.Thread | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            list(self.argv), stdout=subprocess.PIPE, stderr=self.log.open("w"),
            text=True, start_new_session=True,
        )  # fmt: skip
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            self.parse(line)

    def stop(self, timeout: float = 120) -> None:
        """SIGTERM: the client flushes what it has, reports and exits."""
        assert self.proc is not None and self._reader is not None
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            raise AssertionError(f"{self.argv[0]} did not stop: {self.log_tail()}") from None
        self._reader.join(30)

    def kill(self) -> None:
        """Whatever happened, gone (a test's cleanup)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]


@dataclass
class Produced:
    """What a producer was told: acknowledged records and failures."""

    name: str  # the client, in messages
    prefix: str  # its values' prefix (a number: VerifiableProducer takes only integers)
    acked: list[Record] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    epochs: list[tuple[int, int]] = field(default_factory=list)  # (id, epoch) given

    def parse(self, line: str) -> None:
        try:
            event = json.loads(line)
        except ValueError:
            return
        name = event.get("name")
        if name == "producer_send_success":
            self.acked.append((int(event["partition"]), int(event["offset"]), _value(event)))
        elif name == "producer_send_error":
            self.failed.append(f"{event.get('value')}: {event.get('exception')}")
        elif name == "producer_epoch":
            self.epochs.append((int(event["producer_id"]), int(event["epoch"])))

    def count(self) -> int:
        return len(self.acked)


@dataclass
class Consumed:
    records: list[Read] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, record: Read) -> None:
        with self._lock:
            self.records.append(record)

    def values(self) -> set[str]:
        with self._lock:
            return {v for _, _, v in self.records}


def _value(event: dict[str, object]) -> int:
    return int(str(event["value"]).rsplit(".", 1)[-1])


def client_argv(*args: str) -> list[str]:
    """A Python client of tests/integration/gateway/pyclients.py."""
    return [sys.executable, "-m", "tests.integration.gateway.pyclients", *args]


def python_producer(
    kind: str, bootstrap: str, topic: str, folder: Path, *, rate: int, keys: int, prefix: int
) -> tuple[Client, Produced]:
    """confluent-kafka's or kafka-python's idempotent producer, in a process of its own."""
    produced = Produced(kind, str(prefix))
    argv = client_argv(kind, "--bootstrap", bootstrap, "--topic", topic, "--rate", str(rate),
                       "--keys", str(keys), "--prefix", str(prefix))  # fmt: skip
    return Client(argv, folder / f"{kind}-producer.log", produced.parse), produced


def java_producer(
    jars: Path,
    bootstrap: str,
    topic: str,
    folder: Path,
    *,
    rate: int,
    keys: int,
    prefix: int = 1,
) -> tuple[Client, Produced]:
    """Kafka's VerifiableProducer as a user runs it: idempotent, retries at the maximum
    (the tool's own default is retries=0), acks=all, Java's default 5 requests in flight."""
    config = folder / "producer.properties"
    config.write_text("enable.idempotence=true\nretries=2147483647\nacks=all\n"
                      "delivery.timeout.ms=120000\nmetadata.max.age.ms=5000\n")  # fmt: skip
    logging = folder / "log4j2.properties"
    logging.write_text(JAVA_LOG4J)
    produced = Produced("java", str(prefix))
    argv = [*java_on(jars), f"-Dlog4j2.configurationFile={logging}",
            "org.apache.kafka.tools.VerifiableProducer", "--bootstrap-server", bootstrap,
            "--topic", topic, "--throughput", str(rate), "--repeating-keys", str(keys),
            "--value-prefix", str(prefix), "--command-config", str(config)]  # fmt: skip
    return Client(argv, folder / "java-producer.log", produced.parse), produced


def franz_producer(
    bootstrap: str, topic: str, folder: Path, *, rate: int, keys: int, prefix: int
) -> tuple[Client, Produced]:
    """franz-go's idempotent producer (Go; its defaults pipeline requests like Java's)."""
    produced = Produced("franz-go", str(prefix))
    argv = [str(franz.binary()), "produce", "--bootstrap", bootstrap, "--topic", topic,
            "--rate", str(rate), "--keys", str(keys), "--prefix", str(prefix),
            "--flush-timeout-s", "60"]  # fmt: skip
    return Client(argv, folder / "franz-producer.log", produced.parse), produced


def java_epochs(client: Client) -> list[tuple[int, int]]:
    """The producer ids and epochs the Java producer says it was given."""
    return [(int(a), int(b)) for a, b in _JAVA_EPOCH.findall(client.log.read_text())]


def java_consumer(
    jars: Path, bootstrap: str, topic: str, group: str, folder: Path
) -> tuple[Client, Consumed]:
    """Kafka's console consumer in a group, printing partition, offset and value."""
    consumed = Consumed()

    def parse(line: str) -> None:
        match = re.match(r"Partition:(\d+)\tOffset:(\d+)\t(\S+)$", line.strip())
        if match:
            consumed.add((int(match[1]), int(match[2]), match[3]))

    # WARN and above in its log (log4j2's default configuration logs errors only): a
    # failed commit on close says why.
    argv = [*java_on(jars), "-Dlog4j2.level=WARN",
            "org.apache.kafka.tools.consumer.ConsoleConsumer",
            "--bootstrap-server", bootstrap, "--topic", topic, "--group", group,
            "--from-beginning", "--property", "print.partition=true",
            "--property", "print.offset=true",
            "--consumer-property", "metadata.max.age.ms=5000"]  # fmt: skip
    return Client(argv, folder / "java-consumer.log", parse), consumed


def python_consumer(
    bootstrap: str, topic: str, group: str, folder: Path
) -> tuple[Client, Consumed]:
    """kafka-python's group consumer, in a process of its own."""
    consumed = Consumed()

    def parse(line: str) -> None:
        with contextlib.suppress(ValueError):
            event = json.loads(line)
            if event.get("name") == "record":
                consumed.add((int(event["partition"]), int(event["offset"]), event["value"]))

    argv = client_argv("kafka-python-consumer", "--bootstrap", bootstrap, "--topic", topic,
                       "--group", group)  # fmt: skip
    return Client(argv, folder / "kafka-python-consumer.log", parse), consumed


def wait_read(consumed: Consumed, produced: Produced, timeout: float = 120) -> None:
    wanted = {f"{produced.prefix}.{n}" for _, _, n in produced.acked}
    wait_for(lambda: not (wanted - consumed.values()), timeout=timeout,
             message=f"every one of {len(wanted)} acknowledged records read")  # fmt: skip


def check_accounted(produced: Produced, records: list[Read]) -> None:
    """Every record ``produced`` was told of read exactly once at the offset it was told,
    each partition in send order; nothing failed."""
    what = produced.prefix
    assert not produced.failed, (
        f"{produced.name}: {len(produced.failed)} failed: {produced.failed[:3]}"
    )
    seen: dict[tuple[int, int], str] = {}
    for p, offset, value in records:  # a group re-reads after a rebalance: same record again
        assert seen.setdefault((p, offset), value) == value, f"offset {p}/{offset} changed"
    by_offset: dict[tuple[int, int], int] = {}
    for at, value in seen.items():
        prefix, _, n = value.rpartition(".")
        if prefix == what:
            by_offset[at] = int(n)
    where = {v: (p, o) for (p, o), v in by_offset.items()}
    assert len(where) == len(by_offset), "one record stored at two offsets (written twice)"
    for p, offset, value in produced.acked:
        assert where.get(value) == (p, offset), (
            f"{produced.name} record {value}: acked at {p}/{offset}, read at {where.get(value)}"
        )
    for p in {p for p, _ in by_offset}:
        values = [v for (q, _), v in sorted(by_offset.items()) if q == p]
        out_of_order = [(a, b) for a, b in itertools.pairwise(values) if b < a]
        assert not out_of_order, (
            f"{produced.name}: partition {p} out of send order: {out_of_order[:5]}"
        )


def java_tool(gw: Gateway, main: str, *args: str) -> tuple[int, str]:
    """One Kafka tool run against the gateway: its exit code and everything it said."""
    jars = ensure_jars(DEFAULT_KAFKA_VERSION)
    done = subprocess.run(
        [*java_on(jars), "-Xmx256m", main, "--bootstrap-server", gw.bootstrap, *args],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    return done.returncode, done.stdout + done.stderr


def java_tools(gw: Gateway, *runs: tuple[str, ...]) -> list[tuple[int, str]]:
    """Independent tool runs at once (one JVM each)."""
    with ThreadPoolExecutor(len(runs)) as pool:
        return list(pool.map(lambda run: java_tool(gw, *run), runs))


def _backend_ports(clusters: Clusters) -> set[str]:
    return {
        server.rsplit(":", 1)[1]
        for c in (clusters.source, clusters.target)
        for server in c.bootstrap_servers.split(",")
    }


def names_only_gateway(said: str, gw: Gateway, clusters: Clusters) -> None:
    ports = set(re.findall(r"127\.0\.0\.1:(\d+)", said))
    assert not ports & _backend_ports(clusters), f"a backend broker shown: {said[-1500:]}"
    leaders = {int(n) for n in re.findall(r"Leader: (\d+)", said)}
    assert leaders <= set(gw.ports), f"leaders {leaders} are not gateway instances"
