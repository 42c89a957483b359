"""Prometheus metrics for `kmigrate serve`, from the sampler's last sample (a scrape never
waits on a cluster) and the store: per link and partition the mirrored offset and the
lag in records and seconds, per link its state, copy rate, last batch's duration and
gaps, per migration topic its state, the last verify run per link, and the API's
refusals by kind. No label carries a secret: labels are names of links, migrations,
topics and clusters only."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from kmigrate.mirror.status import LinkStatus
from kmigrate.serve.sampler import Sampler
from kmigrate.store import Store
from kmigrate.store.migrations import items_of, migration_names
from kmigrate.verify.report import CHANGED_DURING_CHECK, MISMATCH, VerifyReport


class StoreCollector(Collector):
    def __init__(self, sampler: Sampler, verified: Callable[[], dict[str, VerifyReport]]) -> None:
        self.sampler = sampler
        self.verified = verified

    def collect(self) -> Iterator[Metric]:
        sample = self.sampler.current()
        yield from self._links(list(sample.links.values()))
        yield from self._migrations(self.sampler.store)
        yield from self._verify(self.verified())

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
        batch = GaugeMetricFamily(
            "kmigrate_mirror_batch_duration_seconds",
            "How long the mirror's last batch took (read, write, commit).",
            labels=["link"],
        )
        gaps = GaugeMetricFamily(
            "kmigrate_mirror_gaps",
            "Source ranges the mirror could not copy (deleted by retention first).",
            labels=["link"],
        )
        for s in statuses:
            name = s.link.name
            state.add_metric([name, s.state], 1)
            rate.add_metric([name], s.run.records_per_s if s.run and s.state == "running" else 0)
            gaps.add_metric([name], len(s.gaps))
            if s.run is not None and s.run.batch_s is not None:
                batch.add_metric([name], s.run.batch_s)
            for p in s.partitions:
                labels = [name, p.topic, str(p.partition)]
                mirrored.add_metric(labels, p.mirrored_to)
                copied.add_metric(labels, p.mirrored)
                if p.lag is not None:
                    lag.add_metric(labels, p.lag)
                if p.lag_s is not None:
                    lag_s.add_metric(labels, p.lag_s)
        yield from (mirrored, lag, lag_s, copied, rate, state, batch, gaps)

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

    @staticmethod
    def _verify(reports: dict[str, VerifyReport]) -> Iterator[Metric]:
        ok = GaugeMetricFamily(
            "kmigrate_verify_ok",
            "1 if the link's last verify run (through this server) found the copies equal.",
            labels=["link"],
        )
        differing = GaugeMetricFamily(
            "kmigrate_verify_partitions_differing",
            "Partitions whose copy differs in the link's last verify run.",
            labels=["link"],
        )
        records = GaugeMetricFamily(
            "kmigrate_verify_records_compared",
            "Source records compared in the link's last verify run.",
            labels=["link"],
        )
        at = GaugeMetricFamily(
            "kmigrate_verify_last_run_timestamp_seconds",
            "When the link's last verify run started.",
            labels=["link"],
        )
        for link, report in sorted(reports.items()):
            ok.add_metric([link], 1 if report.ok else 0)
            differing.add_metric(
                [link], report.count(MISMATCH) + report.count(CHANGED_DURING_CHECK)
            )
            records.add_metric(
                [link], sum(p.source.digest.records for p in report.partitions if p.source)
            )
            at.add_metric([link], report.started_ms / 1000)
        yield from (ok, differing, records, at)


class Metrics:
    """One registry per server (tests run several side by side)."""

    def __init__(self, sampler: Sampler, verified: Callable[[], dict[str, VerifyReport]]) -> None:
        self.registry = CollectorRegistry()
        self.registry.register(StoreCollector(sampler, verified))
        self.refusals = Counter(
            "kmigrate_api_refusals",
            "API requests answered with an error, by the error's kind.",
            ["kind"],
            registry=self.registry,
        )
