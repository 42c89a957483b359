"""The demo's scenario end to end: a live topic and consumer group move consumers first,
through promote and retire, while a producer and the group keep running."""

from __future__ import annotations

from kmigrate.config import ClusterConfig
from kmigrate.demo.scenario import HISTORY, Screen, run_demo
from kmigrate.gateway.control.registry import configured
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.kafka.records import read_partition
from kmigrate.migration.observe import Snapshot
from kmigrate.model.migrations import GroupPhase, TopicPhase
from kmigrate.store import store_for
from kmigrate.store.migrations import events_of
from kmigrate.verify.report import VerifyReport
from tests.integration.conftest import Clusters


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


def test_the_demo_moves_a_live_topic_and_group_exactly_once(clusters: Clusters) -> None:
    assert clusters.sandbox_dir is not None, "the demo runs on the sandbox"
    screen = Recorder()
    result = run_demo(clusters.sandbox_dir, screen, rate=150.0)

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


def test_the_demo_via_the_gateway_never_stops_the_producer(clusters: Clusters) -> None:
    """`demo --via-gateway`: the producer and the group use the gateway from the start;
    promote fences writes at the gateway while the producer keeps writing."""
    assert clusters.sandbox_dir is not None, "the demo runs on the sandbox"
    screen = Recorder()
    result = run_demo(clusters.sandbox_dir, screen, rate=150.0, via_gateway=True)

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
