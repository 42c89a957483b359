"""What `mirror status` shows: per link, topic and partition, read from the store and
both clusters' end offsets.

Its round trips do not grow with the partition count: one bulk ListOffsets per cluster
(every partition at once) and the same few store statements (run, topics, progress,
gaps) for 4 partitions as for 10,000; the offset maps themselves are never read."""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from kmigrate.errors import ClusterUnavailableError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.model.links import Gap, Link, LinkTopic, TopicState
from kmigrate.model.runs import LIVE_STATES, MirrorRun, RunState
from kmigrate.store import Store
from kmigrate.store.links import link_topics_of
from kmigrate.store.locks import pid_alive
from kmigrate.store.offsets import gaps_of
from kmigrate.store.progress import PartitionProgress, progress_of
from kmigrate.store.runs import get_run

# A run whose heartbeat is older than this is reported as dead, whatever it last said.
# A waiting mirror heartbeats between attempts, and one attempt against a cluster that
# does not answer takes up to about twice the cluster's timeout_s.
STALE_AFTER_S = 60.0
IDLE_AFTER_S = 10.0


@dataclass(frozen=True)
class PartitionStatus:
    topic: str
    partition: int
    source_end: int | None  # last stable offset on the source (None: unreachable/deleted)
    mirrored_to: int  # the next source offset to mirror
    target_end: int | None
    lag: int | None  # source offsets not mirrored yet (markers count)
    lag_s: float | None  # at most this old is the newest record on the target, when lagging
    records_per_s: float
    mirrored: int


@dataclass(frozen=True)
class LinkStatus:
    link: Link
    state: str  # starting | running | waiting | stopped | failed | never-started
    reason: str | None
    run: MirrorRun | None
    topics: list[LinkTopic]
    partitions: list[PartitionStatus]
    gaps: list[Gap]
    # Clusters whose offsets could not be read now (name -> why); their ends are None.
    unavailable: dict[str, str] = field(default_factory=dict)

    @property
    def lag(self) -> int | None:
        lags = [p.lag for p in self.partitions]
        return None if any(lag is None for lag in lags) else sum(lag or 0 for lag in lags)


def run_state(run: MirrorRun | None) -> tuple[str, str | None]:
    """running / stopped / failed, checking that a 'running' process still lives."""
    if run is None:
        return "never-started", None
    if run.state.value in LIVE_STATES:
        if run.host == socket.gethostname() and not pid_alive(run.pid):
            return "failed", f"process {run.pid} died without stopping the mirror"
        if time.time() * 1000 - run.heartbeat_ms > STALE_AFTER_S * 1000:
            return "failed", (
                f"no heartbeat from process {run.pid} on {run.host} for over {STALE_AFTER_S:g}s"
            )
        return run.state.value, run.reason if run.state is RunState.WAITING else None
    return run.state.value, run.reason


def state_of(store: Store, link: str) -> tuple[str, str | None]:
    """The link's mirror process as `run_state` tells it."""
    return run_state(get_run(store, link))


def link_status(
    store: Store,
    link: Link,
    source: ClusterAdmin | None,
    target: ClusterAdmin | None,
    topics: re.Pattern[str] | None = None,
) -> LinkStatus:
    """The link's state; cluster offsets are left out (None) for a cluster passed as None.
    ``topics`` (matching whole names) keeps only those topics, their partitions and gaps;
    the clusters are asked for those partitions only."""
    run = get_run(store, link.name)
    state, reason = run_state(run)

    def chosen(topic: str) -> bool:
        return topics is None or topics.fullmatch(topic) is not None

    known = [t for t in link_topics_of(store, link.name) if chosen(t.topic)]
    states = [p for p in progress_of(store, link.name) if chosen(p.topic)]
    pairs = [(s.topic, s.partition) for s in states]
    live = {t.topic for t in known if t.state is not TopicState.SOURCE_DELETED}
    unavailable: dict[str, str] = {}
    source_ends = _ends(
        source,
        lambda a: a.partition_offsets(
            [tp for tp in pairs if tp[0] in live], "latest", committed_only=True
        ),
        unavailable,
    )
    target_ends = _ends(target, lambda a: a.partition_offsets(pairs, "latest"), unavailable)
    now = time.time() * 1000
    parts = [
        _partition(
            s, source_ends.get((s.topic, s.partition)), target_ends.get((s.topic, s.partition)), now
        )
        for s in states
    ]
    gaps = [g for g in gaps_of(store, link.name) if chosen(g.topic)]
    return LinkStatus(link, state, reason, run, known, parts, gaps, unavailable)


def _ends(
    admin: ClusterAdmin | None,
    read: Callable[[ClusterAdmin], dict[tuple[str, int], int]],
    unavailable: dict[str, str],
) -> dict[tuple[str, int], int]:
    """End offsets from one cluster; none (and why, in ``unavailable``) while it is down:
    status must answer during an outage, which is when it is asked most."""
    if admin is None:
        return {}
    try:
        return read(admin)
    except ClusterUnavailableError as exc:
        unavailable[admin.cluster.name] = exc.condition
        return {}


def _partition(
    s: PartitionProgress, source_end: int | None, target_end: int | None, now_ms: float
) -> PartitionStatus:
    lag = None if source_end is None else max(source_end - s.source_next, 0)
    lag_s: float | None = 0.0 if lag == 0 else None
    if lag and s.last_timestamp is not None:
        lag_s = max(now_ms - s.last_timestamp, 0) / 1000
    rate = s.records_per_s if now_ms - s.updated_ms < IDLE_AFTER_S * 1000 else 0.0
    return PartitionStatus(
        s.topic,
        s.partition,
        source_end,
        s.source_next,
        target_end,
        lag,
        lag_s,
        rate,
        s.mirrored,
    )
