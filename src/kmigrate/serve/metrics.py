"""Prometheus metrics for `kmigrate serve`, read at scrape time from the metadata store
and the clusters' end offsets: per link and partition the mirrored offset and the lag
in records and seconds, per link its state and copy rate, per migration topic its
state, and the API's refusals by kind. No label carries a secret: labels are names of
links, migrations, topics and clusters only."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kmigrate.config import Settings
from kmigrate.mirror.status import LinkStatus
from kmigrate.serve.views import live_status
from kmigrate.store import Store
from kmigrate.store.links import list_links
from kmigrate.store.migrations import items_of, migration_names


class StoreCollector(Collector):
    def __init__(self, settings: Settings, store: Callable[[], Store]) -> None:
        self.settings = settings
        self.store = store

    def collect(self) -> Iterator[Metric]:
        store = self.store()
        statuses = [live_status(self.settings, store, link) for link in list_links(store)]
        yield from self._links(statuses)
        yield from self._migrations(store)

    def _links(self, statuses: list[LinkStatus]) -> Iterator[Metric]:
        partition = ["link", "topic", "partition"]
        mirrored = GaugeMetricFamily(
            "kmigrate_mirror_next_source_offset",
            "The next source offset the mirror copies, per partition.",
            labels=partition,
        )
        lag = GaugeMetricFamily(
            "kmigrate_mirror_lag_records",
            "Source offsets not mirrored yet, per partition (absent while a cluster is down).",
            labels=partition,
        )
        lag_s = GaugeMetricFamily(
            "kmigrate_mirror_lag_seconds",
            "At most this old is the newest mirrored record of a lagging partition.",
            labels=partition,
        )
        copied = GaugeMetricFamily(
            "kmigrate_mirror_records_mirrored",
            "Records the mirror has copied, per partition.",
            labels=partition,
        )
        rate = GaugeMetricFamily(
            "kmigrate_mirror_records_per_second", "The mirror's copy rate.", labels=["link"]
        )
        state = GaugeMetricFamily(
            "kmigrate_mirror_state", "1 for the link's current state.", labels=["link", "state"]
        )
        for s in statuses:
            name = s.link.name
            state.add_metric([name, s.state], 1)
            rate.add_metric([name], s.run.records_per_s if s.run and s.state == "running" else 0)
            for p in s.partitions:
                labels = [name, p.topic, str(p.partition)]
                mirrored.add_metric(labels, p.mirrored_to)
                copied.add_metric(labels, p.mirrored)
                if p.lag is not None:
                    lag.add_metric(labels, p.lag)
                if p.lag_s is not None:
                    lag_s.add_metric(labels, p.lag_s)
        yield from (mirrored, lag, lag_s, copied, rate, state)

    def _migrations(self, store: Store) -> Iterator[Metric]:
        state = GaugeMetricFamily(
            "kmigrate_migration_topic_state",
            "1 for each migrated topic's current state.",
            labels=["migration", "topic", "state"],
        )
        for name in migration_names(store):
            for item in items_of(store, name, "topic"):
                state.add_metric([name, item.name, item.state], 1)
        yield state


class Metrics:
    """One registry per server (tests run several side by side)."""

    def __init__(self, settings: Settings, store: Callable[[], Store]) -> None:
        self.registry = CollectorRegistry()
        self.registry.register(StoreCollector(settings, store))
        self.refusals = Counter(
            "kmigrate_api_refusals",
            "API requests answered with an error, by the error's kind.",
            ["kind"],
            registry=self.registry,
        )
