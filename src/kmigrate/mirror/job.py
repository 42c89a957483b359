"""A mirror process: claims its link, runs batch after batch, refreshes, stops cleanly.

One process mirrors one link. It claims the link in the store (refusing when another
live process has it), syncs topics, and then runs batches: each copies what the source
holds past the offset map's read positions, on Spark, or in this process when the batch
is small. On a local master Spark starts at the first batch that needs it: a mirror that
keeps up may never hold its JVM and Python workers. When a batch finds nothing to
copy it waits a moment and looks again. Every refresh interval it looks for new topics
and partitions and deleted source topics, and after every batch for topics waiting to
be promoted. SIGTERM or SIGINT stops it between two batches as well.

A cluster that stops answering (a broker restarting, leaders moving) is waited out,
not treated as a failure: each step of the loop runs under one WaitPolicy, which
retries it with backoff, reports ``waiting`` (what, since when) and gives up after
``max_unavailable_s`` with the link resumable. A batch interrupted by the outage is
planned again from the offset map, and what it had written is read back, not repeated.
The start-up (claim, first topic sync) does not wait: a cluster that is down or
misnamed when the mirror starts is reported at once.
"""

from __future__ import annotations

import functools
import os
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any, TypeVar

from kmigrate.config import Settings, SparkConfig
from kmigrate.config.tuning import count_from_env
from kmigrate.durations import duration_text
from kmigrate.errors import KMigrateError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.mirror import copier
from kmigrate.mirror.batch import MirrorContext, run_batch
from kmigrate.mirror.control import check_not_running
from kmigrate.mirror.ranges import CopySettings
from kmigrate.mirror.topology import Assignment, sync_topology
from kmigrate.model.links import Link, TopicState
from kmigrate.model.runs import RunState, Waiting
from kmigrate.spark.session import OnDemand, build_context, is_local
from kmigrate.spark.tasks import warm_up
from kmigrate.store import Store
from kmigrate.store.links import link_topics_of, set_topic_state
from kmigrate.store.runs import begin_run, report_run, report_waiting
from kmigrate.waiting import Outage, WaitAbandoned, WaitPolicy

if TYPE_CHECKING:
    from pyspark import SparkContext

T = TypeVar("T")

Report = Callable[[str], None]
HEARTBEAT_S = 2.0
# A task's read limit per batch (CopySettings.max_bytes) for tuning and for the tests
# that must cut batches short; bytes, > 0.
TASK_BYTES_ENV = "KMIGRATE_MIRROR_TASK_BYTES"
# Batches of at most this many offsets are copied by the driver, not on Spark
# (MirrorContext.driver_offsets); 0 sends every batch to Spark.
DRIVER_OFFSETS_ENV = "KMIGRATE_MIRROR_DRIVER_OFFSETS"
DRIVER_OFFSETS = 1_000
# The byte copy keeps its connections and leaders across batches in the driver too, so
# a driver batch costs it little: up to this many offsets (measured: at 5,000 records/s
# the mirror then stays off Spark, and its lag p50 halves).
BYTES_DRIVER_OFFSETS = 10_000
# How long an idle mirror waits before it asks the source for new records again: the
# bound on the lag this loop adds to a record that arrives while it waits.
IDLE_POLL_S = 0.05


@dataclass(frozen=True)
class MirrorOptions:
    refresh_interval_s: float = 30.0
    allow_gaps: bool = False
    # librdkafka settings for the target producer (e.g. compression.type, linger.ms).
    producer: dict[str, Any] = field(default_factory=dict)
    max_offsets_per_batch: int | None = None
    master: str | None = None
    # How long one outage of the source or target may last before the mirror stops.
    max_unavailable_s: float = 15 * 60.0
    # Tuning (environment variables, read by ``tuning_from_env`` before anything runs).
    task_bytes: int = CopySettings.max_bytes
    driver_offsets: int | None = None  # None: DRIVER_OFFSETS, or BYTES_... copying bytes
    # Which copier: auto (bytes where it can run), bytes or records (kmigrate.mirror.copier).
    copy: str = copier.AUTO


@dataclass
class Progress:
    """What an attached run shows after each heartbeat."""

    mirrored: int
    records_per_s: float
    partitions: int


class MirrorJob:
    def __init__(
        self,
        settings: Settings,
        store: Store,
        link: Link,
        options: MirrorOptions,
        link_dir: Path,
        report: Report,
        on_progress: Callable[[Progress], None] = lambda _p: None,
    ) -> None:
        self.settings = settings
        self.store = store
        self.link = link
        self.options = options
        self.link_dir = link_dir
        self.report = report
        self.on_progress = on_progress
        self.stop_requested = False
        self.pid = os.getpid()
        self.policy = WaitPolicy(
            options.max_unavailable_s,
            on_wait=self._on_wait,
            on_recover=self._on_recover,
            pause=self._pause,
            roles={link.source: "source", link.target: "target"},
            resume_hint=(
                f"nothing was lost; start the mirror of link '{link.name}' again once the "
                "cluster is back (kmigrate mirror start --link ...) and it resumes exactly"
            ),
        )

    # ------------------------------------------------------------ lifecycle

    def run(self) -> None:
        """Mirror until stopped (returns) or until something needs a human (raises)."""
        claim(self.store, self.link.name, self.link_dir / "mirror.log")
        previous = {
            sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT)
        }
        try:
            self._run()
        except WaitAbandoned:
            pass  # stopped while waiting out an outage
        except Exception as exc:
            reason = (
                exc.message
                if isinstance(exc, KMigrateError)
                else f"{type(exc).__name__}: {_first_line(exc)}"
            )
            report_run(self.store, self.link.name, self.pid, RunState.FAILED, reason=reason)
            raise
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        report_run(self.store, self.link.name, self.pid, RunState.STOPPED, reason="stopped")

    def _on_signal(self, _signum: int, _frame: FrameType | None) -> None:
        self.stop_requested = True

    def _run(self) -> None:
        spark_cfg = self.settings.spark
        if self.options.master:
            spark_cfg = spark_cfg.model_copy(update={"master": self.options.master})
        source_cfg = self.settings.cluster(self.link.source)
        target_cfg = self.settings.cluster(self.link.target)
        chosen = choose_copier(self.settings, self.link, self.options)
        with ClusterAdmin(source_cfg) as source, ClusterAdmin(target_cfg) as target:
            assignment = sync_topology(self.store, self.link, source, target, self.report)
            self.report(f"link {self.link.name}: {chosen.describe()}")
            driver_offsets = _driver_offsets(self.options, chosen)
            spark = OnDemand(functools.partial(self._start_spark, spark_cfg))
            if is_local(spark_cfg.master) and driver_offsets:
                self.report(
                    f"Spark ({spark_cfg.master}) starts at the first batch of more than "
                    f"{driver_offsets:,} offsets; smaller batches are copied by this process"
                )
            else:
                # A cluster's executors are resources reserved for this job: started at
                # once, they prove the master and the executors' environment before the
                # first backlog needs them.
                warm_up(spark(), [f"kmigrate.mirror.{_copier_module(chosen)}"])
            ctx = MirrorContext(
                self.store,
                self.link,
                source,
                target,
                CopySettings(
                    source_cfg.as_librdkafka(),
                    target_cfg.as_librdkafka(),
                    dict(self.options.producer),
                    # A task waits for a silent cluster as long as a request would.
                    outage_s=max(source_cfg.timeout_s, target_cfg.timeout_s),
                    max_bytes=self.options.task_bytes,
                    as_bytes=chosen.kind == copier.BYTES,
                ),
                self.options.allow_gaps,
                self.options.max_offsets_per_batch,
                driver_offsets=driver_offsets,
                report=self.report,
            )
            try:
                self._loop(spark, ctx, assignment)
            finally:
                spark.stop()

    def _start_spark(self, spark_cfg: SparkConfig) -> SparkContext:
        self.report(f"starting Spark ({spark_cfg.master})")
        return build_context(spark_cfg, f"kmigrate-mirror-{self.link.name}")

    def _loop(self, spark: OnDemand, ctx: MirrorContext, assignment: Assignment) -> None:
        while not self.stop_requested:
            ctx.reload()
            report_run(self.store, self.link.name, self.pid, RunState.RUNNING)
            ready: list[str] = []
            if not assignment.partitions:
                self.report("no topic to mirror yet; waiting for matching source topics")
                self._idle()
            else:
                self.report(
                    f"mirroring {len(assignment.partitions)} topic(s), "
                    f"{len(assignment.pairs())} partition(s)"
                )
                ready = self._mirror(spark, ctx, assignment)
            self._waiting_out(functools.partial(self._promote_ready, ctx, ready))
            if not self.stop_requested:
                assignment = self._waiting_out(
                    lambda: sync_topology(
                        self.store, self.link, ctx.source, ctx.target, self.report
                    )
                )

    def _idle(self) -> None:
        deadline = time.monotonic() + self.options.refresh_interval_s
        while not self.stop_requested and time.monotonic() < deadline:
            report_run(self.store, self.link.name, self.pid, RunState.RUNNING)
            time.sleep(min(HEARTBEAT_S, max(deadline - time.monotonic(), 0)))

    def _mirror(self, spark: OnDemand, ctx: MirrorContext, assignment: Assignment) -> list[str]:
        """Run batches until the topology should be refreshed, a topic waiting for promote
        is fully mirrored (returned), or the process stops."""
        pairs = assignment.pairs()
        next_refresh = time.monotonic() + self.options.refresh_interval_s
        next_beat = 0.0
        while not self.stop_requested:
            began = time.monotonic()
            copied = self._waiting_out(lambda: run_batch(ctx, spark, pairs))
            now = time.monotonic()
            if now >= next_beat:
                next_beat = now + HEARTBEAT_S
                rate = ctx.throughput.rate()
                report_run(
                    self.store,
                    self.link.name,
                    self.pid,
                    RunState.RUNNING,
                    records_per_s=rate,
                    batch_s=now - began,
                )
                self.on_progress(Progress(ctx.throughput.total, rate, len(pairs)))
            if now >= next_refresh:
                next_refresh = now + self.options.refresh_interval_s
                if self._waiting_out(lambda: self._topology_changed(ctx, assignment)):
                    return []
            # Every batch, not every refresh: producers wait for promote (one store read
            # while nobody asked; a source ListOffsets while a topic waits).
            ready = self._waiting_out(lambda: self._promotable(ctx))
            if ready:
                return ready
            if not copied:
                ctx.throughput.add(0)
                time.sleep(IDLE_POLL_S)
        return []

    # ------------------------------------------------------------ outages

    def _waiting_out(self, step: Callable[[], T]) -> T:
        """``step``, waiting out source or target outages (the one WaitPolicy)."""
        return self.policy.run(step)

    def _on_wait(self, outage: Outage) -> None:
        who = self.policy.who(outage.cluster)
        self.report(
            f"{who} unavailable since {outage.clock()}: {outage.condition}; retrying "
            f"(for up to {duration_text(self.options.max_unavailable_s)})"
        )
        self._report_waiting(outage)

    def _on_recover(self, outage: Outage) -> None:
        who = self.policy.who(outage.cluster)
        self.report(
            f"{who} available again after {duration_text(self.policy.lasted(outage))}; "
            "mirroring resumes"
        )
        report_run(self.store, self.link.name, self.pid, RunState.RUNNING)

    def _pause(self, seconds: float) -> bool:
        """Between two attempts during an outage: heartbeat, and stop when asked."""
        outage = self.policy.outage
        deadline = time.monotonic() + seconds
        while not self.stop_requested:
            if outage is not None:
                self._report_waiting(outage)
            left = deadline - time.monotonic()
            if left <= 0:
                return True
            time.sleep(min(left, HEARTBEAT_S))
        return False

    def _report_waiting(self, outage: Outage) -> None:
        role = "source" if outage.cluster == self.link.source else "target"
        waiting = Waiting(outage.cluster, role, outage.condition, int(outage.since * 1000))
        reason = (
            f"{self.policy.who(outage.cluster)} unavailable since {outage.clock()}: "
            f"{outage.condition}"
        )
        report_waiting(self.store, self.link.name, self.pid, waiting, reason)

    # ------------------------------------------------------------ topology

    def _topology_changed(self, ctx: MirrorContext, assignment: Assignment) -> bool:
        now = {
            t.name: t.partition_count for t in ctx.source.list_topics() if self.link.matches(t.name)
        }
        known = {t.topic for t in link_topics_of(self.store, self.link.name)}
        grown = any(now.get(t, 0) > n for t, n in assignment.partitions.items())
        deleted = any(t not in now for t in assignment.partitions)
        return grown or deleted or bool(set(now) - known)

    def _promotable(self, ctx: MirrorContext) -> list[str]:
        """Topics waiting for promote whose every partition is fully mirrored."""
        waiting = [
            t.topic
            for t in link_topics_of(self.store, self.link.name)
            if t.state is TopicState.PROMOTING
        ]
        if not waiting:
            return []
        pairs = [tp for tp in ctx.states if tp[0] in waiting]
        ends = ctx.source.partition_offsets(pairs, "latest", committed_only=True)
        return [
            topic
            for topic in waiting
            if all(ctx.states[tp].map.source_next >= ends[tp] for tp in pairs if tp[0] == topic)
        ]

    def _promote_ready(self, ctx: MirrorContext, ready: list[str]) -> None:
        """Stop mirroring the topics waiting for promote that are fully mirrored:
        ``ready``, found so right after the last batch recorded its map (a promote through
        the gateway holds writes meanwhile), else looked up."""
        if not ready:
            ctx.reload()
            ready = self._promotable(ctx)
        for topic in ready:
            set_topic_state(self.store, self.link.name, topic, TopicState.PROMOTED)
            self.report(f"promoted {topic}: mirror stopped for it, the target topic is writable")


def _first_line(exc: object) -> str:
    text = str(exc or "unknown reason").strip()
    return text.splitlines()[0] if text else "unknown reason"


def claim(store: Store, link: str, log_path: Path) -> None:
    """Make this process the link's mirror, unless another live process already is."""
    check_not_running(store, link)
    begin_run(store, link, os.getpid(), socket.gethostname(), str(log_path))


def choose_copier(settings: Settings, link: Link, options: MirrorOptions) -> copier.Copier:
    """The copier the link runs (a ConfigError, exit 2, for ``--copy bytes`` where the
    byte copy cannot run); local, before any cluster is asked."""
    clusters = {name: settings.cluster(name).as_librdkafka() for name in (link.source, link.target)}
    return copier.choose(options.copy, clusters, options.producer)


def _copier_module(chosen: copier.Copier) -> str:
    return "byte_copy" if chosen.kind == copier.BYTES else "copy_task"


def _driver_offsets(options: MirrorOptions, chosen: copier.Copier) -> int:
    if options.driver_offsets is not None:
        return options.driver_offsets
    return BYTES_DRIVER_OFFSETS if chosen.kind == copier.BYTES else DRIVER_OFFSETS


def tuning_from_env() -> dict[str, Any]:
    """The mirror's tuning variables as ``MirrorOptions`` fields; a ConfigError (exit 2)
    for a value that is not a whole number, before anything is asked or written."""
    return {
        "task_bytes": count_from_env(TASK_BYTES_ENV, CopySettings.max_bytes, least=1),
        "driver_offsets": count_from_env(DRIVER_OFFSETS_ENV, None),
    }
