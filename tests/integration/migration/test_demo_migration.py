"""The demo's scenario end to end: a live topic and consumer group move consumers first,
through promote and retire, while a producer and the group keep running. Both demos run
on a sandbox of their own in the folder `make demo` uses (`.kmigrate/sandbox` under the
current folder), and `kmigrate sandbox down` there must stop every process of it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kmigrate.config import DEFAULT_SANDBOX_DIR, SANDBOX_CONFIG_NAME, ClusterConfig, load_settings
from kmigrate.demo.scenario import HISTORY, Screen, run_demo
from kmigrate.gateway.control.shared_state import configured
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import read_partition
from kmigrate.migration.observe import Snapshot
from kmigrate.model.migrations import GroupPhase, TopicPhase
from kmigrate.sandbox import manager
from kmigrate.sandbox.process import processes_naming
from kmigrate.store import store_for
from kmigrate.store.migrations import events_of
from kmigrate.verify.report import VerifyReport


@dataclass(frozen=True)
class DemoSandbox:
    cwd: Path  # where the user ran `make demo`
    directory: Path  # the sandbox `kmigrate demo` made there
    source: ClusterConfig
    target: ClusterConfig


@pytest.fixture(scope="module")
def demo_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoSandbox]:
    """The demo's own sandbox, started as `kmigrate demo` starts it (two clusters) in
    the default folder under a fresh working folder; the last test stops it with the
    CLI's `sandbox down` from that folder, as `make demo-down` does."""
    cwd = tmp_path_factory.mktemp("demo")
    directory = cwd / DEFAULT_SANDBOX_DIR
    manager.up(directory, manager.UpRequest())
    settings = load_settings(directory / SANDBOX_CONFIG_NAME)
    try:
        yield DemoSandbox(cwd, directory, settings.cluster("source"), settings.cluster("target"))
    finally:
        manager.down(directory, purge=True, grace=5)


class Recorder(Screen):
    def __init__(self) -> None:
        self.steps: list[str] = []
        self.snapshots: list[Snapshot] = []

    def step(self, text: str) -> None:
        self.steps.append(text)

    def status(self, snap: Snapshot) -> None:
        self.snapshots.append(snap)

    def verify(self, report: VerifyReport) -> None:
        self.report = report


def _seqs_on(cluster: ClusterConfig, topic: str) -> list[int]:
    with ClusterAdmin(cluster) as admin:
        marks = admin.watermarks(topic)
    values = []
    for w in marks:
        for r in read_partition(cluster, topic, w.partition, w.low, w.high):
            values.append(int((r.value or b"").split(b"=")[1]))
    return values


def test_the_demo_moves_a_live_topic_and_group_exactly_once(demo_sandbox: DemoSandbox) -> None:
    clusters = demo_sandbox
    screen = Recorder()
    result = run_demo(clusters.directory, screen, rate=150.0)

    # Every record consumed exactly once across the cutover, on both clusters.
    assert result.duplicates == [] and result.missing == []
    assert result.consumed == result.produced > HISTORY
    assert result.consumed_on["source"] > 0 and result.consumed_on["target"] > 0
    # Verify ran inside retire and passed record by record.
    assert result.verify is not None and result.verify.ok
    assert screen.report is result.verify
    # The target holds every record once: history, the source's live traffic and what
    # the producer wrote there after promote.
    on_target = _seqs_on(clusters.target, result.topic)
    assert sorted(on_target) == list(range(result.produced))
    # Final states: the topic DONE (source copy deleted), the group moved.
    final = result.final
    assert [t.phase for t in final.topics] == [TopicPhase.DONE]
    assert [g.phase for g in final.groups] == [GroupPhase.MOVED]
    with ClusterAdmin(clusters.source) as admin:
        assert admin.describe_topics_if_present([result.topic]) == []
    # The producers paused for promote, and the screen showed live status meanwhile.
    assert result.producer_pause_s > 0
    assert len(screen.snapshots) >= 3
    phases = {t.phase for s in screen.snapshots for t in s.topics}
    assert {TopicPhase.IN_SYNC, TopicPhase.DONE} <= phases
    # The audit log has each step, in order, each done.
    events = events_of(store_for(result.settings), result.migration)
    done = [e.action for e in events if e.outcome == "done"]
    assert done == ["start", "consumers", "promote", "retire"]


def test_the_demo_via_the_gateway_never_stops_the_producer(demo_sandbox: DemoSandbox) -> None:
    """`demo --via-gateway`: the producer and the group use the gateway from the start;
    promote fences writes at the gateway while the producer keeps writing."""
    clusters = demo_sandbox
    screen = Recorder()
    result = run_demo(clusters.directory, screen, rate=150.0, via_gateway=True)

    assert result.failed_sends == 0
    assert result.duplicates == [] and result.missing == []
    assert result.consumed == result.produced > HISTORY
    assert result.consumed_on == {"gateway": result.consumed}
    assert result.verify is not None and result.verify.ok
    # The target holds every record once: the mirror's copy up to the migration offset,
    # then what the gateway wrote there after promote.
    on_target = _seqs_on(clusters.target, result.topic)
    assert sorted(on_target) == list(range(result.produced))
    with ClusterAdmin(clusters.source) as admin:
        assert admin.describe_topics_if_present([result.topic]) == []
    registry, _home = configured(result.settings)
    try:
        route = registry.read_routes().topics[result.topic]
    finally:
        registry.close()
    assert route.cluster == "target" and len(route.migrations) == 6
    events = events_of(store_for(result.settings), result.migration)
    done = [e.action for e in events if e.outcome == "done"]
    assert done == ["start", "promote", "retire"]  # no consumer move, no producer stop
    assert any("the producer keeps writing" in s for s in screen.steps)


def test_sandbox_down_after_the_demos_leaves_no_process_of_the_sandbox(
    demo_sandbox: DemoSandbox,
) -> None:
    """`make demo-down` (`kmigrate sandbox down`, default folder, relative) after both
    demos: every broker, registry and ZooKeeper node whose command line names a file of
    that sandbox is gone (found by command line, not by sandbox.json), and `down` said
    which it stopped; `sandbox status` then says down, truthfully."""
    running = processes_naming(demo_sandbox.directory, ["server.properties", "zoo.cfg"])
    brokers = [p for p in running.values() if p.name == "server.properties"]
    assert len(brokers) == 2, f"the demo's two brokers should run before down: {running}"
    env = {k: v for k, v in os.environ.items() if k != "KMIGRATE_SANDBOX_DIR"}
    down = subprocess.run(
        [sys.executable, "-m", "kmigrate", "sandbox", "down"],
        cwd=demo_sandbox.cwd, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert down.returncode == 0, down.stderr
    for pid in running:
        assert f"(pid {pid})" in down.stderr + down.stdout, (down.stdout, down.stderr)
    left = processes_naming(demo_sandbox.cwd, ["server.properties", "controller.properties",
                                               "zoo.cfg", "registry.yaml"])  # fmt: skip
    assert left == {}, f"still running after `sandbox down`: {left}"
    status = subprocess.run(
        [sys.executable, "-m", "kmigrate", "sandbox", "status", "--json"],
        cwd=demo_sandbox.cwd, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert status.returncode == 1, status.stdout + status.stderr
