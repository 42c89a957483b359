"""The demo's migration, step by step, with the same calls the `migrate` commands make.

Two sandbox clusters; history plus a steady producer and a consumer group on the
source; then plan, check, start, consumers (consumers first), promote while traffic
flows, retire with a record-by-record verify; then the accounting: every record
consumed exactly once across the cutover, and the producers' pause at promote.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from kmigrate.config import SANDBOX_CONFIG_NAME, ClusterConfig, Settings, load_settings
from kmigrate.demo.gateway import demo_gateway
from kmigrate.demo.traffic import GroupConsumer, Ledger, SteadyProducer
from kmigrate.errors import KMigrateError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import produce
from kmigrate.migration.consumers import move_consumers
from kmigrate.migration.observe import Snapshot, observe
from kmigrate.migration.plan import Plan
from kmigrate.migration.planner import new_plan
from kmigrate.migration.promote import promote_topics
from kmigrate.migration.retire import retire_topics
from kmigrate.migration.session import Migration, load_migration, locked
from kmigrate.migration.start import start_migration
from kmigrate.model.migrations import SwitchOrder, TopicPhase
from kmigrate.model.records import Record
from kmigrate.sandbox import manager
from kmigrate.store import store_for
from kmigrate.verify.report import VerifyReport

Report = Callable[[str], None]
T = TypeVar("T")
PARTITIONS = 6
HISTORY = 20_000
RATE = 200.0
WAIT_S = 180.0


@dataclass
class DemoResult:
    settings: Settings
    migration: str
    topic: str
    group: str
    plan_path: Path
    produced: int
    consumed: int
    duplicates: list[int]
    missing: list[int]
    consumed_on: dict[str, int]
    producer_pause_s: float
    promote_s: float
    verify: VerifyReport | None
    final: Snapshot
    seconds: float
    failed_sends: int = 0
    via_gateway: bool = False

    @property
    def exactly_once(self) -> bool:
        return not self.duplicates and not self.missing and self.consumed == self.produced


class Screen:
    """Where the demo shows itself: step lines, and a live status (or nothing in tests)."""

    def step(self, text: str) -> None: ...

    def progress(self, text: str) -> None: ...

    def status(self, snap: Snapshot) -> None: ...

    def verify(self, report: VerifyReport) -> None: ...


def run_demo(
    directory: Path, screen: Screen, *, rate: float = RATE, via_gateway: bool = False
) -> DemoResult:
    began = time.monotonic()
    screen.step("starting two local Kafka clusters (source, target)")
    manager.up(directory, manager.UpRequest(), report=screen.progress)
    run = time.strftime("%H%M%S")
    if via_gateway:
        screen.step("starting the kmigrate gateway (two instances, group home: target)")
        with demo_gateway(directory, screen.progress) as (settings, clients):
            demo: _Demo = _GatewayDemo(settings, directory, screen, rate, run, clients)
            return _finish(demo, began)
    settings = load_settings(directory / SANDBOX_CONFIG_NAME)
    return _finish(_Demo(settings, directory, screen, rate, run), began)


def _finish(demo: _Demo, began: float) -> DemoResult:
    try:
        verify, promote_s = demo.run()
    finally:
        demo.stop_traffic()
    if demo.consumer.error:
        raise KMigrateError(f"the demo's consumer failed: {demo.consumer.error}")
    return demo.result(verify, promote_s, time.monotonic() - began)


class _Demo:
    via_gateway = False

    def __init__(
        self,
        settings: Settings,
        directory: Path,
        screen: Screen,
        rate: float,
        run: str,
        clients: ClusterConfig | None = None,
    ) -> None:
        self.settings = settings
        self.screen = screen
        self.topic, self.group, self.name = (
            f"demo.orders.{run}",
            f"demo-billing-{run}",
            f"demo-{run}",
        )
        self.plan_path = directory / f"{self.name}.plan.yaml"
        self.source = settings.cluster("source")
        self.target = settings.cluster("target")
        self.clients = clients or self.source  # where the applications connect first
        self.producer = SteadyProducer(self.clients, self.topic, rate, first_seq=HISTORY)
        self.ledger = Ledger()
        self.consumer = GroupConsumer(self.group, self.topic, self.ledger)
        self.final: Snapshot | None = None

    def run(self) -> tuple[VerifyReport | None, float]:
        screen, topic = self.screen, self.topic
        with ClusterAdmin(self.source) as admin:
            admin.create_topic(topic, PARTITIONS)
        screen.step(f"source: topic {topic} ({PARTITIONS} partitions), {HISTORY:,} records")
        produce(self.source, topic, _history(HISTORY))
        if not self.via_gateway:
            self._start_traffic()
        store = store_for(self.settings)
        try:
            plan = _plan(
                self.settings, topic, self.group, self.name, self.plan_path, screen,
                self.via_gateway,
            )  # fmt: skip
            screen.step(f"$ kmigrate migrate start {self.plan_path}")
            start_migration(self.settings, store, plan, self.plan_path.read_text(), screen.progress)
            if self.via_gateway:
                self._start_traffic()  # the topic is routed now: clients use the gateway
            m = load_migration(store, self.settings, self.name)
            with _live(m, screen):
                promote_s = self._cutover(m)
            screen.step(f"$ kmigrate migrate retire --topics {topic} --yes")
            retired = _locked(
                m,
                "retire",
                screen,
                lambda s, t: retire_topics(
                    m,
                    [topic],
                    s,
                    t,
                    screen.progress,
                    apply=True,
                    keep_source=False,
                    on_verify=screen.verify,
                ),
            )
            source, target = _admins(m)
            with source, target:
                self.final = observe(m, source, target)
            screen.status(self.final)
        finally:
            store.close()
        return retired.verify, promote_s

    def _start_traffic(self) -> None:
        self.producer.start()
        self.consumer.start(self.clients)
        _wait(lambda: sum(self.ledger.seen.values()) > 0, "the consumer group to start")

    def _cutover(self, m: Migration) -> float:
        """Consumers first, then producers, while traffic flows; returns promote's seconds."""
        screen, group, topic = self.screen, self.group, self.topic
        # Shown the moment it is reached: the mirror catches up faster than the screen's
        # refresh, and "in sync" is what an operator waits to see before moving on.
        screen.status(_until_phase(m, topic, TopicPhase.IN_SYNC))
        screen.step(f"stopping consumer group {group} on source")
        self.consumer.stop()
        screen.step(f"$ kmigrate migrate consumers --groups {group} --wait")
        _locked(
            m, "consumers", screen, lambda s, t: move_consumers(m, [group], s, t, screen.progress)
        )
        self.consumer.start(self.target)
        screen.step(f"consumer group {group} consumes on target now")
        screen.step("stopping the producer on source")
        self.producer.pause()
        screen.step(f"$ kmigrate migrate promote --topics {topic}")
        promoted = _locked(
            m, "promote", screen, lambda s, t: promote_topics(m, [topic], s, t, screen.progress)
        )
        self.producer.resume(self.target)
        screen.step(f"producer writes to target now (paused {self.producer.pause_s:.1f}s)")
        self._drain()
        return promoted.seconds

    def _drain(self) -> None:
        time.sleep(5)  # traffic on the target after the cutover, for the demo to show
        self.producer.stop()
        _wait(
            lambda: set(self.producer.delivered) <= set(self.ledger.seen),
            "the consumer group to consume every delivered record on target",
        )
        self.consumer.stop()

    def stop_traffic(self) -> None:
        self.producer.stop()
        self.consumer.stop()

    def result(self, verify: VerifyReport | None, promote_s: float, seconds: float) -> DemoResult:
        assert self.final is not None
        delivered = self.producer.delivered
        return DemoResult(
            self.settings,
            self.name,
            self.topic,
            self.group,
            self.plan_path,
            HISTORY + len(delivered),
            sum(self.ledger.seen.values()),
            self.ledger.duplicates(),
            self.ledger.missing(list(range(HISTORY)) + delivered),
            dict(self.ledger.by_cluster),
            self.producer.pause_s or 0.0,
            promote_s,
            verify,
            self.final,
            seconds,
            self.producer.failed,
            self.via_gateway,
        )


class _GatewayDemo(_Demo):
    """`demo --via-gateway`: the producer and the group use the gateway from the start;
    promote fences writes at the gateway while the producer keeps writing."""

    via_gateway = True

    def _cutover(self, m: Migration) -> float:
        screen, topic = self.screen, self.topic
        screen.status(_until_phase(m, topic, TopicPhase.IN_SYNC))
        screen.step(f"$ kmigrate migrate promote --topics {topic}   (the producer keeps writing)")
        began = time.monotonic()
        promoted = _locked(
            m, "promote", screen, lambda s, t: promote_topics(m, [topic], s, t, screen.progress)
        )
        ended = time.monotonic()
        so_far = self.producer.longest_wait_between(began, ended)
        screen.step(
            "the gateway writes to target now; the longest a record sent during promote "
            f"waited for its acknowledgement: {so_far:.2f}s"
        )
        self._drain()
        # Again once every record is answered: the longest wait of a record sent while
        # promote ran.
        self.producer.pause_s = self.producer.longest_wait_between(began, ended)
        return promoted.seconds


def _history(count: int) -> list[Record]:
    now = int(time.time() * 1000) - count
    return [
        Record(
            f"customer-{i % 97}".encode(),
            f"seq={i}".encode(),
            (("source", b"kmigrate-demo"),),
            now + i,
        )
        for i in range(count)
    ]


def _plan(
    settings: Settings,
    topic: str,
    group: str,
    name: str,
    path: Path,
    screen: Screen,
    via_gateway: bool = False,
) -> Plan:
    # Through the gateway the group commits on the group home from its first read: it
    # has nothing on the source to move.
    groups = f" --groups '{group}'" if not via_gateway else " --via-gateway"
    screen.step(
        f"$ kmigrate plan new --source source --target target --topics '{_regex(topic)}'"
        f"{groups} --name {name} -o {path}"
    )
    with ClusterAdmin(settings.cluster("source")) as admin:
        plan = new_plan(
            admin,
            target="target",
            topics=_regex(topic),
            groups=None if via_gateway else group,
            order=SwitchOrder.CONSUMERS_FIRST,
            name=name,
        )
    # The demo's producer stops for promote; a short quiet period keeps its pause short.
    plan = plan.model_copy(
        update={"quiet_period_s": 2.0, "in_sync_lag": 5_000, "via_gateway": via_gateway}
    )
    path.write_text(plan.to_yaml(str(path)))
    return plan


def _wait(condition: Callable[[], bool], what: str, timeout: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise KMigrateError(f"the demo waited {timeout:.0f}s for {what}; giving up")
        time.sleep(0.2)


def _admins(m: Migration) -> tuple[ClusterAdmin, ClusterAdmin]:
    return ClusterAdmin(m.settings.cluster(m.plan.source)), ClusterAdmin(
        m.settings.cluster(m.plan.target)
    )


def _until_phase(m: Migration, topic: str, phase: TopicPhase) -> Snapshot:
    """The first status in which ``topic`` is in ``phase``."""
    seen: list[Snapshot] = []

    def reached() -> bool:
        seen.append(observe(m, source, target))
        del seen[:-1]
        return seen[-1].topic(topic).phase is phase

    source, target = _admins(m)
    with source, target:
        _wait(reached, f"topic {topic} to reach {phase.value}")
    return seen[-1]


def _locked(
    m: Migration,
    command: str,
    screen: Screen,
    action: Callable[[ClusterAdmin, ClusterAdmin], T],
) -> T:
    source, target = _admins(m)
    with source, target, locked(m.store, m.name, command, screen.progress):
        return action(source, target)


@contextmanager
def _live(m: Migration, screen: Screen, every_s: float = 1.5) -> Iterator[None]:
    """Refresh the status screen from a thread while the steps run."""
    done = threading.Event()

    def refresh() -> None:
        source, target = _admins(m)
        with source, target:
            while not done.is_set():
                # A refresh that failed is skipped; the next one tries again.
                with suppress(KMigrateError):
                    screen.status(observe(m, source, target))
                done.wait(every_s)

    thread = threading.Thread(target=refresh, name="demo-status", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(timeout=30)


def _regex(topic: str) -> str:
    return topic.replace(".", "\\.")
