"""What the console, its live updates and /metrics show, read in one background thread:
every link's status and every migration's snapshot, refreshed every few seconds, and the
last hour of each link's lag and copy rate for the charts.

Pages, event streams and scrapes read the last sample and never wait on a cluster: a
cluster that is down delays the next sample (up to its timeout_s), not the answer
(Prometheus' scrape timeout is 10 s by default)."""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from kmigrate.config import Settings
from kmigrate.errors import KMigrateError
from kmigrate.kafka.admin import ClusterAdmin
from kmigrate.migration.observe import Snapshot, observe
from kmigrate.migration.session import load_migration
from kmigrate.mirror.status import LinkStatus, link_status
from kmigrate.serve import EVERY_S
from kmigrate.store import Store
from kmigrate.store.links import list_links
from kmigrate.store.migrations import migration_names

log = logging.getLogger(__name__)

KEEP_S = 3600.0  # the charts' hour


@dataclass(frozen=True)
class Point:
    """A link at one moment, for the charts."""

    at_ms: int
    lag: int | None
    records_per_s: float


@dataclass(frozen=True)
class Sample:
    seq: int  # grows with every sample: a live page sends an update when it changes
    at_ms: int
    links: dict[str, LinkStatus] = field(default_factory=dict)
    migrations: dict[str, Snapshot] = field(default_factory=dict)
    # Migrations that could not be observed now (name -> the one-line reason).
    problems: dict[str, str] = field(default_factory=dict)
    history: dict[str, tuple[Point, ...]] = field(default_factory=dict)


class Sampler:
    """Samples in a daemon thread started by the first reader; ``refresh`` samples now
    (after a step, so the page that asked shows its outcome)."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        every_s: float = EVERY_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.store = store
        self.every_s = every_s
        self._clock = clock
        self._admins: dict[str, ClusterAdmin] = {}
        self._history: dict[str, deque[Point]] = {}
        self._sample = Sample(0, 0)
        self._lock = threading.Lock()  # one sample at a time
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def current(self) -> Sample:
        if self._thread is None:
            with self._lock:
                if self._thread is None:
                    self._take()
                    self._thread = threading.Thread(
                        target=self._loop, name="kmigrate-sampler", daemon=True
                    )
                    self._thread.start()
        return self._sample

    def refresh(self) -> Sample:
        with self._lock:
            self._take()
        return self._sample

    def close(self) -> None:
        self._stop.set()
        for admin in self._admins.values():
            admin.close()

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                with self._lock:
                    self._take()
            except Exception:  # a bug must not end the live pages: logged, next sample
                log.exception("sampling the links and migrations failed")

    def _admin(self, cluster: str) -> ClusterAdmin | None:
        if cluster not in self._admins:
            try:
                self._admins[cluster] = ClusterAdmin(self.settings.cluster(cluster))
            except KMigrateError as exc:  # not in clusters.yaml (any more)
                log.info("cluster %s: %s", cluster, exc.message)
                return None
        return self._admins[cluster]

    def _take(self) -> None:
        now_ms = int(self._clock() * 1000)
        links: dict[str, LinkStatus] = {}
        for link in list_links(self.store):
            source, target = self._admin(link.source), self._admin(link.target)
            if source is None or target is None:
                source = target = None  # the store's view only
            links[link.name] = link_status(self.store, link, source, target)
        migrations: dict[str, Snapshot] = {}
        problems: dict[str, str] = {}
        for name in migration_names(self.store):
            try:
                m = load_migration(self.store, self.settings, name)
                source, target = self._admin(m.plan.source), self._admin(m.plan.target)
                if source is None or target is None:
                    raise KMigrateError(f"cluster {m.plan.source} or {m.plan.target} unknown")
                migrations[name] = observe(m, source, target)
            except KMigrateError as exc:
                problems[name] = exc.message
        self._sample = Sample(
            self._sample.seq + 1, now_ms, links, migrations, problems, self._remember(now_ms, links)
        )

    def _remember(self, now_ms: int, links: dict[str, LinkStatus]) -> dict[str, tuple[Point, ...]]:
        for name, status in links.items():
            points = self._history.setdefault(name, deque())
            rate = status.run.records_per_s if status.run and status.state == "running" else 0.0
            points.append(Point(now_ms, status.lag, rate))
            while points and points[0].at_ms < now_ms - KEEP_S * 1000:
                points.popleft()
        for gone in set(self._history) - set(links):
            del self._history[gone]
        return {name: tuple(points) for name, points in self._history.items()}
